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
  held: at most 100 µs more), ``launch_unknown`` (0: every activity here has its launch
  call), ``untraced`` (the rest); ``cpu_induced_idle_ns``
  and ``launch_latency_ns`` repeat two of them.
- ``bound``: ``"gpu"`` when ``busy_ns >= idle_ns`` (utilization >= 50 %), else ``"cpu"``.
  Scenarios are built far from the 50 % line.
- ``steps``: one entry per ProfilerStep: CPU range of the annotation, and the GPU range and
  busy time (union) of the device activities whose launch call starts inside that range.

This module holds the scenario list and :func:`synthesize`; the parts live beside it:
:mod:`~opgraph.testing.synth_model` (constants, event records, :class:`Scenario`),
:mod:`~opgraph.testing.synth_builder` (:class:`TraceBuilder`),
:mod:`~opgraph.testing.synth_scenarios` (one function per scenario),
:mod:`~opgraph.testing.synth_answers` (the answers above) and
:mod:`~opgraph.testing.synth_json` (writing). Their public names are importable from here.
"""

from __future__ import annotations

import random

from opgraph.testing.synth_answers import builder_answers, exact_ns_answers, memory_answers
from opgraph.testing.synth_builder import TraceBuilder
from opgraph.testing.synth_json import trace_to_json, write_scenario
from opgraph.testing.synth_model import (
    BASE_NS, BWD_TID, DEVICE, DEVICE_ACTIVITY_KINDS, EDGE_KINDS, EVENT_KINDS, GPU_PID, HOST_KINDS,
    LAUNCH_LATENCY_NS, MAIN_TID, NODE_KINDS, NS_FLOAT_BASE_NS, PID, SIDE_STREAM, STREAM, SYNC_RETURN_NS, US,
    Scenario,
)
from opgraph.testing.synth_scenarios import BUILDERS, MIB

__all__ = [
    "BASE_NS", "BWD_TID", "DEVICE", "DEVICE_ACTIVITY_KINDS", "EDGE_KINDS", "EVENT_KINDS", "GPU_PID", "HOST_KINDS",
    "LAUNCH_LATENCY_NS", "MAIN_TID", "MIB", "NODE_KINDS", "NS_FLOAT_BASE_NS", "OPTIONAL_SCENARIOS", "PID",
    "SCENARIOS", "SIDE_STREAM", "STREAM", "SYNC_RETURN_NS", "US", "Scenario", "TraceBuilder", "builder_answers",
    "synthesize", "trace_to_json", "write_scenario",
]

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


def synthesize(name: str, steps: int = 3, seed: int = 0) -> Scenario:
    """Build scenario ``name`` (one of :data:`SCENARIOS` or :data:`OPTIONAL_SCENARIOS`) with
    ``steps`` ProfilerSteps.

    Deterministic: the same arguments give the same trace. ``seed`` only draws the sub-µs
    parts of ``ns_float``; the other scenarios are fixed integer-µs timelines.
    """
    if name not in BUILDERS:
        raise ValueError(f"unknown scenario {name!r}; known: {', '.join(SCENARIOS + OPTIONAL_SCENARIOS)}")
    if steps < 1:
        raise ValueError("steps must be >= 1")
    fn, opts = BUILDERS[name]
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
        answers["exact_ns"] = exact_ns_answers(events, dicts)
    if b.memory:
        answers["memory"] = memory_answers(b)
    return Scenario(name=name, trace=b.document(dicts), answers=answers)
