"""Saving and loading graphs: ``.gpickle`` (safe, allow-listed unpickling) and node-link
``.json.gz`` / ``.json`` (validated by ``schemas/opgraph-graph.schema.json``).

The pickle is a pickle of the ``networkx.DiGraph``. A graph built by opgraph is reduced
to columns (numpy arrays) instead of millions of small dicts, which makes saving and
loading several times faster; any other graph pickles the ordinary way. Loading goes
through :class:`SafeUnpickler`, which refuses every global outside a fixed allow-list, so
a hostile file cannot run code.
"""

from __future__ import annotations

import gzip
import io
import pickle
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np
import orjson
import pandas as pd

from opgraph.errors import OpgraphInputError
from opgraph.ingest.table import ALL_KINDS
from opgraph.outfiles import open_atomic, write_atomic

GRAPH_SUFFIXES = (".gpickle", ".json.gz", ".json")
_NODE_KEYS = ("kind", "name", "ts", "dur", "pid", "tid", "device", "stream", "correlation",
              "external_id", "args")  # + "rank" on every node of a multi-rank job graph
PICKLE_MAGIC = "opgraph-columns-v1"


# --------------------------------------------------------------------------- pickle
def graph_from_payload(payload: dict) -> nx.DiGraph:
    """A ``DiGraph`` from its column form (see :func:`opgraph.graph.build.build_payload`)."""
    return _rebuild_digraph(payload)


class GraphPayload:
    """A graph in column form that pickles exactly as the ``DiGraph`` it stands for."""

    def __init__(self, payload: dict):
        self.payload = payload

    def __reduce__(self):
        return _rebuild_digraph, (self.payload,)


def _rebuild_digraph(payload: dict) -> nx.DiGraph:
    """Inverse of :func:`_reduce_digraph` (allow-listed for unpickling)."""
    if payload.get("magic") != PICKLE_MAGIC:
        raise ValueError("not an opgraph column payload")
    G = nx.DiGraph()
    G.graph.update(payload["graph"])
    ids = payload["nodes"].tolist()
    cols = payload["node_cols"]
    ev = G.graph.get("events")
    args = ev["args"].to_numpy(dtype=object)[payload["nodes"]].tolist() if ev is not None else [None] * len(ids)
    kind_u, kind_c = cols["kind"]
    name_u, name_c = cols["name"]
    pid_u, pid_c = cols["pid"]
    tid_u, tid_c = cols["tid"]
    kinds = kind_u[kind_c].tolist()
    names = name_u[name_c].tolist()
    pids = pid_u[pid_c].tolist()
    tids = tid_u[tid_c].tolist()
    if "rank" in cols:  # a multi-rank job graph (docs/multirank.md): every node has its rank
        G._node.update(zip(ids, [
            {"kind": k, "name": n, "ts": t, "dur": d, "pid": p, "tid": ti, "device": dv, "stream": st,
             "correlation": c, "external_id": x, "args": a, "rank": r}
            for k, n, t, d, p, ti, dv, st, c, x, a, r in zip(
                kinds, names, cols["ts"].tolist(), cols["dur"].tolist(), pids, tids, cols["device"].tolist(),
                cols["stream"].tolist(), cols["correlation"].tolist(), cols["external_id"].tolist(), args,
                cols["rank"].tolist())]))
    else:
        G._node.update(zip(ids, [
            {"kind": k, "name": n, "ts": t, "dur": d, "pid": p, "tid": ti, "device": dv, "stream": st,
             "correlation": c, "external_id": x, "args": a}
            for k, n, t, d, p, ti, dv, st, c, x, a in zip(
                kinds, names, cols["ts"].tolist(), cols["dur"].tolist(), pids, tids, cols["device"].tolist(),
                cols["stream"].tolist(), cols["correlation"].tolist(), cols["external_id"].tolist(), args)]))
    G._succ.update({n: {} for n in ids})
    G._pred.update({n: {} for n in ids})
    succ, pred = G._succ, G._pred
    ekinds_u, ekinds_c = payload["edge_kind"]
    src = payload["src"].tolist()
    dst = payload["dst"].tolist()
    ek = ekinds_u[ekinds_c].tolist()
    extra = payload["edge_extra"]  # {position: {attr: value}}
    for j, (u, v, k) in enumerate(zip(src, dst, ek)):
        d = {"kind": k}
        succ[u][v] = d
        pred[v][u] = d
    for j, attrs in extra.items():
        succ[src[j]][dst[j]].update(attrs)
    return G


