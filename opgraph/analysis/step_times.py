"""Per-step times: each step's CPU span, GPU span, GPU busy and kernel time
(:func:`iteration_table`) and the ``opgraph iterations`` document (:func:`iterations_doc`).

Times are integer ns inside (the table's ``*_ns`` columns); the document is in µs.
"""

from __future__ import annotations

from typing import Any, Iterable

import numpy as np
import pandas as pd

from opgraph.model.trace_graph import TraceGraph
from opgraph.analysis.graph_frame import GraphFrame, frame_of
from opgraph.analysis.kind_codes import K_KERNEL
from opgraph.analysis.steps import Steps, find_iterations
from opgraph.analysis.window import analysis_window
from opgraph.intervals import union_length_by

__all__ = ["iteration_table", "iterations_doc"]


def iteration_table(G: TraceGraph | GraphFrame, step_regex: str | None = None,
                    data_markers: Iterable[str] | None = None) -> tuple[pd.DataFrame, Steps]:
    """Each step's CPU span, GPU span, GPU busy time and kernel time.

    A device activity belongs to a step when the runtime call that launched it starts in
    the step's CPU range; an activity without a known launch belongs to the step its own
    start falls in. For steps found from GPU annotations, the CPU range is the annotation's.

    Parameters
    ----------
    G : TraceGraph or GraphFrame
    step_regex, data_markers : see :func:`~opgraph.analysis.steps.find_iterations`.

    Returns
    -------
    (pandas.DataFrame, Steps)
        Columns ``index``, ``step``, ``name``, ``cpu_start_ns``, ``cpu_end_ns``,
        ``cpu_dur_ns``, ``gpu_start_ns``, ``gpu_end_ns`` (-1 when no device work),
        ``gpu_dur_ns``, ``gpu_busy_ns`` (union of activity intervals),
        ``kernel_ns`` (sum of kernel durations), ``activities``, ``kernels``,
        ``data_loading_ns``.
    """
    f = frame_of(G)
    steps = find_iterations(f, step_regex, data_markers)
    st = steps.table
    n = len(st)
    out = pd.DataFrame({"index": st["index"].to_numpy(np.int64), "step": st["step"].to_numpy(np.int64),
                        "name": st["name"].to_numpy(object), "cpu_start_ns": st["ts"].to_numpy(np.int64),
                        "cpu_end_ns": st["end"].to_numpy(np.int64)})
    out["cpu_dur_ns"] = out["cpu_end_ns"] - out["cpu_start_ns"]
    gs = np.full(n, -1, np.int64)
    ge = np.full(n, -1, np.int64)
    busy = np.zeros(n, np.int64)
    kern = np.zeros(n, np.int64)
    nact = np.zeros(n, np.int64)
    nker = np.zeros(n, np.int64)
    dl = np.zeros(n, np.int64)
    if n:
        act = np.flatnonzero(f.is_activity)
        key_t = np.where(f.launcher[act] >= 0, f.ts[np.maximum(f.launcher[act], 0)], f.ts[act])
        s0, s1 = out["cpu_start_ns"].to_numpy(), out["cpu_end_ns"].to_numpy()
        o = np.argsort(s0, kind="stable")
        k = np.searchsorted(s0[o], key_t, side="right") - 1
        ok = k >= 0
        step_of = np.full(len(act), -1, np.int64)
        step_of[ok] = o[k[ok]]
        ok &= key_t < np.where(step_of >= 0, s1[np.maximum(step_of, 0)], 0)
        a, si = act[ok], step_of[ok]
        if len(a):
            df = pd.DataFrame({"s": si, "ts": f.ts[a], "end": f.end[a], "dur": f.dur[a],
                               "k": f.kind[a] == K_KERNEL})
            g = df.groupby("s")
            gs[g.size().index] = g["ts"].min().to_numpy()
            ge[g.size().index] = g["end"].max().to_numpy()
            nact[g.size().index] = g.size().to_numpy()
            kd = df[df["k"]].groupby("s")["dur"].agg(["sum", "size"])
            kern[kd.index] = kd["sum"].to_numpy()
            nker[kd.index] = kd["size"].to_numpy()
            u = union_length_by(si, f.ts[a], f.end[a])
            busy[u.index.to_numpy()] = u.to_numpy()
        w = analysis_window(f, step_regex, data_markers)
        if len(w.data_loading):
            dl = w.data_loading.covered(s0, s1)
    out["gpu_start_ns"] = gs
    out["gpu_end_ns"] = ge
    out["gpu_dur_ns"] = np.where(gs >= 0, ge - gs, 0)
    out["gpu_busy_ns"] = busy
    out["kernel_ns"] = kern
    out["activities"] = nact
    out["kernels"] = nker
    out["data_loading_ns"] = dl
    return out, steps


def iterations_doc(G: TraceGraph | GraphFrame, step_regex: str | None = None,
                   data_markers: Iterable[str] | None = None) -> dict[str, Any]:
    """JSON-ready ``opgraph iterations`` result (schemas/iterations.schema.json), in µs."""
    f = frame_of(G)
    tab, steps = iteration_table(f, step_regex, data_markers)
    src = f.G.graph.get("source", {}) if isinstance(f.G.graph.get("source"), dict) else {}
    rows = []
    for r in tab.itertuples(index=False):
        has_gpu = r.gpu_start_ns >= 0
        rows.append({
            "index": int(r.index), "step": int(r.step), "name": str(r.name),
            "cpu_start_ns": int(r.cpu_start_ns), "cpu_end_ns": int(r.cpu_end_ns), "cpu_us": r.cpu_dur_ns / 1e3,
            "gpu_start_ns": int(r.gpu_start_ns) if has_gpu else None,
            "gpu_end_ns": int(r.gpu_end_ns) if has_gpu else None,
            "gpu_us": r.gpu_dur_ns / 1e3, "gpu_busy_us": r.gpu_busy_ns / 1e3, "kernel_us": r.kernel_ns / 1e3,
            "activities": int(r.activities), "kernels": int(r.kernels), "data_loading_us": r.data_loading_ns / 1e3,
        })
    cpu = tab["cpu_dur_ns"].to_numpy()
    return {
        "source": {"file": src.get("file"), "sha256": src.get("sha256")},
        "step_source": steps.source,
        "step_regex": step_regex,
        "count": len(rows),
        "steps": rows,
        "mean_cpu_us": float(cpu.mean() / 1e3) if len(cpu) else None,
        "mean_gpu_busy_us": float(tab["gpu_busy_ns"].mean() / 1e3) if len(cpu) else None,
    }
