"""Small Kineto traces with exact timings for sync linking, each with its expected edges.

Every case is a Kineto document (``{"traceEvents": [...]}``) written from integer
**nanoseconds** (whole µs in the file, so they convert exactly), plus the edges the graph
builder must produce, by event id (``eid`` = position in ``traceEvents``):

- :func:`per_call_syncs` (CUDA): blocking calls with and without their own ``cuda_sync``
  record in one trace; the ones without get inferred edges (``sync_inferred``).
- :func:`pre_trace_kernels` (HIP): kernels launched before the trace began (their
  correlation has no runtime call) keep the device busy across a ``hipDeviceSynchronize``.
- :func:`mtia_stream_events` (MTIA): ``dma_request`` copies, ``event_record`` /
  ``event_wait`` device records, ``synchronizeStream`` with and without its device-side
  ``synchronize`` record, and a host-side device ``synchronize``.
- :func:`graph_launch` (CUDA graphs): one ``cudaGraphLaunch`` whose correlation is carried
  by ``n`` kernels.

Timelines are in each function's docstring, in µs from the trace start.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: Nanoseconds per microsecond (Kineto writes µs).
US = 1_000
#: Trace start (ns): an epoch-like value whose µs are exact in float64.
BASE_NS = 1_700_000_000_000_000 * US
#: Kineto writes the stream of a device-wide (Context Sync) record as uint32 -1.
NO_STREAM = 4294967295

HOST_PID, HOST_TID = 100, 100
MTIA_HOST_PID, MTIA_DEVICE = 865, 17


@dataclass
class SyncCase:
    """A synthesized trace and the edges it must produce (event ids).

    ``sync``: every sync edge, as (activity, call, sync_kind, inferred); ``event_wait``:
    every event_wait edge (src, dst); ``launch``: launch edges that must exist (call,
    activity); ``kinds``: expected canonical kind of selected events (``""`` = not a graph
    node); ``health``: expected counts of the sync health codes (``cuda_sync_absent``,
    ``sync_inferred``, ``sync_unresolved``; one not listed must be absent); ``eids``: named events, for tests and messages.
    """

    name: str
    trace: dict[str, Any]
    sync: set[tuple[int, int, str, bool]]
    event_wait: set[tuple[int, int]] = field(default_factory=set)
    launch: set[tuple[int, int]] = field(default_factory=set)
    kinds: dict[int, str] = field(default_factory=dict)
    health: dict[str, int] = field(default_factory=dict)
    eids: dict[str, int] = field(default_factory=dict)


class _Doc:
    """Appends Kineto events (times given in ns from the trace start) and remembers eids."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.eids: dict[str, int] = {}

    @staticmethod
    def _us(ns: int) -> int:
        if ns % US:
            raise ValueError(f"{ns} ns is not a whole µs")
        return ns // US

    def x(self, label: str, cat: str, name: str, pid: int, tid: int, ts: int, end: int,
          args: dict[str, Any]) -> int:
        """A complete (``X``) event on [ts, end) ns from the trace start; returns its eid."""
        if end < ts:
            raise ValueError(f"{label}: end before start")
        self.events.append({"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid,
                            "ts": self._us(BASE_NS + ts), "dur": self._us(end - ts), "args": args})
        eid = len(self.events) - 1
        self.eids[label] = eid
        return eid

    def flow(self, corr: int, src: int, dst: int) -> None:
        """An ``ac2g`` flow from event ``src`` to event ``dst`` (bound at their starts)."""
        s, d = self.events[src], self.events[dst]
        self.events.append({"ph": "s", "id": corr, "pid": s["pid"], "tid": s["tid"], "ts": s["ts"],
                            "cat": "ac2g", "name": "ac2g"})
        self.events.append({"ph": "f", "id": corr, "pid": d["pid"], "tid": d["tid"], "ts": d["ts"],
                            "cat": "ac2g", "name": "ac2g", "bp": "e"})

    def document(self, device_name: str) -> dict[str, Any]:
        return {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": device_name}],
                "traceEvents": self.events}


def _cuda(d: _Doc, label: str, name: str, ts: int, end: int, corr: int, tid: int = HOST_TID,
          cat: str = "cuda_runtime") -> int:
    return d.x(label, cat, name, HOST_PID, tid, ts, end, {"External id": 0, "correlation": corr})


def _act(d: _Doc, label: str, name: str, ts: int, end: int, corr: int, stream: int,
         cat: str = "kernel", launch: int | None = None) -> int:
    e = d.x(label, cat, name, 0, stream, ts, end,
            {"External id": 0, "device": 0, "context": 1, "stream": stream, "correlation": corr})
    if launch is not None:
        d.flow(corr, launch, e)
    return e


