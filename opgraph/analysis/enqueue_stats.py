"""OpenCL (dv/dt) per-kernel enqueue stages: queued -> submit -> start -> end and the host
overhead of each enqueue, from the ``profiling`` args the dv/dt reader keeps on kernels
(:mod:`opgraph.ingest.dvdt`; times in µs)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from opgraph.analysis.display import TableResult


def enqueue_stats(events: pd.DataFrame | Any) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per-enqueue and per-kernel OpenCL stage times from a dv/dt table (an
    :class:`EventTable`, its ``events`` frame, or a graph whose ``graph['events']`` is one).

    Per enqueue (kernels only): ``call_index``, ``repetition``, ``name``, ``gws``, ``lws``,
    and in µs ``queue_us`` (queued -> submit), ``submit_us`` (submit -> start), ``exec_us``
    (start -> end), ``total_us`` (queued -> end), ``host_us`` (the enqueue call's wall time)
    and ``overhead_us`` = host - total. Per kernel name: ``enqueues``, ``exec_total_us``,
    ``exec_pct`` (of all kernels' execution), the averages of the stages; sorted by
    execution time, largest first."""
    ev = events
    if hasattr(ev, "graph"):
        ev = ev.graph["events"]
    if hasattr(ev, "events"):
        ev = ev.events
    k = ev[(ev["kind"] == "kernel")]
    rows = []
    for name, a in zip(k["name"].tolist(), k["args"].tolist()):
        if not isinstance(a, dict) or "profiling" not in a:
            continue
        rows.append({"call_index": a.get("call_index"), "repetition": a.get("repetition"), "name": str(name),
                     "gws": a.get("gws"), "lws": a.get("lws"),
                     "queue_us": a["queue_ns"] / 1e3, "submit_us": a["submit_ns"] / 1e3,
                     "exec_us": a["exec_ns"] / 1e3, "total_us": a["total_ns"] / 1e3,
                     "host_us": a["host_ns"] / 1e3, "overhead_us": a["overhead_ns"] / 1e3,
                     "gemm": a.get("gemm")})
    per = pd.DataFrame(rows, columns=["call_index", "repetition", "name", "gws", "lws", "queue_us", "submit_us",
                                      "exec_us", "total_us", "host_us", "overhead_us", "gemm"])
    if not len(per):
        return per, pd.DataFrame(columns=["name", "enqueues", "exec_total_us", "exec_pct", "queue_avg_us",
                                          "submit_avg_us", "exec_avg_us", "host_overhead_avg_us"])
    g = per.groupby("name", sort=False)
    cum = pd.DataFrame({"enqueues": g.size(), "exec_total_us": g["exec_us"].sum(),
                        "queue_avg_us": g["queue_us"].mean(), "submit_avg_us": g["submit_us"].mean(),
                        "exec_avg_us": g["exec_us"].mean(), "host_overhead_avg_us": g["overhead_us"].mean()})
    total = float(cum["exec_total_us"].sum())
    cum["exec_pct"] = 100.0 * cum["exec_total_us"] / total if total > 0 else 0.0
    cum = cum.reset_index().sort_values(["exec_total_us", "name"], ascending=[False, True]).reset_index(drop=True)
    cum["enqueues"] = cum["enqueues"].astype(int)
    return per, cum[["name", "enqueues", "exec_total_us", "exec_pct", "queue_avg_us", "submit_avg_us",
                     "exec_avg_us", "host_overhead_avg_us"]]


@dataclass(repr=False)
class EnqueueStats(TableResult):
    """The tables of :func:`enqueue_stats` (``per_enqueue``, ``per_kernel``; µs) with the
    trace's ``source``; :meth:`to_dict` is the ``opgraph enqueue-stats --json`` document
    (schemas/enqueue-stats.schema.json)."""

    per_enqueue: pd.DataFrame
    per_kernel: pd.DataFrame
    source: dict[str, Any]
    main_table: ClassVar[str] = "enqueue_kernels"

    def tables(self) -> dict[str, pd.DataFrame]:
        """``enqueue_kernels`` (per kernel name) and ``enqueues`` (per enqueue)."""
        return {"enqueue_kernels": self.per_kernel, "enqueues": self.per_enqueue}

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source,
                "kernels": [{k: (None if isinstance(v, float) and np.isnan(v) else v) for k, v in r.items()}
                            for r in self.per_kernel.to_dict("records")],
                "enqueues": self.per_enqueue.to_dict("records")}


def enqueue_report(G: Any) -> EnqueueStats:
    """:func:`enqueue_stats` of a graph, as a result with tables and its JSON document."""
    per, cum = enqueue_stats(G)
    return EnqueueStats(per, cum, G.graph.get("source", {}))
