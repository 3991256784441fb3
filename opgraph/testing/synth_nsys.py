"""Synthetic Nsight Systems exports with known answers: the legacy JSON export (one
message per line; no public sample exists) and the same timeline as an SQLite export.

One process (pid 4242) with a main thread and a worker thread. Two NVTX push/pop
iterations (``Iteration 1``, ``Iteration 2``) on the main thread, each holding a nested
``forward`` range; inside: an async HtoD copy and two kernels on stream 7 (one launched
from inside a cuBLAS library call, event class 28 with correlation 0), a memset and a kernel
on stream 13 that waits on a ``cudaEventRecord`` of stream 7 (``cudaStreamWaitEvent``), then
``cudaStreamSynchronize(13)``. After the iterations a ``cudaEventSynchronize`` on the
recorded event and a ``cudaDeviceSynchronize``. The worker thread has an NVTX start/end
range ``load`` and a mark. ``globalTid`` values exceed 2**53 and the JSON writes every int64
field as a string, as nsys does.

Device activities start at ``max(launch call end + LATENCY, end of the previous activity
on the stream, event dependency)``; answers are computed from this model, never by
re-reading the files.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PID = 4242
MAIN_TID = 4242
WORKER_TID = 4250
VM = 1 << 56                      # high bits nsys sets in globalPid/globalTid
GLOBAL_PID = VM | (PID << 24)
GTID_MAIN = GLOBAL_PID | MAIN_TID
GTID_WORKER = GLOBAL_PID | WORKER_TID
DEVICE = 0
S_MAIN, S_SIDE = 7, 13
LATENCY = 3_000
T0 = 5_000_000_000


@dataclass
class Call:
    name: str
    start: int
    end: int
    corr: int
    gtid: int = GTID_MAIN
    cls: int = 0


@dataclass
class Act:
    kind: str                # kernel | memcpy | memset
    name: str
    start: int
    end: int
    stream: int
    corr: int
    extra: dict = field(default_factory=dict)


@dataclass
class Model:
    calls: list[Call] = field(default_factory=list)
    acts: list[Act] = field(default_factory=list)
    syncs: list[dict] = field(default_factory=list)      # start, end, corr, stream, syncType, eventId
    events: list[dict] = field(default_factory=list)     # cudaEvent records: corr, stream, eventId
    nvtx: list[dict] = field(default_factory=list)       # type, start, end, text, gtid
    answers: dict = field(default_factory=dict)


def build_model() -> Model:
    m = Model()
    t = T0
    corr = [100]
    stream_end = {S_MAIN: 0, S_SIDE: 0}
    event_done: dict[int, int] = {}

    def call(name: str, dur: int, gtid: int = GTID_MAIN, cls: int = 0, with_corr: bool = True) -> Call:
        nonlocal t
        c = Call(name, t, t + dur, corr[0] if with_corr else 0, gtid, cls)
        if with_corr:
            corr[0] += 1
        m.calls.append(c)
        t = c.end + 500
        return c

    def launch(api: str, kind: str, name: str, stream: int, gpu_dur: int, after: int = 0, **extra: Any) -> Act:
        c = call(api, 4_000)
        start = max(c.end + LATENCY, stream_end[stream], after)
        a = Act(kind, name, start, start + gpu_dur, stream, c.corr, extra)
        stream_end[stream] = a.end
        m.acts.append(a)
        return a

    for it in (1, 2):
        r0 = t
        t += 1_000
        f0 = t
        t += 1_000
        launch("cudaMemcpyAsync_v3020", "memcpy", "", S_MAIN, 20_000, bytes=1 << 20, copyKind=1, srcKind=1, dstKind=2)
        launch("cudaLaunchKernel_v7000", "kernel", "k_gemm(float*, float*)", S_MAIN, 80_000)
        # a cuBLAS call (class 28, no correlation) around a launch
        lib = Call("cublasSgemm_v2", t, 0, 0, GTID_MAIN, 28)
        m.calls.append(lib)
        t += 1_000
        launch("cudaLaunchKernel_v7000", "kernel", "k_relu(float*)", S_MAIN, 30_000)
        lib.end = t
        t += 1_000
        rec = call("cudaEventRecord_v3020", 2_000)
        m.events.append({"corr": rec.corr, "stream": S_MAIN, "eventId": 1})
        event_done[1] = stream_end[S_MAIN]
        launch("cudaMemsetAsync_v3020", "memset", "", S_SIDE, 5_000, bytes=4096, memKind=2)
        w = call("cudaStreamWaitEvent_v3020", 2_000)
        m.syncs.append({"start": w.start, "end": w.end, "corr": w.corr, "stream": S_SIDE, "syncType": 2, "eventId": 1})
        launch("cudaLaunchKernel_v7000", "kernel", "k_reduce(float*)", S_SIDE, 15_000, after=event_done[1])
        f1 = t
        t += 1_000
        done = stream_end[S_SIDE]
        s = call("cudaStreamSynchronize_v3020", max(2_000, done - t + 1_000))
        m.syncs.append({"start": s.start, "end": s.end, "corr": s.corr, "stream": S_SIDE, "syncType": 3,
                        "eventId": 0xFFFFFFFF})
        t += 1_000
        m.nvtx.append({"type": 59, "start": f0, "end": f1, "text": "forward", "gtid": GTID_MAIN})
        m.nvtx.append({"type": 59, "start": r0, "end": t, "text": f"Iteration {it}", "gtid": GTID_MAIN})
        t += 2_000
    # tail: one more kernel, event sync on it, device sync
    launch("cudaLaunchKernel_v7000", "kernel", "k_gemm(float*, float*)", S_MAIN, 50_000)
    rec = call("cudaEventRecord_v3020", 2_000)
    m.events.append({"corr": rec.corr, "stream": S_MAIN, "eventId": 2})
    es = call("cudaEventSynchronize_v3020", max(2_000, stream_end[S_MAIN] - t + 1_000))
    m.syncs.append({"start": es.start, "end": es.end, "corr": es.corr, "stream": S_MAIN, "syncType": 1, "eventId": 2})
    ds = call("cudaDeviceSynchronize_v3020", 3_000)
    m.syncs.append({"start": ds.start, "end": ds.end, "corr": ds.corr, "stream": 0xFFFFFFFF, "syncType": 4,
                    "eventId": 0xFFFFFFFF})
    m.nvtx.append({"type": 60, "start": T0 + 10_000, "end": T0 + 60_000, "text": "load", "gtid": GTID_WORKER})
    m.nvtx.append({"type": 34, "start": T0 + 20_000, "end": None, "text": "checkpoint", "gtid": GTID_WORKER})
    m.answers = _answers(m)
    return m


def _answers(m: Model) -> dict[str, Any]:
    by_corr = {c.corr: c for c in m.calls if c.corr}
    launched = {a.corr for a in m.acts}
    ranges = [r for r in m.nvtx if r["type"] in (59, 60)]
    nvtx: dict[str, dict[str, int]] = {}
    for r in ranges:
        acts = [a for a in m.acts if by_corr[a.corr].gtid == r["gtid"]
                and r["start"] <= by_corr[a.corr].start and by_corr[a.corr].end <= r["end"]]
        d = nvtx.setdefault(r["text"], {"count": 0, "cpu_ns": 0, "gpu_proj_ns": 0, "activities": 0})
        d["count"] += 1
        d["cpu_ns"] += r["end"] - r["start"]
        d["activities"] += len(acts)
        if acts:
            d["gpu_proj_ns"] += max(a.end for a in acts) - min(a.start for a in acts)
    kinds: dict[str, int] = {}
    for a in m.acts:
        kinds[a.kind] = kinds.get(a.kind, 0) + 1
    return {
        "runtime": len(m.calls), "kernels": kinds.get("kernel", 0), "memcpy": kinds.get("memcpy", 0),
        "memset": kinds.get("memset", 0), "launch_edges": len(m.acts), "annotations": len(ranges),
        "instants": sum(1 for r in m.nvtx if r["type"] == 34), "cuda_sync": len(m.syncs),
        "event_wait_edges": sum(1 for s in m.syncs if s["syncType"] == 2),
        "launching_calls": len(launched), "iterations": 2, "nvtx": nvtx,
    }


# --------------------------------------------------------------------------- writers
def _strings(m: Model) -> dict[str, int]:
    names: dict[str, int] = {}
    for s in ([c.name for c in m.calls] + [a.name for a in m.acts if a.kind == "kernel"]
              + [a.name.split("(")[0] for a in m.acts if a.kind == "kernel"] + ["main", "worker"]):
        names.setdefault(s, len(names) + 1)
    return names


def to_json_lines(m: Model) -> bytes:
    """The legacy nsys JSON export of ``m``: events, then strings, then thread names; every
    int64 as a JSON string."""
    S = _strings(m)
    lines: list[dict] = [{"Type": 1, "CommEvent": {"Timestamp": str(T0 - 1_000_000), "GlobalPid": str(GLOBAL_PID),
                                                   "NumOfCpus": 8, "Command": "python train.py",
                                                   "Commname": "python", "NsTime": True}}]
    for c in m.calls:
        lines.append({"Type": 48, "TraceProcessEvent": {
            "startNs": str(c.start), "endNs": str(c.end), "correlationId": c.corr, "eventClass": c.cls,
            "name": str(S[c.name]), "returnValue": "0", "globalTid": str(c.gtid)}})
    for a in m.acts:
        base = {"startNs": str(a.start), "endNs": str(a.end), "correlationId": a.corr, "deviceId": DEVICE,
                "contextId": 1, "streamId": a.stream, "globalPid": str(GLOBAL_PID)}
        if a.kind == "kernel":
            base["eventClass"] = 79
            base["kernel"] = {"demangledName": str(S[a.name]), "shortName": str(S[a.name.split("(")[0]]),
                              "gridX": 128, "gridY": 1, "gridZ": 1, "blockX": 256, "blockY": 1, "blockZ": 1,
                              "registersPerThread": 32, "staticSharedMemory": 0, "dynamicSharedMemory": 0}
        elif a.kind == "memcpy":
            base["eventClass"] = 80
            base["memcpy"] = {"sizebytes": str(a.extra["bytes"]), "copyKind": a.extra["copyKind"],
                              "srcKind": a.extra["srcKind"], "dstKind": a.extra["dstKind"]}
        else:
            base["eventClass"] = 81
            base["memset"] = {"sizebytes": str(a.extra["bytes"]), "memKind": a.extra["memKind"], "value": 0}
        lines.append({"Type": 79, "CudaEvent": base})
    for e in m.events:
        lines.append({"Type": 79, "CudaEvent": {"correlationId": e["corr"], "deviceId": DEVICE, "contextId": 1,
                                                "streamId": e["stream"], "globalPid": str(GLOBAL_PID),
                                                "eventClass": 105, "cudaEvent": {"eventId": e["eventId"]}}})
    for s in m.syncs:
        lines.append({"Type": 106, "CudaEvent": {
            "startNs": str(s["start"]), "endNs": str(s["end"]), "correlationId": s["corr"], "deviceId": DEVICE,
            "contextId": 1, "streamId": s["stream"], "globalPid": str(GLOBAL_PID), "eventClass": 106,
            "sync": {"eventId": s["eventId"], "syncType": s["syncType"]}}})
    for r in m.nvtx:
        e = {"Type": r["type"], "Timestamp": str(r["start"]), "Text": r["text"], "GlobalTid": str(r["gtid"]),
             "DomainId": "0", "NsTime": True, "Color": 0}
        if r["end"] is not None:
            e["EndTimestamp"] = str(r["end"])
        lines.append({"Type": r["type"], "NvtxEvent": e})
    lines.append({"type": "String", "id": "0", "value": ""})
    for s, i in S.items():
        lines.append({"type": "String", "id": str(i), "value": s})
    lines.append({"type": "ThreadName", "globalTid": str(GTID_MAIN), "nameId": str(S["main"]), "priority": 0})
    lines.append({"type": "ThreadName", "globalTid": str(GTID_WORKER), "nameId": str(S["worker"]), "priority": 0})
    return ("\n".join(json.dumps(x, separators=(",", ":")) for x in lines) + "\n").encode()


def to_sqlite(m: Model, path: str | Path) -> None:
    """The same timeline as an nsys SQLite export (the tables and columns of nsys 2022+)."""
    p = Path(path)
    if p.exists():
        p.unlink()
    S = _strings(m)
    con = sqlite3.connect(str(p))
    cur = con.cursor()
    cur.execute("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL)")
    cur.executemany("INSERT INTO StringIds VALUES (?, ?)", [(i, s) for s, i in S.items()])
    cur.execute("CREATE TABLE ThreadNames (nameId INTEGER, priority INTEGER, globalTid INTEGER)")
    cur.executemany("INSERT INTO ThreadNames VALUES (?, 0, ?)", [(S["main"], GTID_MAIN), (S["worker"], GTID_WORKER)])
    cur.execute("CREATE TABLE PROCESSES (globalPid INTEGER, pid INTEGER, name TEXT)")
    cur.execute("INSERT INTO PROCESSES VALUES (?, ?, 'python')", (GLOBAL_PID, PID))
    cur.execute("CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL, "
                "eventClass INTEGER NOT NULL, globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL, "
                "returnValue INTEGER NOT NULL, callchainId INTEGER)")
    cur.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?,?,?,?,?,?,0,NULL)",
                    [(c.start, c.end, c.cls, c.gtid, c.corr, S[c.name]) for c in m.calls])
    base = ("start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, "
            "streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER")
    cur.execute(f"CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL ({base}, demangledName INTEGER, shortName INTEGER, "
                "gridX INTEGER, gridY INTEGER, gridZ INTEGER, blockX INTEGER, blockY INTEGER, blockZ INTEGER)")
    cur.execute(f"CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY ({base}, bytes INTEGER, copyKind INTEGER, "
                "srcKind INTEGER, dstKind INTEGER)")
    cur.execute(f"CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET ({base}, value INTEGER, bytes INTEGER, memKind INTEGER)")
    for a in m.acts:
        row = (a.start, a.end, DEVICE, 1, a.stream, a.corr, GLOBAL_PID)
        if a.kind == "kernel":
            cur.execute("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?,?,?,?,?,?,?,?,?,128,1,1,256,1,1)",
                        row + (S[a.name], S[a.name.split("(")[0]]))
        elif a.kind == "memcpy":
            cur.execute("INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                        row + (a.extra["bytes"], a.extra["copyKind"], a.extra["srcKind"], a.extra["dstKind"]))
        else:
            cur.execute("INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET VALUES (?,?,?,?,?,?,?,0,?,?)",
                        row + (a.extra["bytes"], a.extra["memKind"]))
    cur.execute(f"CREATE TABLE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION ({base}, syncType INTEGER, eventId INTEGER)")
    cur.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_SYNCHRONIZATION VALUES (?,?,?,?,?,?,?,?,?)",
                    [(s["start"], s["end"], DEVICE, 1, s["stream"], s["corr"], GLOBAL_PID, s["syncType"],
                      s["eventId"]) for s in m.syncs])
    cur.execute("CREATE TABLE CUPTI_ACTIVITY_KIND_CUDA_EVENT (deviceId INTEGER, contextId INTEGER, "
                "streamId INTEGER, correlationId INTEGER, globalPid INTEGER, eventId INTEGER)")
    cur.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_CUDA_EVENT VALUES (?,1,?,?,?,?)",
                    [(DEVICE, e["stream"], e["corr"], GLOBAL_PID, e["eventId"]) for e in m.events])
    cur.execute("CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, "
                "rangeId INTEGER, category INTEGER, color INTEGER, text TEXT, globalTid INTEGER, "
                "endGlobalTid INTEGER, textId INTEGER, domainId INTEGER)")
    cur.executemany("INSERT INTO NVTX_EVENTS VALUES (?,?,?,NULL,NULL,NULL,?,?,NULL,NULL,0)",
                    [(r["start"], r["end"], r["type"], r["text"], r["gtid"]) for r in m.nvtx])
    cur.execute("CREATE TABLE TARGET_INFO_GPU (id INTEGER, name TEXT, totalMemory INTEGER, smCount INTEGER, "
                "computeMajor INTEGER, computeMinor INTEGER, cuDevice INTEGER)")
    cur.execute("INSERT INTO TARGET_INFO_GPU VALUES (0, 'NVIDIA A100-SXM4-40GB', 42297524224, 108, 8, 0, 0)")
    con.commit()
    con.close()


def write_fixtures(out_dir: str | Path) -> dict[str, Path]:
    """Write ``synth.nsys.json``, ``synth.nsys.sqlite`` and ``synth.answers.json``."""
    d = Path(out_dir)
    d.mkdir(parents=True, exist_ok=True)
    m = build_model()
    paths = {"json": d / "synth.nsys.json", "sqlite": d / "synth.nsys.sqlite", "answers": d / "synth.answers.json"}
    paths["json"].write_bytes(to_json_lines(m))
    to_sqlite(m, paths["sqlite"])
    paths["answers"].write_text(json.dumps(m.answers, indent=1, sort_keys=True) + "\n")
    return paths


if __name__ == "__main__":  # pragma: no cover
    import sys

    for k, p in write_fixtures(sys.argv[1] if len(sys.argv) > 1 else "fixtures/nsys").items():
        print(k, p)
