"""Cross-thread dependencies the trace implies but does not record as links.

Two kinds, both added by the graph builder with ``inferred=True`` and their evidence
(docs/model.md, "Inferred edges"; docs/critical-path.md, "Cross-thread dependencies"):

* **Forward -> backward by sequence number** (``flow`` edges, ``cat="fwdbwd"``,
  ``evidence="sequence_number"``). Kineto writes ``fwdbwd`` flows since 2021; older traces
  carry only the args ``Sequence number`` and ``Fwd thread id`` on each op. A backward op
  (``Fwd thread id`` > 0) depends on the forward op with its sequence number on another
  thread: the one that ended last before the backward op started. Used only when the
  trace has no ``fwdbwd`` flow at all.

* **Hand-offs** (``handoff`` edges). A host thread A that records nothing for a while (a
  stretch between two consecutive boundaries of its events: a gap between events, a
  parent's time before/after/between its children, or a leaf call's own span) while
  another thread B of the same process runs a *burst* (B's top-level events starting
  within the wake-up tolerance after A went quiet, B having been idle before, and ending
  within the tolerance before A resumed) handed work to B and waited for it: the autograd
  engine's thread during ``backward()``, a helper thread joined by the caller. One edge
  per hand-off, from B's last event to the event on A whose boundary resumes, with
  attributes ``first`` (B's first event), ``wait_from`` / ``wait_from_at`` (the boundary
  of A where the wait began: ``"start"`` or ``"end"`` of that event), ``resume_at`` (the
  boundary of the target that resumes), ``evidence="burst"``. The dependency it stands
  for is two boundary edges: ``wait_from -> S(first)`` and ``E(last) -> resume``. It is
  stored as one event edge (last -> resume) so that the event graph stays acyclic when A's
  wait is one recorded call that contains B's whole burst (``run_backward``).

  A blocking call by name (:data:`BLOCKING_WAIT_RE`: a Python ``threading`` wait, a lock
  acquire, ``run_backward``, ``join``, ...) whose span has no burst gets the resume half
  alone when an event of another thread of its process ended within the tolerance before
  the call returned (``evidence="blocking_wait"``, ``first=-1``).

Tolerances (:data:`HANDOFF_MIN_NS`, :data:`HANDOFF_TOL_NS`) are justified in
docs/critical-path.md from the wake-up latencies measured on the real traces.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from opgraph.graph.linking import Edges
from opgraph.names import names_where

#: A thread's quiet stretch must last at least this long to be checked for a hand-off (ns).
HANDOFF_MIN_NS = 200_000
#: Wake-up tolerance: the worker starts at most this long after the waiter went quiet, and the
#: waiter resumes at most this long after the worker's last event ends (ns); and at most
#: :data:`HANDOFF_TOL_FRACTION` of the quiet stretch.
HANDOFF_TOL_NS = 5_000_000
HANDOFF_TOL_FRACTION = 0.1
#: A late resume: the worker woke right after the waiter went quiet but ended more than the
#: tolerance before the waiter resumed; its burst must fill at least this share of the
#: waiter's stretch (docs/critical-path.md, "Late resumes").
LATE_BURST_SHARE = 0.5
#: A thread whose only events are blocking waits starting or ending within this (ns) of the
#: profiler's start or stop was waiting across it: it hands nothing off.
PROFILER_EDGE_NS = 1_000_000
#: Host calls that block their thread until something else happens (names, ``re.search``).
BLOCKING_WAIT_RE = re.compile(
    r"threading\.py\(\d+\): (wait|join|_wait_for_tstate_lock)|lock\.acquire|_thread\.lock|"
    r"time\.sleep|<built-in function sleep>|run_backward|Future\.wait|futures/_base\.py\(\d+\): (result|wait)|"
    r"queue\.py\(\d+\): get|Condition\.wait|Event\.wait|selectors\.py|select\.(select|poll|epoll)"
)


@dataclass
class ThreadDeps:
    """Inferred cross-thread edges (eids) with their attributes, and counts for health."""

    handoffs: Edges
    fwdbwd: Edges
    n_burst: int
    n_blocking: int


def _empty_handoffs() -> Edges:
    e = np.empty(0, np.int64)
    return Edges(e, e.copy(), {"inferred": np.empty(0, bool), "first": e.copy(), "wait_from": e.copy(),
                               "wait_from_at": np.empty(0, object), "resume_at": np.empty(0, object),
                               "evidence": np.empty(0, object)})


def profiler_edge_waiters(lane: np.ndarray, ts: np.ndarray, end: np.ndarray, is_block: np.ndarray) -> np.ndarray:
    """Lane codes of threads whose only events are blocking waits and that were waiting
    across the profiler's start or stop (an event within :data:`PROFILER_EDGE_NS` of the
    first or last host boundary): they take no part in hand-offs."""
    if not len(lane):
        return np.empty(0, np.int64)
    t0, t1 = int(ts.min()), int(end.max())
    df = pd.DataFrame({"lane": lane, "block": is_block, "ts": ts, "end": end}).groupby("lane")
    g = df.agg(all_block=("block", "all"), first=("ts", "min"), last=("end", "max"))
    edge = (g["first"] <= t0 + PROFILER_EDGE_NS) | (g["last"] >= t1 - PROFILER_EDGE_NS)
    return g.index[(g["all_block"] & edge).to_numpy()].to_numpy(dtype=np.int64)


def infer_handoffs(eid: np.ndarray, lane: np.ndarray, pid: np.ndarray, ts: np.ndarray, end: np.ndarray,
                   parent: np.ndarray, names: np.ndarray, waitlike: np.ndarray | None = None
                   ) -> tuple[Edges, int, int]:
    """Hand-off edges among host events (module docstring).

    Parameters are per host event: ``eid``, ``lane`` (int code per thread), ``pid`` (int
    code per process), ``ts``/``end`` (ns), ``parent`` (position of the nest parent in
    these arrays, -1 for a top-level event), ``names``, ``waitlike`` (an annotation: its
    own time may be a wait, so a late resume in it is taken; default: none). Returns
    (edges, number of burst hand-offs and late resumes, number of blocking-wait resumes)."""
    m = len(eid)
    if m == 0 or len(np.unique(lane)) < 2:
        return _empty_handoffs(), 0, 0
    is_block = names_where(names, BLOCKING_WAIT_RE.search)
    quiet_only = profiler_edge_waiters(lane, ts, end, is_block)
    if len(quiet_only):   # their events can be no one's burst and no one's waker
        keep = ~np.isin(lane, quiet_only)
        sub, n_b, n_w = infer_handoffs(eid[keep], lane[keep], pid[keep], ts[keep], end[keep],
                                       _reindex_parent(parent, keep), names[keep],
                                       None if waitlike is None else waitlike[keep])
        return sub, n_b, n_w
    wl = (np.zeros(m, bool) if waitlike is None else waitlike.astype(bool)) | is_block
    # --- quiet stretches: consecutive boundaries of a thread at least HANDOFF_MIN_NS apart ---
    bt = np.concatenate([ts, end])
    bpos = np.concatenate([np.arange(m), np.arange(m)])
    bend = np.concatenate([np.zeros(m, bool), np.ones(m, bool)])
    blane = np.concatenate([lane, lane])
    o = np.lexsort((bend, bt, blane))
    bt, bpos, bend, blane = bt[o], bpos[o], bend[o], blane[o]
    k = np.flatnonzero((blane[1:] == blane[:-1]) & (bt[1:] - bt[:-1] >= HANDOFF_MIN_NS))
    if not len(k):
        return _empty_handoffs(), 0, 0
    q0, q1 = bt[k], bt[k + 1]
    qlane = blane[k]
    q_from, q_from_end = bpos[k], bend[k]
    q_to, q_to_end = bpos[k + 1], bend[k + 1]
    tol = np.minimum(HANDOFF_TOL_NS, ((q1 - q0) * HANDOFF_TOL_FRACTION).astype(np.int64))
    # --- per thread: top-level events (roots) by start with the running max of their ends,
    # and every event by end ---
    roots = np.flatnonzero(parent < 0)
    roots = roots[np.lexsort((ts[roots], lane[roots]))]
    r_lane = lane[roots]
    lanes_u, first_idx = np.unique(r_lane, return_index=True)
    last_idx = np.append(first_idx[1:], len(roots))
    runmax = np.empty(len(roots), np.int64)
    lane_pid: dict[int, int] = {}
    for ln, lo, hi in zip(lanes_u.tolist(), first_idx.tolist(), last_idx.tolist()):
        runmax[lo:hi] = np.maximum.accumulate(end[roots[lo:hi]])
        lane_pid[ln] = int(pid[roots[lo]])
    lanes_of_pid: dict[int, list[int]] = {}
    for ln, p in lane_pid.items():
        lanes_of_pid.setdefault(p, []).append(ln)
    spans = dict(zip(lanes_u.tolist(), zip(first_idx.tolist(), last_idx.tolist())))
    by_end = np.lexsort((end, lane))
    e_lanes, e_first = np.unique(lane[by_end], return_index=True)
    e_spans = dict(zip(e_lanes.tolist(), zip(e_first.tolist(), np.append(e_first[1:], m).tolist())))
    nq = len(k)
    # the event whose own time the stretch is: the one that starts it, or the parent of the one it follows
    q_owner = np.where(q_from_end, parent[q_from], q_from)
    q_wait = np.where(q_owner >= 0, wl[np.maximum(q_owner, 0)], False)
    late_last = np.full(nq, -1, np.int64)
    late_first = np.full(nq, -1, np.int64)
    best_last = np.full(nq, -1, np.int64)
    best_first = np.full(nq, -1, np.int64)
    best_end = np.full(nq, np.iinfo(np.int64).min, np.int64)
    q_pid = np.array([lane_pid.get(int(x), -1) for x in qlane.tolist()], dtype=np.int64)
    for la in np.unique(qlane).tolist():
        qi = np.flatnonzero(qlane == la)
        for lb in lanes_of_pid.get(lane_pid.get(la, -2), []):
            if lb == la:
                continue
            lo, hi = spans[lb]
            rs = ts[roots[lo:hi]]
            rm = runmax[lo:hi]
            i0, i1, tl = q0[qi], q1[qi], tol[qi]
            a = np.searchsorted(rs, i0, side="left")          # B's first root starting at/after i0
            ok = a < len(rs)
            a_c = np.minimum(a, len(rs) - 1)
            ok &= (rs[a_c] <= i0 + tl) & (rs[a_c] < i1)        # B woke up right after A went quiet
            prev_end = np.where(a > 0, rm[np.maximum(a - 1, 0)], np.iinfo(np.int64).min)
            ok &= prev_end <= i0 - HANDOFF_MIN_NS              # ... having been idle before
            # A resumed right after an event of B ended (the latest end of B at or before i1)
            elo, ehi = e_spans[lb]
            ends = end[by_end[elo:ehi]]
            r = elo + np.searchsorted(ends, i1, side="right") - 1
            r_c = np.maximum(r, elo)
            r_end = end[by_end[r_c]]
            ran = (r >= elo) & (r_end >= rs[a_c]) & (ts[by_end[r_c]] >= rs[a_c])
            # a late resume: the burst filled the stretch but ended long before the waiter resumed
            late = ok & ran & (r_end < i1 - tl) & (r_end - rs[a_c] >= LATE_BURST_SHARE * (i1 - i0)) & q_wait[qi]
            late &= late_last[qi] < 0
            late_last[qi[late]] = by_end[r_c[late]]
            late_first[qi[late]] = roots[lo + a_c[late]]
            ok &= ran & (r_end >= i1 - tl)
            better = ok & (r_end > best_end[qi])
            if not better.any():
                continue
            sel = qi[better]
            best_last[sel] = by_end[r_c[better]]
            best_first[sel] = roots[lo + a_c[better]]
            best_end[sel] = r_end[better]
    burst = best_last >= 0
    late_r = ~burst & (late_last >= 0)
    best_last[late_r] = late_last[late_r]
    best_first[late_r] = late_first[late_r]
    # --- blocking calls with no burst: the resume half alone ---
    cand = np.flatnonzero(~burst & (q_from == q_to) & ~q_from_end & q_to_end & is_block[q_to])
    n_block = 0
    if len(cand):
        # every host event end of each process, sorted, to find the latest end before a return
        e_o = np.lexsort((end, pid))
        e_pid, e_end, e_pos = pid[e_o], end[e_o], e_o
        for j in cand.tolist():
            p, i0, i1, tl = int(q_pid[j]), int(q0[j]), int(q1[j]), int(tol[j])
            lo = int(np.searchsorted(e_pid, p, side="left"))
            hi = int(np.searchsorted(e_pid, p, side="right"))
            r = lo + int(np.searchsorted(e_end[lo:hi], i1, side="right")) - 1
            while r >= lo and lane[e_pos[r]] == qlane[j]:
                r -= 1
            if r < lo or e_end[r] < i1 - tl or e_end[r] <= i0 or ts[e_pos[r]] < i0:
                continue
            best_last[j] = int(e_pos[r])
            best_end[j] = int(e_end[r])
            best_first[j] = -1      # a waker explains the resume better than a late burst
            late_r[j] = False
            n_block += 1
    take = np.flatnonzero(best_last >= 0)
    if not len(take):
        return _empty_handoffs(), 0, 0
    first = np.where(best_first[take] >= 0, eid[np.maximum(best_first[take], 0)], -1)
    attrs = {
        "inferred": np.ones(len(take), bool),
        "first": first.astype(np.int64),
        "wait_from": eid[q_from[take]].astype(np.int64),
        "wait_from_at": np.where(q_from_end[take], "end", "start").astype(object),
        "resume_at": np.where(q_to_end[take], "end", "start").astype(object),
        "evidence": np.where(late_r[take], "late_resume",
                             np.where(best_first[take] >= 0, "burst", "blocking_wait")).astype(object),
    }
    # the edge of a contained wait (B's last -> the call that waited) must not also be the
    # wait's start: only one event edge per hand-off, last -> resume
    e = Edges(eid[best_last[take]].astype(np.int64), eid[q_to[take]].astype(np.int64), attrs)
    return e, int(burst.sum() + late_r.sum()), n_block


def _reindex_parent(parent: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """``parent`` positions of the kept events, renumbered among them (-1 for a parent left out)."""
    new = np.full(len(keep) + 1, -1, np.int64)
    new[np.flatnonzero(keep)] = np.arange(int(keep.sum()))
    return new[np.where(parent >= 0, parent, len(keep))][keep]


def fwdbwd_by_sequence(eid: np.ndarray, lane: np.ndarray, ts: np.ndarray, end: np.ndarray,
                       seq_no: list, fwd_thread: list) -> Edges:
    """Forward -> backward edges from ``Sequence number`` / ``Fwd thread id`` args (module
    docstring). Inputs are per host op; ``seq_no`` and ``fwd_thread`` hold the two args of
    each (as decoded, -1 where absent: :meth:`~opgraph.model.event_args.DictArgs.key_values`).
    Returns ``flow`` edges with ``cat="fwdbwd"``, ``inferred=True``,
    ``evidence="sequence_number"``."""
    seq = np.full(len(eid), -1, np.int64)
    fwd_tid = np.full(len(eid), -1, np.int64)
    for i, (s, f) in enumerate(zip(seq_no, fwd_thread)):
        if isinstance(s, int) and not isinstance(s, bool) and s >= 0:   # (a negative one links nothing)
            seq[i] = s
            fwd_tid[i] = f if isinstance(f, int) and not isinstance(f, bool) else -1
    has = seq >= 0
    if not has.any():
        return Edges(np.empty(0, np.int64), np.empty(0, np.int64))
    df = pd.DataFrame({"pos": np.flatnonzero(has), "seq": seq[has], "fwd": fwd_tid[has]})
    bwd = df[df["fwd"] > 0]
    fwd = df[df["fwd"] == 0]
    if not len(bwd) or not len(fwd):
        return Edges(np.empty(0, np.int64), np.empty(0, np.int64))
    m = bwd.merge(fwd, on="seq", suffixes=("_b", "_f"))
    pb, pf = m["pos_b"].to_numpy(), m["pos_f"].to_numpy()
    ok = (lane[pb] != lane[pf]) & (end[pf] <= ts[pb])
    m = m[ok].assign(fend=end[pf[ok]])
    m = m.sort_values(["pos_b", "fend"], kind="stable").drop_duplicates("pos_b", keep="last")
    src = eid[m["pos_f"].to_numpy()].astype(np.int64)
    dst = eid[m["pos_b"].to_numpy()].astype(np.int64)
    n = len(src)
    return Edges(src, dst, {"cat": np.full(n, "fwdbwd", dtype=object), "inferred": np.ones(n, bool),
                            "evidence": np.full(n, "sequence_number", dtype=object)})
