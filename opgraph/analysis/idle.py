"""GPU idle time: per device and per stream, how much the CPU caused, and which ops.

Definitions (docs/idle.md)
--------------------------
* Device ``span``: first activity start to last activity end (kernels, memcpy, memset).
  ``busy`` is the union of activity intervals over all streams; ``idle = span - busy``.
* A device-idle gap is **CPU-induced** when the activity that ends it had its launch call
  start at or after the gap began: the GPU had nothing to do because the CPU had not yet
  asked. ``launch_latency`` is the part of such gaps after the launch call started.
* **Blame**: each CPU-induced gap is split exclusively among the host events running on
  the launching thread during the gap, by the innermost event active at each instant
  (leaf level), and rolled up to the outermost CPU op that contains it (``cpu_op``;
  annotations such as ``ProfilerStep#N`` are not ops). Time with no event
  on the thread goes to ``(untraced)``. Both tables sum to the CPU-induced idle exactly.
* Per stream, HTA's categories: ``host_wait`` (the next activity's launch started after the
  previous activity ended), ``kernel_wait`` (other gaps shorter than ``kernel_wait_us``) and
  ``other``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import networkx as nx
import numpy as np
import pandas as pd

from opgraph.analysis.arrays import GraphArrays

UNTRACED = "(untraced)"


@dataclass
class DeviceIdle:
    """Idle figures of one device (ns)."""

    device: int
    span_ns: int
    busy_ns: int
    idle_ns: int
    cpu_induced_idle_ns: int
    launch_latency_ns: int
    gaps: int
    cpu_induced_gaps: int

    def to_dict(self) -> dict[str, Any]:
        return {"device": self.device, "span_us": self.span_ns / 1e3, "busy_us": self.busy_ns / 1e3,
                "idle_us": self.idle_ns / 1e3, "cpu_induced_idle_us": self.cpu_induced_idle_ns / 1e3,
                "launch_latency_us": self.launch_latency_ns / 1e3, "gaps": self.gaps,
                "cpu_induced_gaps": self.cpu_induced_gaps,
                "busy_pct": 100.0 * self.busy_ns / self.span_ns if self.span_ns else 0.0}


@dataclass
class StreamIdle:
    """Idle figures of one stream (ns), with HTA's categories."""

    device: int
    stream: int
    span_ns: int
    busy_ns: int
    idle_ns: int
    host_wait_ns: int
    kernel_wait_ns: int
    other_ns: int

    def to_dict(self) -> dict[str, Any]:
        return {"device": self.device, "stream": self.stream, "span_us": self.span_ns / 1e3,
                "busy_us": self.busy_ns / 1e3, "idle_us": self.idle_ns / 1e3,
                "host_wait_us": self.host_wait_ns / 1e3, "kernel_wait_us": self.kernel_wait_ns / 1e3,
                "other_us": self.other_ns / 1e3}


@dataclass
class IdleResult:
    """Output of :func:`idle_time`. ``blame_events`` has one row per blamed host event
    (``eid`` -1 for untraced time): ``eid``, ``kind``, ``name``, ``top_eid``, ``top_name``,
    ``blame_ns``."""

    devices: list[DeviceIdle]
    streams: list[StreamIdle]
    blame_events: pd.DataFrame
    kernel_wait_us: float
    per_eid_blame_ns: dict[int, int] = field(default_factory=dict)

    @property
    def cpu_induced_idle_ns(self) -> int:
        return int(sum(d.cpu_induced_idle_ns for d in self.devices))

    def blame(self, level: str = "leaf") -> pd.DataFrame:
        """Blame aggregated by name: ``level`` is ``"leaf"`` or ``"top"``. Columns
        ``kind``, ``name``, ``blame_ns``, ``count``, ``share`` (fraction of CPU-induced idle)."""
        df = self.blame_events
        if level == "top":
            g = df.groupby(["top_kind", "top_name"], sort=False, dropna=False)
            out = g.agg(blame_ns=("blame_ns", "sum"), count=("top_eid", "nunique")).reset_index()
            out = out.rename(columns={"top_kind": "kind", "top_name": "name"})
        else:
            g = df.groupby(["kind", "name"], sort=False, dropna=False)
            out = g.agg(blame_ns=("blame_ns", "sum"), count=("eid", "nunique")).reset_index()
        total = self.cpu_induced_idle_ns
        out["share"] = out["blame_ns"] / total if total else 0.0
        return out.sort_values("blame_ns", ascending=False, kind="stable").reset_index(drop=True)

    def to_dict(self, top: int = 20) -> dict[str, Any]:
        def rows(level: str) -> list[dict[str, Any]]:
            b = self.blame(level)
            return [{"kind": str(r.kind), "name": str(r.name), "blame_us": r.blame_ns / 1e3,
                     "count": int(r.count), "share_pct": 100.0 * r.share} for r in b.head(top).itertuples()]
        return {"kernel_wait_threshold_us": self.kernel_wait_us,
                "devices": [d.to_dict() for d in self.devices],
                "streams": [s.to_dict() for s in self.streams],
                "cpu_induced_idle_us": self.cpu_induced_idle_ns / 1e3,
                "blame_total_us": float(self.blame_events["blame_ns"].sum()) / 1e3 if len(self.blame_events) else 0.0,
                "blame_leaf": rows("leaf"), "blame_top": rows("top")}


