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
from itertools import chain, repeat
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np
import orjson
import pandas as pd

from opgraph.gc_pause import gc_paused
from opgraph.errors import OpgraphInputError
from opgraph.graph.build import has_cycle
from opgraph.graph.payload import graph_to_payload, payload_to_digraph
from opgraph.ingest.table import ALL_KINDS
from opgraph.outfiles import open_atomic, write_atomic

GRAPH_SUFFIXES = (".gpickle", ".json.gz", ".json")


# --------------------------------------------------------------------------- pickle
def graph_from_payload(payload: dict) -> nx.DiGraph:
    """A ``DiGraph`` from its column form (see :func:`opgraph.graph.build.build_payload`)."""
    return payload_to_digraph(payload)


class GraphPayload:
    """A graph in column form that pickles exactly as the ``DiGraph`` it stands for."""

    def __init__(self, payload: dict):
        self.payload = payload

    def __reduce__(self):
        return _rebuild_digraph, (self.payload,)


def _rebuild_digraph(payload: dict) -> nx.DiGraph:
    """The function a ``.gpickle`` names to rebuild its graph (allow-listed for unpickling;
    its module and name are part of the file format, so it stays here)."""
    return payload_to_digraph(payload)


class GraphPickler(pickle.Pickler):
    """The pickler of ``.gpickle`` files: an opgraph-built ``DiGraph`` is written in its
    column form (:func:`opgraph.graph.payload.graph_to_payload`), any other object the ordinary way."""

    def reducer_override(self, obj: Any) -> Any:
        if type(obj) is nx.DiGraph:
            payload = graph_to_payload(obj)
            if payload is not None:
                return _rebuild_digraph, (payload,)
            # the ordinary way, without the views networkx caches in __dict__ (G.nodes,
            # G.degree, ...): their classes are not on the loader's allow-list
            state = {k: v for k, v in obj.__dict__.items() if k in _DIGRAPH_STATE}
            return nx.DiGraph, (), state
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


#: The instance attributes of a ``DiGraph`` that are its data (the rest are cached views).
_DIGRAPH_STATE = ("graph", "_node", "_adj", "_pred", "_succ")

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


def allocation_cap(file_size: int) -> int:
    """Largest array (bytes) a saved graph of ``file_size`` bytes may declare: 64x the
    file plus 64 MiB (object columns and compressed-looking data stay far below it)."""
    return 64 * int(file_size) + 64 * 2**20


class _TooLarge(pickle.UnpicklingError):
    pass


def _declared_bytes(shape: Any, dtype: Any) -> int:
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    n = 1
    for d in tuple(shape):
        d = int(d)
        if d < 0:
            raise pickle.UnpicklingError(f"negative array dimension {d}")
        n *= d
    return n * max(1, np.dtype(dtype).itemsize)


class SafeUnpickler(pickle.Unpickler):
    """Unpickler that only resolves the globals in :data:`ALLOWED_GLOBALS`.

    The numpy constructors are wrapped: an array whose declared size exceeds ``max_bytes``
    (:func:`allocation_cap` of the file size) is refused before anything is allocated."""

    def __init__(self, file: Any, *, max_bytes: int | None = None, **kw: Any):
        super().__init__(file, **kw)
        self.max_bytes = max_bytes

    def _check(self, shape: Any, dtype: Any) -> None:
        if self.max_bytes is None:
            return
        try:
            size = _declared_bytes(shape, dtype)
        except (TypeError, ValueError, OverflowError) as e:
            raise pickle.UnpicklingError(f"bad array shape or dtype ({e})") from None
        if size > self.max_bytes:
            raise _TooLarge(f"declares a {size:,}-byte array, more than a file of this size can hold "
                            f"(limit {self.max_bytes:,} bytes)")

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in ALLOWED_GLOBALS:
            raise pickle.UnpicklingError(f"refused global {module}.{name}: not on opgraph's allow-list")
        obj = super().find_class(module, name)
        if (module, name) == ("numpy", "ndarray"):
            return _CheckedNdarray(self)
        if name == "_reconstruct":
            def reconstruct(subtype: Any, shape: Any, dtype: Any, _f: Any = obj) -> Any:
                if isinstance(subtype, _CheckedNdarray):
                    subtype = np.ndarray
                self._check(shape, dtype if not isinstance(dtype, bytes) else "b")
                return _f(subtype, shape, dtype)
            return reconstruct
        if name == "_frombuffer":
            def frombuffer(buf: Any, dtype: Any, shape: Any, order: Any, _f: Any = obj) -> Any:
                self._check(shape, dtype)
                return _f(buf, dtype, shape, order)
            return frombuffer
        return obj


