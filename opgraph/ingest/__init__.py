"""Readers: one per format, each producing the canonical event table (docs/model.md).

The package's public names, no logic: each is defined in the module it is imported from
below (the package's own code is in :mod:`opgraph.ingest.readers`), and code inside opgraph
imports it from there."""

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
from opgraph.ingest.table import (  # noqa: F401 - the package's public names
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
