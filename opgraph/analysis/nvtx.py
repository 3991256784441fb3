"""Per NVTX range name: count, CPU time and GPU projection, as Nsight Systems'
``nvtx_gpu_proj_sum`` computes them (``opgraph nvtx``; times in µs).

NVTX attribution follows Nsight Systems: a device activity belongs to a range when the
runtime call that launched it lies inside the range on the range's thread
(``range.start <= call.start`` and ``call.end <= range.end``), never by GPU time. The GPU
projection of one range instance is [first activity start, last activity end] of the
activities attributed to it (kernels, copies and memsets); a name's projection is the sum
over its instances. Ranges are the ``annotation`` nodes of the graph (NVTX ranges for the
nsys formats, ``record_function`` labels for Kineto).

Iterations: the steps of the one window selector
(:func:`opgraph.graph.windows.select_windows`: ``ProfilerStep#N``, else NVTX ``Iteration
N``; or the ranges matching ``step_regex``) that are annotation ranges are also listed one
by one, with the kernel time attributed to each (Σ kernel durations).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from opgraph.analysis.display import TableResult
from opgraph.model.trace_graph import TraceGraph
from opgraph.ingest.steps import NVTX_ITERATION_PATTERN, STEP_PATTERN


_ACT = ("kernel", "memcpy", "memset")


def _frames(G: TraceGraph) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(annotation ranges, launched device activities with their launching call), from
    the graph's arrays (times in ns)."""
    a = G.arrays
    sel = np.flatnonzero(np.isin(a.kind, ("annotation", "runtime") + _ACT))
    # lane: the arrays' thread lane, one per (pid, tid) as recorded (ranges and calls are host events)
    df = pd.DataFrame({"eid": a.eid[sel], "kind": a.kind[sel], "name": a.name[sel], "ts": a.ts[sel],
                       "end": a.end[sel], "lane": a.lane[sel]})
    ranges = df[df["kind"] == "annotation"].reset_index(drop=True)
    calls = df[df["kind"] == "runtime"].set_index("eid")
    acts = df[df["kind"].isin(_ACT)].set_index("eid")
    ls, ld = a.out_edges("launch")
    m = np.isin(a.kind[ld], _ACT)
    lk = pd.DataFrame({"call": a.eid[ls[m]], "act": a.eid[ld[m]]})
    if len(lk):
        lk = lk.join(calls[["ts", "end", "lane"]], on="call").join(
            acts[["ts", "end", "kind"]].rename(columns={"ts": "a_ts", "end": "a_end"}), on="act")
    else:
        lk = pd.DataFrame(columns=["call", "act", "ts", "end", "lane", "a_ts", "a_end", "kind"])
    return ranges, lk


def nvtx_ranges(G: TraceGraph) -> pd.DataFrame:
    """One row per range instance: ``eid``, ``name``, ``ts``/``end``/``cpu_ns``,
    ``activities``, ``kernels``, ``kernel_ns`` (Σ kernel durations), ``gpu_start``/``gpu_end``
    (-1 when nothing was launched inside) and ``gpu_proj_ns``."""
    ranges, lk = _frames(G)
    out = ranges[["eid", "name", "ts", "end"]].copy()
    out["cpu_ns"] = out["end"] - out["ts"]
    n = len(out)
    acts = np.zeros(n, dtype=np.int64)
    kern = np.zeros(n, dtype=np.int64)
    kern_ns = np.zeros(n, dtype=np.int64)
    g0 = np.full(n, -1, dtype=np.int64)
    g1 = np.full(n, -1, dtype=np.int64)
    if len(lk) and n:
        lk = lk.sort_values(["lane", "ts"])
        c_lane = lk["lane"].to_numpy(np.int64)
        c_ts = lk["ts"].to_numpy(np.int64)
        c_end = lk["end"].to_numpy(np.int64)
        a_ts = lk["a_ts"].to_numpy(np.int64)
        a_end = lk["a_end"].to_numpy(np.int64)
        is_k = (lk["kind"] == "kernel").to_numpy()
        r_lane = ranges["lane"].to_numpy(np.int64)
        r_ts = ranges["ts"].to_numpy(np.int64)
        r_end = ranges["end"].to_numpy(np.int64)
        lanes, first = np.unique(c_lane, return_index=True)
        bounds = dict(zip(lanes.tolist(), zip(first.tolist(), np.append(first[1:], len(c_lane)).tolist())))
        for i in range(n):
            b = bounds.get(int(r_lane[i]))
            if b is None:
                continue
            l0, l1 = b
            lo = l0 + int(np.searchsorted(c_ts[l0:l1], r_ts[i], side="left"))
            hi = l0 + int(np.searchsorted(c_ts[l0:l1], r_end[i], side="right"))
            if hi <= lo:
                continue
            sl = slice(lo, hi)
            inside = c_end[sl] <= r_end[i]
            if not inside.any():
                continue
            acts[i] = int(inside.sum())
            g0[i] = int(a_ts[sl][inside].min())
            g1[i] = int(a_end[sl][inside].max())
            k = inside & is_k[sl]
            kern[i] = int(k.sum())
            kern_ns[i] = int((a_end[sl][k] - a_ts[sl][k]).sum())
    out["activities"], out["kernels"], out["kernel_ns"] = acts, kern, kern_ns
    out["gpu_start"], out["gpu_end"] = g0, g1
    out["gpu_proj_ns"] = np.where(g0 >= 0, g1 - g0, 0)
    return out.sort_values(["ts", "eid"]).reset_index(drop=True)


