"""The trace model: :class:`TraceGraph`, a graph held as the columns opgraph builds and
saves (docs/model.md), with ``networkx`` as a view made on request.

The builder (:func:`opgraph.graph.build.build_graph`) and every loader
(:func:`opgraph.graph.io.load_any`) return a :class:`TraceGraph`, and every analysis takes
one. A ``.gpickle`` written by opgraph holds exactly these columns (the column payload of
:mod:`opgraph.model.payload`); loading it makes no Python dict per node or edge.
:meth:`TraceGraph.to_networkx` makes the ``DiGraph`` (once, cached) for users and for the
code that walks nodes and edges one by one; :meth:`TraceGraph.of` takes an opgraph-built
``DiGraph`` back into columns.
"""

from __future__ import annotations

import sys
from functools import cached_property
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np
import pandas as pd

from opgraph.model.arrays import GraphArrays, key_positions
from opgraph.model.packed_args import LazyGraphAttrs, releasing, unpacker
from opgraph.model.payload import PICKLE_MAGIC, completed_payload, graph_to_payload, payload_to_digraph

if TYPE_CHECKING:
    import networkx as nx


def _networkx_reader(name: str) -> property:
    """A read-only attribute of :class:`TraceGraph` that is ``to_networkx().<name>`` (a view
    or a bound method of the ``DiGraph``)."""
    return property(lambda self: getattr(self.to_networkx(), name),
                    doc=f"``to_networkx().{name}`` (the networkx view is made on first use).")


