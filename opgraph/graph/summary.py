"""Counts and metadata of a built graph: nodes and edges by kind, the content of
``opgraph info``."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pandas as pd

from opgraph.model.trace_graph import TraceGraph


def edge_kind_counts(G: TraceGraph) -> Counter:
    """Number of edges of each kind."""
    return Counter(G.edge_kinds().tolist())


def node_kind_counts(G: TraceGraph) -> Counter:
    """Number of nodes of each kind."""
    return Counter(G.column("kind").tolist())


def graph_summary(G: TraceGraph) -> dict[str, Any]:
    """Counts and metadata of a built graph (the content of ``opgraph info``)."""
    ev: pd.DataFrame = G.graph.get("events")
    nodes = node_kind_counts(G)
    summary: dict[str, Any] = {
        "source": G.graph.get("source", {}),
        "events": int(len(ev)) if ev is not None else None,
        "events_by_kind": {str(k): int(v) for k, v in ev["kind"].value_counts().items() if v} if ev is not None else {},
        "nodes": G.number_of_nodes(),
        "nodes_by_kind": dict(sorted(nodes.items())),
        "edges": G.number_of_edges(),
        "edges_by_kind": dict(sorted(edge_kind_counts(G).items())),
    }
    return summary


__all__ = ["edge_kind_counts", "node_kind_counts", "graph_summary"]
