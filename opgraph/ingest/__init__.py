"""Readers: one per format, each producing the canonical event table (docs/model.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from opgraph.errors import OpgraphInputError
from opgraph.ingest.kineto import parse_json, read_kineto
from opgraph.ingest.source import SQLITE_MAGIC, SourceBytes, read_source
from opgraph.ingest.table import EventTable, HealthItem

__all__ = ["read_trace", "read_trace_doc", "detect_format", "EventTable", "HealthItem", "FORMATS"]

#: Formats ``read_trace`` knows by name (``--format``).
FORMATS = ("kineto",)


def detect_format(data: bytes, doc: Any = None) -> str:
    """Name the format of a trace from its content (never from its file name).

    Returns one of :data:`FORMATS` or a descriptive name of a recognised but unsupported
    format (``nsys-sqlite``, ``pytorch-et``), or ``unknown``.
    """
    if data.startswith(SQLITE_MAGIC):
        return "nsys-sqlite"
    if isinstance(doc, dict):
        if "traceEvents" in doc:
            return "kineto"
        if "directed" in doc and "nodes" in doc and "edges" in doc:
            return "opgraph-graph"
        if "nodes" in doc and ("schema" in doc or "pid" in doc):
            return "pytorch-et"
        return "unknown"
    if isinstance(doc, list):
        if not doc:
            return "kineto"
        first = doc[0]
        if isinstance(first, dict) and "ph" in first:
            return "kineto"
        if isinstance(first, dict) and "call" in first and "timestamp" in first:
            return "dvdt"
        if isinstance(first, dict) and "name" in first and ("inputs" in first or "parent" in first):
            return "pytorch-et"
    return "unknown"


def read_trace(path: str | Path, format: str | None = None) -> EventTable:
    """Read any supported trace into an :class:`EventTable` (times in int64 ns).

    ``format`` overrides content detection. Bad input raises
    :class:`~opgraph.errors.OpgraphInputError` with a one-line message.
    """
    src = read_source(path)
    doc = None if src.data.startswith(SQLITE_MAGIC) else parse_json(src)
    return read_trace_doc(src, doc, format)


def read_trace_doc(src: SourceBytes, doc: Any, format: str | None = None) -> EventTable:
    """Like :func:`read_trace` for bytes already read (and JSON already decoded, or None)."""
    fmt = "nsys-sqlite" if doc is None and src.data.startswith(SQLITE_MAGIC) else detect_format(src.data, doc)
    if format is not None:
        if format not in FORMATS:
            raise OpgraphInputError(src.path, f"unknown --format {format!r}; known: {', '.join(FORMATS)}")
        fmt = format
    if fmt == "kineto":
        return read_kineto(src.path, src=src, doc=doc)
    if fmt == "unknown":
        if isinstance(doc, dict):
            raise OpgraphInputError(src.path, "unknown format: a JSON object without 'traceEvents' "
                                              f"(top-level keys: {', '.join(list(doc)[:5])})")
        raise OpgraphInputError(src.path, "unknown format: not a Kineto/Chrome trace")
    raise OpgraphInputError(src.path, f"{fmt} input is recognised but not supported by this version")
