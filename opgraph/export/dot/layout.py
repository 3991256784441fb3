"""The layout of a Graphviz picture (:mod:`opgraph.export.dot`): :func:`to_pydot` places
a view (:class:`opgraph.export.dot.view.GraphView`) as swim lanes and writes it as DOT text.

* one cluster per CPU thread and one per GPU stream, side by side (CPU threads by first
  event, then GPU streams by device and stream);
* time runs down: one row per time rank (a node sits below what it follows in time);
  inside a CPU lane each nesting depth is indented, so a lane reads like a flame chart;
* every node and edge gets its position (``pos``) here, edges as one Bézier curve each,
  styled by kind (:data:`opgraph.export.dot.style.EDGE_STYLE`), the critical path in thick
  orange; Graphviz's ``neato -n2`` only draws it (:mod:`opgraph.export.dot.render`).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from opgraph.export.dot.labels import label_name, lane_title, legend_label, node_attrs
from opgraph.export.dot.style import CRITICAL_COLOR, EDGE_STYLE, FONT, NODE_STYLE, dot_str, fmt_us
from opgraph.export.dot.view import GraphView, ViewNode

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
    crit = f" · ◆ {fmt_us(vn.critical_ns)}" if vn.critical and vn.critical_ns else ""
    w = max(_text_pt(label_name(vn), 10) + _text_pt(more, 8), _text_pt(fmt_us(vn.dur) + crit, 8))
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
    g.set("label", legend_label(view, title))
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
        label = lane_title(lane, view.lane_names, pids)
        widths = {vn.eid: _node_width_pt(vn) for vn in members[lane]}
        inner = max([(0 if is_gpu else vn.depth * INDENT_PT) + widths[vn.eid] for vn in members[lane]]
                    + [_text_pt(label, 13)])
        lane_w = inner + 2 * PAD_PT + (0 if is_gpu else 8)   # room for the brackets on the left
        cl = pydot.Cluster(f"lane{li}", label=dot_str(label), style="rounded,filled",
                           fillcolor="#eef6ec" if is_gpu else "#f3f6fa", color="#b9c4cc", fontsize="13",
                           fontname=FONT, labeljust="l",
                           bb=f"{x0:.1f},0,{x0 + lane_w:.1f},{top + HEAD_PT:.1f}",
                           lp=f"{x0 + PAD_PT + _text_pt(label, 13) / 2:.1f},{top + HEAD_PT / 2:.1f}")
        for j, vn in enumerate(members[lane]):
            at = node_attrs(vn)
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
        at["tooltip"] = dot_str(f"{e.kind}{' (critical path)' if e.critical else ''}")
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
