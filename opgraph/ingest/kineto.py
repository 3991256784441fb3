"""PyTorch profiler (Kineto) Chrome-trace JSON -> canonical event table.

Reads ``.json`` / ``.json.gz``, the ``{"traceEvents": [...]}`` object and the bare-array
form, old (2021: ``Operator/Runtime/Kernel/Memcpy/Memset``) and new category names, ROCm
and MTIA categories, string pids/tids (``"stream 7"``), flows and instant events.

Timestamps: Kineto writes µs, as integers or as decimals with up to 3 fractional digits.
At epoch magnitude (~1.7e15 µs) a float64 cannot hold the ns digits, so when any ``ts`` is
fractional the exact integer ns are taken from the decimal *text* of the file (rounded to
the nearest ns, never truncated). ``displayTimeUnit`` is never used to infer units.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import orjson
import pandas as pd

from opgraph.gc_pause import gc_paused
from opgraph.errors import OpgraphInputError
from opgraph.ingest.source import SourceBytes, read_source
from opgraph.ingest.steps import STEP_RE
from opgraph.ingest.table import NONE_ID, EventTable, check_times

#: Category -> canonical kind for complete (``X``) events.
CATEGORY_KIND: dict[str, str] = {
    "cpu_op": "cpu_op", "Operator": "cpu_op", "operator": "cpu_op",
    "user_annotation": "annotation", "User Annotation": "annotation",
    "python_function": "python", "python": "python",
    "cuda_runtime": "runtime", "Runtime": "runtime", "cuda_driver": "runtime",
    "hip_runtime": "runtime", "hip_driver": "runtime", "mtia_runtime": "runtime",
    "kernel": "kernel", "Kernel": "kernel", "mtia_ccp_events": "kernel",
    "gpu_memcpy": "memcpy", "Memcpy": "memcpy",
    "gpu_memset": "memset", "Memset": "memset",
    "gpu_user_annotation": "gpu_annotation",
    "cuda_sync": "cuda_sync",
    "Trace": "trace_span",
    "cuda_profiler_range": "other", "overhead": "other",
}
#: MTIA device events (``mtia_ccp_events``) by name, where the kind is not ``kernel``:
#: ``dma_request`` is a memory transfer; ``event_record`` and ``event_wait`` are stream
#: event records and device-side waits (``args.wait_on_stream``, ``args.seq_num``), kept as
#: ``cuda_sync`` records that the graph builder turns into ``event_wait`` edges.
MTIA_CCP_KIND: dict[str, str] = {"dma_request": "memcpy", "event_record": "cuda_sync", "event_wait": "cuda_sync"}
#: ``mtia_runtime`` names that, written in the device's own process (``pid`` equal to
#: ``args.device``), are the device-side record of a host call with the same correlation
#: (``synchronize`` mirrors ``synchronizeStream``): ``cuda_sync`` records, not host calls.
MTIA_DEVICE_RECORDS = frozenset({"synchronize"})
#: Categories whose X events are known and deliberately not nodes.
_KNOWN_NON_NODE_CATS = {"cuda_profiler_range", "overhead", "Trace", "cuda_sync"}
_FLOW_PH = {"s": "flow_start", "t": "flow_end", "f": "flow_end"}
_INSTANT_PH = {"i", "I", "n", "R"}
#: Phases the reader understands; any other is kept (kind ``other``) with an ``unknown_phase``
#: warning. ``B``/``E`` (duration begin/end) are paired per thread into complete spans.
KNOWN_PH = frozenset({"X", "B", "E", "M", "C"} | set(_FLOW_PH) | _INSTANT_PH)
_STANDARD_KEYS = frozenset({"ph", "cat", "name", "pid", "tid", "ts", "dur", "args", "id", "bp"})
_STREAM_TID_RE = re.compile(r"^stream\s+(\d+)")
_TS_TEXT_RE = re.compile(rb'"ts"\s*:\s*(-?[0-9][0-9.eE+-]*)')


def _json_error(path: str, data: bytes, err: orjson.JSONDecodeError) -> OpgraphInputError:
    pos = getattr(err, "pos", None)
    if pos is not None and pos >= len(data.rstrip()) - 1:
        return OpgraphInputError(path, f"truncated JSON: the file ends at byte {len(data)} "
                                       f"before the document is complete")
    msg = str(err).split(":")[0]
    where = f" at line {err.lineno}, column {err.colno}" if hasattr(err, "lineno") else ""
    if data.lstrip()[:1] not in (b"{", b"["):
        return OpgraphInputError(path, "not JSON (and not a known trace format)")
    return OpgraphInputError(path, f"invalid JSON{where}: {msg}")


def parse_json(src: SourceBytes) -> Any:
    """Decode JSON bytes with orjson, mapping failures to a one-line input error."""
    with gc_paused():
        try:
            return orjson.loads(src.data)
        except orjson.JSONDecodeError as e:
            raise _json_error(src.path, src.data, e) from None


def read_kineto(path: str, src: SourceBytes | None = None, doc: Any = None) -> EventTable:
    """Read a Kineto trace file into an :class:`EventTable` (times in ns)."""
    if src is None:
        src = read_source(path)
    if doc is None:
        doc = parse_json(src)
    if isinstance(doc, dict):
        if "traceEvents" not in doc:
            raise OpgraphInputError(src.path, "missing 'traceEvents': not a Kineto/Chrome trace")
        events = doc["traceEvents"]
        top = {k: v for k, v in doc.items() if k != "traceEvents"}
    elif isinstance(doc, list):
        events, top = doc, {}
    else:
        raise OpgraphInputError(src.path, "top-level JSON value is neither an object nor an array")
    if not isinstance(events, list):
        raise OpgraphInputError(src.path, f"'traceEvents' is {type(events).__name__}, expected a list")
    with gc_paused():
        table = events_to_table(src, events)
    meta = {
        "format": "kineto",
        "file": src.path,
        "sha256": src.sha256,
        "device_properties": top.pop("deviceProperties", None) or [],
        "distributed_info": top.pop("distributedInfo", None) or {},
        "trace_metadata": top,
    }
    table.meta.update(meta)
    rank = meta["distributed_info"].get("rank") if isinstance(meta["distributed_info"], dict) else None
    if isinstance(rank, int):
        table.events["rank"] = np.int64(rank)
    post_checks(table)
    check_times(table, src.path)
    limit_table_depth(table, src)  # args, extra and metadata: the bound of saved graphs
    return table


def _bad(path: str, idx: int, problem: str) -> OpgraphInputError:
    return OpgraphInputError(path, problem, event_index=idx)


def _first_bad(path: str, values: list, field: str, ok: tuple[type, ...],
               required_mask: np.ndarray | None, expected: str) -> None:
    """Raise on the first value of ``field`` whose type is not in ``ok`` (slow path, only
    reached when a fast type scan found a problem)."""
    for i, v in enumerate(values):
        if type(v) in ok:
            continue
        if v is None:
            if required_mask is not None and required_mask[i]:
                raise _bad(path, i, f"'{field}' is missing")
            continue
        raise _bad(path, i, f"'{field}' has the wrong type ({type(v).__name__} {v!r:.40}), "
                            f"expected {expected}")


def _check_types(path: str, values: list, field: str, ok: tuple[type, ...],
                 required_mask: np.ndarray | None = None, expected: str = "a number") -> bool:
    """Fast type scan of a column; raises a one-line error on the first bad value.

    Returns True when some values are None (absent)."""
    types = set(map(type, values))
    has_none = type(None) in types
    types.discard(type(None))
    if not types <= set(ok):
        _first_bad(path, values, field, ok, None, expected)
    if has_none and required_mask is not None:
        absent = np.fromiter((v is None for v in values), dtype=bool, count=len(values))
        bad = absent & required_mask
        if bad.any():
            raise _bad(path, int(np.flatnonzero(bad)[0]), f"'{field}' is missing")
    return has_none


#: Deepest nesting kept inside an event's ``args`` (below the args object itself); deeper
#: parts are replaced by :data:`ARGS_TOO_DEEP` (JSON and pickle writers cannot nest a few
#: hundred levels, and a saved graph may nest at most ``opgraph.graph.io.MAX_ATTR_DEPTH``
#: = 32 levels, the args object included, so that what ``build`` saves loads again).
ARGS_MAX_DEPTH = 31
ARGS_TOO_DEEP = "<nested too deep: dropped by opgraph>"
_NOT_BRACKETS = bytes(i for i in range(256) if i not in b"{}[]")


def _raw_max_depth(data: bytes) -> int:
    """An upper bound of the document's nesting depth (brackets inside strings count too)."""
    br = data.translate(None, _NOT_BRACKETS)
    if not br:
        return 0
    lut = np.zeros(256, dtype=np.int8)
    lut[ord("{")] = lut[ord("[")] = 1
    lut[ord("}")] = lut[ord("]")] = -1
    return int(np.cumsum(lut[np.frombuffer(br, dtype=np.uint8)], dtype=np.int32).max())


