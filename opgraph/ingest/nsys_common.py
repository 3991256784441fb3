"""Nsight Systems records (SQLite export or legacy JSON export) -> canonical event table.

Both nsys readers collect the same columns (named as in the SQLite export) into an
:class:`NsysData` and call :func:`assemble`:

- runtime API calls (``CUPTI_ACTIVITY_KIND_RUNTIME`` / ``TraceProcessEvent``) -> ``runtime``
  rows on the calling thread (``pid``/``tid`` decoded from ``globalTid``); "CUDA backtrace"
  duplicates (event class 67, written next to the real call when call chains are sampled)
  are dropped;
- kernels, memcpy, memset (and graph-level CUDA-graph traces) -> ``kernel`` / ``memcpy`` /
  ``memset`` rows, ``device`` = deviceId, ``stream`` = streamId, ``pid`` = deviceId,
  ``tid`` = streamId (the Kineto layout); memcpy/memset names follow Kineto
  (``Memcpy DtoH (Device -> Pageable)``, ``Memset (Device)``);
- synchronisations -> ``cuda_sync`` rows the graph builder understands (``cuda_sync_kind``
  ``Stream Sync`` / ``Event Sync`` / ``Stream Wait Event`` / ``Context Sync``). The kind is
  taken from the API call that synchronised, because nsys's ``syncType`` numbering changed
  between versions (2022.1 writes 1/2/3 for context/event/stream sync, 2025.3 writes 2 for
  ``cudaStreamSynchronize`` while its own ENUM table calls 2 "stream wait event"); event
  syncs find their ``cudaEventRecord`` through the CUDA-event records (eventId -> the
  latest record of that event before the sync);
- NVTX push/pop (59) and start/end (60) ranges -> ``annotation`` rows on their thread,
  marks (34) -> ``instant``, domains/categories/thread names -> ``meta``;
- thread and process names of the threads that have events -> ``thread_name`` /
  ``process_name`` meta rows.

Correlation ids are unique only within a process, so the table's ``correlation`` is one
int64 per (process, id): ``process code << 32 | correlationId`` (the original id stays in
``args``). Times are ns already. ``eid`` numbers the rows in the order runtime, kernels,
memcpy, memset, graph traces, syncs, NVTX, meta (each source in its own order).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import pandas as pd

from opgraph.errors import OpgraphInputError
from opgraph.ingest.canon import combine_corr, make_table
from opgraph.model.table import NONE_ID, EventTable

NVTX_PUSHPOP, NVTX_STARTEND, NVTX_MARK, NVTX_THREAD_NAME, NVTX_DOMAIN_CREATE = 59, 60, 34, 39, 75
_NVTX_META = {33: "nvtx_category", 75: "nvtx_domain_create", 76: "nvtx_domain_destroy", 39: "thread_name"}
#: Event class of the duplicate "CUDA backtrace" rows of the runtime table.
BACKTRACE_CLASS = 67
NO_ID = 0xFFFFFFFF
_API_SUFFIX_RE = re.compile(r"_v\d{4,}$")

#: CUPTI memcpy kinds and memory kinds (used when the export has no ENUM tables).
COPY_KIND = {0: "Unknown", 1: "HtoD", 2: "DtoH", 3: "HtoA", 4: "AtoH", 5: "AtoA", 6: "AtoD", 7: "DtoA",
             8: "DtoD", 9: "HtoH", 10: "PtoP", 11: "HtoD", 12: "DtoH", 13: "DtoD"}
MEM_KIND = {0: "Pageable", 1: "Pinned", 2: "Device", 3: "Array", 4: "Managed", 5: "Device Static",
            6: "Managed Static", 7: "Unknown"}
_COPY_LABEL = {"Host-to-Device": "HtoD", "Device-to-Host": "DtoH", "Host-to-Array": "HtoA",
               "Array-to-Host": "AtoH", "Array-to-Array": "AtoA", "Array-to-Device": "AtoD",
               "Device-to-Array": "DtoA", "Device-to-Device": "DtoD", "Host-to-Host": "HtoH",
               "Peer-to-Peer": "PtoP", "Unified Host-to-Device": "HtoD", "Unified Device-to-Host": "DtoH",
               "Unified Device-to-Device": "DtoD"}
_SYNC_API = (
    (re.compile(r"^(cuda|cu)StreamWaitEvent"), "Stream Wait Event"),
    (re.compile(r"^(cuda|cu)StreamSynchronize"), "Stream Sync"),
    (re.compile(r"^(cuda|cu)EventSynchronize"), "Event Sync"),
    (re.compile(r"^(cudaDeviceSynchronize|cuCtxSynchronize|cudaThreadSynchronize)"), "Context Sync"),
)
#: CUPTI synchronisation types (used only when the API call is unknown).
SYNC_TYPE = {1: "Event Sync", 2: "Stream Wait Event", 3: "Stream Sync", 4: "Context Sync"}

Columns = dict[str, np.ndarray]


def decode_global_id(gid: Any) -> tuple[np.ndarray, np.ndarray]:
    """(PID, TID) of nsys ``globalTid`` values: PID = (id >> 24) & 0xFFFFFF, TID = id & 0xFFFFFF."""
    gid = np.asarray(gid, dtype=np.int64)
    return (gid >> 24) & 0xFFFFFF, gid & 0xFFFFFF


def strip_api_version(name: Any) -> Any:
    """``cudaLaunchKernel_v7000`` -> ``cudaLaunchKernel`` (nsys appends the CUDA version in
    which an entry point appeared; ``cuMemcpyHtoD_v2`` keeps its real ``_v2``)."""
    return _API_SUFFIX_RE.sub("", name) if isinstance(name, str) else name


@dataclass
class NsysData:
    """What an nsys reader collected, as columns named like the SQLite export's."""

    fmt: str
    strings: dict[int, str] = field(default_factory=dict)
    runtime: Columns = field(default_factory=dict)
    kernel: Columns = field(default_factory=dict)
    memcpy: Columns = field(default_factory=dict)
    memset: Columns = field(default_factory=dict)
    graph_trace: Columns = field(default_factory=dict)
    sync: Columns = field(default_factory=dict)
    cuda_event: Columns = field(default_factory=dict)
    nvtx: Columns = field(default_factory=dict)
    copy_kind: dict[int, str] = field(default_factory=dict)
    mem_kind: dict[int, str] = field(default_factory=dict)
    sync_enum: dict[int, str] = field(default_factory=dict)
    thread_names: list[tuple[int, str]] = field(default_factory=list)   # (globalTid, name)
    process_names: list[tuple[int, str]] = field(default_factory=list)  # (pid, name)
    device_properties: list[dict[str, Any]] = field(default_factory=list)
    trace_metadata: dict[str, Any] = field(default_factory=dict)
    absent: list[str] = field(default_factory=list)
    health: list[tuple[str, int, int | None, str]] = field(default_factory=list)


