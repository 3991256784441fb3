"""The package version and the saved-graph schema version: one place each, at the bottom
of the layers so every layer may read them (``opgraph.__version__`` re-exports both)."""

__version__ = "0.1.0"

#: Version of the saved-graph layout (``G.graph["schema_version"]``; schemas/graph.schema.json).
GRAPH_SCHEMA_VERSION = 1
