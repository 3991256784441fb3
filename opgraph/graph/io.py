"""Saving and loading graphs: ``.gpickle`` (safe, allow-listed unpickling) and node-link
``.json.gz`` / ``.json`` (validated by ``schemas/opgraph-graph.schema.json``).

The pickle is a pickle of the ``networkx.DiGraph``. A graph built by opgraph is reduced
to columns (numpy arrays) instead of millions of small dicts, which makes saving and
loading several times faster; any other graph pickles the ordinary way. Loading goes
through :class:`SafeUnpickler`, which refuses every global outside a fixed allow-list, so
a hostile file cannot run code.

This module holds the ``.gpickle`` writer and reader (the function a ``.gpickle`` names to
rebuild its graph, ``opgraph.graph.io._rebuild_digraph``, is part of the file format and
stays here) and the dispatch by file type (:func:`save_graph`, :func:`load_any`,
:func:`read_input`). The parts live in:

* :mod:`~opgraph.model.unpickler`: :class:`SafeUnpickler`, its allow-list and size cap;
* :mod:`~opgraph.model.validate`: :func:`check_graph` and :func:`check_structure`, the
  checks of a loaded graph;
* :mod:`~opgraph.model.attr_bounds`: the depth and size bounds on its attributes;
* :mod:`~opgraph.model.node_link`: node-link JSON to and from a graph.
"""

from __future__ import annotations

import copyreg
import io
import pickle
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from opgraph.gc_pause import gc_paused
from opgraph.errors import OpgraphInputError
from opgraph.model.attr_bounds import MAX_ATTR_DEPTH
from opgraph.model.node_link import (
    EVENT_INT_COLS, events_from_columns, events_to_columns, from_node_link, job_from_json, job_to_json, json_default,
    save_node_link, to_node_link,
)
from opgraph.model.trace_graph import TraceGraph
from opgraph.model.packed_args import pack_args, unpack_payload
from opgraph.model.payload import graph_to_payload, payload_to_digraph
from opgraph.model.unpickler import ALLOWED_GLOBALS, ArrayTooLarge, SafeUnpickler, allocation_cap
from opgraph.model.validate import CYCLIC_EDGE_KINDS, DIGRAPH_STATE, check_graph, check_structure
from opgraph.outfiles import open_atomic

if TYPE_CHECKING:
    import networkx as nx


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
        return _rebuild_digraph, (pack_args(self.payload),)


def _rebuild_digraph(payload: dict) -> nx.DiGraph:
    """The function a ``.gpickle`` names to rebuild its graph (allow-listed for unpickling;
    its module and name are part of the file format, so it stays here). A packed args
    column (:mod:`opgraph.model.packed_args`) is put back first."""
    return payload_to_digraph(unpack_payload(payload))


# a TraceGraph pickles as the DiGraph it stands for: the same reducer as a saved graph
copyreg.pickle(TraceGraph, lambda tg: (_rebuild_digraph, (pack_args(tg.payload),)))


class GraphPickler(pickle.Pickler):
    """The pickler of ``.gpickle`` files: an opgraph-built ``DiGraph`` is written in its
    column form (:func:`opgraph.model.payload.graph_to_payload`), any other object the ordinary way."""

    def reducer_override(self, obj: Any) -> Any:
        nx = sys.modules.get("networkx")   # (a DiGraph exists only once networkx is imported)
        if nx is not None and type(obj) is nx.DiGraph:
            payload = graph_to_payload(obj)
            if payload is not None:
                return _rebuild_digraph, (pack_args(payload),)
            # the ordinary way, without the views networkx caches in __dict__ (G.nodes,
            # G.degree, ...): their classes are not on the loader's allow-list
            state = {k: v for k, v in obj.__dict__.items() if k in DIGRAPH_STATE}
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


class _Columns:
    """What :class:`_ColumnUnpickler` makes of ``_rebuild_digraph(payload)``: the payload,
    untouched, to be validated as arrays (no per-node dict is made)."""

    __slots__ = ("payload",)

    def __init__(self, payload: Any):
        self.payload = payload


class _ColumnUnpickler(SafeUnpickler):
    """:class:`SafeUnpickler` that keeps a graph's column payload as columns."""

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) == ("opgraph.graph.io", "_rebuild_digraph"):
            return _Columns
        return super().find_class(module, name)