def nvtx_summary(G: TraceGraph, step_regex: str | None = None) -> dict[str, Any]:
    """The ``opgraph nvtx`` document (times in µs; ``schemas/nvtx.schema.json``)."""
    inst = nvtx_ranges(G)
    rows = []
    if len(inst):
        for name, g in inst.groupby("name", sort=False):
            proj = g.loc[g["gpu_start"] >= 0, "gpu_proj_ns"]
            rows.append({
                "name": str(name), "count": int(len(g)),
                "cpu_total_us": float(g["cpu_ns"].sum()) / 1e3, "cpu_avg_us": float(g["cpu_ns"].mean()) / 1e3,
                "gpu_proj_total_us": float(proj.sum()) / 1e3,
                "gpu_proj_avg_us": float(proj.mean()) / 1e3 if len(proj) else 0.0,
                "gpu_proj_min_us": float(proj.min()) / 1e3 if len(proj) else 0.0,
                "gpu_proj_max_us": float(proj.max()) / 1e3 if len(proj) else 0.0,
                "instances_with_gpu": int(len(proj)), "activities": int(g["activities"].sum()),
                "kernels": int(g["kernels"].sum()), "kernel_total_us": float(g["kernel_ns"].sum()) / 1e3,
            })
        rows.sort(key=lambda r: (-r["gpu_proj_total_us"], -r["cpu_total_us"], r["name"]))
    from opgraph.graph.windows import select_windows

    wins = select_windows(G, step_regex=step_regex, lanes=False)  # WindowNotFound: the caller's
    pattern = step_regex or (STEP_PATTERN if wins.source in ("profiler_step", "gpu_annotation")
                             else NVTX_ITERATION_PATTERN)
    its = []
    if len(inst) and wins.is_steps:
        by_eid = inst.set_index("eid")
        ann = [w for w in wins if w.eid is not None and w.eid in by_eid.index]
        for pos, w in enumerate(ann):
            r = by_eid.loc[w.eid]
            its.append({"index": pos, "step": int(w.step), "name": str(w.name),
                        "start_us": int(r["ts"]) / 1e3, "cpu_us": int(r["cpu_ns"]) / 1e3,
                        "gpu_start_us": int(r["gpu_start"]) / 1e3 if r["gpu_start"] >= 0 else None,
                        "gpu_proj_us": int(r["gpu_proj_ns"]) / 1e3, "kernels": int(r["kernels"]),
                        "kernel_us": int(r["kernel_ns"]) / 1e3})
    return {"source": G.graph.get("source", {}), "ranges": rows, "instances": int(len(inst)),
            "step_regex": pattern, "iterations": its}


@dataclass(repr=False)
class NvtxSummary(TableResult):
    """:func:`nvtx_summary`'s document with its tables: ``nvtx_ranges`` (per range name)
    and ``nvtx_iterations`` (per step range), in µs; :meth:`to_dict` is ``opgraph nvtx
    --json`` (schemas/nvtx.schema.json)."""

    doc: dict[str, Any]
    main_table: ClassVar[str] = "nvtx_ranges"

    def tables(self) -> dict[str, pd.DataFrame]:
        return {"nvtx_ranges": pd.DataFrame(self.doc["ranges"]), "nvtx_iterations": pd.DataFrame(self.doc["iterations"])}

    def to_dict(self) -> dict[str, Any]:
        return self.doc


def nvtx_report(G: TraceGraph, step_regex: str | None = None) -> NvtxSummary:
    """:func:`nvtx_summary` as a result with tables (the API's ``opgraph.nvtx``)."""
    return NvtxSummary(nvtx_summary(G, step_regex))