def _n(cols: Columns) -> int:
    for v in cols.values():
        return len(v)
    return 0


def _int(cols: Columns, name: str, default: int, n: int) -> np.ndarray:
    v = cols.get(name)
    if v is None:
        return np.full(n, default, dtype=np.int64)
    if v.dtype == object:
        return np.array([x if isinstance(x, (int, np.integer)) and not isinstance(x, bool) else default
                         for x in v.tolist()], dtype=np.int64)
    return v.astype(np.int64)


def _obj(cols: Columns, name: str, n: int) -> list:
    v = cols.get(name)
    return [None] * n if v is None else v.tolist()


def records(cols: Columns, n: int) -> list[dict]:
    """Per-row dicts of the original fields (NULLs left out), for ``args``."""
    names = list(cols)
    lists = [cols[c].tolist() for c in names]
    return [{k: v for k, v in zip(names, row) if v is not None} for row in zip(*lists)] if n else []


def short_copy_label(label: str) -> str:
    return _COPY_LABEL.get(label, label)


def assemble(data: NsysData, path: str | None = None) -> EventTable:
    """The canonical table of an nsys export (see the module docstring); ``path`` names
    the file in errors."""
    strings = data.strings
    sget = strings.get
    parts: list[dict[str, Any]] = []
    counts: dict[str, int] = {}

    # ---------------------------------------------------------------- runtime
    rt = data.runtime
    n_rt = _n(rt)
    if n_rt:
        gtid = _int(rt, "globalTid", 0, n_rt)
        corr = _int(rt, "correlationId", 0, n_rt)
        ecls = _int(rt, "eventClass", -1, n_rt)
        bt = ecls == BACKTRACE_CLASS
        if bt.any():
            key = pd.Series(list(zip((gtid >> 24).tolist(), corr.tolist())))
            real = set(key[~bt & (corr > 0)].tolist())
            dup = bt & key.isin(real).to_numpy() & (corr > 0)
            if dup.any():
                rt = {k: v[~dup] for k, v in rt.items()}
                counts["runtime_backtrace_rows_dropped"] = int(dup.sum())
                n_rt = _n(rt)
                gtid, corr, ecls = gtid[~dup], corr[~dup], ecls[~dup]
    counts["runtime"] = n_rt
    rt_name_raw: list = []
    if n_rt:
        name_ids = _int(rt, "nameId", -1, n_rt).tolist()
        alt = _obj(rt, "name", n_rt)
        for i, a in zip(name_ids, alt):
            nm = sget(i) if i >= 0 else None
            rt_name_raw.append(nm if nm is not None else (a if isinstance(a, str) else f"<nameId {i}>"))
        pid, tid = decode_global_id(gtid)
        args = records({k: v for k, v in rt.items() if k != "name"}, n_rt)
        for a, nm in zip(args, rt_name_raw):
            a["name"] = nm
        parts.append({
            "kind": "runtime", "cat": np.where(ecls == 1, "cuda_driver", "cuda_runtime").astype(object),
            "name": [strip_api_version(x) for x in rt_name_raw], "ph": "X",
            "ts": _int(rt, "start", 0, n_rt), "end": _int(rt, "end", -1, n_rt), "pid": pid, "tid": tid,
            "device": NONE_ID, "stream": NONE_ID, "corr_raw": np.where(corr > 0, corr, NONE_ID),
            "proc": gtid >> 24, "args": args, "n": n_rt,
        })

    # ---------------------------------------------------------------- device activities
    copy_kind = {k: short_copy_label(v) for k, v in data.copy_kind.items()} or COPY_KIND
    mem_kind = data.mem_kind or MEM_KIND

    def kernel_names(d: Columns, n: int) -> list:
        out = []
        cols = [_obj(d, c, n) for c in ("demangledName", "shortName", "mangledName")]
        for ids in zip(*cols):
            nm = None
            for i in ids:
                if isinstance(i, str):
                    nm = i
                    break
                if isinstance(i, int) and i in strings:
                    nm = strings[i]
                    break
            out.append(nm if nm is not None else "<unnamed kernel>")
        return out

    def memcpy_names(d: Columns, n: int) -> list:
        return [f"Memcpy {copy_kind.get(c, str(c))} ({mem_kind.get(s, str(s))} -> {mem_kind.get(t, str(t))})"
                for c, s, t in zip(_int(d, "copyKind", 0, n).tolist(), _int(d, "srcKind", 7, n).tolist(),
                                   _int(d, "dstKind", 7, n).tolist())]

    def memset_names(d: Columns, n: int) -> list:
        return [f"Memset ({mem_kind.get(k, str(k))})" for k in _int(d, "memKind", 7, n).tolist()]

    def graph_names(d: Columns, n: int) -> list:
        return [f"CUDA Graph {g}" if g is not None else "CUDA Graph" for g in _obj(d, "graphId", n)]

    for d, kind, cat, namer, label in ((data.kernel, "kernel", "kernel", kernel_names, "kernel"),
                                       (data.memcpy, "memcpy", "gpu_memcpy", memcpy_names, "memcpy"),
                                       (data.memset, "memset", "gpu_memset", memset_names, "memset"),
                                       (data.graph_trace, "kernel", "cuda_graph", graph_names, "graph_trace")):
        n = _n(d)
        counts[label] = n
        if not n:
            continue
        args = records(d, n)
        if kind == "kernel" and label == "kernel":
            for a in args:
                for k in ("demangledName", "shortName", "mangledName"):
                    if isinstance(a.get(k), int):
                        a[k] = sget(a[k], a[k])
                if "gridX" in a:
                    a["grid"] = [a.get("gridX"), a.get("gridY"), a.get("gridZ")]
                    a["block"] = [a.get("blockX"), a.get("blockY"), a.get("blockZ")]
        dev = _int(d, "deviceId", -1, n)
        st = _int(d, "streamId", -1, n)
        c = _int(d, "correlationId", 0, n)
        parts.append({
            "kind": kind, "cat": cat, "name": namer(d, n), "ph": "X",
            "ts": _int(d, "start", 0, n), "end": _int(d, "end", -1, n), "pid": dev, "tid": st,
            "device": dev, "stream": st, "corr_raw": np.where(c > 0, c, NONE_ID),
            "proc": _int(d, "globalPid", 0, n) >> 24, "args": args, "n": n,
        })

    # ---------------------------------------------------------------- synchronisation
    n_sy = _n(data.sync)
    counts["sync"] = n_sy
    if n_sy:
        parts.append(_sync_part(data, rt, rt_name_raw, n_sy))

    # ---------------------------------------------------------------- NVTX
    n_nv = _n(data.nvtx)
    counts["nvtx"] = n_nv
    if n_nv:
        parts.append(_nvtx_part(data, n_nv))

    # ---------------------------------------------------------------- assemble
    def col(key: str, dtype: Any) -> np.ndarray:
        chunks = []
        for p in parts:
            v = p[key]
            if isinstance(v, (str, int)) or v is None:
                chunks.append(np.full(p["n"], v, dtype=dtype))
            else:
                arr = np.empty(p["n"], dtype=dtype) if dtype is object else None
                if arr is not None:
                    arr[:] = list(v) if not isinstance(v, np.ndarray) else v.astype(object)
                    chunks.append(arr)
                else:
                    chunks.append(np.asarray(v, dtype=dtype))
        return np.concatenate(chunks) if chunks else np.empty(0, dtype=dtype)

    kind = col("kind", object)
    n = len(kind)
    ts = col("ts", np.int64)
    end = col("end", np.int64)
    open_end = end < ts
    with np.errstate(over="ignore"):
        dur = np.where(open_end, 0, end - ts)
    wrapped = dur < 0  # end - start beyond int64 ns: the subtraction wrapped
    if wrapped.any():
        i = int(np.flatnonzero(wrapped)[0])
        raise OpgraphInputError(path, f"{col('kind', object)[i]} record from start {int(ts[i])} to end "
                                      f"{int(end[i])} ns lasts longer than int64 nanoseconds can hold "
                                      "(about 292 years)", event_index=i)
    proc = col("proc", np.int64)
    pcode, _ = pd.factorize(proc)
    corr = combine_corr(pcode, col("corr_raw", np.int64))
    args = col("args", object)
    for i in np.flatnonzero(kind == "cuda_sync").tolist():
        a = args[i]
        rec = a.get("wait_on_cuda_event_record_corr_id", -1)
        if isinstance(rec, int) and rec >= 0:  # recorded raw: make it process-scoped like ``correlation``
            a["wait_on_cuda_event_record_corr_id"] = int(combine_corr(np.array([pcode[i]]), np.array([rec]))[0])
    pid = np.array([int(v) for v in col("pid", np.int64).tolist()], dtype=object)
    tid = np.array([int(v) for v in col("tid", np.int64).tolist()], dtype=object)
    names = col("name", object)
    cats = col("cat", object)
    phs = col("ph", object)
    device = col("device", np.int64)
    stream = col("stream", np.int64)
    has_ts = np.ones(n, dtype=bool)

    rows = _name_rows(data, pid, tid, kind)
    if rows:
        m = len(rows)
        mk, mn, mp, mt, ma = (list(x) for x in zip(*rows))
        m_args = np.empty(m, dtype=object)
        m_args[:] = ma
        kind = np.concatenate([kind, np.array(mk, dtype=object)])
        names = np.concatenate([names, np.array(mn, dtype=object)])
        cats = np.concatenate([cats, np.full(m, None, dtype=object)])
        phs = np.concatenate([phs, np.full(m, "M", dtype=object)])
        pid = np.concatenate([pid, np.array(mp, dtype=object)])
        tid = np.concatenate([tid, np.array(mt, dtype=object)])
        args = np.concatenate([args, m_args])
        zeros = np.zeros(m, dtype=np.int64)
        minus = np.full(m, NONE_ID, dtype=np.int64)
        ts, dur = np.concatenate([ts, zeros]), np.concatenate([dur, zeros])
        has_ts = np.concatenate([has_ts, np.zeros(m, dtype=bool)])
        corr, device, stream = (np.concatenate([corr, minus]), np.concatenate([device, minus]),
                                np.concatenate([stream, minus]))
    device = np.where(device == NO_ID, NONE_ID, device)
    stream = np.where(stream == NO_ID, NONE_ID, stream)

    table = make_table(len(kind), kind=kind, name=names, ts_ns=ts, dur_ns=dur, pid=pid, tid=tid, args=args,
                       cat=cats, ph=phs, has_ts=has_ts, device=device, stream=stream, correlation=corr)
    tm = dict(data.trace_metadata)
    tm["nsys_counts"] = counts
    tm["nsys_absent"] = list(data.absent)
    table.meta.update({"format": data.fmt, "device_properties": data.device_properties,
                       "distributed_info": {}, "trace_metadata": tm})
    if data.absent:
        table.warn("nsys_tables_absent", len(data.absent), None,
                   "absent from this nsys export (nothing of these kinds was read): " + ", ".join(data.absent))
    if open_end.any():
        table.warn("open_range", int(open_end.sum()), int(np.flatnonzero(open_end)[0]),
                   "records without an end time (unfinished ranges or calls) were kept with zero duration")
    for code, cnt, ex, msg in data.health:
        table.warn(code, cnt, ex, msg)
    return table


