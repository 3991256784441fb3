"""Critical path of each step on the event-boundary DAG (docs/critical-path.md).

The package holds the one critical-path engine of opgraph:

* :mod:`~opgraph.analysis.critical_path.boundary_edges`: the dependency model (boundary edges,
  roles, categories) built from the graph's edges, recorded and inferred;
* :mod:`~opgraph.analysis.critical_path.engine`: the last-arrival pick, the walk back and
  the categorised segments, shared by the single-rank path, the cross-rank path
  (:mod:`opgraph.analysis.crossrank`), the replay (:mod:`opgraph.predict`) and the Graphviz
  picture of the path (:mod:`opgraph.export.dot.critical`);
* :mod:`~opgraph.analysis.critical_path.result`: the result dataclasses.

:func:`critical_path` walks every window back from its sink: the last end among the
window's own thread's events (the step annotation's thread; for the whole trace, the
thread that launches the GPU work) and the device activities launched in the window (from
any thread). Other threads' work enters the path through dependencies (hand-offs,
forward -> backward links, syncs), never as a sink: a helper thread whose Python frames
are closed at profiler stop does not decide where a step ends.
"""

from __future__ import annotations


import numpy as np

from opgraph.model.arrays import GraphArrays
from opgraph.model.trace_graph import TraceGraph
from opgraph.analysis.critical_path.engine import (
    BoundaryDAG, RawSegment,
    SEGMENT_FIELDS, boundary_dag, segment_columns, walk_back,
)
from opgraph.analysis.critical_path.boundary_edges import (
    CATEGORIES, ROLES,
)
from opgraph.analysis.critical_path.result import PathSegment, SegmentTable, WindowPath
from opgraph.analysis.critical_path.run_result import CriticalPathResult
from opgraph.analysis.critical_path.stop_tail import mark_stop_tail, silent_from
from opgraph.graph.windows import Window, select_windows

__all__ = ['segment_table', 'critical_path', 'window_sinks', 'path_segments', 'lane_label']


def lane_label(a: GraphArrays, p: int) -> str:
    """Where node position ``p`` runs: ``"thread <pid>/<tid>"`` or ``"stream <device>/<stream>"``
    (with ``"rank r "`` first in a multi-rank job graph)."""
    if p < 0:
        return ""
    rank = f"rank {int(a.rank[p])} " if a.multi_rank else ""
    if a.kind[p] in ("kernel", "memcpy", "memset", "gpu_annotation"):
        return f"{rank}stream {int(a.device[p])}/{int(a.stream[p])}"
    return f"{rank}thread {a.pid[p]}/{a.tid[p]}"


def segment_table(d: BoundaryDAG, raw: "list[RawSegment] | dict[str, np.ndarray]") -> SegmentTable:
    """The :class:`SegmentTable` (eids, names, lanes as columns) of engine segments: a list
    of :class:`RawSegment` or their columns (:func:`segment_columns`)."""
    a = d.arr
    if not isinstance(raw, dict):
        raw = {f: np.array([getattr(r, f) for r in raw], dtype=bool if f == "inferred" else np.int64)
               for f in SEGMENT_FIELDS}
    owner, src, dst, role, lane = raw["owner"], raw["src"], raw["dst"], raw["role"], raw["lane"]
    n = len(owner)
    if not n:
        e = np.empty(0, np.int64)
        o = np.empty(0, object)
        return SegmentTable({"eid": e, "kind": o, "name": o, "start_ns": e, "end_ns": e, "bound_by": o, "lane": o,
                             "from_eid": e, "to_eid": e, "inferred": np.empty(0, bool), "edge": o})
    # one label per lane, from the first segment on it (its owner, else its target, else its source)
    lane_u, first, lane_inv = np.unique(lane, return_index=True, return_inverse=True)
    rep = np.where(owner[first] >= 0, owner[first], np.where(dst[first] >= 0, dst[first], src[first]))
    lane_labels = np.array([lane_label(a, int(p)) for p in rep.tolist()], dtype=object)
    # the dependency's role: its name, "collective" for a caller's edge from a node, "none"
    role_names = np.array(ROLES + ("collective", "", "none"), dtype=object)
    edge_code = np.where(role >= 0, role, np.where(src < 0, len(ROLES) + 2,
                                                   np.where(role == -1, len(ROLES), len(ROLES) + 1)))
    pos = np.stack([owner, src, dst], axis=1)
    ok = pos >= 0
    safe = np.where(ok, pos, 0)
    eids = np.where(ok, a.eid[safe], -1)
    names = a.name[safe]
    own_ok = ok[:, 0]
    kinds = np.where(own_ok, a.kind[safe[:, 0]], "between").astype(object)
    kinds = np.array([str(k) for k in kinds.tolist()], dtype=object)
    name_o, name_s, name_d = names[:, 0].tolist(), names[:, 1].tolist(), names[:, 2].tolist()
    text = [str(no) if ko else (f"(nothing recorded) -> {nd if kd else 'window start'}" if not ks
                                else f"{ns} -> {nd if kd else 'window start'}")
            for no, ns, nd, ko, ks, kd in zip(name_o, name_s, name_d, own_ok.tolist(), ok[:, 1].tolist(),
                                              ok[:, 2].tolist())]
    return SegmentTable({
        "eid": eids[:, 0], "kind": kinds, "name": np.array(text, dtype=object),
        "start_ns": np.asarray(raw["t0"], dtype=np.int64), "end_ns": np.asarray(raw["t1"], dtype=np.int64),
        "bound_by": np.array(CATEGORIES, dtype=object)[raw["cat"]], "lane": lane_labels[lane_inv.ravel()],
        "from_eid": eids[:, 1], "to_eid": eids[:, 2], "inferred": np.asarray(raw["inferred"]).astype(bool),
        "edge": role_names[edge_code]})


