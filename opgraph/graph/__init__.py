"""The typed DAG: build it from an event table, save and load it."""

from opgraph.graph.build import EDGE_KINDS, build_graph, edge_kind_counts, graph_summary, node_kind_counts

__all__ = ["build_graph", "EDGE_KINDS", "edge_kind_counts", "node_kind_counts", "graph_summary"]