def _factorize(values: list) -> tuple[np.ndarray, np.ndarray]:
    codes, uniques = pd.factorize(pd.Series(values, dtype=object), use_na_sentinel=False)
    return np.asarray(uniques, dtype=object), codes.astype(np.int32)


def _columnar(G: nx.DiGraph) -> dict | None:
    """Column payload of an opgraph-built graph, or None when the graph has other shapes
    (then it pickles the ordinary way)."""
    ev = G.graph.get("events")
    if not isinstance(ev, pd.DataFrame) or "args" not in ev:
        return None
    nodes = list(G._node)
    attrs = list(G._node.values())
    if not all(type(n) is int for n in nodes):
        return None
    has_rank = bool(attrs) and "rank" in attrs[0]
    n_keys = len(_NODE_KEYS) + (1 if has_rank else 0)
    if any(len(d) != n_keys for d in attrs):
        return None
    try:
        node_arr = np.array(nodes, dtype=np.int64)
        args_col = ev["args"].to_numpy(dtype=object)[node_arr]
        if not all(d["args"] is a for d, a in zip(attrs, args_col)):
            return None
        cols: dict[str, Any] = {}
        for k in ("ts", "dur", "device", "stream", "correlation", "external_id") + (("rank",) if has_rank else ()):
            cols[k] = np.array([d[k] for d in attrs], dtype=np.int64)
        for k in ("kind", "name", "pid", "tid"):
            cols[k] = _factorize([d[k] for d in attrs])
    except (KeyError, TypeError, ValueError, OverflowError, IndexError):
        return None
    succ = G._succ
    src = [u for u, nbrs in succ.items() for _v in nbrs]
    dst = [v for nbrs in succ.values() for v in nbrs]
    dl = [d for nbrs in succ.values() for d in nbrs.values()]
    ek = [d.get("kind") for d in dl]
    if None in set(ek):  # edges without a kind: pickle the ordinary way
        return None
    lens = np.fromiter(map(len, dl), dtype=np.int64, count=len(dl))
    extra = {}
    for j in np.flatnonzero(lens != 1).tolist():
        extra[j] = {k: val for k, val in dl[j].items() if k != "kind"}
    graph = dict(G.graph)
    return {"magic": PICKLE_MAGIC, "graph": graph, "nodes": node_arr, "node_cols": cols,
            "src": np.array(src, dtype=np.int64), "dst": np.array(dst, dtype=np.int64),
            "edge_kind": _factorize(ek), "edge_extra": extra}


class _GraphPickler(pickle.Pickler):
    def reducer_override(self, obj: Any) -> Any:
        if type(obj) is nx.DiGraph:
            payload = _columnar(obj)
            if payload is not None:
                return _rebuild_digraph, (payload,)
        dt = getattr(obj, "dtype", None)
        if (isinstance(obj, pd.api.extensions.ExtensionArray) and isinstance(dt, pd.StringDtype)
                and dt.storage == "pyarrow"):
            # pandas' default string dtype is pyarrow-backed when pyarrow is installed; its
            # pickle references pyarrow internals that the safe loader refuses. Store the
            # strings as an object array rebuilt with the loading side's default storage
            # ("str": NaN semantics, "string": pd.NA semantics).
            alias = "str" if isinstance(getattr(dt, "na_value", None), float) else "string"
            return pd.array, (obj.to_numpy(dtype=object, na_value=None), alias)
        return NotImplemented


