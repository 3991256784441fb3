"""The timeline model of the trace synthesizer: its constants and event records.

Shared by :mod:`opgraph.testing.synth` and its parts (builder, answers, scenarios): the
ids a scenario writes (pid, tids, device, streams), the start times and latencies of the
timelines, the kind vocabularies the answers count, :class:`SynthEvent` (one event of
the model), the synchronising calls and event waits the answers need, and
:class:`Scenario` (a trace with its ground truth). Every time is integer **ns**; the
trace JSON is written in Kineto's µs (whole µs, or three decimals for ``ns_float``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: Nanoseconds per microsecond (Kineto writes µs).
US = 1_000

NODE_KINDS: tuple[str, ...] = (
    "annotation", "cpu_op", "python", "runtime", "kernel", "memcpy", "memset", "gpu_annotation",
)
EDGE_KINDS: tuple[str, ...] = (
    "nest", "host_seq", "launch", "stream_seq", "sync", "event_wait", "flow", "handoff",
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


@dataclass
class Scenario:
    """A synthetic trace and its ground truth.

    ``trace`` is the Kineto document: a dict with ``traceEvents`` (a bare list for
    ``old_format_2021``). Times in it are Kineto µs: ``int``, or :class:`decimal.Decimal`
    with three fractional digits for ``ns_float`` (write it with
    :func:`~opgraph.testing.synth_json.trace_to_json`, which keeps the digits; ``json.dumps``
    would not). ``answers`` is JSON-serialisable,
    with every time in integer ns.
    """

    name: str
    trace: dict[str, Any] | list[dict[str, Any]]
    answers: dict[str, Any]


@dataclass(eq=False)
class SynthEvent:
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
    parent: SynthEvent | None = None
    flow_id: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    eid: int = -1

    @property
    def end(self) -> int:
        """End time in ns (``ts`` for events without a duration)."""
        return self.ts + (self.dur or 0)


@dataclass
class SyncCall:
    """A synchronising host call: ``stream`` None means the whole device."""

    call: SynthEvent
    stream: int | None


@dataclass
class EventWait:
    """A cudaEventRecord on ``src_stream`` waited for by ``dst_stream`` (cudaStreamWaitEvent)."""

    record: SynthEvent
    wait: SynthEvent
    src_stream: int
    dst_stream: int
