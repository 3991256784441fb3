"""Nsight Systems SQLite export (``nsys export --type sqlite``) -> canonical event table.

Reads ``StringIds``, ``CUPTI_ACTIVITY_KIND_RUNTIME`` / ``_KERNEL`` / ``_MEMCPY`` /
``_MEMSET`` / ``_SYNCHRONIZATION`` / ``_CUDA_EVENT`` / ``_GRAPH_TRACE``, ``NVTX_EVENTS``,
``ThreadNames``, ``PROCESSES``, the ``ENUM_*`` tables it needs, ``TARGET_INFO_GPU`` /
``TARGET_INFO_CUDA_GPU`` (device properties) and the export metadata. Tables are created
lazily by nsys (absent when empty) and their columns differ between versions: what is
there is read, what is not is listed in a ``nsys_tables_absent`` health item. The mapping
to canonical rows is :mod:`opgraph.ingest.nsys_common`.

The database is opened read-only (``mode=ro&immutable=1``; a gzip-compressed export is
deserialised in memory). Text that is not UTF-8 (Windows user names and paths in the
metadata) is decoded with replacement characters. A truncated or corrupt file gives a
one-line :class:`~opgraph.errors.OpgraphInputError`.
"""

from __future__ import annotations

import sqlite3
from itertools import chain
from pathlib import Path
from typing import Any

import numpy as np

from opgraph.errors import OpgraphInputError
from opgraph.ingest.nsys_common import NsysData, assemble
from opgraph.ingest.source import SourceBytes
from opgraph.model.table import EventTable

RUNTIME = "CUPTI_ACTIVITY_KIND_RUNTIME"
KERNEL = "CUPTI_ACTIVITY_KIND_KERNEL"
MEMCPY = "CUPTI_ACTIVITY_KIND_MEMCPY"
MEMSET = "CUPTI_ACTIVITY_KIND_MEMSET"
SYNC = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"
CUDA_EVENT = "CUPTI_ACTIVITY_KIND_CUDA_EVENT"
GRAPH_TRACE = "CUPTI_ACTIVITY_KIND_GRAPH_TRACE"
NVTX = "NVTX_EVENTS"
#: Tables whose absence is reported (the others are optional).
MAIN_TABLES = ("StringIds", RUNTIME, KERNEL, MEMCPY, MEMSET, SYNC, NVTX, "ThreadNames")
ACTIVITY_TABLES = (RUNTIME, KERNEL, MEMCPY, MEMSET, SYNC, NVTX, GRAPH_TRACE)


