"""opgraph: profiler traces as a typed NetworkX DAG.

Layers (one direction of flow): ``ingest`` (readers -> canonical event table),
``graph`` (table -> typed ``networkx.DiGraph``; save/load), ``analysis`` (graph ->
dataclasses/DataFrames), ``export`` (graph + results -> Perfetto/DOT/HTML/JSON) and
``cli`` (thin click commands).
"""

__version__ = "0.1.0"
GRAPH_SCHEMA_VERSION = 1
