"""``opgraph export --parquet DIR``: the graph's node and edge tables as Parquet files
(``nodes.parquet``, ``edges.parquet``) for DuckDB / pandas / Spark users
(opgraph/export/tables/graph.py)."""

from __future__ import annotations

from typing import Any


from opgraph.commands.exporters import exporter
from opgraph.model.trace_graph import TraceGraph


def _write(G: TraceGraph, path: str, opts: dict[str, Any]) -> str:
    from opgraph.export.tables.graph import graph_tables, write_tables

    paths = write_tables(graph_tables(G), path, "parquet", inputs=(str(opts.get("input") or ""),))
    return f"{path}: " + ", ".join(p.name for p in paths) + f" ({G.number_of_nodes()} nodes, {G.number_of_edges()} edges)"


#: ``--parquet DIR``.
PARQUET_EXPORTER = exporter("parquet", "--parquet", help="Folder for nodes.parquet and edges.parquet (needs pyarrow).",
                            run=_write, run_job=_write, metavar="DIR")
