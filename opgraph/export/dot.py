"""Graphviz pictures of a graph: ``opgraph export --dot/--svg/--png`` (docs/pictures.md).

``graph_view(G, ...)`` picks what to draw: the events of a window, optionally collapsed
into their top-level op or module, optionally only the critical path and its one-hop
neighbours, and at most ``max_nodes`` of them (critical path first, then the longest
events). ``to_pydot(view)`` lays it out as swim lanes:

* one cluster per CPU thread and one per GPU stream, stacked top to bottom; inside a CPU
  lane one row (``rank=same``) per nesting depth, so a lane reads like a flame chart whose
  time runs left to right; a GPU lane is one row;
* node shape and colour by kind, edge style by kind (launch dashed, sync red, event_wait
  bold, nest grey, ...), the critical path in thick orange, durations in the labels, and a
  legend in the graph's title.

``render(dot_text, fmt)`` runs the Graphviz ``dot`` program (SVG, PNG); the DOT text itself
needs no Graphviz install.
"""

from __future__ import annotations

import html
import re
import shutil
import subprocess
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import networkx as nx
import numpy as np

from opgraph.graph.arrays import GraphArrays
from opgraph.analysis.breakdown import DEFAULT_MODULE_MARKERS, module_mask, short_kernel_name
from opgraph.analysis.critical_path import BoundaryDAG, boundary_dag, segments, walk_back, window_sinks
from opgraph.graph.windows import select_windows

COLLAPSE_MODES = ("op", "module")
DEFAULT_MAX_NODES = 400
#: Colour of the critical path (nodes' borders and edges).
CRITICAL_COLOR = "#ff7f0e"
FONT = "Helvetica,Arial,sans-serif"

#: Node look per kind: (shape, extra style, fill colour, legend text).
NODE_STYLE: dict[str, tuple[str, str, str, str]] = {
    "annotation": ("note", "", "#e4d7f5", "annotation"),
    "python": ("box", "dashed", "#f1efe2", "python frame"),
    "cpu_op": ("box", "", "#cfe2f3", "CPU op"),
    "runtime": ("cds", "", "#fde0bd", "runtime call"),
    "kernel": ("box", "rounded", "#c9ebc4", "kernel"),
    "memcpy": ("parallelogram", "", "#fff0a0", "memcpy"),
    "memset": ("hexagon", "", "#f6cfd3", "memset"),
    "gpu_annotation": ("note", "", "#e6e6e6", "GPU annotation"),
}
#: Edge look per kind: attributes, legend glyph and text.
EDGE_STYLE: dict[str, tuple[dict[str, str], str, str]] = {
    "nest": ({"color": "#b0b0b0", "arrowsize": "0.4", "penwidth": "0.7"}, "──▸", "nest (parent → child)"),
    "host_seq": ({"color": "#444444", "arrowsize": "0.5", "penwidth": "0.8"}, "──▸", "program order"),
    "stream_seq": ({"color": "#2e8b57", "arrowsize": "0.5", "penwidth": "0.8"}, "──▸", "stream order"),
    "launch": ({"color": "#1f5fbf", "style": "dashed", "arrowsize": "0.6"}, "╌╌▸", "launch"),
    "sync": ({"color": "#d62728", "arrowsize": "0.6", "penwidth": "1.2"}, "──▸", "sync (GPU → waiting call)"),
    "event_wait": ({"color": "#7b3fb0", "style": "bold", "penwidth": "2.5", "arrowsize": "0.7"}, "━━▸",
                   "event wait (stream → stream)"),
    "flow": ({"color": "#8c564b", "style": "dotted", "arrowsize": "0.5"}, "┈┈▸", "flow (e.g. fwd → bwd)"),
    "data": ({"color": "#17a2b8", "style": "dotted", "arrowsize": "0.5"}, "┈┈▸", "data (tensor)"),
    "critical": ({"color": CRITICAL_COLOR, "style": "bold", "penwidth": "3.5", "arrowsize": "0.8"}, "━━▸",
                 "critical path (orange: any edge on it)"),
}
#: Edge kinds drawn from the graph as they are (through the collapse); the order kinds
#: (``nest``, ``host_seq``, ``stream_seq``) are recomputed among the drawn nodes.
_CROSS_KINDS = ("launch", "sync", "event_wait", "flow", "data")
_ORDER_KINDS = ("nest", "host_seq", "stream_seq")
_HOST = ("annotation", "cpu_op", "python", "runtime")
_ACT = ("kernel", "memcpy", "memset")
#: Python frames that are a module's forward (``torch/nn/modules/linear.py(124): forward``).
_PY_FORWARD_RE = re.compile(r"\.py\(\d+\): forward$")
_PY_FRAME_RE = re.compile(r"^(?:.*/)?([^/]+\.py\(\d+\): .*)$")


# --------------------------------------------------------------------------- the view
@dataclass
class ViewNode:
    """A drawn node: an event, or an event standing for the ``merged`` events collapsed
    into it."""

    eid: int
    kind: str
    name: str
    ts: int
    dur: int
    lane: tuple
    merged: int = 0
    critical: bool = False
    critical_ns: int = 0
    parent: int | None = None     # drawn parent (eid), host nodes
    depth: int = 0