#: (module, name) pairs a .gpickle may reference. Everything else is refused.
ALLOWED_GLOBALS = frozenset({
    ("opgraph.graph.io", "_rebuild_digraph"),
    ("networkx.classes.digraph", "DiGraph"),
    ("builtins", "slice"), ("builtins", "set"), ("builtins", "frozenset"), ("builtins", "complex"),
    ("numpy", "dtype"), ("numpy", "ndarray"),
    ("numpy._core.multiarray", "_reconstruct"), ("numpy.core.multiarray", "_reconstruct"),
    ("numpy._core.multiarray", "scalar"), ("numpy.core.multiarray", "scalar"),
    ("numpy._core.numeric", "_frombuffer"), ("numpy.core.numeric", "_frombuffer"),
    ("pandas", "Categorical"), ("pandas", "CategoricalDtype"), ("pandas", "DataFrame"),
    ("pandas", "Index"), ("pandas", "RangeIndex"), ("pandas", "StringDtype"),
    ("pandas.arrays", "StringArray"), ("pandas.core.frame", "DataFrame"), ("pandas", "NA"),
    ("pandas", "array"),
    ("pandas._libs.arrays", "__pyx_unpickle_NDArrayBacked"),
    ("pandas._libs.internals", "_unpickle_block"),
    ("pandas.core.indexes.base", "_new_Index"),
    ("pandas.core.internals.managers", "BlockManager"),
    ("pandas.core.arrays.categorical", "Categorical"),
    ("pandas.core.dtypes.dtypes", "CategoricalDtype"),
    ("pandas.core.indexes.range", "RangeIndex"),
    ("pandas.core.indexes.base", "Index"),
})


class SafeUnpickler(pickle.Unpickler):
    """Unpickler that only resolves the globals in :data:`ALLOWED_GLOBALS`."""

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in ALLOWED_GLOBALS:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"refused global {module}.{name}: not on opgraph's allow-list")


def check_writable(path: str | Path) -> None:
    """Raise a one-line input error when ``path`` cannot be written."""
    p = Path(path)
    if p.is_dir():
        raise OpgraphInputError(str(p), "is a directory, expected an output file name")
    if not p.parent.exists():
        raise OpgraphInputError(str(p), f"cannot write: directory {str(p.parent)!r} does not exist")


def save_gpickle(G: "nx.DiGraph | GraphPayload", path: str | Path, inputs: tuple = ()) -> None:
    """Write ``G`` (a graph, or a :class:`GraphPayload` standing for one) as a pickle
    (protocol 5), atomically (:func:`opgraph.outfiles.open_atomic`: a killed or failed save
    leaves the previous file intact); ``inputs`` are files it must not overwrite."""
    import gc

    check_writable(path)
    was = gc.isenabled()
    gc.disable()
    try:
        with open_atomic(path, inputs) as fh:
            _GraphPickler(fh, protocol=5).dump(G)
    except OSError as e:
        raise OpgraphInputError(str(path), f"cannot write: {e.strerror or e}") from None
    finally:
        if was:
            gc.enable()


def load_gpickle(path: str | Path) -> nx.DiGraph:
    """Read a ``.gpickle`` through :class:`SafeUnpickler`; bad files raise
    :class:`OpgraphInputError`."""
    p = str(path)
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as e:
        raise OpgraphInputError(p, f"cannot read: {e.strerror or e}") from None
    if not data:
        raise OpgraphInputError(p, "empty file")
    import gc

    was = gc.isenabled()
    gc.disable()
    bio = io.BytesIO(data)
    try:
        G = SafeUnpickler(bio).load()
    except pickle.UnpicklingError as e:
        raise OpgraphInputError(p, f"unsafe or corrupt pickle: {e}") from None
    except (EOFError, ValueError, TypeError, AttributeError, IndexError, KeyError, ImportError) as e:
        raise OpgraphInputError(p, f"corrupt or truncated pickle ({type(e).__name__}: {e})") from None
    finally:
        if was:
            gc.enable()
    if bio.tell() != len(data):
        # e.g. two writers interleaved, or junk appended: the pickle read so far is not the file
        raise OpgraphInputError(p, f"corrupt pickle: {len(data) - bio.tell()} bytes after the end of the "
                                   f"pickle (at byte {bio.tell()} of {len(data)})")
    if not isinstance(G, nx.DiGraph):
        raise OpgraphInputError(p, f"pickle holds a {type(G).__name__}, not a networkx DiGraph")
    return G


