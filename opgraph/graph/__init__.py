"""The typed DAG: build it from an event table, save and load it.

The names below are loaded on first use (``from opgraph.graph import build_graph``), so
importing one module of the package (``opgraph.graph.io`` to load a saved graph) does not
import the builder."""

from __future__ import annotations

from typing import Any

__all__ = ["build_graph", "EDGE_KINDS", "edge_kind_counts", "node_kind_counts", "graph_summary"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from opgraph.graph import build
        return getattr(build, name)
    raise AttributeError(f"module 'opgraph.graph' has no attribute {name!r}")
