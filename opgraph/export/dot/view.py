"""What a Graphviz picture draws (:mod:`opgraph.export.dot`): the view's nodes and edges
and the account of what was selected and cut.

:func:`opgraph.export.dot.select.graph_view` builds a :class:`GraphView`;
:func:`opgraph.export.dot.layout.to_pydot` lays it out.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from opgraph.export.dot.style import fmt_us

#: Kinds drawn in a CPU thread's lane (nested: one row per depth) ...
HOST_KINDS = ("annotation", "cpu_op", "python", "runtime")
#: ... and device activities, drawn in a GPU stream's lane with the GPU annotations.
ACTIVITY_KINDS = ("kernel", "memcpy", "memset")


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
    """What :func:`~opgraph.export.dot.select.graph_view` decided to draw, and why."""

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
             f"critical path {fmt_us(self.critical_ns)} on {self.critical_nodes:,} nodes")
        if self.cut:
            s += f"; --{self.cut_text()} — narrow it with --window, --critical-only or --collapse op"
        return s


class EmptySelection(ValueError):
    """The options select no event to draw (the picture would be an empty graph)."""