def _cut_deep(obj: Any, depth: int) -> tuple[Any, bool]:
    """``obj`` with containers below ``depth`` more levels replaced by :data:`ARGS_TOO_DEEP`."""
    if not isinstance(obj, (dict, list)):
        return obj, False
    if depth <= 0:
        return ARGS_TOO_DEEP, True
    cut = False
    for k, v in (obj.items() if isinstance(obj, dict) else enumerate(obj)):
        if isinstance(v, (dict, list)):
            nv, c = _cut_deep(v, depth - 1)
            if c:
                obj[k] = nv
                cut = True
    return obj, cut


#: |µs| values beyond this do not fit int64 nanoseconds (~292 years).
_MAX_US = 9.2e15


def limit_table_depth(table: EventTable, src: SourceBytes) -> None:
    """Cut every ``args``/``extra`` value of ``table`` and its trace metadata deeper than
    :data:`ARGS_MAX_DEPTH` (in place), with the ``args_too_deep`` warning: the bound of saved
    graphs, applied once to the table of every JSON reader (Kineto, execution traces, nsys
    JSON lines, CLIntercept, dv/dt).
    A bracket count on the raw bytes skips the walk for ordinary files."""
    data = getattr(src, "data", None)
    if isinstance(data, (bytes, bytearray)) and _raw_max_depth(data) <= ARGS_MAX_DEPTH + 1:
        return
    ev = table.events
    rows: list[int] = []
    for col in ("args", "extra"):
        if col in ev:
            for i, a in enumerate(ev[col].tolist()):
                if isinstance(a, (dict, list)) and a and _cut_deep(a, ARGS_MAX_DEPTH)[1]:
                    rows.append(i)
    if _cut_meta(table.meta) and not rows:
        rows.append(0)
    if rows and not any(h.code == "args_too_deep" for h in table.health):
        table.warn("args_too_deep", len(set(rows)), min(rows),
                   f"args nested more than {ARGS_MAX_DEPTH} levels deep: the deeper part is replaced by "
                   f"{ARGS_TOO_DEEP!r} (saving and exporting could not nest it)")


