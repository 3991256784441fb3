"""Critical path of each step on the event-boundary DAG.

Model (docs/critical-path.md)
-----------------------------
Every host event and device activity has a start and an end boundary. Edges between
boundaries carry the time that elapses along them and a category:

* spans of leaf host events (``cpu``) and of device activities (``gpu_compute``,
  ``gpu_comm`` for collective kernels, ``gpu_memory`` for memcpy/memset);
* per-thread program order: parent start -> first child start, child end -> next child
  start, last child end -> parent end (``cpu``: a gap between two children belongs to their
  parent); between top-level events of a thread (``other``);
* launch: the launch call's start -> the activity's start (``launch_overhead``);
* stream order: previous activity end -> next activity start (``kernel_gap``);
* event waits across streams (``kernel_gap``), other flows (``other``);
* sync: awaited activity end -> blocking call end (``sync_wait``), and for a blocking copy
  its own copy's end -> the call's end.

Each boundary's *critical predecessor* is the dependency that arrived last (latest time,
ties broken by edge kind). With a window source joined to every boundary at the window's
start, every source-to-boundary path has the same elapsed length, so the longest path is
exactly the chain of last-arriving dependencies and its length equals the window span.
It is computed once for the whole graph (one sort of the boundary edges); each window then
walks back from its last end, which is linear in the window's size.

A blocking call whose awaited GPU work ends inside it is left through the sync edge, so
its waiting time is attributed to the GPU work that bounded it, never to CPU work.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import networkx as nx
import numpy as np
import pandas as pd

from opgraph.analysis.arrays import COMM_KERNEL_PATTERN, GraphArrays
from opgraph.analysis.info import find_steps
from opgraph.graph.build import _pageable_dtoh
from opgraph.graph.linking import BLOCKING_COPY_RE

CATEGORIES = ("cpu", "gpu_compute", "gpu_comm", "gpu_memory", "launch_overhead", "kernel_gap",
              "sync_wait", "other")
_CAT = {c: i for i, c in enumerate(CATEGORIES)}


@dataclass(frozen=True)
class PathSegment:
    """One stretch of the critical path: ``[start_ns, end_ns)`` spent in ``bound_by``,
    attributed to event ``eid``."""

    eid: int
    kind: str
    name: str
    start_ns: int
    end_ns: int
    bound_by: str

    @property
    def dur_ns(self) -> int:
        return self.end_ns - self.start_ns

    def to_dict(self) -> dict[str, Any]:
        return {"eid": self.eid, "kind": self.kind, "name": self.name, "start_us": self.start_ns / 1000.0,
                "end_us": self.end_ns / 1000.0, "bound_by": self.bound_by}


@dataclass
class WindowPath:
    """The critical path of one window (a step, a matched range, or the whole trace)."""

    name: str
    eid: int | None
    start_ns: int
    end_ns: int
    path: list[PathSegment] = field(default_factory=list)

    @property
    def span_ns(self) -> int:
        """Window start to the last end of anything in it, CPU or GPU (ns)."""
        return self.end_ns - self.start_ns

    @property
    def length_ns(self) -> int:
        return int(sum(s.dur_ns for s in self.path))

    @property
    def breakdown_ns(self) -> dict[str, int]:
        out = {c: 0 for c in CATEGORIES}
        for s in self.path:
            out[s.bound_by] += s.dur_ns
        return out

    @property
    def breakdown_pct(self) -> dict[str, float]:
        total = self.length_ns
        b = self.breakdown_ns
        return {c: (100.0 * v / total if total else 0.0) for c, v in b.items()}

    @property
    def bound(self) -> str:
        """The category with the largest share of the path."""
        b = self.breakdown_ns
        return max(b, key=lambda c: b[c]) if self.path else "other"

    def top(self, device: bool, n: int = 10) -> list[dict[str, Any]]:
        """Events with the most time on the path (device activities or host events)."""
        acc: dict[tuple[str, str], int] = {}
        dev_kinds = ("kernel", "memcpy", "memset")
        for s in self.path:
            if (s.kind in dev_kinds) == device:
                acc[(s.kind, s.name)] = acc.get((s.kind, s.name), 0) + s.dur_ns
        rows = sorted(acc.items(), key=lambda kv: -kv[1])[:n]
        total = self.length_ns or 1
        return [{"kind": k, "name": nm, "time_us": v / 1000.0, "pct": 100.0 * v / total} for (k, nm), v in rows]

    def to_dict(self, with_path: bool = True) -> dict[str, Any]:
        d: dict[str, Any] = {
            "name": self.name, "eid": self.eid,
            "start_us": self.start_ns / 1000.0, "end_us": self.end_ns / 1000.0,
            "span_us": self.span_ns / 1000.0, "length_us": self.length_ns / 1000.0,
            "bound": self.bound,
            "breakdown_us": {k: v / 1000.0 for k, v in self.breakdown_ns.items()},
            "breakdown_pct": self.breakdown_pct,
            "top_ops": self.top(device=False), "top_kernels": self.top(device=True),
        }
        if with_path:
            d["path"] = [s.to_dict() for s in self.path]
        return d


def summarize_windows(windows: list[Any], categories: tuple[str, ...]) -> dict[str, Any]:
    """Totals over windows (anything with ``breakdown_ns``, ``length_ns``, ``span_ns``):
    span and path length (µs), the breakdown per category (µs and % of the length) and the
    category that bounds the whole."""
    tot = {c: 0 for c in categories}
    length = span = 0
    for w in windows:
        for c, v in w.breakdown_ns.items():
            tot[c] += v
        length += w.length_ns
        span += w.span_ns
    return {"windows": len(windows), "span_us": span / 1000.0, "length_us": length / 1000.0,
            "breakdown_us": {c: v / 1000.0 for c, v in tot.items()},
            "breakdown_pct": {c: (100.0 * v / length if length else 0.0) for c, v in tot.items()},
            "bound": max(tot, key=lambda c: tot[c]) if length else "other"}


@dataclass
class CriticalPathResult:
    """Critical paths of all windows of a graph."""

    windows: list[WindowPath]
    window_mode: str

    def summary(self) -> dict[str, Any]:
        return summarize_windows(self.windows, CATEGORIES)

    def to_dict(self, with_path: bool = True) -> dict[str, Any]:
        return {"window_mode": self.window_mode, "summary": self.summary(),
                "windows": [w.to_dict(with_path) for w in self.windows]}


@dataclass
class BoundaryDAG:
    """The event-boundary DAG with each boundary's critical predecessor.

    Boundary ``2p`` is the start and ``2p+1`` the end of node position ``p``. ``t`` holds
    their times (ns). ``cpred[b]`` is the boundary the critical edge into ``b`` comes from
    (-1: none), with that edge's category code ``ccat[b]`` and owner position ``cown[b]``.
    """

    arr: GraphArrays
    t: np.ndarray
    cpred: np.ndarray
    ccat: np.ndarray
    cown: np.ndarray
    launch_time: np.ndarray  # per node position: launching call's start, else own start


#: Roles of boundary edges (the dependency model shared with :mod:`opgraph.predict`).
ROLES = ("leaf", "first", "gap", "last", "top", "act", "stream", "launch", "blockcopy", "sync",
         "evwait", "flow", "queue", "handoff")
R = {r: i for i, r in enumerate(ROLES)}
#: Tie priority of each role when picking the last-arriving edge (as in the critical path).
_PRIO = {"leaf": 3, "first": 3, "gap": 3, "last": 3, "top": 3, "act": 3, "stream": 2, "blockcopy": 2,
         "sync": 2, "evwait": 2, "launch": 1, "flow": 0, "queue": 2, "handoff": 2}

def boundary_edges(a: GraphArrays) -> tuple[np.ndarray, ...]:
    """Boundary edges (src, dst, role, own) of the critical-path model, plus parent per node."""
    n = a.n
    is_host = a.is_host
    is_act = a.is_activity
    src_l, dst_l, role_l, own_l = [], [], [], []

    def add(s: np.ndarray, d: np.ndarray, role: np.ndarray | int, own: np.ndarray) -> None:
        if len(s):
            src_l.append(np.asarray(s, dtype=np.int64))
            dst_l.append(np.asarray(d, dtype=np.int64))
            role_l.append(np.broadcast_to(np.asarray(role, dtype=np.int8), np.shape(s)))
            own_l.append(np.asarray(own, dtype=np.int64))

    ns_, nd_ = a.out_edges("nest")
    hm = is_host[ns_] & is_host[nd_]
    ns_, nd_ = ns_[hm], nd_[hm]
    parent = np.full(n, -1, dtype=np.int64)
    parent[nd_] = ns_
    has_child = np.zeros(n, dtype=bool)
    has_child[ns_] = True
    hs, hd = a.out_edges("host_seq")
    has_prev = np.zeros(n, dtype=bool)
    has_prev[hd] = True
    has_next = np.zeros(n, dtype=bool)
    has_next[hs] = True
    leaf = np.flatnonzero(is_host & ~has_child)
    add(2 * leaf, 2 * leaf + 1, R["leaf"], leaf)
    first = nd_[~has_prev[nd_]]
    add(2 * parent[first], 2 * first, R["first"], parent[first])
    last = nd_[~has_next[nd_]]
    add(2 * last + 1, 2 * parent[last] + 1, R["last"], parent[last])
    par = parent[hs]
    add(2 * hs + 1, 2 * hd, np.where(par >= 0, R["gap"], R["top"]), np.where(par >= 0, par, hd))
    act = np.flatnonzero(is_act)
    add(2 * act, 2 * act + 1, R["act"], act)
    ss, sd = a.out_edges("stream_seq")
    add(2 * ss + 1, 2 * sd, R["stream"], sd)
    ls, ld = a.out_edges("launch")
    add(2 * ls, 2 * ld, R["launch"], ld)
    blocking = np.fromiter((bool(BLOCKING_COPY_RE.match(x)) if isinstance(x, str) else False for x in a.name[ls]),
                           dtype=bool, count=len(ls)) | _pageable_dtoh(a.name[ld])
    add(2 * ld[blocking] + 1, 2 * ls[blocking] + 1, R["blockcopy"], ls[blocking])
    ys, yd = a.out_edges("sync")
    add(2 * ys + 1, 2 * yd + 1, R["sync"], yd)
    ws_, wd_ = a.out_edges("event_wait")
    add(2 * ws_ + 1, 2 * wd_, R["evwait"], wd_)
    fs, fd = a.out_edges("flow")
    fm = (is_host[fs] | is_act[fs]) & (is_host[fd] | is_act[fd])
    add(2 * fs[fm], 2 * fd[fm], R["flow"], fd[fm])
    if src_l:
        return (np.concatenate(src_l), np.concatenate(dst_l), np.concatenate(role_l).astype(np.int8),
                np.concatenate(own_l), parent)
    e = np.empty(0, np.int64)
    return e, e, np.empty(0, np.int8), e, parent


#: Critical-path category of each role (activity spans are categorised per activity).
_ROLE_CAT = {"leaf": "cpu", "first": "cpu", "gap": "cpu", "last": "cpu", "top": "other", "act": "gpu_compute",
             "stream": "kernel_gap", "launch": "launch_overhead", "blockcopy": "sync_wait", "sync": "sync_wait",
             "evwait": "kernel_gap", "flow": "other", "queue": "sync_wait", "handoff": "sync_wait"}


def _categories(a: GraphArrays, is_act: np.ndarray, codes: np.ndarray, uniq: np.ndarray, role: np.ndarray,
                own: np.ndarray) -> np.ndarray:
    """The critical-path category code (:data:`opgraph.analysis.critical_path.CATEGORIES`)
    of every edge, as :func:`opgraph.analysis.critical_path.boundary_dag` assigns it."""
    import re

    ci = {c: i for i, c in enumerate(CATEGORIES)}
    rc = np.array([ci[_ROLE_CAT[r]] for r in ROLES], dtype=np.int8)
    cat = rc[role]
    rx = re.compile(COMM_KERNEL_PATTERN)
    comm_u = np.append(np.fromiter((isinstance(u, str) and bool(rx.search(u)) for u in uniq.tolist()),
                                   dtype=bool, count=len(uniq)), False)
    act_cat = np.full(a.n, ci["gpu_compute"], dtype=np.int8)
    act_cat[np.isin(a.kind, ("memcpy", "memset"))] = ci["gpu_memory"]
    act_cat[(a.kind == "kernel") & comm_u[codes]] = ci["gpu_comm"]
    m = role == R["act"]
    cat[m] = act_cat[own[m]]
    return cat


@dataclass
class ExtraEdges:
    """Boundary edges added to the model by a caller (e.g. cross-rank ``collective`` edges of
    :mod:`opgraph.analysis.crossrank`): boundaries ``src -> dst`` (``2p`` start, ``2p+1`` end
    of node position ``p``), each with a category code (index into :data:`CATEGORIES`), an
    owner position and a tie priority (higher wins among equal arrival times; the model's
    own edges use 0..3)."""

    src: np.ndarray
    dst: np.ndarray
    cat: np.ndarray
    own: np.ndarray
    prio: np.ndarray


def boundary_dag(G: nx.DiGraph, arr: GraphArrays | None = None, extra: ExtraEdges | None = None) -> BoundaryDAG:
    """Build the boundary DAG of ``G`` and pick every boundary's critical predecessor.

    ``extra`` edges join the model's own edges before the pick (the single-rank analysis
    passes none)."""
    a = arr if arr is not None else GraphArrays.from_graph(G)
    n = a.n
    t = np.empty(2 * n, dtype=np.int64)
    t[0::2] = a.ts
    t[1::2] = a.end
    src, dst, role, own, _parent = boundary_edges(a)
    codes, uniq = pd.factorize(a.name)
    cat = _categories(a, a.is_activity, codes.astype(np.int64), np.asarray(uniq, dtype=object), role, own)
    prio = np.array([_PRIO[r] for r in ROLES], dtype=np.int8)[role]
    if extra is not None and len(extra.src):
        src = np.concatenate([src, np.asarray(extra.src, np.int64)])
        dst = np.concatenate([dst, np.asarray(extra.dst, np.int64)])
        cat = np.concatenate([cat, np.asarray(extra.cat, np.int8)])
        own = np.concatenate([own, np.asarray(extra.own, np.int64)])
        prio = np.concatenate([prio, np.asarray(extra.prio, np.int8)])
    arrive = np.minimum(t[src], t[dst])
    o = np.lexsort((prio, arrive, dst))
    last_of = np.ones(len(o), dtype=bool)
    last_of[:-1] = dst[o][1:] != dst[o][:-1]
    pick = o[last_of]
    cpred = np.full(2 * n, -1, dtype=np.int64)
    ccat = np.full(2 * n, _CAT["other"], dtype=np.int8)
    cown = np.arange(2 * n, dtype=np.int64) // 2
    cpred[dst[pick]] = src[pick]
    ccat[dst[pick]] = cat[pick]
    cown[dst[pick]] = own[pick]
    ls, ld = a.out_edges("launch")
    launch_time = a.ts.copy()
    launch_time[ld] = a.ts[ls]
    return BoundaryDAG(a, t, cpred, ccat, cown, launch_time)


def _windows(G: nx.DiGraph, a: GraphArrays, window: str | None) -> tuple[list[tuple[str, int | None, int, int]], str]:
    """(name, eid, start_ns, end_ns of the defining range) per window, and the mode."""
    if window == "all":
        return [("all", None, int(a.ts.min()), int(a.end.max()))] if a.n else [], "all"
    if window:
        rx = re.compile(window)
        rows = []
        # host ranges first; GPU annotations only when no host range matches
        for kinds in (("annotation", "cpu_op", "python"), ("gpu_annotation",)):
            for p in np.flatnonzero(a.is_kind(*kinds)):
                nm = a.name[p]
                if isinstance(nm, str) and rx.search(nm):
                    rows.append((nm, int(a.eid[p]), int(a.ts[p]), int(a.end[p])))
            if rows:
                break
        rows.sort(key=lambda r: (r[2], r[1]))
        return rows, f"regex:{window}"
    steps = find_steps(G)
    if len(steps):
        return [(r.name, int(r.eid), int(r.ts), int(r.end)) for r in steps.itertuples()], "steps"
    return ([("all", None, int(a.ts.min()), int(a.end.max()))] if a.n else []), "all"


def walk_back(d: BoundaryDAG, b: int, ws: int) -> list[list[int]]:
    """The critical path into boundary ``b``, back to time ``ws`` (ns), in time order.

    Follows critical predecessors from ``b`` until one lies at or before ``ws``; each step's
    time is clamped to its successor's, so the segments tile ``[ws, t(b)]`` exactly.
    Returns ``[owner position, category code, t0, t1]`` per segment (consecutive steps of
    one owner and category merged); time before the first boundary with no predecessor is
    ``other``."""
    t, cpred, ccat, cown = d.t, d.cpred, d.ccat, d.cown
    segs: list[list[int]] = []  # [owner, cat, t0, t1], built backwards
    tb = int(t[b])
    guard = len(t) + 1
    while guard:
        guard -= 1
        u = int(cpred[b])
        c = int(ccat[b])
        ow = int(cown[b])
        if u < 0:
            if tb > ws:
                segs.append([b // 2, _CAT["other"], ws, tb])
            break
        tu = min(int(t[u]), tb)
        if tu <= ws:
            if tb > ws:
                segs.append([ow, c, ws, tb])
            break
        if tb > tu:
            if segs and segs[-1][0] == ow and segs[-1][1] == c and segs[-1][2] == tb:
                segs[-1][2] = tu
            else:
                segs.append([ow, c, tu, tb])
        b, tb = u, tu
    segs.reverse()
    return segs


def critical_path(G: nx.DiGraph, window: str | None = None, dag: BoundaryDAG | None = None) -> CriticalPathResult:
    """Critical path per window.

    Parameters
    ----------
    G : networkx.DiGraph
        A graph built by :func:`opgraph.graph.build_graph`.
    window : str, optional
        ``None``: each ``ProfilerStep#N`` (host, else GPU annotation), or the whole trace when
        there are none; ``"all"``: the whole trace; otherwise a regex matched against
        annotation / op names, one window per match.
    dag : BoundaryDAG, optional
        A precomputed boundary DAG of ``G`` (to reuse across calls).

    Returns
    -------
    CriticalPathResult
        One :class:`WindowPath` per window; times in ns (``to_dict`` gives µs).
    """
    d = dag if dag is not None else boundary_dag(G)
    a = d.arr
    wins, mode = _windows(G, a, window)
    results: list[WindowPath] = []
    if not wins:
        return CriticalPathResult(results, mode)
    members = np.flatnonzero(a.is_host | a.is_activity)
    key = np.where(a.is_activity[members], d.launch_time[members], a.ts[members])
    o = np.argsort(key, kind="stable")
    mem_sorted, key_sorted = members[o], key[o]
    kinds, names, eids = a.kind, a.name, a.eid
    for wname, weid, ws, we in wins:
        lo = int(np.searchsorted(key_sorted, ws, side="left"))
        hi = int(np.searchsorted(key_sorted, we, side="left"))
        if hi <= lo:
            results.append(WindowPath(wname, weid, ws, ws))
            continue
        sel = mem_sorted[lo:hi]
        ends = a.end[sel]
        sink_p = int(sel[int(np.argmax(ends))])
        wend = int(a.end[sink_p])
        segs = walk_back(d, 2 * sink_p + 1, ws)
        path = [PathSegment(int(eids[ow]), str(kinds[ow]), str(names[ow]), t0, t1, CATEGORIES[c])
                for ow, c, t0, t1 in segs]
        results.append(WindowPath(wname, weid, ws, wend, path))
    return CriticalPathResult(results, mode)
