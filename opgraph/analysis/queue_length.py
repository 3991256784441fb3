"""Stream queue length: how many launched activities wait or run on each stream over time
(HTA's ``get_queue_length_summary`` / ``get_time_spent_blocked_on_full_queue``).

The queue of a stream at time ``t`` (docs/queue-length.md) = activities whose launch call
has started by ``t`` and that have not ended by ``t`` (+1 at the call's start, −1 at the
activity's end; an activity launched before the trace began is left out). Per (device,
stream), over ``[first launch, last end]``:

* ``max``; the **time-weighted** ``mean``, ``p50`` and ``p90`` (the share of time spent at
  each length, not the share of change points);
* ``time_full_us``: time at or above ``limit`` (default 1024, the CUDA launch queue's
  depth: launches block the host there).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from opgraph.model.trace_graph import TraceGraph
from opgraph.analysis.display import TableResult

#: Columns of the ``queues`` table.
COLUMNS: tuple[str, ...] = ("device", "stream", "activities", "span_us", "max", "mean", "p50", "p90", "time_full_us",
                            "limit")


def _weighted_quantile(values: np.ndarray, weights: np.ndarray, q: float) -> float:
    o = np.argsort(values, kind="stable")
    v, w = values[o], weights[o]
    c = np.cumsum(w)
    if not len(c) or c[-1] <= 0:
        return 0.0
    return float(v[np.searchsorted(c, q * c[-1], side="left")])


@dataclass(repr=False)
class QueueLength(TableResult):
    """Result of :func:`queue_length`: ``queues`` (one row per stream) and ``series``
    (per stream, the change points: ``device``, ``stream``, ``ts_ns``, ``length``).

    Examples
    --------
    >>> import opgraph
    >>> q = opgraph.queue_length(opgraph.load(opgraph.example_trace("gpu_bound"))).to_frame()
    >>> int(q["max"].iloc[0]) >= 1
    True
    """

    queues: pd.DataFrame
    series: pd.DataFrame
    main_table: ClassVar[str] = "queues"
    display_tables: ClassVar[tuple[str, ...]] = ("queues",)

    def tables(self) -> dict[str, pd.DataFrame]:
        """``queues`` and ``series`` (``ts_us``)."""
        s = self.series.assign(ts_us=self.series["ts_ns"] / 1e3).drop(columns=["ts_ns"])
        return {"queues": self.queues, "series": s}

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (``schemas/queue-length.schema.json``)."""
        rows = []
        for r in self.queues.to_dict("records"):
            rows.append({k: (int(v) if k in ("device", "stream", "activities", "max", "limit") else float(v))
                         for k, v in r.items()})
        return {"queues": rows}


def queue_length(G: TraceGraph, limit: int = 1024) -> QueueLength:
    """Queue length per stream over time (module docstring)."""
    a = G.arrays
    ls, ld = a.out_edges("launch")
    keep = a.is_activity[ld]
    ls, ld = ls[keep], ld[keep]
    rows, series = [], []
    if len(ld):
        keys = np.stack([a.device[ld], a.stream[ld]], axis=1)
        uniq, inv = np.unique(keys, axis=0, return_inverse=True)
        inv = inv.reshape(-1)
        for gi, (dev, stream) in enumerate(uniq.tolist()):
            m = inv == gi
            t = np.concatenate([a.ts[ls[m]], a.end[ld[m]]])
            d = np.concatenate([np.ones(int(m.sum()), np.int64), -np.ones(int(m.sum()), np.int64)])
            o = np.lexsort((-d, t))   # at equal times the +1 first: a launch at an end still queues
            t, d = t[o], d[o]
            length = np.cumsum(d)
            dt = np.diff(t)             # the length after change i holds for dt[i]
            lv = length[:-1]
            span = int(t[-1] - t[0])
            mean = float((lv * dt).sum() / span) if span > 0 else float(length.max())
            rows.append({"device": int(dev), "stream": int(stream), "activities": int(m.sum()),
                         "span_us": span / 1e3, "max": int(length.max()), "mean": mean,
                         "p50": _weighted_quantile(lv.astype(float), dt.astype(float), 0.5),
                         "p90": _weighted_quantile(lv.astype(float), dt.astype(float), 0.9),
                         "time_full_us": float(dt[lv >= limit].sum()) / 1e3, "limit": int(limit)})
            series.append(pd.DataFrame({"device": int(dev), "stream": int(stream), "ts_ns": t, "length": length}))
    q = pd.DataFrame(rows, columns=list(COLUMNS))
    s = (pd.concat(series, ignore_index=True) if series
         else pd.DataFrame({"device": [], "stream": [], "ts_ns": [], "length": []}))
    return QueueLength(q, s)