class _CheckedNdarray:
    """``numpy.ndarray`` as a pickle sees it: a size-checked constructor."""

    def __init__(self, unpickler: SafeUnpickler):
        self.unpickler = unpickler

    def __call__(self, shape: Any, dtype: Any = float, *args: Any, **kw: Any) -> np.ndarray:
        self.unpickler._check(shape, dtype)
        return np.ndarray(shape, dtype, *args, **kw)


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
    check_writable(path)
    with gc_paused():
        try:
            with open_atomic(path, inputs) as fh:
                GraphPickler(fh, protocol=5).dump(G)
        except OSError as e:
            raise OpgraphInputError(str(path), f"cannot write: {e.strerror or e}") from None


def load_gpickle(path: str | Path, require_opgraph: bool = False) -> nx.DiGraph:
    """Read a ``.gpickle`` through :class:`SafeUnpickler`; bad files raise
    :class:`OpgraphInputError`. Any ``DiGraph`` loads (its attributes bounded, see
    :func:`check_graph`); ``require_opgraph`` also requires what the analyses need."""
    from opgraph.ingest.source import read_regular_file

    p = str(path)
    data = read_regular_file(path)  # regular files under the input cap only
    if not data:
        raise OpgraphInputError(p, "empty file")
    bio = io.BytesIO(data)
    with gc_paused():
        try:
            G = SafeUnpickler(bio, max_bytes=allocation_cap(len(data))).load()
        except _TooLarge as e:
            raise OpgraphInputError(p, f"refused: the pickle {e}") from None
        except pickle.UnpicklingError as e:
            raise OpgraphInputError(p, f"unsafe or corrupt pickle: {e}") from None
        except MemoryError:
            raise OpgraphInputError(p, f"refused: the pickle declares an object too large for memory "
                                       f"(the file is {len(data):,} bytes)") from None
        except RecursionError:
            raise OpgraphInputError(p, "refused: the pickle nests objects too deeply") from None
        except (EOFError, ValueError, TypeError, AttributeError, IndexError, KeyError, ImportError) as e:
            raise OpgraphInputError(p, f"corrupt or truncated pickle ({type(e).__name__}: {e})") from None
    if bio.tell() != len(data):
        # e.g. two writers interleaved, or junk appended: the pickle read so far is not the file
        raise OpgraphInputError(p, f"corrupt pickle: {len(data) - bio.tell()} bytes after the end of the "
                                   f"pickle (at byte {bio.tell()} of {len(data)})")
    if type(G) is not nx.DiGraph:
        raise OpgraphInputError(p, f"pickle holds a {type(G).__name__}, not a networkx DiGraph")
    _check_structure(G, p)
    check_graph(G, p, len(data), require_opgraph)
    return G


# --------------------------------------------------------------------------- validation
#: Edge kinds that must form a DAG (docs/model.md): every kind but ``collective``, which
#: links matched kernels of different ranks in both directions.
CYCLIC_EDGE_KINDS = frozenset({"collective"})
#: Deepest nesting of containers in a node attribute or graph attribute.
MAX_ATTR_DEPTH = 32
_SCALARS = (str, int, float, bool, type(None), np.integer, np.floating, np.bool_)
_CONTAINERS = (dict, list, tuple, set, frozenset)
#: Exact types of scalar attribute values (for the C-level type scans).
_SCALAR_TYPES = frozenset({str, int, float, bool, type(None), np.int64, np.int32, np.float64, np.float32, np.bool_})


