"""Small Kineto traces, one per critical-path mechanism, with the exact path each must give.

Every scenario is written by hand in integer µs (Kineto's unit) and its answer was walked
by hand from the model of docs/critical-path.md: the path's segments in time order as
``(start_us, end_us, category, owner)`` where ``owner`` is the name of the event whose own
interval holds the stretch, or ``None`` for a stretch between events; plus the breakdown,
the path time resting on inferred dependencies, and the window. Times in the answers are
µs relative to the trace's base.

Scenarios (:data:`PATH_SCENARIOS`):

* ``autograd_handoff``: the main thread goes quiet after ``aten::ones_like`` while the
  autograd thread runs ``MmBackward``; the path enters the autograd thread through the
  inferred hand-off and comes back when the main thread resumes.
* ``fwdbwd_flow``: no hand-off (the main thread keeps busy loading data), the optimizer's
  kernel queues behind the backward kernel; the backward op waited for its forward op
  (a recorded ``fwdbwd`` flow): ``thread_wait``.
* ``sequence_number``: the same trace without the flow; the link comes from the
  ``Sequence number`` / ``Fwd thread id`` args (inferred).
* ``run_backward_wait``: the main thread blocks in ``run_backward`` (a Python wait) while
  the autograd thread works: the wait's ends are ``thread_wait`` owned by the wait, never
  ``cpu``.
* ``untraced_gap``: two top-level ops with nothing recorded between them: ``untraced``,
  owned by no event.
* ``sleeping_helper``: no step markers and a helper thread sleeping in ``threading.wait``
  until profiler stop: the window follows the launching thread, not the sleeper.
* ``overlapping_windows``: a step's kernel runs into the next step: the summary counts
  each instant once and reports the overlap.
* ``stream_held``: a kernel starts long after its launch returned on an idle stream with
  nothing recorded holding it: ``launch_overhead`` only up to the launch latency bound,
  the rest ``untraced`` on the stream.
* ``synchronous_launch``: a launch call (MTIA's ``runFunction``) returns only after its own
  kernel ended: the path runs through the kernel, the call's end is a ``sync_wait``.
* ``profiler_stop_tail``: the step annotation runs on 2.6 ms after the last op and kernel:
  ``untraced``, marked as the profiler-stop tail.
* ``late_resume``: ``## backward ##`` on the main thread while the autograd thread works;
  the main thread resumes 5 ms after the worker's last event: the path crosses to the
  worker and the late part is ``untraced``, never ``cpu``.
* ``dataloader_wait``: the step waits 1.99 ms in a DataLoader's ``__next__``:
  ``data_loading`` on the path and in the device's idle.

An annotation's own time (``ProfilerStep#1`` with no child running) is ``untraced``: the
thread recorded nothing in it.
* ``blocked_launch``: a launch call that returns 590 µs after it began (lazy module loading,
  a full launch queue) keeps 50 µs of ``launch_overhead`` (``LAUNCH_CALL_MAX_NS``, the
  launch latency the real traces show); the rest of the call is ``untraced``, owned by it.
* ``stream_wait_work``: a ``cudaStreamWaitEvent`` holds a kernel until the GEMM the same
  thread launched on another stream before the wait ended (50 µs later, too late for a
  stream-end inference): the path runs through the GEMM, and halving the GEMM moves the
  held kernel, the sync and the step's end by the 500 µs it saves.

Scenarios may carry what-ifs (``PathScenario.whatifs``): ``predict``'s transform
arguments and each window's predicted span (µs), walked by hand from the replay model of
docs/predict.md.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: Base time of every scenario (µs since an epoch; exact in float64).
BASE_US = 1_700_000_000_000
PID = 1
MAIN = 1
BWD = 2
HELPER = 3
DEVICE = 0
STREAM = 7

#: Idle scenarios (:func:`idle_scenario`): the device idle split by cause.
IDLE_SCENARIOS: tuple[str, ...] = ("idle_stream_wait_call", "idle_collective_join", "idle_pre_trace",
                                   "idle_launch_unknown")

PATH_SCENARIOS: tuple[str, ...] = ("autograd_handoff", "fwdbwd_flow", "sequence_number", "run_backward_wait",
                                   "untraced_gap", "sleeping_helper", "overlapping_windows", "stream_held",
                                   "synchronous_launch", "profiler_stop_tail", "late_resume", "dataloader_wait",
                                   "stream_wait_work", "blocked_launch")


@dataclass
class PathScenario:
    """A trace document and its expected critical path (µs relative to :data:`BASE_US`)."""

    name: str
    trace: dict[str, Any]
    windows: list[dict[str, Any]]
    summary: dict[str, Any] = field(default_factory=dict)
    #: idle scenarios: per device the causes (µs), per stream the causes, the blame by top op,
    #: and what held the device waits
    idle: dict[str, Any] = field(default_factory=dict)
    #: what-ifs: ``{"transforms": {parse_transforms keyword: value}, "predicted_us": {window: span}}``
    whatifs: list[dict[str, Any]] = field(default_factory=list)


class _Doc:
    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.corr = 0
        self.flow = 1000

    def x(self, cat: str, name: str, ts: int, end: int, tid: int = MAIN, args: dict | None = None) -> dict:
        e = {"ph": "X", "cat": cat, "name": name, "pid": PID, "tid": tid, "ts": BASE_US + ts, "dur": end - ts,
             "args": dict(args or {})}
        self.events.append(e)
        return e

    def op(self, name: str, ts: int, end: int, tid: int = MAIN, **args: Any) -> dict:
        return self.x("cpu_op", name, ts, end, tid, args)

    def launch(self, ts: int, end: int, k_ts: int, k_end: int, kname: str, tid: int = MAIN,
               stream: int = STREAM, call: str = "cudaLaunchKernel") -> None:
        """A launch call (``call``, default cudaLaunchKernel) and its kernel on (DEVICE,
        ``stream``), with the ac2g flow."""
        self.corr += 1
        c = self.corr
        self.x("cuda_runtime", call, ts, end, tid, {"correlation": c, "cbid": 211})
        self.kernel(k_ts, k_end, kname, c, stream)
        self.events.append({"ph": "s", "id": c, "pid": PID, "tid": tid, "ts": BASE_US + ts, "cat": "ac2g",
                            "name": "ac2g"})
        self.events.append({"ph": "f", "id": c, "pid": DEVICE, "tid": stream, "ts": BASE_US + k_ts, "cat": "ac2g",
                            "name": "ac2g", "bp": "e"})

    def kernel(self, k_ts: int, k_end: int, kname: str, corr: int, stream: int = STREAM) -> None:
        """A kernel on (DEVICE, ``stream``) with correlation ``corr``."""
        self.events.append({"ph": "X", "cat": "kernel", "name": kname, "pid": DEVICE, "tid": stream,
                            "ts": BASE_US + k_ts, "dur": k_end - k_ts,
                            "args": {"device": DEVICE, "stream": stream, "correlation": corr}})

    def dma(self, ts: int, end: int, stream: int = 8) -> None:
        """An MTIA ``dma_request`` on (DEVICE, ``stream``) with no correlation: no launch link."""
        self.events.append({"ph": "X", "cat": "mtia_ccp_events", "name": "dma_request", "pid": DEVICE, "tid": stream,
                            "ts": BASE_US + ts, "dur": end - ts,
                            "args": {"stream": stream, "direction": "HOST_TO_DEVICE", "size": 1024}})

    def runtime(self, name: str, ts: int, end: int, tid: int = MAIN) -> None:
        self.corr += 1
        self.x("cuda_runtime", name, ts, end, tid, {"correlation": self.corr})

    def fwdbwd(self, fwd: dict, bwd: dict) -> None:
        self.flow += 1
        self.events.append({"ph": "s", "id": self.flow, "pid": PID, "tid": fwd["tid"], "ts": fwd["ts"],
                            "cat": "fwdbwd", "name": "fwdbwd"})
        self.events.append({"ph": "f", "id": self.flow, "pid": PID, "tid": bwd["tid"], "ts": bwd["ts"],
                            "cat": "fwdbwd", "name": "fwdbwd", "bp": "e"})

    def document(self) -> dict[str, Any]:
        meta = [{"ph": "M", "name": "thread_name", "pid": PID, "tid": t, "args": {"name": n}}
                for t, n in ((MAIN, "main"), (BWD, "autograd"), (HELPER, "helper"))]
        return {"schemaVersion": 1, "distributedInfo": {"rank": 0}, "traceEvents": self.events + meta}


def _seg(t0: int, t1: int, cat: str, owner: str | None) -> dict[str, Any]:
    return {"start_us": t0, "end_us": t1, "bound_by": cat, "owner": owner}


def _autograd(d: _Doc, flow: bool, seqnr: bool, busy_main: bool) -> tuple[dict, dict]:
    """The forward op on the main thread and the backward op on the autograd thread."""
    fwd_args = {"Sequence number": 7, "Fwd thread id": 0} if seqnr else {}
    bwd_args = {"Sequence number": 7, "Fwd thread id": 1} if seqnr else {}
    mm = d.op("aten::mm", 10, 110, **fwd_args)
    d.launch(20, 30, 40, 140, "gemm_fwd")
    d.op("aten::ones_like", 120, 130)
    mmb = d.op("MmBackward", 150, 800, tid=BWD, **bwd_args)
    if busy_main:
        d.op("enumerate(DataLoader)#_DataLoaderIter.__next__", 135, 700)
        d.launch(160, 170, 175, 880, "gemm_bwd", tid=BWD)
    else:
        d.launch(160, 170, 175, 775, "gemm_bwd", tid=BWD)
        d.runtime("cudaStreamSynchronize", 180, 780, tid=BWD)
    if flow:
        d.fwdbwd(mm, mmb)
    return mm, mmb


def autograd_handoff() -> PathScenario:
    d = _Doc()
    d.x("user_annotation", "ProfilerStep#1", 0, 960)
    _autograd(d, flow=False, seqnr=False, busy_main=False)
    d.op("Optimizer.step", 820, 890)
    d.launch(830, 840, 845, 945, "sgd_kernel")
    d.runtime("cudaDeviceSynchronize", 900, 950)
    segs = [_seg(0, 10, "untraced", "ProfilerStep#1"), _seg(10, 20, "cpu", "aten::mm"),
            _seg(20, 30, "cpu", "cudaLaunchKernel"), _seg(30, 110, "cpu", "aten::mm"),
            _seg(110, 120, "untraced", "ProfilerStep#1"), _seg(120, 130, "cpu", "aten::ones_like"),
            _seg(130, 150, "thread_wait", None), _seg(150, 160, "cpu", "MmBackward"),
            _seg(160, 170, "launch_overhead", "cudaLaunchKernel"), _seg(170, 175, "launch_overhead", None),
            _seg(175, 775, "gpu_compute", "gemm_bwd"), _seg(775, 780, "sync_wait", "cudaStreamSynchronize"),
            _seg(780, 800, "cpu", "MmBackward"), _seg(800, 820, "thread_wait", None),
            _seg(820, 830, "cpu", "Optimizer.step"), _seg(830, 840, "launch_overhead", "cudaLaunchKernel"),
            _seg(840, 845, "launch_overhead", None), _seg(845, 945, "gpu_compute", "sgd_kernel"),
            _seg(945, 950, "sync_wait", "cudaDeviceSynchronize"), _seg(950, 960, "untraced", "ProfilerStep#1")]
    # inferred: the two hand-off stretches and the two inferred syncs (no cuda_sync records)
    return PathScenario("autograd_handoff", d.document(), [
        {"name": "ProfilerStep#1", "start_us": 0, "end_us": 960, "path": segs, "inferred_us": 50,
         "breakdown_us": {"cpu": 150, "untraced": 30, "launch_overhead": 30, "gpu_compute": 700,
                          "sync_wait": 10, "thread_wait": 40}}])


def _fwdbwd_common(d: _Doc, flow: bool, seqnr: bool) -> list[dict[str, Any]]:
    d.x("user_annotation", "ProfilerStep#1", 0, 1000)
    _autograd(d, flow=flow, seqnr=seqnr, busy_main=True)
    d.op("Optimizer.step", 820, 890)
    d.launch(830, 840, 885, 985, "sgd_kernel")
    d.runtime("cudaDeviceSynchronize", 900, 990)
    return [_seg(0, 10, "untraced", "ProfilerStep#1"), _seg(10, 20, "cpu", "aten::mm"),
            _seg(20, 30, "cpu", "cudaLaunchKernel"), _seg(30, 110, "cpu", "aten::mm"),
            _seg(110, 150, "thread_wait", None), _seg(150, 160, "cpu", "MmBackward"),
            _seg(160, 170, "launch_overhead", "cudaLaunchKernel"), _seg(170, 175, "launch_overhead", None),
            _seg(175, 880, "gpu_compute", "gemm_bwd"), _seg(880, 885, "kernel_gap", None),
            _seg(885, 985, "gpu_compute", "sgd_kernel"), _seg(985, 990, "sync_wait", "cudaDeviceSynchronize"),
            _seg(990, 1000, "untraced", "ProfilerStep#1")]


_FWDBWD_BREAKDOWN = {"cpu": 110, "untraced": 20, "thread_wait": 40, "launch_overhead": 15, "gpu_compute": 805, "kernel_gap": 5,
                     "sync_wait": 5}


def fwdbwd_flow() -> PathScenario:
    d = _Doc()
    segs = _fwdbwd_common(d, flow=True, seqnr=False)
    return PathScenario("fwdbwd_flow", d.document(), [
        {"name": "ProfilerStep#1", "start_us": 0, "end_us": 1000, "path": segs, "inferred_us": 5,
         "breakdown_us": dict(_FWDBWD_BREAKDOWN)}])


def sequence_number() -> PathScenario:
    d = _Doc()
    segs = _fwdbwd_common(d, flow=False, seqnr=True)
    return PathScenario("sequence_number", d.document(), [
        {"name": "ProfilerStep#1", "start_us": 0, "end_us": 1000, "path": segs, "inferred_us": 45,
         "breakdown_us": dict(_FWDBWD_BREAKDOWN)}])


def run_backward_wait() -> PathScenario:
    d = _Doc()
    d.x("user_annotation", "ProfilerStep#1", 0, 1000)
    d.x("python_function", "<built-in method run_backward of torch._C._EngineBase object>", 100, 900)
    d.op("autograd::engine::evaluate_function: MmBackward0", 130, 850, tid=BWD)
    d.launch(140, 150, 160, 840, "gemm_bwd", tid=BWD)
    rb = "<built-in method run_backward of torch._C._EngineBase object>"
    bw = "autograd::engine::evaluate_function: MmBackward0"
    segs = [_seg(0, 100, "untraced", "ProfilerStep#1"), _seg(100, 130, "thread_wait", rb), _seg(130, 140, "cpu", bw),
            _seg(140, 150, "cpu", "cudaLaunchKernel"), _seg(150, 850, "cpu", bw), _seg(850, 900, "thread_wait", rb),
            _seg(900, 1000, "untraced", "ProfilerStep#1")]
    return PathScenario("run_backward_wait", d.document(), [
        {"name": "ProfilerStep#1", "start_us": 0, "end_us": 1000, "path": segs, "inferred_us": 80,
         "breakdown_us": {"cpu": 720, "untraced": 200, "thread_wait": 80}}])


def _two_ops(d: _Doc) -> list[dict[str, Any]]:
    d.op("op1", 0, 50)
    d.op("op2", 400, 450)
    d.launch(410, 420, 425, 445, "k")
    return [_seg(0, 50, "cpu", "op1"), _seg(50, 400, "untraced", None), _seg(400, 410, "cpu", "op2"),
            _seg(410, 420, "cpu", "cudaLaunchKernel"), _seg(420, 450, "cpu", "op2")]


def untraced_gap() -> PathScenario:
    d = _Doc()
    segs = _two_ops(d)
    return PathScenario("untraced_gap", d.document(), [
        {"name": "all", "start_us": 0, "end_us": 450, "path": segs, "inferred_us": 0,
         "breakdown_us": {"cpu": 100, "untraced": 350}}])


def sleeping_helper() -> PathScenario:
    d = _Doc()
    segs = _two_ops(d)
    d.x("python_function", "threading.py(359): wait", 0, 600, tid=HELPER)
    return PathScenario("sleeping_helper", d.document(), [
        {"name": "all", "start_us": 0, "end_us": 450, "path": segs, "inferred_us": 0,
         "breakdown_us": {"cpu": 100, "untraced": 350}}])


def overlapping_windows() -> PathScenario:
    d = _Doc()
    d.x("user_annotation", "ProfilerStep#1", 0, 100)
    d.launch(10, 20, 30, 250, "long_kernel")
    d.x("user_annotation", "ProfilerStep#2", 120, 300)
    d.launch(130, 140, 250, 280, "queued_kernel")
    w1 = [_seg(0, 10, "untraced", "ProfilerStep#1"), _seg(10, 20, "launch_overhead", "cudaLaunchKernel"),
          _seg(20, 30, "launch_overhead", None), _seg(30, 250, "gpu_compute", "long_kernel")]
    w2 = [_seg(120, 130, "untraced", "ProfilerStep#2"), _seg(130, 140, "cpu", "cudaLaunchKernel"),
          _seg(140, 300, "untraced", "ProfilerStep#2")]
    return PathScenario("overlapping_windows", d.document(), [
        {"name": "ProfilerStep#1", "start_us": 0, "end_us": 250, "path": w1, "inferred_us": 0,
         "breakdown_us": {"untraced": 10, "launch_overhead": 20, "gpu_compute": 220}},
        {"name": "ProfilerStep#2", "start_us": 120, "end_us": 300, "path": w2, "inferred_us": 0,
         "breakdown_us": {"untraced": 170, "cpu": 10}}],
        # the summary counts [120, 250) once, in step 1: step 2 adds only [250, 300)
        {"span_us": 300, "sum_span_us": 430, "overlap_us": 130, "length_us": 300,
         "breakdown_us": {"untraced": 60, "launch_overhead": 20, "gpu_compute": 220}})


def stream_held() -> PathScenario:
    d = _Doc()
    d.x("user_annotation", "ProfilerStep#1", 0, 5000)
    d.launch(10, 20, 3000, 3100, "held_kernel")
    d.runtime("cudaDeviceSynchronize", 30, 3110)
    # the launch returned at 20; launch latency up to 100 µs, then nothing explains the wait
    segs = [_seg(0, 10, "untraced", "ProfilerStep#1"), _seg(10, 20, "launch_overhead", "cudaLaunchKernel"),
            _seg(20, 120, "launch_overhead", None), _seg(120, 3000, "untraced", None),
            _seg(3000, 3100, "gpu_compute", "held_kernel"), _seg(3100, 3110, "sync_wait", "cudaDeviceSynchronize"),
            _seg(3110, 5000, "untraced", "ProfilerStep#1")]
    return PathScenario("stream_held", d.document(), [
        {"name": "ProfilerStep#1", "start_us": 0, "end_us": 5000, "path": segs, "inferred_us": 10,
         "breakdown_us": {"launch_overhead": 110, "untraced": 4780, "gpu_compute": 100,
                          "sync_wait": 10}}])


SYNC_CALL = "runFunction - job_prep_and_submit_for_execution"


def synchronous_launch() -> PathScenario:
    """A launch call that returns only after its 630 µs kernel ended (it starts 40 µs into
    the call and runs 93 % of it): the call waited for it."""
    d = _Doc()
    d.x("user_annotation", "ProfilerStep#1", 0, 1000)
    d.op("aten::forward", 10, 900)
    d.launch(20, 700, 60, 690, "job", call=SYNC_CALL)
    segs = [_seg(0, 10, "untraced", "ProfilerStep#1"), _seg(10, 20, "cpu", "aten::forward"),
            _seg(20, 60, "launch_overhead", SYNC_CALL), _seg(60, 690, "gpu_compute", "job"),
            _seg(690, 700, "sync_wait", SYNC_CALL), _seg(700, 900, "cpu", "aten::forward"),
            _seg(900, 1000, "untraced", "ProfilerStep#1")]
    return PathScenario("synchronous_launch", d.document(), [
        {"name": "ProfilerStep#1", "start_us": 0, "end_us": 1000, "path": segs, "inferred_us": 10,
         "breakdown_us": {"untraced": 110, "cpu": 210, "launch_overhead": 40, "gpu_compute": 630,
                          "sync_wait": 10}}],
        # the call waited for its kernel: halving the kernel saves 315 µs, doubling it costs 630;
        # halving the op's own time (10 + 200 µs) saves 105
        whatifs=[{"transforms": {"scale_kernels": ["job=0.5"]}, "predicted_us": {"ProfilerStep#1": 685}},
                 {"transforms": {"scale_kernels": ["job=2"]}, "predicted_us": {"ProfilerStep#1": 1630}},
                 {"transforms": {"scale_cpu": ["aten::forward=0.5"]}, "predicted_us": {"ProfilerStep#1": 895}}])


def profiler_stop_tail() -> PathScenario:
    """The last step's annotation closes at profiler stop, 2.6 ms after the last kernel."""
    d = _Doc()
    d.x("user_annotation", "ProfilerStep#1", 0, 3000)
    d.op("aten::mm", 10, 200)
    d.launch(20, 30, 30, 400, "gemm")
    segs = [_seg(0, 10, "untraced", "ProfilerStep#1"), _seg(10, 20, "cpu", "aten::mm"),
            _seg(20, 30, "cpu", "cudaLaunchKernel"), _seg(30, 200, "cpu", "aten::mm"),
            _seg(200, 400, "untraced", "ProfilerStep#1"), _seg(400, 3000, "untraced", "ProfilerStep#1")]
    return PathScenario("profiler_stop_tail", d.document(), [
        {"name": "ProfilerStep#1", "start_us": 0, "end_us": 3000, "path": segs, "inferred_us": 0,
         "breakdown_us": {"untraced": 2810, "cpu": 190}, "profiler_stop_tail_us": 2600}],
        # the step's end is the profiler's stop: faster kernels do not move it
        whatifs=[{"transforms": {"scale_kernels": ["gemm=0.5"]}, "predicted_us": {"ProfilerStep#1": 3000}}])


