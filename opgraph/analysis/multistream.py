"""GPU busy time, per-stream activity, multistream overlap, idle time and QPS.

Definitions (seed-algorithms.md §4, corrected). For the device activities (kernels,
memcpy, memset) of one device, clipped to a window ``W``:

- ``busy`` (union) = total length of the union of the activity intervals;
- ``active[s]`` = length of the union of the intervals on stream ``s``;
- ``overlap`` = Σ_s active[s] − busy (time covered by more than one stream, counted once
  per extra stream);
- ``idle`` = |W| − busy.

The sorted sweep of the reference gives the same numbers: with activities sorted by start
and F the running union front, ``idle += max(0, start − F)`` and ``overlap += max(0,
min(F, end) − start)`` taken *before* ``F = max(F, end)``. (The seed advanced F first,
counted the first kernel as overlapping itself and back-to-back kernels as overlapped.)

``QPS = steps × batch_size / host runtime``; the batch size is always an argument.
Times are ns inside, µs in the returned documents.
"""

from __future__ import annotations


import numpy as np
import pandas as pd

from opgraph.model.trace_graph import TraceGraph
from opgraph.analysis.graph_frame import GraphFrame, frame_of
from opgraph.analysis.window import AnalysisWindow, analysis_window
from opgraph.intervals import overlap_sweep, union_length_by


def seed_overlap_sweep(start: np.ndarray, end: np.ndarray) -> tuple[int, int]:
    """The seed's (wrong) sweep, kept only to show in tests how it differs.

    Returns (idle, overlapped) in the input unit."""
    o = np.lexsort((-np.asarray(end), np.asarray(start)))
    ks = list(zip(np.asarray(start)[o].tolist(), np.asarray(end)[o].tolist()))
    idle = overlapped = 0
    last_end = ks[0][1]
    for s, e in ks:
        if s > last_end:
            idle += s - last_end
            last_end = e
        else:
            last_end = max(last_end, e)
            overlapped += min(last_end, e) - s
    return idle, overlapped


def qps(steps: int, batch_size: int, runtime_us: float) -> float:
    """Queries (samples) per second: ``steps × batch_size × 1e6 / runtime_us``.

    Parameters
    ----------
    steps : int
        Iterations in ``runtime_us``.
    batch_size : int
        Samples per iteration (never assumed).
    runtime_us : float
        Host runtime of those iterations in µs (net of data loading).

    Returns
    -------
    float
    """
    if runtime_us <= 0:
        raise ValueError("runtime must be positive")
    return steps * batch_size * 1e6 / runtime_us


def _clip(f: GraphFrame, idx: np.ndarray, w0: int, w1: int) -> tuple[np.ndarray, np.ndarray]:
    a = np.clip(f.ts[idx], w0, w1)
    b = np.clip(f.end[idx], w0, w1)
    return a, np.maximum(a, b)


def stream_stats(G: TraceGraph | GraphFrame, window: AnalysisWindow | tuple[int, int] | None = None) -> pd.DataFrame:
    """Per (device, stream) activity inside a window.

    Parameters
    ----------
    G : TraceGraph or GraphFrame
    window : AnalysisWindow or (start_ns, end_ns), optional
        Default: :func:`~opgraph.analysis.window.analysis_window` (the steps' span).

    Returns
    -------
    pandas.DataFrame
        One row per (device, stream) with ``activities``, ``kernels``, ``active_ns``
        (union of the stream's intervals), ``device_ns`` (Σ clipped durations),
        ``idle_ns`` = span − active, ``span_ns`` (window length), ``first_ns``/``last_ns``.
    """
    f = frame_of(G)
    w0, w1 = _window_bounds(f, window)
    act = np.flatnonzero(f.is_activity & (f.end > w0) & (f.ts < w1)
                        | (f.is_activity & (f.dur == 0) & (f.ts >= w0) & (f.ts < w1)))
    cols = ["device", "stream", "activities", "kernels", "active_ns", "device_ns", "idle_ns", "span_ns",
            "first_ns", "last_ns"]
    if not len(act):
        return pd.DataFrame(columns=cols)
    a, b = _clip(f, act, w0, w1)
    key = f.device[act] * (1 << 32) + f.stream[act] + 1
    df = pd.DataFrame({"key": key, "device": f.device[act], "stream": f.stream[act], "a": a, "b": b,
                       "k": f.kind[act] == 4})
    df["d"] = df["b"] - df["a"]
    g = df.groupby("key")
    out = g.agg(device=("device", "first"), stream=("stream", "first"), activities=("a", "size"),
                kernels=("k", "sum"), device_ns=("d", "sum"), first_ns=("a", "min"), last_ns=("b", "max"))
    out["active_ns"] = union_length_by(key, a, b).reindex(out.index).to_numpy()
    out["span_ns"] = w1 - w0
    out["idle_ns"] = out["span_ns"] - out["active_ns"]
    out = out.reset_index(drop=True).sort_values(["device", "stream"]).reset_index(drop=True)
    return out[cols].astype({c: np.int64 for c in cols})


def _window_bounds(f: GraphFrame, window: AnalysisWindow | tuple[int, int] | None) -> tuple[int, int]:
    if window is None:
        window = analysis_window(f)
    if isinstance(window, AnalysisWindow):
        return window.start, window.end
    return int(window[0]), int(window[1])


def device_stats(G: TraceGraph | GraphFrame, window: AnalysisWindow | tuple[int, int] | None = None) -> pd.DataFrame:
    """Per device: union busy time, Σ per-stream active, overlap and idle in a window.

    Returns
    -------
    pandas.DataFrame
        Columns ``device``, ``streams``, ``busy_ns``, ``stream_active_ns``,
        ``overlap_ns`` (= stream_active − busy), ``idle_ns`` (= span − busy), ``span_ns``,
        ``sweep_overlap_ns`` (the corrected sweep, Σ durations − union; equals
        ``overlap_ns`` when no stream overlaps itself).
    """
    f = frame_of(G)
    w0, w1 = _window_bounds(f, window)
    ss = stream_stats(f, (w0, w1))
    cols = ["device", "streams", "busy_ns", "stream_active_ns", "overlap_ns", "idle_ns", "span_ns",
            "sweep_overlap_ns"]
    if not len(ss):
        return pd.DataFrame(columns=cols)
    act = np.flatnonzero(f.is_activity & (f.end > w0) & (f.ts < w1))
    a, b = _clip(f, act, w0, w1)
    rows = []
    dev = f.device[act]
    for d in sorted(ss["device"].unique().tolist()):
        m = dev == d
        sw = overlap_sweep(a[m], b[m])
        sa = int(ss.loc[ss["device"] == d, "active_ns"].sum())
        rows.append({"device": int(d), "streams": int((ss["device"] == d).sum()), "busy_ns": sw.busy,
                     "stream_active_ns": sa, "overlap_ns": sa - sw.busy, "idle_ns": (w1 - w0) - sw.busy,
                     "span_ns": w1 - w0, "sweep_overlap_ns": sw.overlap})
    return pd.DataFrame(rows, columns=cols)
