"""``nsys stats --report nvtx_pushpop_trace --format csv`` -> NVTX annotation ranges.

The report lists NVTX push/pop ranges with ``Start (ns)``, ``End (ns)``, ``Name``, ``PID``,
``TID`` (plus nesting columns). Each row becomes an ``annotation`` event on its thread, so
``info``, ``nvtx``, ``iterations --step-regex`` and the host breakdowns work; there is no
CUDA activity in such a report, so the GPU analyses have nothing to say. Any other ``nsys
stats`` CSV report is rejected with a one-line "not a trace opgraph reads" error.
"""

from __future__ import annotations

import csv
import io

import numpy as np

from opgraph.errors import OpgraphInputError
from opgraph.ingest.canon import make_table
from opgraph.ingest.source import SourceBytes
from opgraph.model.table import EventTable

REQUIRED = ("Start (ns)", "End (ns)", "Name", "PID", "TID")
#: Header cells that mark an ``nsys stats`` CSV report (any report).
_STATS_MARKERS = ("(ns)", "Time (%)", "Total Time", "Instances", "Avg (ns)")


def looks_like_nsys_csv(first_line: bytes) -> bool:
    """True for the header line of an ``nsys stats`` CSV report."""
    text = first_line.decode("utf-8", "replace")
    return any(m in text for m in _STATS_MARKERS)


def _int(v: str, path: str, row: int, col: str) -> int:
    try:
        return int(v)
    except ValueError:
        try:
            f = float(v)
        except ValueError:
            raise OpgraphInputError(path, f"column {col!r}: {v!r} is not a number", event_index=row) from None
        if f != f or f in (float("inf"), float("-inf")):
            raise OpgraphInputError(path, f"column {col!r}: {v!r} is not a finite number", event_index=row)
        return int(round(f))


def read_nsys_csv(src: SourceBytes) -> EventTable:
    """Read an ``nvtx_pushpop_trace`` CSV report (times in ns)."""
    path = src.path
    text = src.data.decode("utf-8", "replace")
    reader = csv.reader(io.StringIO(text))
    try:
        header = next(reader)
    except StopIteration:
        raise OpgraphInputError(path, "empty file") from None
    header = [h.strip() for h in header]
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise OpgraphInputError(path, "an nsys stats CSV report that is not nvtx_pushpop_trace (columns "
                                      f"{', '.join(header[:6])}...): not a trace opgraph reads; export the "
                                      "report as SQLite (nsys export --type sqlite) instead")
    ix = {c: header.index(c) for c in header}
    ts, dur, names, pid, tid, args = [], [], [], [], [], []
    for r, row in enumerate(reader):
        if not row or all(not c.strip() for c in row):
            continue
        if len(row) < len(header):
            raise OpgraphInputError(path, f"row has {len(row)} columns, the header {len(header)}", event_index=r)
        start = _int(row[ix["Start (ns)"]], path, r, "Start (ns)")
        end = _int(row[ix["End (ns)"]], path, r, "End (ns)")
        if end < start:
            raise OpgraphInputError(path, f"range ends before it starts ({end} < {start})", event_index=r)
        if start < -(2**63) or end >= 2**63 or end - start >= 2**63:
            raise OpgraphInputError(path, f"range {start}..{end} ns does not fit int64 nanoseconds "
                                          "(about 292 years)", event_index=r)
        ts.append(start)
        dur.append(end - start)
        names.append(row[ix["Name"]])
        pid.append(_int(row[ix["PID"]], path, r, "PID"))
        tid.append(_int(row[ix["TID"]], path, r, "TID"))
        args.append({h: row[i] for h, i in ix.items()})
    n = len(ts)
    table = make_table(n, kind=np.full(n, "annotation", dtype=object), name=names, ts_ns=ts, dur_ns=dur,
                       pid=pid, tid=tid, args=args, cat="nvtx", ph="X")
    table.meta.update({"format": "nsys-csv", "file": path, "sha256": src.sha256, "device_properties": [],
                       "distributed_info": {}, "trace_metadata": {"report": "nvtx_pushpop_trace",
                                                                  "columns": header}})
    table.warn("nvtx_only", n, 0 if n else None,
               "an nsys stats nvtx_pushpop_trace report holds NVTX ranges only (no CUDA API calls or GPU "
               "activity); export the report as SQLite for the full graph")
    return table
