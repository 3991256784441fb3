"""Idle gaps by length: is a device's idle time many short gaps or a few long ones?
(docs/idle-gaps.md)

Per device, over its busy span (first activity start to last activity end, the window of
``opgraph idle``): the union of its activities (kernels, copies, sets; any stream), and the
gaps between the merged intervals. The gaps sum to ``idle_us`` of ``opgraph idle``. Each gap
falls in one decade bin, ``[0, 1)``, ``[1, 10)``, ... µs (the last bin holds every gap from
its start up), and counts as *short* when it lasts at most ``short_us``: many short gaps
say the host cannot launch fast enough (launch-bound: fuse kernels, capture a CUDA graph);
a few long ones say the host stopped (a synchronization, data loading, a collective's wait).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from opgraph.analysis.display import TableResult, json_records
from opgraph.model.trace_graph import TraceGraph
from opgraph.intervals import union_gaps

#: Upper edges of the length bins (µs); the last bin is open-ended.
BIN_EDGES_US: tuple[float, ...] = (1.0, 10.0, 100.0, 1_000.0, 10_000.0)

DEVICE_COLUMNS = ("device", "span_us", "busy_us", "idle_us", "gaps", "short_gaps", "short_idle_us", "short_idle_pct",
                  "p50_us", "p90_us", "max_us")
BIN_COLUMNS = ("device", "from_us", "to_us", "gaps", "idle_us", "pct_of_idle")


@dataclass(repr=False)
class IdleGaps(TableResult):
    """Result of :func:`idle_gaps`: ``devices`` (one row per device) and ``bins`` (per device
    and length bin; ``to_us`` None for the open last bin). Times in µs."""

    devices: pd.DataFrame
    bins: pd.DataFrame
    main_table: ClassVar[str] = "devices"

    def tables(self) -> dict[str, pd.DataFrame]:
        """``devices`` and ``bins`` (µs)."""
        return {"devices": self.devices, "bins": self.bins}

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (``schemas/idle-gaps.schema.json``)."""
        return {"devices": json_records(self.devices), "bins": json_records(self.bins)}


def _quantile_us(g_ns: np.ndarray, q: float) -> float | None:
    return float(np.quantile(g_ns, q)) / 1e3 if len(g_ns) else None


def idle_gaps(G: TraceGraph, short_us: float = 10.0) -> IdleGaps:
    """The gaps between a device's activities, per device and by length (module docstring).

    Parameters
    ----------
    G : TraceGraph
    short_us : float
        Gaps up to this long (µs) count as short.

    Returns
    -------
    IdleGaps
        µs throughout; per device, the bins' ``idle_us`` sum to the device's ``idle_us``
        and their ``gaps`` to its ``gaps``.
    """
    a = G.arrays
    act = np.flatnonzero(a.is_activity)
    short_ns = short_us * 1e3
    edges_ns = np.array(BIN_EDGES_US) * 1e3
    dev_rows: list[dict[str, Any]] = []
    bin_rows: list[dict[str, Any]] = []
    for dev in np.unique(a.device[act]).tolist():
        sel = act[a.device[act] == dev]
        sel = sel[np.lexsort((a.end[sel], a.ts[sel]))]
        st = a.ts[sel]
        en = np.maximum(a.end[sel], st)
        busy, g0, g1, _ = union_gaps(st, en)
        gaps = (g1 - g0).astype(np.int64)
        idle = int(gaps.sum())
        span = busy + idle
        short = gaps <= short_ns
        dev_rows.append({"device": int(dev), "span_us": span / 1e3, "busy_us": busy / 1e3, "idle_us": idle / 1e3,
                         "gaps": int(len(gaps)), "short_gaps": int(short.sum()),
                         "short_idle_us": int(gaps[short].sum()) / 1e3,
                         "short_idle_pct": 100.0 * int(gaps[short].sum()) / idle if idle else None,
                         "p50_us": _quantile_us(gaps, 0.5), "p90_us": _quantile_us(gaps, 0.9),
                         "max_us": int(gaps.max()) / 1e3 if len(gaps) else None})
        which = np.searchsorted(edges_ns, gaps, side="right")   # bin i holds [edge i-1, edge i)
        counts = np.bincount(which, minlength=len(edges_ns) + 1)
        sums = np.bincount(which, weights=gaps, minlength=len(edges_ns) + 1)
        lows = (0.0, *BIN_EDGES_US)
        for i, lo in enumerate(lows):
            bin_rows.append({"device": int(dev), "from_us": lo,
                             "to_us": BIN_EDGES_US[i] if i < len(BIN_EDGES_US) else None,
                             "gaps": int(counts[i]), "idle_us": float(sums[i]) / 1e3,
                             "pct_of_idle": 100.0 * float(sums[i]) / idle if idle else None})
    return IdleGaps(pd.DataFrame(dev_rows, columns=list(DEVICE_COLUMNS)),
                    pd.DataFrame(bin_rows, columns=list(BIN_COLUMNS)))