def _expanded(obj: Any, memo: dict[int, tuple[int, int]], active: set[int]) -> tuple[int, int]:
    """(items reached walking ``obj`` as JSON would, depth), per distinct object once:
    shared references count each time they are reached (a "bomb" of lists referencing
    each other is small in memory, huge once written out)."""
    k = id(obj)
    got = memo.get(k)
    if got is not None:
        return got
    if k in active:
        raise ValueError("a container contains itself")
    active.add(k)
    vals = obj.values() if isinstance(obj, dict) else obj
    total, depth = 1, 0
    for v in vals:
        if type(v) is list and _SCALAR_TYPES.issuperset(map(type, v)):
            total += len(v) + 1      # a list of scalars (e.g. one of "Input Dims"): no recursion
            depth = max(depth, 1)
            continue
        if isinstance(v, _CONTAINERS):
            t, d = _expanded(v, memo, active)
            total += t
            depth = max(depth, d)
        else:
            total += 1
        if total > 2**62:
            break
    active.discard(k)
    memo[k] = (total, depth + 1)
    return memo[k]


def _check_attrs(path: str, what: str, objs: Any, budget: int, memo: dict, event: Any = None) -> int:
    """Walk ``objs`` (containers); raise when one is deeper than :data:`MAX_ATTR_DEPTH` or
    all of them expand to more than ``budget`` items. Returns the items used."""
    used = 0
    active: set[int] = set()
    for i, o in objs:
        to = type(o)
        if to in _SCALAR_TYPES:
            continue
        if to is dict and _SCALAR_TYPES.issuperset(map(type, o.values())):
            # the usual case (an args dict of scalars): no walk; map/issuperset run in C
            memo[id(o)] = (len(o) + 1, 1)
            used += len(o) + 1
            if used > budget:
                raise OpgraphInputError(path, f"{what} expands to more than {budget:,} values once written "
                                              "out (shared references: a serialisation bomb)", i if event else None)
            continue
        if not isinstance(o, _CONTAINERS):
            if not isinstance(o, _SCALARS) and not isinstance(o, pd.DataFrame):
                raise OpgraphInputError(path, f"{what} holds a {type(o).__name__}, expected numbers, "
                                              "strings, lists or objects", i if event else None)
            continue
        try:
            t, d = _expanded(o, memo, active)
        except (ValueError, RecursionError):
            raise OpgraphInputError(path, f"{what} contains itself (a reference cycle)", i if event else None) from None
        if d > MAX_ATTR_DEPTH:
            raise OpgraphInputError(path, f"{what} nests {d} levels deep (at most {MAX_ATTR_DEPTH})",
                                    i if event else None)
        used += t
        if used > budget:
            raise OpgraphInputError(path, f"{what} expands to more than {budget:,} values once written "
                                          "out (shared references: a serialisation bomb)", i if event else None)
    return used


def _check_structure(G: nx.DiGraph, path: str) -> None:
    """A ``DiGraph`` whose instance data has the shapes networkx itself builds (a pickle can
    set ``__dict__`` to anything): dicts of dicts, ``_adj`` the same object as ``_succ``,
    and every node of the adjacency listed in ``_node``."""
    d = G.__dict__
    for k in _DIGRAPH_STATE:
        if type(d.get(k)) is not dict:
            raise OpgraphInputError(path, f"corrupt graph: DiGraph attribute {k!r} is "
                                          f"{type(d.get(k)).__name__}, expected a dict")
    if d["_adj"] is not d["_succ"]:
        raise OpgraphInputError(path, "corrupt graph: DiGraph adjacency '_adj' is not '_succ'")
    node, succ, pred = d["_node"], d["_succ"], d["_pred"]
    for what, m in (("node attributes", node.values()), ("successors", succ.values()), ("predecessors", pred.values())):
        if not {dict}.issuperset(map(type, m)):
            raise OpgraphInputError(path, f"corrupt graph: DiGraph {what} that are not dicts")
    if not (node.keys() == succ.keys() == pred.keys()):
        raise OpgraphInputError(path, "corrupt graph: DiGraph node, successor and predecessor tables differ")
    for nb in succ.values():
        if not {dict}.issuperset(map(type, nb.values())) or not nb.keys() <= node.keys():
            raise OpgraphInputError(path, "corrupt graph: an edge to a node that is not in the graph, or edge "
                                          "attributes that are not a dict")


