"""The Perfetto overlay: the original trace plus opgraph's findings, for ui.perfetto.dev.

``export_perfetto(G, path)`` writes every original event unchanged (through
:func:`opgraph.export.chrome.write_trace`) and adds (docs/perfetto.md):

* args on the events they concern: ``opgraph.critical`` / ``opgraph.bound_by`` /
  ``opgraph.critical_us`` (events owning critical-path segments), ``opgraph.idle_blame_us``
  (host events blamed for CPU-induced GPU idle) and, on device activities,
  ``opgraph.launch_delay_us`` / ``opgraph.queue_wait_us``;
* v1 flow events (``s``/``f``) along the critical path where it crosses threads or streams;
* counter tracks: busy streams per GPU, queued-but-unstarted activities per stream, and
  allocated / reserved memory per device (from the trace's ``[memory]`` events);
* ``M`` metadata naming the processes and threads that have no name yet.

Every piece is a pure function of the graph and the analysis results, vectorised with
numpy / pandas: per-event Python work is limited to building the dicts that are written.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

import networkx as nx
import numpy as np
import pandas as pd

from opgraph.gc_pause import gc_paused
from opgraph.graph.arrays import GraphArrays
from opgraph.analysis.critical_path import (
    CATEGORIES, BoundaryDAG, CriticalPathResult, boundary_dag, critical_path,
)
from opgraph.analysis.idle import IdleResult, idle_time
from opgraph.ingest.table import DEVICE_KINDS

#: Prefix of every arg opgraph adds to an original event.
ARG_PREFIX = "opgraph."
#: ``cat`` and ``name`` of the critical-path flow events (the same at both ends).
FLOW_CAT = "opgraph.critical_path"
FLOW_NAME = "critical path"
#: ``cat`` of the counter events.
COUNTER_CAT = "opgraph"
#: Flow end points are placed at least this far (ns) inside a slice's free interval when
#: the interval is long enough (a quarter of it otherwise), so that viewers that read
#: µs timestamps as float64 still bind them to the intended slice.
FLOW_MARGIN_NS = 1000

_GPU_LANE_KINDS = DEVICE_KINDS + ("cuda_sync",)


# --------------------------------------------------------------------------- result
@dataclass
class Overlay:
    """What the export adds to the original trace.

    ``add_args`` maps event ids to the args merged into them; the event lists hold Chrome
    trace events whose ``ts`` is in integer **ns** (``write_trace`` converts to µs).
    """

    add_args: dict[int, dict[str, Any]] = field(default_factory=dict)
    flows: list[dict[str, Any]] = field(default_factory=list)
    counters: list[dict[str, Any]] = field(default_factory=list)
    metadata: list[dict[str, Any]] = field(default_factory=list)
    windows: int = 0

    def extra_events(self) -> list[dict[str, Any]]:
        return self.metadata + self.counters + self.flows

    def summary(self) -> dict[str, Any]:
        n_crit = sum(1 for d in self.add_args.values() if d.get(ARG_PREFIX + "critical"))
        return {"windows": self.windows, "annotated_events": len(self.add_args), "critical_events": n_crit,
                "flows": len(self.flows) // 2, "counter_events": len(self.counters),
                "metadata_events": len(self.metadata)}


# --------------------------------------------------------------------------- lanes
def lane_codes(ev: pd.DataFrame) -> np.ndarray:
    """One int per (pid, tid) as written (int64; -1 when pid or tid is missing)."""
    pc = _codes(ev["pid"])
    tc = _codes(ev["tid"])
    n_t = int(tc.max()) + 2 if len(tc) else 1
    lane = pc.astype(np.int64) * n_t + tc
    lane[(pc < 0) | (tc < 0)] = -1
    return lane


def _codes(s: pd.Series) -> np.ndarray:
    if isinstance(s.dtype, pd.CategoricalDtype):
        return s.cat.codes.to_numpy().astype(np.int64)
    codes, _ = pd.factorize(s.to_numpy(dtype=object))
    return codes.astype(np.int64)


def object_column(ev: pd.DataFrame, col: str) -> np.ndarray:
    """Column ``col`` of the event table as an object array (values as written)."""
    return ev[col].to_numpy(dtype=object)


def _us(ns: np.ndarray | int) -> Any:
    return np.asarray(ns, dtype=np.int64) / 1000.0


# --------------------------------------------------------------------------- args
def critical_args(cp: Any, categories: Sequence[str] = CATEGORIES) -> dict[int, dict[str, Any]]:
    """``opgraph.critical`` (True), ``opgraph.bound_by`` (the category of the event's
    largest critical segment; between equal segments, the category with more critical time
    for the event) and ``opgraph.critical_us`` (its total time on the critical paths, µs) per
    event owning a critical-path segment.

    ``cp``: anything with ``windows`` holding ``path`` segments (a
    :class:`~opgraph.analysis.critical_path.CriticalPathResult`, or the cross-rank
    :class:`~opgraph.analysis.crossrank.CrossRankResult` with ``categories`` =
    :data:`~opgraph.analysis.crossrank.CROSS_CATEGORIES`)."""
    allsegs = [s for w in cp.windows for s in w.path]
    segs = [s for s in allsegs if s.eid is not None]
    waits = wait_args(allsegs)
    if not segs:
        return waits
    n = len(segs)
    df = pd.DataFrame({
        "eid": np.fromiter((s.eid for s in segs), dtype=np.int64, count=n),
        "cat": pd.Categorical([s.bound_by for s in segs], categories=list(categories)),
        "dur": np.fromiter((s.end_ns - s.start_ns for s in segs), dtype=np.int64, count=n),
    })
    longest = df.groupby(["eid", "cat"], sort=False, observed=True)["dur"].agg(["sum", "max"]).reset_index()
    longest = longest.sort_values(["eid", "max", "sum"], ascending=[True, False, False], kind="stable")
    best = longest.drop_duplicates("eid")
    total = df.groupby("eid", sort=False)["dur"].sum()
    tot = total.reindex(best["eid"]).to_numpy()
    k_crit, k_bound, k_us = ARG_PREFIX + "critical", ARG_PREFIX + "bound_by", ARG_PREFIX + "critical_us"
    out = {e: {k_crit: True, k_bound: c, k_us: t}
           for e, c, t in zip(best["eid"].tolist(), best["cat"].astype(str).tolist(), _us(tot).tolist())}
    for e, a in waits.items():
        out.setdefault(e, {}).update(a)
    return out


def wait_args(segs: Sequence[Any]) -> dict[int, dict[str, Any]]:
    """For critical-path stretches that lie between events (waits, launch latencies,
    untraced time): on the event the stretch leads to, ``opgraph.waited_before_us`` (their
    total, µs), ``opgraph.waited_before`` (the category of the longest) and
    ``opgraph.waited_on`` (the lane it happened on, and the event it came from)."""
    acc: dict[int, list[Any]] = {}
    for s in segs:
        if s.eid is None and s.to_eid is not None:
            acc.setdefault(int(s.to_eid), []).append(s)
    out: dict[int, dict[str, Any]] = {}
    for e, ss in acc.items():
        lw = max(ss, key=lambda x: x.dur_ns)
        on = lw.lane + (f" after event {lw.from_eid}" if lw.from_eid is not None else " (nothing recorded before)")
        out[e] = {ARG_PREFIX + "waited_before_us": sum(x.dur_ns for x in ss) / 1000.0,
                  ARG_PREFIX + "waited_before": lw.bound_by, ARG_PREFIX + "waited_on": on}
    return out


def idle_args(idle: IdleResult) -> dict[int, dict[str, Any]]:
    """``opgraph.idle_blame_us`` per host event (its exclusive, leaf-level share of the
    CPU-induced GPU idle), and on each device activity that ends a device-idle gap
    ``opgraph.idle_before_us`` (the gap) and ``opgraph.idle_cause_us`` (its split by
    cause, µs; docs/idle.md)."""
    from opgraph.analysis.idle import CAUSES

    key = ARG_PREFIX + "idle_blame_us"
    out: dict[int, dict[str, Any]] = {int(e): {key: ns / 1000.0} for e, ns in idle.per_eid_blame_ns.items() if ns > 0}
    g = idle.gaps
    if len(g):
        k_gap, k_cause = ARG_PREFIX + "idle_before_us", ARG_PREFIX + "idle_cause_us"
        causes = {c: (g[c].to_numpy(np.int64) / 1000.0).tolist() for c in CAUSES}
        for j, (e, g0, g1) in enumerate(zip(g["ender"].tolist(), g["start_ns"].tolist(), g["end_ns"].tolist())):
            d = out.setdefault(int(e), {})
            d[k_gap] = d.get(k_gap, 0.0) + (g1 - g0) / 1000.0
            cu = d.setdefault(k_cause, {})
            for c in CAUSES:
                if causes[c][j]:
                    cu[c] = cu.get(c, 0.0) + causes[c][j]
    return out


def launch_args(arr: GraphArrays) -> dict[int, dict[str, Any]]:
    """Per device activity with a launching call (``launch`` edge):
    ``opgraph.launch_delay_us`` = activity start − launch call start, and, when positive,
    ``opgraph.queue_wait_us`` = the part of that delay spent queued behind earlier work on
    the same stream: ``min(previous activity's end, start) − launch call start``."""
    ls, ld = arr.out_edges("launch")
    if not len(ld):
        return {}
    keep = ~pd.Series(ld).duplicated().to_numpy()
    ls, ld = ls[keep], ld[keep]
    launch_ts = arr.ts[ls]
    start = arr.ts[ld]
    delay = start - launch_ts
    prev_end = np.full(arr.n, np.iinfo(np.int64).min, dtype=np.int64)
    ss, sd = arr.out_edges("stream_seq")
    prev_end[sd] = arr.end[ss]
    pe = prev_end[ld]
    qw = np.where(pe > launch_ts, np.minimum(pe, start) - launch_ts, 0)
    qw = np.clip(qw, 0, np.maximum(delay, 0))
    k_d, k_q = ARG_PREFIX + "launch_delay_us", ARG_PREFIX + "queue_wait_us"
    eids = arr.eid[ld].tolist()
    out = {e: {k_d: d} for e, d in zip(eids, _us(delay).tolist())}
    has_q = np.flatnonzero(qw > 0)
    for e, q in zip(arr.eid[ld][has_q].tolist(), _us(qw[has_q]).tolist()):
        out[e][k_q] = q
    return out


def replay_args(G: nx.DiGraph) -> dict[int, dict[str, Any]]:
    """Per CUDA/HIP-graph replay activity mapped to its capture (``G.graph['graph_replay']``,
    docs/graph-replay.md): ``opgraph.captured_op`` (the op chain at capture, outermost
    first, joined by `` > ``), ``opgraph.capture_annotation`` (the innermost annotation,
    when any) and ``opgraph.capture_evidence``."""
    from opgraph.graph.replay import replay_map

    m, chains, anns = replay_map(G.graph)
    k_op, k_ann, k_ev = ARG_PREFIX + "captured_op", ARG_PREFIX + "capture_annotation", ARG_PREFIX + "capture_evidence"
    joined = [" > ".join(c) for c in chains]  # once per distinct chain
    out: dict[int, dict[str, Any]] = {}
    for e, c, a, evd in zip(m["eid"].tolist(), m["chain"].tolist(), m["annotation"].tolist(),
                            m["evidence"].tolist()):
        d = {k_op: joined[c], k_ev: evd}
        if a >= 0:
            d[k_ann] = anns[a]
        out[int(e)] = d
    return out


def merge_args(*parts: dict[int, dict[str, Any]]) -> dict[int, dict[str, Any]]:
    """Union of per-event arg dicts (later parts win on equal keys)."""
    out: dict[int, dict[str, Any]] = {}
    for p in parts:
        for e, d in p.items():
            cur = out.get(e)
            if cur is None:
                out[e] = dict(d)
            else:
                cur.update(d)
    return out


# --------------------------------------------------------------------------- flows
class SliceIndex:
    """The X events of a trace per (pid, tid) lane, sorted (lane, start, longest first),
    to find, inside a slice, the time not covered by any slice nested in it (where a
    viewer binds a flow end to that slice and not to a child)."""

    def __init__(self, ev: pd.DataFrame, lane: np.ndarray) -> None:
        ph = object_column(ev, "ph")
        ts = ev["ts_ns"].to_numpy()
        dur = ev["dur_ns"].to_numpy()
        has_ts = ev["has_ts"].to_numpy() if "has_ts" in ev else np.ones(len(ev), dtype=bool)
        x = np.flatnonzero((ph == "X") & has_ts & (dur >= 0) & (lane >= 0))
        o = x[np.lexsort((x, -dur[x], ts[x], lane[x]))]
        self.lane = lane[o]
        self.start = ts[o]
        self.end = ts[o] + dur[o]
        self.pos = np.full(len(ev), -1, dtype=np.int64)
        self.pos[o] = np.arange(len(o))
        lanes_u, first = np.unique(self.lane, return_index=True)
        self._lane_hi = dict(zip(lanes_u.tolist(), (np.append(first[1:], len(o))).tolist()))
        self._gaps: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def free_gaps(self, eid: int, a: int, b: int) -> tuple[np.ndarray, np.ndarray]:
        """Sub-intervals of ``[a, b]`` (slice ``eid``) not covered by slices nested in it."""
        got = self._gaps.get(eid)
        if got is not None:
            return got
        k = int(self.pos[eid])
        if k < 0:
            res = (np.array([a]), np.array([b]))
        else:
            hi_lane = self._lane_hi[int(self.lane[k])]
            hi = k + 1 + int(np.searchsorted(self.start[k + 1:hi_lane], b, side="left"))
            cs = self.start[k + 1:hi]
            if not len(cs):
                res = (np.array([a]), np.array([b]))
            else:
                ce = np.maximum.accumulate(np.minimum(self.end[k + 1:hi], b))
                g0 = np.concatenate(([a], ce))
                g1 = np.concatenate((cs, [b]))
                ok = g1 > g0
                res = (g0[ok], g1[ok])
        self._gaps[eid] = res
        return res

    def point(self, eid: int, a: int, b: int, t: int) -> int:
        """The time inside slice ``eid`` = ``[a, b]`` nearest ``t`` where the slice is the
        innermost one open on its lane (kept ``FLOW_MARGIN_NS`` inside that free interval
        when it is long enough)."""
        g0, g1 = self.free_gaps(eid, a, b)
        if not len(g0):
            return min(max(t, a), b)
        dist = np.where(t < g0, g0 - t, np.where(t > g1, t - g1, 0))
        j = int(np.argmin(dist))
        lo, hi = int(g0[j]), int(g1[j])
        m = min(FLOW_MARGIN_NS, (hi - lo) // 4)
        return min(max(t, lo + m), hi - m)


def critical_crossings(ev: pd.DataFrame, cp: Any) -> pd.DataFrame:
    """Consecutive critical-path segments whose events lie on different (pid, tid) lanes:
    columns ``src``, ``dst`` (event ids), ``t`` (the hand-over time, ns), ``bound_by`` (the
    category of the destination segment). One row per distinct (src, dst) pair."""
    def anchor(x: Any) -> int | None:  # a stretch between events belongs to the event it leads to
        return x.eid if x.eid is not None else (x.to_eid if x.to_eid is not None else x.from_eid)

    rows = [(anchor(a), anchor(b), a.end_ns, b.bound_by) for w in cp.windows for a, b in zip(w.path, w.path[1:])
            if anchor(a) != anchor(b) and anchor(a) is not None and anchor(b) is not None]
    df = pd.DataFrame(rows, columns=["src", "dst", "t", "bound_by"])
    if not len(df):
        return df
    lane = lane_codes(ev)
    df = df[lane[df["src"].to_numpy()] != lane[df["dst"].to_numpy()]]
    return df.drop_duplicates(["src", "dst"]).reset_index(drop=True)


def critical_flows(ev: pd.DataFrame, cp: Any, first_id: int,
                   index: SliceIndex | None = None) -> list[dict[str, Any]]:
    """Flow events (v1 ``s``/``f`` pairs, ``bp: "e"``) for every critical-path hand-over
    between lanes. The ``s`` is placed inside the source slice and the ``f`` inside the
    destination slice, each at the point nearest the hand-over where that slice is the
    innermost one open on its lane (viewers bind flow ends to the enclosing slice)."""
    cross = critical_crossings(ev, cp)
    if not len(cross):
        return []
    idx = index if index is not None else SliceIndex(ev, lane_codes(ev))
    ts = ev["ts_ns"].to_numpy()
    end = ts + np.maximum(ev["dur_ns"].to_numpy(), 0)
    pid = object_column(ev, "pid")
    tid = object_column(ev, "tid")
    out: list[dict[str, Any]] = []
    for i, (s, d, t, bb) in enumerate(zip(cross["src"].tolist(), cross["dst"].tolist(), cross["t"].tolist(),
                                          cross["bound_by"].tolist())):
        fid = first_id + i
        ps = idx.point(s, int(ts[s]), int(end[s]), t)
        pf = idx.point(d, int(ts[d]), int(end[d]), t)
        out.append({"ph": "s", "cat": FLOW_CAT, "name": FLOW_NAME, "id": fid, "pid": pid[s], "tid": tid[s],
                    "ts": ps})
        out.append({"ph": "f", "cat": FLOW_CAT, "name": FLOW_NAME, "id": fid, "pid": pid[d], "tid": tid[d],
                    "ts": pf, "bp": "e", "args": {"bound_by": bb}})
    return out


def next_flow_id(ev: pd.DataFrame) -> int:
    """The first flow id for opgraph's flows: above every (integer) flow id of the trace.
    (Viewers key v1 flows by id, ``cat`` and ``name``; opgraph's own ``cat`` keeps them
    apart from the trace's flows in any case, string ids included.)"""
    fid = ev["flow_id"].to_numpy() if "flow_id" in ev else np.empty(0, np.int64)
    top = int(fid.max()) if len(fid) else -1
    return max(top, 0) + 1


# --------------------------------------------------------------------------- counters
def activity_frame(arr: GraphArrays) -> pd.DataFrame:
    act = np.flatnonzero(arr.is_activity)
    return pd.DataFrame({"pos": act, "eid": arr.eid[act], "device": arr.device[act], "stream": arr.stream[act],
                         "ts": arr.ts[act], "end": arr.end[act]})


def device_pids(ev: pd.DataFrame, acts: pd.DataFrame) -> dict[int, Any]:
    """The pid a device's activities are written under (that of its first activity)."""
    if not len(acts):
        return {}
    first = acts.sort_values("eid", kind="stable").drop_duplicates("device")
    pid = object_column(ev, "pid")
    return dict(zip(first["device"].tolist(), pid[first["eid"].to_numpy()].tolist()))


def _step_counter(key: np.ndarray, t: np.ndarray, delta: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Running sum of ``delta`` per ``key`` over time: (key, time, value) at each change.
    The deltas of every key must sum to zero (so one global cumulative sum serves all)."""
    o = np.lexsort((t, key))
    k, tt = key[o], t[o]
    v = np.cumsum(delta[o])
    last = np.ones(len(o), dtype=bool)
    last[:-1] = (k[1:] != k[:-1]) | (tt[1:] != tt[:-1])
    k, tt, v = k[last], tt[last], v[last]
    change = np.ones(len(k), dtype=bool)
    change[1:] = (k[1:] != k[:-1]) | (v[1:] != v[:-1])
    return k[change], tt[change], v[change]


def _stream_unions(dev: np.ndarray, stv: np.ndarray, ts: np.ndarray, end: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Union of the activity intervals of each (device, stream): (device, start, end) of
    each merged interval."""
    o = np.lexsort((ts, stv, dev))
    d, s, a, b = dev[o], stv[o], ts[o], end[o]
    first = np.ones(len(o), dtype=bool)
    first[1:] = (d[1:] != d[:-1]) | (s[1:] != s[:-1])
    # running max of ends within each (device, stream) group
    grp = np.cumsum(first) - 1
    run_end = pd.Series(b).groupby(grp, sort=False).cummax().to_numpy()
    new_run = first.copy()
    new_run[1:] |= a[1:] > run_end[:-1]
    starts = np.flatnonzero(new_run)
    return d[starts], a[starts], np.maximum.reduceat(run_end, starts)


def gpu_busy_counters(arr: GraphArrays, ev: pd.DataFrame, acts: pd.DataFrame | None = None,
                      pids: dict[int, Any] | None = None) -> list[dict[str, Any]]:
    """Counter ``GPU <d> busy`` (series ``streams``): the number of streams of device ``d``
    running an activity (kernel, memcpy, memset) at each instant; 0 = the GPU is idle."""
    acts = activity_frame(arr) if acts is None else acts
    if not len(acts):
        return []
    pids = device_pids(ev, acts) if pids is None else pids
    u_dev, u_start, u_end = _stream_unions(acts["device"].to_numpy(), acts["stream"].to_numpy(),
                                           acts["ts"].to_numpy(), acts["end"].to_numpy())
    k, tt, v = _step_counter(np.concatenate([u_dev, u_dev]), np.concatenate([u_start, u_end]),
                             np.concatenate([np.ones(len(u_start), np.int64), -np.ones(len(u_end), np.int64)]))
    return [{"ph": "C", "cat": COUNTER_CAT, "name": f"GPU {d} busy", "pid": pids[d], "ts": ti,
             "args": {"streams": vi}} for d, ti, vi in zip(k.tolist(), tt.tolist(), v.tolist())]


def queued_counters(arr: GraphArrays, ev: pd.DataFrame, acts: pd.DataFrame | None = None,
                    pids: dict[int, Any] | None = None) -> list[dict[str, Any]]:
    """Counter ``GPU <d> stream <s>`` (series ``queued``): activities launched but not yet
    started on that stream, i.e. between their launch call's start and their own start."""
    ls, ld = arr.out_edges("launch")
    if not len(ld):
        return []
    keep = ~pd.Series(ld).duplicated().to_numpy()
    ls, ld = ls[keep], ld[keep]
    t0, t1 = arr.ts[ls], arr.ts[ld]
    ok = t1 > t0
    ls, ld, t0, t1 = ls[ok], ld[ok], t0[ok], t1[ok]
    if not len(ld):
        return []
    dev, stv = arr.device[ld], arr.stream[ld]
    acts = activity_frame(arr) if acts is None else acts
    pids = device_pids(ev, acts) if pids is None else pids
    key = (dev.astype(np.int64) + 1) * (1 << 32) + (stv.astype(np.int64) + 1)
    k, tt, v = _step_counter(np.concatenate([key, key]), np.concatenate([t0, t1]),
                             np.concatenate([np.ones(len(t0), np.int64), -np.ones(len(t1), np.int64)]))
    out: list[dict[str, Any]] = []
    keys, first = np.unique(k, return_index=True)
    bounds = np.append(first, len(k))
    for j, kk in enumerate(keys.tolist()):
        d, s = (kk >> 32) - 1, (kk & 0xFFFFFFFF) - 1
        nm, p = f"GPU {d} stream {s}", pids.get(d, d)
        lo, hi = int(bounds[j]), int(bounds[j + 1])
        out += [{"ph": "C", "cat": COUNTER_CAT, "name": nm, "pid": p, "ts": ti, "args": {"queued": vi}}
                for ti, vi in zip(tt[lo:hi].tolist(), v[lo:hi].tolist())]
    return out


def activity_counters(arr: GraphArrays, ev: pd.DataFrame, acts: pd.DataFrame | None = None,
                      pids: dict[int, Any] | None = None) -> list[dict[str, Any]]:
    """Counter ``GPU <d> activity`` (series ``compute``, ``comm``, ``memory``): how many
    activities of each kind run on device ``d`` at each instant (kernels matching
    :data:`~opgraph.graph.linking.COMM_KERNEL_PATTERN` are ``comm``, memcpy / memset are
    ``memory``, other kernels ``compute``; docs/overlap.md). Exposed communication is where
    ``comm`` > 0 while ``compute`` = 0."""
    import re

    from opgraph.graph.linking import COMM_KERNEL_PATTERN

    acts = activity_frame(arr) if acts is None else acts
    if not len(acts):
        return []
    pids = device_pids(ev, acts) if pids is None else pids
    pos = acts["pos"].to_numpy()
    kinds = arr.kind[pos]
    comm = arr.names_match(re.compile(COMM_KERNEL_PATTERN))[pos]  # as opgraph overlap classifies them
    mem = np.isin(kinds, ("memcpy", "memset"))
    cls = np.where(mem, 2, np.where(comm, 1, 0))
    dev = acts["device"].to_numpy(np.int64)
    a, b = acts["ts"].to_numpy(np.int64), acts["end"].to_numpy(np.int64)
    n = len(acts)
    t = np.concatenate([a, b])
    d = np.concatenate([dev, dev])
    delta = np.zeros((2 * n, 3), dtype=np.int64)
    delta[np.arange(n), cls] = 1
    delta[n + np.arange(n), cls] = -1
    o = np.lexsort((t, d))
    d, t, delta = d[o], t[o], delta[o]
    first = np.ones(len(d), dtype=bool)
    first[1:] = d[1:] != d[:-1]
    grp = np.cumsum(first) - 1
    run = pd.DataFrame(delta).groupby(grp, sort=False).cumsum().to_numpy()
    last = np.ones(len(d), dtype=bool)
    last[:-1] = (d[1:] != d[:-1]) | (t[1:] != t[:-1])
    d, t, run = d[last], t[last], run[last]
    change = np.ones(len(d), dtype=bool)
    change[1:] = (d[1:] != d[:-1]) | (run[1:] != run[:-1]).any(axis=1)
    d, t, run = d[change], t[change], run[change]
    return [{"ph": "C", "cat": COUNTER_CAT, "name": f"GPU {di} activity", "pid": pids[di], "ts": ti,
             "args": {"compute": int(r[0]), "comm": int(r[1]), "memory": int(r[2])}}
            for di, ti, r in zip(d.tolist(), t.tolist(), run.tolist())]


def copy_args(G: nx.DiGraph) -> dict[int, dict[str, Any]]:
    """Per memcpy / memset with a known size: ``opgraph.bytes`` and ``opgraph.gbps`` (over
    the exact duration; docs/memory-bw.md)."""
    from opgraph.analysis.memory_bw import memory_bandwidth

    c = memory_bandwidth(G).copies
    if not len(c):
        return {}
    known = c[c["bytes"].notna() & c["gbps"].notna()]
    return {int(e): {ARG_PREFIX + "bytes": int(bts), ARG_PREFIX + "gbps": float(g)}
            for e, bts, g in zip(known["eid"].tolist(), known["bytes"].tolist(), known["gbps"].tolist())}


def memory_counters(ev: pd.DataFrame, device_pids: dict[int, Any] | None = None) -> list[dict[str, Any]]:
    """Counter ``<type> <d> memory`` (``CUDA 0 memory``, ``CPU -1 memory``; series
    ``allocated`` and, where the trace has ``Total Reserved``, ``reserved``; bytes) from the
    profiler's ``[memory]`` events (:mod:`opgraph.analysis.memory_timeline`): the level after
    the last event at each time, written where it changes. On the device's process when its
    activities have one (``device_pids``), else on the process of its memory events."""
    from opgraph.analysis.memory_timeline import device_type_name, memory_events

    m = memory_events(ev).frame
    if not len(m):
        return []
    g, ts = m["group"].to_numpy(), m["ts_ns"].to_numpy()
    last = np.ones(len(m), dtype=bool)
    last[:-1] = (g[1:] != g[:-1]) | (ts[1:] != ts[:-1])
    alloc = m["allocated"].to_numpy()
    has_r = m["has_reserved"].to_numpy()
    res = np.where(has_r, m["trace_reserved"].to_numpy(), -1)
    idx = np.flatnonzero(last)
    change = np.ones(len(idx), dtype=bool)
    change[1:] = (g[idx][1:] != g[idx][:-1]) | (alloc[idx][1:] != alloc[idx][:-1]) | (res[idx][1:] != res[idx][:-1])
    idx = idx[change]
    first = np.flatnonzero(np.r_[True, g[1:] != g[:-1]])
    dtypes, devs, pids = m["device_type"].to_numpy(), m["device"].to_numpy(), m["pid"].to_numpy()
    names, pid_of = {}, {}
    for gi, r in enumerate(first.tolist()):
        d = int(devs[r])
        names[gi] = f"{device_type_name(int(dtypes[r]))} {d} memory"
        pid_of[gi] = (device_pids or {}).get(d, pids[r]) if int(dtypes[r]) != 0 else pids[r]
    out: list[dict[str, Any]] = []
    for gi, t, a, r in zip(g[idx].tolist(), ts[idx].tolist(), alloc[idx].tolist(), res[idx].tolist()):
        args = {"allocated": a, "reserved": r} if r >= 0 else {"allocated": a}
        out.append({"ph": "C", "cat": COUNTER_CAT, "name": names[gi], "pid": pid_of[gi], "ts": t, "args": args})
    return out


# --------------------------------------------------------------------------- metadata
def metadata_events(ev: pd.DataFrame, counter_pids: Iterable[Any] = ()) -> list[dict[str, Any]]:
    """``process_name`` / ``thread_name`` metadata for the processes and threads of the
    trace's slices (and for the processes of ``counter_pids``) that have none yet. GPU
    lanes are named ``GPU <d> stream <s>`` (their process ``GPU <d>``); CPU threads
    ``thread <tid>``, processes ``process <pid>``. Names the trace already has are never
    repeated or changed."""
    ph = object_column(ev, "ph")
    name = object_column(ev, "name")
    pid = object_column(ev, "pid")
    tid = object_column(ev, "tid")
    is_m = ph == "M"
    pm = np.flatnonzero(is_m & (name == "process_name"))
    tm = np.flatnonzero(is_m & (name == "thread_name"))
    have_p = {lane_key(p) for p in pid[pm].tolist()}
    have_t = {(lane_key(p), lane_key(t)) for p, t in zip(pid[tm].tolist(), tid[tm].tolist())}
    lane = lane_codes(ev)
    x = np.flatnonzero(np.isin(ph, ("X", "B", "E")) & (lane >= 0))
    if not len(x) and not counter_pids:
        return []
    # one row per lane: its first slice, and its first device event (a GPU lane) if any
    lanes_u, first = np.unique(lane[x], return_index=True)
    first_row = x[first]
    dev_rows = x[ev["kind"].isin(_GPU_LANE_KINDS).to_numpy()[x]]
    g_lanes, g_first = np.unique(lane[dev_rows], return_index=True)
    gpu_row = dict(zip(g_lanes.tolist(), dev_rows[g_first].tolist()))
    device = ev["device"].to_numpy()
    stream = ev["stream"].to_numpy()
    out: list[dict[str, Any]] = []
    pid_gpu: dict[Any, list[bool]] = {}
    pid_dev: dict[Any, int] = {}
    raw_pid: dict[Any, Any] = {}
    for ln, r in zip(lanes_u.tolist(), first_row.tolist()):
        p, t = lane_key(pid[r]), lane_key(tid[r])
        raw_pid.setdefault(p, pid[r])
        g = gpu_row.get(ln)
        pid_gpu.setdefault(p, []).append(g is not None)
        if g is not None:
            d, st = int(device[g]), int(stream[g])
            pid_dev.setdefault(p, d)
        if (p, t) in have_t:
            continue
        if g is not None:
            label = f"GPU {d} stream {st}" if st >= 0 else f"GPU {d} sync"
        else:
            label = f"thread {t}" if isinstance(t, int) else str(t)
        out.append({"ph": "M", "name": "thread_name", "pid": pid[r], "tid": tid[r], "args": {"name": label}})
    for p in counter_pids:
        raw_pid.setdefault(lane_key(p), p)
    for p, raw in raw_pid.items():
        if p in have_p:
            continue
        gl = pid_gpu.get(p, [])
        if gl and all(gl) and p in pid_dev:
            label = f"GPU {pid_dev[p]}"
        else:
            label = f"process {p}" if isinstance(p, int) else str(p)
        out.append({"ph": "M", "name": "process_name", "pid": raw, "args": {"name": label}})
    return out


def lane_key(v: Any) -> Any:
    """Hashable identity of a pid/tid value (ints and their digit strings are the same)."""
    if isinstance(v, str) and v.isdigit():
        return int(v)
    if isinstance(v, (np.integer,)):
        return int(v)
    return v


# --------------------------------------------------------------------------- assembly
def build_overlay(G: nx.DiGraph, window: str | None = None, *, arr: GraphArrays | None = None,
                  dag: BoundaryDAG | None = None, cp: CriticalPathResult | None = None,
                  idle: IdleResult | None = None) -> Overlay:
    """Everything :func:`export_perfetto` adds, without writing it.

    ``window`` is passed to :func:`opgraph.analysis.critical_path.critical_path` (``None``:
    one window per ``ProfilerStep``; ``"all"``; or a regex). Precomputed ``arr``, ``dag``,
    ``cp`` and ``idle`` are used when given.
    """
    ev: pd.DataFrame = G.graph["events"]
    if arr is None:
        arr = dag.arr if dag is not None else GraphArrays.from_graph(G)
    if cp is None:
        cp = critical_path(G, window=window, dag=dag if dag is not None else boundary_dag(G, arr))
    if idle is None:
        idle = idle_time(G, arr=arr)
    lane = lane_codes(ev)
    ov = Overlay(windows=len(cp.windows))
    ov.add_args = merge_args(launch_args(arr), replay_args(G), copy_args(G), idle_args(idle), critical_args(cp))
    ov.flows = critical_flows(ev, cp, next_flow_id(ev), SliceIndex(ev, lane))
    acts = activity_frame(arr)  # once for every counter family
    dev_pids = device_pids(ev, acts)
    mem = memory_counters(ev, dev_pids)
    ov.counters = (gpu_busy_counters(arr, ev, acts, dev_pids) + activity_counters(arr, ev, acts, dev_pids)
                   + queued_counters(arr, ev, acts, dev_pids) + mem)
    counter_pids = list(dev_pids.values()) + list(dict.fromkeys(c["pid"] for c in mem)) if ov.counters else ()
    ov.metadata = metadata_events(ev, counter_pids)
    return ov


def export_perfetto(G: nx.DiGraph, path: str | Path, window: str | None = None,
                    inputs: tuple[str | Path, ...] = ()) -> dict[str, Any]:
    """Write the Perfetto overlay of ``G`` to ``path`` (``.json`` or ``.json.gz``; never over
    one of ``inputs``).

    Returns a summary: the output path, the number of original events and the counts of
    what was added (see :meth:`Overlay.summary`).
    """
    from opgraph.export.chrome import write_trace

    if not isinstance(G.graph.get("events"), pd.DataFrame):
        raise ValueError("the graph has no source event table (G.graph['events']): "
                         "only graphs built by opgraph can be exported as traces")
    with gc_paused():  # hundreds of thousands of small acyclic dicts: keep the collector out
        ov = build_overlay(G, window)
        write_trace(G, path, add_args=ov.add_args, extra_events=ov.extra_events(), inputs=inputs)
    return {"path": str(path), "events": int(len(G.graph["events"])), **ov.summary()}
