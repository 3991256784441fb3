"""The graph as two tables, for SQL and dataframe users: ``nodes`` (one row per node: its
id and every attribute; ``ts_ns``/``dur_ns`` in ns; ``args`` as JSON text) and ``edges``
(``src``, ``dst``, ``kind`` and every edge attribute; dict/list values as JSON text).
Written as Parquet (``opgraph export --parquet DIR``; the optional ``parquet`` extra) or
CSV, so DuckDB, pandas or Spark can query the graph::

    SELECT n.name, count(*) FROM 'edges.parquet' e JOIN 'nodes.parquet' n ON n.id = e.src
    WHERE e.kind = 'launch' GROUP BY 1 ORDER BY 2 DESC
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from opgraph.export.tables.documents import json_text, write_csv, write_parquet
from opgraph.model.trace_graph import TraceGraph
from opgraph.model.payload import NODE_KEYS

#: Node columns in this order first; any other attribute follows.
NODE_COLUMNS = ("id", "kind", "name", "ts_ns", "dur_ns", "pid", "tid", "device", "stream", "correlation",
                "external_id", "rank")


def _column(values: list[Any]) -> pd.Series:
    """One typed column: int64 / Int64 / boolean / Float64 where every value allows it,
    JSON text for containers, else text."""
    first = next((v for v in values if v is not None), None)
    if type(first) is int or isinstance(first, np.integer):
        try:
            return pd.Series(np.array(values, dtype=np.int64))  # no None, all integers
        except (TypeError, ValueError, OverflowError):
            pass
    if type(first) is str:
        if all(type(v) is str for v in values):
            return pd.Series(values, dtype=object)
    s = pd.Series([json_text(v) for v in values], dtype=object)
    nonnull = s.dropna()
    if len(nonnull) and all(isinstance(v, bool) for v in nonnull):
        return s.astype("boolean")
    if len(nonnull) and all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in nonnull):
        return s.astype("Int64")
    if len(nonnull) and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in nonnull):
        return s.astype("Float64")
    return s.map(lambda v: v if v is None or isinstance(v, str) else str(v)).astype(object)


def _columns_tables(T: TraceGraph) -> dict[str, pd.DataFrame]:
    """:func:`graph_tables` of a :class:`~opgraph.model.trace_graph.TraceGraph`, from its columns
    (the same tables as from its networkx view, without making it)."""
    p = T.payload
    keys = [k for k in NODE_KEYS if k != "args"] + ["args"] + [k for k in p["node_cols"] if k not in NODE_KEYS]
    cols: dict[str, pd.Series] = {"id": pd.Series(T.node_ids, dtype="int64")}
    rename = {"ts": "ts_ns", "dur": "dur_ns"}
    for k in keys:
        if k == "args":
            vals = T.node_args(T.node_ids)
        else:
            col = T.column(k)
            if col.dtype == np.int64:
                cols[rename.get(k, k)] = pd.Series(col)
                continue
            vals = col.tolist()
        cols[rename.get(k, k)] = _column(vals)
    order = [c for c in NODE_COLUMNS if c in cols] + [c for c in cols if c not in NODE_COLUMNS]
    node_df = pd.DataFrame({c: cols[c] for c in order})
    src, dst, kind = p["src"], p["dst"], T.edge_kinds()
    extra: dict[int, dict[str, Any]] = p["edge_extra"]
    eo = T.edge_order()
    if eo is not None:
        src, dst, kind = src[eo], dst[eo], kind[eo]
        inv = np.empty(len(eo), dtype=np.int64)
        inv[eo] = np.arange(len(eo))
        extra = {int(inv[j]): d for j, d in extra.items()}
    rich = sorted(extra.items())
    ekeys: dict[str, None] = {}
    for _, d in rich:
        for k in d:
            ekeys.setdefault(k, None)
    ecols: dict[str, pd.Series] = {"src": pd.Series(src, dtype="int64"), "dst": pd.Series(dst, dtype="int64"),
                                   "kind": _column(kind.tolist())}
    for k in ekeys:
        vals: list[Any] = [None] * len(src)
        for j, d in rich:
            if k in d:
                vals[j] = d[k]
        ecols[k] = _column(vals)
    return {"nodes": node_df, "edges": pd.DataFrame(ecols)}


def graph_tables(G: TraceGraph) -> dict[str, pd.DataFrame]:
    """``{"nodes": ..., "edges": ...}`` of ``G`` (module docstring), from its columns."""
    return _columns_tables(G)


def write_tables(tables: dict[str, pd.DataFrame], directory: str | Path, fmt: str = "parquet",
                 inputs: tuple[str, ...] = ()) -> list[Path]:
    """Write each table to ``directory/<name>.<fmt>`` (``parquet`` or ``csv``) through the
    table writers of :mod:`opgraph.export.tables.documents` (each file whole or not at all); returns
    the paths. Parquet needs pyarrow (``pip install 'opgraph[parquet]'``)."""
    if fmt == "parquet":
        return write_parquet(tables, directory, "", inputs)
    if fmt == "csv":
        return write_csv(tables, directory, "", inputs)
    raise ValueError(f"unknown table format {fmt!r}: parquet or csv")
