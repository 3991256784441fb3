"""The Kineto event loop: decoded Chrome-trace events -> the canonical event table.

:func:`events_to_table` turns the list of event dicts of a Kineto / Chrome trace into an
:class:`~opgraph.model.table.EventTable`: column-wise type checks, kinds per (phase,
category) pair (:mod:`opgraph.ingest.kineto_kinds`), linking keys read from args, exact
timestamps (:mod:`opgraph.ingest.kineto_times`), ``B``/``E`` duration pairs joined per
thread, originals kept for lossless re-export, and the per-event health warnings.
Times: the trace's µs in, int64 **ns** in the table (``dur_ns`` -1 = no duration).
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd

from opgraph.ingest.kineto_columns import (
    check_field_types, event_error, flow_ids, int_arg, norm_categorical, object_array, sparse_categorical,
)
from opgraph.model.event_args import DictArgs, RawArgs
from opgraph.ingest.kineto_decode import FieldColumns, columns_of_dicts
from opgraph.ingest.kineto_kinds import KNOWN_NON_NODE_CATS, kind_categories, mtia_kinds, pair_kinds
from opgraph.ingest.kineto_times import check_us_range, exact_ts_ns
from opgraph.model.lanes import lanes_of_codes
from opgraph.ingest.source import SourceBytes
from opgraph.ingest.steps import STEP_RE
from opgraph.model.table import NONE_ID, EventTable

_STREAM_TID_RE = re.compile(r"^stream\s+(\d+)")


def events_to_table(src: SourceBytes, events: list | FieldColumns) -> EventTable:
    """The canonical event table of the Chrome events ``events`` of ``src`` (a list of
    decoded dicts, or their :class:`~opgraph.ingest.kineto_decode.FieldColumns`; times in
    µs): fields type-checked (one-line error on the first bad event), kinds from (phase,
    category), linking keys from args, exact int64 ns times, ``B``/``E`` pairs joined, and
    the recoverable oddities as health warnings."""
    path = src.path
    n = len(events)
    if not isinstance(events, FieldColumns):
        if not set(map(type, events)) <= {dict}:
            for i, e in enumerate(events):
                if type(e) is not dict:
                    raise event_error(path, i, f"event is {type(e).__name__}, expected an object")
        events = columns_of_dicts(events)
    ph, cat, name, pid, tid, ts, dur, args, fid, bp = (events.ph, events.cat, events.name, events.pid, events.tid,
                                                       events.ts, events.dur, events.args, events.id, events.bp)
    extra = events.extra if events.extra is not None else np.full(n, None, dtype=object)
    del events

    # --- validation: fast type scans, a precise message on the first bad event ---
    check_field_types(path, ph, "ph", (str,), np.ones(n, dtype=bool), "a string")
    ph_a = object_array(ph)
    ph_codes, ph_uniques = pd.factorize(ph_a)
    ph_u = list(ph_uniques)
    is_x = ph_codes == (ph_u.index("X") if "X" in ph_u else -2)
    is_b = ph_codes == (ph_u.index("B") if "B" in ph_u else -2)
    is_e = ph_codes == (ph_u.index("E") if "E" in ph_u else -2)
    has_be = bool(is_b.any() or is_e.any())
    is_span = (is_x | is_b) if has_be else is_x
    needs_ts = ph_codes != (ph_u.index("M") if "M" in ph_u else -2)
    ts_types = set(map(type, ts))
    ts_none = check_field_types(path, ts, "ts", (int, float), needs_ts)
    dur_none = check_field_types(path, dur, "dur", (int, float), is_x)
    if isinstance(args, RawArgs):   # raw JSON text from the typed pass: objects or null, checked there
        args_arr, arg_src = None, args
    else:
        check_field_types(path, args, "args", (dict,), None, "an object")
        args_arr = object_array(args)
        arg_src = DictArgs(args_arr)
    # cat and bp are looked up as keys: a list or object there is one line, not a TypeError
    check_field_types(path, cat, "cat", (str, int, float, bool), None, "a string")
    check_field_types(path, bp, "bp", (str, int, float, bool), None, "a string")
    if not set(map(type, name)) <= {str, type(None)}:
        name = [v if v is None or type(v) is str else str(v) for v in name]
    has_ts = np.not_equal(object_array(ts), None) if ts_none else np.ones(n, dtype=bool)
    if dur_none:
        dur_obj = object_array(dur)
        has_dur = np.not_equal(dur_obj, None)
        dur_obj[~has_dur] = 0
        dur_f = dur_obj.astype(np.float64)
    else:
        has_dur = np.ones(n, dtype=bool)
        dur_f = np.asarray(dur, dtype=np.float64)

    check_us_range(path, dur_f, dur, "dur")
    for field, col in (("pid", pid), ("tid", tid)):
        bad_t = set(map(type, col)) - {int, str, type(None), float}
        if bad_t:
            i = next(i for i, v in enumerate(col) if type(v) in bad_t)
            raise event_error(path, i, f"'{field}' has the wrong type ({type(col[i]).__name__}), "
                                       f"expected a number or a string")
    ts_ns, exact = exact_ts_ns(src, ts, has_ts, ts_types - {type(None)}, path)
    if (dur_f < 0).any():
        i = int(np.flatnonzero(dur_f < 0)[0])
        raise event_error(path, i, f"negative duration ({dur[i]} µs)")
    dur_ns = np.rint(dur_f * 1000.0).astype(np.int64)
    dur_ns[~has_dur] = -1

    # --- kinds, from (ph, cat) pairs looked up once per distinct pair ---
    cat_a = object_array(cat)
    cat_codes, cat_uniques = pd.factorize(cat_a, use_na_sentinel=True)
    n_cat = len(cat_uniques) + 1  # slot 0 = missing category
    pair = ph_codes.astype(np.int64) * n_cat + (cat_codes + 1)
    pair_u, pair_inv = np.unique(pair, return_inverse=True)
    cat_list = [None] + list(cat_uniques)
    pair_kind, unknown_pairs, unknown_ph_pairs = pair_kinds(pair_u, ph_u, cat_list, n_cat)
    kind = np.asarray(pair_kind, dtype=object)[pair_inv]
    name_codes, name_uniques = pd.factorize(object_array(name))
    # Old traces record ProfilerStep#N and record_function labels as "Operator".
    step_names = pd.Series(name_uniques, dtype=object).astype(str).str.match(STEP_RE).to_numpy(bool)
    if step_names.any():
        is_step = np.zeros(n, dtype=bool)
        valid = name_codes >= 0
        is_step[valid] = step_names[name_codes[valid]]
        kind[is_step & (kind == "cpu_op")] = "annotation"

    mtia_kinds(kind, cat_codes, list(cat_uniques), name_codes, list(name_uniques), pid, arg_src)

    # --- linking keys, read only where a kind can carry them ---
    kind_codes, kind_uniques = pd.factorize(kind, use_na_sentinel=False)   # a few kinds: tested once each

    def rows_of(*kinds: str) -> np.ndarray:
        return np.flatnonzero(np.isin(kind_uniques, kinds)[kind_codes])
    dev_rows = rows_of("kernel", "memcpy", "memset", "gpu_annotation", "cuda_sync")
    corr_rows = rows_of("kernel", "memcpy", "memset", "cuda_sync", "runtime", "other")
    x_rows = np.flatnonzero(is_span)
    op_rows = rows_of("cpu_op", "annotation")
    bad_keys: dict[str, np.ndarray] = {}   # linking keys present but not integers
    correlation = int_arg(arg_src, corr_rows, n, "correlation", bad_keys)
    external_id = int_arg(arg_src, x_rows, n, "External id", bad_keys)   # or "external id" (event_args.LINK_KEYS)
    rf_id = int_arg(arg_src, op_rows, n, "Record function id", bad_keys)
    device = int_arg(arg_src, dev_rows, n, "device", bad_keys)
    stream = int_arg(arg_src, dev_rows, n, "stream", bad_keys)   # or "stream_id"
    flow_rows = rows_of("flow_start", "flow_end")
    flow_id = np.full(n, NONE_ID, dtype=np.int64)
    if len(flow_rows):
        flow_id[flow_rows] = flow_ids([fid[i] for i in flow_rows.tolist()])
    # Old traces: 0 means "none" for the external id.
    external_id[external_id == 0] = NONE_ID
    pid_cat, pid_digit_rows, pid_u = norm_categorical(pid)
    tid_cat, tid_digit_rows, tid_u = norm_categorical(tid)
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
        lane = lanes_of_codes(pid_codes_n, tid_codes_n, len(tid_u))
        be_unmatched = _pair_begin_end(path, ts_ns, dur_ns, is_b & has_ts, is_e & has_ts, lane)

    # Keys beyond the canonical ones are in ``extra`` (for lossless re-export).
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
        has_id = np.not_equal(object_array(fid), None)
        odd_rows = has_id & ~is_flow
        if fid_types - {int}:
            odd_rows |= has_id & np.fromiter((type(v) is not int for v in fid), dtype=bool, count=n)
        for i in np.flatnonzero(odd_rows).tolist():
            keep.setdefault(i, {})["id"] = fid[i]
    bp_a = object_array(bp) if set(map(type, bp)) - {type(None)} else None
    if bp_a is not None:
        for i in np.flatnonzero(np.not_equal(bp_a, None) & ~is_flow).tolist():
            keep.setdefault(i, {})["bp"] = bp[i]
    for i, d in keep.items():
        extra[i] = {**(extra[i] or {}), **d}

    data = {
        "eid": np.arange(n, dtype=np.int64),
        "kind": _kind_categorical(kind_codes, kind_uniques),
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
        "bp": sparse_categorical(bp_a, flow_rows, n),
        "extra": extra,
        "has_ts": has_ts,
    }
    args_at = list(data).index("args")
    if args_arr is None:   # kept raw: the table holds it beside the frame until something reads the column
        del data["args"]
    table = EventTable(pd.DataFrame(data, copy=False), raw_args=args if isinstance(args, RawArgs) else None,
                       args_at=args_at)
    if not exact:
        table.warn("ts_precision", int(has_ts.sum()), 0,
                   "fractional timestamps could not be read from the file's text; they were rounded "
                   "from float64 values (up to ±0.25 µs off at epoch scale)")
    if be_unmatched is not None:
        (nb, fb), (ne, fe) = be_unmatched
        table.warn("unmatched_begin_end", nb + ne, fb if fb is not None else fe,
                   f"duration events without their pair on the thread: {nb} 'B' without an 'E' "
                   f"and {ne} 'E' without a 'B' (kept, but not graph nodes)")
    if bad_keys:
        rows = np.unique(np.concatenate(list(bad_keys.values())))
        table.warn("link_key_not_integer", int(len(rows)), int(rows[0]),
                   "linking keys in args that are not integers, read as absent (the events stay unlinked "
                   "by them): " + ", ".join(f"{k} ({len(v)})" for k, v in bad_keys.items()))
    if unknown_ph_pairs:
        um = np.isin(pair_inv, unknown_ph_pairs)
        vc = pd.Series(ph_a[um]).map(repr).value_counts()
        table.warn("unknown_phase", int(um.sum()), int(np.flatnonzero(um)[0]),
                   "events with a phase ('ph') opgraph does not read, kept as 'other' (not graph nodes): "
                   + ", ".join(f"{k} ({v})" for k, v in vc.head(5).items()))
    if unknown_pairs:
        um = np.isin(pair_inv, unknown_pairs)
        um &= ~np.isin(cat_a, list(KNOWN_NON_NODE_CATS))
        if um.any():
            vc = pd.Series(cat_a[um]).fillna("<none>").value_counts()
            table.warn("unknown_category", int(um.sum()), int(np.flatnonzero(um)[0]),
                       "complete events with unknown categories kept as 'other' (not graph nodes): "
                       + ", ".join(f"{k} ({v})" for k, v in vc.head(5).items()))
    return table


def _kind_categorical(codes: np.ndarray, uniques: np.ndarray) -> pd.Categorical:
    """``pd.Categorical(kinds, categories=kind_categories())`` of kinds factorized as
    (``codes``, ``uniques``), made from the codes (a kind outside the categories is missing)."""
    cats = kind_categories()
    at = pd.Index(cats).get_indexer(pd.Index(uniques, dtype=object))
    return pd.Categorical.from_codes(np.append(at, -1)[codes] if len(codes) else codes, categories=cats)


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
                raise event_error(path, rows_l[j], "'B' event and its 'E' are further apart than int64 nanoseconds "
                                                   "can hold (about 292 years)")
            dur_ns[rows_l[j]] = d
        else:
            lone_e.append(r)
    lone_b.extend(rows_l[j] for j in stack)
    return ((len(lone_b), min(lone_b) if lone_b else None), (len(lone_e), min(lone_e) if lone_e else None))