def _cuda_sync(d: _Doc, label: str, kind: str, call: int, stream: int) -> int:
    c = d.events[call]
    corr = c["args"]["correlation"]
    ts = (c["ts"] - BASE_NS // US + 1) * US
    end = (c["ts"] + c["dur"] - BASE_NS // US) * US
    e = d.x(label, "cuda_sync", kind, 0, -1 if stream == NO_STREAM else stream, ts, end,
            {"External id": 0, "cuda_sync_kind": kind, "stream": stream, "correlation": corr,
             "device": 0, "context": 1})
    d.flow(corr, call, e)
    return e


def per_call_syncs() -> SyncCase:
    """CUDA, device 0, streams 7 and 20 (µs):

    - K1 s7 [20, 120] and K2 s20 [25, 60]; cudaDeviceSynchronize S1 [22, 122] **with** its
      Context Sync record -> K1, K2 (device, recorded);
    - K3 s7 [140, 240], K4 s20 [145, 200]; cudaDeviceSynchronize S2 [150, 242] **without** a
      record -> K3, K4 (device, inferred);
    - K5 s7 [260, 300], K6 s20 [262, 330]; cudaStreamSynchronize S3 [265, 302] without a
      record (no stream in its args) -> K5, the activity that ended last before it returned
      (K6 ends after); cudaStreamSynchronize S4 [305, 332] with a Stream Sync record on s20
      -> K6 (recorded);
    - K8 s20 [336, 345], K7 s7 [339, 349]; cudaMemcpyAsync M1 [340, 362] copies DtoH to
      pageable memory (a blocking copy, C1 s7 [350, 360]) -> K7, the activity that ended last
      before it returned other than its own copy (memcpy, inferred).

    Health: ``sync_inferred`` = 3 calls (S2, S3, M1).
    """
    d = _Doc()
    corr = iter(range(1, 100))

    def launch(lbl: str, t0: int, t1: int, a0: int, a1: int, stream: int, cat: str = "kernel",
               name: str = "void k()", api: str = "cudaLaunchKernel") -> tuple[int, int]:
        c = next(corr)
        rt = _cuda(d, "L" + lbl, api, t0 * US, t1 * US, c)
        return rt, _act(d, lbl, name, a0 * US, a1 * US, c, stream, cat, launch=rt)

    _, k1 = launch("K1", 10, 15, 20, 120, 7)
    _, k2 = launch("K2", 16, 20, 25, 60, 20)
    s1 = _cuda(d, "S1", "cudaDeviceSynchronize", 22 * US, 122 * US, next(corr))
    _cuda_sync(d, "S1_record", "Context Sync", s1, NO_STREAM)
    _, k3 = launch("K3", 130, 134, 140, 240, 7)
    _, k4 = launch("K4", 135, 139, 145, 200, 20)
    s2 = _cuda(d, "S2", "cudaDeviceSynchronize", 150 * US, 242 * US, next(corr))
    _, k5 = launch("K5", 250, 254, 260, 300, 7)
    _, k6 = launch("K6", 255, 259, 262, 330, 20)
    s3 = _cuda(d, "S3", "cudaStreamSynchronize", 265 * US, 302 * US, next(corr))
    s4 = _cuda(d, "S4", "cudaStreamSynchronize", 305 * US, 332 * US, next(corr))
    _cuda_sync(d, "S4_record", "Stream Sync", s4, 20)
    _, k8 = launch("K8", 333, 334, 336, 345, 20)
    _, k7 = launch("K7", 335, 338, 339, 349, 7)
    m1, c1 = launch("C1", 340, 362, 350, 360, 7, "gpu_memcpy", "Memcpy DtoH (Device -> Pageable)",
                    "cudaMemcpyAsync")
    d.eids["M1"] = m1
    return SyncCase(
        "per_call_syncs", d.document("NVIDIA A100-SXM4-80GB"),
        sync={(k1, s1, "device", False), (k2, s1, "device", False),
              (k3, s2, "device", True), (k4, s2, "device", True),
              (k5, s3, "stream", True), (k6, s4, "stream", False),
              (k7, m1, "memcpy", True)},
        launch={(m1, c1)},
        health={"sync_inferred": 3}, eids=dict(d.eids))


def pre_trace_kernels() -> SyncCase:
    """HIP, device 0 (µs):

    - P1 s0 [0, 15], P2 s0 [25, 60], P3 s0 [60, 95]: kernels whose correlation has no
      runtime call (launched before the trace began);
    - hipLaunchKernel L1 [2, 6] -> K1 s1 [8, 18];
    - hipDeviceSynchronize D1 [20, 100], while P2 and P3 run -> P3 (not P1, which ended
      before the call started) and K1;
    - hipLaunchKernel L2 [110, 115] -> K2 s0 [120, 150]; hipDeviceSynchronize D2 [118, 152]
      -> K2 and K1 (every stream of the device).

    Health: ``cuda_sync_absent`` = 2 calls; ``kernel_without_launch`` = 3.
    """
    d = _Doc()
    p1 = _act(d, "P1", "elementwise_kernel", 0, 15 * US, 901, 0)
    p2 = _act(d, "P2", "elementwise_kernel", 25 * US, 60 * US, 902, 0)
    p3 = _act(d, "P3", "elementwise_kernel", 60 * US, 95 * US, 903, 0)
    l1 = _cuda(d, "L1", "hipLaunchKernel", 2 * US, 6 * US, 1000)
    k1 = _act(d, "K1", "attn_fwd", 8 * US, 18 * US, 1000, 1, launch=l1)
    d1 = _cuda(d, "D1", "hipDeviceSynchronize", 20 * US, 100 * US, 1001)
    l2 = _cuda(d, "L2", "hipLaunchKernel", 110 * US, 115 * US, 1002)
    k2 = _act(d, "K2", "reduce_kernel", 120 * US, 150 * US, 1002, 0, launch=l2)
    d2 = _cuda(d, "D2", "hipDeviceSynchronize", 118 * US, 152 * US, 1003)
    return SyncCase(
        "pre_trace_kernels", d.document("AMD Instinct MI300X"),
        sync={(p3, d1, "device", True), (k1, d1, "device", True),
              (k2, d2, "device", True), (k1, d2, "device", True)},
        launch={(l1, k1), (l2, k2)},
        kinds={p1: "kernel", p2: "kernel", p3: "kernel"},
        health={"cuda_sync_absent": 2}, eids=dict(d.eids))


def mtia_stream_events() -> SyncCase:
    """MTIA device 17 (pid 17, one tid per stream), host process 865 (µs):

    Stream 101 (host thread 1828): enqueueCommand memcpyHtoDAsync H1 [0, 1] -> dma_request
    D1 [2, 12]; runFunction R1 [3, 8] -> remote RM [13, 113]; recordEvent E1 [9, 11] ->
    event_record ER [115, 116] (seq_num 500); pe_exe PE [120, 190] (no correlation);
    dma_request D4 [207, 210] (no correlation).

    Stream 102 (host thread 1836): memcpyHtoDAsync H2 [1, 2] -> dma_request D2 [3, 10];
    enqueueCommand waitOnEvent W1 [12, 13] -> event_wait EW [14, 115] (wait_on_stream 101,
    seq_num 500); runFunction R2 [14, 18] -> merge MG [117, 193]; memcpyDtoHAsync H3
    [19, 20] -> dma_request D3 [194, 204]; synchronizeStream SS [21, 206] (stream_id 102)
    with its device-side record ``synchronize`` SY [22, 205] (pid 17) -> D3 (recorded).

    Stream 101 again: event_wait EW2 [196, 206] (no correlation, seq_num 999 has no
    record) waits on stream 102 -> D3 -> D4 (fallback: the last activity of stream 102 that
    ended by the wait's end). synchronizeStream SA [150, 195] (stream_id 101) without a
    record -> PE (inferred; MG on stream 102 ends later, but SA waits for stream 101 only).
    Host-side ``synchronize`` SD [230, 240] (device 17, no record) -> D4 and D3 (device,
    inferred).

    Edges: event_wait RM -> MG (EW: the last activity of stream 101 before the event_record
    of seq_num 500 -> the first of stream 102 after the wait began) and D3 -> D4 (EW2).
    Health: ``sync_inferred`` = 2 calls (SA, SD).
    """
    d = _Doc()
    dev = MTIA_DEVICE
    tid_of = {101: 3536, 102: 3570}
    sq_tid = {102: 3568}

    def host(lbl: str, name: str, t0: int, t1: int, corr: int, tid: int, **extra: Any) -> int:
        a = {"correlation": corr, "device": dev, **extra} if corr >= 0 else {"device": dev, **extra}
        return d.x(lbl, "mtia_runtime", name, MTIA_HOST_PID, tid, t0 * US, t1 * US, a)

    def ccp(lbl: str, name: str, t0: int, t1: int, stream: int, corr: int = -1,
            launch: int | None = None, **extra: Any) -> int:
        a: dict[str, Any] = {"correlation": corr} if corr >= 0 else {}
        a.update({"stream": stream, **extra})
        e = d.x(lbl, "mtia_ccp_events", name, dev, tid_of[stream], t0 * US, t1 * US, a)
        if launch is not None:
            d.flow(corr, launch, e)
        return e

    h1 = host("H1", "enqueueCommand memcpyHtoDAsync", 0, 1, 101, 1828, stream_id=101)
    d1 = ccp("D1", "dma_request", 2, 12, 101, 101, h1, direction="HOST_TO_DEVICE", size=4096)
    r1 = host("R1", "runFunction - job_prep_and_submit_for_execution", 3, 8, 102, 1828, stream_id=101)
    rm = ccp("RM", "remote", 13, 113, 101, 102, r1, column="0", row="0")
    e1 = host("E1", "recordEvent", 9, 11, 103, 1828, stream_id="101", cmd_name="Event#1")
    er = ccp("ER", "event_record", 115, 116, 101, 103, e1, seq_num=500, sqid=8, host_ctx=1)
    h2 = host("H2", "enqueueCommand memcpyHtoDAsync", 1, 2, 201, 1836, stream_id=102)
    d2 = ccp("D2", "dma_request", 3, 10, 102, 201, h2, direction="HOST_TO_DEVICE", size=1024)
    w1 = host("W1", "enqueueCommand waitOnEvent", 12, 13, 202, 1836, stream_id=102)
    ew = ccp("EW", "event_wait", 14, 115, 102, 202, w1, wait_on_stream=101, seq_num=500, sqid=11,
             host_ctx=1)
    r2 = host("R2", "runFunction - job_prep_and_submit_for_execution", 14, 18, 203, 1836, stream_id=102)
    mg = ccp("MG", "merge", 117, 193, 102, 203, r2, column="0", row="0")
    h3 = host("H3", "enqueueCommand memcpyDtoHAsync", 19, 20, 204, 1836, stream_id=102)
    d3 = ccp("D3", "dma_request", 194, 204, 102, 204, h3, direction="DEVICE_TO_HOST", size=9216)
    ss = host("SS", "synchronizeStream", 21, 206, 205, 1836, stream_id=102)
    sy = d.x("SY", "mtia_runtime", "synchronize", dev, sq_tid[102], 22 * US, 205 * US,
             {"correlation": 205, "device": dev, "stream_id": 102})
    d.flow(205, ss, sy)
    pe = ccp("PE", "pe_exe", 120, 190, 101, column="0", row="0", packet_ptr=15)
    sa = host("SA", "synchronizeStream", 150, 195, 105, 1828, stream_id=101)
    ew2 = ccp("EW2", "event_wait", 196, 206, 101, wait_on_stream=102, seq_num=999, sqid=8, host_ctx=1)
    d4 = ccp("D4", "dma_request", 207, 210, 101, direction="DEVICE_TO_HOST", size=64)
    sd = host("SD", "synchronize", 230, 240, 206, 1836)
    return SyncCase(
        "mtia_stream_events", d.document("ARTEMIS"),
        sync={(d3, ss, "stream", False), (pe, sa, "stream", True),
              (d4, sd, "device", True), (d3, sd, "device", True)},
        event_wait={(rm, mg), (d3, d4)},
        launch={(h1, d1), (r1, rm), (h2, d2), (r2, mg), (h3, d3)},
        kinds={d1: "memcpy", d2: "memcpy", d3: "memcpy", d4: "memcpy", rm: "kernel", mg: "kernel",
               pe: "kernel", er: "", ew: "", ew2: "", sy: "", ss: "runtime", sa: "runtime", sd: "runtime",
               e1: "runtime", w1: "runtime"},
        health={"sync_inferred": 2}, eids=dict(d.eids))


def graph_launch(n: int = 5) -> SyncCase:
    """CUDA graph replay: cudaLaunchKernel L0 [0, 4] -> K0 s7 [6, 10]; one cudaGraphLaunch G
    [10, 20] whose correlation is carried by ``n`` kernels on stream 7, kernel j on
    [25 + 10 j, 33 + 10 j] µs, each with its ``ac2g`` flow; cudaStreamSynchronize S
    [21, 35 + 10 n] (no record) -> the last graph kernel."""
    d = _Doc()
    l0 = _cuda(d, "L0", "cudaLaunchKernel", 0, 4 * US, 1)
    k0 = _act(d, "K0", "void prologue()", 6 * US, 10 * US, 1, 7, launch=l0)
    g = _cuda(d, "G", "cudaGraphLaunch", 10 * US, 20 * US, 2)
    ks = [_act(d, f"GK{j}", f"void graph_kernel_{j}()", (25 + 10 * j) * US, (33 + 10 * j) * US, 2, 7, launch=g)
          for j in range(n)]
    s = _cuda(d, "S", "cudaStreamSynchronize", 21 * US, (35 + 10 * n) * US, 3)
    return SyncCase(
        "graph_launch", d.document("NVIDIA A100-SXM4-80GB"),
        sync={(ks[-1], s, "stream", True)},
        launch={(l0, k0)} | {(g, k) for k in ks},
        health={"cuda_sync_absent": 1}, eids=dict(d.eids))


#: Every case, by name.
CASES = {f.__name__: f for f in (per_call_syncs, pre_trace_kernels, mtia_stream_events, graph_launch)}
