"""Synthetic PyTorch-profiler (Kineto) traces whose answers are known by construction.

Every scenario is built on a small timeline model kept in integer **nanoseconds**: host
ranges (ProfilerStep annotations, python functions, CPU ops, CUDA runtime calls) nest
strictly on their thread, and each device activity (kernel, memcpy, memset) starts at
``max(launch call end + latency, end of the previous activity on its stream)``. The trace
JSON is written from that model (Kineto's µs: integers, or decimals with exactly three
fractional digits for ``ns_float``), and the answers are computed from the same model,
never by re-parsing the JSON.

Answer definitions (all times are integer ns; see :func:`synthesize`):

- ``nodes_by_kind`` / ``edges_by_kind``: the graph of docs/model.md. ``nest`` = direct
  parent -> child range on one (pid, tid) (a ``gpu_user_annotation`` nests the device
  activities inside it on its stream's tid); ``host_seq`` = consecutive siblings under the
  same nest parent on one thread (a thread's roots are siblings); ``launch`` = one per
  device activity whose correlation has a runtime call; ``stream_seq`` = consecutive device
  activities of one (device, stream); ``sync`` = cudaDeviceSynchronize: one edge per stream
  from the last activity on it that ended before the call returned, cudaStreamSynchronize:
  one edge from the last activity that ended before it returned (every synchronising call
  here really waits: that activity ends after the call starts); ``event_wait`` = one per
  ``Stream Wait Event``; ``flow`` = one per non-launch flow (``fwdbwd``).
- ``gpu``: ``start_ns``/``end_ns`` = first device-activity start / last end, ``span_ns``
  their difference, ``busy_ns`` the length of the union of all activity intervals (all
  streams), ``idle_ns = span_ns - busy_ns``, ``busy_by_stream_ns``, ``utilization =
  busy/span``.
- ``idle_causes_ns``: the device idle (holes in the union inside the span) split by cause
  (docs/idle.md): ``cpu_induced`` (the host was late: from the gap start to the start of
  the launch call of the activity that ends the gap, less ``sync_drain``, the part of it
  the launching thread spent inside a synchronize call), ``launch_latency`` (then until the
  call's end + 100 µs), ``device_wait`` (an activity held by a cudaStreamWaitEvent: until the
  awaited activity ended), ``kernel_gap`` (an activity launched before the gap began, or
  held: at most 100 µs more), ``untraced`` (the rest); ``cpu_induced_idle_ns``
  and ``launch_latency_ns`` repeat two of them.
- ``bound``: ``"gpu"`` when ``busy_ns >= idle_ns`` (utilization >= 50 %), else ``"cpu"``.
  Scenarios are built far from the 50 % line.
- ``steps``: one entry per ProfilerStep: CPU range of the annotation, and the GPU range and
  busy time (union) of the device activities whose launch call starts inside that range.
"""

from __future__ import annotations

import json
import random
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any, Callable

#: Nanoseconds per microsecond (Kineto writes µs).
US = 1_000

#: The scenarios :func:`synthesize` knows, in a stable order.
SCENARIOS: tuple[str, ...] = (
    "cpu_bound",
    "gpu_bound",
    "sync_every_op",
    "two_stream_event_wait",
    "cuda_graph",
    "old_format_2021",
    "ns_float",
)
#: Scenarios :func:`synthesize` also knows that have no fixture in ``fixtures/synth`` (the
#: suites that run every scenario of :data:`SCENARIOS` leave them out).
OPTIONAL_SCENARIOS: tuple[str, ...] = (
    "gemm_shapes",
    "memory",
)

NODE_KINDS: tuple[str, ...] = (
    "annotation", "cpu_op", "python", "runtime", "kernel", "memcpy", "memset", "gpu_annotation",
)
EDGE_KINDS: tuple[str, ...] = (
    "nest", "host_seq", "launch", "stream_seq", "sync", "event_wait", "flow",
)
EVENT_KINDS: tuple[str, ...] = NODE_KINDS + (
    "cuda_sync", "flow_start", "flow_end", "instant", "meta", "trace_span",
)
DEVICE_ACTIVITY_KINDS: tuple[str, ...] = ("kernel", "memcpy", "memset")
HOST_KINDS: tuple[str, ...] = ("annotation", "cpu_op", "python", "runtime")

PID = 100            #: the python process
MAIN_TID = 100       #: its main thread (ProfilerStep ranges live here)
BWD_TID = 101        #: the autograd thread of ``cpu_bound``
GPU_PID = 0          #: Kineto writes device activities with pid = device index
DEVICE = 0
STREAM = 7           #: the default compute stream
SIDE_STREAM = 20     #: the second stream of ``two_stream_event_wait``
#: Start of the integer-µs scenarios (an epoch-like value, exact in float64 as µs).
BASE_NS = 1_700_000_000_000_000 * US
#: Start of ``ns_float``: 1712195495519689.047 µs (not representable in float64).
NS_FLOAT_BASE_NS = 1_712_195_495_519_689_047
#: A device activity starts this long after its launch call returns (unless queued).
LAUNCH_LATENCY_NS = 5 * US
#: A synchronising call returns this long after the activity it waited for ends.
SYNC_RETURN_NS = 2 * US

_CBID = {
    "cudaLaunchKernel": 211, "cudaMemcpyAsync": 41, "cudaMemsetAsync": 51,
    "cudaStreamSynchronize": 131, "cudaDeviceSynchronize": 165, "cudaEventRecord": 135,
    "cudaStreamWaitEvent": 147, "cudaGraphLaunch": 311,
}
_CATS_NEW = {
    "annotation": "user_annotation", "cpu_op": "cpu_op", "python": "python_function",
    "runtime": "cuda_runtime", "kernel": "kernel", "memcpy": "gpu_memcpy",
    "memset": "gpu_memset", "gpu_annotation": "gpu_user_annotation", "cuda_sync": "cuda_sync",
}
_CATS_OLD = {
    "annotation": "Operator", "cpu_op": "Operator", "runtime": "Runtime", "kernel": "Kernel",
    "memcpy": "Memcpy", "memset": "Memset",
}
_DEVICE_PROPERTIES = {
    "id": 0, "name": "NVIDIA A100-SXM4-80GB", "totalGlobalMem": 85097971712,
    "computeMajor": 8, "computeMinor": 0, "maxThreadsPerBlock": 1024,
    "maxThreadsPerMultiprocessor": 2048, "regsPerBlock": 65536, "regsPerMultiprocessor": 65536,
    "warpSize": 32, "sharedMemPerBlock": 49152, "sharedMemPerMultiprocessor": 167936,
    "numSms": 108, "sharedMemPerBlockOptin": 166912,
}


@dataclass
class Scenario:
    """A synthetic trace and its ground truth.

    ``trace`` is the Kineto document: a dict with ``traceEvents`` (a bare list for
    ``old_format_2021``). Times in it are Kineto µs: ``int``, or :class:`decimal.Decimal`
    with three fractional digits for ``ns_float`` (write it with :func:`trace_to_json`,
    which keeps the digits; ``json.dumps`` would not). ``answers`` is JSON-serialisable,
    with every time in integer ns.
    """

    name: str
    trace: dict[str, Any] | list[dict[str, Any]]
    answers: dict[str, Any]


@dataclass(eq=False)
class _Ev:
    """One event of the model. ``ts``/``dur`` in ns; ``dur`` is None for ph != X."""

    kind: str
    ph: str
    cat: str
    name: str
    ts: int
    dur: int | None
    pid: int | str
    tid: int | str
    args: dict[str, Any] = field(default_factory=dict)
    parent: _Ev | None = None
    flow_id: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    eid: int = -1

    @property
    def end(self) -> int:
        """End time in ns (``ts`` for events without a duration)."""
        return self.ts + (self.dur or 0)


@dataclass
class _Sync:
    """A synchronising host call: ``stream`` None means the whole device."""

    call: _Ev
    stream: int | None


@dataclass
class _EventWait:
    """A cudaEventRecord on ``src_stream`` waited for by ``dst_stream`` (cudaStreamWaitEvent)."""

    record: _Ev
    wait: _Ev
    src_stream: int
    dst_stream: int