def late_resume() -> PathScenario:
    """``## backward ##`` (an annotation) on the main thread from 100 to 15,000 µs; the
    autograd thread wakes at 150 and works until 10,000: the main thread resumed 5 ms late."""
    d = _Doc()
    d.x("user_annotation", "ProfilerStep#1", 0, 16100)
    d.x("user_annotation", "## backward ##", 100, 15000)
    d.op("MmBackward", 150, 10000, tid=BWD)
    d.launch(200, 210, 215, 9000, "gemm_bwd", tid=BWD)
    d.op("Optimizer.step", 15010, 16000)
    segs = [_seg(0, 100, "untraced", "ProfilerStep#1"), _seg(100, 150, "thread_wait", "## backward ##"),
            _seg(150, 200, "cpu", "MmBackward"), _seg(200, 210, "cpu", "cudaLaunchKernel"),
            _seg(210, 10000, "cpu", "MmBackward"), _seg(10000, 15000, "untraced", "## backward ##"),
            _seg(15000, 15010, "untraced", "ProfilerStep#1"), _seg(15010, 16000, "cpu", "Optimizer.step"),
            _seg(16000, 16100, "untraced", "ProfilerStep#1")]
    return PathScenario("late_resume", d.document(), [
        {"name": "ProfilerStep#1", "start_us": 0, "end_us": 16100, "path": segs, "inferred_us": 5050,
         "breakdown_us": {"untraced": 5210, "thread_wait": 50, "cpu": 10840}}],
        # the main thread waited for the worker: halving MmBackward's own time (9,840 µs) saves
        # 4,920; the late resume's 5,000 µs stay (nothing recorded explains them)
        whatifs=[{"transforms": {"scale_cpu": ["MmBackward=0.5"]}, "predicted_us": {"ProfilerStep#1": 11180}}])