#: Columns of the event table the analyses read (``events_from_columns`` restores dtypes).
_REQUIRED_EVENT_COLS = ("eid", "kind", "name", "ts_ns", "dur_ns", "pid", "tid", "args")
#: Graph attributes and the types the analyses expect of them (when present).
_GRAPH_ATTR_TYPES = {"trace_metadata": dict, "device_properties": list, "distributed_info": dict,
                     "health": list, "span_ns": (tuple, list), "opgraph_version": str}


def check_graph(G: nx.DiGraph, path: str, file_size: int, require_opgraph: bool = True) -> None:
    """Refuse a loaded graph opgraph cannot analyse, with one line naming ``path``:
    missing graph attributes, nodes without a valid ``kind``/``ts``/``dur``, attributes
    nested too deeply or expanding to far more than the file holds, and a cycle among the
    edge kinds that must be acyclic (docs/model.md). Without ``require_opgraph`` only the
    attribute bounds are checked (any ``DiGraph`` may be saved and loaded)."""
    gr = G.graph
    if not require_opgraph:
        _check_bounds(G, path, file_size)
        return
    missing = [k for k in ("events", "source", "schema_version") if k not in gr]
    if missing:
        raise OpgraphInputError(path, "not an opgraph graph: graph attribute(s) " + ", ".join(map(repr, missing))
                                + " missing (save graphs with opgraph build or opgraph.save_graph)")
    if not isinstance(gr["events"], pd.DataFrame):
        raise OpgraphInputError(path, f"not an opgraph graph: graph attribute 'events' is a "
                                      f"{type(gr['events']).__name__}, expected the event table")
    if not isinstance(gr["source"], dict):
        raise OpgraphInputError(path, f"not an opgraph graph: graph attribute 'source' is a "
                                      f"{type(gr['source']).__name__}, expected an object")
    if type(gr["schema_version"]) is not int:
        raise OpgraphInputError(path, "not an opgraph graph: graph attribute 'schema_version' is not an integer")
    for k, t in _GRAPH_ATTR_TYPES.items():
        if k in gr and not isinstance(gr[k], t):
            raise OpgraphInputError(path, f"graph attribute {k!r} is a {type(gr[k]).__name__}, expected "
                                          f"{'a list' if t is list else 'a string' if t is str else 'an object' if t is dict else 'a pair'}")
    if not {str, type(None)}.issuperset(map(type, gr["source"].values())):
        raise OpgraphInputError(path, "graph attribute 'source' must hold strings")
    ev = gr["events"]
    lack = [c for c in _REQUIRED_EVENT_COLS if c not in ev.columns]
    if lack:
        raise OpgraphInputError(path, f"the event table lacks column(s) {', '.join(lack)}")
    for c in _EVENT_INT_COLS:
        if c in ev.columns and not pd.api.types.is_integer_dtype(ev[c].dtype):
            raise OpgraphInputError(path, f"event table column {c!r} is {ev[c].dtype}, expected integers")
    job = gr.get("job")
    if job is not None:
        if not isinstance(job, dict) or not isinstance(job.get("ranks"), list):
            raise OpgraphInputError(path, "graph attribute 'job' must be an object with a 'ranks' list")
        coll = job.get("collectives")
        if not isinstance(coll, pd.DataFrame):
            raise OpgraphInputError(path, "graph attribute 'job' has no 'collectives' table")
        lack = [c for c in ("coll_id", "rank", "node") if c not in coll.columns]
        if lack:
            raise OpgraphInputError(path, f"job 'collectives' table lacks column(s) {', '.join(lack)}")
        if any(not isinstance(r, dict) or "rank" not in r for r in job["ranks"]):
            raise OpgraphInputError(path, "job 'ranks' rows must be objects with a 'rank'")
    _check_nodes(G, path)
    if G._node:
        ids = np.fromiter(G._node, dtype=np.int64, count=len(G._node))
        bad = (ids < 0) | (ids >= len(ev))
        if bad.any():
            raise OpgraphInputError(path, f"node {int(ids[bad][0])} has no row in the event table "
                                          f"({len(ev)} rows; node ids are event ids)")
    _check_bounds(G, path, file_size)
    edata = chain.from_iterable(map(dict.values, G._succ.values()))   # every edge's attribute dict, in C
    ekind_list = list(map(dict.get, edata, repeat("kind")))
    if not {str}.issuperset(map(type, ekind_list)):
        u, v, d = next((u, v, d) for u, nbrs in G._succ.items() for v, d in nbrs.items()
                       if type(d.get("kind")) is not str)
        if "kind" not in d:
            raise OpgraphInputError(path, f"edge {u} -> {v}: attribute 'kind' missing")
        raise OpgraphInputError(path, f"edge {u} -> {v}: 'kind' is {d['kind']!r:.60}, expected a string")
    # acyclic edge kinds: Kahn's algorithm over int arrays (build's check), networkx only to
    # name a cycle once one is known to exist
    if G.number_of_edges():
        src = np.fromiter(chain.from_iterable(repeat(u, len(nb)) for u, nb in G._succ.items()), dtype=np.int64,
                          count=len(ekind_list))
        dst = np.fromiter(chain.from_iterable(G._succ.values()), dtype=np.int64, count=len(ekind_list))
        keep = ~np.isin(np.asarray(ekind_list, dtype=object), list(CYCLIC_EDGE_KINDS))
        if has_cycle(src[keep], dst[keep]):
            H = G.edge_subgraph((u, v) for u, v, d in G.edges(data=True) if d["kind"] not in CYCLIC_EDGE_KINDS)
            cyc = nx.find_cycle(H)
            kinds_in = sorted({H.edges[u, v]["kind"] for u, v, *_ in cyc})
            raise OpgraphInputError(path, f"the graph has a cycle through nodes {[u for u, *_ in cyc][:8]} "
                                          f"(edge kinds {', '.join(kinds_in)}), which must be acyclic")


