"""The ``opgraph summary`` document: the analysis window, the busy windows reconciled,
per-device and per-stream activity and QPS, in µs (schemas/summary.schema.json;
docs/commands/summary.md)."""

from __future__ import annotations

from typing import Any, Iterable

from opgraph.analysis.busy_windows import windows_in
from opgraph.analysis.graph_frame import GraphFrame, frame_of
from opgraph.analysis.multistream import device_stats, qps, stream_stats
from opgraph.analysis.window import analysis_window
from opgraph.model.trace_graph import TraceGraph

__all__ = ["summary_doc"]


def summary_doc(G: TraceGraph | GraphFrame, batch_size: int | None = None, step_regex: str | None = None,
                data_markers: Iterable[str] | None = None) -> dict[str, Any]:
    """Everything ``opgraph summary`` shows (schemas/summary.schema.json), in µs.

    Parameters
    ----------
    G : TraceGraph or GraphFrame
    batch_size : int, optional
        Samples per step; QPS is reported only when given.
    step_regex, data_markers : see :func:`~opgraph.analysis.steps.find_iterations`.

    Returns
    -------
    dict
        ``window`` (steps, data loading, host runtime), ``windows`` (busy and idle over the
        GPU span and the steps' window, reconciled:
        :func:`opgraph.analysis.busy_windows.busy_windows`), ``step_time_us`` (host runtime
        / steps), ``qps``, ``devices`` (busy/idle/overlap per device, over the steps'
        window), ``streams``.
    """
    f = frame_of(G)
    w = analysis_window(f, step_regex, data_markers)
    n_steps = len(w.steps)
    rt_us = w.host_runtime_ns / 1e3
    ds = device_stats(f, w)
    ss = stream_stats(f, w)
    devices = []
    for r in ds.itertuples(index=False):
        span = r.span_ns or 1
        devices.append({"device": r.device, "streams": r.streams, "busy_us": r.busy_ns / 1e3,
                        "stream_active_us": r.stream_active_ns / 1e3, "overlap_us": r.overlap_ns / 1e3,
                        "idle_us": r.idle_ns / 1e3, "span_us": r.span_ns / 1e3,
                        "busy_pct": 100.0 * r.busy_ns / span, "idle_pct": 100.0 * r.idle_ns / span,
                        "overlap_pct": 100.0 * r.overlap_ns / span})
    streams = []
    for r in ss.itertuples(index=False):
        span = r.span_ns or 1
        streams.append({"device": r.device, "stream": r.stream, "activities": r.activities, "kernels": r.kernels,
                        "active_us": r.active_ns / 1e3, "idle_us": r.idle_ns / 1e3, "span_us": r.span_ns / 1e3,
                        "active_pct": 100.0 * r.active_ns / span, "device_us": r.device_ns / 1e3})
    src = f.G.graph.get("source", {}) if isinstance(f.G.graph.get("source"), dict) else {}
    q = None
    if batch_size is not None and n_steps and rt_us > 0:
        q = qps(n_steps, batch_size, rt_us)
    return {
        "source": {"file": src.get("file"), "sha256": src.get("sha256")},
        "window": w.to_dict(),
        "windows": windows_in(f, w, ds).to_dict(),
        "steps": n_steps,
        "step_time_us": rt_us / n_steps if n_steps else None,
        "batch_size": batch_size,
        "qps": q,
        "devices": devices,
        "streams": streams,
    }