def _sync_part(data: NsysData, rt: Columns, rt_names: list, n: int) -> dict[str, Any]:
    """cuda_sync rows: kind from the synchronising API call; event syncs resolved to the
    cudaEventRecord that recorded the event, the latest one before the sync."""
    sy = data.sync
    n_rt = _n(rt)
    proc = _int(sy, "globalPid", 0, n) >> 24
    corr = _int(sy, "correlationId", 0, n)
    stream = _int(sy, "streamId", -1, n)
    dev = _int(sy, "deviceId", -1, n)
    event = _int(sy, "eventId", NO_ID, n)
    stype = _int(sy, "syncType", -1, n)
    start = _int(sy, "start", 0, n)
    rt_name: dict[tuple[int, int], str] = {}
    rt_ts: dict[tuple[int, int], int] = {}
    if n_rt:
        rt_key = list(zip((_int(rt, "globalTid", 0, n_rt) >> 24).tolist(), _int(rt, "correlationId", 0, n_rt).tolist()))
        rt_name = {k: strip_api_version(nm) for k, nm in zip(rt_key, rt_names)}
        rt_ts = {k: int(t) for k, t in zip(rt_key, _int(rt, "start", 0, n_rt).tolist())}
    ev = data.cuda_event
    n_ev = _n(ev)
    records_: dict[tuple[int, int], list[tuple[int, int, int]]] = {}
    if n_ev:
        for c, gp, st, e in zip(_int(ev, "correlationId", 0, n_ev).tolist(), _int(ev, "globalPid", 0, n_ev).tolist(),
                                _int(ev, "streamId", -1, n_ev).tolist(), _int(ev, "eventId", -1, n_ev).tolist()):
            p = gp >> 24
            t = rt_ts.get((p, c))
            if t is not None:
                records_.setdefault((p, e), []).append((t, c, st))
        for v in records_.values():
            v.sort()
    kinds, args = [], records(sy, n)
    for i in range(n):
        p, c, st = int(proc[i]), int(corr[i]), int(stream[i])
        api = rt_name.get((p, c), "")
        sk = next((k for rx, k in _SYNC_API if rx.match(api)), None)
        if sk is None:
            if api:
                sk = "Stream Sync" if 0 <= st < NO_ID else "Context Sync"
            else:
                sk = SYNC_TYPE.get(int(stype[i]), "Context Sync")
        a = args[i]
        a["api"] = api or None
        if data.sync_enum:
            a["syncTypeLabel"] = data.sync_enum.get(int(stype[i]))
        a["cuda_sync_kind"] = sk
        a["stream"] = st if 0 <= st < NO_ID else -1
        e = int(event[i])
        if sk in ("Event Sync", "Stream Wait Event") and e != NO_ID:
            t_call = rt_ts.get((p, c), int(start[i]))
            best = None
            for t, rc, rst in records_.get((p, e), []):
                if t > t_call:
                    break
                best = (rc, rst)
            if best is not None:
                a["wait_on_cuda_event_record_corr_id"] = best[0]
                a["wait_on_stream"] = best[1]
        kinds.append(sk)
    return {"kind": "cuda_sync", "cat": "cuda_sync", "name": kinds, "ph": "X",
            "ts": start, "end": _int(sy, "end", -1, n), "pid": dev, "tid": stream,
            "device": dev, "stream": np.where(stream == NO_ID, NONE_ID, stream),
            "corr_raw": np.where(corr > 0, corr, NONE_ID), "proc": proc, "args": args, "n": n}


