"""Intel CLIntercept Chrome JSON (``clintercept_trace.json``) -> canonical event table.

CLIntercept (``ChromeCallLogging`` / ``ChromePerformanceTiming[InStages|PerKernel]``)
writes Chrome trace events without categories: host API calls on their thread
(``tid`` >= 0, ``args.id`` = the enqueue counter for commands), device commands on one
track per queue (``tid`` = -queue number), per kernel (``tid`` = kernel name) or per stage
(``tid`` = ``count.queue``, names suffixed ``(Queued)`` / ``(Submitted)`` /
``(Execution)``), ``Commands`` flow events, and ``M`` metadata (process/thread names,
``clintercept_start_time``). The file is left unterminated (no closing ``]``); the
ingest layer closes it.

The events go through the Kineto reader's machinery (exact µs -> ns, validation, one-line
errors) and are then re-typed by :data:`MAPPING`: host calls -> ``runtime``, device
commands -> ``kernel`` / ``memcpy`` / ``memset`` with ``correlation`` = ``args.id`` on both
sides (so launches link), ``device`` 0 and ``stream`` = the queue number (per-kernel
tracks: one stream per track). ``(Queued)`` / ``(Submitted)`` stage slices are kept as
``other`` (not nodes); ``Commands`` flows are kept as ``other`` too (they mirror the id link).
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd

from opgraph.errors import OpgraphInputError
from opgraph.ingest.source import SourceBytes
from opgraph.model.table import ALL_KINDS, NONE_ID, EventTable

#: (name pattern, kind) for device commands, first match wins; anything else is a kernel.
MAPPING: tuple[tuple[re.Pattern, str], ...] = (
    (re.compile(r"^clEnqueue(Read|Write|Copy|Map|Unmap)\w*|^clEnqueueSVM(Memcpy|Map|Unmap)|MemcpyINTEL"), "memcpy"),
    (re.compile(r"^clEnqueue(Fill\w*|SVMMemFill)|MemFillINTEL|MemsetINTEL"), "memset"),
)
#: Largest ``args.id`` kept as a correlation id (above it the id is ignored: ``clFinish``
#: waits get new ids after the largest one, which must still fit int64).
NONE_ID_MAX = 2**62
_STAGE_RE = re.compile(r"^(.*) \((Queued|Submitted|Execution)\)$")
_META_NAMES = {"clintercept_start_time", "process_name", "thread_name", "thread_sort_index"}


def looks_like_clintercept(doc: Any) -> bool:
    """A Chrome-trace event list written by CLIntercept (no categories, cl* API names or a
    ``clintercept_start_time`` metadata event)."""
    if not isinstance(doc, list) or not doc:
        return False
    sample = [e for e in doc[:4000] if isinstance(e, dict)]
    if any(e.get("name") == "clintercept_start_time" for e in sample):
        return True
    xs = [e for e in sample if e.get("ph") == "X"]
    if not xs or any("cat" in e for e in xs):
        return False
    cl = sum(1 for e in xs if isinstance(e.get("name"), str) and e["name"].startswith("cl"))
    return cl >= max(1, len(xs) // 3)


def _device_kind(name: str) -> str:
    for rx, k in MAPPING:
        if rx.search(name):
            return k
    return "kernel"


def read_clintercept(src: SourceBytes, doc: Any) -> EventTable:
    """Read a CLIntercept Chrome trace into an :class:`EventTable` (times in ns)."""
    from opgraph.gc_pause import gc_paused
    from opgraph.ingest.kineto import events_to_table

    if not isinstance(doc, list):
        raise OpgraphInputError(src.path, "a CLIntercept trace is a JSON array of events")
    with gc_paused():
        table = events_to_table(src, doc)
    ev = table.events
    table.health = [h for h in table.health if h.code != "unknown_category"]
    n = len(ev)
    ph = ev["ph"].astype(object).to_numpy()
    names = ev["name"].astype(object).to_numpy()
    tid = ev["tid"].astype(object).to_numpy()
    args = ev["args"].to_numpy(dtype=object)
    kind = ev["kind"].astype(object).to_numpy().copy()
    cat = np.full(n, None, dtype=object)
    device = np.full(n, NONE_ID, dtype=np.int64)
    stream = np.full(n, NONE_ID, dtype=np.int64)
    corr = np.full(n, NONE_ID, dtype=np.int64)
    new_names = names.copy()
    track_code: dict[Any, int] = {}
    for i in np.flatnonzero(ph == "X").tolist():
        nm = names[i] if isinstance(names[i], str) else ""
        t = tid[i]
        a = args[i] if isinstance(args[i], dict) else {}
        cid = a.get("id")
        host = type(t) is int and t >= 0
        if host:
            kind[i], cat[i] = "runtime", "opencl_api"
        else:
            m = _STAGE_RE.match(nm)
            if m and m.group(2) != "Execution":
                kind[i], cat[i] = "other", "opencl_stage"
                continue
            base = m.group(1) if m else nm
            new_names[i] = base
            kind[i], cat[i] = _device_kind(base), "opencl_device"
            device[i] = 0
            if type(t) is int:
                stream[i] = -t
            elif type(t) is float:   # in-stages tracks: "count.queue", decoded by JSON as a float
                frac = repr(t).split(".")[1] if "." in repr(t) else "0"
                stream[i] = int(frac) if frac.isdigit() else 0
            else:
                key = ("track", t)
                stream[i] = track_code.setdefault(key, 1000 + len(track_code))
        if type(cid) is int and 0 <= cid < NONE_ID_MAX:
            corr[i] = cid
    # host waits: clFinish -> a Stream Sync on the queue (a Context Sync when the trace has
    # several queues: CLIntercept does not log which queue was finished)
    finish = [i for i in np.flatnonzero((kind == "runtime")).tolist()
              if isinstance(names[i], str) and names[i].split("(")[0].strip() in ("clFinish", "clWaitForEvents")]
    next_id = int(corr.max()) + 1 if n else 0   # ids are below NONE_ID_MAX: no overflow
    queues = sorted(set(stream[(device == 0) & (stream >= 0)].tolist()))
    sync_rows = []
    for i in finish:
        if corr[i] < 0:
            corr[i] = next_id
            next_id += 1
        one = len(queues) == 1 and names[i].startswith("clFinish")
        sync_rows.append((i, "Stream Sync" if one else "Context Sync", queues[0] if one else NONE_ID))
    flows = np.isin(kind, ("flow_start", "flow_end"))
    kind[flows] = "other"
    ev["kind"] = pd.Categorical(kind, categories=list(ALL_KINDS))
    codes, uniq = pd.factorize(np.asarray(cat, dtype=object))
    ev["cat"] = pd.Categorical.from_codes(codes, categories=pd.Index(uniq, dtype=object))
    ncodes, nuniq = pd.factorize(np.asarray(new_names, dtype=object))
    ev["name"] = pd.Categorical.from_codes(ncodes, categories=pd.Index(nuniq, dtype=object))
    ev["device"], ev["stream"], ev["correlation"] = device, stream, corr
    if any(type(t) is float for t in ev["tid"].cat.categories):   # stage tracks: keep them as text
        tcodes, tuniq = pd.factorize(np.array([repr(t) if type(t) is float else t for t in tid], dtype=object))
        ev["tid"] = pd.Categorical.from_codes(tcodes, categories=pd.Index(tuniq, dtype=object))
        tid = ev["tid"].astype(object).to_numpy()
    ev["flow_id"] = np.full(n, NONE_ID, dtype=np.int64)
    if sync_rows:
        k = len(sync_rows)
        add = pd.DataFrame({
            "eid": np.arange(n, n + k, dtype=np.int64),
            "kind": pd.Categorical(["cuda_sync"] * k, categories=list(ALL_KINDS)),
            "cat": ["opencl_sync"] * k, "ph": ["X"] * k, "name": [sk for _, sk, _ in sync_rows],
            "ts_ns": ev["ts_ns"].to_numpy()[[i for i, _, _ in sync_rows]],
            "dur_ns": ev["dur_ns"].to_numpy()[[i for i, _, _ in sync_rows]],
            "pid": ev["pid"].astype(object).to_numpy()[[i for i, _, _ in sync_rows]],
            "tid": ev["tid"].astype(object).to_numpy()[[i for i, _, _ in sync_rows]],
            "device": np.zeros(k, dtype=np.int64), "stream": np.array([q for _, _, q in sync_rows], dtype=np.int64),
            "correlation": corr[[i for i, _, _ in sync_rows]],
            "external_id": np.full(k, NONE_ID, dtype=np.int64), "rf_id": np.full(k, NONE_ID, dtype=np.int64),
            "flow_id": np.full(k, NONE_ID, dtype=np.int64), "rank": np.full(k, NONE_ID, dtype=np.int64),
            "args": [{"cuda_sync_kind": sk, "stream": q, "call": str(names[i])} for i, sk, q in sync_rows],
            "bp": [None] * k, "extra": [None] * k, "has_ts": np.ones(k, dtype=bool),
        })
        ev = pd.concat([ev, add[ev.columns]], ignore_index=True)
        for c in ("cat", "ph", "name", "pid", "tid", "bp"):
            codes_, uniq_ = pd.factorize(ev[c].astype(object).to_numpy())
            ev[c] = pd.Categorical.from_codes(codes_, categories=pd.Index(uniq_, dtype=object))
        ev["kind"] = pd.Categorical(ev["kind"].astype(object), categories=list(ALL_KINDS))
        table.events = ev
    start = [a.get("start_time") for nm, a in zip(names, args) if nm == "clintercept_start_time" and isinstance(a, dict)]
    table.meta.update({"format": "clintercept", "file": src.path, "sha256": src.sha256, "device_properties": [],
                       "distributed_info": {},
                       "trace_metadata": {"clintercept_start_time": start[0] if start else None,
                                          "kinds": {"host": "runtime", "device": "kernel/memcpy/memset"}}})
    stages = int(((kind == "other") & (ph == "X")).sum())
    if stages:
        table.warn("opencl_stages", stages, None,
                   "Queued/Submitted stage slices of ChromePerformanceTimingInStages kept as 'other' "
                   "(the Execution stage is the device node)")
    return table
