"""Memory copies and sets: bytes, time and achieved bandwidth per device and copy kind
(HTA's ``get_memory_bw_summary``, nsys ``cuda_gpu_mem_size_sum`` / ``cuda_gpu_mem_time_sum``).

Definitions (docs/memory-bw.md). For each memcpy / memset activity with a ``bytes``
argument (Kineto writes it for every copy and set):

* ``dur_exact_ns``: the copy's duration. Kineto writes a ``memory bandwidth (GB/s)``
  argument computed by the profiler from the exact (ns) duration, while many traces store
  ``dur`` in whole µs: bytes / that bandwidth recovers the exact duration (always within
  the 1 µs rounding of ``dur``; checked on every real trace). Without the argument, or when
  the two disagree by more than 1 µs, ``dur`` is used (``dur_source`` says which);
* ``gbps`` = bytes / ``dur_exact_ns`` (10^9 bytes per second);
* per (device, kind) — ``kind`` is the activity's name, e.g. ``Memcpy HtoD (Pageable ->
  Device)`` or ``Memset (Device)`` — ``count``, ``bytes``, ``time_us`` (Σ exact durations),
  ``gbps`` = Σ bytes / Σ time (time-weighted), and the per-copy ``gbps_p50`` / ``gbps_max``;
* activities without a ``bytes`` argument are counted in ``no_bytes`` and left out of the
  rates;
* ``pageable``: the kind moves pageable host memory (a staged, synchronous copy on CUDA).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from opgraph.model.trace_graph import TraceGraph
from opgraph.analysis.display import TableResult, json_records

#: Columns of the per-kind table (``tables()["by_kind"]``, µs and GB/s).
BY_KIND_COLUMNS: tuple[str, ...] = ("device", "kind", "count", "no_bytes", "bytes", "time_us", "gbps", "gbps_p50",
                                    "gbps_max", "pageable")


@dataclass(repr=False)
class MemoryBandwidth(TableResult):
    """Result of :func:`memory_bandwidth`: ``copies`` (one row per activity: ``eid``,
    ``device``, ``stream``, ``kind``, ``ts_ns``, ``dur_ns``, ``dur_exact_ns``,
    ``dur_source``, ``bytes`` (nullable), ``gbps``, ``trace_gbps`` — the bandwidth the
    profiler wrote, when it did).

    Examples
    --------
    >>> import opgraph
    >>> t = opgraph.memory_bandwidth(opgraph.load(opgraph.example_trace("gpu_bound"))).to_frame()
    >>> list(t.columns[:4])
    ['device', 'kind', 'count', 'no_bytes']
    """

    copies: pd.DataFrame
    main_table: ClassVar[str] = "by_kind"

    def tables(self) -> dict[str, pd.DataFrame]:
        """``by_kind`` (one row per device and copy kind) and ``copies`` (one per activity)."""
        c = self.copies
        rows = []
        for (dev, kind), g in c.groupby(["device", "kind"], sort=True):
            known = g[g["bytes"].notna()]
            b = int(known["bytes"].sum()) if len(known) else 0
            t = float(known["dur_exact_ns"].sum()) if len(known) else 0.0
            rate = known["gbps"].dropna()
            rows.append({"device": int(dev), "kind": str(kind), "count": int(len(g)), "no_bytes": int(len(g) - len(known)),
                         "bytes": b, "time_us": float(g["dur_exact_ns"].sum()) / 1e3,
                         "gbps": (b / t) if t > 0 else None,
                         "gbps_p50": float(rate.median()) if len(rate) else None,
                         "gbps_max": float(rate.max()) if len(rate) else None,
                         "pageable": "Pageable" in str(kind)})
        by = pd.DataFrame(rows, columns=list(BY_KIND_COLUMNS))
        copies = c.assign(ts_us=c["ts_ns"] / 1e3, dur_us=c["dur_ns"] / 1e3, dur_exact_us=c["dur_exact_ns"] / 1e3
                          ).drop(columns=["ts_ns", "dur_ns", "dur_exact_ns"])
        return {"by_kind": by, "copies": copies}

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (``schemas/memory-bw.schema.json``; µs, bytes, GB/s)."""
        return {"by_kind": json_records(self.tables()["by_kind"]), "copies": int(len(self.copies)),
                "bytes": int(self.copies["bytes"].fillna(0).sum()) if len(self.copies) else 0}


def _copies(G: TraceGraph) -> list[tuple[int, int, int, Any, int, int, Any]]:
    """(eid, device, stream, name, ts, dur, args) of every memcpy / memset node, in node
    order; from the columns of ``G`` (args from its event table)."""
    a = G.arrays
    pos = np.flatnonzero(np.isin(a.kind, ("memcpy", "memset")))
    ev = G.graph.get("events")
    eids = a.eid[pos]
    args = (ev["args"].to_numpy(dtype=object)[eids].tolist() if isinstance(ev, pd.DataFrame) and "args" in ev
            else [None] * len(pos))
    return list(zip(eids.tolist(), a.device[pos].tolist(), a.stream[pos].tolist(), a.name[pos].tolist(),
                    a.ts[pos].tolist(), (a.end - a.ts)[pos].tolist(), args))


def memory_bandwidth(G: TraceGraph) -> MemoryBandwidth:
    """Bytes, time and bandwidth of every memcpy / memset of ``G`` (module docstring)."""
    rows = []
    for eid, dev, stream, name, ts, dur, args in _copies(G):
        args = args or {}
        b = args.get("bytes")
        b = int(b) if isinstance(b, (int, float)) and not isinstance(b, bool) and b >= 0 else None
        tg = args.get("memory bandwidth (GB/s)")
        rows.append((eid, dev, stream, str(name), ts, dur, b, float(tg) if isinstance(tg, (int, float)) else None))
    df = pd.DataFrame(rows, columns=["eid", "device", "stream", "kind", "ts_ns", "dur_ns", "bytes", "trace_gbps"])
    df["bytes"] = df["bytes"].astype("Int64")
    b = df["bytes"].astype("Float64").astype(float)
    tg = df["trace_gbps"].astype(float)
    derived = b / tg.where(tg > 0)
    ok = derived.notna() & ((derived - df["dur_ns"]).abs() <= 1000.0)
    df["dur_exact_ns"] = np.where(ok, derived, df["dur_ns"].astype(float))
    df["dur_source"] = np.where(ok, "trace bandwidth", "timestamps")
    df["gbps"] = b / df["dur_exact_ns"].where(df["dur_exact_ns"] > 0)
    df = df[["eid", "device", "stream", "kind", "ts_ns", "dur_ns", "dur_exact_ns", "dur_source", "bytes", "gbps",
             "trace_gbps"]]
    return MemoryBandwidth(df.sort_values(["ts_ns", "eid"], kind="stable").reset_index(drop=True))
