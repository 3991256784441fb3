"""What a Graphviz picture draws (:mod:`opgraph.export.dot`): :func:`graph_view`.

The events of the windows (``--window``), each drawn as itself or as the op or module it
collapses into (``--collapse``, :mod:`opgraph.export.dot.collapse`), optionally only the
critical path and its one-hop neighbours (``--critical-only``), at most ``max_nodes`` of
them (``--max-nodes``: critical path first, then the longest events); the critical path
comes from the analysis (:mod:`opgraph.export.dot.critical`). Edges: the graph's
cross-lane edges as they are, the order edges (nest, program order, stream order)
recomputed among the drawn nodes, and the critical path's steps highlighted.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

import numpy as np

from opgraph.analysis.critical_path.engine import BoundaryDAG, boundary_dag
from opgraph.export.dot.collapse import representatives
from opgraph.export.dot.critical import view_path
from opgraph.export.dot.view import ACTIVITY_KINDS, HOST_KINDS, EmptySelection, GraphView, ViewEdge, ViewNode
from opgraph.model.arrays import GraphArrays
from opgraph.graph.windows import select_windows
from opgraph.model.trace_graph import TraceGraph

DEFAULT_MAX_NODES = 400
#: Edge kinds drawn from the graph as they are (through the collapse); the order kinds
#: (``nest``, ``host_seq``, ``stream_seq``) are recomputed among the drawn nodes.
_CROSS_KINDS = ("launch", "sync", "event_wait", "flow", "data")


def _window_members(a: GraphArrays, dag: BoundaryDAG, wins: list[tuple[str, int | None, int, int]]) -> np.ndarray:
    """Mask of the window members: host events starting in a window, device activities
    whose launch call starts in it (the critical-path rule)."""
    members = np.flatnonzero(a.is_host | a.is_activity)
    key = np.where(a.is_activity[members], dag.launch_time[members], a.ts[members])
    o = np.argsort(key, kind="stable")
    mem_sorted, key_sorted = members[o], key[o]
    mask = np.zeros(a.n, dtype=bool)
    for _, _, ws, we in wins:
        lo = int(np.searchsorted(key_sorted, ws, side="left"))
        hi = int(np.searchsorted(key_sorted, we, side="left"))
        mask[mem_sorted[lo:hi]] = True
    return mask


def _lane_names(G: TraceGraph) -> dict[tuple, str]:
    ev = G.graph.get("events")
    out: dict[tuple, str] = {}
    if ev is None or not len(ev):
        return out
    try:
        meta = ev[(ev["kind"] == "meta") & (ev["name"] == "thread_name")]
        for pid, tid, args in zip(meta["pid"], meta["tid"], meta["args"]):
            if isinstance(args, dict) and "name" in args:
                out[("cpu", pid, tid)] = str(args["name"])
    except (KeyError, TypeError):  # pragma: no cover - graphs without the events table
        pass
    return out


def _empty_why(any_member: bool, any_critical: bool, critical_drawable: bool, critical_only: bool,
               collapse: str | None, wins: list) -> str:
    """One line: the selection is empty, and why."""
    where = f"window {wins[0][0]}" if len(wins) == 1 else f"{len(wins)} windows"
    if critical_only and any_critical and not critical_drawable and collapse:
        why = (f"with --critical-only the critical path of {where} runs only through python frames outside any "
               f"op, which --collapse {collapse} does not draw; drop --collapse or --critical-only")
    elif not any_member and not any_critical:
        why = f"no event starts in {where}"
    elif collapse:
        why = (f"every event of {where} is a python frame outside any op, which --collapse {collapse} does "
               f"not draw; drop --collapse")
    else:
        why = f"no event of {where} can be drawn"
    return f"the selection is empty: nothing to draw ({why})"


def _max_nodes_cut(a: GraphArrays, cand: set[int], crit_nodes: set[int], critical_only: bool,
                   max_nodes: int | None) -> tuple[set[int], Counter, int]:
    """``--max-nodes``: the longest critical-path events (up to half the budget, all of it
    with --critical-only), then the longest others; ranges are longer than what they
    contain, so the structure (top-level ops, annotations) stays. Returns the drawn nodes,
    the cut ones per kind and how many cut ones are on the critical path."""
    if not (max_nodes and len(cand) > max_nodes):
        return set(cand), Counter(), 0
    key = lambda r: (-int(a.end[r] - a.ts[r]), int(a.ts[r]), r)  # noqa: E731
    crit_c = sorted(crit_nodes & cand, key=key)
    first = crit_c[: (max_nodes if critical_only else max_nodes // 2)]
    chosen = set(first)
    rest = sorted((r for r in cand if r not in chosen), key=key)
    drawn = chosen | set(rest[: max_nodes - len(first)])
    cut = Counter(str(a.kind[r]) for r in cand if r not in drawn)
    return drawn, cut, sum(1 for r in crit_c if r not in drawn)


def _view_nodes(a: GraphArrays, drawn: set[int], parent: np.ndarray, rep: np.ndarray, merged: Counter,
                crit_nodes: set[int], crit_r: dict[int, int]) -> dict[int, ViewNode]:
    """The drawn nodes (by eid), with the drawn parent and nesting depth of host nodes."""
    def lane_of(r: int) -> tuple:
        if a.kind[r] in ACTIVITY_KINDS or a.kind[r] == "gpu_annotation":
            return ("gpu", int(a.device[r]), int(a.stream[r]))
        return ("cpu", a.pid[r], a.tid[r])

    eids = a.eid
    vnodes: dict[int, ViewNode] = {}
    for r in drawn:
        e = int(eids[r])
        vnodes[e] = ViewNode(e, str(a.kind[r]), a.name[r] if isinstance(a.name[r], str) else "",
                             int(a.ts[r]), int(a.end[r] - a.ts[r]), lane_of(r), max(0, merged.get(r, 0)),
                             r in crit_nodes, int(crit_r.get(r, 0)))
    for r in drawn:
        if a.kind[r] not in HOST_KINDS:
            continue
        q = int(parent[r])
        while q >= 0:
            rq = int(rep[q])
            if rq >= 0 and rq != r and rq in drawn:
                vnodes[int(eids[r])].parent = int(eids[rq])
                break
            q = int(parent[q])
    for vn in vnodes.values():
        dpt, p = 0, vn.parent
        while p is not None and dpt <= len(vnodes):
            dpt += 1
            p = vnodes[p].parent
        vn.depth = dpt
    return vnodes


def _view_edges(G: TraceGraph, eids: np.ndarray, vnodes: dict[int, ViewNode], drawn: set[int],
                mapped: set[tuple[int, int, str]], chain_r: list[list[int]]) -> list[ViewEdge]:
    """Order edges among the drawn nodes, the cross-lane edges between them, and the
    critical path: the drawn edge of each step highlighted, or a ``critical`` edge added."""
    edges: list[ViewEdge] = []
    groups: dict[tuple, list[ViewNode]] = defaultdict(list)
    for vn in vnodes.values():
        if vn.kind in HOST_KINDS:
            if vn.parent is not None:
                edges.append(ViewEdge(vn.parent, vn.eid, "nest"))
            groups[("h", vn.lane, vn.parent)].append(vn)
        elif vn.kind in ACTIVITY_KINDS:
            groups[("d", vn.lane)].append(vn)
    for key, grp in groups.items():
        grp.sort(key=lambda x: (x.ts, -x.dur, x.eid))
        k = "host_seq" if key[0] == "h" else "stream_seq"
        for x, y in zip(grp, grp[1:]):
            edges.append(ViewEdge(x.eid, y.eid, k))
    # a drawn edge the graph does not hold (its ends are linked through cut nodes) is a gap
    for e, k in zip(edges, G.edge_kinds_between([e.u for e in edges], [e.v for e in edges])):
        e.gap = k != e.kind
    for u, v, k in sorted(mapped):
        if k in _CROSS_KINDS and u in drawn and v in drawn:
            edges.append(ViewEdge(int(eids[u]), int(eids[v]), k))
    pairs: list[tuple[int, int]] = []
    for cr in chain_r:  # consecutive drawn nodes of the path (it may pass through cut ones)
        # a range is entered at its start and left at its end; drawing only the first visit
        # keeps the highlighted path flowing down (last child -> next sibling) instead of
        # climbing back to the range's box between the two
        seen: set[int] = set()
        dr = []
        for r in cr:
            if r in drawn and r not in seen:
                seen.add(r)
                dr.append(r)
        for x, y in zip(dr, dr[1:]):
            pairs.append((int(eids[x]), int(eids[y])))
    by_pair: dict[frozenset, list[ViewEdge]] = defaultdict(list)
    for e in edges:
        by_pair[frozenset((e.u, e.v))].append(e)
    for x, y in pairs:
        hit = by_pair.get(frozenset((x, y)))
        if hit:
            for e in hit:
                e.critical = True
        else:
            e = ViewEdge(x, y, "critical", critical=True)
            edges.append(e)
            by_pair[frozenset((x, y))].append(e)
    return edges


def graph_view(G: TraceGraph, window: str | None = None, critical_only: bool = False,
               collapse: str | None = None, max_nodes: int | None = DEFAULT_MAX_NODES) -> GraphView:
    """Choose the nodes and edges to draw.

    Parameters
    ----------
    G : TraceGraph
        A graph built by opgraph.
    window : str, optional
        As ``critical-path --window`` (:func:`opgraph.graph.windows.select_windows`):
        ``None`` for every step (``ProfilerStep#N``, else GPU ``ProfilerStep`` annotations,
        else NVTX ``Iteration N``; the whole trace when there are none), ``"all"``, or a
        regex matched against range names (all matches are drawn). The members of a window are the host events that start in it
        and the device activities whose launch call starts in it.
    critical_only : bool
        Draw only the nodes of the critical path and their one-hop neighbours (any edge,
        except that a critical range's nested children are not neighbours: a step's
        children would be the whole step).
    collapse : {"op", "module"}, optional
        ``op``: every host event inside a top-level CPU op is drawn as that op (its kernels
        stay); ``module``: as its innermost module range (``nn.Module: …``, ``## … ##``,
        python ``…: forward`` frames, other module markers), else its top-level op. Python
        frames outside any op or module are not drawn when collapsing.
    max_nodes : int, optional
        At most this many nodes: the critical path first (in path order), then the
        longest events. ``None`` or 0: no limit.

    Raises
    ------
    opgraph.graph.windows.WindowNotFound
        When the window regex matches nothing (``WindowError``: not a valid regex).
    ValueError
        When the graph has no events to draw.
    """
    a = G.arrays
    if not a.n:
        raise ValueError("the graph has no events to draw")
    sel = select_windows(a, window)
    wins, mode = [(w.name, w.eid, w.start_ns, w.end_ns) for w in sel], sel.mode
    d = boundary_dag(G, a)
    member = _window_members(a, d, wins)
    parent = a.host_parent
    rep = representatives(a, parent, collapse)

    # the critical path of every window (the analysis), in positions
    path = view_path(G, d, a, window, sel.items)
    crit_pos = path.positions

    # the collapsed graph: representatives of members and critical nodes
    drawable = member.copy()
    if crit_pos:
        drawable[np.fromiter(crit_pos, dtype=np.int64)] = True
    pos = np.flatnonzero(drawable)
    reps_of = rep[pos]
    ok = reps_of >= 0
    merged = Counter(reps_of[ok].tolist())
    nodes_r = set(merged)
    for p in pos[ok & (reps_of == pos)].tolist():
        merged[p] -= 1  # an event does not count itself
    crit_r: dict[int, int] = defaultdict(int)
    for p, v in path.own.items():
        if rep[p] >= 0:
            crit_r[int(rep[p])] += v
    crit_nodes = {int(rep[p]) for p in crit_pos if rep[p] >= 0}
    chain_r: list[list[int]] = []
    for seq in path.chains:
        cr: list[int] = []
        for p in seq:
            r = int(rep[p])
            if r >= 0 and (not cr or cr[-1] != r):
                cr.append(r)
        chain_r.append(cr)

    # mapped edges of every kind (for neighbours) and cross-lane edges (drawn as they are)
    mapped: set[tuple[int, int, str]] = set()
    for k, (s, t) in a.edges.items():
        m = drawable[s] & drawable[t]
        rs, rt = rep[s[m]], rep[t[m]]
        ok = (rs >= 0) & (rt >= 0) & (rs != rt)
        for u, v in zip(rs[ok].tolist(), rt[ok].tolist()):
            mapped.add((u, v, k))

    if critical_only:
        keep = set(crit_nodes)
        for u, v, k in mapped:
            if u in crit_nodes and k != "nest":
                keep.add(v)
            if v in crit_nodes:
                keep.add(u)
        cand = keep
    else:
        cand = nodes_r
    drawn, cut, critical_cut = _max_nodes_cut(a, cand, crit_nodes, critical_only, max_nodes)
    if not drawn:
        raise EmptySelection(_empty_why(bool(member.any()), bool(crit_pos), bool(crit_nodes), critical_only,
                                        collapse, wins))

    lane_names = _lane_names(G)
    vnodes = _view_nodes(a, drawn, parent, rep, merged, crit_nodes, crit_r)
    edges = _view_edges(G, a.eid, vnodes, drawn, mapped, chain_r)
    src = (G.graph.get("source") or {}).get("file") if isinstance(G.graph.get("source"), dict) else None
    opts: dict[str, Any] = {"window": window, "critical_only": critical_only, "collapse": collapse,
                            "max_nodes": max_nodes}
    return GraphView(vnodes, edges, [(w[0], w[2], w[3]) for w in wins], mode, opts, len(cand), cut, critical_cut,
                     path.length_ns, lane_names, str(src or ""))