DATALOADER = "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__"


def dataloader_wait() -> PathScenario:
    """The step waits in the DataLoader's ``__next__`` (a worker-queue ``get`` inside it)
    for 1.99 ms, then launches a kernel; a kernel before the step leaves the device idle
    meanwhile: 1,990 µs of that idle is data loading."""
    d = _Doc()
    d.op("aten::relu", -100, -50)
    d.launch(-90, -80, -80, -20, "k0")
    d.x("user_annotation", "ProfilerStep#1", 0, 3000)
    d.x("user_annotation", DATALOADER, 10, 2000)
    d.x("python_function", "queue.py(180): get", 20, 1990)
    d.op("aten::conv2d", 2010, 2100)
    d.launch(2020, 2030, 2030, 2900, "conv_kernel")
    d.runtime("cudaDeviceSynchronize", 2110, 2910)
    segs = [_seg(0, 10, "untraced", "ProfilerStep#1"), _seg(10, 20, "data_loading", DATALOADER),
            _seg(20, 1990, "data_loading", "queue.py(180): get"), _seg(1990, 2000, "data_loading", DATALOADER),
            _seg(2000, 2010, "untraced", "ProfilerStep#1"), _seg(2010, 2020, "cpu", "aten::conv2d"),
            _seg(2020, 2030, "launch_overhead", "cudaLaunchKernel"), _seg(2030, 2900, "gpu_compute", "conv_kernel"),
            _seg(2900, 2910, "sync_wait", "cudaDeviceSynchronize"), _seg(2910, 3000, "untraced", "ProfilerStep#1")]
    # device gap [-20, 2030): host late to 2020 (the launch call), then 10 µs of launch latency;
    # of the host-late part 1,990 µs are the DataLoader's, the rest is blamed: 20 µs with no
    # event on the thread, 20 µs of the step annotation, 10 µs of aten::conv2d
    return PathScenario("dataloader_wait", d.document(), [
        {"name": "ProfilerStep#1", "start_us": 0, "end_us": 3000, "path": segs, "inferred_us": 10,
         "breakdown_us": {"untraced": 110, "data_loading": 1990, "cpu": 10, "launch_overhead": 10,
                          "gpu_compute": 870, "sync_wait": 10}}], idle={
        "device": {"cpu_induced": 50, "data_loading": 1990, "sync_drain": 0, "launch_latency": 10, "kernel_gap": 0,
                   "device_wait": 0, "launch_unknown": 0, "untraced": 0},
        "blame_top": {"(untraced)": 20, "ProfilerStep#1": 20, "aten::conv2d": 10}},
        # without the DataLoader (its 1,990 µs) the step takes 1,010 µs
        whatifs=[{"transforms": {"remove": ["DataLoader"]}, "predicted_us": {"ProfilerStep#1": 1010}}])