def _check_nodes(G: nx.DiGraph, path: str) -> None:
    """Every node has an integer id, a known ``kind`` and integer ``ts``/``dur`` (ns) whose
    sum fits int64. Type scans run in C (map/set); the per-node walk only finds the culprit."""
    nodes = G._node
    lo, hi = -(2**63), 2**63 - 1   # what the readers accept (ts + dur must fit int64)
    ok_int = {int, np.int64}
    ids = list(nodes)
    vals = list(nodes.values())

    def first_bad(pred) -> Any:
        return next(n for n, d in zip(ids, vals) if pred(n, d))
    if not {int, np.int64}.issuperset(map(type, ids)):
        n = next(n for n in ids if type(n) not in ok_int)
        raise OpgraphInputError(path, f"node {n!r}: node ids must be integers")
    for k in ("kind", "ts", "dur"):
        col = list(map(dict.get, vals, repeat(k, len(vals))))
        if k == "kind":
            if not set(ALL_KINDS).issuperset(col) or not {str}.issuperset(map(type, col)):
                n = first_bad(lambda n, d: type(d.get("kind")) is not str or d.get("kind") not in ALL_KINDS)
                if "kind" not in nodes[n]:
                    raise OpgraphInputError(path, f"node {n}: attribute 'kind' missing")
                raise OpgraphInputError(path, f"node {n}: 'kind' is {nodes[n]['kind']!r}, expected one of the "
                                              "event kinds")
        elif not ok_int.issuperset(map(type, col)):
            n = first_bad(lambda n, d: type(d.get(k)) not in ok_int)
            if k not in nodes[n]:
                raise OpgraphInputError(path, f"node {n}: attribute {k!r} missing")
            raise OpgraphInputError(path, f"node {n}: {k!r} is {nodes[n][k]!r}, expected an integer (ns)")
    absent = object()
    for k, ok, what in (("device", ok_int, "an integer"), ("stream", ok_int, "an integer"),
                        ("correlation", ok_int, "an integer"), ("external_id", ok_int, "an integer"),
                        ("name", {str, type(None), float}, "a string"),   # NaN: no name
                        ("pid", {int, np.int64, str, float, type(None)}, "a number or a string"),
                        ("tid", {int, np.int64, str, float, type(None)}, "a number or a string")):
        col = list(map(dict.get, vals, repeat(k, len(vals)), repeat(absent, len(vals))))
        types = set(map(type, col)) - {object}
        bad_big = False
        if types <= ok and ok is ok_int and int in types:
            bad_big = any(type(v) is int and not -(2**63) <= v < 2**63 for v in col)
        if k == "name" and float in types:
            bad_big = any(type(v) is float and v == v for v in col)
        if not types <= ok or bad_big:
            n = first_bad(lambda n, d: k in d and (type(d[k]) not in ok or (
                type(d[k]) is int and ok is ok_int and not -(2**63) <= d[k] < 2**63) or (
                k == "name" and type(d[k]) is float and d[k] == d[k])))
            raise OpgraphInputError(path, f"node {n}: {k!r} is {nodes[n][k]!r:.60}, expected {what}"
                                    + (" that fits int64" if ok is ok_int else ""))
    ts = np.fromiter(map(dict.get, vals, repeat("ts", len(vals))), dtype=object, count=len(vals))
    du = np.fromiter(map(dict.get, vals, repeat("dur", len(vals))), dtype=object, count=len(vals))
    try:
        t64, d64 = ts.astype(np.int64), du.astype(np.int64)
        bad = (t64 < lo) | (t64 > hi) | (d64 < -1) | (d64 > hi) | (d64 > hi - np.maximum(t64, 0))
    except OverflowError:
        bad = np.array([not (lo <= t <= hi and -1 <= d <= hi - t) for t, d in zip(ts.tolist(), du.tolist())])
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise OpgraphInputError(path, f"node {ids[i]}: ts {ts[i]} / dur {du[i]} ns out of range "
                                      "(ts + dur must fit int64)")