def _cut_meta(meta: dict) -> bool:
    """Cut the trace metadata of a table (graph attributes) to :data:`ARGS_MAX_DEPTH`."""
    cut = False
    for k in ("trace_metadata", "device_properties", "distributed_info"):
        v = meta.get(k)
        if isinstance(v, (dict, list)):
            cut |= _cut_deep(v, ARGS_MAX_DEPTH)[1]
    return cut


def _check_range_arr(path: str, arr: np.ndarray, values: list, field: str) -> None:
    """Raise when a time value (µs, as float array ``arr``) would not fit int64 ns."""
    bad = ~(np.abs(arr) < _MAX_US)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise _bad(path, i, f"'{field}' = {values[i]!r} µs is out of range (it does not fit int64 nanoseconds)")


def _check_range(path: str, values: list, field: str, present: np.ndarray) -> None:
    """Raise when a time value's ns would not fit an int64."""
    if not len(values):
        return
    arr = np.asarray([v if v is not None else 0 for v in values] if not present.all() else values, dtype=np.float64)
    bad = ~(np.abs(arr) < _MAX_US)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise _bad(path, i, f"'{field}' = {values[i]!r} µs is out of range (it does not fit int64 nanoseconds)")


def _align_tokens(toks: list[bytes], fvals: np.ndarray) -> np.ndarray | None:
    """Pick, in order, the text tokens that belong to the events' timestamps when the file
    has extra ``"ts"`` keys (e.g. inside args): greedy match of each event's decoded value
    against the next token that parses to the same float. None if they cannot be aligned,
    or when the pick would be a guess: two tokens with different digits parse to the same
    float as an event's timestamp (an ``args.ts`` of ``…010.05`` beside a ``ts`` of
    ``…010.1``), so the digits taken could be the wrong ones (bad-input audit #21)."""
    fl = []
    for t in toks:
        try:
            fl.append(float(t))
        except ValueError:
            fl.append(float("nan"))
    texts: dict[float, set[bytes]] = {}
    for t, v in zip(toks, fl):
        texts.setdefault(v, set()).add(t.rstrip(b"0").rstrip(b".") if b"." in t else t)
    wanted = set(fvals.tolist())
    if any(len(ts_) > 1 and v in wanted for v, ts_ in texts.items()):
        return None
    out = []
    j = 0
    m = len(toks)
    for f in fvals.tolist():
        while j < m:
            j += 1
            if fl[j - 1] == f:  # NaN (an unparsable token) equals nothing
                out.append(toks[j - 1])
                break
        else:
            return None
    return np.array(out) if out else None


def _spread(vals: np.ndarray, idx: np.ndarray, n: int) -> np.ndarray:
    out = np.zeros(n, dtype=vals.dtype)
    out[idx] = vals
    return out


