"""The column view of a trace the roofline analysis works on (:class:`TraceColumns`):
node arrays by position (times in ns) plus the host ``nest`` parent of each node and the
``launch`` edges, made from a built graph, from its column payload, or straight from a
reader's event table (:mod:`~opgraph.analysis.roofline.table_links`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Mapping

import numpy as np

from opgraph.analysis.roofline.objects import isin_obj
from opgraph.analysis.roofline.table_links import nest_and_launch_links
from opgraph.model.trace_graph import TraceGraph
from opgraph.model.table import HOST_KINDS


@dataclass
class TraceColumns:
    """The nodes of a graph as arrays indexed by position, plus the two edge kinds the
    attribution needs: ``parent`` (host ``nest`` parent position, -1 at roots) and
    ``launch_src -> launch_dst`` (runtime call -> device activity positions).

    ``ts`` and ``dur`` are ns; ``device`` and ``external_id`` are ints (-1: none);
    ``args`` holds each node's recorded args dict (or None); ``graph`` the graph
    attributes (source, ``device_properties``, ``distributed_info``, ``events`` ...)."""

    eid: np.ndarray
    kind: np.ndarray
    name: np.ndarray
    ts: np.ndarray
    dur: np.ndarray
    device: np.ndarray
    external_id: np.ndarray
    args: np.ndarray
    parent: np.ndarray
    launch_src: np.ndarray
    launch_dst: np.ndarray
    graph: Mapping[str, Any] = field(default_factory=dict)

    @property
    def n(self) -> int:
        return len(self.eid)

    @cached_property
    def is_cpu_op(self) -> np.ndarray:
        """Per position: the node is a ``cpu_op`` (computed once)."""
        return self.kind == "cpu_op"

    @classmethod
    def from_trace_graph(cls, T: TraceGraph) -> "TraceColumns":
        """From a :class:`~opgraph.model.trace_graph.TraceGraph` (its cached arrays; each node's
        args are its event's)."""
        a = T.arrays
        ev = T.graph.get("events")
        n = a.n
        args = ev["args"].to_numpy(dtype=object)[a.eid] if ev is not None and n else np.full(n, None, dtype=object)
        ls, ld = a.out_edges("launch")
        return cls(a.eid, a.kind, a.name, a.ts, a.end - a.ts, a.device, T.payload["node_cols"]["external_id"], args,
                   a.host_parent, ls, ld, T.graph)

    @classmethod
    def from_payload(cls, payload: Mapping[str, Any]) -> "TraceColumns":
        """From the column form of :func:`opgraph.graph.build.build_payload` (no DiGraph)."""
        nodes = np.asarray(payload["nodes"], dtype=np.int64)
        cols = payload["node_cols"]
        ku, kc = cols["kind"]
        nu, nc = cols["name"]
        graph = payload["graph"]
        ev = graph.get("events")
        n = len(nodes)
        args = ev["args"].to_numpy(dtype=object)[nodes] if ev is not None else np.full(n, None, dtype=object)
        eu, ec = payload["edge_kind"]
        src = np.asarray(payload["src"], dtype=np.int64)
        dst = np.asarray(payload["dst"], dtype=np.int64)
        lut = np.full(int(nodes.max()) + 1 if n else 1, -1, dtype=np.int64)
        lut[nodes] = np.arange(n)
        eu = list(eu)

        def sel(k: str) -> tuple[np.ndarray, np.ndarray]:
            if k not in eu:
                return np.empty(0, np.int64), np.empty(0, np.int64)
            m = ec == eu.index(k)
            return lut[src[m]], lut[dst[m]]

        ps, pd_ = sel("nest")
        ls, ld = sel("launch")
        return cls.from_edges(nodes, np.asarray(ku, dtype=object)[kc], np.asarray(nu, dtype=object)[nc],
                              np.asarray(cols["ts"], np.int64), np.asarray(cols["dur"], np.int64),
                              np.asarray(cols["device"], np.int64), np.asarray(cols["external_id"], np.int64),
                              args, ps, pd_, ls, ld, graph)

    @classmethod
    def from_table(cls, table: Any) -> "TraceColumns":
        """Straight from a reader's :class:`~opgraph.model.table.EventTable`, computing only
        the two edge kinds the attribution needs with the graph builder's own steps
        (:func:`~opgraph.analysis.roofline.table_links.nest_and_launch_links`). Same nodes,
        parents and launches as the built graph; used by ``opgraph augment`` to skip
        building every other edge kind."""
        ev = table.events
        links = nest_and_launch_links(ev)
        eid = ev["eid"].to_numpy()
        idx = np.flatnonzero(links.is_node)
        lut = np.full(len(ev), -1, dtype=np.int64)
        lut[idx] = np.arange(len(idx))
        meta = table.meta
        graph = {"source": {"format": meta.get("format"), "file": meta.get("file"), "sha256": meta.get("sha256")},
                 "device_properties": meta.get("device_properties", []),
                 "distributed_info": meta.get("distributed_info", {}),
                 "trace_metadata": meta.get("trace_metadata", {}), "events": ev}
        return cls.from_edges(eid[idx], links.kind[idx], ev["name"].to_numpy(dtype=object)[idx],
                              ev["ts_ns"].to_numpy()[idx], ev["dur_ns"].to_numpy()[idx],
                              ev["device"].to_numpy()[idx], ev["external_id"].to_numpy()[idx],
                              ev["args"].to_numpy(dtype=object)[idx], lut[links.nest.src], lut[links.nest.dst],
                              lut[links.launch.src], lut[links.launch.dst], graph)

    @classmethod
    def from_edges(cls, eid: np.ndarray, kind: np.ndarray, name: np.ndarray, ts: np.ndarray, dur: np.ndarray,
                   device: np.ndarray, ext: np.ndarray, args: np.ndarray, ps: np.ndarray, pd_: np.ndarray,
                   ls: np.ndarray, ld: np.ndarray, graph: Mapping[str, Any]) -> "TraceColumns":
        """From node arrays and edge positions: ``ps -> pd_`` the ``nest`` edges (only
        host-to-host ones become ``parent``), ``ls -> ld`` the ``launch`` edges."""
        n = len(eid)
        is_host = isin_obj(kind, HOST_KINDS)
        parent = np.full(n, -1, dtype=np.int64)
        if len(ps):
            m = is_host[ps] & is_host[pd_]
            parent[pd_[m]] = ps[m]
        return cls(eid, kind, name, ts, dur, device, ext, args, parent, ls, ld, graph)


def columns_of(source: "TraceGraph | TraceColumns | Mapping[str, Any]") -> TraceColumns:
    """:class:`TraceColumns` of a graph, of a build payload, or ``source`` itself."""
    if isinstance(source, TraceColumns):
        return source
    if isinstance(source, TraceGraph):
        return TraceColumns.from_trace_graph(source)
    return TraceColumns.from_payload(source)
