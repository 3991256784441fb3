"""Node-link JSON (``.json`` / ``.json.gz``, ``schemas/opgraph-graph.schema.json``): a
graph to and from its document (:func:`to_node_link`, :func:`from_node_link`), the event
table as columns, a job graph's tables as column dicts, and :func:`save_node_link`.
Times stay integers in ns. Reading a document from a file (with schema validation) is
:func:`opgraph.graph.io.read_input`'s.
"""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import orjson
import pandas as pd

from opgraph.exact_json import ExactNumber, exact_default
from opgraph.model.table import ALL_KINDS
from opgraph.outfiles import write_atomic

if TYPE_CHECKING:
    import networkx as nx

#: Integer columns of the event table (restored as int64 when read).
EVENT_INT_COLS = ("eid", "ts_ns", "dur_ns", "device", "stream", "correlation", "external_id", "rf_id",
                  "flow_id", "rank")


def events_to_columns(ev: pd.DataFrame) -> dict[str, list]:
    """The canonical table as JSON-ready columns (lists)."""
    out: dict[str, list] = {}
    for c in ev.columns:
        s = ev[c]
        if isinstance(s.dtype, pd.CategoricalDtype):
            out[c] = [None if pd.isna(v) else v for v in s.astype(object).tolist()]
        else:
            out[c] = s.tolist()
    return out


def events_from_columns(cols: dict[str, list]) -> pd.DataFrame:
    """Inverse of :func:`events_to_columns` (restores dtypes)."""
    data: dict[str, Any] = {}
    for c, vals in cols.items():
        if c in EVENT_INT_COLS:
            data[c] = np.array(vals, dtype=np.int64)
        elif c == "kind":
            unknown = set(vals) - set(ALL_KINDS) - {None}
            if unknown:
                raise ValueError(f"unknown event kind(s) {sorted(map(str, unknown))[:3]} in column 'kind'")
            data[c] = pd.Categorical(vals, categories=list(ALL_KINDS))
        elif c in ("cat", "ph", "name", "pid", "tid", "bp"):
            arr = np.array(vals, dtype=object)
            codes, uniques = pd.factorize(arr)
            data[c] = pd.Categorical.from_codes(codes, categories=pd.Index(uniques, dtype=object))
        elif c == "has_ts":
            data[c] = np.array(vals, dtype=bool)
        else:
            data[c] = np.array(vals, dtype=object) if vals else np.array([], dtype=object)
    return pd.DataFrame(data)


def _frame_to_json(df: pd.DataFrame) -> dict[str, Any]:
    return {"columns": {c: df[c].tolist() for c in df.columns},
            "dtypes": {c: str(df[c].dtype) for c in df.columns}}


def _frame_from_json(doc: dict[str, Any]) -> pd.DataFrame:
    cols, dtypes = doc.get("columns", {}), doc.get("dtypes", {})
    return pd.DataFrame({c: pd.Series(v, dtype=dtypes.get(c) if dtypes.get(c) != "object" else object)
                         for c, v in cols.items()})


def job_to_json(job: dict[str, Any]) -> dict[str, Any]:
    """``G.graph["job"]`` of a multi-rank graph with its DataFrames as column dicts."""
    return {k: (_frame_to_json(v) if isinstance(v, pd.DataFrame) else v) for k, v in job.items()}


def job_from_json(doc: dict[str, Any]) -> dict[str, Any]:
    """Inverse of :func:`job_to_json` (also restores integer rank keys of the alignment)."""
    job = {k: (_frame_from_json(v) if k in ("collectives", "steps") and isinstance(v, dict) else v)
           for k, v in doc.items()}
    al = job.get("alignment")
    if isinstance(al, dict):
        for k in ("offsets_ns", "residual_ns"):
            if isinstance(al.get(k), dict):
                al[k] = {int(r): v for r, v in al[k].items()}
    for row in job.get("ranks", []):
        g = row.get("graph")
        if isinstance(g, dict) and "span_ns" in g:
            g["span_ns"] = tuple(g["span_ns"])
    return job


def to_node_link(G: nx.DiGraph) -> dict[str, Any]:
    """Node-link document (``schemas/opgraph-graph.schema.json``)."""
    graph = {k: v for k, v in G.graph.items() if k != "events"}
    if isinstance(graph.get("job"), dict):
        graph["job"] = job_to_json(graph["job"])
    if "span_ns" in graph:
        graph["span_ns"] = list(graph["span_ns"])
    doc: dict[str, Any] = {
        "directed": True, "multigraph": False, "graph": graph,
        "nodes": [{"id": n, **d} for n, d in G.nodes(data=True)],
        "edges": [{"source": u, "target": v, **d} for u, v, d in G.edges(data=True)],
    }
    ev = G.graph.get("events")
    if isinstance(ev, pd.DataFrame):
        doc["events"] = events_to_columns(ev)
    return doc


def from_node_link(doc: dict[str, Any]) -> nx.DiGraph:
    """Inverse of :func:`to_node_link`."""
    import networkx as nx

    G = nx.DiGraph()
    G.graph.update(doc.get("graph", {}))
    if "span_ns" in G.graph:
        G.graph["span_ns"] = tuple(G.graph["span_ns"])
    if isinstance(G.graph.get("job"), dict):
        G.graph["job"] = job_from_json(G.graph["job"])
    ev = events_from_columns(doc["events"]) if "events" in doc else None
    if ev is not None:
        G.graph["events"] = ev
    G.add_nodes_from((d["id"], {k: v for k, v in d.items() if k != "id"}) for d in doc["nodes"])
    if ev is not None:  # share args objects with the table, as a fresh build does
        args = ev["args"].to_numpy(dtype=object)
        for n, d in G._node.items():
            if "args" in d and 0 <= n < len(args):
                d["args"] = args[n]
    G.add_edges_from((d["source"], d["target"], {k: v for k, v in d.items() if k not in ("source", "target")})
                     for d in doc["edges"])
    return G


def json_default(o: Any) -> Any:
    """JSON for the numpy scalars and arrays a node-link document may hold, and args
    integers beyond 64 bits as the trace wrote them (orjson ``default``)."""
    if isinstance(o, ExactNumber):
        return exact_default(o)
    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, (set, frozenset, tuple)):
        return list(o)
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def save_node_link(G: nx.DiGraph, path: str | Path, inputs: tuple = ()) -> None:
    """Write node-link JSON, gzip-compressed when the name ends in ``.gz``, atomically
    (:func:`opgraph.outfiles.write_atomic`); ``inputs`` are files it must not overwrite."""
    data = orjson.dumps(to_node_link(G), default=json_default,
                        option=orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY)
    if str(path).endswith(".gz"):
        data = gzip.compress(data, compresslevel=6)
    write_atomic(path, data, inputs)



__all__ = ["EVENT_INT_COLS", "events_to_columns", "events_from_columns", "job_to_json", "job_from_json",
           "to_node_link", "from_node_link", "json_default", "save_node_link"]