def _exact_ts_ns(src: SourceBytes, ts: list, has_ts: np.ndarray, types: set,
                 path: str | None = None) -> tuple[np.ndarray, bool]:
    """Integer ns timestamps, exact. ``ts`` are the decoded values (µs, int or float),
    ``types`` the set of their Python types. Returns (ns, exact)."""
    n = len(ts)
    out = np.zeros(n, dtype=np.int64)
    idx = np.flatnonzero(has_ts)
    if not len(idx):
        return out, True
    all_present = len(idx) == n
    vals = ts if all_present else [ts[i] for i in idx]
    fvals = np.asarray(vals, dtype=np.float64)
    _check_range_arr(path or src.path, fvals if all_present else _spread(fvals, idx, n), ts, "ts")
    if float not in types:
        out[idx] = np.asarray(vals, dtype=np.int64) * 1000
        return out, True
    # Floats below 2**33 µs (~2.4 h from zero) hold 3 decimals exactly enough to round.
    if np.abs(fvals).max() < 2.0**33:
        out[idx] = np.rint(fvals * 1000.0).astype(np.int64)
        return out, True
    # Epoch-scale fractional values: take the digits from the text, aligned by order.
    toks = _TS_TEXT_RE.findall(src.data)
    arr = np.array(toks) if len(toks) == len(idx) else (
        _align_tokens(toks, fvals) if len(toks) > len(idx) else None)
    if arr is not None:
        if not (np.strings.find(arr, b"e") >= 0).any() and not (np.strings.find(arr, b"E") >= 0).any():
            ip, _, fp = np.strings.partition(arr, b".")
            ints = ip.astype(np.int64)
            f4 = np.strings.ljust(np.strings.slice(fp, 0, 4), 4, b"0").astype(np.int64)
            frac_ns = (f4 + 5) // 10  # round half up on the 4th decimal
            ns = ints * 1000 + np.where(ints < 0, -frac_ns, frac_ns)
            # Alignment check: the text must agree with the decoded float to float precision.
            tol = np.abs(fvals) * 1000.0 * 4e-16 + 2.0
            if (np.abs(ns.astype(np.float64) - fvals * 1000.0) <= tol).all():
                out[idx] = ns
                return out, True
    # Odd layouts (e.g. a "ts" key inside args): nearest ns of the float value, flagged.
    out[idx] = np.rint(fvals * 1000.0).astype(np.int64)
    return out, False


def _int_values(vals: list) -> np.ndarray:
    """int64 array from decoded values: ints kept, digit strings parsed, anything else -1."""
    try:
        return np.array(vals, dtype=np.int64)
    except (TypeError, ValueError, OverflowError):
        pass
    out = []
    app = out.append
    for v in vals:
        t = type(v)
        if t is int and -(2**63) <= v < 2**63:
            app(v)
        elif t is str and v.isdigit():
            app(int(v))
        else:
            app(NONE_ID)
    return np.array(out, dtype=np.int64)


def _int_arg(args: np.ndarray, rows: np.ndarray, n: int, key: str, alt: str | None = None) -> np.ndarray:
    """Integer linking key read from the args of events ``rows`` (``alt`` spelling as a
    fallback); -1 where absent or not an integer."""
    out = np.full(n, NONE_ID, dtype=np.int64)
    if not len(rows):
        return out
    sub = args[rows].tolist()
    if alt is None:
        vals = [a.get(key, -1) if a else -1 for a in sub]
    else:
        vals = [(a[key] if key in a else a.get(alt, -1)) if a else -1 for a in sub]
    out[rows] = _int_values(vals)
    return out


def _flow_ids(vals: list) -> np.ndarray:
    """Flow ids as int64: integers kept, ``"0x1a"``/``"26"`` strings parsed, any other string
    mapped to a stable id of its own above 2**62 (flows pair by equal ids)."""
    if set(map(type, vals)) <= {int}:
        return _int_values(vals)
    other: dict[str, int] = {}
    out = []
    for v in vals:
        if type(v) is int:
            out.append(v if -(2**63) <= v < 2**63 else other.setdefault(str(v), 2**62 + len(other)))
        elif type(v) is str:
            t = v.strip().lower()
            try:
                out.append(int(t, 16) if t.startswith("0x") else int(t))
                continue
            except ValueError:
                out.append(other.setdefault(v, 2**62 + len(other)))
        else:
            out.append(NONE_ID)
    return np.array(out, dtype=np.int64)


