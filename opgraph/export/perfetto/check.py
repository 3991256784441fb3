"""A structural checker for Chrome / Perfetto trace JSON.

``check_chrome_trace(doc_or_path)`` lists what a viewer would drop, misdraw or reject:

* events that are not objects, or lack ``ph``; non-metadata events without a numeric ``ts``;
* complete (``X``) events without a numeric ``dur``, or with a negative one;
* ``X`` events on the same (pid, tid) that partially overlap (neither nests in the other);
* v1 flows (``s`` / ``t`` / ``f``, keyed by ``cat``, ``name`` and ``id``): starts without an
  end, ends without a start, missing ids, and flow points that bind to no slice (``s`` and
  ``f`` with ``bp: "e"`` must lie inside a slice of their pid/tid, an ``f`` without it
  needs a slice starting at or after it);
* counters (``C``) without args or with non-numeric values;
* more than one ``process_name`` for a pid or ``thread_name`` for a (pid, tid).

Timestamps are read as JSON numbers (float64 µs); comparisons allow the float's own
resolution (one step: 0.25 µs at epoch-scale timestamps, under 1 ns below ~2.4 h) plus
``tolerance_ns``. Real traces often
have a few of these problems already (e.g. sub-µs overlaps from rounding): compare an
output against its input with :func:`new_problems`, which returns only the problems the
output adds. Every problem string names events by their index in the event list, so the
problems of events an export copies unchanged (first, in order) compare equal.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pandas as pd

from opgraph.gc_pause import gc_paused
from opgraph.errors import OpgraphInputError

_NUM = (int, float)
#: Time comparisons allow one float64 step of the µs value (converted to ns), plus 10 % for
#: the ns conversion's own rounding.
_ULP_SLACK = 1000.0 * 1.1
_FLOW_END_PH = ("f", "t")


def load_trace_doc(doc_or_path: Any) -> Any:
    """The decoded JSON of a trace given as a path (``.json`` / ``.json.gz``), bytes, or an
    already decoded document (returned as is)."""
    from opgraph.ingest.source import GZIP_MAGIC, decompress_gzip, read_json

    if isinstance(doc_or_path, (str, Path)):
        with gc_paused():
            return read_json(doc_or_path)  # regular files under the input cap, gzip capped
    if not isinstance(doc_or_path, (bytes, bytearray)):
        return doc_or_path
    data = bytes(doc_or_path)
    if data[:2] == GZIP_MAGIC:
        data = decompress_gzip(data, "<bytes>")  # capped
    with gc_paused():
        return orjson.loads(data)


def _desc(i: int, e: dict) -> str:
    return f"#{i} {e.get('ph')} {str(e.get('name'))[:60]!r} pid={e.get('pid')!r} tid={e.get('tid')!r}"


def check_chrome_trace(doc_or_path: Any, tolerance_ns: int = 0) -> list[str]:
    """Problems of a Chrome trace (see the module docstring); empty when none.

    ``doc_or_path``: a path, bytes, the decoded ``{"traceEvents": [...]}`` object or the
    bare event list. ``tolerance_ns``: extra slack for time comparisons.
    """
    try:
        doc = load_trace_doc(doc_or_path)
    except OpgraphInputError as e:
        return [f"cannot read the trace: {e}"]
    except (OSError, orjson.JSONDecodeError) as e:
        return [f"cannot read the trace: {type(e).__name__}: {e}"]
    if isinstance(doc, dict):
        if "traceEvents" not in doc:
            return ["top level: no 'traceEvents'"]
        events = doc["traceEvents"]
    elif isinstance(doc, list):
        events = doc
    else:
        return [f"top level is {type(doc).__name__}, expected an object or an array"]
    if not isinstance(events, list):
        return [f"'traceEvents' is {type(events).__name__}, expected an array"]
    with gc_paused():  # millions of small containers, none cyclic: keep the collector out
        t = _Table(events)
        problems = list(t.problems)
        problems += _check_x(t, tolerance_ns)
        problems += _check_flows(t, tolerance_ns)
        problems += _check_counters(t)
        problems += _check_names(t)
    return problems


def new_problems(output: Any, reference: Any, tolerance_ns: int = 0) -> list[str]:
    """Problems of ``output`` that ``reference`` (e.g. the trace it was exported from)
    does not have, counted as a multiset. Either may be a path, a document, or the list
    :func:`check_chrome_trace` returned for it."""
    out = output if _is_problem_list(output) else check_chrome_trace(output, tolerance_ns)
    ref = reference if _is_problem_list(reference) else check_chrome_trace(reference, tolerance_ns)
    left = Counter(ref)
    res = []
    for p in out:
        if left[p] > 0:
            left[p] -= 1
        else:
            res.append(p)
    return res


def _is_problem_list(x: Any) -> bool:
    return isinstance(x, list) and all(isinstance(p, str) for p in x)


def _norm_id(v: Any) -> Any:
    """pid/tid identity: digit strings are the same thread as the int (viewers agree)."""
    return int(v) if isinstance(v, str) and v.isdigit() else v


def _codes(values: list) -> tuple[np.ndarray, list]:
    """Factorize pid or tid values after :func:`_norm_id` (applied to distinct values only)."""
    codes, uniq = pd.factorize(np.asarray(values, dtype=object), use_na_sentinel=False)
    norm = [_norm_id(u) for u in uniq]
    ncodes, nuniq = pd.factorize(pd.Series(norm, dtype=object).map(lambda v: (type(v).__name__, v)),
                                 use_na_sentinel=False)
    return ncodes[codes].astype(np.int64), list(nuniq)


class _Table:
    """Columns of the events, extracted once; ``ok`` marks events with a ``ph`` (and a
    numeric ``ts`` unless metadata)."""

    def __init__(self, events: list) -> None:
        self.events = events
        n = len(events)
        self.problems: list[str] = []
        is_dict = set(map(type, events)) <= {dict}
        if not is_dict:
            for i, e in enumerate(events):
                if type(e) is not dict:
                    self.problems.append(f"#{i}: event is {type(e).__name__}, not an object")
        ev = events if is_dict else [e if type(e) is dict else {} for e in events]
        rows = [(e.get("ph"), e.get("ts"), e.get("dur"), e.get("pid"), e.get("tid")) for e in ev]
        ph, ts, dur, pid, tid = (list(c) for c in zip(*rows)) if rows else ([], [], [], [], [])
        del rows
        ph_types = set(map(type, ph))
        if ph_types <= {str}:
            has_ph = np.array([bool(p) for p in ph], dtype=bool) if "" in set(ph) else np.ones(n, dtype=bool)
        else:
            has_ph = np.array([type(p) is str and bool(p) for p in ph], dtype=bool)
        self.ph = np.asarray([p if type(p) is str else None for p in ph] if not ph_types <= {str} else ph,
                             dtype=object)
        is_m = self.ph == "M"
        ts_ok = np.array([type(v) in _NUM for v in ts], dtype=bool) if not set(map(type, ts)) <= set(_NUM) \
            else np.ones(n, dtype=bool)
        for i in np.flatnonzero(~has_ph).tolist():
            if type(events[i]) is dict:
                self.problems.append(f"{_desc(i, events[i])}: missing 'ph'")
        for i in np.flatnonzero(has_ph & ~is_m & ~ts_ok).tolist():
            self.problems.append(f"{_desc(i, events[i])}: missing or non-numeric 'ts'")
        self.ok = has_ph & (is_m | ts_ok)
        self.ts_us = np.array([v if type(v) in _NUM else np.nan for v in ts], dtype=np.float64) \
            if not ts_ok.all() else np.asarray(ts, dtype=np.float64)
        self.dur = dur
        pc, self.pid_u = _codes(pid)
        tc, self.tid_u = _codes(tid)
        self.lane = pc * (len(self.tid_u) + 1) + tc
        self._slices: tuple | None = None

    def where(self, *phs: str) -> np.ndarray:
        return np.flatnonzero(self.ok & np.isin(self.ph, phs))

    def slices(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[str]]:
        """X events with a valid dur: (index, lane, start ns, end ns, slack ns), and the
        problems of the others."""
        if self._slices is not None:
            return self._slices
        problems: list[str] = []
        x = self.where("X")
        d = [self.dur[i] for i in x.tolist()]
        if set(map(type, d)) <= set(_NUM):
            dv = np.asarray(d, dtype=np.float64)
            good = np.ones(len(x), dtype=bool)
        else:
            good = np.array([type(v) in _NUM for v in d], dtype=bool)
            dv = np.array([v if type(v) in _NUM else 0.0 for v in d], dtype=np.float64)
            for i in x[~good].tolist():
                problems.append(f"{_desc(i, self.events[i])}: complete event without a numeric 'dur'")
        neg = good & (dv < 0)
        for i, v in zip(x[neg].tolist(), dv[neg].tolist()):
            problems.append(f"{_desc(i, self.events[i])}: negative dur ({self.dur[i]})")
        keep = good & ~neg
        idx = x[keep]
        ts_us = self.ts_us[idx]
        end_us = ts_us + dv[keep]
        start = np.rint(ts_us * 1000.0).astype(np.int64)
        end = np.rint(end_us * 1000.0).astype(np.int64)
        slack = np.rint(np.spacing(np.abs(end_us)) * _ULP_SLACK).astype(np.int64)
        self._slices = (idx, self.lane[idx], start, end, slack, problems)
        return self._slices


def _check_x(t: _Table, tol: int) -> list[str]:
    idx, lane, start, end, slack, problems = t.slices()
    problems = list(problems)
    if not len(idx):
        return problems
    events = t.events
    o = np.lexsort((idx, -(end - start), start, lane))
    ln, s_l, e_l, sl_l, i_l = lane[o].tolist(), start[o].tolist(), end[o].tolist(), slack[o].tolist(), idx[o].tolist()
    stack_end: list[int] = []
    stack_idx: list[int] = []
    cur = None
    for k in range(len(o)):
        if ln[k] != cur:
            cur = ln[k]
            stack_end.clear()
            stack_idx.clear()
        s, e, sl = s_l[k], e_l[k], sl_l[k] + tol
        while stack_end and stack_end[-1] <= s + sl:
            stack_end.pop()
            stack_idx.pop()
        if stack_end and e > stack_end[-1] + sl:
            j = stack_idx[-1]
            over = stack_end[-1] - s
            problems.append(f"{_desc(i_l[k], events[i_l[k]])}: partially overlaps {_desc(j, events[j])} "
                            f"by {over} ns (X events on one thread must nest)")
            e = stack_end[-1]
        stack_end.append(e)
        stack_idx.append(i_l[k])
    return problems


def _check_flows(t: _Table, tol: int) -> list[str]:
    problems: list[str] = []
    fl = t.where("s", "t", "f")
    if not len(fl):
        return problems
    events = t.events
    starts: dict[tuple, list[int]] = {}
    ends: dict[tuple, list[int]] = {}
    pts: list[int] = []
    enclosing: list[bool] = []
    for i in fl.tolist():
        e = events[i]
        fid = e.get("id", e.get("bind_id"))
        if fid is None:
            problems.append(f"{_desc(i, e)}: flow event without 'id'")
            continue
        key = (str(e.get("cat")), str(e.get("name")), str(fid))
        p = e["ph"]
        if p == "s":
            starts.setdefault(key, []).append(i)
            pts.append(i)
            enclosing.append(True)
        else:
            ends.setdefault(key, []).append(i)
            if e.get("bp") == "e":
                pts.append(i)
                enclosing.append(True)
            elif p == "f":
                pts.append(i)
                enclosing.append(False)
    for key, ii in starts.items():
        if key not in ends:
            for i in ii:
                problems.append(f"{_desc(i, events[i])}: flow start (cat={key[0]!r} id={key[2]}) without an end")
    for key, ii in ends.items():
        if key not in starts:
            for i in ii:
                problems.append(f"{_desc(i, events[i])}: flow end (cat={key[0]!r} id={key[2]}) without a start")
    problems += _check_binding(t, np.array(pts, dtype=np.int64), np.array(enclosing, dtype=bool), tol)
    return problems


def _check_binding(t: _Table, pt_idx: np.ndarray, pt_enc: np.ndarray, tol: int) -> list[str]:
    """Flow points must bind to a slice of their own (pid, tid): ``s`` and ``bp: "e"``
    ends to a slice enclosing them, other ``f`` ends to a slice starting at or after them."""
    if not len(pt_idx):
        return []
    idx, s_lane, start, end, slack, _ = t.slices()
    pt_us = t.ts_us[pt_idx]
    pt_t = np.rint(pt_us * 1000.0).astype(np.int64)
    pt_sl = np.rint(np.spacing(np.abs(pt_us)) * _ULP_SLACK).astype(np.int64) + tol
    p_lane = t.lane[pt_idx]
    bound = np.zeros(len(pt_idx), dtype=bool)
    has_lane = np.isin(p_lane, s_lane)
    o_all = np.lexsort((start, s_lane))
    lanes_sorted = s_lane[o_all]
    for c in np.unique(p_lane[has_lane]).tolist():
        lo, hi = np.searchsorted(lanes_sorted, c, "left"), np.searchsorted(lanes_sorted, c, "right")
        o = o_all[lo:hi]
        st, run_max_end, ssl = start[o], np.maximum.accumulate(end[o]), slack[o]
        q = np.flatnonzero(p_lane == c)
        tq, sl = pt_t[q], pt_sl[q]
        j = np.searchsorted(st, tq + sl, side="right") - 1
        jj = np.maximum(j, 0)
        enc = (j >= 0) & (run_max_end[jj] >= tq - sl - ssl[jj])
        later = st[-1] >= tq - sl
        bound[q] = np.where(pt_enc[q], enc, later)
    problems = []
    for k in np.flatnonzero(~bound).tolist():
        i = int(pt_idx[k])
        e = t.events[i]
        if not has_lane[k]:
            problems.append(f"{_desc(i, e)}: flow point on a thread without slices (binds to nothing)")
        elif pt_enc[k]:
            problems.append(f"{_desc(i, e)}: flow point inside no slice of its pid/tid (binds to nothing)")
        else:
            problems.append(f"{_desc(i, e)}: flow end with no later slice on its pid/tid (binds to nothing)")
    return problems


def _check_counters(t: _Table) -> list[str]:
    problems = []
    for i in t.where("C").tolist():
        e = t.events[i]
        a = e.get("args")
        if not isinstance(a, dict) or not a:
            problems.append(f"{_desc(i, e)}: counter without args")
            continue
        bad = [k for k, v in a.items() if type(v) not in _NUM]
        if bad:
            problems.append(f"{_desc(i, e)}: counter with non-numeric values for {bad[:5]}")
    return problems


def _check_names(t: _Table) -> list[str]:
    seen: dict[tuple, list[int]] = {}
    for i in np.flatnonzero(t.ph == "M").tolist():
        e = t.events[i]
        nm = e.get("name")
        if nm == "process_name":
            key = (nm, int(t.lane[i] // (len(t.tid_u) + 1)))
        elif nm == "thread_name":
            key = (nm, int(t.lane[i]))
        else:
            continue
        seen.setdefault(key, []).append(i)
    problems = []
    for (nm, _), ii in seen.items():
        if len(ii) > 1:
            e = t.events[ii[0]]
            problems.append(f"{_desc(ii[0], e)}: {len(ii)} {nm} metadata events for the same "
                            f"{'pid' if nm == 'process_name' else 'pid/tid'} (events {ii[:5]})")
    return problems