def stream_wait_work() -> PathScenario:
    d = _Doc()
    d.x("user_annotation", "ProfilerStep#1", 0, 1200)
    d.op("aten::mm", 5, 22)
    d.launch(10, 20, 30, 1030, "sgemm_128x64_nn", stream=20)
    d.runtime("cudaEventRecord", 24, 27)
    d.runtime("cudaStreamWaitEvent", 30, 35)
    # held on stream 7 until the GEMM ended (+50 µs: beyond the 20 µs of a stream-end inference)
    d.launch(40, 50, 1080, 1180, "k_after_wait")
    d.runtime("cudaDeviceSynchronize", 60, 1190)
    segs = [_seg(0, 5, "untraced", "ProfilerStep#1"), _seg(5, 10, "cpu", "aten::mm"),
            _seg(10, 20, "launch_overhead", "cudaLaunchKernel"), _seg(20, 30, "launch_overhead", None),
            _seg(30, 1030, "gpu_compute", "sgemm_128x64_nn"), _seg(1030, 1080, "device_wait", None),
            _seg(1080, 1180, "gpu_compute", "k_after_wait"), _seg(1180, 1190, "sync_wait", "cudaDeviceSynchronize"),
            _seg(1190, 1200, "untraced", "ProfilerStep#1")]
    # inferred: the stream wait on the GEMM (50) and the sync (10, no cuda_sync records)
    return PathScenario("stream_wait_work", d.document(), [
        {"name": "ProfilerStep#1", "start_us": 0, "end_us": 1200, "path": segs, "inferred_us": 60,
         "breakdown_us": {"cpu": 5, "untraced": 15, "launch_overhead": 20, "gpu_compute": 1100,
                          "device_wait": 50, "sync_wait": 10}}],
        # GEMM x0.5 ends at 530: the held kernel 580-680, the sync 690, the step 700;
        # the held kernel x0.5: 1080-1130, the sync 1140, the step 1150
        whatifs=[{"transforms": {"scale_kernels": ["sgemm=0.5"]}, "predicted_us": {"ProfilerStep#1": 700}},
                 {"transforms": {"scale_kernels": ["k_after=0.5"]}, "predicted_us": {"ProfilerStep#1": 1150}}])