def _norm_categorical(vals: list) -> tuple[pd.Categorical, np.ndarray, list]:
    """pid/tid as a categorical of normalised values (digit strings become ints, so that
    ``"24572"`` and ``24572`` are one thread), the rows whose original was a digit string
    (kept for lossless re-export), and the categories as a list."""
    codes, uniq = pd.factorize(np.asarray(vals, dtype=object))
    uniq = list(uniq)
    digit = np.array([type(u) is str and u.isdigit() for u in uniq], dtype=bool)
    if not digit.any():
        cat = pd.Categorical.from_codes(codes, categories=pd.Index(uniq, dtype=object))
        return cat, np.empty(0, dtype=np.int64), uniq
    norm = [int(u) if d else u for u, d in zip(uniq, digit)]
    c2, u2 = pd.factorize(np.asarray(norm, dtype=object))
    new_codes = np.where(codes >= 0, c2[np.maximum(codes, 0)], -1)
    rows = np.flatnonzero((codes >= 0) & digit[np.maximum(codes, 0)])
    u2 = list(u2)
    return pd.Categorical.from_codes(new_codes, categories=pd.Index(u2, dtype=object)), rows, u2


def _norm_ids(vals: list) -> list:
    """pid/tid as written: ints stay ints, digit strings become ints, other strings stay."""
    if set(map(type, vals)) <= {int}:
        return vals
    return [int(v) if type(v) is str and v.isdigit() else v for v in vals]


def _categorical(values: list | np.ndarray) -> pd.Categorical:
    """Categorical in order of first appearance, with object categories (any mix of
    ints and strings), None as missing."""
    codes, uniques = pd.factorize(np.asarray(values, dtype=object) if isinstance(values, list) else values)
    return pd.Categorical.from_codes(codes, categories=pd.Index(uniques, dtype=object))


def _sparse_categorical(values: list, rows: np.ndarray, n: int) -> pd.Categorical:
    """Categorical of a column that is only set on ``rows`` (None elsewhere)."""
    codes = np.full(n, -1, dtype=np.int64)
    uniques: list = []
    if len(rows):
        sub = np.asarray(values, dtype=object)[rows]
        c, u = pd.factorize(sub)
        codes[rows] = c
        uniques = list(u)
    return pd.Categorical.from_codes(codes, categories=pd.Index(uniques, dtype=object))


