"""Readers: one per format, each producing the canonical event table (docs/model.md).

Public names only (docs/architecture.md, "Packages"); the code is in
:mod:`opgraph.ingest.readers`."""

from opgraph.ingest.readers import (  # noqa: F401 - the package's public names
    read_trace,
    read_trace_doc,
    detect_format,
    parse_trace_doc,
    TextDoc,
    FORMATS,
    READERS,
    Reader,
)
from opgraph.model.table import (  # noqa: F401 - the package's public names
    EventTable,
    HealthItem,
)

__all__ = [
    "read_trace",
    "read_trace_doc",
    "detect_format",
    "parse_trace_doc",
    "TextDoc",
    "EventTable",
    "HealthItem",
    "FORMATS",
    "READERS",
    "Reader",
]
