"""The critical path a Graphviz picture highlights (:mod:`opgraph.export.dot`), taken from
the analysis: :func:`opgraph.analysis.critical_path.critical_path`.

From its result (:class:`~opgraph.analysis.critical_path.CriticalPathResult`) the picture
takes each window's path: the time each event holds on it (its segments with an ``eid``:
the ``◆`` of the labels and the orange border) and the path's length (the summary).

It also takes the order of the nodes the path passes through (``WindowPath.nodes``),
which the picture needs to draw the path connected (an orange edge between consecutive
drawn nodes): the segments merge consecutive stretches of one event and category and
leave out nodes crossed in zero time, so they cannot give it.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Sequence


from opgraph.analysis.critical_path.engine import BoundaryDAG
from opgraph.analysis.critical_path.result import WindowPath
from opgraph.analysis.critical_path.path import critical_path
from opgraph.model.arrays import GraphArrays
from opgraph.graph.windows import Window
from opgraph.model.trace_graph import TraceGraph


@dataclass
class ViewPath:
    """The critical path of a view's windows, in node positions."""

    #: time (ns) each node holds on the path inside its own interval; windows that share a
    #: node (nested ranges) count its longest
    own: dict[int, int]
    #: per window, the nodes the path passes through, in time order
    chains: list[list[int]]
    #: the sum of the windows' path lengths (ns)
    length_ns: int

    @property
    def positions(self) -> set[int]:
        """Every node on the path: those holding time on it and those it passes through."""
        return set(self.own) | {p for s in self.chains for p in s}


def held_time(a: GraphArrays, wp: WindowPath) -> dict[int, int]:
    """Per node position, the time (ns) of ``wp``'s path inside the node's own interval
    (its segments with an ``eid``); stretches between events count for no node."""
    own: dict[int, int] = defaultdict(int)
    pos_of = a.pos_of
    for s in wp.path:
        if s.eid is not None:
            own[pos_of[s.eid]] += s.dur_ns
    return dict(own)


def view_path(G: TraceGraph, d: BoundaryDAG, a: GraphArrays, window: str | None, wins: Sequence[Window]
              ) -> ViewPath:
    """The critical path of the windows ``wins`` (:func:`opgraph.graph.windows.select_windows`
    of ``window`` on ``a``, the arrays of ``G`` and ``d``)."""
    res = critical_path(G, window=window, dag=d)
    if [(w.name, w.start_ns) for w in res.windows] != [(w.name, w.start_ns) for w in wins]:
        raise RuntimeError("critical_path() chose other windows than the picture")  # pragma: no cover
    own: dict[int, int] = defaultdict(int)
    chains: list[list[int]] = []
    pos_of = a.pos_of
    for wp in res.windows:
        chains.append([int(pos_of[e]) for e in wp.nodes])
        for p, v in held_time(a, wp).items():
            own[p] = max(own[p], v)
    return ViewPath(dict(own), chains, int(sum(wp.length_ns for wp in res.windows)))
