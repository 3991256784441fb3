"""The args the Perfetto overlay merges into original events (``opgraph.*`` keys).

Per event id, dicts such as ``opgraph.critical`` / ``opgraph.bound_by`` /
``opgraph.critical_us`` (critical path), ``opgraph.waited_before*`` (waits leading to an
event), ``opgraph.idle_blame_us`` / ``opgraph.idle_before_us`` / ``opgraph.idle_cause_us``
(GPU idle), ``opgraph.launch_delay_us`` / ``opgraph.queue_wait_us`` (launches),
``opgraph.captured_op`` (graph replays) and ``opgraph.bytes`` / ``opgraph.gbps`` (copies),
and :func:`merge_args` to combine them. The analyses work in int64 **ns**; every value
written here is µs (float), as the trace's own times are.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pandas as pd

from opgraph.analysis.critical_path import CATEGORIES
from opgraph.analysis.idle import IdleResult
from opgraph.graph.arrays import GraphArrays
from opgraph.graph.model import AnyGraph

#: Prefix of every arg opgraph adds to an original event.
ARG_PREFIX = "opgraph."


def _us(ns: np.ndarray | int) -> Any:
    return np.asarray(ns, dtype=np.int64) / 1000.0


def critical_args(cp: Any, categories: Sequence[str] = CATEGORIES) -> dict[int, dict[str, Any]]:
    """``opgraph.critical`` (True), ``opgraph.bound_by`` (the category of the event's
    largest critical segment; between equal segments, the category with more critical time
    for the event) and ``opgraph.critical_us`` (its total time on the critical paths, µs) per
    event owning a critical-path segment.

    ``cp``: anything with ``windows`` holding ``path`` segments (a
    :class:`~opgraph.analysis.critical_path.CriticalPathResult`, or the cross-rank
    :class:`~opgraph.analysis.crossrank.CrossRankResult` with ``categories`` =
    :data:`~opgraph.analysis.crossrank.CROSS_CATEGORIES`)."""
    allsegs = [s for w in cp.windows for s in w.path]
    segs = [s for s in allsegs if s.eid is not None]
    waits = wait_args(allsegs)
    if not segs:
        return waits
    n = len(segs)
    df = pd.DataFrame({
        "eid": np.fromiter((s.eid for s in segs), dtype=np.int64, count=n),
        "cat": pd.Categorical([s.bound_by for s in segs], categories=list(categories)),
        "dur": np.fromiter((s.end_ns - s.start_ns for s in segs), dtype=np.int64, count=n),
    })
    longest = df.groupby(["eid", "cat"], sort=False, observed=True)["dur"].agg(["sum", "max"]).reset_index()
    longest = longest.sort_values(["eid", "max", "sum"], ascending=[True, False, False], kind="stable")
    best = longest.drop_duplicates("eid")
    total = df.groupby("eid", sort=False)["dur"].sum()
    tot = total.reindex(best["eid"]).to_numpy()
    k_crit, k_bound, k_us = ARG_PREFIX + "critical", ARG_PREFIX + "bound_by", ARG_PREFIX + "critical_us"
    out = {e: {k_crit: True, k_bound: c, k_us: t}
           for e, c, t in zip(best["eid"].tolist(), best["cat"].astype(str).tolist(), _us(tot).tolist())}
    for e, a in waits.items():
        out.setdefault(e, {}).update(a)
    return out


def wait_args(segs: Sequence[Any]) -> dict[int, dict[str, Any]]:
    """For critical-path stretches that lie between events (waits, launch latencies,
    untraced time): on the event the stretch leads to, ``opgraph.waited_before_us`` (their
    total, µs), ``opgraph.waited_before`` (the category of the longest) and
    ``opgraph.waited_on`` (the lane it happened on, and the event it came from)."""
    acc: dict[int, list[Any]] = {}
    for s in segs:
        if s.eid is None and s.to_eid is not None:
            acc.setdefault(int(s.to_eid), []).append(s)
    out: dict[int, dict[str, Any]] = {}
    for e, ss in acc.items():
        lw = max(ss, key=lambda x: x.dur_ns)
        on = lw.lane + (f" after event {lw.from_eid}" if lw.from_eid is not None else " (nothing recorded before)")
        out[e] = {ARG_PREFIX + "waited_before_us": sum(x.dur_ns for x in ss) / 1000.0,
                  ARG_PREFIX + "waited_before": lw.bound_by, ARG_PREFIX + "waited_on": on}
    return out


def idle_args(idle: IdleResult) -> dict[int, dict[str, Any]]:
    """``opgraph.idle_blame_us`` per host event (its exclusive, leaf-level share of the
    CPU-induced GPU idle), and on each device activity that ends a device-idle gap
    ``opgraph.idle_before_us`` (the gap) and ``opgraph.idle_cause_us`` (its split by
    cause, µs; docs/idle.md)."""
    from opgraph.analysis.idle import CAUSES

    key = ARG_PREFIX + "idle_blame_us"
    out: dict[int, dict[str, Any]] = {int(e): {key: ns / 1000.0} for e, ns in idle.per_eid_blame_ns.items() if ns > 0}
    g = idle.gaps
    if len(g):
        k_gap, k_cause = ARG_PREFIX + "idle_before_us", ARG_PREFIX + "idle_cause_us"
        causes = {c: (g[c].to_numpy(np.int64) / 1000.0).tolist() for c in CAUSES}
        for j, (e, g0, g1) in enumerate(zip(g["ender"].tolist(), g["start_ns"].tolist(), g["end_ns"].tolist())):
            d = out.setdefault(int(e), {})
            d[k_gap] = d.get(k_gap, 0.0) + (g1 - g0) / 1000.0
            cu = d.setdefault(k_cause, {})
            for c in CAUSES:
                if causes[c][j]:
                    cu[c] = cu.get(c, 0.0) + causes[c][j]
    return out


def launch_args(arr: GraphArrays) -> dict[int, dict[str, Any]]:
    """Per device activity with a launching call (``launch`` edge):
    ``opgraph.launch_delay_us`` = activity start − launch call start, and, when positive,
    ``opgraph.queue_wait_us`` = the part of that delay spent queued behind earlier work on
    the same stream: ``min(previous activity's end, start) − launch call start``."""
    ls, ld = arr.out_edges("launch")
    if not len(ld):
        return {}
    keep = ~pd.Series(ld).duplicated().to_numpy()
    ls, ld = ls[keep], ld[keep]
    launch_ts = arr.ts[ls]
    start = arr.ts[ld]
    delay = start - launch_ts
    prev_end = np.full(arr.n, np.iinfo(np.int64).min, dtype=np.int64)
    ss, sd = arr.out_edges("stream_seq")
    prev_end[sd] = arr.end[ss]
    pe = prev_end[ld]
    qw = np.where(pe > launch_ts, np.minimum(pe, start) - launch_ts, 0)
    qw = np.clip(qw, 0, np.maximum(delay, 0))
    k_d, k_q = ARG_PREFIX + "launch_delay_us", ARG_PREFIX + "queue_wait_us"
    eids = arr.eid[ld].tolist()
    out = {e: {k_d: d} for e, d in zip(eids, _us(delay).tolist())}
    has_q = np.flatnonzero(qw > 0)
    for e, q in zip(arr.eid[ld][has_q].tolist(), _us(qw[has_q]).tolist()):
        out[e][k_q] = q
    return out


def replay_args(G: AnyGraph) -> dict[int, dict[str, Any]]:
    """Per CUDA/HIP-graph replay activity mapped to its capture (``G.graph['graph_replay']``,
    docs/graph-replay.md): ``opgraph.captured_op`` (the op chain at capture, outermost
    first, joined by `` > ``), ``opgraph.capture_annotation`` (the innermost annotation,
    when any) and ``opgraph.capture_evidence``."""
    from opgraph.graph.replay import replay_map

    m, chains, anns = replay_map(G.graph)
    k_op, k_ann, k_ev = ARG_PREFIX + "captured_op", ARG_PREFIX + "capture_annotation", ARG_PREFIX + "capture_evidence"
    joined = [" > ".join(c) for c in chains]  # once per distinct chain
    out: dict[int, dict[str, Any]] = {}
    for e, c, a, evd in zip(m["eid"].tolist(), m["chain"].tolist(), m["annotation"].tolist(),
                            m["evidence"].tolist()):
        d = {k_op: joined[c], k_ev: evd}
        if a >= 0:
            d[k_ann] = anns[a]
        out[int(e)] = d
    return out


def copy_args(G: AnyGraph) -> dict[int, dict[str, Any]]:
    """Per memcpy / memset with a known size: ``opgraph.bytes`` and ``opgraph.gbps`` (over
    the exact duration; docs/memory-bw.md)."""
    from opgraph.analysis.memory_bw import memory_bandwidth

    c = memory_bandwidth(G).copies
    if not len(c):
        return {}
    known = c[c["bytes"].notna() & c["gbps"].notna()]
    return {int(e): {ARG_PREFIX + "bytes": int(bts), ARG_PREFIX + "gbps": float(g)}
            for e, bts, g in zip(known["eid"].tolist(), known["bytes"].tolist(), known["gbps"].tolist())}


def merge_args(*parts: dict[int, dict[str, Any]]) -> dict[int, dict[str, Any]]:
    """Union of per-event arg dicts (later parts win on equal keys)."""
    out: dict[int, dict[str, Any]] = {}
    for p in parts:
        for e, d in p.items():
            cur = out.get(e)
            if cur is None:
                out[e] = dict(d)
            else:
                cur.update(d)
    return out