class TraceBuilder:
    """Accumulates a scenario's timeline (ns) and renders trace + answers from it."""

    def __init__(self, name: str, *, old_format: bool = False, fractional: bool = False) -> None:
        self.name = name
        self.old = old_format
        self.fractional = fractional
        self.host: list[_Ev] = []          # annotation/python/cpu_op ranges
        self.runtimes: list[_Ev] = []
        self.activities: list[_Ev] = []    # kernel/memcpy/memset
        self.gpu_annotations: list[_Ev] = []
        self.cuda_syncs: list[_Ev] = []
        self.fwdbwd: list[tuple[_Ev, _Ev, int]] = []
        self.syncs: list[_Sync] = []
        self.event_waits: list[_EventWait] = []
        self.steps: list[_Ev] = []
        self.launcher: dict[int, _Ev] = {}     # id(activity) -> runtime call
        self.tail: dict[int, int] = {}         # stream -> end ns of its last activity
        self._flow_targets: dict[int, list[_Ev]] = defaultdict(list)  # runtime corr -> f-ends
        self._corr = 1000
        self._ext = 0
        self._flow = 0
        self._event_id = 0
        self.memory: list[_Ev] = []            # [memory] instant events, in time order
        self.mem_state: dict[tuple[int, int], list[int]] = {}  # (type, id) -> [allocated, reserved]
        self.mem_free_of: dict[int, _Ev] = {}  # id(allocation) -> its free

    # ----------------------------------------------------------------- host side
    def _cat(self, kind: str) -> str:
        return (_CATS_OLD if self.old else _CATS_NEW)[kind]

    def _host_tid(self, tid: int) -> int | str:
        # The 2021 format writes CPU tids of X events as strings (flows keep ints).
        return str(tid) if self.old else tid

    def open(self, kind: str, name: str, ts: int, *, parent: _Ev | None = None,
             tid: int = MAIN_TID, args: dict[str, Any] | None = None) -> _Ev:
        """Start a host range (annotation, python or cpu_op); close it with :meth:`close`."""
        a: dict[str, Any] = {}
        if kind in ("annotation", "cpu_op"):
            self._ext += 1
            if self.old:
                a = {"Input dims": [], "Input type": [], "Input names": [], "Output dims": [],
                     "Output type": [], "Output names": [], "Device": 0, "External id": self._ext,
                     "Extra arguments": [], "Trace name": "PyTorch Profiler", "Trace iteration": 0}
            else:
                a = {"External id": self._ext, "Record function id": 0}
        elif kind == "python":
            a = {"Python parent id": None, "Python id": len(self.host) + 1, "Python thread": 0}
        a.update(args or {})
        ev = _Ev(kind, "X", self._cat(kind), name, ts, None, PID, self._host_tid(tid), a, parent)
        self.host.append(ev)
        if kind == "annotation" and name.startswith("ProfilerStep#"):
            self.steps.append(ev)
        return ev

    @staticmethod
    def close(ev: _Ev, end: int) -> _Ev:
        """Set the end (ns) of a range opened with :meth:`open`."""
        if end <= ev.ts:
            raise ValueError(f"{ev.name}: end {end} <= start {ev.ts}")
        ev.dur = end - ev.ts
        return ev

    def span(self, kind: str, name: str, ts: int, end: int, *, parent: _Ev | None = None,
             tid: int = MAIN_TID, args: dict[str, Any] | None = None) -> _Ev:
        """A host range with known start and end (ns)."""
        return self.close(self.open(kind, name, ts, parent=parent, tid=tid, args=args), end)

    @staticmethod
    def _ext_of(ev: _Ev | None) -> tuple[int, int]:
        """External id and start (ns) of the nearest ancestor that has one."""
        while ev is not None:
            ext = ev.args.get("External id")
            if ext is not None:
                return ext, ev.ts
            ev = ev.parent
        return 0, 0

    def runtime(self, name: str, ts: int, end: int, *, parent: _Ev) -> _Ev:
        """A CUDA runtime call on ``parent``'s thread with a fresh correlation id."""
        self._corr += 1
        ext, ext_ts = self._ext_of(parent)
        if self.old:
            a: dict[str, Any] = {"cbid": _CBID[name], "correlation": self._corr,
                                 "external id": ext, "external ts": self._us(ext_ts)}
        else:
            a = {"External id": ext, "cbid": _CBID[name], "correlation": self._corr}
        ev = _Ev("runtime", "X", self._cat("runtime"), name, ts, end - ts, PID, parent.tid, a, parent)
        if ev.dur is None or ev.dur <= 0:
            raise ValueError(f"{name}: non-positive duration")
        self.runtimes.append(ev)
        return ev

    # ---------------------------------------------------------------- memory
    def mem_start(self, device_type: int, device: int, allocated: int, reserved: int) -> None:
        """The allocator's totals of a device before the trace's first ``[memory]`` event."""
        self.mem_state[(device_type, device)] = [allocated, reserved]

    def mem_event(self, ts: int, nbytes: int, addr: int, *, op: _Ev | None, device_type: int = 1,
                  device: int = 0, reserved: int | None = None, frees: _Ev | None = None,
                  tid: int = MAIN_TID) -> _Ev:
        """A ``[memory]`` instant (Kineto ``profile_memory=True``): ``nbytes`` > 0 allocates,
        < 0 frees (``frees``: the allocation it ends, None for one made before the trace).
        ``op`` is the innermost host range around it (None: none). The event carries the
        device's running ``Total Allocated`` / ``Total Reserved`` after it."""
        st = self.mem_state.setdefault((device_type, device), [0, 0])
        st[0] += nbytes
        if reserved is not None:
            st[1] = reserved
        a = {"Total Reserved": st[1], "Total Allocated": st[0], "Bytes": nbytes, "Addr": addr,
             "Device Id": device, "Device Type": device_type}
        ev = _Ev("instant", "i", "cpu_instant_event", "[memory]", ts, None, PID, self._host_tid(tid), a, op,
                 extra={"s": "t"})
        if frees is not None:
            self.mem_free_of[id(frees)] = ev
        self.memory.append(ev)
        return ev

    # --------------------------------------------------------------- device side
    def launch(self, kind: str, name: str, rt: _Ev, dur: int, *, stream: int = STREAM,
               latency: int = LAUNCH_LATENCY_NS, not_before: int = 0,
               args: dict[str, Any] | None = None) -> _Ev:
        """A device activity enqueued by runtime call ``rt``.

        Starts at ``max(rt end + latency, previous activity end on the stream, not_before)``.
        """
        start = max(rt.end + latency, self.tail.get(stream, 0), not_before)
        extra = dict(args or {})
        ext_key = "external id" if self.old else "External id"
        ids = {"device": DEVICE, "context": 1, "stream": stream, "correlation": rt.args["correlation"]}
        # New Kineto writes "External id" first; the 2021 layout writes "external id" after the ids.
        a: dict[str, Any] = {} if self.old else {ext_key: rt.args[ext_key]}
        if kind == "kernel":
            a["queued"] = 0
        a.update(ids)
        if self.old:
            a[ext_key] = rt.args[ext_key]
        if kind == "kernel":
            a.update({"registers per thread": 32, "shared memory": 0, "blocks per SM": 0.5,
                      "warps per SM": 2.0, "grid": [54, 1, 1], "block": [128, 1, 1],
                      "est. achieved occupancy %": 3})
        else:
            nbytes = int(extra.pop("bytes", 1 << 20))
            a.update({"bytes": nbytes, "memory bandwidth (GB/s)": round(nbytes / dur, 6)})
        a.update(extra)
        tid: int | str = f"stream {stream}" if self.old else stream
        ev = _Ev(kind, "X", self._cat(kind), name, start, dur, GPU_PID, tid, a)
        self.activities.append(ev)
        self.launcher[id(ev)] = rt
        self.tail[stream] = ev.end
        self._flow_targets[rt.args["correlation"]].append(ev)
        return ev

    def synchronize(self, name: str, ts: int, *, parent: _Ev, stream: int | None,
                    ret: int = SYNC_RETURN_NS) -> _Ev:
        """A blocking call that returns ``ret`` ns after the last activity it waits for.

        ``stream`` None: cudaDeviceSynchronize (all streams); else cudaStreamSynchronize.
        Adds the ``Context Sync`` / ``Stream Sync`` cuda_sync event (new format only).
        """
        waited = max(self.tail.values()) if stream is None else self.tail[stream]
        rt = self.runtime(name, ts, waited + ret, parent=parent)
        self.syncs.append(_Sync(rt, stream))
        if not self.old:
            kind = "Context Sync" if stream is None else "Stream Sync"
            self._cuda_sync(kind, rt, -1 if stream is None else stream, {})
        return rt

    def stream_wait_event(self, ts: int, end: int, *, parent: _Ev, record: _Ev,
                          src_stream: int, dst_stream: int) -> _Ev:
        """cudaStreamWaitEvent: ``dst_stream`` waits for ``record`` (a cudaEventRecord)."""
        rt = self.runtime("cudaStreamWaitEvent", ts, end, parent=parent)
        self._event_id += 1
        self._cuda_sync("Stream Wait Event", rt, dst_stream, {
            "wait_on_stream": src_stream,
            "wait_on_cuda_event_record_corr_id": record.args["correlation"],
            "wait_on_cuda_event_id": self._event_id,
        })
        self.event_waits.append(_EventWait(record, rt, src_stream, dst_stream))
        return rt

    def _cuda_sync(self, kind: str, rt: _Ev, stream: int, extra: dict[str, Any]) -> _Ev:
        a: dict[str, Any] = {"External id": rt.args.get("External id", 0), "cuda_sync_kind": kind}
        a.update(extra)
        a.update({"stream": stream, "correlation": rt.args["correlation"], "device": DEVICE,
                  "context": 1})
        ts = rt.ts + min(US, rt.dur // 2 if rt.dur else 0)
        ev = _Ev("cuda_sync", "X", self._cat("cuda_sync"), kind, ts, rt.end - ts, GPU_PID, stream, a)
        self.cuda_syncs.append(ev)
        self._flow_targets[rt.args["correlation"]].append(ev)
        return ev

    def gpu_annotation(self, step: _Ev, acts: list[_Ev], stream: int = STREAM) -> _Ev:
        """The device-side copy of a ProfilerStep range, 1 µs around ``acts`` on ``stream``."""
        on_stream = [a for a in acts if a.args["stream"] == stream]
        ts = min(a.ts for a in on_stream) - US
        end = max(a.end for a in on_stream) + US
        ev = _Ev("gpu_annotation", "X", self._cat("gpu_annotation"), step.name, ts, end - ts,
                 GPU_PID, stream, {"External id": step.args["External id"]})
        for a in on_stream:
            a.parent = ev
        self.gpu_annotations.append(ev)
        return ev

    def add_fwdbwd(self, fwd: _Ev, bwd: _Ev) -> None:
        """A forward -> backward flow (``fwdbwd``), bound to the two ops' start times."""
        self._flow += 1
        self.fwdbwd.append((fwd, bwd, self._flow))

    # ------------------------------------------------------------------ rendering
    def _us(self, ns: int) -> int | Decimal:
        """Kineto µs for ``ns``: an int, or a 3-decimal Decimal in fractional mode."""
        if self.fractional:
            sign = "-" if ns < 0 else ""
            q, r = divmod(abs(ns), US)
            return Decimal(f"{sign}{q}.{r:03d}")
        if ns % US:
            raise ValueError(f"{self.name}: {ns} ns is not a whole µs in an integer-µs scenario")
        return ns // US

    def _x(self, ev: _Ev) -> dict[str, Any]:
        assert ev.dur is not None, f"{ev.name} was never closed"
        return {"ph": "X", "cat": ev.cat, "name": ev.name, "pid": ev.pid, "tid": ev.tid,
                "ts": self._us(ev.ts), "dur": self._us(ev.dur), "args": ev.args}

    def _flow_ev(self, ph: str, fid: int, cat: str, name: str, pid: int | str, tid: int | str,
                 ts: int) -> _Ev:
        ev = _Ev("flow_start" if ph == "s" else "flow_end", ph, cat, name, ts, None, pid, tid,
                 flow_id=fid)
        if ph == "f":
            ev.extra["bp"] = "e"
        return ev

    def _flow_dict(self, ev: _Ev) -> dict[str, Any]:
        d: dict[str, Any] = {"ph": ev.ph, "id": ev.flow_id, "pid": ev.pid, "tid": ev.tid,
                             "ts": self._us(ev.ts), "cat": ev.cat, "name": ev.name}
        d.update(ev.extra)
        return d

    def _ordered(self) -> list[tuple[_Ev, dict[str, Any]]]:
        """All events in file order, as (model event, JSON dict)."""
        out: list[tuple[_Ev, dict[str, Any]]] = []
        fcat, fname = ("async", "launch") if self.old else ("ac2g", "ac2g")
        for ev in sorted(self.host, key=lambda e: (e.ts, -(e.dur or 0))):
            out.append((ev, self._x(ev)))
        for ev in self.memory:
            out.append((ev, {"ph": "i", "cat": ev.cat, "s": "t", "name": ev.name, "pid": ev.pid, "tid": ev.tid,
                             "ts": self._us(ev.ts), "args": ev.args}))
        for rt in self.runtimes:
            out.append((rt, self._x(rt)))
            corr = rt.args["correlation"]
            if self._flow_targets.get(corr):
                # Flow starts carry the numeric tid even where X events write it as a string.
                s = self._flow_ev("s", corr, fcat, fname, PID, int(rt.tid), rt.ts)
                out.append((s, self._flow_dict(s)))
        for ev in self.activities + self.cuda_syncs:
            out.append((ev, self._x(ev)))
            corr = ev.args["correlation"]
            f = self._flow_ev("f", corr, fcat, fname, ev.pid, ev.tid, ev.ts)
            out.append((f, self._flow_dict(f)))
        for ev in self.gpu_annotations:
            out.append((ev, self._x(ev)))
        for fwd, bwd, fid in self.fwdbwd:
            s = self._flow_ev("s", fid, "fwdbwd", "fwdbwd", PID, fwd.tid, fwd.ts)
            f = self._flow_ev("f", fid, "fwdbwd", "fwdbwd", PID, bwd.tid, bwd.ts)
            out.append((s, self._flow_dict(s)))
            out.append((f, self._flow_dict(f)))
        return out

    def _meta_and_spans(self, t0: int, t1: int) -> list[tuple[_Ev, dict[str, Any]]]:
        out: list[tuple[_Ev, dict[str, Any]]] = []
        ts = self._us(t0)

        def meta(name: str, pid: int | str, tid: int | str, args: dict[str, Any]) -> None:
            ev = _Ev("meta", "M", "", name, t0, None, pid, tid, args)
            out.append((ev, {"name": name, "ph": "M", "ts": ts, "pid": pid, "tid": tid, "args": args}))

        meta("process_name", PID, 0, {"name": "python3.11"})
        meta("process_labels", PID, 0, {"labels": "CPU"})
        meta("process_name", GPU_PID, 0, {"name": "python3.11"})
        meta("process_labels", GPU_PID, 0, {"labels": f"GPU {DEVICE}"})
        for tid in sorted({int(e.tid) for e in self.host}):
            meta("thread_name", PID, self._host_tid(tid), {"name": f"thread {tid} (python)"})
        for s in sorted({int(e.args["stream"]) for e in self.activities}):
            meta("thread_name", GPU_PID, f"stream {s}" if self.old else s, {"name": f"stream {s} "})
        span_pid = "Traces" if self.old else "Spans"
        span = _Ev("trace_span", "X", "Trace", "PyTorch Profiler (0)", t0, t1 - t0, span_pid,
                   "PyTorch Profiler", {"Op count": 0})
        out.append((span, {"ph": "X", "cat": "Trace", "ts": ts, "dur": self._us(t1 - t0),
                           "pid": span_pid, "tid": "PyTorch Profiler",
                           "name": "PyTorch Profiler (0)", "args": {"Op count": 0}}))
        inst = _Ev("instant", "i", "", "Iteration Start: PyTorch Profiler", t0, None, "Traces",
                   "Trace PyTorch Profiler")
        out.append((inst, {"name": inst.name, "ph": "i", "s": "g", "pid": "Traces",
                           "tid": "Trace PyTorch Profiler", "ts": ts}))
        return out

    def render(self) -> tuple[list[_Ev], list[dict[str, Any]]]:
        """File-ordered model events and their JSON dicts; sets every ``eid``."""
        pairs = self._ordered()
        t0 = min(e.ts for e, _ in pairs) - 50 * US
        t1 = max(e.end for e, _ in pairs) + 50 * US
        pairs += self._meta_and_spans(t0, t1)
        for i, (ev, _) in enumerate(pairs):
            ev.eid = i
        return [e for e, _ in pairs], [d for _, d in pairs]

    def document(self, events: list[dict[str, Any]]) -> dict[str, Any] | list[dict[str, Any]]:
        """The top-level Kineto document around ``events``."""
        if self.old:
            return events
        return {
            "schemaVersion": 1,
            "deviceProperties": [dict(_DEVICE_PROPERTIES)],
            "distributedInfo": {"rank": 0},
            "traceEvents": events,
            "traceName": f"synth_{self.name}.json",
        }


# ---------------------------------------------------------------------- answers
def _union(intervals: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Merge [start, end) intervals (ns); touching intervals merge."""
    merged: list[tuple[int, int]] = []
    for s, e in sorted(intervals):
        if merged and s <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], e))
        else:
            merged.append((s, e))
    return merged


def _length(intervals: list[tuple[int, int]]) -> int:
    return sum(e - s for s, e in intervals)


def _sweep_parents(evs: list[_Ev]) -> dict[int, _Ev | None]:
    """Direct parent of every range on one thread by a sorted sweep; raises on partial overlap."""
    parents: dict[int, _Ev | None] = {}
    stack: list[_Ev] = []
    for ev in sorted(evs, key=lambda e: (e.ts, -(e.dur or 0))):
        while stack and stack[-1].end <= ev.ts:
            stack.pop()
        if stack and ev.end > stack[-1].end:
            raise AssertionError(f"{ev.name}@{ev.ts} partially overlaps {stack[-1].name}")
        parents[id(ev)] = stack[-1] if stack else None
        stack.append(ev)
    return parents


def _verify(b: TraceBuilder) -> None:
    """Check the construction obeys the rules the answers rely on (raises AssertionError)."""
    host_nodes = b.host + b.runtimes
    by_thread: dict[Any, list[_Ev]] = defaultdict(list)
    for ev in host_nodes:
        by_thread[(ev.pid, ev.tid)].append(ev)
    for evs in by_thread.values():
        swept = _sweep_parents(evs)
        for ev in evs:
            assert swept[id(ev)] is ev.parent, f"{ev.name}@{ev.ts}: nest parent differs from sweep"
            if ev.parent is not None:  # strict containment: no ties for a sweep to break
                assert ev.parent.ts < ev.ts and ev.end < ev.parent.end, f"{ev.name}: touches parent"
    by_tid: dict[Any, list[_Ev]] = defaultdict(list)
    for ev in b.activities + b.gpu_annotations:
        by_tid[(ev.pid, ev.tid)].append(ev)
    for evs in by_tid.values():
        swept = _sweep_parents(evs)
        for ev in evs:
            assert swept[id(ev)] is ev.parent, f"{ev.name}@{ev.ts}: device nest parent differs"
    corrs = {rt.args["correlation"] for rt in b.runtimes}
    assert all(a.args["correlation"] in corrs for a in b.activities)
    for sy in b.syncs:
        for act in _sync_sources(b, sy):
            assert sy.call.ts < act.end < sy.call.end, f"{sy.call.name}@{sy.call.ts} does not wait"
    for w in b.event_waits:
        assert any(a.args["stream"] == w.src_stream and b.launcher[id(a)].ts < w.record.ts
                   and a.ts < w.record.ts for a in b.activities), "nothing recorded before event"
        assert any(a.args["stream"] == w.dst_stream and b.launcher[id(a)].ts > w.wait.end
                   for a in b.activities), "nothing enqueued after the wait"


def _sync_sources(b: TraceBuilder, sy: _Sync) -> list[_Ev]:
    """The activities a synchronising call gets a ``sync`` edge from (docs/model.md)."""
    streams = sorted({a.args["stream"] for a in b.activities}) if sy.stream is None else [sy.stream]
    out = []
    for s in streams:
        done = [a for a in b.activities if a.args["stream"] == s and a.end <= sy.call.end]
        if done:
            out.append(max(done, key=lambda a: (a.end, a.ts)))
    return out


def _edges_by_kind(b: TraceBuilder) -> dict[str, int]:
    edges: Counter[str] = Counter()
    host_nodes = b.host + b.runtimes
    edges["nest"] = sum(ev.parent is not None for ev in host_nodes + b.activities)
    groups: Counter[Any] = Counter((ev.pid, ev.tid, id(ev.parent)) for ev in host_nodes)
    edges["host_seq"] = sum(n - 1 for n in groups.values())
    edges["launch"] = len(b.activities)  # every activity has a runtime call (checked)
    per_stream = Counter((DEVICE, a.args["stream"]) for a in b.activities)
    edges["stream_seq"] = sum(n - 1 for n in per_stream.values())
    edges["sync"] = sum(len(_sync_sources(b, sy)) for sy in b.syncs)
    edges["event_wait"] = len(b.event_waits)
    edges["flow"] = len(b.fwdbwd)
    return {k: int(edges[k]) for k in EDGE_KINDS}


def _gpu_answers(b: TraceBuilder) -> tuple[dict[str, Any], dict[str, int]]:
    """GPU totals plus the idle causes (ns, docs/idle.md): every gap between merged device
    intervals, ended by activity ``x`` launched by call ``c``, is split in time order into
    host-late time (gap start to ``c``'s start) — ``sync_drain`` where the launching thread
    is inside a synchronize call, ``cpu_induced`` elsewhere —, ``launch_latency`` (until
    ``c``'s end + 100 µs), ``device_wait`` when ``x`` is the first activity after a
    cudaStreamWaitEvent on its stream (until the awaited activity ended), ``kernel_gap``
    (``x`` queued or held: up to 100 µs after the gap start, or after the awaited end) and
    the rest ``untraced``."""
    ivs = [(a.ts, a.end) for a in b.activities]
    merged = _union(ivs)
    start, end = merged[0][0], merged[-1][1]
    busy = _length(merged)
    by_stream = {str(s): _length(_union([(a.ts, a.end) for a in b.activities if a.args["stream"] == s]))
                 for s in sorted({a.args["stream"] for a in b.activities})}
    held: dict[int, int] = {}  # id(held activity) -> end of the activity it waited for
    for ew in b.event_waits:
        after = [a for a in b.activities if a.args["stream"] == ew.dst_stream and b.launcher[id(a)].ts >= ew.wait.ts]
        before = [a for a in b.activities if a.args["stream"] == ew.src_stream and b.launcher[id(a)].ts <= ew.record.ts]
        if after and before:
            x = min(after, key=lambda a: (b.launcher[id(a)].ts, a.ts))
            held[id(x)] = max(before, key=lambda a: (b.launcher[id(a)].ts, a.ts)).end
    causes = {"cpu_induced": 0, "sync_drain": 0, "launch_latency": 0, "kernel_gap": 0, "device_wait": 0,
              "untraced": 0}
    for (_, g0), (g1, _) in zip(merged, merged[1:]):
        enders = [a for a in b.activities if a.ts == g1]
        assert len(enders) == 1, f"{b.name}: gap ending at {g1} has {len(enders)} activities"
        x = enders[0]
        c = b.launcher[id(x)]
        host_end = min(max(c.ts, g0), g1)
        lat_end = min(max(c.end + 100 * US, host_end), g1)
        drain = sum(max(0, min(sy.call.end, host_end) - max(sy.call.ts, g0)) for sy in b.syncs
                    if sy.call.tid == c.tid)
        wait_end = min(max(held[id(x)], lat_end), g1) if id(x) in held else lat_end
        if id(x) in held or c.ts < g0:
            base = wait_end if id(x) in held else g0
            gap_end = min(max(base + 100 * US, wait_end), g1)
        else:
            gap_end = wait_end
        causes["sync_drain"] += drain
        causes["cpu_induced"] += host_end - g0 - drain
        causes["launch_latency"] += lat_end - host_end
        causes["device_wait"] += wait_end - lat_end
        causes["kernel_gap"] += gap_end - wait_end
        causes["untraced"] += g1 - gap_end
    gpu = {"start_ns": start, "end_ns": end, "span_ns": end - start, "busy_ns": busy,
           "idle_ns": end - start - busy, "utilization": round(busy / (end - start), 6),
           "busy_by_stream_ns": by_stream}
    return gpu, causes


def _step_answers(b: TraceBuilder) -> list[dict[str, Any]]:
    out = []
    for st in b.steps:
        acts = [a for a in b.activities if st.ts <= b.launcher[id(a)].ts < st.end]
        merged = _union([(a.ts, a.end) for a in acts])
        out.append({
            "name": st.name, "cpu_start_ns": st.ts, "cpu_end_ns": st.end, "cpu_dur_ns": st.end - st.ts,
            "gpu_start_ns": merged[0][0] if merged else None,
            "gpu_end_ns": merged[-1][1] if merged else None,
            "gpu_busy_ns": _length(merged), "num_device_activities": len(acts),
        })
    return out


def builder_answers(b: TraceBuilder, events: list[_Ev], description: str) -> dict[str, Any]:
    _verify(b)
    events_by_kind = Counter(e.kind for e in events)
    nodes = {k: int(events_by_kind[k]) for k in NODE_KINDS}
    edges = _edges_by_kind(b)
    gpu, causes = _gpu_answers(b)
    if 0.4 < gpu["utilization"] < 0.6:
        raise AssertionError(f"{b.name}: utilization {gpu['utilization']} too close to the 50 % line")
    return {
        "scenario": b.name,
        "description": description,
        "format": "kineto-2021-list" if b.old else "kineto",
        "time_unit": "ns",
        "rank": None if b.old else 0,
        "num_events": len(events),
        "events_by_kind": {k: int(events_by_kind[k]) for k in EVENT_KINDS},
        "num_nodes": sum(nodes.values()),
        "nodes_by_kind": nodes,
        "num_edges": sum(edges.values()),
        "edges_by_kind": edges,
        "steps": _step_answers(b),
        "gpu": gpu,
        "cpu_induced_idle_ns": causes["cpu_induced"],
        "launch_latency_ns": causes["launch_latency"],
        "idle_causes_ns": causes,
        "bound": "gpu" if gpu["busy_ns"] >= gpu["idle_ns"] else "cpu",
    }


# --------------------------------------------------------------------- scenarios
def _cpu_bound(b: TraceBuilder, steps: int, rng: random.Random) -> str:
    """Per step: 8 forward ops on the main thread (every other one ``aten::linear`` >
    ``aten::addmm``), each launching a 5 µs kernel, 60 µs apart; then 4 backward ops on the
    autograd thread (tid 101), each with a ``fwdbwd`` flow from a forward op."""
    fwd_names = ("aten::linear", "aten::relu", "aten::linear", "aten::sigmoid")
    s = BASE_NS
    for k in range(1, steps + 1):
        step = b.open("annotation", f"ProfilerStep#{k}", s)
        fwd_ops: list[_Ev] = []
        for i in range(8):
            t = s + 10 * US + i * 100 * US
            name = fwd_names[i % 4]
            op = b.span("cpu_op", name, t, t + 40 * US, parent=step, args={"Sequence number": i})
            inner = op
            if name == "aten::linear":
                inner = b.span("cpu_op", "aten::addmm", t + 5 * US, t + 35 * US, parent=op)
            rt = b.runtime("cudaLaunchKernel", t + 20 * US, t + 30 * US, parent=inner)
            b.launch("kernel", f"void fwd_kernel_{i % 4}<float>(float*, int)", rt, 5 * US)
            fwd_ops.append(op)
        for j in range(4):
            t = s + 820 * US + j * 100 * US
            src = fwd_ops[7 - 2 * j]
            op = b.span("cpu_op", f"{src.name.split('::')[-1].capitalize()}Backward0", t, t + 40 * US,
                        tid=BWD_TID, args={"Sequence number": 7 - 2 * j, "Fwd thread id": 1})
            rt = b.runtime("cudaLaunchKernel", t + 20 * US, t + 30 * US, parent=op)
            b.launch("kernel", f"void bwd_kernel_{j}<float>(float*, int)", rt, 5 * US)
            b.add_fwdbwd(src, op)
        b.close(step, s + 1230 * US)
        s = step.end + 50 * US
    return ("CPU-bound: short kernels behind long CPU gaps, a backward thread with fwdbwd "
            "flows; the GPU idles waiting for launches.")


def _gpu_bound(b: TraceBuilder, steps: int, rng: random.Random) -> str:
    """Per step: a python_function around 6 ops launching 500 µs kernels 35 µs apart (they
    queue back to back), then cudaDeviceSynchronize until the last kernel ends + 2 µs; a
    gpu_user_annotation ProfilerStep range on stream 7."""
    s = BASE_NS
    for k in range(1, steps + 1):
        step = b.open("annotation", f"ProfilerStep#{k}", s)
        py = b.span("python", "nn/modules/module.py(1527): _call_impl", s + 5 * US, s + 225 * US,
                    parent=step)
        acts = []
        for i in range(6):
            t = s + 10 * US + i * 35 * US
            op = b.span("cpu_op", "aten::mm", t, t + 30 * US, parent=py)
            rt = b.runtime("cudaLaunchKernel", t + 10 * US, t + 20 * US, parent=op)
            acts.append(b.launch("kernel", "ampere_sgemm_128x64_nn", rt, 500 * US))
        sync = b.synchronize("cudaDeviceSynchronize", s + 230 * US, parent=step, stream=None)
        b.close(step, sync.end + 8 * US)
        b.gpu_annotation(step, acts)
        s = step.end + 20 * US
    return ("GPU-bound: 500 µs kernels queued back to back, cudaDeviceSynchronize per step; "
            "includes python_function and gpu_user_annotation ranges.")


def _sync_every_op(b: TraceBuilder, steps: int, rng: random.Random) -> str:
    """Per step: 5 ops, each launching a 50 µs kernel then cudaStreamSynchronize (with its
    ``Stream Sync`` cuda_sync event) until the kernel ends + 2 µs; 80 µs CPU gaps."""
    s = BASE_NS
    for k in range(1, steps + 1):
        step = b.open("annotation", f"ProfilerStep#{k}", s)
        t = s + 10 * US
        for _ in range(5):
            op = b.open("cpu_op", "aten::nonzero", t, parent=step)
            rt = b.runtime("cudaLaunchKernel", t + 10 * US, t + 20 * US, parent=op)
            b.launch("kernel", "void nonzero_kernel<float>(float const*, long*)", rt, 50 * US)
            sync = b.synchronize("cudaStreamSynchronize", t + 25 * US, parent=op, stream=STREAM)
            b.close(op, sync.end + 10 * US)
            t = op.end + 80 * US
        b.close(step, op.end + 10 * US)
        s = step.end + 30 * US
    return ("Sync after every op: each kernel is followed by cudaStreamSynchronize; the GPU "
            "waits for the CPU between kernels.")


def _two_stream_event_wait(b: TraceBuilder, steps: int, rng: random.Random) -> str:
    """Per step: kernel A (200 µs) on stream 7; cudaEventRecord; cudaStreamWaitEvent makes
    stream 20 wait; kernel B (100 µs) on stream 20 starts when A ends; kernel C (50 µs) on
    stream 7 runs beside B; cudaDeviceSynchronize until B ends + 2 µs."""
    s = BASE_NS
    for k in range(1, steps + 1):
        step = b.open("annotation", f"ProfilerStep#{k}", s)
        t = s + 10 * US
        op1 = b.span("cpu_op", "aten::mm", t, t + 30 * US, parent=step)
        rt = b.runtime("cudaLaunchKernel", t + 10 * US, t + 20 * US, parent=op1)
        a = b.launch("kernel", "ampere_sgemm_128x64_nn", rt, 200 * US, stream=STREAM)
        rec = b.runtime("cudaEventRecord", t + 40 * US, t + 45 * US, parent=step)
        b.stream_wait_event(t + 50 * US, t + 55 * US, parent=step, record=rec,
                            src_stream=STREAM, dst_stream=SIDE_STREAM)
        op2 = b.span("cpu_op", "aten::add", t + 60 * US, t + 90 * US, parent=step)
        rt = b.runtime("cudaLaunchKernel", t + 70 * US, t + 80 * US, parent=op2)
        b.launch("kernel", "void add_kernel<float>(float*, float const*)", rt, 100 * US,
                 stream=SIDE_STREAM, not_before=a.end)
        op3 = b.span("cpu_op", "aten::mul", t + 100 * US, t + 130 * US, parent=step)
        rt = b.runtime("cudaLaunchKernel", t + 110 * US, t + 120 * US, parent=op3)
        b.launch("kernel", "void mul_kernel<float>(float*, float const*)", rt, 50 * US, stream=STREAM)
        sync = b.synchronize("cudaDeviceSynchronize", t + 140 * US, parent=step, stream=None)
        b.close(step, sync.end + 8 * US)
        s = step.end + 20 * US
    return ("Two streams: stream 20 waits (cudaStreamWaitEvent) for an event recorded on "
            "stream 7 after kernel A; kernels B (stream 20) and C (stream 7) overlap.")


def _cuda_graph(b: TraceBuilder, steps: int, rng: random.Random) -> str:
    """Per step: an HtoD memcpy (20 µs), then one cudaGraphLaunch whose correlation is
    carried by 6 kernels of 40 µs with 2 µs device-side gaps, then cudaStreamSynchronize."""
    s = BASE_NS
    for k in range(1, steps + 1):
        step = b.open("annotation", f"ProfilerStep#{k}", s)
        t = s + 10 * US
        op = b.span("cpu_op", "aten::copy_", t, t + 30 * US, parent=step)
        rt = b.runtime("cudaMemcpyAsync", t + 10 * US, t + 20 * US, parent=op)
        b.launch("memcpy", "Memcpy HtoD (Pinned -> Device)", rt, 20 * US, args={"bytes": 4 << 20})
        op = b.span("cpu_op", "CUDAGraph::replay", t + 40 * US, t + 90 * US, parent=step)
        rt = b.runtime("cudaGraphLaunch", t + 50 * US, t + 80 * US, parent=op)
        for j in range(6):
            gap = 0 if j == 0 else 2 * US
            b.launch("kernel", f"void graph_node_{j}<float>(float*)", rt, 40 * US,
                     not_before=b.tail[STREAM] + gap)
        sync = b.synchronize("cudaStreamSynchronize", t + 100 * US, parent=step, stream=STREAM)
        b.close(step, sync.end + 8 * US)
        s = step.end + 20 * US
    return ("CUDA graph replay: one cudaGraphLaunch correlation shared by 6 kernels (one "
            "launch flow start, six ends); the 2 µs gaps between graph kernels are not CPU-induced.")


def _old_format_2021(b: TraceBuilder, steps: int, rng: random.Random) -> str:
    """Per step (2021 layout): memset, HtoD memcpy + cudaStreamSynchronize, 3 conv kernels
    (100 µs, queued), ``aten::item`` with a DtoH copy to pinned memory (asynchronous; a pageable one would block) + cudaStreamSynchronize."""
    s = BASE_NS
    for k in range(1, steps + 1):
        step = b.open("annotation", f"ProfilerStep#{k}", s)
        t = s + 10 * US
        op = b.span("cpu_op", "aten::zero_", t, t + 30 * US, parent=step)
        rt = b.runtime("cudaMemsetAsync", t + 10 * US, t + 20 * US, parent=op)
        b.launch("memset", "Memset (Device)", rt, 3 * US, args={"bytes": 1 << 20, "external id": 0})
        op = b.span("cpu_op", "aten::copy_", t + 40 * US, t + 110 * US, parent=step)
        rt = b.runtime("cudaMemcpyAsync", t + 50 * US, t + 60 * US, parent=op)
        b.launch("memcpy", "Memcpy HtoD (Pageable -> Device)", rt, 30 * US, args={"bytes": 19267584})
        b.synchronize("cudaStreamSynchronize", t + 62 * US, parent=op, stream=STREAM)
        for j in range(3):
            u = t + 120 * US + j * 40 * US
            op = b.span("cpu_op", "aten::cudnn_convolution", u, u + 30 * US, parent=step)
            rt = b.runtime("cudaLaunchKernel", u + 10 * US, u + 20 * US, parent=op)
            b.launch("kernel", "void cudnn::cnn::conv2d_grouped_direct_kernel<float>(float*)", rt,
                     100 * US)
        item = b.open("cpu_op", "aten::item", t + 250 * US, parent=step)
        dense = b.open("cpu_op", "aten::_local_scalar_dense", t + 255 * US, parent=item)
        rt = b.runtime("cudaMemcpyAsync", t + 260 * US, t + 270 * US, parent=dense)
        b.launch("memcpy", "Memcpy DtoH (Device -> Pinned)", rt, 2 * US, args={"bytes": 4})
        sync = b.synchronize("cudaStreamSynchronize", t + 272 * US, parent=dense, stream=STREAM)
        b.close(dense, sync.end + 6 * US)
        b.close(item, dense.end + 5 * US)
        b.close(step, item.end + 10 * US)
        s = step.end + 30 * US
    return ("2021 Kineto layout: bare JSON list, Operator/Runtime/Kernel/Memcpy/Memset "
            "categories, 'external id', GPU tid 'stream 7', string CPU tids in X events, "
            "'async'/'launch' flows, ProfilerStep#N as an Operator.")


def _ns_float(b: TraceBuilder, steps: int, rng: random.Random) -> str:
    """Per step: 3 ops launching ~20 µs kernels and a cudaDeviceSynchronize, every time and
    duration with a seeded sub-µs part, starting at 1712195495519689.047 µs."""

    def j(us: int) -> int:
        return us * US + rng.randrange(1, US)

    s = NS_FLOAT_BASE_NS
    for k in range(1, steps + 1):
        step = b.open("annotation", f"ProfilerStep#{k}", s)
        t = s + j(3)
        for _ in range(3):
            op = b.open("cpu_op", "aten::add", t, parent=step)
            l0 = t + j(2)
            rt = b.runtime("cudaLaunchKernel", l0, l0 + j(5), parent=op)
            b.launch("kernel", "void add_kernel<float>(float*, float const*)", rt, j(20),
                     latency=j(3))
            b.close(op, rt.end + j(1))
            t = op.end + j(4)
        sync = b.synchronize("cudaDeviceSynchronize", t, parent=step, stream=None, ret=j(2))
        b.close(step, sync.end + j(1))
        s = step.end + j(10)
    return ("Fractional µs with 3 decimals at epoch magnitude: exact ns only from the "
            "decimal text (float64 cannot hold them).")


def _shaped(dims: list, types: list, concrete: list | None = None) -> dict[str, Any]:
    a: dict[str, Any] = {"Input Dims": dims, "Input type": types}
    if concrete is not None:
        a["Concrete Inputs"] = concrete
    return a


#: The ops of one ``gemm_shapes`` step: (name, args, kernels [(name, µs)], inner op or None).
_SHAPED_OPS: tuple[tuple[str, dict[str, Any], tuple[tuple[str, int], ...], tuple[str, dict[str, Any]] | None], ...] = (
    ("aten::mm", _shaped([[1024, 4096], [4096, 4096]], ["c10::BFloat16", "c10::BFloat16"]),
     (("ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_64x3_nn", 200),), None),
    ("aten::mm", _shaped([[100, 1000], [1000, 30]], ["c10::Half", "c10::Half"]),
     (("ampere_fp16_s16816gemm_fp16_64x64_sliced1x2_ldg8_f2f_nn", 10),), None),
    ("aten::linear", _shaped([[64, 512], [1024, 512], [1024]], ["float", "float", "float"]),
     (("ampere_sgemm_64x32_sliced1x4_tn", 30),
      ("void splitKreduce_kernel<32, 16, int, float, float, float, float, true, false, false>(cublasSplitKParams<float>, "
       "float const*, float const*, float*, float const*, float const*, float const*, float const*, float*, void*, long, "
       "float*, int*)", 5)),
     ("aten::addmm", _shaped([[1024], [64, 512], [512, 1024], [], []], ["float", "float", "float", "Scalar", "Scalar"],
                             ["", "", "", "1", "1"]))),
    ("aten::mm", _shaped([[100, 1000], [1000, 30]], ["c10::Half", "c10::Half"]),
     (("ampere_fp16_s16816gemm_fp16_64x64_sliced1x2_ldg8_f2f_nn", 10),), None),
    ("aten::_scaled_dot_product_flash_attention",
     _shaped([[2, 16, 1024, 64]] * 3 + [[], [], [], []],
             ["c10::BFloat16"] * 3 + ["Double", "Bool", "Bool", ""], ["", "", "", "0.", "True", "False", ""]),
     (("void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 128, 4, false, false, "
       "cutlass::bfloat16_t>, false, true, false, false, true, true, false, false>(pytorch_flash::Flash_fwd_params)",
       50),), None),
    ("aten::cudnn_convolution",
     _shaped([[32, 64, 56, 56], [64, 64, 3, 3], [], [], [], [], [], [], []],
             ["float", "float", "IntList", "IntList", "IntList", "Int", "Bool", "Bool", "Bool"],
             ["", "", "[1, 1]", "[1, 1]", "[1, 1]", "1", "False", "False", "True"]),
     (("void implicit_convolve_sgemm<float, float, 128, 5, 5, 3, 3, 3, 1, false, false, true>(int, int, int, "
       "float const*, int, float*, float const*, kernel_conv_params, unsigned long long, int, float, float, int, "
       "float const*, float const*, bool, int, int)", 500),), None),
    ("aten::relu", _shaped([[64, 1024]], ["float"]),
     (("void at::native::vectorized_elementwise_kernel<4, at::native::clamp_min_scalar_kernel_cuda>(int, "
       "at::native::clamp_min_scalar_kernel_cuda, at::detail::Array<char*, 2>)", 4),), None),
)


def _gemm_shapes(b: TraceBuilder, steps: int, rng: random.Random) -> str:
    """Per step, in a python_function, ops with recorded shapes 25 µs apart, each launching
    kernels that queue back to back (:data:`_SHAPED_OPS`): ``aten::mm`` bf16 [1024, 4096] x
    [4096, 4096] (200 µs), twice ``aten::mm`` fp16 [100, 1000] x [1000, 30] (10 µs),
    ``aten::linear`` > ``aten::addmm`` fp32 64x512 @ 512x1024 (sgemm 30 µs + split-K
    reduce 5 µs), flash attention bf16 B=2 H=16 S=1024 D=64 causal (50 µs),
    ``aten::cudnn_convolution`` fp32 N=32 C=64 56x56, 64 3x3 filters, stride 1, pad 1
    (500 µs) and ``aten::relu`` (4 µs); then cudaDeviceSynchronize."""
    s = BASE_NS
    for k in range(1, steps + 1):
        step = b.open("annotation", f"ProfilerStep#{k}", s)
        py = b.span("python", "nn/modules/module.py(1527): _call_impl", s + 5 * US,
                    s + 10 * US + len(_SHAPED_OPS) * 25 * US, parent=step)
        for i, (name, args, kernels, inner) in enumerate(_SHAPED_OPS):
            t = s + 10 * US + i * 25 * US
            op = b.span("cpu_op", name, t, t + 20 * US, parent=py, args=dict(args))
            host = b.span("cpu_op", inner[0], t + 2 * US, t + 18 * US, parent=op, args=dict(inner[1])) if inner else op
            for j, (kname, us) in enumerate(kernels):
                rt = b.runtime("cudaLaunchKernel", t + 4 * US + j * 6 * US, t + 8 * US + j * 6 * US, parent=host)
                b.launch("kernel", kname, rt, us * US)
        sync = b.synchronize("cudaDeviceSynchronize", s + 15 * US + len(_SHAPED_OPS) * 25 * US, parent=step,
                             stream=None)
        b.close(step, sync.end + 8 * US)
        s = step.end + 20 * US
    return ("GEMM, attention and convolution ops with recorded shapes (known FLOPs) whose kernels queue back to "
            "back; for opgraph shapes.")


MIB = 1 << 20


def _memory(b: TraceBuilder, steps: int, rng: random.Random) -> str:
    """``profile_memory=True``: ``[memory]`` instants on the main thread (GPU 0, Device Type 1,
    and CPU, Device Type 0 / Device Id -1). GPU 0 holds 64 MiB before the trace (8 MiB of
    it a block freed in step 1), 128 MiB reserved, 160 MiB from step 1's ``aten::relu`` on.
    Per step: ``aten::linear`` > ``aten::empty`` allocates W (4 MiB) and ``aten::linear`` >
    ``aten::addmm`` O (16 MiB, and launches a 400 µs kernel); ``aten::relu`` allocates R
    (16 MiB) then frees O; W is freed outside any op; ``aten::to`` allocates and frees 1 MiB
    of CPU memory; R of the previous step is freed at the step's start, the last R stays
    live. Step 1 also allocates 2 MiB outside any op (freed before the step ends). GPU
    allocated peaks at 102 MiB on step 1's R, with W, O, R and the 2 MiB live (38 MiB) on
    top of the 64 MiB from before the trace; cudaDeviceSynchronize ends each step."""
    gpu, cpu = (1, 0), (0, -1)
    b.mem_start(*gpu, 64 * MIB, 128 * MIB)
    b.mem_start(*cpu, 0, 0)
    addr_w, addr_o, addr_r, addr_x, addr_pre = 0x7F0000000000, 0x7F0000400000, 0x7F0001400000, 0x7F0003000000, 0x7F0004000000
    addr_r2 = 0x7F0002400000
    s = BASE_NS
    prev_r = None
    for k in range(1, steps + 1):
        step = b.open("annotation", f"ProfilerStep#{k}", s)
        r_addr = addr_r if k % 2 else addr_r2
        if prev_r is not None:
            b.mem_event(s + 5 * US, -16 * MIB, prev_r.args["Addr"], op=step, frees=prev_r)
        x = b.mem_event(s + 5 * US, 2 * MIB, addr_x, op=step) if k == 1 else None
        t = s + 10 * US
        lin = b.open("cpu_op", "aten::linear", t, parent=step)
        emp = b.span("cpu_op", "aten::empty", t + 5 * US, t + 15 * US, parent=lin)
        w = b.mem_event(t + 10 * US, 4 * MIB, addr_w, op=emp)
        mm = b.open("cpu_op", "aten::addmm", t + 20 * US, parent=lin)
        o = b.mem_event(t + 25 * US, 16 * MIB, addr_o, op=mm)
        rt = b.runtime("cudaLaunchKernel", t + 30 * US, t + 40 * US, parent=mm)
        b.launch("kernel", "ampere_sgemm_128x64_nn", rt, 400 * US)
        b.close(mm, t + 90 * US)
        b.close(lin, t + 100 * US)
        relu = b.open("cpu_op", "aten::relu", t + 110 * US, parent=step)
        prev_r = b.mem_event(t + 115 * US, 16 * MIB, r_addr, op=relu, reserved=160 * MIB if k == 1 else None)
        b.mem_event(t + 140 * US, -16 * MIB, addr_o, op=relu, frees=o)
        b.close(relu, t + 145 * US)
        b.mem_event(t + 150 * US, -4 * MIB, addr_w, op=step, frees=w)
        if k == 1:
            b.mem_event(t + 155 * US, -8 * MIB, addr_pre, op=step)
            b.mem_event(t + 158 * US, -2 * MIB, addr_x, op=step, frees=x)
        to = b.open("cpu_op", "aten::to", t + 160 * US, parent=step)
        c = b.mem_event(t + 165 * US, MIB, 0x5600000000 + k * 0x1000, op=to, device_type=cpu[0], device=cpu[1])
        b.mem_event(t + 175 * US, -MIB, 0x5600000000 + k * 0x1000, op=to, device_type=cpu[0], device=cpu[1], frees=c)
        b.close(to, t + 180 * US)
        sync = b.synchronize("cudaDeviceSynchronize", t + 190 * US, parent=step, stream=None)
        b.close(step, sync.end + 8 * US)
        s = step.end + 20 * US
    return ("Memory profile: [memory] instants (allocations > 0, frees < 0 bytes, Total Allocated / Total "
            "Reserved) on GPU 0 and the CPU; known peak, per-op bytes and live-at-peak allocations.")


def _ops_of(ev: _Ev) -> tuple[str, str]:
    """(outermost, innermost) CPU op around a memory event; ``(outside any op)`` for none."""
    ops = []
    p = ev.parent
    while p is not None:
        if p.kind == "cpu_op":
            ops.append(p.name)
        p = p.parent
    return (ops[-1], ops[0]) if ops else ("(outside any op)", "(outside any op)")


def _memory_answers(b: TraceBuilder) -> dict[str, Any]:
    """Ground truth of the ``[memory]`` events (bytes; times in ns), per device
    (``device_type``, ``device``): the allocated level starts at the trace's pre-trace total
    and moves by ``Bytes`` at each event (time order); ``peak`` = its first maximum,
    ``live_at_peak`` = allocations made up to the peak event and not freed by then,
    grouped by (outermost op, innermost op); ``steps`` = per ProfilerStep the highest
    level in ``[start, end)`` counting the level carried into it."""
    out: list[dict[str, Any]] = []
    for key in sorted({(e.args["Device Type"], e.args["Device Id"]) for e in b.memory}):
        evs = [e for e in b.memory if (e.args["Device Type"], e.args["Device Id"]) == key]
        level = evs[0].args["Total Allocated"] - evs[0].args["Bytes"]
        start = level
        levels = []
        for e in evs:
            level += e.args["Bytes"]
            levels.append(level)
        peak = max(levels)
        ip = levels.index(peak)
        allocs = [e for e in evs if e.args["Bytes"] > 0]
        by_op: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
        live: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
        for e in allocs:
            by_op[_ops_of(e)][0] += 1
            by_op[_ops_of(e)][1] += e.args["Bytes"]
            f = b.mem_free_of.get(id(e))
            if evs.index(e) <= ip and (f is None or evs.index(f) > ip):
                live[_ops_of(e)][0] += 1
                live[_ops_of(e)][1] += e.args["Bytes"]
        step_peaks = []
        for st in b.steps:
            before = [lv for e, lv in zip(evs, levels) if e.ts < st.ts]
            inside = [lv for e, lv in zip(evs, levels) if st.ts <= e.ts < st.end]
            carried = before[-1] if before else start
            step_peaks.append({"name": st.name, "peak_allocated_bytes": max([carried] + inside),
                               "start_allocated_bytes": carried,
                               "end_allocated_bytes": (before + inside)[-1] if before + inside else start})
        out.append({
            "device_type": key[0], "device": key[1], "events": len(evs), "allocations": len(allocs),
            "alloc_bytes": sum(e.args["Bytes"] for e in allocs), "start_allocated_bytes": start,
            "end_allocated_bytes": levels[-1], "peak_allocated_bytes": peak, "peak_ts_ns": evs[ip].ts,
            "peak_reserved_bytes": max(e.args["Total Reserved"] for e in evs),
            "live_at_peak_bytes": sum(v[1] for v in live.values()),
            "allocators": [{"op": o, "inner_op": i, "allocations": v[0], "alloc_bytes": v[1]}
                           for (o, i), v in sorted(by_op.items())],
            "live_at_peak": [{"op": o, "inner_op": i, "allocations": v[0], "live_bytes": v[1]}
                             for (o, i), v in sorted(live.items())],
            "steps": step_peaks,
        })
    return {"devices": out}


_BUILDERS: dict[str, tuple[Callable[[TraceBuilder, int, random.Random], str], dict[str, bool]]] = {
    "cpu_bound": (_cpu_bound, {}),
    "gpu_bound": (_gpu_bound, {}),
    "sync_every_op": (_sync_every_op, {}),
    "two_stream_event_wait": (_two_stream_event_wait, {}),
    "cuda_graph": (_cuda_graph, {}),
    "old_format_2021": (_old_format_2021, {"old_format": True}),
    "ns_float": (_ns_float, {"fractional": True}),
    "gemm_shapes": (_gemm_shapes, {}),
    "memory": (_memory, {}),
}


def _exact_ns(events: list[_Ev], dicts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A few ns_float events with their exact ns and the decimal text written for them."""
    kernels = [e for e in events if e.kind == "kernel"]
    picks = [
        next(e for e in events if e.kind == "annotation"),
        next(e for e in events if e.kind == "runtime"),
        kernels[0],
        kernels[-1],
        [e for e in events if e.kind == "runtime"][-1],
    ]
    return [{"eid": e.eid, "kind": e.kind, "name": e.name, "ts_ns": e.ts, "dur_ns": e.dur,
             "ts_text": str(dicts[e.eid]["ts"]), "dur_text": str(dicts[e.eid]["dur"])}
            for e in picks]


def synthesize(name: str, steps: int = 3, seed: int = 0) -> Scenario:
    """Build scenario ``name`` (one of :data:`SCENARIOS` or :data:`OPTIONAL_SCENARIOS`) with
    ``steps`` ProfilerSteps.

    Deterministic: the same arguments give the same trace. ``seed`` only draws the sub-µs
    parts of ``ns_float``; the other scenarios are fixed integer-µs timelines.
    """
    if name not in _BUILDERS:
        raise ValueError(f"unknown scenario {name!r}; known: {', '.join(SCENARIOS + OPTIONAL_SCENARIOS)}")
    if steps < 1:
        raise ValueError("steps must be >= 1")
    fn, opts = _BUILDERS[name]
    b = TraceBuilder(name, **opts)
    description = fn(b, steps, random.Random(seed))
    events, dicts = b.render()
    answers = builder_answers(b, events, description)
    answers["steps_requested"] = steps
    answers["seed"] = seed
    if b.old:
        answers["notes"] = [
            "ProfilerStep#N is written as an Operator event and counts as an 'annotation' node.",
            "Flows with cat 'async' / name 'launch' are launch (ac2g) links, not 'flow' edges.",
            "CPU X events have tid '100' (a string); their flow starts have tid 100 (an int).",
        ]
    if b.fractional:
        answers["exact_ns"] = _exact_ns(events, dicts)
    if b.memory:
        answers["memory"] = _memory_answers(b)
    return Scenario(name=name, trace=b.document(dicts), answers=answers)


# ----------------------------------------------------------------------- writing
def _dump_value(v: Any) -> str:
    """JSON text for ``v``; :class:`Decimal` is written as its exact decimal digits."""
    if isinstance(v, Decimal):
        return str(v)
    if isinstance(v, dict):
        return "{" + ", ".join(f"{json.dumps(str(k))}: {_dump_value(x)}" for k, x in v.items()) + "}"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_dump_value(x) for x in v) + "]"
    return json.dumps(v)


def trace_to_json(trace: dict[str, Any] | list[dict[str, Any]]) -> str:
    """Kineto JSON text, one event per line, keeping Decimal timestamps digit-exact."""
    if isinstance(trace, list):
        return "[\n" + ",\n".join("  " + _dump_value(e) for e in trace) + "\n]\n"
    parts = []
    for k, v in trace.items():
        if k == "traceEvents":
            body = ",\n".join("    " + _dump_value(e) for e in v)
            parts.append(f'  "traceEvents": [\n{body}\n  ]')
        else:
            parts.append(f"  {json.dumps(k)}: {_dump_value(v)}")
    return "{\n" + ",\n".join(parts) + "\n}\n"


def write_scenario(sc: Scenario, directory: str | Path) -> Path:
    """Write ``<name>.json`` (the trace) and ``<name>.answers.json``; return the trace path."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    path = d / f"{sc.name}.json"
    path.write_text(trace_to_json(sc.trace), encoding="utf-8")
    (d / f"{sc.name}.answers.json").write_text(
        json.dumps(sc.answers, indent=2) + "\n", encoding="utf-8")
    return path