# --------------------------------------------------------------------------- node-link JSON
_EVENT_INT_COLS = ("eid", "ts_ns", "dur_ns", "device", "stream", "correlation", "external_id", "rf_id",
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
        if c in _EVENT_INT_COLS:
            data[c] = np.array(vals, dtype=np.int64)
        elif c == "kind":
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


def _json_default(o: Any) -> Any:
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
    data = orjson.dumps(to_node_link(G), default=_json_default,
                        option=orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY)
    if str(path).endswith(".gz"):
        data = gzip.compress(data, compresslevel=6)
    write_atomic(path, data, inputs)


def load_node_link(path: str | Path) -> nx.DiGraph:
    """Read (and validate) node-link JSON written by :func:`save_node_link`."""
    return load_any(path)


def save_graph(G: nx.DiGraph, path: str | Path, inputs: tuple = ()) -> None:
    """Save by extension: ``.gpickle`` or node-link ``.json[.gz]`` (atomically; never over
    one of ``inputs``)."""
    s = str(path)
    check_writable(s)
    if s.endswith(".gpickle"):
        save_gpickle(G, path, inputs)
    elif s.endswith(".json.gz") or s.endswith(".json"):
        save_node_link(G, path, inputs)
    else:
        raise OpgraphInputError(s, "unknown output type: use .gpickle, .json.gz or .json")


def load_any(path: str | Path, format: str | None = None, step=None) -> nx.DiGraph:
    """A graph from a saved graph (``.gpickle``, node-link JSON) or any raw trace.

    ``format`` forces a trace format; ``step(phase)`` reports progress."""
    import gc

    was = gc.isenabled()
    gc.disable()
    try:
        G = _load_any(path, format, step or (lambda _p: None))
    finally:
        if was:
            # The objects just made are long-lived and acyclic (they are freed by reference
            # counting); keep them out of the cyclic collector's full passes.
            gc.freeze()
            gc.enable()
    return G


def read_input(path: str | Path, format: str | None = None, step=None):
    """A saved graph (``nx.DiGraph``) or, for a raw trace, its :class:`EventTable`."""
    from opgraph.ingest import detect_format, read_trace_doc
    from opgraph.ingest.source import SQLITE_MAGIC, read_source

    step = step or (lambda _p: None)
    p = str(path)
    if p.endswith(".gpickle"):
        return load_gpickle(p)
    step("read")
    src = read_source(p)
    if src.data[:1] == b"\x80" and not src.compressed:
        return load_gpickle(p)
    if src.data.startswith(SQLITE_MAGIC):
        doc = None
    else:
        step("parse")
        # [issue #7 hook] non-JSON formats (nsys JSON lines, nsys stats CSV, CLIntercept's
        # unterminated array) are recognised here instead of failing as invalid JSON
        from opgraph.ingest import parse_trace_doc
        doc = parse_trace_doc(src)
        if format is None and detect_format(src.data, doc) == "opgraph-graph":
            from opgraph.schemas_util import validation_error
            sample = dict(doc)
            sample["nodes"] = sample.get("nodes", [])[:2000]
            sample["edges"] = sample.get("edges", [])[:2000]
            sample.pop("events", None)
            err = validation_error(sample, "opgraph-graph.schema.json")
            if err:
                raise OpgraphInputError(p, f"not a valid opgraph graph document: {err}")
            try:
                return from_node_link(doc)
            except (KeyError, TypeError, ValueError) as e:
                raise OpgraphInputError(p, f"corrupt graph document ({type(e).__name__}: {e})") from None
    step("table")
    return read_trace_doc(src, doc, format)


def _load_any(path: str | Path, format: str | None, step) -> nx.DiGraph:
    from opgraph.graph.build import build_graph

    got = read_input(path, format, step)
    if isinstance(got, nx.DiGraph):
        return got
    return build_graph(got, step)
