"""Cross-stream waits the trace implies but does not record.

A ``cudaStreamWaitEvent`` (or NCCL's stream join, a collective's completion) holds an
activity back until an activity of another stream has finished. Kineto records that only
with ``cuda_sync`` "Stream Wait Event" records (``event_wait`` edges of the graph). Without
one, an activity that started long after it could have (its launch call returned and its
stream was free, both more than :data:`LATE_START_NS` earlier) and within
:data:`STREAM_WAIT_TOL_NS` after an activity of another stream of its device ended, which
itself ended after the held activity became ready, waited for that activity: an inferred
``event_wait`` edge with ``evidence="stream_end"`` (docs/model.md, docs/critical-path.md).

The bounds come from the real traces (``benchmarks/cp_latencies.py``): the launch latency
after a launch call returns is 13.3 µs at p99 and a queued activity's gap after its
predecessor 29 µs at p99, so an activity that starts more than 100 µs after both was held.
"""

from __future__ import annotations

import re

import numpy as np

from opgraph.graph.linking import Edges
from opgraph.names import names_where

#: An activity that starts more than this (ns) after both its launch call returned and its
#: stream's previous activity ended was held by something (the critical path's bound on the
#: launch latency and on the kernel gap, too).
LATE_START_NS = 100_000
#: ... and it waited for an activity of another stream of its device that ended at most this
#: long (ns) before it started.
STREAM_WAIT_TOL_NS = 20_000