_CONTAINER_TYPES = frozenset({dict, list, tuple, set, frozenset})
_ALLOWED_TYPES = _SCALAR_TYPES | _CONTAINER_TYPES


def _level_walk(objs: list[Any], budget: int) -> int | None:
    """Items reached walking ``objs`` as JSON would, level by level with C-level scans
    (``map``/``chain``): shared references count each time (a bomb grows level by level
    and is stopped by ``budget`` before it is materialised). None when a level holds a
    type that is not JSON-like, is deeper than :data:`MAX_ATTR_DEPTH`, or the count passes
    ``budget``: the caller then finds the culprit with the per-object walk."""
    total = len(objs)
    if not _ALLOWED_TYPES.issuperset(map(type, objs)):
        return None
    level = [o for o in objs if type(o) in _CONTAINER_TYPES]
    depth = 0
    while level:
        depth += 1
        if depth > MAX_ATTR_DEPTH:
            return None
        total += sum(map(len, level))
        if total > budget:
            return None
        dicts = [o for o in level if type(o) is dict]
        seqs = [o for o in level if type(o) is not dict]
        items = list(chain(chain.from_iterable(map(dict.values, dicts)), chain.from_iterable(seqs)))
        if not _ALLOWED_TYPES.issuperset(map(type, items)):
            return None
        level = [o for o in items if type(o) in _CONTAINER_TYPES]
    return total


