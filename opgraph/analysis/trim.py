"""The pre-build trim of a raw event table to some of its steps (:func:`trim_table`, for
``opgraph build --iterations``): the steps' host events and everything their GPU work
needs, renumbered.

Times are the event table's integer ns; ``meta["trimmed"]["window_ns"]`` is in ns too.
"""

from __future__ import annotations

from typing import Iterable

import numpy as np

from opgraph.analysis.data_markers import data_markers_of
from opgraph.analysis.kind_codes import (
    K_GPU_ANNOTATION, K_KERNEL, K_MEMSET, K_OTHER, K_RUNTIME, KIND_CODES, KIND_NAMES,
)
from opgraph.analysis.steps import steps_table
from opgraph.errors import OpgraphInputError
from opgraph.graph.windows import WindowColumns, WindowError, select_windows
from opgraph.model.table import EventTable

__all__ = ["trim_table"]


def trim_table(table: EventTable, start: int, stop: int, step_regex: str | None = None, *,
               data_markers: Iterable[str] | None = None) -> EventTable:
    """Keep the events of steps ``[start, stop)`` and everything their GPU work needs.

    Steps are found as in :func:`~opgraph.analysis.steps.find_iterations`; ``start``/``stop`` are 0-based positions
    in the sorted step list with Python slice semantics (negative values count from the
    end; ``stop`` None-like values are not accepted: pass ``len``). Kept:

    - host events (and other timed events: instants, counters, ...) that start inside the
      window ``[first kept step start, last kept step end)`` (the seed's
      ``ts_start <= ts < ts_end`` rule; ranges enclosing the window are dropped);
    - every device activity launched by a kept runtime call (by correlation), wherever it
      runs, and device activities without a launching call that start inside the window;
    - ``cuda_sync`` events and launch flows (``ac2g``) of kept runtime calls; other flows
      whose point lies in the window; ``gpu_user_annotation`` ranges carrying the external
      id of a kept host event (or, without one, overlapping the kept device activities);
    - all metadata (``M``) events and the profiler ``Trace`` span.

    Event ids are renumbered 0..n-1 (the graph builder needs ``eid`` = position); the
    original ids are kept in the column ``source_eid``. ``meta["trimmed"]`` records the
    steps kept. Health items of the full trace are dropped (their counts no longer apply);
    the zero-duration check is redone.

    Parameters
    ----------
    table : EventTable
    start, stop : int
        Step positions, ``[start, stop)``.
    step_regex : str, optional
        See :func:`~opgraph.analysis.steps.find_iterations`.
    data_markers : iterable of str, optional
        Markers for the data-loader fallback of step finding.

    Returns
    -------
    EventTable

    Raises
    ------
    OpgraphInputError
        No steps in the trace (or none matching ``step_regex``), or an empty /
        out-of-range selection.
    """
    ev = table.events
    path = table.meta.get("file")
    kind_s = ev["kind"].astype(object).to_numpy()
    kind = np.fromiter((KIND_CODES.get(k, K_OTHER) for k in kind_s), dtype=np.int8, count=len(ev))
    ts = ev["ts_ns"].to_numpy(np.int64)
    dur = np.maximum(ev["dur_ns"].to_numpy(np.int64), 0)
    has_ts = ev["has_ts"].to_numpy(bool) if "has_ts" in ev else np.ones(len(ev), bool)
    names = np.array([s if isinstance(s, str) else "" for s in ev["name"].to_numpy(object)], dtype=object)
    # only timed X-like events can be step markers
    usable = has_ts & (ev["dur_ns"].to_numpy(np.int64) >= 0)
    kk = np.where(usable, kind, K_OTHER).astype(np.int8)
    cols = WindowColumns(KIND_NAMES[kk], names, ts, ts + dur, np.arange(len(ev), dtype=np.int64))
    try:
        steps, source = steps_table(select_windows(cols, step_regex=step_regex,
                                                    data_markers=data_markers_of(data_markers), lanes=False))
    except WindowError as e:
        raise OpgraphInputError(path, f"--iterations: no steps found ({e.for_option('--step-regex')})") from None
    n = len(steps)
    if n == 0:
        raise OpgraphInputError(path, "--iterations: no steps found (no ProfilerStep#N, no Iteration N, "
                                      "no data-loader markers)")
    if not (-n <= start <= n and -n <= stop <= n):
        raise OpgraphInputError(path, f"--iterations {start}:{stop}: out of range; the trace has {n} steps "
                                      f"(positions 0..{n - 1})")
    lo, hi, _ = slice(start, stop).indices(n)
    if hi <= lo:
        raise OpgraphInputError(path, f"--iterations {start}:{stop}: empty selection; the trace has {n} steps "
                                      f"(positions 0..{n - 1})")
    sel = steps.iloc[lo:hi]
    w0, w1 = int(sel["ts"].min()), int(sel["end"].max())
    in_w = has_ts & (ts >= w0) & (ts < w1)
    is_host = kind <= K_RUNTIME
    keep = np.zeros(len(ev), dtype=bool)
    keep |= is_host & in_w
    corr = ev["correlation"].to_numpy(np.int64)
    rt_kept = keep & (kind == K_RUNTIME) & (corr >= 0)
    kept_corr = np.unique(corr[rt_kept])
    all_rt_corr = np.unique(corr[(kind == K_RUNTIME) & (corr >= 0)])
    act = (kind >= K_KERNEL) & (kind <= K_MEMSET)
    has_launch = np.isin(corr, all_rt_corr)
    keep |= act & ((np.isin(corr, kept_corr)) | (~has_launch & in_w))
    ks = kind_s
    keep |= (ks == "cuda_sync") & np.isin(corr, kept_corr)
    # flows
    fid = ev["flow_id"].to_numpy(np.int64) if "flow_id" in ev else np.full(len(ev), -1, np.int64)
    is_flow = (ks == "flow_start") | (ks == "flow_end")
    if is_flow.any():
        from opgraph.graph.linking import LAUNCH_FLOW_CATS
        cats = ev["cat"].astype(object).to_numpy()
        launch_flow = is_flow & np.isin(cats, list(LAUNCH_FLOW_CATS))
        keep |= launch_flow & np.isin(fid, kept_corr)
        keep |= is_flow & ~launch_flow & in_w
    # gpu annotations
    ga = np.flatnonzero(kind == K_GPU_ANNOTATION)
    if len(ga):
        ext = ev["external_id"].to_numpy(np.int64)
        kept_ext = np.unique(ext[keep & is_host & (ext >= 0)])
        by_ext = (ext[ga] >= 0) & np.isin(ext[ga], kept_ext)
        ka = np.flatnonzero(keep & act)
        if len(ka):
            d0, d1 = ts[ka].min(), (ts[ka] + dur[ka]).max()
            by_time = (ext[ga] < 0) & (ts[ga] < d1) & (ts[ga] + dur[ga] > d0)
        else:
            by_time = np.zeros(len(ga), bool)
        keep[ga[by_ext | by_time]] = True
    # metadata and the profiler span; everything else timed in the window
    keep |= np.isin(ks, ["meta", "trace_span"])
    other = ~is_host & ~act & (kind != K_GPU_ANNOTATION) & ~np.isin(ks, ["cuda_sync", "flow_start", "flow_end",
                                                                          "meta", "trace_span"])
    keep |= other & in_w
    idx = np.flatnonzero(keep)
    new = ev.iloc[idx].copy()
    new.insert(len(new.columns), "source_eid", new["eid"].to_numpy(np.int64))
    new["eid"] = np.arange(len(new), dtype=np.int64)
    new = new.reset_index(drop=True)
    meta = dict(table.meta)
    meta["trimmed"] = {"start": int(lo), "stop": int(hi), "step_source": source,
                       "steps": [str(s) for s in sel["name"]], "window_ns": [w0, w1],
                       "events_before": int(len(ev)), "events_after": int(len(new))}
    out = EventTable(new, meta, [])
    if meta.get("format") == "kineto":
        try:
            from opgraph.ingest.kineto import post_checks
            post_checks(out)
        except ImportError:  # pragma: no cover
            pass
    return out