class TraceGraph:
    """A trace graph in columns: node table, edge table, graph attributes.

    Attributes
    ----------
    graph : dict
        The graph attributes, as ``DiGraph.graph`` holds them: ``events`` (the canonical
        event table, args included), ``source``, ``trace_metadata``, ``span_ns`` (ns), ...
        Loaded from a ``.gpickle``, or built from a Kineto trace whose args the typed pass
        kept as raw JSON text, the table's ``args`` stay packed until ``events`` is first
        read (:class:`~opgraph.model.packed_args.LazyGraphAttrs`).
    payload : dict
        The column payload (:mod:`opgraph.model.payload`): node ids, node columns
        (``ts``/``dur`` int64 ns; ``kind``/``name``/``pid``/``tid`` as (distinct values,
        int32 codes)), edge ``src``/``dst`` node ids with their kinds as (distinct kinds,
        codes), and the attributes of the edges that carry more than a kind.

    Derived structure is computed once and cached on the object: :attr:`arrays` (the
    analyses' columns, lanes included), :meth:`to_networkx`, :meth:`node_frame`.

    Pickled, it becomes the ``DiGraph`` it stands for (the reducer is registered by
    :mod:`opgraph.graph.io`, which holds the function the ``.gpickle`` format names).
    """

    def __init__(self, payload: dict[str, Any], args_source: tuple[str, int] | None = None):
        """``args_source``: (file, size in bytes) of the saved graph a packed args column
        came from (:mod:`opgraph.model.packed_args`), named if unpacking it fails."""
        if not isinstance(payload, dict) or payload.get("magic") != PICKLE_MAGIC:
            raise ValueError("not an opgraph column payload")
        if not isinstance(payload["graph"], LazyGraphAttrs):
            path, size = args_source if args_source is not None else ("<graph>", None)
            unpack = unpacker(payload, path, size)
            if unpack is not None:
                payload["graph"] = LazyGraphAttrs(payload["graph"], releasing(payload, unpack))
        self.payload = payload
        self.graph: dict[str, Any] = payload["graph"]
        self._nx: nx.DiGraph | None = None
        self._args_col: tuple[Any, np.ndarray | None] | None = None

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_networkx(cls, G: nx.DiGraph) -> "TraceGraph":
        """The columns of a ``DiGraph``: one opgraph built (which stays the networkx view), or
        one made by hand with docs/model.md's node attributes (``kind``, ``ts``, ``dur``
        required; :func:`~opgraph.model.payload.completed_payload`). ``ValueError`` for any
        other graph."""
        payload = graph_to_payload(G)
        if payload is None:
            try:
                return cls(completed_payload(G))
            except (KeyError, TypeError, ValueError, OverflowError) as e:
                raise ValueError(f"not in the shape opgraph builds: {e}") from None
        tg = cls(payload)
        tg._nx = G
        return tg

    @classmethod
    def of(cls, G: "TraceGraph | nx.DiGraph") -> "TraceGraph":
        """``G`` itself when it is a :class:`TraceGraph`; the columns of an opgraph-built
        ``networkx.DiGraph`` (:meth:`from_networkx`, which keeps ``G`` as the networkx
        view) otherwise. ``TypeError`` for anything else."""
        if isinstance(G, TraceGraph):
            return G
        nx = sys.modules.get("networkx")   # a DiGraph exists only once networkx is imported
        if nx is not None and isinstance(G, nx.DiGraph):
            return cls.from_networkx(G)
        raise TypeError(f"expected a TraceGraph or an opgraph-built networkx.DiGraph, got {type(G).__name__}")

    def to_networkx(self) -> nx.DiGraph:
        """The ``networkx.DiGraph`` of this graph (made on first call, then cached): node
        ids are event ids with attributes ``kind``, ``name``, ``ts``/``dur`` (ns), ``pid``,
        ``tid``, ``device``, ``stream``, ``correlation``, ``external_id``, ``args``; edges
        carry ``kind``."""
        if self._nx is None:
            self._nx = payload_to_digraph(self.payload)
        return self._nx

    def event_args(self) -> np.ndarray | None:
        """The event table's ``args`` column as an object array (row = event id; None when
        the table has none). Made once per event table: repeated per-node reads stay cheap."""
        ev = self.graph.get("events")
        got = self._args_col
        if got is None or got[0] is not ev:
            col = ev["args"].to_numpy(dtype=object) if isinstance(ev, pd.DataFrame) and "args" in ev else None
            got = self._args_col = (ev, col)
        return got[1]

    def node_args(self, eids: np.ndarray | list[int]) -> list[Any]:
        """The ``args`` of nodes ``eids`` (event ids) as stored: a dict, or None when absent.
        They live in the event table (a node's args are its event's); reading them unpacks
        a saved graph's packed args."""
        ids = np.asarray(eids, dtype=np.int64)
        col = self.event_args()
        return [None] * len(ids) if col is None else col[ids].tolist()

    def edge_kinds_between(self, us: Sequence[int], vs: Sequence[int]) -> list[str | None]:
        """The kind of edge ``us[i] -> vs[i]`` (node ids) for every i, None where there is
        no such edge: every pair looked up at once in the sorted edge keys
        (:attr:`edge_index`), no networkx view made."""
        keys, kinds = self.edge_index
        if not len(us) or not len(keys):
            return [None] * len(us)
        a = self.arrays
        pu = key_positions(a.eid, np.asarray(us, dtype=np.int64))
        pv = key_positions(a.eid, np.asarray(vs, dtype=np.int64))
        q = pu * max(a.n, 1) + pv
        at = np.minimum(np.searchsorted(keys, q), len(keys) - 1)
        hit = (pu >= 0) & (pv >= 0) & (keys[at] == q)
        return [kinds[j] if h else None for j, h in zip(at.tolist(), hit.tolist())]

    # ------------------------------------------------------------------ networkx, read-only
    # The reading calls notebooks make on a graph, answered by the networkx view (made on
    # first use, then cached; :func:`_networkx_reader`). opgraph's own code reads columns.
    nodes = _networkx_reader("nodes")
    edges = _networkx_reader("edges")
    in_edges = _networkx_reader("in_edges")
    out_edges = _networkx_reader("out_edges")
    in_degree = _networkx_reader("in_degree")
    out_degree = _networkx_reader("out_degree")
    successors = _networkx_reader("successors")
    predecessors = _networkx_reader("predecessors")
    has_edge = _networkx_reader("has_edge")
    has_node = _networkx_reader("has_node")

    def __contains__(self, n: object) -> bool:
        return n in self.to_networkx()

    def __iter__(self) -> Any:
        return iter(self.to_networkx())

    # ------------------------------------------------------------------ size
    def number_of_nodes(self) -> int:
        return int(len(self.payload["nodes"]))

    def number_of_edges(self) -> int:
        return int(len(self.payload["src"]))

    def __len__(self) -> int:
        return self.number_of_nodes()

    def __repr__(self) -> str:
        return f"<TraceGraph: {self.number_of_nodes():,} nodes, {self.number_of_edges():,} edges>"

    # ------------------------------------------------------------------ columns
    def column(self, key: str) -> np.ndarray:
        """Node column ``key`` (one entry per node, in node order): ``ts``/``dur``/``device``/
        ``stream``/``correlation``/``external_id``/``rank`` as int64 (ns for times),
        ``kind``/``name``/``pid``/``tid`` as object arrays."""
        col = self.payload["node_cols"][key]
        if isinstance(col, tuple):
            uniq, codes = col
            return uniq[codes]
        return col

    @property
    def node_ids(self) -> np.ndarray:
        """Node ids (event ids, int64) in node order."""
        return self.payload["nodes"]

    def edge_kinds(self) -> np.ndarray:
        """Kind of every edge (object array, aligned with ``payload['src']``/``['dst']``)."""
        uniq, codes = self.payload["edge_kind"]
        return uniq[codes]

    def edge_order(self) -> np.ndarray | None:
        """The order in which the ``DiGraph`` view iterates the payload's edges (by source
        node in node order, then as inserted), or None when that is the payload's order."""
        src = self.payload["src"]
        if not len(src):
            return None
        order = np.argsort(key_positions(self.payload["nodes"], src), kind="stable")
        return None if (order == np.arange(len(order))).all() else order

    @cached_property
    def arrays(self) -> GraphArrays:
        """The analyses' columns (:class:`~opgraph.model.arrays.GraphArrays`), made from the
        columns directly (no per-node dict is made)."""
        p = self.payload
        cols = p["node_cols"]
        src, dst = p["src"], p["dst"]
        ek_uniq, ek_codes = p["edge_kind"]
        extra: dict[int, dict] = p["edge_extra"]
        order = self.edge_order()
        rich_idx = np.fromiter(extra.keys(), dtype=np.int64, count=len(extra))
        rich_ds = list(extra.values())
        if order is not None:
            src, dst, ek_codes = src[order], dst[order], ek_codes[order]
            if len(rich_idx):
                inv = np.empty(len(order), dtype=np.int64)
                inv[order] = np.arange(len(order))
                rich_idx = inv[rich_idx]
        by_idx = np.argsort(rich_idx, kind="stable")
        rich = (rich_idx[by_idx], [rich_ds[i] for i in by_idx.tolist()])
        return GraphArrays.from_columns(
            p["nodes"], self._coded("kind"), self._coded("name"), cols["ts"], cols["dur"], self._coded("pid"),
            self._coded("tid"), cols["device"], cols["stream"], cols.get("rank"), src, dst, (ek_uniq, ek_codes),
            rich)

    def _coded(self, key: str) -> tuple[np.ndarray, np.ndarray]:
        """Node column ``key`` as (distinct values, codes)."""
        col = self.payload["node_cols"][key]
        if isinstance(col, tuple):
            return col
        codes, uniq = pd.factorize(col, use_na_sentinel=False)
        return np.asarray(uniq, dtype=object), codes

    @cached_property
    def edge_index(self) -> tuple[np.ndarray, list[str]]:
        """Every edge as one sorted int64 key ``src position * n + dst position`` (node
        positions of :attr:`arrays`) with the kinds in the same order: a vectorised lookup
        of edges by their ends (:func:`edge_kinds_between`)."""
        a = self.arrays
        n = max(a.n, 1)
        parts = [(s * n + d, k) for k, (s, d) in a.edges.items()]
        if not parts:
            return np.empty(0, np.int64), []
        keys = np.concatenate([p for p, _ in parts])
        kinds = np.concatenate([np.full(len(p), k, dtype=object) for p, k in parts])
        order = np.argsort(keys, kind="stable")
        return keys[order], kinds[order].tolist()

    def node_frame(self) -> pd.DataFrame:
        """One row per node: ``eid`` and the node columns (times in ns)."""
        data: dict[str, Any] = {"eid": self.node_ids}
        for k in self.payload["node_cols"]:
            data[k] = self.column(k)
        return pd.DataFrame(data)

    def edge_frame(self) -> pd.DataFrame:
        """One row per edge: ``src``, ``dst`` (event ids) and ``kind``."""
        return pd.DataFrame({"src": self.payload["src"], "dst": self.payload["dst"], "kind": self.edge_kinds()})


__all__ = ["TraceGraph"]