def _nvtx_part(data: NsysData, n: int) -> dict[str, Any]:
    nv = data.nvtx
    strings = data.strings
    et = _int(nv, "eventType", -1, n)
    names = [t if isinstance(t, str) else (strings.get(i, f"<textId {i}>") if isinstance(i, int) else None)
             for t, i in zip(_obj(nv, "text", n), _obj(nv, "textId", n))]
    dom = _int(nv, "domainId", 0, n)
    domains = {int(d): nm for d, nm, e in zip(dom.tolist(), names, et.tolist()) if e == NVTX_DOMAIN_CREATE}
    kind = np.full(n, "meta", dtype=object)
    is_range = np.isin(et, (NVTX_PUSHPOP, NVTX_STARTEND))
    kind[is_range] = "annotation"
    kind[et == NVTX_MARK] = "instant"
    out_names = []
    for nm, k, e in zip(names, kind.tolist(), et.tolist()):
        if k == "meta":
            out_names.append(_NVTX_META.get(int(e), f"nvtx_event_{int(e)}"))
        else:
            out_names.append(nm if nm is not None else "<unnamed range>")
    start = _int(nv, "start", 0, n)
    end = _int(nv, "end", -1, n)
    no_end = is_range & (end < start)
    if no_end.any():
        data.health.append(("nvtx_unclosed", int(no_end.sum()), None,
                            "NVTX ranges without an end (never popped/ended) were kept with zero duration"))
    gtid = _int(nv, "globalTid", 0, n)
    pid, tid = decode_global_id(gtid)
    args = records(nv, n)
    for a, nm, k in zip(args, names, kind.tolist()):
        d = a.get("domainId")
        if d in domains and d != 0:
            a["domain"] = domains[d]
        if k == "meta" and nm is not None:
            a["name"] = nm
        if isinstance(a.get("jsonTextId"), int) and a["jsonTextId"] in strings:
            a["jsonText"] = strings[a["jsonTextId"]]
    ph = np.where(kind == "instant", "i", np.where(kind == "meta", "M", "X")).astype(object)
    return {"kind": kind, "cat": np.where(et == NVTX_STARTEND, "nvtx_startend", "nvtx").astype(object),
            "name": out_names, "ph": ph, "ts": start, "end": np.where(end < start, start, end),
            "pid": pid, "tid": tid, "device": NONE_ID, "stream": NONE_ID, "corr_raw": NONE_ID,
            "proc": gtid >> 24, "args": args, "n": n}