class _Db:
    """A read-only connection with one-line errors and column discovery."""

    def __init__(self, src: SourceBytes):
        self.path = src.path
        _check_size(src)
        try:
            if src.compressed:
                self.con = sqlite3.connect(":memory:")
                self.con.deserialize(src.data)
            else:
                uri = Path(src.path).resolve().as_uri() + "?mode=ro&immutable=1"
                self.con = sqlite3.connect(uri, uri=True)
        except (sqlite3.Error, AttributeError, OSError) as e:
            raise OpgraphInputError(self.path, f"cannot open SQLite database ({e})") from None
        # Exports may hold non-UTF-8 text (Windows user names, paths): never fail on it.
        self.con.text_factory = lambda b: b.decode("utf-8", "replace")
        self.tables = {r[0] for r in self.query("SELECT name FROM sqlite_master WHERE type='table'")}
        self._cols: dict[str, list[str]] = {}

    def query(self, sql: str, decode: bool = True) -> list[tuple]:
        """Rows of ``sql``; BLOB values (SQLite stores any type in any column) are decoded
        as text with replacement characters, like non-UTF-8 TEXT (``decode``; :meth:`fetch`
        does it per column)."""
        try:
            rows = self.con.execute(sql).fetchall()
        except sqlite3.DatabaseError as e:
            raise OpgraphInputError(self.path, f"corrupt or truncated SQLite database ({e})") from None
        if decode and rows and bytes in set(map(type, chain.from_iterable(rows))):
            rows = [tuple(_text(v) for v in r) for r in rows]
        return rows

    def columns(self, table: str) -> list[str]:
        """The stored columns of ``table`` (``PRAGMA table_xinfo``, hidden = 0). Generated
        columns are left out: nsys writes none, ``SELECT *`` would return them and shift
        every value after one (bad-input audit #21), and a ``VIRTUAL`` one is computed on
        read (``zeroblob(900000000)`` in a 49 kB file asked for 3.5 GB: audit #16). Every
        query names the columns it reads (:meth:`select`)."""
        if table not in self._cols:
            if table not in self.tables:
                self._cols[table] = []
            else:
                rows = self.query(f'PRAGMA table_xinfo("{table}")')
                # hidden: 0 ordinary, 1 hidden (virtual tables), 2 / 3 generated (virtual / stored)
                self._cols[table] = [r[1] for r in rows if len(r) < 7 or r[6] == 0]
        return self._cols[table]

    def select(self, table: str, tail: str = "", decode: bool = True) -> tuple[list[str], list[tuple]]:
        """``(columns, rows)`` of ``table`` with the columns named explicitly, so values
        always line up with their names."""
        cols = self.columns(table)
        if not cols:
            return [], []
        names = ", ".join('"' + c.replace('"', '""') + '"' for c in cols)
        return cols, self.query(f'SELECT {names} FROM "{table}" {tail}', decode)

    def fetch(self, table: str, ints: tuple[str, ...] = ()) -> dict[str, np.ndarray]:
        """Every column of ``table`` in rowid order. Columns in ``ints`` that hold only
        integers (NULLs aside) become int64 arrays with NULL -> -1 when they have no NULL,
        else object arrays; the rest are object arrays (None for NULL)."""
        if table not in self.tables:
            return {}
        cols, rows = self.select(table, "ORDER BY rowid", decode=False)
        if not rows:
            return {}
        out: dict[str, np.ndarray] = {}
        for c, vals in zip(cols, zip(*rows)):
            arr = None
            if c in ints:
                try:
                    arr = np.array(vals, dtype=np.int64)
                except (TypeError, ValueError, OverflowError):
                    arr = None
            if arr is None:
                if bytes in set(map(type, vals)):
                    vals = tuple(map(_text, vals))
                arr = np.empty(len(vals), dtype=object)
                arr[:] = vals
            out[c] = arr
        return out

    def enum(self, table: str) -> dict[int, str]:
        if table not in self.tables or not {"id", "label"} <= set(self.columns(table)):
            return {}
        return {int(i): str(lbl) for i, lbl in self.query(f'SELECT id, label FROM "{table}"') if isinstance(i, int)}

    def key_values(self, *tables: str) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for t in tables:
            if t in self.tables and {"name", "value"} <= set(self.columns(t)):
                out.update({str(k): v for k, v in self.query(f'SELECT name, value FROM "{t}"')})
        return out


def _text(v: Any) -> Any:
    return v.decode("utf-8", "replace") if isinstance(v, bytes) else v


def _check_size(src: SourceBytes) -> None:
    """A file shorter than its header's page count says is truncated (SQLite itself only
    notices when a query touches a missing page)."""
    h = src.data[:100]
    if len(h) < 100:
        raise OpgraphInputError(src.path, f"truncated SQLite database ({len(src.data)} bytes, shorter than its header)")
    page = int.from_bytes(h[16:18], "big")
    page = 65536 if page == 1 else page
    pages = int.from_bytes(h[28:32], "big")
    valid = h[24:28] == h[92:96]          # the in-header size is valid only when these agree
    if valid and pages and page and len(src.data) < pages * page:
        raise OpgraphInputError(src.path, f"truncated SQLite database: {len(src.data)} bytes, "
                                          f"its header says {pages} pages of {page} bytes")


_TIME_INTS = ("start", "end", "globalTid", "globalPid", "correlationId", "deviceId", "contextId", "streamId",
              "eventClass", "nameId", "eventType", "domainId", "syncType", "eventId", "copyKind", "srcKind",
              "dstKind", "memKind", "demangledName", "shortName", "mangledName", "bytes")


def read_nsys_sqlite(src: SourceBytes) -> EventTable:
    """Read an Nsight Systems SQLite export into an :class:`EventTable` (times in ns)."""
    db = _Db(src)
    try:
        data = _collect(db)
    finally:
        db.con.close()
    table = assemble(data, src.path)
    table.meta.update({"file": src.path, "sha256": src.sha256})
    return table


