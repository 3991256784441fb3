"""The column view of a trace graph: :class:`GraphFrame` (the nodes as parallel numpy
arrays), built by :func:`graph_frame` (or passed through by :func:`frame_of`).

Most analyses read the graph through this view. Times are integer ns (``ts``, ``dur``,
``end``); the documents the analyses write from it are in µs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from opgraph.analysis.kind_codes import K_KERNEL, K_MEMSET, K_OTHER, K_RUNTIME, KIND_CODES, KIND_NAMES
from opgraph.model.trace_graph import TraceGraph
from opgraph.graph.windows import WindowColumns

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

    G: TraceGraph
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
        absent). A :class:`~opgraph.model.trace_graph.TraceGraph` keeps them in its event table
        (a node's args are its event's)."""
        return self.G.node_args(self.node[pos])

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


def graph_frame(T: TraceGraph) -> GraphFrame:
    """Column view of a trace graph (see :class:`GraphFrame`), from its columns (no node
    dicts); parent and launcher from :class:`~opgraph.model.arrays.GraphArrays`."""
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
    a = T.arrays   # edge positions in the order a DiGraph iterates them
    parent, launcher = a.parent, a.launcher
    return GraphFrame(T, ids, kind, name, ts, dur, ts + dur, a.lane, pid, tid, cols["device"], cols["stream"],
                      cols["correlation"], cols["external_id"], parent, launcher)


def frame_of(G_or_frame: TraceGraph | GraphFrame) -> GraphFrame:
    """Accept a graph or an already-built frame."""
    return G_or_frame if isinstance(G_or_frame, GraphFrame) else graph_frame(G_or_frame)
