"""opgraph: profiler traces as a typed NetworkX DAG.

The public API (``import opgraph``; docs/api.md):

>>> import opgraph
>>> G = opgraph.load(opgraph.example_trace("gpu_bound"))
>>> opgraph.critical_path(G).to_frame("breakdown")["bound"].iloc[0]
'gpu_compute'

Layers (one direction of flow): ``model`` (the event table, ``TraceGraph`` in columns and
its derived structure), ``ingest`` (readers -> the model's event table), ``graph`` (table ->
typed DAG, a ``TraceGraph``; save/load), ``analysis`` (graph ->
dataclasses/DataFrames), ``export`` (graph + results -> Perfetto/DOT/HTML/JSON),
``commands``/``cli`` (thin click commands) and ``api`` (these functions). The names below
are loaded on first use, so ``import opgraph`` stays cheap.
"""

from __future__ import annotations

from typing import Any

from opgraph.catalog.entries import api_names
from opgraph.version import GRAPH_SCHEMA_VERSION, __version__

#: The public functions and classes, all defined in :mod:`opgraph.api`: these, and one
#: function per analysis of the catalog (opgraph/catalog/entries.py).
__all__ = [
    "Report", "load", "build", "save", "example_trace", "roofline", "busy_windows",
    "export_perfetto", "export_graphviz", "report_html", "plot", "graph_tables", "export_tables", "TraceGraph",
    *api_names(),
    "OpgraphInputError",
    "__version__", "GRAPH_SCHEMA_VERSION",
]


def __getattr__(name: str) -> Any:
    if name == "OpgraphInputError":
        from opgraph.errors import OpgraphInputError
        return OpgraphInputError
    if name in __all__:
        from opgraph import api
        return getattr(api, name)
    raise AttributeError(f"module 'opgraph' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