def blocked_launch() -> PathScenario:
    d = _Doc()
    d.x("user_annotation", "ProfilerStep#1", 0, 800)
    d.launch(10, 600, 610, 710, "k_first_launch")
    d.runtime("cudaDeviceSynchronize", 620, 720)
    segs = [_seg(0, 10, "untraced", "ProfilerStep#1"), _seg(10, 60, "launch_overhead", "cudaLaunchKernel"),
            _seg(60, 600, "untraced", "cudaLaunchKernel"), _seg(600, 610, "launch_overhead", None),
            _seg(610, 710, "gpu_compute", "k_first_launch"), _seg(710, 720, "sync_wait", "cudaDeviceSynchronize"),
            _seg(720, 800, "untraced", "ProfilerStep#1")]
    return PathScenario("blocked_launch", d.document(), [
        {"name": "ProfilerStep#1", "start_us": 0, "end_us": 800, "path": segs, "inferred_us": 10,
         "breakdown_us": {"launch_overhead": 60, "untraced": 630, "gpu_compute": 100, "sync_wait": 10}}],
        # the kernel x0.5: 610-660, the sync 670, the step 750
        whatifs=[{"transforms": {"scale_kernels": ["k_first=0.5"]}, "predicted_us": {"ProfilerStep#1": 750}}])


