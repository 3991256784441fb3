"""One meaning of busy and idle: the two windows the GPU figures are taken over, and the
table that reconciles them (docs/idle.md, "Windows").

``opgraph idle`` measures each device over its **GPU span** (first activity start to last
activity end); ``opgraph summary`` over the **steps' window** (first step start to last
step end, the analysis window of :mod:`opgraph.analysis.window`); ``opgraph overlap`` per
step over the activities launched in it. Each is right by its own window; this table says
how they add up, per device:

* ``steps_span = gpu_span + lead_in + tail``, where ``lead_in`` = GPU start − steps start
  and ``tail`` = steps end − GPU end (negative when the device works before the first step
  starts or after the last one ends);
* ``busy_gpu_span`` = union of the device's activities (what ``idle`` calls busy);
  ``busy_steps`` = that union inside the steps' window (what ``summary`` calls busy);
  ``busy_outside_steps`` = the difference;
* ``idle_steps = idle_gpu_span + lead_in + tail + busy_outside_steps``.

Both identities hold exactly (integer ns). The report's GPU cards and the ``idle`` and
``summary`` commands print this table, so every busy % is labelled with its window.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Iterable

import numpy as np
import pandas as pd

from opgraph.analysis.display import TableResult, json_records
from opgraph.analysis.graph_frame import GraphFrame, frame_of
from opgraph.analysis.multistream import device_stats
from opgraph.analysis.window import AnalysisWindow, analysis_window
from opgraph.model.trace_graph import TraceGraph
from opgraph.intervals import union_intervals

#: Columns of the ``windows`` table (µs and %), after ``device``.
FIELDS: tuple[str, ...] = (
    "gpu_span_us", "lead_in_us", "tail_us", "steps_span_us", "busy_gpu_span_us", "busy_pct_gpu_span",
    "busy_steps_us", "busy_pct_steps", "busy_outside_steps_us", "idle_gpu_span_us", "idle_steps_us",
    "gpu_start_us", "gpu_end_us", "steps_start_us", "steps_end_us")


@dataclass(repr=False)
class BusyWindows(TableResult):
    """Result of :func:`busy_windows`: one row per device (ns inside, µs in the tables)."""

    rows: list[dict[str, int]]
    step_source: str
    steps: int
    main_table: ClassVar[str] = "windows"

    def tables(self) -> dict[str, pd.DataFrame]:
        """``windows``: per device, the GPU span, lead-in, tail, the steps' window and the
        busy and idle time in each (µs, %)."""
        out = []
        for r in self.rows:
            d = {"device": r["device"]}
            for k in ("gpu_span", "lead_in", "tail", "steps_span", "busy_gpu_span", "busy_steps", "busy_outside_steps",
                      "idle_gpu_span", "idle_steps", "gpu_start", "gpu_end", "steps_start", "steps_end"):
                d[k + "_us"] = r[k] / 1e3
            d["busy_pct_gpu_span"] = 100.0 * r["busy_gpu_span"] / r["gpu_span"] if r["gpu_span"] else 0.0
            d["busy_pct_steps"] = 100.0 * r["busy_steps"] / r["steps_span"] if r["steps_span"] > 0 else 0.0
            out.append(d)
        return {"windows": pd.DataFrame(out, columns=["device", *FIELDS])}

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (the ``windows`` key of ``schemas/idle.schema.json`` and
        ``schemas/summary.schema.json``)."""
        return {"step_source": self.step_source, "steps": self.steps,
                "identity": "steps_span = gpu_span + lead_in + tail; "
                            "idle_steps = idle_gpu_span + lead_in + tail + busy_outside_steps",
                "devices": json_records(self.tables()["windows"])}


def busy_windows(G: TraceGraph | GraphFrame, step_regex: str | None = None,
                 data_markers: Iterable[str] | None = None) -> BusyWindows:
    """Per device: busy and idle over the GPU span and over the steps' window, and the
    lead-in and tail that reconcile them (module docstring).

    Parameters
    ----------
    G : TraceGraph or GraphFrame
    step_regex, data_markers : as for ``opgraph summary`` (the steps' window).

    Returns
    -------
    BusyWindows
        No row for a trace without device activity.
    """
    f = frame_of(G)
    w = analysis_window(f, step_regex, data_markers)
    return windows_in(f, w, device_stats(f, w))


def windows_in(f: GraphFrame, w: AnalysisWindow, in_window: pd.DataFrame) -> BusyWindows:
    """:func:`busy_windows` given the steps' window ``w`` of ``f`` and the busy time per
    device inside it (``in_window``: :func:`~opgraph.analysis.multistream.device_stats` of
    ``f`` and ``w``), for a caller that has both (``opgraph summary``)."""
    in_steps = {int(r.device): int(r.busy_ns) for r in in_window.itertuples(index=False)}
    act = np.flatnonzero(f.is_activity)
    rows = []
    for d in sorted(np.unique(f.device[act]).tolist()):
        sel = act[f.device[act] == d]
        s0, s1 = union_intervals(f.ts[sel], f.end[sel])
        g0, g1 = int(s0[0]), int(s1[-1])
        busy = int((s1 - s0).sum())
        steps_busy = in_steps.get(int(d), 0)
        span = g1 - g0
        steps_span = int(w.end - w.start)
        rows.append({"device": int(d), "gpu_start": g0, "gpu_end": g1, "gpu_span": span,
                     "steps_start": int(w.start), "steps_end": int(w.end), "steps_span": steps_span,
                     "lead_in": g0 - int(w.start), "tail": int(w.end) - g1,
                     "busy_gpu_span": busy, "busy_steps": steps_busy, "busy_outside_steps": busy - steps_busy,
                     "idle_gpu_span": span - busy, "idle_steps": steps_span - steps_busy})
    return BusyWindows(rows, w.steps.source, len(w.steps))


def idle_with_windows(G: TraceGraph, kernel_wait_us: float = 30.0) -> Any:
    """``opgraph idle``: :func:`opgraph.analysis.idle.idle_time` of ``G`` with the
    reconciling windows table attached (``to_dict()['windows']``; the report's idle section
    and every rank of a job get the same)."""
    from opgraph.analysis.idle import idle_time

    res = idle_time(G, kernel_wait_us=kernel_wait_us)
    res.windows = busy_windows(G).to_dict()
    return res
