"""Kernel launches: call time, launch delay split into queueing and latency, outliers and
the short-kernel study (HTA's ``get_cuda_kernel_launch_stats``, TraceLens's
``--short_kernel_study``).

Per device activity with a launch call ``c`` (docs/launch-stats.md), times in ns:

* ``call_ns``: the launch call's duration (CPU side); ``gpu_ns``: the activity's duration;
* ``delay_ns`` = start − end of ``c``, at least 0 (HTA's ``launch_delay``);
* ``queued_ns``: the part of that delay during which the activity's stream was still
  running earlier work (``min(start, previous end on the stream) − end of c``, ≥ 0): the
  activity waited its turn, the launch was not slow;
* ``latency_ns`` = delay − queued: the stream was free and the activity still had not
  started: the launch latency proper (or a wait on another stream / event; the critical
  path and ``idle`` name those).

Outliers: ``call_ns`` above ``call_cutoff_us`` (default 50, HTA's ``runtime_cutoff``) and
``latency_ns`` above ``latency_cutoff_us`` (default 100, HTA's ``launch_delay_cutoff`` —
but on the latency, not the whole delay). Short kernels: kernels whose ``gpu_ns`` is
shorter than their own ``call_ns`` (the CPU cannot keep the GPU fed with them), and the
kernel-duration histogram with the time in kernels under 10 µs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from opgraph.model.trace_graph import TraceGraph
from opgraph.model.tree import climb_to_last
from opgraph.analysis.display import TableResult, json_records

#: Lower edges (µs) of the kernel-duration histogram; the last bin is open.
HIST_EDGES_US: tuple[float, ...] = (0, 1, 2, 5, 10, 20, 50, 100, 1000)
#: Kernels shorter than this (µs) count as short in ``short_time_pct``.
SHORT_US = 10.0


@dataclass(repr=False)
class LaunchStats(TableResult):
    """Result of :func:`launch_stats`: ``launches`` (one row per activity with a launch:
    ``eid``, ``kind``, ``name``, ``device``, ``stream``, ``call``, ``op`` — the outermost
    CPU op around the call, ``call_ns``, ``gpu_ns``, ``delay_ns``, ``queued_ns``,
    ``latency_ns``) and the cutoffs in µs.

    Examples
    --------
    >>> import opgraph
    >>> s = opgraph.launch_stats(opgraph.load(opgraph.example_trace("gpu_bound")))
    >>> r = s.to_frame("launches").iloc[0]
    >>> float(r["queued_us"] + r["latency_us"] - r["delay_us"])
    0.0
    """

    launches: pd.DataFrame
    call_cutoff_us: float = 50.0
    latency_cutoff_us: float = 100.0
    summary_: dict[str, Any] = field(default_factory=dict)
    main_table: ClassVar[str] = "summary"
    display_tables: ClassVar[tuple[str, ...]] = ("summary", "histogram", "short_by_op")

    def tables(self) -> dict[str, pd.DataFrame]:
        """``summary`` (one row of counts and percentiles), ``histogram`` (kernel
        durations), ``short_by_op`` (ops launching short kernels), ``call_outliers``,
        ``latency_outliers`` and ``launches`` (µs)."""
        lz = self.launches
        us = lz.assign(call_us=lz["call_ns"] / 1e3, gpu_us=lz["gpu_ns"] / 1e3, delay_us=lz["delay_ns"] / 1e3,
                       queued_us=lz["queued_ns"] / 1e3, latency_us=lz["latency_ns"] / 1e3
                       ).drop(columns=["call_ns", "gpu_ns", "delay_ns", "queued_ns", "latency_ns"])
        k = us[us["kind"] == "kernel"]
        short = k[k["gpu_us"] < k["call_us"]]
        edges = list(HIST_EDGES_US) + [np.inf]
        counts, _ = np.histogram(k["gpu_us"].to_numpy(float), bins=edges)
        time_in = [float(k.loc[(k["gpu_us"] >= lo) & (k["gpu_us"] < hi), "gpu_us"].sum())
                   for lo, hi in zip(edges[:-1], edges[1:])]
        hist = pd.DataFrame({"from_us": HIST_EDGES_US, "to_us": edges[1:], "kernels": counts.astype(int),
                             "time_us": time_in})
        by_op = (short.groupby("op", dropna=False).agg(kernels=("eid", "size"), gpu_us=("gpu_us", "sum"),
                                                       call_us=("call_us", "sum"))
                 .reset_index().sort_values(["kernels", "gpu_us"], ascending=False, kind="stable")
                 .reset_index(drop=True))

        def pct(s: pd.Series, q: float) -> float | None:
            return float(np.percentile(s, q)) if len(s) else None
        tot = float(k["gpu_us"].sum())
        summary = pd.DataFrame([{
            "launches": int(len(us)), "kernels": int(len(k)),
            "call_p50_us": pct(us["call_us"], 50), "call_p99_us": pct(us["call_us"], 99),
            "delay_p50_us": pct(us["delay_us"], 50), "delay_p99_us": pct(us["delay_us"], 99),
            "latency_p50_us": pct(us["latency_us"], 50), "latency_p99_us": pct(us["latency_us"], 99),
            "queued_total_us": float(us["queued_us"].sum()), "latency_total_us": float(us["latency_us"].sum()),
            "call_outliers": int((us["call_us"] > self.call_cutoff_us).sum()),
            "latency_outliers": int((us["latency_us"] > self.latency_cutoff_us).sum()),
            "short_kernels": int(len(short)), "short_kernels_gpu_us": float(short["gpu_us"].sum()),
            "short_time_pct": 100.0 * float(k.loc[k["gpu_us"] < SHORT_US, "gpu_us"].sum()) / tot if tot else 0.0,
            "call_cutoff_us": self.call_cutoff_us, "latency_cutoff_us": self.latency_cutoff_us}])
        return {"summary": summary, "histogram": hist, "short_by_op": by_op,
                "call_outliers": us[us["call_us"] > self.call_cutoff_us].sort_values("call_us", ascending=False),
                "latency_outliers": us[us["latency_us"] > self.latency_cutoff_us].sort_values("latency_us",
                                                                                              ascending=False),
                "launches": us}

    def to_dict(self, top: int = 20) -> dict[str, Any]:
        """JSON-ready (``schemas/launch-stats.schema.json``; µs)."""
        t = self.tables()

        return {"summary": json_records(t["summary"])[0], "histogram": json_records(t["histogram"]),
                "short_by_op": json_records(t["short_by_op"], top),
                "call_outliers": json_records(t["call_outliers"], top),
                "latency_outliers": json_records(t["latency_outliers"], top)}


def launch_stats(G: TraceGraph, call_cutoff_us: float = 50.0, latency_cutoff_us: float = 100.0) -> LaunchStats:
    """Launch call time, launch delay (queued vs latency), outliers and short kernels of
    every launched device activity of ``G`` (module docstring)."""
    a = G.arrays
    ls, ld = a.out_edges("launch")
    keep = a.is_activity[ld]
    ls, ld = ls[keep], ld[keep]
    # previous activity end on the same stream (the stream busy with earlier work)
    act = np.flatnonzero(a.is_activity)
    o = act[np.lexsort((a.ts[act], a.lane[act]))]
    prev_end = np.full(a.n, -(1 << 62), dtype=np.int64)
    if len(o):
        same = a.lane[o][1:] == a.lane[o][:-1]
        # running max of ends within each lane (few lanes: one accumulate per lane)
        lane_start = np.r_[0, np.flatnonzero(~same) + 1]
        run = np.empty(len(o), dtype=np.int64)
        for s0, s1 in zip(lane_start, np.r_[lane_start[1:], len(o)]):
            run[s0:s1] = np.maximum.accumulate(a.end[o[s0:s1]])
        pe = np.full(len(o), -(1 << 62), dtype=np.int64)
        pe[1:] = np.where(same, run[:-1], -(1 << 62))
        prev_end[o] = pe
    call_end = a.end[ls]
    start = a.ts[ld]
    delay = np.maximum(start - call_end, 0)
    queued = np.clip(np.minimum(start, prev_end[ld]) - call_end, 0, None)
    queued = np.minimum(queued, delay)
    # the outermost CPU op around each call (nest parents)
    top = climb_to_last(ls, a.parent, a.is_kind("cpu_op"))
    top = np.where(top >= 0, top, ls)
    op = np.where(a.kind[top] == "cpu_op", a.name[top], None)
    df = pd.DataFrame({"eid": a.eid[ld], "kind": a.kind[ld], "name": a.name[ld], "device": a.device[ld],
                       "stream": a.stream[ld], "call": a.name[ls], "op": op,
                       "call_ns": a.end[ls] - a.ts[ls], "gpu_ns": a.end[ld] - a.ts[ld], "delay_ns": delay,
                       "queued_ns": queued, "latency_ns": delay - queued})
    return LaunchStats(df.sort_values("eid", kind="stable").reset_index(drop=True), float(call_cutoff_us),
                       float(latency_cutoff_us))