def idle_stream_wait_call() -> PathScenario:
    """A kernel held 900 µs by a cudaStreamWaitEvent the host issued right before its launch
    (its awaited stream and event are not recorded): a device wait named by the call."""
    d = _Doc()
    d.x("user_annotation", "ProfilerStep#1", 0, 1300)
    d.op("aten::add", 5, 160)
    d.launch(10, 20, 25, 125, "k1")
    d.runtime("cudaStreamWaitEvent", 130, 135)
    d.launch(140, 150, 1150, 1250, "k2")
    d.runtime("cudaDeviceSynchronize", 170, 1260)
    # gap [125, 1150): host late 125-140 (aten::add 10, cudaStreamWaitEvent 5), launch
    # latency 140-250 (call end 150 + 100), held by the wait call until k2 starts
    return PathScenario("idle_stream_wait_call", d.document(), [], idle={
        "device": {"cpu_induced": 15, "data_loading": 0, "sync_drain": 0, "launch_latency": 110, "kernel_gap": 0, "device_wait": 900, "launch_unknown": 0,
                   "untraced": 0},
        "device_wait_by": {"thread 1/1 (cudaStreamWaitEvent)": 900},
        "blame_top": {"aten::add": 15}})


def idle_collective_join() -> PathScenario:
    """The compute stream waits for a collective on the communication stream (NCCL's
    unrecorded stream join, inferred): stream 7 idles as a device wait on stream 84 until the
    collective ends, then 10 µs of join latency (kernel gap)."""
    d = _Doc()
    d.x("user_annotation", "ProfilerStep#1", 0, 700)
    d.launch(10, 20, 100, 600, "ncclKernel_AllReduce_RING_LL_Sum_float", stream=84)
    d.launch(25, 35, 50, 90, "k0")
    d.launch(40, 45, 610, 650, "k_after_allreduce")
    d.runtime("cudaDeviceSynchronize", 60, 660)
    # device: busy 50-90 and 100-650; gap [90, 100) ended by the collective, whose call ended
    # at 20: launch latency (20 + 100 > 100); gap [600, 610) ended by the held kernel: kernel
    # gap after the collective. Stream 7: gap [90, 610): launch latency to 145 (45 + 100),
    # device wait to 600 (the collective's end), kernel gap 600-610.
    return PathScenario("idle_collective_join", d.document(), [], idle={
        "device": {"cpu_induced": 0, "data_loading": 0, "sync_drain": 0, "launch_latency": 10, "kernel_gap": 10, "device_wait": 0, "launch_unknown": 0,
                   "untraced": 0},
        "streams": {7: {"cpu_induced": 0, "data_loading": 0, "sync_drain": 0, "launch_latency": 55, "kernel_gap": 10, "device_wait": 455, "launch_unknown": 0,
                        "untraced": 0}},
        "blame_top": {}})