def late_activities(act: np.ndarray, dkey: np.ndarray, ts: np.ndarray, end: np.ndarray, call_end: np.ndarray,
                    launcher: np.ndarray, skip: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Activities (positions among ``act``) launched in the trace that started more than
    :data:`LATE_START_NS` after they were ready (their launch call returned and their
    stream's previous activity ended), less those ``skip`` marks; and per event the time it
    became ready (ns)."""
    o = act[np.lexsort((ts[act], dkey[act]))]
    prev_end = np.full(len(ts), np.iinfo(np.int64).min // 2, dtype=np.int64)
    same = dkey[o][1:] == dkey[o][:-1]
    prev_end[o[1:][same]] = end[o[:-1][same]]
    has = launcher[act] >= 0
    ready = np.maximum(np.where(has, call_end[act], np.iinfo(np.int64).min // 2), prev_end[act])
    late = has & (ts[act] - ready > LATE_START_NS)
    if skip is not None:
        late &= ~skip[act]
    ready_of = np.zeros(len(ts), dtype=np.int64)
    ready_of[act] = ready
    return act[late], ready_of


def infer_stream_waits(act: np.ndarray, dkey: np.ndarray, device: np.ndarray, ts: np.ndarray, end: np.ndarray,
                       call_start: np.ndarray, call_end: np.ndarray, launcher: np.ndarray,
                       skip: np.ndarray | None = None) -> Edges:
    """Inferred ``event_wait`` edges (module docstring) among activities ``act`` (positions
    into the per-event arrays; ``dkey`` one int per device stream, times in ns, ``call_*``
    the launching call's start and end, ``launcher`` -1 for an activity without a launch
    call in the trace). ``skip``: per event, True for activities whose start is already
    explained by a recorded or inferred wait."""
    e = np.empty(0, np.int64)
    empty = Edges(e, e.copy(), {"inferred": np.empty(0, bool), "evidence": np.empty(0, object)})
    if len(act) < 2:
        return empty
    cand, ready_of = late_activities(act, dkey, ts, end, call_end, launcher, skip)
    if not len(cand):
        return empty
    src_l, dst_l = [], []
    for dv in np.unique(device[cand]).tolist():
        on = act[device[act] == dv]
        on = on[np.argsort(end[on], kind="stable")]
        E = end[on]
        for x in cand[device[cand] == dv].tolist():
            k = int(np.searchsorted(E, ts[x], side="right")) - 1
            while k >= 0 and dkey[on[k]] == dkey[x]:
                k -= 1
            if k < 0:
                continue
            y = int(on[k])
            if ts[x] - end[y] <= STREAM_WAIT_TOL_NS and end[y] > ready_of[x] and end[y] > call_start[x]:
                src_l.append(y)
                dst_l.append(x)
    if not src_l:
        return empty
    n = len(src_l)
    return Edges(np.array(src_l, np.int64), np.array(dst_l, np.int64),
                 {"inferred": np.ones(n, bool), "evidence": np.full(n, "stream_end", dtype=object)})


#: Runtime calls that make a stream wait for an event (the device-side wait is not recorded).
STREAM_WAIT_CALL_RE = re.compile(r"^(cuda|hip|cu)StreamWaitEvent(_v\d+|_ptsz)?$")


def infer_wait_calls(act: np.ndarray, dkey: np.ndarray, ts: np.ndarray, end: np.ndarray, call_start: np.ndarray,
                     call_end: np.ndarray, launcher: np.ndarray, lane: np.ndarray, rt: np.ndarray,
                     names: np.ndarray, launch_calls: np.ndarray, skip: np.ndarray | None = None) -> Edges:
    """Stream waits known only from the host side: an activity that started more than
    :data:`LATE_START_NS` after its launch call returned and its stream was free, whose
    launching thread called ``cudaStreamWaitEvent`` (``hip``/``cu`` forms) just before that
    launch (no other launch call on the thread in between), was held by that wait; the
    stream and event it waited for are not recorded. Edges ``wait call -> activity``
    (``event_wait``, ``inferred=True``, ``evidence="stream_wait_call"``). ``rt`` are the
    runtime calls, ``launch_calls`` the calls with a launch edge (positions)."""
    e = np.empty(0, np.int64)
    empty = Edges(e, e.copy(), {"inferred": np.empty(0, bool), "evidence": np.empty(0, object)})
    is_wait = names_where(names[rt], STREAM_WAIT_CALL_RE.match)
    waits = rt[is_wait]
    if not len(waits) or not len(act):
        return empty
    cand, _ = late_activities(act, dkey, ts, end, call_end, launcher, skip)
    if not len(cand):
        return empty
    src_l, dst_l = [], []
    for ln in np.unique(lane[launcher[cand]]).tolist():
        w = waits[lane[waits] == ln]
        if not len(w):
            continue
        w = w[np.argsort(ts[w], kind="stable")]
        lc = launch_calls[lane[launch_calls] == ln]
        lc_ts = np.sort(ts[lc])
        xs = cand[lane[launcher[cand]] == ln]
        c0 = call_start[xs]
        k = np.searchsorted(ts[w], c0, side="right") - 1
        j = np.searchsorted(lc_ts, c0, side="left") - 1  # the previous launch call on the thread
        ok = k >= 0
        prev_launch = np.where(j >= 0, lc_ts[np.maximum(j, 0)], np.iinfo(np.int64).min)
        ok &= prev_launch < ts[w[np.maximum(k, 0)]]
        src_l.append(w[k[ok]])
        dst_l.append(xs[ok])
    if not src_l:
        return empty
    src, dst = np.concatenate(src_l), np.concatenate(dst_l)
    n = len(src)
    return Edges(src.astype(np.int64), dst.astype(np.int64),
                 {"inferred": np.ones(n, bool), "evidence": np.full(n, "stream_wait_call", dtype=object)})


def awaited_work(calls: Edges, act: np.ndarray, dkey: np.ndarray, device: np.ndarray, ts: np.ndarray,
                 end: np.ndarray, call_start: np.ndarray, launcher: np.ndarray, lane: np.ndarray) -> Edges:
    """What a stream wait known from the host side waited for: for each edge ``wait call ->
    held activity`` of :func:`infer_wait_calls` (``calls``), the last activity that the
    calling thread launched on another stream of the held activity's device before the wait
    call started (the last launch call before it; of its activities, the one ending last),
    when that activity ended at or before the held one started. A ``cudaStreamWaitEvent``
    waits for an event recorded on another stream after the work it follows; the work the
    thread launched there just before is what the event marks. Edges ``awaited activity ->
    held activity`` (``event_wait``, ``inferred=True``, ``evidence="stream_wait_work"``),
    so the held activity's start depends on that work, not only on the host call.
    Positions as in :func:`infer_wait_calls` (``call_start`` per activity: its launch
    call's start)."""
    e = np.empty(0, np.int64)
    empty = Edges(e, e.copy(), {"inferred": np.empty(0, bool), "evidence": np.empty(0, object)})
    if not len(calls) or not len(act):
        return empty
    la = act[launcher[act] >= 0]
    if not len(la):
        return empty
    src_l, dst_l = [], []
    w_all, x_all = calls.src, calls.dst
    grp = lane[launcher[la]].astype(np.int64) * (1 << 20) + device[la].astype(np.int64)
    gx = lane[w_all].astype(np.int64) * (1 << 20) + device[x_all].astype(np.int64)
    for g in np.unique(gx).tolist():
        on = la[grp == g]
        if not len(on):
            continue
        # launched activities of this thread on this device, by launch (then by end)
        on = on[np.lexsort((end[on], call_start[on]))]
        keys = dkey[on]
        # per position, the last position at or before it on another stream: before its run
        run_start = np.zeros(len(on), dtype=np.int64)
        brk = np.flatnonzero(keys[1:] != keys[:-1]) + 1
        run_start[brk] = brk
        run_start = np.maximum.accumulate(run_start)
        sel = gx == g
        w, x = w_all[sel], x_all[sel]
        k = np.searchsorted(call_start[on], ts[w], side="left") - 1
        ok = k >= 0
        kc = np.maximum(k, 0)
        y_at = np.where(keys[kc] != dkey[x], kc, run_start[kc] - 1)
        ok &= y_at >= 0
        y = on[np.maximum(y_at, 0)]
        ok &= end[y] <= ts[x]
        src_l.append(y[ok])
        dst_l.append(x[ok])
    if not src_l:
        return empty
    src, dst = np.concatenate(src_l).astype(np.int64), np.concatenate(dst_l).astype(np.int64)
    n = len(src)
    return Edges(src, dst, {"inferred": np.ones(n, bool), "evidence": np.full(n, "stream_wait_work", dtype=object)})
