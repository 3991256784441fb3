"""PyTorch profiler (Kineto) Chrome-trace JSON -> canonical event table.

Reads ``.json`` / ``.json.gz``, the ``{"traceEvents": [...]}`` object and the bare-array
form, old (2021: ``Operator/Runtime/Kernel/Memcpy/Memset``) and new category names, ROCm
and MTIA categories, string pids/tids (``"stream 7"``), flows and instant events.

Timestamps: Kineto writes µs, as integers or as decimals with up to 3 fractional digits.
At epoch magnitude (~1.7e15 µs) a float64 cannot hold the ns digits, so when any ``ts`` is
fractional the exact integer ns are taken from the decimal *text* of the file (rounded to
the nearest ns, never truncated). ``displayTimeUnit`` is never used to infer units.

This module is the reader's entry (:func:`read_kineto`: decode, build the table, check it);
the parts live beside it: :mod:`~opgraph.ingest.kineto_decode` (the typed one-pass decoder into per-field
columns), :mod:`~opgraph.ingest.kineto_events` (the event loop building the
canonical table), :mod:`~opgraph.ingest.kineto_kinds` (kinds by phase and category),
:mod:`~opgraph.ingest.kineto_columns` (type checks, linking keys),
:mod:`~opgraph.ingest.kineto_times` (µs text -> exact int64 ns) and
:mod:`~opgraph.ingest.depth_limit` (the nesting bound of every JSON reader). Their public
names are importable from here too.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import orjson

from opgraph.gc_pause import gc_paused
from opgraph.errors import OpgraphInputError
from opgraph.ingest.depth_limit import ARGS_MAX_DEPTH, ARGS_TOO_DEEP, limit_table_depth
from opgraph.ingest.kineto_decode import FieldColumns, decode_kineto
from opgraph.ingest.kineto_events import events_to_table
from opgraph.ingest.kineto_kinds import CATEGORY_KIND, KNOWN_PH, MTIA_CCP_KIND, MTIA_DEVICE_RECORDS
from opgraph.ingest.source import SourceBytes, read_source
from opgraph.model.table import EventTable, check_times

__all__ = [
    "ARGS_MAX_DEPTH", "ARGS_TOO_DEEP", "CATEGORY_KIND", "KNOWN_PH", "MTIA_CCP_KIND", "MTIA_DEVICE_RECORDS",
    "events_to_table", "limit_table_depth", "parse_json", "post_checks", "read_kineto",
]


def _json_error(path: str, data: bytes, err: orjson.JSONDecodeError) -> OpgraphInputError:
    pos = getattr(err, "pos", None)
    if pos is not None and pos >= len(data.rstrip()) - 1:
        return OpgraphInputError(path, f"truncated JSON: the file ends at byte {len(data)} "
                                       f"before the document is complete")
    msg = str(err).split(":")[0]
    where = f" at line {err.lineno}, column {err.colno}" if hasattr(err, "lineno") else ""
    if data.lstrip()[:1] not in (b"{", b"["):
        return OpgraphInputError(path, "not JSON (and not a known trace format)")
    return OpgraphInputError(path, f"invalid JSON{where}: {msg}")


def parse_json(src: SourceBytes) -> Any:
    """Decode JSON bytes with orjson, mapping failures to a one-line input error."""
    with gc_paused():
        try:
            return orjson.loads(src.data)
        except orjson.JSONDecodeError as e:
            raise _json_error(src.path, src.data, e) from None


def read_kineto(path: str, src: SourceBytes | None = None, doc: Any = None) -> EventTable:
    """Read a Kineto trace file into an :class:`EventTable` (times in ns)."""
    if src is None:
        src = read_source(path)
    if doc is None:
        doc = decode_kineto(src.data) or parse_json(src)
    if isinstance(doc, dict):
        if "traceEvents" not in doc:
            raise OpgraphInputError(src.path, "missing 'traceEvents': not a Kineto/Chrome trace")
        events = doc["traceEvents"]
        top = {k: v for k, v in doc.items() if k != "traceEvents"}
    elif isinstance(doc, list):
        events, top = doc, {}
    else:
        raise OpgraphInputError(src.path, "top-level JSON value is neither an object nor an array")
    if not isinstance(events, (list, FieldColumns)):
        raise OpgraphInputError(src.path, f"'traceEvents' is {type(events).__name__}, expected a list")
    depth_bound = events.depth_bound if isinstance(events, FieldColumns) else None
    with gc_paused():
        table = events_to_table(src, events)
    meta = {
        "format": "kineto",
        "file": src.path,
        "sha256": src.sha256,
        "device_properties": top.pop("deviceProperties", None) or [],
        "distributed_info": top.pop("distributedInfo", None) or {},
        "trace_metadata": top,
    }
    table.meta.update(meta)
    rank = meta["distributed_info"].get("rank") if isinstance(meta["distributed_info"], dict) else None
    if isinstance(rank, int):
        table.frame["rank"] = np.int64(rank)
    post_checks(table)
    check_times(table, src.path)
    limit_table_depth(table, src, depth_bound)  # args, extra and metadata: the bound of saved graphs
    return table




def post_checks(table: EventTable) -> None:
    """Warnings that need the whole table (recoverable oddities)."""
    ev = table.frame
    if ev.empty:
        return
    x = ev[(ev["ph"] == "X") & (ev["dur_ns"] == 0)]
    if len(x):
        table.warn("zero_duration", len(x), int(x["eid"].iloc[0]), "complete events with zero duration")