def path_segments(d: BoundaryDAG, raw: "list[RawSegment] | dict[str, np.ndarray]") -> list[PathSegment]:
    """:class:`PathSegment` objects (eids, names, lanes) of engine segments: a list of
    :class:`RawSegment` or their columns (:func:`segment_columns`)."""
    return segment_table(d, raw).objects()


def window_sinks(d: BoundaryDAG, wins: list[Window]) -> list[tuple[int, int]]:
    """Per window, ``(sink position, window end ns)``: the last end among the window's own
    thread's host events starting in it and the device activities launched in it (the
    whole window's members when it has no thread); ``(-1, start)`` for an empty window."""
    a = d.arr
    members = np.flatnonzero(a.is_host | a.is_activity)
    key = np.where(a.is_activity[members], d.launch_time[members], a.ts[members])
    o = np.argsort(key, kind="stable")
    mem_sorted, key_sorted = members[o], key[o]
    is_act = a.is_activity
    out: list[tuple[int, int]] = []
    for w in wins:
        lo = int(np.searchsorted(key_sorted, w.start_ns, side="left"))
        hi = int(np.searchsorted(key_sorted, w.end_ns, side="left"))
        sel = mem_sorted[lo:hi]
        if w.lane is not None and len(sel):
            own = sel[is_act[sel] | (a.lane[sel] == w.lane)]
            sel = own if len(own) else sel
        if not len(sel):
            out.append((-1, w.start_ns))
            continue
        j = int(sel[int(np.argmax(a.end[sel]))])
        out.append((j, int(a.end[j])))
    return out


def walked_eids(a: GraphArrays, steps: list) -> list[int]:
    """The event ids a walk (:func:`walk_back`) passes through, in time order: both ends
    of every step, consecutive repeats dropped."""
    seq: list[int] = []
    for _e, u, b, _t0, _t1 in steps:
        for p in ((u // 2) if u >= 0 else -1, b // 2):
            if p >= 0 and (not seq or seq[-1] != p):
                seq.append(p)
    return a.eid[seq].tolist() if seq else []


def critical_path(G: TraceGraph, window: str | None = None, dag: BoundaryDAG | None = None, *,
                  with_nodes: bool = True) -> CriticalPathResult:
    """Critical path per window.

    Parameters
    ----------
    G : TraceGraph
        A graph built by :func:`opgraph.graph.build_graph`.
    window : str, optional
        ``None``: each step (:func:`opgraph.graph.windows.select_windows`: ``ProfilerStep#N``
        host ranges, else GPU annotations, else NVTX ``Iteration N``), or the whole trace when
        there are none; ``"all"``: the whole trace; otherwise a regex matched against range
        names, one window per match (no match raises
        :class:`opgraph.graph.windows.WindowNotFound`).
    dag : BoundaryDAG, optional
        A precomputed boundary DAG of ``G`` (to reuse across calls, or a replay's).
    with_nodes : bool
        Record each window's walked event ids (:attr:`WindowPath.nodes`, for pictures of
        the path); False leaves them empty (they are not part of ``to_dict``).

    Returns
    -------
    CriticalPathResult
        One :class:`WindowPath` per window; times in ns (``to_dict`` gives µs). Each
        path tiles its window exactly: its length equals the window span.
    """
    d = dag if dag is not None else boundary_dag(G)
    a = d.arr
    sel = select_windows(a, window)
    silent = silent_from(a)
    results: list[WindowPath] = []
    for w, (sink, wend) in zip(sel.items, window_sinks(d, sel.items)):
        wl = lane_label(a, a.lane_first.get(w.lane, -1)) if w.lane is not None else ""
        if sink < 0:
            results.append(WindowPath(w.name, w.eid, w.start_ns, w.start_ns, [], wl))
            continue
        steps = walk_back(d, 2 * sink + 1, w.start_ns)
        table = segment_table(d, segment_columns(d, steps))
        table = SegmentTable(mark_stop_tail(table.cols, silent.get(int(a.rank[sink]))))
        results.append(WindowPath(w.name, w.eid, w.start_ns, wend, table, wl,
                                  walked_eids(a, steps) if with_nodes else []))
    return CriticalPathResult(results, sel.mode)