def events_to_table(src: SourceBytes, events: list) -> EventTable:
    path = src.path
    n = len(events)
    if not set(map(type, events)) <= {dict}:
        for i, e in enumerate(events):
            if type(e) is not dict:
                raise _bad(path, i, f"event is {type(e).__name__}, expected an object")
    rows = [(e.get("ph"), e.get("cat"), e.get("name"), e.get("pid"), e.get("tid"), e.get("ts"),
             e.get("dur"), e.get("args"), e.get("id"), e.get("bp")) for e in events]
    ph, cat, name, pid, tid, ts, dur, args, fid, bp = map(list, zip(*rows)) if rows else ([],) * 10
    del rows

    # --- validation: fast type scans, a precise message on the first bad event ---
    _check_types(path, ph, "ph", (str,), np.ones(n, dtype=bool), "a string")
    ph_codes, ph_uniques = pd.factorize(np.asarray(ph, dtype=object))
    ph_u = list(ph_uniques)
    is_x = ph_codes == (ph_u.index("X") if "X" in ph_u else -2)
    is_b = ph_codes == (ph_u.index("B") if "B" in ph_u else -2)
    is_e = ph_codes == (ph_u.index("E") if "E" in ph_u else -2)
    has_be = bool(is_b.any() or is_e.any())
    is_span = (is_x | is_b) if has_be else is_x
    needs_ts = ph_codes != (ph_u.index("M") if "M" in ph_u else -2)
    ts_types = set(map(type, ts))
    ts_none = _check_types(path, ts, "ts", (int, float), needs_ts)
    dur_none = _check_types(path, dur, "dur", (int, float), is_x)
    _check_types(path, args, "args", (dict,), None, "an object")
    # cat and bp are looked up as keys: a list or object there is one line, not a TypeError
    _check_types(path, cat, "cat", (str, int, float, bool), None, "a string")
    _check_types(path, bp, "bp", (str, int, float, bool), None, "a string")
    args_arr = np.asarray(args, dtype=object) if n else np.empty(0, dtype=object)
    if not set(map(type, name)) <= {str, type(None)}:
        name = [v if v is None or type(v) is str else str(v) for v in name]
    has_ts = np.not_equal(np.asarray(ts, dtype=object), None) if ts_none else np.ones(n, dtype=bool)
    if dur_none:
        dur_obj = np.asarray(dur, dtype=object)
        has_dur = np.not_equal(dur_obj, None)
        dur_obj[~has_dur] = 0
        dur_f = dur_obj.astype(np.float64)
    else:
        has_dur = np.ones(n, dtype=bool)
        dur_f = np.asarray(dur, dtype=np.float64)

    _check_range_arr(path, dur_f, dur, "dur")
    for field, col in (("pid", pid), ("tid", tid)):
        bad_t = set(map(type, col)) - {int, str, type(None), float}
        if bad_t:
            i = next(i for i, v in enumerate(col) if type(v) in bad_t)
            raise _bad(path, i, f"'{field}' has the wrong type ({type(col[i]).__name__}), expected a number or a string")
    ts_ns, exact = _exact_ts_ns(src, ts, has_ts, ts_types - {type(None)}, path)
    if (dur_f < 0).any():
        i = int(np.flatnonzero(dur_f < 0)[0])
        raise _bad(path, i, f"negative duration ({dur[i]} µs)")
    dur_ns = np.rint(dur_f * 1000.0).astype(np.int64)
    dur_ns[~has_dur] = -1

    # --- kinds, from (ph, cat) pairs looked up once per distinct pair ---
    cat_codes, cat_uniques = pd.factorize(np.asarray(cat, dtype=object), use_na_sentinel=True)
    n_cat = len(cat_uniques) + 1  # slot 0 = missing category
    pair = ph_codes.astype(np.int64) * n_cat + (cat_codes + 1)
    pair_u, pair_inv = np.unique(pair, return_inverse=True)
    cat_list = [None] + list(cat_uniques)
    pair_kind = []
    unknown_pairs = []
    unknown_ph_pairs = []
    for j, pc in enumerate(pair_u.tolist()):
        p, c = ph_u[pc // n_cat], cat_list[pc % n_cat]
        if p not in KNOWN_PH:
            unknown_ph_pairs.append(j)
        if p == "X" or p == "B":
            k = CATEGORY_KIND.get(c)
            if k is None:
                k = "other"
                unknown_pairs.append(j)
        elif p in _FLOW_PH:
            k = _FLOW_PH[p]
        elif p == "M":
            k = "meta"
        elif p in _INSTANT_PH:
            k = "instant"
        elif p == "C":
            k = "counter"
        else:
            k = "other"
        pair_kind.append(k)
    kind = np.asarray(pair_kind, dtype=object)[pair_inv]
    name_codes, name_uniques = pd.factorize(np.asarray(name, dtype=object))
    # Old traces record ProfilerStep#N and record_function labels as "Operator".
    step_names = pd.Series(name_uniques, dtype=object).astype(str).str.match(STEP_RE).to_numpy(bool)
    if step_names.any():
        is_step = np.zeros(n, dtype=bool)
        valid = name_codes >= 0
        is_step[valid] = step_names[name_codes[valid]]
        kind[is_step & (kind == "cpu_op")] = "annotation"

    _mtia_kinds(kind, cat_codes, list(cat_uniques), name_codes, list(name_uniques), pid, args_arr)

    # --- linking keys, read only where a kind can carry them ---
    dev_rows = np.flatnonzero(np.isin(kind, ["kernel", "memcpy", "memset", "gpu_annotation", "cuda_sync"]))
    corr_rows = np.flatnonzero(np.isin(kind, ["kernel", "memcpy", "memset", "cuda_sync", "runtime", "other"]))
    x_rows = np.flatnonzero(is_span)
    op_rows = np.flatnonzero(np.isin(kind, ["cpu_op", "annotation"]))
    correlation = _int_arg(args_arr, corr_rows, n, "correlation")
    external_id = _int_arg(args_arr, x_rows, n, "External id", "external id")
    rf_id = _int_arg(args_arr, op_rows, n, "Record function id")
    device = _int_arg(args_arr, dev_rows, n, "device")
    stream = _int_arg(args_arr, dev_rows, n, "stream", "stream_id")
    flow_rows = np.flatnonzero(np.isin(kind, ["flow_start", "flow_end"]))
    flow_id = np.full(n, NONE_ID, dtype=np.int64)
    if len(flow_rows):
        fid_arr = np.asarray(fid, dtype=object)
        flow_id[flow_rows] = _flow_ids(fid_arr[flow_rows].tolist())
    # Old traces: 0 means "none" for the external id.
    external_id[external_id == 0] = NONE_ID
    pid_cat, pid_digit_rows, pid_u = _norm_categorical(pid)
    tid_cat, tid_digit_rows, tid_u = _norm_categorical(tid)
    pid_codes_n = np.asarray(pid_cat.codes)
    tid_codes_n = np.asarray(tid_cat.codes)
    for i in dev_rows[stream[dev_rows] == NONE_ID].tolist():
        t = tid_u[tid_codes_n[i]] if tid_codes_n[i] >= 0 else None
        if type(t) is int:
            stream[i] = t
        elif type(t) is str:
            m = _STREAM_TID_RE.match(t)
            if m:
                stream[i] = int(m.group(1))
    for i in dev_rows[device[dev_rows] == NONE_ID].tolist():
        pv = pid_u[pid_codes_n[i]] if pid_codes_n[i] >= 0 else None
        if type(pv) is int:
            device[i] = pv
    be_unmatched = None
    if has_be:
        lane = pid_codes_n.astype(np.int64) * (len(tid_u) + 1) + tid_codes_n
        be_unmatched = _pair_begin_end(path, ts_ns, dur_ns, is_b & has_ts, is_e & has_ts, lane)

    # Keys beyond the canonical ones are kept per event for lossless re-export.
    extra = np.full(n, None, dtype=object)
    all_keys = set().union(*events) if n else set()
    odd = all_keys - _STANDARD_KEYS
    if odd:
        for i, e in enumerate(events):
            if len(e.keys() - _STANDARD_KEYS):
                extra[i] = {k: e[k] for k in e.keys() - _STANDARD_KEYS}
    # Originals that the canonical columns normalise are kept too, so that re-export
    # writes them back as they were: digit-string pids/tids, non-integer or non-flow ids,
    # and bp on events that are not flows.
    keep: dict[int, dict[str, Any]] = {}
    for field, col, rows_ in (("pid", pid, pid_digit_rows), ("tid", tid, tid_digit_rows)):
        for i in rows_.tolist():
            keep.setdefault(i, {})[field] = col[i]
    is_flow = np.zeros(n, dtype=bool)
    is_flow[flow_rows] = True
    fid_types = set(map(type, fid)) - {type(None)}
    if fid_types:
        has_id = np.not_equal(np.asarray(fid, dtype=object), None)
        odd_rows = has_id & ~is_flow
        if fid_types - {int}:
            odd_rows |= has_id & np.fromiter((type(v) is not int for v in fid), dtype=bool, count=n)
        for i in np.flatnonzero(odd_rows).tolist():
            keep.setdefault(i, {})["id"] = fid[i]
    if set(map(type, bp)) - {type(None)}:
        for i in np.flatnonzero(np.not_equal(np.asarray(bp, dtype=object), None) & ~is_flow).tolist():
            keep.setdefault(i, {})["bp"] = bp[i]
    for i, d in keep.items():
        extra[i] = {**(extra[i] or {}), **d}

    df = pd.DataFrame({
        "eid": np.arange(n, dtype=np.int64),
        "kind": pd.Categorical(kind, categories=_kind_categories()),
        "cat": pd.Categorical.from_codes(cat_codes, categories=pd.Index(cat_uniques, dtype=object)),
        "ph": pd.Categorical.from_codes(ph_codes, categories=pd.Index(ph_uniques, dtype=object)),
        "name": pd.Categorical.from_codes(name_codes, categories=pd.Index(name_uniques, dtype=object)),
        "ts_ns": ts_ns,
        "dur_ns": dur_ns,
        "pid": pid_cat,
        "tid": tid_cat,
        "device": device,
        "stream": stream,
        "correlation": correlation,
        "external_id": external_id,
        "rf_id": rf_id,
        "flow_id": flow_id,
        "rank": np.full(n, NONE_ID, dtype=np.int64),
        "args": args_arr,
        "bp": _sparse_categorical(bp, flow_rows, n),
        "extra": extra,
        "has_ts": has_ts,
    }, copy=False)
    table = EventTable(df)
    if not exact:
        table.warn("ts_precision", int(has_ts.sum()), 0,
                   "fractional timestamps could not be read from the file's text; they were rounded "
                   "from float64 values (up to ±0.25 µs off at epoch scale)")
    if be_unmatched is not None:
        (nb, fb), (ne, fe) = be_unmatched
        table.warn("unmatched_begin_end", nb + ne, fb if fb is not None else fe,
                   f"duration events without their pair on the thread: {nb} 'B' without an 'E' "
                   f"and {ne} 'E' without a 'B' (kept, but not graph nodes)")
    if unknown_ph_pairs:
        um = np.isin(pair_inv, unknown_ph_pairs)
        vc = pd.Series(np.asarray(ph, dtype=object)[um]).map(repr).value_counts()
        table.warn("unknown_phase", int(um.sum()), int(np.flatnonzero(um)[0]),
                   "events with a phase ('ph') opgraph does not read, kept as 'other' (not graph nodes): "
                   + ", ".join(f"{k} ({v})" for k, v in vc.head(5).items()))
    if unknown_pairs:
        um = np.isin(pair_inv, unknown_pairs)
        um &= ~np.isin(np.asarray(cat, dtype=object), list(_KNOWN_NON_NODE_CATS))
        if um.any():
            vc = pd.Series(np.asarray(cat, dtype=object)[um]).fillna("<none>").value_counts()
            table.warn("unknown_category", int(um.sum()), int(np.flatnonzero(um)[0]),
                       "complete events with unknown categories kept as 'other' (not graph nodes): "
                       + ", ".join(f"{k} ({v})" for k, v in vc.head(5).items()))
    return table


def _pair_begin_end(path: str, ts_ns: np.ndarray, dur_ns: np.ndarray, is_b: np.ndarray, is_e: np.ndarray,
                    lane: np.ndarray) -> tuple[tuple[int, int | None], tuple[int, int | None]]:
    """Pair Chrome ``B``/``E`` duration events into complete spans, in place: each ``B`` gets
    the ``dur_ns`` up to its ``E`` (the ``E`` keeps no duration and is not a node). Pairs
    are matched per thread (``lane``) with a stack, in time order (file order on ties):
    one sort and one linear pass over the B/E events only. Returns ((unmatched B count,
    first such event), (unmatched E count, first such event))."""
    rows = np.flatnonzero(is_b | is_e)
    dur_ns[is_b] = -1  # a 'B' has the duration of its pair, or none
    order = rows[np.lexsort((rows, ts_ns[rows], lane[rows]))]
    lanes = lane[order].tolist()
    begins = is_b[order].tolist()
    ts_l = ts_ns[order].tolist()
    rows_l = order.tolist()
    stack: list[int] = []
    cur = None
    lone_b: list[int] = []
    lone_e: list[int] = []
    limit = int(np.iinfo(np.int64).max)
    for k, (ln, isb, r) in enumerate(zip(lanes, begins, rows_l)):
        if ln != cur:
            lone_b.extend(rows_l[j] for j in stack)
            stack = []
            cur = ln
        if isb:
            stack.append(k)
        elif stack:
            j = stack.pop()
            d = ts_l[k] - ts_l[j]
            if d > limit:
                raise _bad(path, rows_l[j], "'B' event and its 'E' are further apart than int64 nanoseconds "
                                            "can hold (about 292 years)")
            dur_ns[rows_l[j]] = d
        else:
            lone_e.append(r)
    lone_b.extend(rows_l[j] for j in stack)
    return ((len(lone_b), min(lone_b) if lone_b else None), (len(lone_e), min(lone_e) if lone_e else None))


def _mtia_kinds(kind: np.ndarray, cat_codes: np.ndarray, cat_uniques: list, name_codes: np.ndarray,
                name_uniques: list, pid: list, args: np.ndarray) -> None:
    """Refine the kinds of MTIA events in place, by name (:data:`MTIA_CCP_KIND`,
    :data:`MTIA_DEVICE_RECORDS`)."""
    cats = {c: j for j, c in enumerate(cat_uniques) if c in ("mtia_ccp_events", "mtia_runtime")}
    if not cats:
        return
    code_of = {nm: j for j, nm in enumerate(name_uniques)}
    ccp = cats.get("mtia_ccp_events")
    if ccp is not None:
        is_ccp = (cat_codes == ccp) & (kind == "kernel")
        for nm, k in MTIA_CCP_KIND.items():
            if nm in code_of:
                kind[is_ccp & (name_codes == code_of[nm])] = k
    rt = cats.get("mtia_runtime")
    if rt is not None:
        codes = [code_of[nm] for nm in MTIA_DEVICE_RECORDS if nm in code_of]
        for i in np.flatnonzero((cat_codes == rt) & (kind == "runtime") & np.isin(name_codes, codes)).tolist():
            a = args[i] or {}
            dev = a.get("device")
            if dev is not None and str(dev) == str(pid[i]):
                kind[i] = "cuda_sync"


def _not_none(v: Any) -> bool:
    return v is not None


def _kind_categories() -> list[str]:
    from opgraph.ingest.table import ALL_KINDS
    return list(ALL_KINDS)


def post_checks(table: EventTable) -> None:
    """Warnings that need the whole table (recoverable oddities)."""
    ev = table.events
    if ev.empty:
        return
    x = ev[(ev["ph"] == "X") & (ev["dur_ns"] == 0)]
    if len(x):
        table.warn("zero_duration", len(x), int(x["eid"].iloc[0]), "complete events with zero duration")
