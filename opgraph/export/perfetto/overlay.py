"""The Perfetto overlay: the original trace plus opgraph's findings, for ui.perfetto.dev.

``export_perfetto(G, path)`` writes every original event unchanged (through
:func:`opgraph.export.perfetto.chrome.write_trace`) and adds (docs/perfetto.md):

* args on the events they concern: ``opgraph.critical`` / ``opgraph.bound_by`` /
  ``opgraph.critical_us`` (events owning critical-path segments), ``opgraph.idle_blame_us``
  (host events blamed for CPU-induced GPU idle) and, on device activities,
  ``opgraph.launch_delay_us`` / ``opgraph.queue_wait_us``;
* v1 flow events (``s``/``f``) along the critical path where it crosses threads or streams;
* counter tracks: busy streams per GPU, queued-but-unstarted activities per stream, and
  allocated / reserved memory per device (from the trace's ``[memory]`` events);
* ``M`` metadata naming the processes and threads that have no name yet.

Every piece is a pure function of the graph and the analysis results, vectorised with
numpy / pandas: per-event Python work is limited to building the dicts that are written.

This module assembles the overlay (:func:`build_overlay`) and writes it
(:func:`export_perfetto`); the pieces live beside it: :mod:`~opgraph.export.perfetto.args`
(args on events), :mod:`~opgraph.export.perfetto.flows` (critical-path flows, the slice
index), :mod:`~opgraph.export.perfetto.counters` (counter tracks) and
:mod:`~opgraph.export.perfetto.lanes` (lane codes, metadata events). Their public names are
importable from here too. Times are int64 **ns** inside; the trace is written in µs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from opgraph.gc_pause import gc_paused
from opgraph.analysis.critical_path.run_result import CriticalPathResult
from opgraph.analysis.critical_path.path import critical_path
from opgraph.analysis.idle import IdleResult, idle_time
from opgraph.export.perfetto.args import (
    ARG_PREFIX, copy_args, critical_args, idle_args, launch_args, merge_args, replay_args, wait_args,
)
from opgraph.export.perfetto.counters import (
    COUNTER_CAT, activity_counters, activity_frame, device_pids, gpu_busy_counters, memory_counters,
    queued_counters,
)
from opgraph.export.perfetto.flows import (
    FLOW_CAT, FLOW_MARGIN_NS, FLOW_NAME, SliceIndex, critical_crossings, critical_flows, next_flow_id,
)
from opgraph.export.perfetto.lanes import lane_codes, lane_key, metadata_events, object_column
from opgraph.model.trace_graph import TraceGraph

__all__ = [
    "ARG_PREFIX", "COUNTER_CAT", "FLOW_CAT", "FLOW_MARGIN_NS", "FLOW_NAME",
    "Overlay", "SliceIndex", "activity_counters", "activity_frame", "build_overlay", "copy_args",
    "critical_args", "critical_crossings", "critical_flows", "device_pids", "export_perfetto",
    "gpu_busy_counters", "idle_args", "lane_codes", "lane_key", "launch_args", "memory_counters",
    "merge_args", "metadata_events", "next_flow_id", "object_column", "queued_counters", "replay_args",
    "wait_args",
]


# --------------------------------------------------------------------------- result
@dataclass
class Overlay:
    """What the export adds to the original trace.

    ``add_args`` maps event ids to the args merged into them; the event lists hold Chrome
    trace events whose ``ts`` is in integer **ns** (``write_trace`` converts to µs).
    """

    add_args: dict[int, dict[str, Any]] = field(default_factory=dict)
    flows: list[dict[str, Any]] = field(default_factory=list)
    counters: list[dict[str, Any]] = field(default_factory=list)
    metadata: list[dict[str, Any]] = field(default_factory=list)
    windows: int = 0

    def extra_events(self) -> list[dict[str, Any]]:
        return self.metadata + self.counters + self.flows

    def summary(self) -> dict[str, Any]:
        n_crit = sum(1 for d in self.add_args.values() if d.get(ARG_PREFIX + "critical"))
        return {"windows": self.windows, "annotated_events": len(self.add_args), "critical_events": n_crit,
                "flows": len(self.flows) // 2, "counter_events": len(self.counters),
                "metadata_events": len(self.metadata)}


# --------------------------------------------------------------------------- assembly
def build_overlay(G: TraceGraph, window: str | None = None, *, cp: CriticalPathResult | None = None,
                  idle: IdleResult | None = None) -> Overlay:
    """Everything :func:`export_perfetto` adds, without writing it.

    ``window`` is passed to :func:`opgraph.analysis.critical_path.critical_path` (``None``:
    one window per ``ProfilerStep``; ``"all"``; or a regex). Results already computed
    (``cp``, ``idle``) are used when given.
    """
    ev: pd.DataFrame = G.graph["events"]
    arr = G.arrays
    if cp is None:
        cp = critical_path(G, window=window)
    if idle is None:
        idle = idle_time(G)
    lane = lane_codes(ev)
    ov = Overlay(windows=len(cp.windows))
    ov.add_args = merge_args(launch_args(arr), replay_args(G), copy_args(G), idle_args(idle), critical_args(cp))
    ov.flows = critical_flows(ev, cp, next_flow_id(ev), SliceIndex(ev, lane))
    acts = activity_frame(arr)  # once for every counter family
    dev_pids = device_pids(ev, acts)
    mem = memory_counters(ev, dev_pids)
    ov.counters = (gpu_busy_counters(arr, ev, acts, dev_pids) + activity_counters(arr, ev, acts, dev_pids)
                   + queued_counters(arr, ev, acts, dev_pids) + mem)
    counter_pids = list(dev_pids.values()) + list(dict.fromkeys(c["pid"] for c in mem)) if ov.counters else ()
    ov.metadata = metadata_events(ev, counter_pids)
    return ov


def export_perfetto(G: TraceGraph, path: str | Path, window: str | None = None,
                    inputs: tuple[str | Path, ...] = ()) -> dict[str, Any]:
    """Write the Perfetto overlay of ``G`` to ``path`` (``.json`` or ``.json.gz``; never over
    one of ``inputs``).

    Returns a summary: the output path, the number of original events and the counts of
    what was added (see :meth:`Overlay.summary`).
    """
    from opgraph.export.perfetto.chrome import write_trace

    if not isinstance(G.graph.get("events"), pd.DataFrame):
        raise ValueError("the graph has no source event table (G.graph['events']): "
                         "only graphs built by opgraph can be exported as traces")
    with gc_paused():  # hundreds of thousands of small acyclic dicts: keep the collector out
        ov = build_overlay(G, window)
        write_trace(G, path, add_args=ov.add_args, extra_events=ov.extra_events(), inputs=inputs)
    return {"path": str(path), "events": int(len(G.graph["events"])), **ov.summary()}
