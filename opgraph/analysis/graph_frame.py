"""The column view of a trace graph: :class:`GraphFrame` (the nodes as parallel numpy
arrays), built by :func:`graph_frame` (or passed through by :func:`frame_of`).

Most analyses read the graph through this view. Times are integer ns (``ts``, ``dur``,
``end``); the documents the analyses write from it are in µs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any, Sequence

import numpy as np

from opgraph.analysis.kind_codes import K_KERNEL, K_MEMSET, K_OTHER, K_RUNTIME, KIND_CODES, KIND_NAMES
from opgraph.graph.arrays import key_positions
from opgraph.graph.model import AnyGraph, TraceGraph, node_args
from opgraph.graph.windows import WindowColumns, thread_lanes

__all__ = ["GraphFrame", "graph_frame", "frame_of"]


@dataclass
class GraphFrame:
    """The nodes of a trace graph as parallel numpy arrays (positions 0..n-1).

    Attributes
    ----------
    node : int64 array
        Node keys (event ids).
    kind : int8 array
        Kind codes (``K_ANNOTATION`` ... ``K_GPU_ANNOTATION``, ``K_OTHER``).
    name : object array
        Node names (str; ``""`` when missing).
    ts, dur, end : int64 arrays
        Start, duration and end in ns.
    lane : int64 array
        One code per (pid, tid).
    pid, tid : object arrays
        As written in the trace.
    device, stream, correlation, external_id : int64 arrays
        -1 for none.
    parent : int64 array
        Position of the ``nest`` parent, -1 for roots (host and device nesting).
    launcher : int64 array
        For device activities, position of the runtime call that launched it (``launch``
        edge), else -1.
    """

    G: AnyGraph
    node: np.ndarray
    kind: np.ndarray
    name: np.ndarray
    ts: np.ndarray
    dur: np.ndarray
    end: np.ndarray
    lane: np.ndarray
    pid: np.ndarray
    tid: np.ndarray
    device: np.ndarray
    stream: np.ndarray
    correlation: np.ndarray
    external_id: np.ndarray
    parent: np.ndarray
    launcher: np.ndarray
    _depth: np.ndarray | None = field(default=None, repr=False)
    cache: dict = field(default_factory=dict, repr=False)

    def __len__(self) -> int:
        return len(self.node)

    @property
    def is_host(self) -> np.ndarray:
        return self.kind <= K_RUNTIME

    @property
    def is_activity(self) -> np.ndarray:
        return (self.kind >= K_KERNEL) & (self.kind <= K_MEMSET)

    @property
    def depth(self) -> np.ndarray:
        """Nesting depth (roots 0), computed once."""
        if self._depth is None:
            depth = np.zeros(len(self.node), dtype=np.int64)
            idx = np.flatnonzero(self.parent >= 0)
            anc = self.parent[idx]
            while len(idx):
                depth[idx] += 1
                anc = self.parent[anc]
                keep = anc >= 0
                idx, anc = idx[keep], anc[keep]
            self._depth = depth
        return self._depth

    def window_columns(self) -> WindowColumns:
        """The columns :func:`opgraph.graph.windows.select_windows` reads (computed once)."""
        c = self.cache.get("window_columns")
        if c is None:
            c = WindowColumns(KIND_NAMES[self.kind], self.name, self.ts, self.end, self.node, self.lane,
                              self.launcher[self.launcher >= 0])
            self.cache["window_columns"] = c
        return c

    def args(self, pos: int) -> dict[str, Any]:
        """The ``args`` dict of the node at position ``pos`` (empty when absent)."""
        a = self.args_list(np.array([pos], dtype=np.int64))[0]
        return a if isinstance(a, dict) else {}

    def args_list(self, pos: np.ndarray) -> list[Any]:
        """The ``args`` of the nodes at positions ``pos`` (as stored: a dict, or None when
        absent). A :class:`~opgraph.graph.model.TraceGraph` keeps them in its event table
        (a node's args are its event's)."""
        return node_args(self.G, self.node[pos])

    def by_depth(self, mask: np.ndarray | None = None) -> list[np.ndarray]:
        """Positions grouped by depth, shallowest first (optionally only where ``mask``)."""
        d = self.depth
        pos = np.arange(len(d)) if mask is None else np.flatnonzero(mask)
        if not len(pos):
            return []
        o = pos[np.argsort(d[pos], kind="stable")]
        dd = d[o]
        cuts = np.flatnonzero(np.diff(dd)) + 1
        return np.split(o, cuts)


def _frame_of_columns(T: TraceGraph) -> GraphFrame:
    """:func:`graph_frame` of a :class:`~opgraph.graph.model.TraceGraph`: the same arrays,
    from its columns (no node dicts)."""
    cols = T.payload["node_cols"]
    n = T.number_of_nodes()
    ids = T.node_ids
    ku, kc = cols["kind"]
    kind = np.fromiter((KIND_CODES.get(k, K_OTHER) for k in ku.tolist()), dtype=np.int8, count=len(ku))[kc] \
        if n else np.empty(0, np.int8)
    nu, nc = cols["name"]
    name_u = np.array([s if isinstance(s, str) else ("" if s is None else str(s)) for s in nu.tolist()] or [""],
                      dtype=object)
    name = name_u[nc] if n else np.empty(0, dtype=object)
    ts = cols["ts"]
    dur = np.maximum(cols["dur"], 0)
    pid, tid = T.column("pid"), T.column("tid")
    lane = thread_lanes(pid, tid)
    a = T.arrays   # edge positions in the order a DiGraph iterates them
    parent = a.parent
    launcher = np.full(n, -1, dtype=np.int64)
    ls_, ld_ = a.out_edges("launch")
    launcher[ld_] = ls_
    return GraphFrame(T, ids, kind, name, ts, dur, ts + dur, lane, pid, tid, cols["device"], cols["stream"],
                      cols["correlation"], cols["external_id"], parent, launcher)


def graph_frame(G: AnyGraph) -> GraphFrame:
    """Column view of a trace graph (see :class:`GraphFrame`).

    One pass over the node attribute dicts and one over the edges (``nest`` and
    ``launch``); about 1 s for 700k nodes.

    Parameters
    ----------
    G : networkx.DiGraph
        A graph with the node attributes and edge kinds of docs/model.md. Missing
        ``device``/``stream``/``correlation``/``external_id`` attributes read as -1.

    Returns
    -------
    GraphFrame
    """
    if isinstance(G, TraceGraph):
        return _frame_of_columns(G)
    nodes = G._node
    n = len(nodes)
    ids = np.fromiter(nodes.keys(), dtype=np.int64, count=n) if n else np.empty(0, np.int64)
    try:
        cols = list(zip(*map(itemgetter("kind", "name", "ts", "dur", "pid", "tid", "device", "stream",
                                        "correlation", "external_id"), nodes.values())))
    except KeyError:
        get = [lambda d, k=k, dflt=dflt: d.get(k, dflt) for k, dflt in (
            ("kind", "other"), ("name", ""), ("ts", 0), ("dur", 0), ("pid", None), ("tid", None),
            ("device", -1), ("stream", -1), ("correlation", -1), ("external_id", -1))]
        cols = [[g(d) for d in nodes.values()] for g in get]
    if not n:
        cols = [[] for _ in range(10)]
    kind = np.fromiter((KIND_CODES.get(k, K_OTHER) for k in cols[0]), dtype=np.int8, count=n)
    name = np.array([s if isinstance(s, str) else ("" if s is None else str(s)) for s in cols[1]], dtype=object)
    ts = np.array(cols[2], dtype=np.int64)
    dur = np.maximum(np.array(cols[3], dtype=np.int64), 0)
    pid = np.array(cols[4], dtype=object)
    tid = np.array(cols[5], dtype=object)

    def ints(c: Sequence[Any]) -> np.ndarray:
        try:
            return np.array(c, dtype=np.int64)
        except (TypeError, ValueError):
            return np.array([v if isinstance(v, (int, np.integer)) else -1 for v in c], dtype=np.int64)

    device, stream, corr, ext = (ints(c) for c in cols[6:10])
    lane = thread_lanes(pid, tid)
    n_src: list[int] = []
    n_dst: list[int] = []
    l_src: list[int] = []
    l_dst: list[int] = []
    for u, nbrs in G._succ.items():
        for v, d in nbrs.items():
            k = d.get("kind")
            if k == "nest":
                n_src.append(u)
                n_dst.append(v)
            elif k == "launch":
                l_src.append(u)
                l_dst.append(v)
    parent = np.full(n, -1, dtype=np.int64)
    if n_src:
        parent[key_positions(ids, n_dst)] = key_positions(ids, n_src)
    launcher = np.full(n, -1, dtype=np.int64)
    if l_src:
        launcher[key_positions(ids, l_dst)] = key_positions(ids, l_src)
    return GraphFrame(G, ids, kind, name, ts, dur, ts + dur, lane, pid, tid, device, stream, corr, ext,
                      parent, launcher)


def frame_of(G_or_frame: AnyGraph | GraphFrame) -> GraphFrame:
    """Accept a graph or an already-built frame."""
    return G_or_frame if isinstance(G_or_frame, GraphFrame) else graph_frame(G_or_frame)
