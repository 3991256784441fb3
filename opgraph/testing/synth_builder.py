"""The synthesizer's :class:`TraceBuilder`: a scenario's timeline, rendered as Kineto JSON.

Scenarios call it to open and close host ranges, issue runtime calls that launch device
activities (each starts at ``max(launch call end + latency, end of the previous activity
on its stream)``), synchronise, wait on events, record memory events; it then renders
the model as file-ordered Kineto event dicts and the document around them. The model is
kept in integer **ns**; the JSON carries Kineto's µs (ints, or 3-decimal
:class:`~decimal.Decimal` values in fractional mode).
"""

from __future__ import annotations

from collections import defaultdict
from decimal import Decimal
from typing import Any

from opgraph.testing.synth_model import (
    DEVICE, GPU_PID, LAUNCH_LATENCY_NS, MAIN_TID, PID, STREAM, SYNC_RETURN_NS, US, EventWait, SyncCall, SynthEvent,
)

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


class TraceBuilder:
    """Accumulates a scenario's timeline (ns) and renders trace + answers from it."""

    def __init__(self, name: str, *, old_format: bool = False, fractional: bool = False) -> None:
        self.name = name
        self.old = old_format
        self.fractional = fractional
        self.host: list[SynthEvent] = []        # annotation/python/cpu_op ranges
        self.runtimes: list[SynthEvent] = []
        self.activities: list[SynthEvent] = []  # kernel/memcpy/memset
        self.gpu_annotations: list[SynthEvent] = []
        self.cuda_syncs: list[SynthEvent] = []
        self.fwdbwd: list[tuple[SynthEvent, SynthEvent, int]] = []
        #: (waiter, worker's last event): hand-offs the builder must infer (graph/threads.py)
        self.handoffs: list[tuple[SynthEvent, SynthEvent]] = []
        self.syncs: list[SyncCall] = []
        self.event_waits: list[EventWait] = []
        self.steps: list[SynthEvent] = []
        self.launcher: dict[int, SynthEvent] = {}  # id(activity) -> runtime call
        self.tail: dict[int, int] = {}             # stream -> end ns of its last activity
        self._flow_targets: dict[int, list[SynthEvent]] = defaultdict(list)  # runtime corr -> f-ends
        self._corr = 1000
        self._ext = 0
        self._flow = 0
        self._event_id = 0
        self.memory: list[SynthEvent] = []      # [memory] instant events, in time order
        self.mem_state: dict[tuple[int, int], list[int]] = {}  # (type, id) -> [allocated, reserved]
        self.mem_free_of: dict[int, SynthEvent] = {}  # id(allocation) -> its free

    # ----------------------------------------------------------------- host side
    def _cat(self, kind: str) -> str:
        return (_CATS_OLD if self.old else _CATS_NEW)[kind]

    def _host_tid(self, tid: int) -> int | str:
        # The 2021 format writes CPU tids of X events as strings (flows keep ints).
        return str(tid) if self.old else tid

    def open(self, kind: str, name: str, ts: int, *, parent: SynthEvent | None = None,
             tid: int = MAIN_TID, args: dict[str, Any] | None = None) -> SynthEvent:
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
        ev = SynthEvent(kind, "X", self._cat(kind), name, ts, None, PID, self._host_tid(tid), a, parent)
        self.host.append(ev)
        if kind == "annotation" and name.startswith("ProfilerStep#"):
            self.steps.append(ev)
        return ev

    @staticmethod
    def close(ev: SynthEvent, end: int) -> SynthEvent:
        """Set the end (ns) of a range opened with :meth:`open`."""
        if end <= ev.ts:
            raise ValueError(f"{ev.name}: end {end} <= start {ev.ts}")
        ev.dur = end - ev.ts
        return ev

    def span(self, kind: str, name: str, ts: int, end: int, *, parent: SynthEvent | None = None,
             tid: int = MAIN_TID, args: dict[str, Any] | None = None) -> SynthEvent:
        """A host range with known start and end (ns)."""
        return self.close(self.open(kind, name, ts, parent=parent, tid=tid, args=args), end)

    @staticmethod
    def _ext_of(ev: SynthEvent | None) -> tuple[int, int]:
        """External id and start (ns) of the nearest ancestor that has one."""
        while ev is not None:
            ext = ev.args.get("External id")
            if ext is not None:
                return ext, ev.ts
            ev = ev.parent
        return 0, 0

    def runtime(self, name: str, ts: int, end: int, *, parent: SynthEvent) -> SynthEvent:
        """A CUDA runtime call on ``parent``'s thread with a fresh correlation id."""
        self._corr += 1
        ext, ext_ts = self._ext_of(parent)
        if self.old:
            a: dict[str, Any] = {"cbid": _CBID[name], "correlation": self._corr,
                                 "external id": ext, "external ts": self._us(ext_ts)}
        else:
            a = {"External id": ext, "cbid": _CBID[name], "correlation": self._corr}
        ev = SynthEvent("runtime", "X", self._cat("runtime"), name, ts, end - ts, PID, parent.tid, a, parent)
        if ev.dur is None or ev.dur <= 0:
            raise ValueError(f"{name}: non-positive duration")
        self.runtimes.append(ev)
        return ev

    # ---------------------------------------------------------------- memory
    def mem_start(self, device_type: int, device: int, allocated: int, reserved: int) -> None:
        """The allocator's totals of a device before the trace's first ``[memory]`` event."""
        self.mem_state[(device_type, device)] = [allocated, reserved]

    def mem_event(self, ts: int, nbytes: int, addr: int, *, op: SynthEvent | None, device_type: int = 1,
                  device: int = 0, reserved: int | None = None, frees: SynthEvent | None = None,
                  tid: int = MAIN_TID) -> SynthEvent:
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
        ev = SynthEvent("instant", "i", "cpu_instant_event", "[memory]", ts, None, PID, self._host_tid(tid), a, op,
                 extra={"s": "t"})
        if frees is not None:
            self.mem_free_of[id(frees)] = ev
        self.memory.append(ev)
        return ev

    # --------------------------------------------------------------- device side
    def launch(self, kind: str, name: str, rt: SynthEvent, dur: int, *, stream: int = STREAM,
               latency: int = LAUNCH_LATENCY_NS, not_before: int = 0,
               args: dict[str, Any] | None = None) -> SynthEvent:
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
        ev = SynthEvent(kind, "X", self._cat(kind), name, start, dur, GPU_PID, tid, a)
        self.activities.append(ev)
        self.launcher[id(ev)] = rt
        self.tail[stream] = ev.end
        self._flow_targets[rt.args["correlation"]].append(ev)
        return ev

    def synchronize(self, name: str, ts: int, *, parent: SynthEvent, stream: int | None,
                    ret: int = SYNC_RETURN_NS) -> SynthEvent:
        """A blocking call that returns ``ret`` ns after the last activity it waits for.

        ``stream`` None: cudaDeviceSynchronize (all streams); else cudaStreamSynchronize.
        Adds the ``Context Sync`` / ``Stream Sync`` cuda_sync event (new format only).
        """
        waited = max(self.tail.values()) if stream is None else self.tail[stream]
        rt = self.runtime(name, ts, waited + ret, parent=parent)
        self.syncs.append(SyncCall(rt, stream))
        if not self.old:
            kind = "Context Sync" if stream is None else "Stream Sync"
            self._cuda_sync(kind, rt, -1 if stream is None else stream, {})
        return rt

    def stream_wait_event(self, ts: int, end: int, *, parent: SynthEvent, record: SynthEvent,
                          src_stream: int, dst_stream: int) -> SynthEvent:
        """cudaStreamWaitEvent: ``dst_stream`` waits for ``record`` (a cudaEventRecord)."""
        rt = self.runtime("cudaStreamWaitEvent", ts, end, parent=parent)
        self._event_id += 1
        self._cuda_sync("Stream Wait Event", rt, dst_stream, {
            "wait_on_stream": src_stream,
            "wait_on_cuda_event_record_corr_id": record.args["correlation"],
            "wait_on_cuda_event_id": self._event_id,
        })
        self.event_waits.append(EventWait(record, rt, src_stream, dst_stream))
        return rt

    def _cuda_sync(self, kind: str, rt: SynthEvent, stream: int, extra: dict[str, Any]) -> SynthEvent:
        a: dict[str, Any] = {"External id": rt.args.get("External id", 0), "cuda_sync_kind": kind}
        a.update(extra)
        a.update({"stream": stream, "correlation": rt.args["correlation"], "device": DEVICE,
                  "context": 1})
        ts = rt.ts + min(US, rt.dur // 2 if rt.dur else 0)
        ev = SynthEvent("cuda_sync", "X", self._cat("cuda_sync"), kind, ts, rt.end - ts, GPU_PID, stream, a)
        self.cuda_syncs.append(ev)
        self._flow_targets[rt.args["correlation"]].append(ev)
        return ev

    def gpu_annotation(self, step: SynthEvent, acts: list[SynthEvent], stream: int = STREAM) -> SynthEvent:
        """The device-side copy of a ProfilerStep range, 1 µs around ``acts`` on ``stream``."""
        on_stream = [a for a in acts if a.args["stream"] == stream]
        ts = min(a.ts for a in on_stream) - US
        end = max(a.end for a in on_stream) + US
        ev = SynthEvent("gpu_annotation", "X", self._cat("gpu_annotation"), step.name, ts, end - ts,
                 GPU_PID, stream, {"External id": step.args["External id"]})
        for a in on_stream:
            a.parent = ev
        self.gpu_annotations.append(ev)
        return ev

    def add_handoff(self, waiter: SynthEvent, last: SynthEvent) -> None:
        """Record that ``waiter`` waits for another thread whose last event is ``last`` (no
        trace event: the graph builder infers the ``handoff`` edge)."""
        self.handoffs.append((waiter, last))

    def add_fwdbwd(self, fwd: SynthEvent, bwd: SynthEvent) -> None:
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

    def _x(self, ev: SynthEvent) -> dict[str, Any]:
        assert ev.dur is not None, f"{ev.name} was never closed"
        return {"ph": "X", "cat": ev.cat, "name": ev.name, "pid": ev.pid, "tid": ev.tid,
                "ts": self._us(ev.ts), "dur": self._us(ev.dur), "args": ev.args}

    def _flow_ev(self, ph: str, fid: int, cat: str, name: str, pid: int | str, tid: int | str,
                 ts: int) -> SynthEvent:
        ev = SynthEvent("flow_start" if ph == "s" else "flow_end", ph, cat, name, ts, None, pid, tid,
                 flow_id=fid)
        if ph == "f":
            ev.extra["bp"] = "e"
        return ev

    def _flow_dict(self, ev: SynthEvent) -> dict[str, Any]:
        d: dict[str, Any] = {"ph": ev.ph, "id": ev.flow_id, "pid": ev.pid, "tid": ev.tid,
                             "ts": self._us(ev.ts), "cat": ev.cat, "name": ev.name}
        d.update(ev.extra)
        return d

    def _ordered(self) -> list[tuple[SynthEvent, dict[str, Any]]]:
        """All events in file order, as (model event, JSON dict)."""
        out: list[tuple[SynthEvent, dict[str, Any]]] = []
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

    def _meta_and_spans(self, t0: int, t1: int) -> list[tuple[SynthEvent, dict[str, Any]]]:
        out: list[tuple[SynthEvent, dict[str, Any]]] = []
        ts = self._us(t0)

        def meta(name: str, pid: int | str, tid: int | str, args: dict[str, Any]) -> None:
            ev = SynthEvent("meta", "M", "", name, t0, None, pid, tid, args)
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
        span = SynthEvent("trace_span", "X", "Trace", "PyTorch Profiler (0)", t0, t1 - t0, span_pid,
                   "PyTorch Profiler", {"Op count": 0})
        out.append((span, {"ph": "X", "cat": "Trace", "ts": ts, "dur": self._us(t1 - t0),
                           "pid": span_pid, "tid": "PyTorch Profiler",
                           "name": "PyTorch Profiler (0)", "args": {"Op count": 0}}))
        inst = SynthEvent("instant", "i", "", "Iteration Start: PyTorch Profiler", t0, None, "Traces",
                   "Trace PyTorch Profiler")
        out.append((inst, {"name": inst.name, "ph": "i", "s": "g", "pid": "Traces",
                           "tid": "Trace PyTorch Profiler", "ts": ts}))
        return out

    def render(self) -> tuple[list[SynthEvent], list[dict[str, Any]]]:
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