@dataclass
class ViewEdge:
    u: int
    v: int
    kind: str                     # an edge kind, or "critical" (path step with no drawn edge)
    critical: bool = False
    gap: bool = False             # an order edge across events that are not drawn


@dataclass
class GraphView:
    """What :func:`graph_view` decided to draw, and why."""

    nodes: dict[int, ViewNode]
    edges: list[ViewEdge]
    windows: list[tuple[str, int, int]]          # (name, start_ns, end_ns) of each window
    window_mode: str
    options: dict[str, Any]
    candidates: int                              # nodes before the --max-nodes cut
    cut: Counter = field(default_factory=Counter)        # kind -> nodes cut by --max-nodes
    critical_cut: int = 0                        # critical-path nodes cut (path longer than max)
    critical_ns: int = 0                         # sum of the windows' path lengths
    lane_names: dict[tuple, str] = field(default_factory=dict)
    source: str = ""

    def counts(self) -> Counter:
        """Drawn nodes per kind."""
        return Counter(n.kind for n in self.nodes.values())

    @property
    def critical_nodes(self) -> int:
        return sum(1 for n in self.nodes.values() if n.critical)

    def cut_text(self) -> str:
        if not self.cut:
            return ""
        total = sum(self.cut.values())
        kinds = ", ".join(f"{v:,} {k}" for k, v in self.cut.most_common())
        crit = (f", {self.critical_cut:,} of them on the critical path (drawn through them)" if self.critical_cut
                else "")
        return (f"max-nodes {self.options['max_nodes']}: cut {total:,} of {self.candidates:,} nodes, the shortest "
                f"events ({kinds}){crit}")

    def summary(self) -> str:
        c = self.counts()
        kinds = ", ".join(f"{v:,} {k}" for k, v in c.most_common())
        wn = [w[0] for w in self.windows]
        win = (wn[0] if len(wn) == 1 else f"{len(wn)} windows ({', '.join(wn[:3])}{', …' if len(wn) > 3 else ''})")
        s = (f"{len(self.nodes):,} nodes ({kinds}), {len(self.edges):,} edges; window {win}; "
             f"critical path {_us(self.critical_ns)} on {self.critical_nodes:,} nodes")
        if self.cut:
            s += f"; --{self.cut_text()} — narrow it with --window, --critical-only or --collapse op"
        return s


def _us(ns: int | float) -> str:
    """A duration for a label: µs with 2 decimals below 10, 1 below 1000, else whole µs
    (ms above 100 ms)."""
    us = ns / 1000.0
    if us >= 100_000:
        return f"{us / 1000.0:,.1f} ms"
    if us >= 1000:
        return f"{us:,.0f} µs"
    if us >= 10:
        return f"{us:.1f} µs"
    return f"{us:.2f} µs"


def _is_module(names: np.ndarray, kinds: np.ndarray, markers: Iterable[str]) -> np.ndarray:
    m = module_mask(names, markers)
    py = np.fromiter((k == "python" and isinstance(x, str) and bool(_PY_FORWARD_RE.search(x))
                      for k, x in zip(kinds, names)), dtype=bool, count=len(names))
    return (m & np.isin(kinds, _HOST)) | py


def _host_parent(a: GraphArrays) -> np.ndarray:
    """Nest parent (position) of every host node, -1 for roots and device nodes."""
    parent = np.full(a.n, -1, dtype=np.int64)
    s, d = a.out_edges("nest")
    h = a.is_host
    m = h[s] & h[d]
    parent[d[m]] = s[m]
    return parent


def _representatives(a: GraphArrays, parent: np.ndarray, collapse: str | None,
                     markers: Iterable[str] = DEFAULT_MODULE_MARKERS) -> np.ndarray:
    """Position each node is drawn as: itself, its top-level op (``op``) or its innermost
    module range, else top-level op (``module``); -1 for python frames outside any op or
    module when collapsing (they are not drawn)."""
    n = a.n
    rep = np.arange(n, dtype=np.int64)
    if collapse is None or not n:
        return rep
    if collapse not in COLLAPSE_MODES:
        raise ValueError(f"unknown collapse mode {collapse!r}; use one of {', '.join(COLLAPSE_MODES)}")
    kind = a.kind
    is_mod = _is_module(a.name, kind, markers)
    is_op = (kind == "cpu_op") & ~is_mod
    host = a.is_host
    outer = np.full(n, -2, dtype=np.int64)   # outermost op among ancestors-or-self (-1 none)
    inner = np.full(n, -2, dtype=np.int64)   # innermost module among ancestors-or-self
    par = parent.tolist()
    op_l, mod_l = is_op.tolist(), is_mod.tolist()
    for p in np.flatnonzero(host).tolist():
        if outer[p] != -2:
            continue
        stack = []
        q = p
        while q >= 0 and outer[q] == -2:
            stack.append(q)
            q = par[q]
        o, m = (int(outer[q]), int(inner[q])) if q >= 0 else (-1, -1)
        for x in reversed(stack):
            if o < 0 and op_l[x]:
                o = x
            if mod_l[x]:
                m = x
            outer[x] = o
            inner[x] = m
    hp = np.flatnonzero(host)
    o, m = outer[hp], inner[hp]
    if collapse == "op":
        r = np.where(o >= 0, o, hp)
    else:
        r = np.where(m >= 0, m, np.where(o >= 0, o, hp))
    elide = (kind[hp] == "python") & (r == hp) & ~is_mod[hp]
    rep[hp] = np.where(elide, -1, r)
    return rep


