"""Nsight Systems legacy JSON export (``nsys export --export-json``, 2020-2021) -> table.

One protobuf message serialised as JSON per line: events first, then the string table,
streams and thread names. Records are dispatched on their nested object key, not on
``Type``; int64 values may be written as JSON strings (they are cast exactly, never through
float). Records read (see ``schemas/nsys-json.schema.json``):

- ``{"type": "String", "id", "value"}`` (or one ``{"data": [...]}`` array, id = position);
- ``{"type": "ThreadName", "globalTid", "nameId", "priority"}``;
- ``{"Type": 48, "TraceProcessEvent": {startNs, endNs, correlationId, eventClass, name
  (string id), returnValue, globalTid}}`` -> runtime API calls;
- ``{"CudaEvent": {startNs, endNs, correlationId, deviceId, contextId, streamId,
  eventClass, globalPid, <one of kernel | memcpy | memset | sync | cudaEvent>}}`` ->
  kernels (``kernel.demangledName`` / ``shortName`` are string ids), copies
  (``memcpy.sizebytes``, ``copyKind``, ``srcKind``, ``dstKind``), memsets, synchronisations
  (``sync.syncType``, ``sync.eventId``) and event records (``cudaEvent.eventId``, which
  lets event syncs find the stream they wait on);
- ``{"NvtxEvent": {Type (59 push/pop, 60 start/end, 34 mark), Timestamp, EndTimestamp,
  Text (or TextId), GlobalTid, DomainId, Color, Category}}`` -> NVTX ranges;
- ``{"CommEvent": {GlobalPid, Commname, ...}}`` -> process names.
Other messages (DiagnosticEvent, ProcessStream, ...) are counted and skipped.

The mapping to canonical rows is shared with the SQLite reader
(:mod:`opgraph.ingest.nsys_common`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import orjson

from opgraph.errors import OpgraphInputError
from opgraph.ingest.nsys_common import NsysData, assemble
from opgraph.ingest.source import SourceBytes
from opgraph.model.table import EventTable

#: Records validated against the schema (the rest are type-checked while read).
SCHEMA_SAMPLE = 500

_CUDA_SUB = ("kernel", "memcpy", "memset", "sync", "cudaEvent")
_BASE = ("startNs", "endNs", "correlationId", "deviceId", "contextId", "streamId", "eventClass", "globalPid")
_BASE_COLS = ("start", "end", "correlationId", "deviceId", "contextId", "streamId", "eventClass", "globalPid")


class _Bad(Exception):
    def __init__(self, problem: str):
        self.problem = problem


def _i(v: Any, what: str) -> int:
    """An int64 value that may be a JSON string (exact; never through float)."""
    out: int | None = None
    if type(v) is int:
        out = v
    elif type(v) is str:
        s = v.strip()
        if s.lstrip("-").isdigit():
            out = int(s)
    elif type(v) is float and v.is_integer():
        out = int(v)
    if out is not None:
        if -(2**63) <= out < 2**63:
            return out
        raise _Bad(f"'{what}' is {v!r:.40}, which does not fit int64")
    raise _Bad(f"'{what}' is {type(v).__name__} {v!r:.40}, expected an integer (or an integer string)")


def _opt_i(d: dict, key: str, what: str, default: int | None = None) -> int | None:
    v = d.get(key)
    return default if v is None else _i(v, what)


def read_nsys_json(src: SourceBytes, doc: Any = None) -> EventTable:
    """Read a legacy nsys JSON export (one message per line) into an :class:`EventTable`."""
    path = src.path
    lines = src.data.split(b"\n")
    recs: list[tuple[int, dict]] = []
    for ln, raw in enumerate(lines):
        raw = raw.strip()
        if not raw:
            continue
        try:
            obj = orjson.loads(raw)
        except orjson.JSONDecodeError as e:
            cut = ln == len(lines) - 1 or (ln == len(lines) - 2 and not lines[-1].strip())
            what = "truncated (the file ends inside it)" if cut else f"invalid JSON ({str(e).split(':')[0]})"
            raise OpgraphInputError(path, f"line {ln + 1}: {what}", event_index=len(recs)) from None
        if not isinstance(obj, dict):
            raise OpgraphInputError(path, f"line {ln + 1}: a JSON {type(obj).__name__}, expected an object "
                                          "(one nsys message per line)", event_index=len(recs))
        recs.append((ln, obj))
    _validate(path, recs)

    data = NsysData(fmt="nsys-json")
    rt: dict[str, list] = {k: [] for k in ("start", "end", "correlationId", "eventClass", "nameId",
                                           "returnValue", "globalTid")}
    dev: dict[str, dict[str, list]] = {s: {} for s in _CUDA_SUB}
    nv: dict[str, list] = {k: [] for k in ("start", "end", "eventType", "text", "textId", "globalTid",
                                           "domainId", "color", "category")}
    skipped: dict[str, int] = {}
    string_list: list[str] | None = None
    for idx, (ln, r) in enumerate(recs):
        try:
            if "TraceProcessEvent" in r:
                e = r["TraceProcessEvent"]
                rt["start"].append(_i(e.get("startNs"), "startNs"))
                rt["end"].append(_opt_i(e, "endNs", "endNs", -1))
                rt["correlationId"].append(_opt_i(e, "correlationId", "correlationId", 0))
                rt["eventClass"].append(_opt_i(e, "eventClass", "eventClass", 0))
                rt["nameId"].append(_opt_i(e, "name", "name", -1))
                rt["returnValue"].append(_opt_i(e, "returnValue", "returnValue"))
                rt["globalTid"].append(_i(e.get("globalTid"), "globalTid"))
            elif "CudaEvent" in r:
                e = r["CudaEvent"]
                sub = next((s for s in _CUDA_SUB if s in e), None)
                if sub is None:
                    skipped["CudaEvent(other)"] = skipped.get("CudaEvent(other)", 0) + 1
                    continue
                cols = dev[sub]
                row = {c: _opt_i(e, k, k, -1 if k != "correlationId" else 0) for k, c in zip(_BASE, _BASE_COLS)}
                if sub != "cudaEvent" and row["start"] == -1:
                    raise _Bad("'startNs' is missing")
                for k, v in (e.get(sub) or {}).items():
                    if type(v) is str and v.strip().lstrip("-").isdigit():
                        v = int(v)
                    row["bytes" if k == "sizebytes" else k] = v
                n_before = len(next(iter(cols.values()))) if cols else 0
                for c in [*cols, *(k for k in row if k not in cols)]:  # first-seen order: deterministic args
                    if c not in cols:
                        cols[c] = [None] * n_before
                    cols[c].append(row.get(c))
            elif "NvtxEvent" in r:
                e = r["NvtxEvent"]
                nv["start"].append(_i(e.get("Timestamp"), "Timestamp"))
                nv["end"].append(_opt_i(e, "EndTimestamp", "EndTimestamp"))
                nv["eventType"].append(_i(e.get("Type", r.get("Type")), "Type"))
                nv["text"].append(e.get("Text"))
                nv["textId"].append(_opt_i(e, "TextId", "TextId"))
                nv["globalTid"].append(_i(e.get("GlobalTid"), "GlobalTid"))
                nv["domainId"].append(_opt_i(e, "DomainId", "DomainId", 0))
                nv["color"].append(e.get("Color"))
                nv["category"].append(e.get("Category"))
            elif r.get("type") == "String":
                data.strings[_i(r.get("id"), "id")] = str(r.get("value"))
            elif set(r) == {"data"} and isinstance(r["data"], list):
                string_list = [str(s) for s in r["data"]]
            elif r.get("type") == "ThreadName":
                data.thread_names.append((_i(r.get("globalTid"), "globalTid"), _i(r.get("nameId"), "nameId")))
            elif "CommEvent" in r:
                e = r["CommEvent"]
                gp = _opt_i(e, "GlobalPid", "GlobalPid")
                if gp is not None:
                    data.process_names.append(((gp >> 24) & 0xFFFFFF, e.get("Commname") or e.get("Command")))
            else:
                key = next(iter(r), "<empty>") if r.get("type") is None else str(r.get("type"))
                if key == "Type" and len(r) > 1:
                    key = [k for k in r if k != "Type"][0]
                skipped[key] = skipped.get(key, 0) + 1
        except _Bad as b:
            raise OpgraphInputError(path, f"line {ln + 1}: {b.problem}", event_index=idx) from None
    if string_list is not None:
        data.strings.update({i: s for i, s in enumerate(string_list) if i not in data.strings})
    data.thread_names = [(g, data.strings.get(i, str(i))) for g, i in data.thread_names]

    def arrays(cols: dict[str, list]) -> dict[str, np.ndarray]:
        out = {}
        for c, vals in cols.items():
            if not vals:
                return {}
            try:
                out[c] = np.array(vals, dtype=np.int64) if all(type(v) is int for v in vals) else None
            except OverflowError:
                out[c] = None
            if out[c] is None:
                arr = np.empty(len(vals), dtype=object)
                arr[:] = vals
                out[c] = arr
        return out

    data.runtime = arrays(rt)
    data.kernel = arrays(dev["kernel"])
    data.memcpy = arrays(dev["memcpy"])
    data.memset = arrays(dev["memset"])
    data.sync = arrays(dev["sync"])
    data.cuda_event = arrays(dev["cudaEvent"])
    data.nvtx = arrays(nv)
    if not (data.runtime or data.kernel or data.memcpy or data.memset or data.nvtx):
        raise OpgraphInputError(path, "no TraceProcessEvent, CudaEvent or NvtxEvent records: nothing to read")
    data.absent = [n for n, c in (("strings", data.strings), ("TraceProcessEvent", data.runtime),
                                  ("CudaEvent kernel", data.kernel), ("CudaEvent memcpy", data.memcpy),
                                  ("CudaEvent memset", data.memset), ("CudaEvent sync", data.sync),
                                  ("NvtxEvent", data.nvtx), ("ThreadName", data.thread_names)) if not c]
    data.trace_metadata = {"nsys_json_skipped": skipped, "lines": len(recs)}
    table = assemble(data, path)
    table.meta.update({"file": path, "sha256": src.sha256})
    return table


def _validate(path: str, recs: list[tuple[int, dict]]) -> None:
    """Schema check of the first records (``schemas/nsys-json.schema.json``), one line."""
    from opgraph.ingest.validate import first_error

    for idx, (ln, r) in enumerate(recs[:SCHEMA_SAMPLE]):
        err = first_error(r, "nsys-json.schema.json")
        if err:
            raise OpgraphInputError(path, f"line {ln + 1}: not a valid nsys JSON message ({err})", event_index=idx)
