"""Temporal breakdown of the GPU per window and device: compute, communication and memory
time, their overlap, and the **exposed** communication and memory time (HTA's
``get_comm_comp_overlap``, TraceLens's ``gpu_timeline``, nsys ``nccl_gpu_overlap_trace``).

Definitions (docs/overlap.md). A window's activities are the device activities (kernels,
memcpy, memset) launched in it (by their launch call's start; an activity without a
launch, e.g. one launched before the trace began, by its own start). Per device, with
``|X|`` the length of the union of the intervals of the set ``X``:

* ``compute``: kernels that are not communication (:data:`COMM_KERNEL_PATTERN`);
  ``comm``: communication kernels (NCCL/RCCL, c10d); ``memory``: memcpy and memset;
* ``span_ns`` = last end − first start; ``busy_ns`` = |all|; ``idle_ns`` = span − busy;
* ``compute_ns`` = |compute|, ``comm_ns`` = |comm|, ``memory_ns`` = |memory|;
* ``overlap_ns`` = |compute ∩ comm| = |compute| + |comm| − |compute ∪ comm|;
* ``exposed_comm_ns`` = |comm \\ compute| = |compute ∪ comm| − |compute|: communication
  with no computation running (on any stream of the device);
* ``exposed_memory_ns`` = |memory \\ (compute ∪ comm)| = busy − |compute ∪ comm|;
* ``comm_overlap_pct`` = 100 · overlap / comm (HTA's ``comp_comm_overlap_pctg``).

So ``compute + exposed_comm + exposed_memory + idle = span`` exactly, per row.
Times are ns in the result's fields and µs in ``tables()`` / ``to_dict()``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from opgraph.model.trace_graph import TraceGraph
from opgraph.graph.linking import COMM_KERNEL_PATTERN
from opgraph.analysis.display import TableResult
from opgraph.intervals import union_length
from opgraph.graph.windows import select_windows

#: Columns of the result (ns) in order, after ``window`` and ``device``.
FIELDS: tuple[str, ...] = ("span_ns", "busy_ns", "idle_ns", "compute_ns", "comm_ns", "memory_ns", "overlap_ns",
                           "exposed_comm_ns", "exposed_memory_ns")


@dataclass(repr=False)
class OverlapResult(TableResult):
    """One row per (window, device) of :func:`comm_overlap` (``rows``, ns), plus the
    whole-trace rows (``window == "all"``) when the windows are steps.

    Examples
    --------
    >>> import opgraph
    >>> res = opgraph.comm_overlap(opgraph.load(opgraph.example_trace("gpu_bound")))
    >>> r = res.to_frame().iloc[0]
    >>> float(r["compute_us"] + r["exposed_comm_us"] + r["exposed_memory_us"] + r["idle_us"] - r["span_us"])
    0.0
    """

    rows: pd.DataFrame
    window_mode: str
    main_table: ClassVar[str] = "overlap"

    def tables(self) -> dict[str, pd.DataFrame]:
        """``overlap``: one row per window and device, µs and %."""
        df = self.rows.copy()
        for f in FIELDS:
            df[f.replace("_ns", "_us")] = df.pop(f) / 1e3
        busy = df["busy_us"].where(df["busy_us"] > 0)
        df["comm_overlap_pct"] = (100.0 * df["overlap_us"] / df["comm_us"].where(df["comm_us"] > 0)).fillna(0.0)
        df["exposed_comm_pct_of_span"] = (100.0 * df["exposed_comm_us"] / df["span_us"].where(df["span_us"] > 0)
                                          ).fillna(0.0)
        df["busy_pct_of_span"] = (100.0 * busy / df["span_us"].where(df["span_us"] > 0)).fillna(0.0)
        return {"overlap": df}

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (``schemas/overlap.schema.json``; µs)."""
        recs = self.tables()["overlap"].to_dict("records")
        return {"window_mode": self.window_mode, "kernel_pattern_comm": COMM_KERNEL_PATTERN,
                "rows": [{k: (int(v) if k == "device" else (str(v) if k == "window" else float(v)))
                          for k, v in r.items()} for r in recs]}


def comm_overlap(G: TraceGraph, window: str | None = None) -> OverlapResult:
    """Compute, communication and memory time per window and device, their overlap and the
    exposed communication and memory time (module docstring).

    Parameters
    ----------
    G : TraceGraph
        A graph built by :func:`opgraph.graph.build_graph`.
    window : str, optional
        As in :func:`opgraph.analysis.critical_path.critical_path`: default the steps (then
        the whole trace is added as window ``"all"``), ``"all"``, or a regex.

    Returns
    -------
    OverlapResult
    """
    a = G.arrays
    wins = select_windows(a, window, lanes=False)
    act = np.flatnonzero(a.is_activity)
    launch_ts = a.ts[act].copy()
    ls, ld = a.out_edges("launch")
    if len(ls):
        pos = np.full(a.n, -1, dtype=np.int64)
        pos[act] = np.arange(len(act))
        hit = pos[ld] >= 0
        launch_ts[pos[ld[hit]]] = a.ts[ls[hit]]
    kind = a.kind[act]
    comm = (kind == "kernel") & a.names_match(re.compile(COMM_KERNEL_PATTERN))[act]
    memory = np.isin(kind, ("memcpy", "memset"))
    compute = (kind == "kernel") & ~comm
    dev = a.device[act]
    ts, end = a.ts[act], a.end[act]
    items = [(w.name, w.start_ns, w.end_ns) for w in wins]
    if wins.is_steps and window is None:
        items.append(("all", None, None))
    # activities sorted by (device, launch time): each (window, device) is one searchsorted slice
    o = np.lexsort((launch_ts, dev))
    dev_s, lt_s = dev[o], launch_ts[o]
    ts, end, compute, comm, memory = ts[o], end[o], compute[o], comm[o], memory[o]
    devices, dev_lo = np.unique(dev_s, return_index=True)
    dev_hi = np.r_[dev_lo[1:], len(dev_s)]
    rows = []
    for name, w0, w1 in items:
        for d, lo_d, hi_d in zip(devices.tolist(), dev_lo.tolist(), dev_hi.tolist()):
            if w0 is None:
                lo, hi = lo_d, hi_d
            else:
                lo = lo_d + int(np.searchsorted(lt_s[lo_d:hi_d], w0, "left"))
                hi = lo_d + int(np.searchsorted(lt_s[lo_d:hi_d], w1, "left"))
            if hi <= lo:
                continue
            s, e = ts[lo:hi], end[lo:hi]
            c, k, y = compute[lo:hi], comm[lo:hi], memory[lo:hi]
            span = int(e.max() - s.min())
            busy = union_length(s, e)
            comp_n = union_length(s[c], e[c])
            comm_n = union_length(s[k], e[k])
            cc = c | k
            cc_n = union_length(s[cc], e[cc])
            rows.append({"window": name, "device": int(d), "span_ns": span, "busy_ns": busy, "idle_ns": span - busy,
                         "compute_ns": comp_n, "comm_ns": comm_n, "memory_ns": union_length(s[y], e[y]),
                         "overlap_ns": comp_n + comm_n - cc_n, "exposed_comm_ns": cc_n - comp_n,
                         "exposed_memory_ns": busy - cc_n})
    df = pd.DataFrame(rows, columns=["window", "device", *FIELDS])
    return OverlapResult(df, wins.mode)