def _window_members(a: GraphArrays, dag: BoundaryDAG, wins: list[tuple[str, int | None, int, int]]
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mask of the window members (host events starting in a window, device activities
    whose launch call starts in it: the critical-path rule), and the sorted member keys."""
    members = np.flatnonzero(a.is_host | a.is_activity)
    key = np.where(a.is_activity[members], dag.launch_time[members], a.ts[members])
    o = np.argsort(key, kind="stable")
    mem_sorted, key_sorted = members[o], key[o]
    mask = np.zeros(a.n, dtype=bool)
    for _, _, ws, we in wins:
        lo = int(np.searchsorted(key_sorted, ws, side="left"))
        hi = int(np.searchsorted(key_sorted, we, side="left"))
        mask[mem_sorted[lo:hi]] = True
    return mask, mem_sorted, key_sorted


def critical_chain(dag: BoundaryDAG, sink: int, ws: int) -> tuple[list[int], dict[int, int], int]:
    """The critical path of one window as node positions in time order, the time (ns) each
    node owns on it (inside its own interval), and the path length.

    The one engine's walk (:func:`opgraph.analysis.critical_path.walk_back` from the
    window's sink, :func:`opgraph.analysis.critical_path.window_sinks`) and segments; the
    chain keeps every node the walk passes through, also those it crosses in zero time (a
    launch call between its parent op and the kernel), so the drawn path is connected."""
    if sink < 0:
        return [], {}, 0
    steps = walk_back(dag, 2 * sink + 1, ws)
    seq: list[int] = []
    for _e, u, b, _t0, _t1 in steps:
        for p in ((u // 2) if u >= 0 else -1, b // 2):
            if p >= 0 and (not seq or seq[-1] != p):
                seq.append(p)
    own: dict[int, int] = defaultdict(int)
    length = 0
    for r in segments(dag, steps):
        length += r.t1 - r.t0
        if r.owner >= 0:
            own[r.owner] += r.t1 - r.t0
    return seq, dict(own), int(length)


def _lane_names(G: nx.DiGraph) -> dict[tuple, str]:
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


class EmptySelection(ValueError):
    """The options select no event to draw (the picture would be an empty graph)."""


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


def graph_view(G: nx.DiGraph, window: str | None = None, critical_only: bool = False,
               collapse: str | None = None, max_nodes: int | None = DEFAULT_MAX_NODES,
               arr: GraphArrays | None = None, dag: BoundaryDAG | None = None) -> GraphView:
    """Choose the nodes and edges to draw.

    Parameters
    ----------
    G : networkx.DiGraph
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
    a = arr if arr is not None else GraphArrays.from_graph(G)
    if not a.n:
        raise ValueError("the graph has no events to draw")
    sel = select_windows(a, window)
    wins, mode = [(w.name, w.eid, w.start_ns, w.end_ns) for w in sel], sel.mode
    d = dag if dag is not None else boundary_dag(G, a)
    member, _, _ = _window_members(a, d, wins)
    parent = _host_parent(a)
    rep = _representatives(a, parent, collapse)

    # critical path of every window, in positions
    crit_own: dict[int, int] = defaultdict(int)
    chains: list[list[int]] = []
    crit_len = 0
    for w, (sink, _end) in zip(sel.items, window_sinks(d, sel.items)):
        seq, own, length = critical_chain(d, sink, w.start_ns)
        chains.append(seq)
        crit_len += length
        for p, v in own.items():  # overlapping windows (nested ranges) share nodes: the longest
            crit_own[p] = max(crit_own[p], v)
    crit_pos = set(crit_own) | {p for s in chains for p in s}

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
    for p, v in crit_own.items():
        if rep[p] >= 0:
            crit_r[int(rep[p])] += v
    crit_nodes = {int(rep[p]) for p in crit_pos if rep[p] >= 0}
    chain_r: list[list[int]] = []
    for seq in chains:
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
    candidates = len(cand)

    # --max-nodes: the longest critical-path events (up to half the budget, all of it with
    # --critical-only), then the longest others; ranges are longer than what they contain,
    # so the structure (top-level ops, annotations) stays
    cut: Counter = Counter()
    critical_cut = 0
    if max_nodes and len(cand) > max_nodes:
        key = lambda r: (-int(a.end[r] - a.ts[r]), int(a.ts[r]), r)  # noqa: E731
        crit_c = sorted(crit_nodes & cand, key=key)
        first = crit_c[: (max_nodes if critical_only else max_nodes // 2)]
        chosen = set(first)
        rest = sorted((r for r in cand if r not in chosen), key=key)
        drawn = chosen | set(rest[: max_nodes - len(first)])
        cut = Counter(str(a.kind[r]) for r in cand if r not in drawn)
        critical_cut = sum(1 for r in crit_c if r not in drawn)
    else:
        drawn = set(cand)
    if not drawn:
        raise EmptySelection(_empty_why(bool(member.any()), bool(crit_pos), bool(crit_nodes), critical_only,
                                        collapse, wins))

    # nodes
    lane_names = _lane_names(G)

    def lane_of(r: int) -> tuple:
        if a.kind[r] in _ACT or a.kind[r] == "gpu_annotation":
            return ("gpu", int(a.device[r]), int(a.stream[r]))
        return ("cpu", a.pid[r], a.tid[r])

    eids = a.eid
    vnodes: dict[int, ViewNode] = {}
    for r in drawn:
        e = int(eids[r])
        vnodes[e] = ViewNode(e, str(a.kind[r]), a.name[r] if isinstance(a.name[r], str) else "",
                             int(a.ts[r]), int(a.end[r] - a.ts[r]), lane_of(r), max(0, merged.get(r, 0)),
                             r in crit_nodes, int(crit_r.get(r, 0)))
    # drawn parent and depth of host nodes
    for r in drawn:
        if a.kind[r] not in _HOST:
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

    # edges
    edges: list[ViewEdge] = []
    has = G.has_edge
    ekind = lambda u, v: G.edges[u, v].get("kind") if has(u, v) else None  # noqa: E731
    groups: dict[tuple, list[ViewNode]] = defaultdict(list)
    for vn in vnodes.values():
        if vn.kind in _HOST:
            if vn.parent is not None:
                edges.append(ViewEdge(vn.parent, vn.eid, "nest", gap=ekind(vn.parent, vn.eid) != "nest"))
            groups[("h", vn.lane, vn.parent)].append(vn)
        elif vn.kind in _ACT:
            groups[("d", vn.lane)].append(vn)
    for key, grp in groups.items():
        grp.sort(key=lambda x: (x.ts, -x.dur, x.eid))
        k = "host_seq" if key[0] == "h" else "stream_seq"
        for x, y in zip(grp, grp[1:]):
            edges.append(ViewEdge(x.eid, y.eid, k, gap=ekind(x.eid, y.eid) != k))
    for u, v, k in sorted(mapped):
        if k in _CROSS_KINDS and u in drawn and v in drawn:
            edges.append(ViewEdge(int(eids[u]), int(eids[v]), k))
    # the critical path: highlight the drawn edge of each step, or add one
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

    src = (G.graph.get("source") or {}).get("file") if isinstance(G.graph.get("source"), dict) else None
    return GraphView(vnodes, edges, [(w[0], w[2], w[3]) for w in wins], mode,
                     {"window": window, "critical_only": critical_only, "collapse": collapse,
                      "max_nodes": max_nodes},
                     candidates, cut, critical_cut, crit_len, lane_names, str(src or ""))


# --------------------------------------------------------------------------- DOT
#: Names longer than this are cut (with "…") before any other work on them: Graphviz
#: rejects attributes over 16,384 characters, and a 5 MB kernel name used to take 45 s.
MAX_NAME_CHARS = 200


def safe_name(name: object, limit: int = MAX_NAME_CHARS) -> str:
    """``name`` for a DOT label or tooltip: cut to ``limit`` characters (+ "…") first, then
    control characters (NUL, ESC, C1, bidi overrides, newlines) shown as visible escapes
    (:func:`opgraph.export.console.clean`), which XML and Graphviz accept."""
    from opgraph.export.console import clean

    s = name if isinstance(name, str) else str(name)
    if len(s) > limit:
        s = s[:limit] + "…"
    return clean(s)


def _label_name(vn: ViewNode, width: int = 38) -> str:
    nm = safe_name(vn.name) if vn.name else "(unnamed)"
    if vn.kind == "kernel":
        # "void at::native::(anonymous namespace)::max_pool_forward_nchw<float>(...)" -> max_pool_forward_nchw
        from opgraph.analysis.diff import normalize_kernel_name
        parts = [p for p in (normalize_kernel_name(nm, "base") or "").split("::") if p.strip()]
        nm = parts[-1].strip() if parts else (short_kernel_name(nm) or nm)
    elif vn.kind == "python":  # "transformers/models/bert/modeling_bert.py(1160): forward" -> file and function
        m = _PY_FRAME_RE.match(nm)
        if m:
            nm = m.group(1)
    nm = " ".join(nm.split())
    if len(nm) > width:
        nm = nm[: width - 1] + "…"
    return nm


def _lane_label(lane: tuple, names: dict[tuple, str], pids: int) -> str:
    if lane[0] == "gpu":
        return f"GPU {lane[1]} · stream {lane[2]}"
    nm = names.get(lane)
    nm = safe_name(nm) if nm else nm
    lane = (lane[0], safe_name(lane[1], 40), safe_name(lane[2], 40))
    who = f"pid {lane[1]} · " if pids > 1 else ""
    if nm and str(lane[2]) in nm:
        return f"CPU · {who}{nm}"
    return f"CPU · {who}thread {lane[2]}" + (f" ({nm})" if nm else "")


def _legend(view: GraphView, title: str) -> str:
    """The graph label: title line, what was drawn/cut, node and edge legend (HTML)."""
    def esc(x: str) -> str:  # control characters and huge names never reach the HTML label
        return html.escape(safe_name(x, 2000))

    kinds = [k for k in NODE_STYLE if k in view.counts()]
    ekinds = [k for k in EDGE_STYLE if any(e.kind == k for e in view.edges)]
    if "critical" not in ekinds:
        ekinds.append("critical")
    rows = [f'<TR><TD ALIGN="LEFT"><B>{esc(title)}</B></TD></TR>']
    summary = safe_name(view.summary().split("; --max-nodes")[0], 2000)  # window names can be huge
    info = "<BR ALIGN=\"LEFT\"/>".join(esc(x) for x in summary.split("; "))
    rows.append(f'<TR><TD ALIGN="LEFT"><FONT POINT-SIZE="10">{info}<BR ALIGN="LEFT"/></FONT></TD></TR>')
    br = '<BR ALIGN="LEFT"/>'
    if view.cut:
        import textwrap
        cut = br.join(esc(x) for x in textwrap.wrap(view.cut_text(), 110))
        rows.append(f'<TR><TD ALIGN="LEFT"><FONT POINT-SIZE="10" COLOR="#b00000">{cut}{br}</FONT></TD></TR>')
    cells = []
    c = view.counts()
    for k in kinds:
        shape, extra, fill, text = NODE_STYLE[k]
        cells.append(f'<TD BGCOLOR="{fill}" BORDER="1" COLOR="#666666"><FONT POINT-SIZE="10">'
                     f'{esc(text)} ({c[k]:,}) · {esc(shape)}</FONT></TD>')
    trs = "".join("<TR>" + "".join(cells[i:i + 4]) + "</TR>" for i in range(0, len(cells), 4))
    rows.append(f'<TR><TD ALIGN="LEFT"><TABLE BORDER="0" CELLSPACING="4" CELLPADDING="3">{trs}</TABLE></TD></TR>')
    ecells = []
    for k in ekinds:
        attrs, glyph, text = EDGE_STYLE[k]
        g = f"<B>{esc(glyph)}</B>" if attrs.get("style") == "bold" else esc(glyph)
        ecells.append(f'<FONT COLOR="{attrs["color"]}">{g}</FONT> {esc(text)}')
    ecells.append('<FONT COLOR="#888888">┈┈▸</FONT> order across undrawn events')
    lines = [" &#160;&#160; ".join(ecells[i:i + 4]) for i in range(0, len(ecells), 4)]
    rows.append(f'<TR><TD ALIGN="LEFT"><FONT POINT-SIZE="10">{br.join(lines)}{br}</FONT></TD></TR>')
    rows.append(f'<TR><TD ALIGN="LEFT"><FONT POINT-SIZE="10">'
                f'<FONT COLOR="{CRITICAL_COLOR}"><B>thick orange border</B></FONT>: on the critical path '
                f'(its time on the path after ◆) · labels: name (+merged events) and duration{br}'
                f'time runs down · lanes: one per CPU thread (nesting indented) and one per GPU stream{br}'
                f'</FONT></TD></TR>')
    return '<<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="3" CELLPADDING="2">' + "".join(rows) + "</TABLE>>"


def _node_attrs(vn: ViewNode) -> dict[str, str]:
    shape, extra, fill, _ = NODE_STYLE.get(vn.kind, ("box", "", "#ffffff", vn.kind))
    name = html.escape(_label_name(vn))
    more = f" (+{vn.merged:,})" if vn.merged else ""
    dur = _us(vn.dur)
    crit = f' · ◆ {_us(vn.critical_ns)}' if vn.critical and vn.critical_ns else ""
    more = f'<FONT POINT-SIZE="8" COLOR="#555555">{html.escape(more)}</FONT>' if more else ""
    label = (f'<{name}{more}<BR/>'
             f'<FONT POINT-SIZE="8" COLOR="#333333">{html.escape(dur + crit)}</FONT>>')
    style = ",".join(x for x in ("filled", extra) if x)
    tip = (f"{vn.kind}: {safe_name(vn.name)}\ndur {vn.dur / 1000:.3f} µs, start {vn.ts / 1000:.3f} µs, eid {vn.eid}"
           + (f"\n+{vn.merged} collapsed events" if vn.merged else "")
           + (f"\ncritical path: {vn.critical_ns / 1000:.3f} µs" if vn.critical else ""))
    attrs = {"label": label, "shape": shape, "style": style, "fillcolor": fill,
             "tooltip": _dot_str(tip), "id": f"n{vn.eid}",
             "class": f"kind-{vn.kind}" + (" critical" if vn.critical else "")}
    if vn.critical:
        attrs.update(color=CRITICAL_COLOR, penwidth="3")
    return attrs


def _dot_str(s: str) -> str:
    """Text for a quoted DOT attribute: backslashes doubled (``\\N``-style escapes off),
    newlines as ``\\n``, and never read as an HTML label."""
    s = s.replace("\\", "\\\\").replace("\n", "\\n")
    return s if not s.startswith("<") else " " + s


#: Layout constants (points): row pitch, indent per nesting depth, lane padding and gap.
ROW_PT, NODE_H_PT, INDENT_PT, PAD_PT, LANE_GAP_PT, HEAD_PT = 38.0, 29.0, 14.0, 10.0, 56.0, 26.0
#: Extra width some shapes need around their label (fraction of the label width, points).
_SHAPE_EXTRA = {"parallelogram": (0.55, 10.0), "hexagon": (0.45, 8.0), "cds": (0.15, 12.0), "note": (0.0, 8.0)}


@dataclass
class DotLayout:
    """A view as a positioned DOT graph (``pos`` on every node, ``bb`` on every lane
    cluster): Graphviz's ``neato -n2`` keeps the positions and routes the edges."""

    graph: Any           # pydot.Dot
    size_in: tuple[float, float]

    def source(self) -> str:
        return self.graph.to_string()


def _time_ranks(view: GraphView, order: dict[int, int], chains: list[list[ViewNode]]) -> dict[int, int]:
    """A rank per node: 1 + the highest rank of its predecessors along time (edges that go
    forward in start order, and each CPU lane's program order), so a kernel sits below
    its launch and a range's next sibling below the range's children."""
    preds: dict[int, list[int]] = defaultdict(list)
    for e in view.edges:
        if order[e.u] < order[e.v]:
            preds[e.v].append(e.u)
    for ch in chains:
        for x, y in zip(ch, ch[1:]):
            preds[y.eid].append(x.eid)
    rank: dict[int, int] = {}
    for eid in sorted(order, key=order.get):
        rank[eid] = max((rank[u] + 1 for u in preds.get(eid, ()) if u in rank), default=0)
    return rank


def _text_pt(s: str, size: float) -> float:
    """Rough width of text in Helvetica at ``size`` points (generous: the layout must not
    let nodes overlap; Graphviz sizes the nodes themselves)."""
    narrow = sum(1 for ch in s if ch in "il.,:;|!'()[]ftj ·")
    wide = sum(1 for ch in s if ch in "mwMW@%")
    return size * (0.58 * (len(s) - narrow - wide) + 0.3 * narrow + 0.85 * wide)


def _node_width_pt(vn: ViewNode) -> float:
    shape = NODE_STYLE.get(vn.kind, ("box",))[0]
    more = f" (+{vn.merged:,})" if vn.merged else ""
    crit = f" · ◆ {_us(vn.critical_ns)}" if vn.critical and vn.critical_ns else ""
    w = max(_text_pt(_label_name(vn), 10) + _text_pt(more, 8), _text_pt(_us(vn.dur) + crit, 8))
    frac, add = _SHAPE_EXTRA.get(shape, (0.0, 0.0))
    return w * (1 + frac) + add + 12.0


@dataclass
class _Box:
    cx: float
    cy: float
    w: float
    h: float
    lane: int

    @property
    def left(self) -> float:
        return self.cx - self.w / 2

    @property
    def right(self) -> float:
        return self.cx + self.w / 2

    @property
    def top(self) -> float:
        return self.cy + self.h / 2

    @property
    def bottom(self) -> float:
        return self.cy - self.h / 2


def _edge_pos(b1: _Box, b2: _Box, kind: str, adjacent: bool, arrow: float | None) -> str:
    """A Graphviz edge ``pos`` (one cubic Bézier, points, y up) from box 1 to box 2:

    * next in the same lane column: straight down;
    * ``nest``: a bracket from the parent's left edge down and into the child's left side
      (children are indented), like a tree view;
    * other edges inside a lane: a bracket on the lane's left (downwards) or right (up);
    * between lanes: from the side facing the other lane to the side facing back.
    ``arrow``: arrow length (the curve stops short of the tip by it), None without one."""
    if b1.lane == b2.lane and adjacent and b2.cy < b1.cy:
        lo, hi = max(b1.left, b2.left), min(b1.right, b2.right)
        x = (lo + hi) / 2 if hi - lo > 8 else b2.cx
        pts = [(x, b1.bottom), (x, b1.bottom - 4), (x, b2.top + 4), (x, b2.top)]
    elif b1.lane == b2.lane and kind == "nest":
        x = b1.left + 6
        pts = [(x, b1.bottom), (x, b2.cy), (x, b2.cy), (b2.left, b2.cy)]
    elif b1.lane == b2.lane:
        if b2.cy <= b1.cy:   # down: on the left
            x = min(b1.left, b2.left) - 12
            pts = [(b1.left, b1.cy), (x, b1.cy), (x, b2.cy), (b2.left, b2.cy)]
        else:                # up (against time): on the right
            x = max(b1.right, b2.right) + 14
            pts = [(b1.right, b1.cy), (x, b1.cy), (x, b2.cy), (b2.right, b2.cy)]
    else:
        if b2.lane > b1.lane:
            x1, x2, sgn = b1.right, b2.left, 1.0
        else:
            x1, x2, sgn = b1.left, b2.right, -1.0
        d = max(24.0, 0.35 * abs(x2 - x1))
        pts = [(x1, b1.cy), (x1 + sgn * d, b1.cy), (x2 - sgn * d, b2.cy), (x2, b2.cy)]
    if arrow is None:
        return " ".join(f"{x:.1f},{y:.1f}" for x, y in pts)
    tip = pts[3]
    dx, dy = tip[0] - pts[2][0], tip[1] - pts[2][1]
    if abs(dx) + abs(dy) < 1e-6:
        dx, dy = tip[0] - pts[0][0], tip[1] - pts[0][1]
    n = (dx * dx + dy * dy) ** 0.5 or 1.0
    end = (tip[0] - dx / n * arrow, tip[1] - dy / n * arrow)
    c2 = pts[2] if (abs(pts[2][0] - tip[0]) + abs(pts[2][1] - tip[1])) > arrow else end
    pts = [pts[0], pts[1], c2, end]
    return f"e,{tip[0]:.1f},{tip[1]:.1f} " + " ".join(f"{x:.1f},{y:.1f}" for x, y in pts)


def to_pydot(view: GraphView, title: str | None = None) -> DotLayout:
    """Lay the view out as swim lanes: lanes side by side (CPU threads by first event, then
    GPU streams by device and stream), each a cluster; time runs down, one row per time
    rank (:func:`_time_ranks`); inside a CPU lane each nesting level is indented. Every
    node and edge gets its position here (Graphviz only draws: ``neato -n2``)."""
    import pydot

    title = title or f"opgraph · {Path(view.source).name or 'graph'}"
    g = pydot.Dot("opgraph", graph_type="digraph", strict=False)
    g.set_graph_defaults(fontname=FONT, fontsize="11", labelloc="t", labeljust="l", bgcolor="white",
                         outputorder="edgesfirst", pad="0.25", splines="true")
    g.set("label", _legend(view, title))
    g.set_node_defaults(fontname=FONT, fontsize="10", margin="0.06,0.02", penwidth="0.8", color="#555555")
    g.set_edge_defaults(fontname=FONT, fontsize="8")
    by_lane: dict[tuple, list[ViewNode]] = defaultdict(list)
    for vn in view.nodes.values():
        by_lane[vn.lane].append(vn)
    cpu = sorted((ln for ln in by_lane if ln[0] == "cpu"),
                 key=lambda ln: (str(ln[1]), min(v.ts for v in by_lane[ln])))
    gpu = sorted((ln for ln in by_lane if ln[0] == "gpu"), key=lambda ln: (ln[1], ln[2]))
    pids = len({ln[1] for ln in cpu})
    order = {vn.eid: i for i, vn in enumerate(sorted(view.nodes.values(), key=lambda x: (x.ts, -x.dur, x.eid)))}
    lanes = cpu + gpu
    members = {ln: sorted(by_lane[ln], key=lambda x: order[x.eid]) for ln in lanes}
    rank = _time_ranks(view, order, [members[ln] for ln in cpu])
    n_ranks = max(rank.values(), default=0) + 1
    top = HEAD_PT + PAD_PT + n_ranks * ROW_PT          # y grows upward in Graphviz
    boxes: dict[int, _Box] = {}
    lane_pos: dict[int, int] = {}                      # eid -> position in its lane
    x0 = 0.0
    for li, lane in enumerate(lanes):
        is_gpu = lane[0] == "gpu"
        label = _lane_label(lane, view.lane_names, pids)
        widths = {vn.eid: _node_width_pt(vn) for vn in members[lane]}
        inner = max([(0 if is_gpu else vn.depth * INDENT_PT) + widths[vn.eid] for vn in members[lane]]
                    + [_text_pt(label, 13)])
        lane_w = inner + 2 * PAD_PT + (0 if is_gpu else 8)   # room for the brackets on the left
        cl = pydot.Cluster(f"lane{li}", label=_dot_str(label), style="rounded,filled",
                           fillcolor="#eef6ec" if is_gpu else "#f3f6fa", color="#b9c4cc", fontsize="13",
                           fontname=FONT, labeljust="l",
                           bb=f"{x0:.1f},0,{x0 + lane_w:.1f},{top + HEAD_PT:.1f}",
                           lp=f"{x0 + PAD_PT + _text_pt(label, 13) / 2:.1f},{top + HEAD_PT / 2:.1f}")
        for j, vn in enumerate(members[lane]):
            at = _node_attrs(vn)
            w = widths[vn.eid]
            left = x0 + PAD_PT + (inner - w) / 2 if is_gpu else x0 + PAD_PT + 8 + vn.depth * INDENT_PT
            y = top - (rank[vn.eid] + 0.5) * ROW_PT
            boxes[vn.eid] = _Box(left + w / 2, y, w, NODE_H_PT, li)
            lane_pos[vn.eid] = j
            at.update(pos=f"{left + w / 2:.1f},{y:.1f}", width=f"{w / 72:.3f}", height=f"{NODE_H_PT / 72:.3f}")
            cl.add_node(pydot.Node(f"n{vn.eid}", **at))
        g.add_subgraph(cl)
        x0 += lane_w + LANE_GAP_PT
    for e in view.edges:
        attrs, _, _ = EDGE_STYLE.get(e.kind, ({}, "", ""))
        at = dict(attrs)
        if e.gap:
            at.update(style="dotted", color="#888888")
        if e.critical:
            at.update(color=CRITICAL_COLOR, penwidth="3.5")
            if "style" not in at or at["style"] == "dotted":
                at["style"] = "bold"
        if e.kind == "nest":
            at["arrowhead"] = "none"
        at["class"] = f"edge-{e.kind}" + (" critical" if e.critical else "")
        at["tooltip"] = _dot_str(f"{e.kind}{' (critical path)' if e.critical else ''}")
        b1, b2 = boxes[e.u], boxes[e.v]
        adjacent = b1.lane == b2.lane and lane_pos[e.v] == lane_pos[e.u] + 1
        arrow = None if e.kind == "nest" else 10.0 * float(at.get("arrowsize", "1"))
        at["pos"] = _edge_pos(b1, b2, e.kind, adjacent, arrow)
        g.add_edge(pydot.Edge(f"n{e.u}", f"n{e.v}", **at))
    w_pt, h_pt = max(x0 - LANE_GAP_PT, 1.0), top + HEAD_PT
    g.set("bb", f"0,0,{w_pt:.1f},{h_pt:.1f}")
    return DotLayout(g, (w_pt / 72.0, h_pt / 72.0))


def dot_source(view: GraphView, title: str | None = None) -> str:
    """The view as DOT text with every node's position (``neato -n2 -Tsvg`` draws it as
    opgraph does; plain ``dot`` lays it out again by itself)."""
    return to_pydot(view, title).source()


# --------------------------------------------------------------------------- rendering
def dot_program() -> str | None:
    """Path of Graphviz's ``dot``, or None when it is not installed."""
    return shutil.which("dot")


class GraphvizMissing(RuntimeError):
    """The Graphviz ``dot`` program is not installed."""


MISSING_DOT = ("the Graphviz `dot` program is not installed (apt-get install graphviz, brew install graphviz); "
               "--dot still writes the DOT text without it")


def _run(prog: str, args: list[str], data: bytes, timeout: float | None) -> bytes:
    exe = shutil.which(prog)
    if exe is None:
        raise GraphvizMissing(MISSING_DOT)
    p = subprocess.run([exe, *args], input=data, capture_output=True, timeout=timeout)
    if p.returncode != 0 or not p.stdout:
        err = [x.strip() for x in p.stderr.decode("utf-8", "replace").splitlines() if x.strip()]
        raise RuntimeError(f"{prog} {' '.join(args)} failed: {' '.join(err[:3])[:300] if err else 'no output'}")
    return p.stdout


def render(dot_text: str, fmt: str, timeout: float | None = 600) -> bytes:
    """Draw a positioned DOT text (:func:`dot_source`) with ``neato -n2 -T<fmt>``: the node
    positions are kept and only the edges are routed."""
    if dot_program() is None:
        raise GraphvizMissing(MISSING_DOT)
    return _run("neato", ["-n2", f"-T{fmt}"], dot_text.encode("utf-8"), timeout)


def write_graphviz(G: nx.DiGraph, path: str | Path, fmt: str | None = None, *, view: GraphView | None = None,
                   inputs: tuple[str | Path, ...] = (), **view_opts: Any) -> GraphView:
    """Write ``G`` (through :func:`graph_view` with ``view_opts``) as DOT, SVG or PNG
    (``fmt``, default from the file suffix); whole or not at all, never over one of
    ``inputs`` (:func:`opgraph.outfiles.write_atomic`)."""
    from opgraph.outfiles import write_atomic

    path = Path(path)
    fmt = fmt or path.suffix.lstrip(".").lower()
    if fmt == "gv":
        fmt = "dot"
    v = view if view is not None else graph_view(G, **view_opts)
    lay = to_pydot(v)
    data = lay.source().encode("utf-8") if fmt == "dot" else render(lay.source(), fmt)
    write_atomic(path, data, inputs)
    return v


def critical_path_svg(G: nx.DiGraph, window: str, max_nodes: int = 150, collapse: str | None = "op",
                      title: str | None = None, arr: GraphArrays | None = None,
                      dag: BoundaryDAG | None = None) -> tuple[str, GraphView]:
    """SVG text of the critical path (with its one-hop neighbours) of ``window``, for
    embedding (the HTML report). Raises :class:`GraphvizMissing` without Graphviz."""
    v = graph_view(G, window=window, critical_only=True, collapse=collapse, max_nodes=max_nodes, arr=arr, dag=dag)
    svg = render(dot_source(v, title), "svg").decode("utf-8")
    return svg, v