def idle_pre_trace() -> PathScenario:
    """A kernel launched before the trace began (no launch call recorded) ends a 250 µs gap:
    not CPU-induced; 100 µs of kernel gap, then untraced."""
    d = _Doc()
    d.x("user_annotation", "ProfilerStep#1", 0, 600)
    d.launch(10, 20, 30, 50, "k1")
    d.kernel(300, 400, "k_pre_trace", 99)
    d.runtime("cudaDeviceSynchronize", 60, 410)
    return PathScenario("idle_pre_trace", d.document(), [], idle={
        "device": {"cpu_induced": 0, "data_loading": 0, "sync_drain": 0, "launch_latency": 0, "kernel_gap": 100, "device_wait": 0, "launch_unknown": 0,
                   "untraced": 150},
        "blame_top": {}})


#: Run-verdict scenarios (:func:`verdict_scenario`): several steps with a known verdict.
VERDICT_SCENARIOS: tuple[str, ...] = ("verdict_gpu_bound_stop_tail", "verdict_mixed", "verdict_warm_up")


def _verdict_step(d: _Doc, b: int, k: int, op_end: int = 50, call: int = 20, kernel_end: int = 930,
                  step_end: int = 1000) -> None:
    """Step ``k`` at ``b`` µs: an op launching one kernel, a synchronize, the annotation
    closing ``step_end`` after ``b``. Its path: untraced 10, cpu ``call - 10``, launch 10,
    gpu ``kernel_end - call - 10``, sync 5, untraced ``step_end - kernel_end - 5``."""
    d.x("user_annotation", f"ProfilerStep#{k}", b, b + step_end)
    d.op("aten::mm", b + 10, b + op_end)
    d.launch(b + call, b + call + 10, b + call + 10, b + kernel_end, "gemm")
    d.runtime("cudaDeviceSynchronize", b + op_end + 10, b + kernel_end + 5)


