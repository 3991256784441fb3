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

from opgraph.analysis.critical_path.boundary_edges import CATEGORIES
from opgraph.analysis.idle import IdleResult
from opgraph.model.arrays import GraphArrays
from opgraph.model.trace_graph import TraceGraph

#: Prefix of every arg opgraph adds to an original event.
ARG_PREFIX = "opgraph."


def _us(ns: np.ndarray | int) -> Any:
    return np.asarray(ns, dtype=np.int64) / 1000.0


def path_columns(cp: Any) -> dict[str, np.ndarray]:
    """Every window's path segments of ``cp`` as one set of columns, in path order:
    ``eid``/``from_eid``/``to_eid`` int64 (-1: none), ``start_ns``/``end_ns`` int64 ns,
    ``bound_by`` and ``lane`` object arrays. Read from the columns of a path held as a
    :class:`~opgraph.analysis.critical_path.result.SegmentTable` (no segment objects are
    made), else from the segments' attributes."""
    keys = ("eid", "from_eid", "to_eid", "start_ns", "end_ns", "bound_by", "lane")
    parts: dict[str, list[np.ndarray]] = {k: [] for k in keys}
    for w in cp.windows:
        path = w.path
        cols = getattr(path, "cols", None)
        if cols is not None:
            for k in keys:
                parts[k].append(cols[k])
            continue
        segs = list(path)
        n = len(segs)
        for k in ("eid", "from_eid", "to_eid"):
            parts[k].append(np.fromiter((-1 if getattr(x, k) is None else getattr(x, k) for x in segs),
                                        dtype=np.int64, count=n))
        for k in ("start_ns", "end_ns"):
            parts[k].append(np.fromiter((getattr(x, k) for x in segs), dtype=np.int64, count=n))
        for k in ("bound_by", "lane"):
            parts[k].append(np.array([getattr(x, k) for x in segs], dtype=object))
    return {k: (np.concatenate(v) if v else np.empty(0, dtype=object if k in ("bound_by", "lane") else np.int64))
            for k, v in parts.items()}


def critical_args(cp: Any, categories: Sequence[str] = CATEGORIES) -> dict[int, dict[str, Any]]:
    """``opgraph.critical`` (True), ``opgraph.bound_by`` (the category of the event's
    largest critical segment; between equal segments, the category with more critical time
    for the event) and ``opgraph.critical_us`` (its total time on the critical paths, µs) per
    event owning a critical-path segment, plus :func:`wait_args`.

    ``cp``: anything with ``windows`` holding ``path`` segments (a
    :class:`~opgraph.analysis.critical_path.CriticalPathResult`, or the cross-rank
    :class:`~opgraph.analysis.crossrank.CrossRankResult` with ``categories`` =
    :data:`~opgraph.analysis.crossrank.CROSS_CATEGORIES`)."""
    pc = path_columns(cp)
    waits = wait_args(pc)
    own = pc["eid"] >= 0
    if not own.any():
        return waits
    df = pd.DataFrame({
        "eid": pc["eid"][own],
        "cat": pd.Categorical(pc["bound_by"][own], categories=list(categories)),
        "dur": (pc["end_ns"] - pc["start_ns"])[own],
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


def wait_args(pc: dict[str, np.ndarray]) -> dict[int, dict[str, Any]]:
    """For critical-path stretches that lie between events (waits, launch latencies,
    untraced time): on the event the stretch leads to, ``opgraph.waited_before_us`` (their
    total, µs), ``opgraph.waited_before`` (the category of the longest, the first of equal
    ones) and ``opgraph.waited_on`` (the lane it happened on, and the event it came from).
    ``pc``: the path's columns (:func:`path_columns`); events in order of their first
    stretch."""
    m = (pc["eid"] < 0) & (pc["to_eid"] >= 0)
    if not m.any():
        return {}
    df = pd.DataFrame({"to": pc["to_eid"][m], "dur": (pc["end_ns"] - pc["start_ns"])[m],
                       "cat": pc["bound_by"][m], "lane": pc["lane"][m], "frm": pc["from_eid"][m]})
    total = df.groupby("to", sort=False)["dur"].sum()   # events in order of first stretch
    lw = df.sort_values(["to", "dur"], ascending=[True, False], kind="stable").drop_duplicates("to").set_index("to")
    lw = lw.reindex(total.index)
    k_us, k_cat, k_on = ARG_PREFIX + "waited_before_us", ARG_PREFIX + "waited_before", ARG_PREFIX + "waited_on"
    out: dict[int, dict[str, Any]] = {}
    for e, t, c, lane, f in zip(total.index.tolist(), total.to_numpy().tolist(), lw["cat"].tolist(),
                                lw["lane"].tolist(), lw["frm"].tolist()):
        on = lane + (f" after event {f}" if f >= 0 else " (nothing recorded before)")
        out[e] = {k_us: t / 1000.0, k_cat: c, k_on: on}
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


def replay_args(G: TraceGraph) -> dict[int, dict[str, Any]]:
    """Per CUDA/HIP-graph replay activity mapped to its capture (``G.graph['graph_replay']``,
    docs/graph-replay.md): ``opgraph.captured_op`` (the op chain at capture, outermost
    first, joined by `` > ``), ``opgraph.capture_annotation`` (the innermost annotation,
    when any) and ``opgraph.capture_evidence``."""
    from opgraph.graph.graph_replay import replay_map

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


def copy_args(G: TraceGraph) -> dict[int, dict[str, Any]]:
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