def _check_bounds(G: nx.DiGraph, path: str, file_size: int) -> None:
    """Attributes bounded relative to the file (no serialisation bombs) and in depth. Whole
    columns are walked level by level in C (:func:`_level_walk`); the per-object walk
    (:func:`_check_attrs`) runs only to name the culprit of a failure."""
    gr = G.graph
    budget = 64 * int(file_size) + 2**22
    memo: dict[int, tuple[int, int]] = {}
    used = _check_attrs(path, "graph attributes", ((k, v) for k, v in gr.items() if k != "events"),
                        budget, memo)
    ev = gr.get("events")
    if not isinstance(ev, pd.DataFrame):
        ev = pd.DataFrame()
    seen: set[int] = set()

    def column(what: str, ids: list[Any], vals: list[Any]) -> None:
        nonlocal used
        got = _level_walk(vals, budget - used)
        if got is None:
            used += _check_attrs(path, what, zip(ids, vals), budget - used, memo, event=True)
        else:
            used += got
        seen.update(map(id, vals))

    for col in ("args", "extra"):
        if col in ev:
            vals = ev[col].tolist()
            column(f"event {col}", list(range(len(vals))), vals)
    nodes = G._node
    keys = set(chain.from_iterable(nodes.values()))   # every attribute name, in C
    ids = np.array(list(nodes), dtype=object)
    for k in sorted(keys, key=str):
        vals = list(map(dict.get, nodes.values(), repeat(k)))
        if _SCALAR_TYPES.issuperset(map(type, vals)):
            continue
        # skip the objects already walked (node args are the event table's args dicts)
        new = ~np.fromiter(map(seen.__contains__, map(id, vals)), dtype=bool, count=len(vals))
        arr = np.empty(len(vals), dtype=object)
        arr[:] = vals
        column(f"node attribute {k!r}", ids[new].tolist(), arr[new].tolist())


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
    """JSON for the numpy scalars and arrays a node-link document may hold (orjson ``default``)."""
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
    # The objects made are long-lived and acyclic (freed by reference counting): frozen on the
    # way out, they stay out of the cyclic collector's later full passes.
    with gc_paused(freeze=True):
        G = _load_any(path, format, step or (lambda _p: None))
    return G


def read_input(path: str | Path, format: str | None = None, step=None):
    """A saved graph (``nx.DiGraph``) or, for a raw trace, its :class:`EventTable`."""
    from opgraph.ingest import detect_format, read_trace_doc
    from opgraph.ingest.source import SQLITE_MAGIC, read_source

    step = step or (lambda _p: None)
    p = str(path)
    if p.endswith(".gpickle"):
        return load_gpickle(p, require_opgraph=True)
    step("read")
    src = read_source(p)
    if src.data[:1] == b"\x80" and not src.compressed:
        return load_gpickle(p, require_opgraph=True)
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
            for k in ("nodes", "edges"):
                if not isinstance(sample.get(k, []), list):
                    raise OpgraphInputError(p, f"not a valid opgraph graph document: {k!r} must be a list")
                sample[k] = sample.get(k, [])[:2000]
            sample.pop("events", None)
            err = validation_error(sample, "opgraph-graph.schema.json")
            if err:
                raise OpgraphInputError(p, f"not a valid opgraph graph document: {err}")
            if not isinstance(doc.get("events", {}), dict) or not isinstance(doc.get("graph", {}), dict):
                raise OpgraphInputError(p, "not a valid opgraph graph document: 'events' and 'graph' must be objects")
            if isinstance(doc.get("graph"), dict) and "events" in doc["graph"]:
                raise OpgraphInputError(p, "not a valid opgraph graph document: graph.events is not allowed "
                                           "(the event table is the top-level 'events' object)")
            try:
                G = from_node_link(doc)
            except (KeyError, TypeError, ValueError, OverflowError, AttributeError, IndexError) as e:
                raise OpgraphInputError(p, f"corrupt graph document ({type(e).__name__}: {e})") from None
            check_graph(G, p, len(src.data))
            return G
    step("table")
    return read_trace_doc(src, doc, format)


def _load_any(path: str | Path, format: str | None, step) -> nx.DiGraph:
    from opgraph.graph.build import build_graph

    got = read_input(path, format, step)
    if isinstance(got, nx.DiGraph):
        return got
    return build_graph(got, step)