def _name_rows(data: NsysData, pid: np.ndarray, tid: np.ndarray, kind: np.ndarray) -> list[tuple]:
    """``process_name`` / ``thread_name`` meta rows for the host threads that have events."""
    host = np.isin(kind, ("runtime", "annotation", "instant"))
    threads = set(zip(pid[host].tolist(), tid[host].tolist()))
    if not threads:
        return []
    rows: list[tuple] = []
    pids = {p for p, _ in threads}
    seen_p: set = set()
    for p, nm in data.process_names:
        if p in pids and p not in seen_p and nm is not None:
            seen_p.add(p)
            rows.append(("meta", "process_name", p, 0, {"name": str(nm)}))
    seen_t: set = set()
    for g, nm in data.thread_names:
        key = ((g >> 24) & 0xFFFFFF, g & 0xFFFFFF)
        if key in threads and key not in seen_t and nm is not None:
            seen_t.add(key)
            rows.append(("meta", "thread_name", key[0], key[1], {"name": str(nm)}))
    return rows


def kernel_launch_check(table: EventTable) -> tuple[int, int]:
    """(device activities with a correlation, those whose correlation a runtime call
    carries): a quick link check used by tests and ``docs/formats.md``."""
    ev = table.events
    act = ev[ev["kind"].isin(["kernel", "memcpy", "memset"])]
    rt = set(ev.loc[ev["kind"] == "runtime", "correlation"].tolist())
    with_corr = act[act["correlation"] >= 0]
    return len(with_corr), int(with_corr["correlation"].isin(rt).sum())


Namer = Callable[[Columns, int], list]