def verdict_scenario(name: str) -> PathScenario:
    """A run of steps with a known verdict (``summary`` holds it):

    * ``verdict_gpu_bound_stop_tail``: five GPU-bound steps (gpu 900 of 1,000 µs); the last
      one's annotation runs on 3,065 µs after its kernel (the profiler stopped late): that
      step is an outlier, the run is bound by gpu_compute (90 %), and halving the kernels
      shortens the trace by 5 x 450 = 2,250 µs.
    * ``verdict_mixed``: four steps of gpu 500, cpu 410, untraced 75, launch 10, sync 5 µs:
      no category holds more than half: mixed.
    * ``verdict_warm_up``: the first of four GPU-bound steps runs a 2,000 µs kernel (span
      2,100 µs, 2.1x the others): a warm-up outlier; the steady step is 1,000 µs.
    """
    d = _Doc()
    if name == "verdict_gpu_bound_stop_tail":
        for k in range(5):
            _verdict_step(d, 2000 * k, k + 1, step_end=4000 if k == 4 else 1000)
        ans = {"bound": "gpu_compute", "headline": "bound by gpu_compute (90 %)", "steady": 4, "step_us": 1000,
               "outliers": [("ProfilerStep#5", "profiler_stop_tail")],
               "shares": {"gpu_compute": 90.0, "untraced": 7.5, "cpu": 1.0, "launch_overhead": 1.0, "sync_wait": 0.5},
               "gains": {"gpu_compute": 2250.0}}
    elif name == "verdict_mixed":
        for k in range(4):
            _verdict_step(d, 2000 * k, k + 1, op_end=450, call=420)
        ans = {"bound": "mixed", "headline": "mixed: gpu_compute 50 %, cpu 41 %", "steady": 4, "step_us": 1000,
               "outliers": [], "shares": {"gpu_compute": 50.0, "cpu": 41.0, "untraced": 7.5, "launch_overhead": 1.0,
                                          "sync_wait": 0.5}}
    elif name == "verdict_warm_up":
        _verdict_step(d, 0, 1, kernel_end=2030, step_end=2100)
        for k in range(1, 4):
            _verdict_step(d, 3000 * k, k + 1)
        ans = {"bound": "gpu_compute", "headline": "bound by gpu_compute (90 %)", "steady": 3, "step_us": 1000,
               "outliers": [("ProfilerStep#1", "warm_up")],
               "shares": {"gpu_compute": 90.0, "untraced": 7.5, "cpu": 1.0, "launch_overhead": 1.0, "sync_wait": 0.5}}
    else:
        raise KeyError(name)
    return PathScenario(name, d.document(), [], summary=ans)


def idle_launch_unknown() -> PathScenario:
    """Device copies with no launch link (MTIA ``dma_request`` without a correlation) end two
    device gaps after the device's first launch returned and after a launched activity of
    their stream ran (so they were not queued before the trace), while the thread that
    launches the device's work is busy in ``runFunction`` the whole time: ``launch_unknown``
    by that thread, not ``kernel_gap``/``untraced``. The last gap is ended by a launched
    kernel: host late, then the launch latency."""
    d = _Doc()
    d.x("user_annotation", "ProfilerStep#1", 0, 1000)
    d.op("runFunction", 5, 900)
    d.launch(10, 20, 30, 100, "pe_exe_k1", stream=8)
    d.dma(400, 450)
    d.dma(700, 760)
    d.launch(800, 810, 820, 900, "pe_exe_k2")
    d.runtime("cudaDeviceSynchronize", 905, 910)
    # gaps [100, 400) and [450, 700): launch unknown; [760, 820): host late until the launch
    # at 800 (runFunction), launch latency to 820
    return PathScenario("idle_launch_unknown", d.document(), [], idle={
        "device": {"cpu_induced": 40, "data_loading": 0, "sync_drain": 0, "launch_latency": 20, "kernel_gap": 0, "device_wait": 0,
                   "launch_unknown": 550, "untraced": 0},
        "launch_unknown_by": {"thread 1/1": 550},
        "streams": {8: {"cpu_induced": 0, "data_loading": 0, "sync_drain": 0, "launch_latency": 0, "kernel_gap": 0, "device_wait": 0,
                        "launch_unknown": 550, "untraced": 0}},
        "blame_top": {"runFunction": 40}},
        # halving the copies shortens nothing the host waits for: the step keeps its 1000 µs
        whatifs=[{"transforms": {"scale_kernels": ["dma_request=0.5"]}, "predicted_us": {"ProfilerStep#1": 1000}}])


def idle_scenario(name: str) -> PathScenario:
    """Idle scenario ``name`` (one of :data:`IDLE_SCENARIOS`)."""
    return {"idle_stream_wait_call": idle_stream_wait_call, "idle_collective_join": idle_collective_join,
            "idle_pre_trace": idle_pre_trace, "idle_launch_unknown": idle_launch_unknown}[name]()


_BUILDERS = {"autograd_handoff": autograd_handoff, "fwdbwd_flow": fwdbwd_flow, "sequence_number": sequence_number,
             "run_backward_wait": run_backward_wait, "untraced_gap": untraced_gap, "sleeping_helper": sleeping_helper,
             "overlapping_windows": overlapping_windows, "stream_held": stream_held,
             "synchronous_launch": synchronous_launch, "profiler_stop_tail": profiler_stop_tail,
             "late_resume": late_resume, "dataloader_wait": dataloader_wait,
             "stream_wait_work": stream_wait_work, "blocked_launch": blocked_launch}


def path_scenario(name: str) -> PathScenario:
    """Scenario ``name`` (one of :data:`PATH_SCENARIOS`)."""
    return _BUILDERS[name]()


def write_path_scenario(sc: PathScenario, directory: str | Path) -> Path:
    """Write ``<name>.json`` (the trace) and ``<name>.answers.json`` into ``directory``."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    p = d / f"{sc.name}.json"
    p.write_text(json.dumps(sc.trace))
    (d / f"{sc.name}.answers.json").write_text(json.dumps({"windows": sc.windows, "summary": sc.summary,
                                                           "idle": sc.idle, "whatifs": sc.whatifs}, indent=1))
    return p
