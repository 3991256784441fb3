"""The critical path a Graphviz picture highlights (:mod:`opgraph.export.dot`), taken from
the analysis: :func:`opgraph.analysis.critical_path.critical_path`.

From its result (:class:`~opgraph.analysis.critical_path.CriticalPathResult`) the picture
takes each window's path: the time each event holds on it (its segments with an ``eid``:
the ``◆`` of the labels and the orange border) and the path's length (the summary).

What the result does not hold is the order of the nodes the path passes through, which
the picture needs to draw the path connected (an orange edge between consecutive drawn
nodes). Its segments merge consecutive stretches of one event and category (a range's
first and last child edges around a zero-length child become one segment, so the walk's
return to the range is gone), leave out nodes crossed in zero time, and name, for the
delay before a held kernel, the event wait's source rather than the walked edge's. So
:func:`walked_nodes` asks the engine for just that sequence: its walk
(:func:`opgraph.analysis.critical_path.walk_back`) from each window's sink
(:func:`opgraph.analysis.critical_path.window_sinks`), the same walk
:func:`~opgraph.analysis.critical_path.critical_path` makes.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Sequence

import networkx as nx

from opgraph.analysis.critical_path import BoundaryDAG, WindowPath, critical_path, walk_back, window_sinks
from opgraph.graph.arrays import GraphArrays
from opgraph.graph.windows import Window


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


def walked_nodes(d: BoundaryDAG, sink: int, ws: int) -> list[int]:
    """The node positions the critical path into ``sink``'s end passes through back to
    time ``ws``, in time order: both ends of every walked edge, also the nodes it crosses
    in zero time (a launch call between its parent op and the kernel), so the drawn path
    is connected. Not in the analysis result (module docstring)."""
    if sink < 0:
        return []
    seq: list[int] = []
    for _e, u, b, _t0, _t1 in walk_back(d, 2 * sink + 1, ws):
        for p in ((u // 2) if u >= 0 else -1, b // 2):
            if p >= 0 and (not seq or seq[-1] != p):
                seq.append(p)
    return seq


def view_path(G: nx.DiGraph, d: BoundaryDAG, a: GraphArrays, window: str | None, wins: Sequence[Window]
              ) -> ViewPath:
    """The critical path of the windows ``wins`` (:func:`opgraph.graph.windows.select_windows`
    of ``window`` on ``a``, the arrays of ``G`` and ``d``)."""
    res = critical_path(G, window=window, dag=d)
    if [(w.name, w.start_ns) for w in res.windows] != [(w.name, w.start_ns) for w in wins]:
        raise RuntimeError("critical_path() chose other windows than the picture")  # pragma: no cover
    own: dict[int, int] = defaultdict(int)
    chains: list[list[int]] = []
    for w, wp, (sink, _end) in zip(wins, res.windows, window_sinks(d, list(wins))):
        chains.append(walked_nodes(d, sink, w.start_ns))
        for p, v in held_time(a, wp).items():
            own[p] = max(own[p], v)
    return ViewPath(dict(own), chains, int(sum(wp.length_ns for wp in res.windows)))