def _collect(db: _Db) -> NsysData:
    if not any(t in db.tables for t in ACTIVITY_TABLES):
        found = ", ".join(sorted(db.tables)[:6]) or "no tables"
        raise OpgraphInputError(db.path, "SQLite database without Nsight Systems activity tables "
                                         f"(CUPTI_ACTIVITY_KIND_*, NVTX_EVENTS; found: {found}): not an nsys export")
    data = NsysData(fmt="nsys-sqlite")
    if "StringIds" in db.tables:
        data.strings = {i: v if isinstance(v, str) else ("" if v is None else str(v)) for i, v in db.query('SELECT id, value FROM "StringIds"')
                        if isinstance(i, int)}
    data.runtime = db.fetch(RUNTIME, _TIME_INTS)
    data.kernel = db.fetch(KERNEL, _TIME_INTS)
    data.memcpy = db.fetch(MEMCPY, _TIME_INTS)
    data.memset = db.fetch(MEMSET, _TIME_INTS)
    data.graph_trace = db.fetch(GRAPH_TRACE, _TIME_INTS)
    data.sync = db.fetch(SYNC, _TIME_INTS)
    data.cuda_event = db.fetch(CUDA_EVENT, _TIME_INTS)
    data.nvtx = db.fetch(NVTX, ("start", "eventType", "globalTid", "domainId"))
    data.copy_kind = db.enum("ENUM_CUDA_MEMCPY_OPER")
    data.mem_kind = db.enum("ENUM_CUDA_MEM_KIND")
    data.sync_enum = db.enum("ENUM_CUPTI_SYNC_TYPE")
    if "ThreadNames" in db.tables and {"globalTid", "nameId"} <= set(db.columns("ThreadNames")):
        data.thread_names = [(g, data.strings.get(i, str(i))) for g, i in
                             db.query('SELECT globalTid, nameId FROM "ThreadNames"') if isinstance(g, int)]
    if "PROCESSES" in db.tables and {"pid", "name"} <= set(db.columns("PROCESSES")):
        data.process_names = [(p, nm) for p, nm in db.query('SELECT pid, name FROM "PROCESSES"')]
    data.device_properties = _device_props(db)
    session: dict[str, Any] = {}
    if "TARGET_INFO_SESSION_START_TIME" in db.tables:
        cols, rows = db.select("TARGET_INFO_SESSION_START_TIME", "LIMIT 1")
        if rows:
            session = dict(zip(cols, rows[0]))
    data.trace_metadata = {"nsys_export": db.key_values("EXPORT_META_DATA", "META_DATA_EXPORT"),
                           "session_start": session, "nsys_tables": sorted(db.tables)}
    data.absent = [t for t in MAIN_TABLES if t not in db.tables]
    return data


def _device_props(db: _Db) -> list[dict[str, Any]]:
    """Kineto-style ``deviceProperties`` from the target-info tables."""
    out: list[dict[str, Any]] = []
    if "TARGET_INFO_CUDA_GPU" in db.tables:
        cols, rows = db.select("TARGET_INFO_CUDA_GPU")
        for r in rows:
            d = dict(zip(cols, r))
            out.append({"id": d.get("deviceId"), "name": d.get("name"), "totalGlobalMem": d.get("globalMemorySize"),
                        "computeMajor": d.get("computeCapabilityMajor"),
                        "computeMinor": d.get("computeCapabilityMinor"),
                        "maxThreadsPerBlock": d.get("maxThreadsPerBlock"), "warpSize": d.get("numThreadsPerWarp"),
                        "regsPerBlock": d.get("maxRegistersPerBlock"),
                        "regsPerMultiprocessor": d.get("maxRegistersPerMultiprocessor"),
                        "sharedMemPerBlock": d.get("maxSharedMemoryPerBlock"),
                        "sharedMemPerMultiprocessor": d.get("maxSharedMemoryPerMultiprocessor"),
                        "numSms": d.get("numMultiprocessors"), "l2CacheSize": d.get("l2CacheSize")})
    elif "TARGET_INFO_GPU" in db.tables:
        cols, rows = db.select("TARGET_INFO_GPU")
        for r in rows:
            d = dict(zip(cols, r))
            if "computeMajor" in d and not d.get("computeMajor"):
                continue  # not a CUDA device (e.g. an integrated display adapter)
            out.append({"id": d.get("cuDevice", d.get("id", d.get("deviceId"))), "name": d.get("name"),
                        "totalGlobalMem": d.get("totalMemory"),
                        "computeMajor": d.get("computeMajor"), "computeMinor": d.get("computeMinor"),
                        "maxThreadsPerBlock": d.get("maxThreadsPerBlock"), "warpSize": d.get("threadsPerWarp"),
                        "regsPerBlock": d.get("maxRegistersPerBlock"), "regsPerMultiprocessor": d.get("maxRegistersPerSm"),
                        "sharedMemPerBlock": d.get("maxShmemPerBlock"),
                        "sharedMemPerMultiprocessor": d.get("maxShmemPerSm"),
                        "sharedMemPerBlockOptin": d.get("maxShmemPerBlockOptin"),
                        "numSms": d.get("smCount"), "l2CacheSize": d.get("l2CacheSize"),
                        "memoryBandwidth": d.get("memoryBandwidth"), "clockRate": d.get("clockRate")})
    return [{k: v for k, v in d.items() if v is not None} for d in out]
