"""Readers: one per format, each producing the canonical event table (docs/model.md).

Formats are recognised by content, never by file name (``--format`` overrides):

========================  ==============================================================
``kineto``                PyTorch profiler / Kineto Chrome-trace JSON
``nsys-sqlite``           Nsight Systems SQLite export
``nsys-json``             Nsight Systems legacy JSON export (one message per line)
``nsys-csv``              ``nsys stats`` ``nvtx_pushpop_trace`` CSV (NVTX ranges only)
``dvdt``                  dv/dt OpenCL profiler JSON (bare list or CK experiment wrapper)
``clintercept``           Intel CLIntercept Chrome JSON (``clintercept_trace.json``)
``pytorch-et``            PyTorch execution trace (every schema from 2021 to 1.1.1-chakra)
========================  ==============================================================
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import orjson

from opgraph.errors import OpgraphInputError
from opgraph.ingest.kineto import parse_json, read_kineto
from opgraph.ingest.kineto_decode import FieldColumns, decode_kineto
from opgraph.ingest.source import SQLITE_MAGIC, SourceBytes, read_source
from opgraph.model.table import EventTable, check_times

__all__ = ['read_trace', 'read_trace_doc', 'detect_format', 'parse_trace_doc', 'TextDoc', 'FORMATS',
           'READERS', 'Reader']

#: Keys of the legacy nsys JSON export's event messages (one per line).
NSYS_JSON_KEYS = frozenset({"TraceProcessEvent", "CudaEvent", "NvtxEvent", "CommEvent", "DiagnosticEvent",
                            "CudaEventRecord", "ProcessStream"})
_NSYS_JSON_TYPES = frozenset({"String", "ThreadName", "ProcessStream"})


@dataclass(frozen=True)
class TextDoc:
    """A trace that is not one JSON document (JSON lines, CSV): its detected format."""

    format: str


def _is_nsys_json_record(obj: Any) -> bool:
    if not isinstance(obj, dict):
        return False
    if NSYS_JSON_KEYS & obj.keys():
        return True
    if obj.get("type") in _NSYS_JSON_TYPES:
        return True
    return set(obj) == {"data"} and isinstance(obj.get("data"), list)


def parse_trace_doc(src: SourceBytes) -> Any:
    """The decoded document of a non-SQLite trace: a JSON value, or a :class:`TextDoc`
    for formats that are not one JSON document (nsys JSON lines, nsys stats CSV).

    CLIntercept writes its Chrome trace without the closing ``]`` (and with a trailing
    comma); such a document is repaired. Anything else that is not JSON raises the JSON
    reader's one-line error. A Kineto trace object is decoded by the typed one-pass decoder
    (its ``traceEvents`` as :class:`~opgraph.ingest.kineto_decode.FieldColumns`)."""
    doc = decode_kineto(src.data)
    if doc is not None:
        return doc
    try:
        return parse_json(src)
    except OpgraphInputError as err:
        data = src.data
        head = data.lstrip()[:1]
        if head == b"{":
            first = data.lstrip().split(b"\n", 1)[0]
            try:
                obj = orjson.loads(first)
            except orjson.JSONDecodeError:
                obj = None
            if _is_nsys_json_record(obj):
                return TextDoc("nsys-json")
        elif head == b"[":
            fixed = _close_chrome_array(data)
            if fixed is not None:
                from opgraph.ingest.clintercept import looks_like_clintercept
                if looks_like_clintercept(fixed):
                    return fixed
        else:
            first = data.lstrip()[:4096].split(b"\n", 1)[0]
            if b"," in first and b"{" not in first:
                from opgraph.ingest.nsys_csv import looks_like_nsys_csv
                if looks_like_nsys_csv(first):
                    return TextDoc("nsys-csv")
        raise err


def _close_chrome_array(data: bytes) -> Any:
    """A Chrome-trace array left open (``[`` ... ``},`` with no ``]``, as CLIntercept and
    some other tracers write it), closed and decoded; None when that does not help."""
    body = data.rstrip()
    if body.endswith(b"]"):
        return None
    body = body.rstrip(b", \t\r\n")
    if not body.endswith(b"}"):
        return None
    try:
        doc = orjson.loads(body + b"]")
    except orjson.JSONDecodeError:
        return None
    return doc if isinstance(doc, list) else None


def _first(doc: Any) -> Any:
    """The first element of a JSON array document (None for anything else)."""
    return doc[0] if isinstance(doc, list) and doc else None


def _is_kineto(data: bytes, doc: Any) -> bool:
    if isinstance(doc, dict):
        return "traceEvents" in doc
    if isinstance(doc, list):
        if not doc:
            return True  # an empty event array
        first = doc[0]
        return isinstance(first, dict) and "ph" in first and not _is_dvdt(data, doc) and not _is_clintercept(data, doc)
    return False


def _is_saved_graph(data: bytes, doc: Any) -> bool:
    return isinstance(doc, dict) and "directed" in doc and "nodes" in doc and "edges" in doc


def _is_et(data: bytes, doc: Any) -> bool:
    if isinstance(doc, dict):
        return "nodes" in doc and ("schema" in doc or "pid" in doc)
    first = _first(doc)
    # (a list whose first event is a dv/dt call or a Chrome event is that format, not an ET)
    return isinstance(first, dict) and "name" in first and "id" in first and (
        "inputs" in first or "parent" in first or "ctrl_deps" in first) and "ph" not in first \
        and not _is_dvdt(data, doc)


def _is_dvdt(data: bytes, doc: Any) -> bool:
    if isinstance(doc, dict):
        return "characteristics_list" in doc
    first = _first(doc)
    return isinstance(first, dict) and "call" in first and "timestamp" in first


def _is_clintercept(data: bytes, doc: Any) -> bool:
    first = _first(doc)
    if not (isinstance(first, dict) and "ph" in first and not _is_dvdt(data, doc)):
        return False
    from opgraph.ingest.clintercept import looks_like_clintercept
    return looks_like_clintercept(doc)


def _read_kineto(src: SourceBytes, doc: Any) -> EventTable:
    return read_kineto(src.path, src=src, doc=doc)


def _read_nsys_sqlite(src: SourceBytes, doc: Any) -> EventTable:
    from opgraph.ingest.nsys_sqlite import read_nsys_sqlite
    return _checked(read_nsys_sqlite(src), src.path)


def _read_nsys_json(src: SourceBytes, doc: Any) -> EventTable:
    from opgraph.ingest.nsys_json import read_nsys_json
    return _checked(read_nsys_json(src, doc), src.path, src)


def _read_nsys_csv(src: SourceBytes, doc: Any) -> EventTable:
    from opgraph.ingest.nsys_csv import read_nsys_csv
    return _checked(read_nsys_csv(src), src.path)


def _read_dvdt(src: SourceBytes, doc: Any) -> EventTable:
    from opgraph.ingest.dvdt import read_dvdt
    return _checked(read_dvdt(src, doc), src.path, src)


def _read_clintercept(src: SourceBytes, doc: Any) -> EventTable:
    from opgraph.ingest.clintercept import read_clintercept
    return _checked(read_clintercept(src, doc), src.path, src)


def _read_et(src: SourceBytes, doc: Any) -> EventTable:
    from opgraph.ingest.et import read_et
    return _checked(read_et(src, doc), src.path, src)


@dataclass(frozen=True)
class Reader:
    """One trace format: its name (``--format``), ``sniff(data, doc)`` (is this file of the
    format? ``data``: the file's bytes; ``doc``: the decoded JSON document, a
    :class:`TextDoc`, or None for SQLite) and ``read(src, doc) -> EventTable``. ``text``:
    the format is not one JSON document (the reader takes the bytes, ``doc`` is a
    :class:`TextDoc`)."""

    name: str
    sniff: Callable[[bytes, Any], bool]
    read: Callable[[SourceBytes, Any], EventTable]
    text: bool = False


#: The readers, in the order their ``sniff`` is tried (the first that says yes wins).
READERS: tuple[Reader, ...] = (
    Reader("nsys-sqlite", lambda data, doc: data.startswith(SQLITE_MAGIC), _read_nsys_sqlite, text=True),
    Reader("nsys-csv", lambda data, doc: isinstance(doc, TextDoc) and doc.format == "nsys-csv", _read_nsys_csv,
           text=True),
    Reader("nsys-json", lambda data, doc: (isinstance(doc, TextDoc) and doc.format == "nsys-json")
           or (isinstance(doc, dict) and not _is_kineto(data, doc) and not _is_saved_graph(data, doc)
               and not _is_et(data, doc) and not _is_dvdt(data, doc) and _is_nsys_json_record(doc)),
           _read_nsys_json, text=True),
    Reader("kineto", _is_kineto, _read_kineto),
    Reader("pytorch-et", lambda data, doc: not _is_saved_graph(data, doc) and _is_et(data, doc), _read_et),
    Reader("dvdt", _is_dvdt, _read_dvdt),
    Reader("clintercept", _is_clintercept, _read_clintercept),
)
_BY_NAME = {r.name: r for r in READERS}

#: Formats ``read_trace`` knows by name (``--format``).
FORMATS = tuple(r.name for r in READERS)


def detect_format(data: bytes, doc: Any = None) -> str:
    """Name the format of a trace from its content (never from its file name).

    Returns one of :data:`FORMATS`, ``opgraph-graph`` (a saved node-link graph), or
    ``unknown``."""
    if not isinstance(doc, TextDoc) and not data.startswith(SQLITE_MAGIC) and not _is_kineto(data, doc) \
            and _is_saved_graph(data, doc):
        return "opgraph-graph"
    for r in READERS:
        if r.sniff(data, doc):
            return r.name
    return "unknown"


def read_trace(path: str | Path, format: str | None = None) -> EventTable:
    """Read any supported trace into an :class:`EventTable` (times in int64 ns).

    ``format`` overrides content detection. Bad input raises
    :class:`~opgraph.errors.OpgraphInputError` with a one-line message.
    """
    src = read_source(path)
    doc = None if src.data.startswith(SQLITE_MAGIC) else parse_trace_doc(src)
    return read_trace_doc(src, doc, format)


def _checked(table: EventTable, path: str, src: SourceBytes | None = None) -> EventTable:
    """``table`` after the time checks every reader's output gets (:func:`check_times`)
    and, for JSON documents (``src``), the nesting bound of saved graphs
    (:func:`~opgraph.ingest.kineto.limit_table_depth`)."""
    check_times(table, path)
    if src is not None:
        from opgraph.ingest.kineto import limit_table_depth
        limit_table_depth(table, src)
    return table


def read_trace_doc(src: SourceBytes, doc: Any, format: str | None = None) -> EventTable:
    """Like :func:`read_trace` for bytes already read (and JSON already decoded, or None)."""
    is_sqlite = src.data.startswith(SQLITE_MAGIC)
    fmt = "nsys-sqlite" if doc is None and is_sqlite else detect_format(src.data, doc)
    if format is not None:
        if format not in FORMATS:
            raise OpgraphInputError(src.path, f"unknown --format {format!r}; known: {', '.join(FORMATS)}")
        if (format == "nsys-sqlite") != is_sqlite:
            raise OpgraphInputError(src.path, f"--format {format}: the file is "
                                              + ("an SQLite database" if is_sqlite else "not an SQLite database"))
        if format in ("nsys-json", "nsys-csv") and not isinstance(doc, TextDoc):
            doc = TextDoc(format)
        fmt = format
    reader = _BY_NAME.get(fmt)
    if fmt != "kineto" and isinstance(doc, dict) and isinstance(doc.get("traceEvents"), FieldColumns):
        doc = parse_json(src)  # another reader forced on a Kineto object: it reads plain JSON values
    if reader is not None and (reader.text or not isinstance(doc, TextDoc)):
        return reader.read(src, doc)
    if isinstance(doc, TextDoc):
        raise OpgraphInputError(src.path, f"--format {fmt}: the file is {doc.format}, "
                                + ("not JSON" if fmt == "kineto" else "not a JSON document"))
    if fmt == "opgraph-graph":
        raise OpgraphInputError(src.path, "a saved opgraph graph, not a trace: load it with opgraph.graph.io.load_any")
    if isinstance(doc, dict):
        raise OpgraphInputError(src.path, "unknown format: a JSON object without 'traceEvents' "
                                          f"(top-level keys: {', '.join(list(doc)[:5])})")
    raise OpgraphInputError(src.path, "unknown format: not a Kineto/Chrome trace, an Nsight Systems export, "
                                      "a dv/dt or CLIntercept OpenCL log or a PyTorch execution trace")