def load_gpickle(path: str | Path) -> TraceGraph:
    """Read a ``.gpickle`` saved by opgraph through :class:`SafeUnpickler` as a
    :class:`~opgraph.model.trace_graph.TraceGraph`; bad files raise :class:`OpgraphInputError`.
    A graph saved in column form is validated as arrays (no networkx dicts are made); a
    ``DiGraph`` pickled the ordinary way must hold what the analyses need
    (:func:`check_graph`) and is taken into columns."""
    from opgraph.infiles import open_regular_file

    p = str(path)
    fh, size = open_regular_file(path)  # regular files under the input cap only
    with fh:
        src: Any = fh   # the arrays are read from the file into place (no copy of the whole file first)
        if not size:    # (a file whose size the system does not tell: read it all)
            data = fh.read()
            if not data:
                raise OpgraphInputError(p, "empty file")
            src, size = io.BytesIO(data), len(data)
        with gc_paused():
            try:
                G = _ColumnUnpickler(src, max_bytes=allocation_cap(size)).load()
            except ArrayTooLarge as e:
                raise OpgraphInputError(p, f"refused: the pickle {e}") from None
            except pickle.UnpicklingError as e:
                raise OpgraphInputError(p, f"unsafe or corrupt pickle: {e}") from None
            except MemoryError:
                raise OpgraphInputError(p, f"refused: the pickle declares an object too large for memory "
                                           f"(the file is {size:,} bytes)") from None
            except RecursionError:
                raise OpgraphInputError(p, "refused: the pickle nests objects too deeply") from None
            except (EOFError, ValueError, TypeError, AttributeError, IndexError, KeyError, ImportError) as e:
                raise OpgraphInputError(p, f"corrupt or truncated pickle ({type(e).__name__}: {e})") from None
            except OSError as e:
                raise OpgraphInputError(p, f"cannot read: {e.strerror or e}") from None
        end = src.tell()
    if end != size:
        # e.g. two writers interleaved, or junk appended: the pickle read so far is not the file
        raise OpgraphInputError(p, f"corrupt pickle: {size - end} bytes after the end of the "
                                   f"pickle (at byte {end} of {size})")
    if type(G) is _Columns:
        from opgraph.model.validate_columns import check_columns

        try:
            check_columns(G.payload, p, size)
        except (ValueError, TypeError, AttributeError, IndexError, KeyError, OverflowError) as e:
            raise OpgraphInputError(p, f"corrupt graph columns ({type(e).__name__}: {e})") from None
        return TraceGraph(G.payload, args_source=(p, size))
    import networkx as nx

    if type(G) is not nx.DiGraph:
        raise OpgraphInputError(p, f"pickle holds a {type(G).__name__}, not a networkx DiGraph")
    check_structure(G, p)
    check_graph(G, p, size)
    return columns_of(G, p)


def columns_of(G: nx.DiGraph, path: str) -> TraceGraph:
    """The :class:`~opgraph.model.trace_graph.TraceGraph` of a loaded ``DiGraph`` that passed
    :func:`check_graph`; a graph opgraph cannot hold in columns (nodes with attributes of
    their own, args that are not the event table's) is a one-line input error."""
    try:
        return TraceGraph.from_networkx(G)
    except ValueError as e:
        raise OpgraphInputError(path, f"a networkx graph {e}") from None


# --------------------------------------------------------------------------- by file type
def load_node_link(path: str | Path) -> TraceGraph:
    """Read (and validate) node-link JSON written by :func:`save_node_link`."""
    return load_any(path)


def save_graph(G: "TraceGraph | nx.DiGraph", path: str | Path, inputs: tuple = ()) -> None:
    """Save by extension: ``.gpickle`` or node-link ``.json[.gz]`` (atomically; never over
    one of ``inputs``)."""
    s = str(path)
    check_writable(s)
    if s.endswith(".gpickle"):
        save_gpickle(G, path, inputs)
    elif s.endswith(".json.gz") or s.endswith(".json"):
        save_node_link(G.to_networkx() if isinstance(G, TraceGraph) else G, path, inputs)
    else:
        raise OpgraphInputError(s, "unknown output type: use .gpickle, .json.gz or .json")


def load_any(path: str | Path, format: str | None = None, step=None) -> TraceGraph:
    """The :class:`~opgraph.model.trace_graph.TraceGraph` of a saved graph (``.gpickle``,
    node-link JSON) or of any raw trace (built).

    ``format`` forces a trace format; ``step(phase)`` reports progress."""
    # The objects made are long-lived and acyclic (freed by reference counting): frozen on the
    # way out, they stay out of the cyclic collector's later full passes.
    with gc_paused(freeze=True):
        G = _load_any(path, format, step or (lambda _p: None))
    return G


def read_input(path: str | Path, format: str | None = None, step=None) -> "TraceGraph | Any":
    """A saved graph (a :class:`~opgraph.model.trace_graph.TraceGraph`) or, for a raw trace,
    its :class:`EventTable`."""
    from opgraph.ingest.readers import detect_format, read_trace_doc
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
        from opgraph.ingest.readers import parse_trace_doc
        doc = parse_trace_doc(src)
        if format is None and detect_format(src.data, doc) == "opgraph-graph":
            from opgraph.exact_json import BIG_INT_RE, exact_loads, may_hold_big_int
            from opgraph.schemas_util import validation_error

            # rare: args integers beyond 64 bits, read exact
            if may_hold_big_int(src.data) and BIG_INT_RE.search(src.data):
                try:
                    doc = exact_loads(src.data)
                except (ValueError, RecursionError):
                    pass  # orjson's reading stands (the nearest doubles)
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
            return columns_of(G, p)
    step("table")
    return read_trace_doc(src, doc, format)


def _load_any(path: str | Path, format: str | None, step) -> TraceGraph:
    from opgraph.graph.build import build_graph

    got = read_input(path, format, step)
    if isinstance(got, TraceGraph):
        return got
    return build_graph(got, step)


__all__ = [
    "GRAPH_SUFFIXES", "graph_from_payload", "GraphPayload", "GraphPickler", "check_writable", "save_gpickle",
    "load_gpickle", "load_node_link", "save_graph", "load_any", "read_input",
    # re-exported from the modules that hold them
    "ALLOWED_GLOBALS", "ArrayTooLarge", "SafeUnpickler", "allocation_cap",
    "CYCLIC_EDGE_KINDS", "DIGRAPH_STATE", "check_graph", "check_structure", "MAX_ATTR_DEPTH",
    "EVENT_INT_COLS", "events_to_columns", "events_from_columns", "job_to_json", "job_from_json", "to_node_link",
    "from_node_link", "json_default", "save_node_link",
]