def _union_gaps(starts: np.ndarray, ends: np.ndarray) -> tuple[int, np.ndarray, np.ndarray, np.ndarray]:
    """Busy time (union) and the gaps between merged intervals: (busy, gap_start, gap_end,
    index of the interval that ends each gap) — intervals given sorted by start."""
    run_end = np.maximum.accumulate(ends)
    gap = starts[1:] > run_end[:-1]
    g0 = run_end[:-1][gap]
    g1 = starts[1:][gap]
    nxt = np.flatnonzero(gap) + 1
    busy = int(run_end[-1] - starts[0]) - int((g1 - g0).sum())
    return busy, g0, g1, nxt


def _thread_segments(a: GraphArrays, members: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Partition of time on one thread by the innermost active event: (start, end, owner
    position; -1 where nothing runs), covering (-inf, +inf)."""
    order = members[np.lexsort((-(a.end[members] - a.ts[members]), a.ts[members]))]
    ts = a.ts[order].tolist()
    en = a.end[order].tolist()
    pos = order.tolist()
    lo = -(2**62)
    s_l, e_l, o_l = [], [], []
    stack: list[tuple[int, int]] = []
    cur = lo

    def emit(t0: int, t1: int, owner: int) -> None:
        if t1 > t0:
            s_l.append(t0)
            e_l.append(t1)
            o_l.append(owner)

    for s, e, p in zip(ts, en, pos):
        while stack and stack[-1][0] <= s:
            te, tp = stack.pop()
            emit(cur, te, tp)
            cur = max(cur, te)
        emit(cur, s, stack[-1][1] if stack else -1)
        cur = max(cur, s)
        if stack and e > stack[-1][0]:
            e = stack[-1][0]
        stack.append((e, p))
    while stack:
        te, tp = stack.pop()
        emit(cur, te, tp)
        cur = max(cur, te)
    emit(cur, 2**62, -1)
    return np.array(s_l, dtype=np.int64), np.array(e_l, dtype=np.int64), np.array(o_l, dtype=np.int64)


def _top_ancestor(a: GraphArrays) -> np.ndarray:
    """Position of each host node's top-level op: its outermost ``cpu_op`` ancestor (itself
    included), or the node itself when no op contains it (e.g. a runtime call made directly
    under an annotation)."""
    ns, nd = a.out_edges("nest")
    host = a.is_host
    m = host[ns] & host[nd]
    parent = np.full(a.n, -1, dtype=np.int64)
    parent[nd[m]] = ns[m]
    is_op = a.kind == "cpu_op"
    idx = np.arange(a.n, dtype=np.int64)
    best = np.where(is_op, idx, -1)
    cur = parent.copy()
    for _ in range(1024):
        live = np.flatnonzero(cur >= 0)
        if not len(live):
            break
        c = cur[live]
        best[live] = np.where(is_op[c], c, best[live])
        cur[live] = parent[c]
    return np.where(best >= 0, best, idx)


def idle_time(G: nx.DiGraph, kernel_wait_us: float = 30.0, arr: GraphArrays | None = None) -> IdleResult:
    """GPU idle time per device and stream, CPU-induced idle and its blame.

    Parameters
    ----------
    G : networkx.DiGraph
        A graph built by :func:`opgraph.graph.build_graph`.
    kernel_wait_us : float
        Per-stream gaps shorter than this (µs) that are not host waits count as
        ``kernel_wait`` (HTA's default is 30 µs).

    Returns
    -------
    IdleResult
        Times in ns (``to_dict`` gives µs).
    """
    a = arr if arr is not None else GraphArrays.from_graph(G)
    act = np.flatnonzero(a.is_activity)
    ls, ld = a.out_edges("launch")
    launch_ts = np.full(a.n, np.iinfo(np.int64).min, dtype=np.int64)
    launcher = np.full(a.n, -1, dtype=np.int64)
    launch_ts[ld] = a.ts[ls]
    launcher[ld] = ls
    kw_ns = int(round(kernel_wait_us * 1000))
    devices: list[DeviceIdle] = []
    streams: list[StreamIdle] = []
    gap_rows: list[tuple[int, int, int]] = []  # (g0, g1, launcher position)
    for dev in np.unique(a.device[act]).tolist():
        sel = act[a.device[act] == dev]
        sel = sel[np.lexsort((a.end[sel], a.ts[sel]))]
        st, en = a.ts[sel], a.end[sel]
        busy, g0, g1, nxt = _union_gaps(st, en)
        span = int(en.max() - st[0])
        ender = sel[nxt]
        lt = launch_ts[ender]
        induced = (launcher[ender] >= 0) & (lt >= g0)
        lat = np.where(induced, g1 - np.maximum(lt, g0), 0)
        devices.append(DeviceIdle(int(dev), span, busy, span - busy, int((g1 - g0)[induced].sum()),
                                  int(lat.sum()), int(len(g0)), int(induced.sum())))
        gap_rows.extend(zip(g0[induced].tolist(), g1[induced].tolist(), launcher[ender][induced].tolist()))
        for stv in np.unique(a.stream[sel]).tolist():
            ss = sel[a.stream[sel] == stv]
            sst, sen = a.ts[ss], a.end[ss]
            sbusy, sg0, sg1, snxt = _union_gaps(sst, sen)
            sspan = int(sen.max() - sst[0])
            nl = launch_ts[ss[snxt]]
            host = (launcher[ss[snxt]] >= 0) & (nl >= sg0)
            glen = sg1 - sg0
            kern = ~host & (glen < kw_ns)
            streams.append(StreamIdle(int(dev), int(stv), sspan, sbusy, sspan - sbusy, int(glen[host].sum()),
                                      int(glen[kern].sum()), int(glen[~host & ~kern].sum())))
    blame = _blame(a, gap_rows)
    per_eid: dict[int, int] = {}
    if len(blame):
        sub = blame[blame["eid"] >= 0]
        per_eid = dict(zip(sub["eid"].tolist(), sub["blame_ns"].tolist()))
    return IdleResult(devices, streams, blame, kernel_wait_us, per_eid)


def _blame(a: GraphArrays, gaps: list[tuple[int, int, int]]) -> pd.DataFrame:
    cols = ["eid", "kind", "name", "top_eid", "top_kind", "top_name", "blame_ns"]
    if not gaps:
        return pd.DataFrame({c: pd.Series(dtype=object if "name" in c or "kind" in c else np.int64) for c in cols})
    g = np.array(gaps, dtype=np.int64)
    lane_of_gap = a.lane[g[:, 2]]
    host = np.flatnonzero(a.is_host)
    top = _top_ancestor(a)
    acc: dict[int, int] = {}
    for lane in np.unique(lane_of_gap).tolist():
        members = host[a.lane[host] == lane]
        s, e, o = _thread_segments(a, members)
        gl = g[lane_of_gap == lane]
        first = np.searchsorted(e, gl[:, 0], side="right")  # first segment ending after g0
        for (g0, g1, _), k in zip(gl.tolist(), first.tolist()):
            while k < len(s) and s[k] < g1:
                ov = min(e[k], g1) - max(s[k], g0)
                if ov > 0:
                    ow = int(o[k]) if o[k] >= 0 else -1 - lane  # untraced: one key per lane
                    acc[ow] = acc.get(ow, 0) + int(ov)
                k += 1
    keys = np.array(list(acc), dtype=np.int64)
    vals = np.array(list(acc.values()), dtype=np.int64)
    real = keys >= 0
    kp = np.where(real, keys, 0)
    tp = top[kp]
    return pd.DataFrame({
        "eid": np.where(real, a.eid[kp], -1),
        "kind": np.where(real, a.kind[kp], "untraced"),
        "name": np.where(real, a.name[kp], UNTRACED),
        "top_eid": np.where(real, a.eid[tp], -1),
        "top_kind": np.where(real, a.kind[tp], "untraced"),
        "top_name": np.where(real, a.name[tp], UNTRACED),
        "blame_ns": vals,
    })
