"""Replay of a typed graph on the event-boundary DAG (docs/predict.md).

The dependency model is the critical-path model's (:mod:`opgraph.analysis.critical_path`):
every host event and device activity has a start boundary ``S`` and an end boundary
``E``; the graph's edges become boundary edges:

==========  =================================  =========================================
role        edge                               lag taken from the trace
==========  =================================  =========================================
leaf        ``S -> E`` of a leaf host event     its duration (a blocking call: its own
                                               time, see below)
first       ``S(parent) -> S(first child)``     the parent's time before its first child
gap         ``E(child) -> S(next child)``       the gap between two children (parent's)
last        ``E(last child) -> E(parent)``      the parent's tail after its last child
top         ``E -> S`` of top-level neighbours  untraced time between top-level events
act         ``S -> E`` of a device activity     its duration
stream      ``E(prev) -> S(act)`` same stream   the kernel gap (when queued)
launch      ``S(call) -> S(act)``               the launch latency (when the stream was free)
blockcopy   ``E(own copy) -> E(call)``          the blocking copy call's return latency
sync        ``E(awaited) -> E(blocking call)``  the blocking call's return latency
evwait      ``E(before record) -> S(after)``    the cross-stream gap
flow        ``S -> S`` (fwd->bwd and others)    the measured offset
queue       ``E(act) -> E(launch call)``        inferred: a full launch queue's wake-up
handoff_*   ``wait_from -> S``, ``E -> resume``  inferred by the graph builder: a thread
            across threads                     waiting for another thread's burst of work
evwait      (inferred) ``E -> S`` across        an activity that waited for another
            streams                            stream's activity without cuda_sync events
==========  =================================  =========================================

The last three are dependencies the graph does not record but the trace shows
(hand-offs and stream waits are graph edges inferred by the builder,
:mod:`opgraph.graph.threads` and :mod:`opgraph.graph.streams`, and part of every model;
:func:`_queue_edges` is added here for the simulation only; docs/predict.md gives the
evidence); ``build_model(..., infer=False)`` leaves the queue edges out.

CPU threads and GPU streams are the resources: program order (nest + host_seq) chains a
thread's boundaries and stream order chains a stream's, so one max-plus pass in
topological order is the whole simulation: each boundary happens at the latest
``t(pred) + lag`` over its incoming edges (boundaries with no incoming edge keep their
measured time).

**Which lag is measured.** For each boundary, the edge that *arrived last* in the trace
(the critical predecessor, chosen exactly as the critical path chooses it) carries the
measured lag ``t(dst) - t(src)``: the kernel gap of a queued kernel, the launch latency
of a kernel whose stream was free, the return latency of a blocking call that waited. The
other edges did not bound anything in the trace, so their own lag is only known to be at
most the measured difference; they get ``min(measured difference, typical lag)`` where
the typical lag is the trace's median binding lag of that role (launch latency, kernel
gap, return latency; 0 for program order and flows). A blocking call's ``S -> E`` edge
is its own time when it did not wait, and ``min(duration, return latency)`` when it
did: it ends no earlier than the work it syncs with plus its measured return latency.

So the unmodified graph replays the trace exactly (inferred edges that the trace
contradicts or that would close a cycle are dropped, and counted), and a what-if changes
only the lags it touches.
"""

from __future__ import annotations

import array
import time
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from opgraph.model.arrays import GraphArrays
from opgraph.model.trace_graph import TraceGraph

from opgraph.model.cycles import kahn_order
from opgraph.analysis.critical_path.boundary_edges import PRIORITY, ROLES, R, BoundaryEdges, boundary_edges, edge_categories
from opgraph.analysis.critical_path.engine import (
    boundary_dag, boundary_times, dag_from_edges, pick_critical, pick_critical_more,
)

if TYPE_CHECKING:
    import networkx as nx

#: A launch call is blocked by a full launch queue when it takes this long (ns) and 10x the
#: median of its API, with at least QUEUE_MIN_PENDING activities of its device in flight.
QUEUE_MIN_NS = 50_000
QUEUE_MIN_PENDING = 512
#: Devices need this many blocked launch calls before a queue depth is estimated.
QUEUE_MIN_BLOCKED = 3
#: A time no boundary reaches ("never"): edges carrying it never bind.
NEVER = -(1 << 62)


@dataclass
class BoundaryModel:
    """The boundary DAG of a graph with measured lags, ready to simulate.

    Boundary ``2p`` is the start and ``2p+1`` the end of node position ``p`` (positions of
    :class:`~opgraph.model.arrays.GraphArrays`). Edge arrays are in processing order:
    sorted by the topological position of their target, so one sequential relaxation
    over them is a complete forward pass.
    """

    arr: GraphArrays
    t: np.ndarray          # measured boundary times (ns), length 2n
    src: np.ndarray        # boundary edge sources
    dst: np.ndarray        # boundary edge targets
    role: np.ndarray       # int8 code into ROLES
    own: np.ndarray        # node position whose time the lag is
    binding: np.ndarray    # bool: the edge that arrived last at its target in the trace
    lag: np.ndarray        # identity lags (ns)
    has_in: np.ndarray     # bool per boundary: has an incoming edge
    typical: dict[str, int]
    blocking: np.ndarray   # bool per node: its end waited for device work (sync bound)
    dropped_cycle_edges: int = 0
    timings: dict[str, float] = field(default_factory=dict)
    inferred: dict[str, Any] = field(default_factory=dict)
    is_host: np.ndarray | None = None    # per node
    is_act: np.ndarray | None = None     # per node
    name_codes: np.ndarray | None = None  # per node: index into name_uniq (-1: no name)
    name_uniq: np.ndarray | None = None
    cat: np.ndarray | None = None        # per edge: critical-path category code
    owner: np.ndarray | None = None      # per edge: node whose own interval holds its time (-1: none)
    graph_edge: np.ndarray | None = None  # per edge: from the graph's model (else simulation-only)
    inferred_edge: np.ndarray | None = None  # per edge: an inferred dependency

    @property
    def n_boundaries(self) -> int:
        return len(self.t)

    def match_names(self, pattern: str, among: np.ndarray | None = None) -> np.ndarray:
        """Node positions (within ``among``, default all) whose name ``re.search``-es
        ``pattern``; the regex runs once per distinct name."""
        import re

        rx = re.compile(pattern)
        hit = np.fromiter((isinstance(u, str) and bool(rx.search(u)) for u in self.name_uniq.tolist()),
                          dtype=bool, count=len(self.name_uniq))
        hit = np.append(hit, False)  # code -1
        idx = np.arange(self.arr.n) if among is None else among
        return idx[hit[self.name_codes[idx]]]

    @property
    def n_edges(self) -> int:
        return len(self.src)


def _topo_order(nb: int, src: np.ndarray, dst: np.ndarray, t: np.ndarray) -> np.ndarray | None:
    """A topological order of the boundaries: by time, ties broken by the longest chain of
    same-time edges; verified. ``None`` when some edge still goes backwards."""
    level = np.zeros(nb, dtype=np.int64)
    tie = np.flatnonzero(t[src] == t[dst])
    ts_, td_ = src[tie], dst[tie]
    for _ in range(64):
        bad = level[ts_] >= level[td_]
        if not bad.any():
            break
        np.maximum.at(level, td_[bad], level[ts_[bad]] + 1)
    order = np.lexsort((level, t))
    pos = np.empty(nb, dtype=np.int64)
    pos[order] = np.arange(nb)
    if (pos[src] < pos[dst]).all():
        return pos
    return None


def _kahn(nb: int, src: np.ndarray, dst: np.ndarray, t: np.ndarray, inferred: np.ndarray | None = None
          ) -> tuple[np.ndarray, np.ndarray]:
    """Topological positions by Kahn's algorithm, and a mask of edges dropped to break
    cycles: first the inferred edges among the boundaries left unreached, then edges among
    them going backwards in time."""
    keep = np.ones(len(src), dtype=bool)
    inferred = np.zeros(len(src), dtype=bool) if inferred is None else inferred
    while True:
        order = kahn_order(nb, src[keep], dst[keep], t)
        if len(order) == nb:
            pos = np.empty(nb, dtype=np.int64)
            pos[np.array(order, dtype=np.int64)] = np.arange(nb)
            return pos, ~keep
        # cycles: drop the backward-in-time edges among the unreached boundaries
        left = np.ones(nb, dtype=bool)
        left[np.array(order, dtype=np.int64)] = False
        cyc = keep & left[src] & left[dst] & inferred
        if cyc.any():
            keep &= ~cyc
            continue
        cyc = keep & left[src] & left[dst] & (t[src] >= t[dst])
        if not cyc.any():
            cyc = keep & left[src] & left[dst]
            cyc[np.flatnonzero(cyc)[1:]] = False
        keep &= ~cyc


def _queue_edges(a: GraphArrays) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
    """Launch-queue back-pressure (device -> host): (src, dst, own) boundary edges, info.

    A launch call that blocks for long (``QUEUE_MIN_NS`` and 10x its API's median) while
    ``QUEUE_MIN_PENDING`` or more activities of its device are in flight waited for a slot
    of the device's launch queue: it returned when the activity that ended last before its
    return completed. Each such call gets that edge. When a device has
    ``QUEUE_MIN_BLOCKED`` or more of them, its queue depth ``Q`` (in launch calls) is the
    median distance between a blocked call and the call that launched what it waited for,
    and every launch call on the device gets an edge from the end of the work of the call
    ``Q`` launches before it: no call returns before a queue slot is free."""
    empty = np.empty(0, np.int64)
    info: dict[str, Any] = {"blocked_calls": 0, "queue_depth": {}}
    ls, ld = a.out_edges("launch")
    if not len(ls):
        return empty, empty, empty, info
    act = np.flatnonzero(a.is_activity)
    # per call: its device and the last end of its activities
    calls, inv = np.unique(ls, return_inverse=True)
    c_dev = np.full(len(calls), -1, dtype=np.int64)
    c_dev[inv] = a.device[ld]
    c_last = np.full(len(calls), np.iinfo(np.int64).min, dtype=np.int64)
    np.maximum.at(c_last, inv, a.end[ld])
    c_lastpos = np.full(len(calls), -1, dtype=np.int64)
    o = np.lexsort((a.end[ld], inv))
    c_lastpos[inv[o]] = ld[o]  # the activity ending last (lexsort: last write wins)
    dur = a.end[calls] - a.ts[calls]
    # per call, the median duration of its API (calls grouped by their name as text)
    nc, nu = pd.factorize(a.name[calls], use_na_sentinel=False)
    text_code, _ = pd.factorize(np.array([str(u) for u in nu.tolist()], dtype=object))
    ninv = text_code[nc]
    med = np.zeros(int(ninv.max()) + 1 if len(ninv) else 0)
    for j in range(len(med)):
        med[j] = np.median(dur[ninv == j])
    long_ = (dur > QUEUE_MIN_NS) & (dur > 10 * med[ninv])
    launch_ts = a.ts.copy()
    launch_ts[ld] = a.ts[ls]
    launcher = np.full(a.n, -1, dtype=np.int64)
    launcher[ld] = ls
    src_l, dst_l, own_l = [], [], []
    for dev in np.unique(c_dev[c_dev >= 0]).tolist():
        on = np.flatnonzero(c_dev == dev)
        on = on[np.argsort(a.ts[calls[on]], kind="stable")]
        dacts = act[a.device[act] == dev]
        L = np.sort(launch_ts[dacts])
        ends_sorted_idx = dacts[np.argsort(a.end[dacts], kind="stable")]
        E = a.end[ends_sorted_idx]
        cand = on[long_[on]]
        if not len(cand):
            continue
        c0 = a.ts[calls[cand]]
        c1 = a.end[calls[cand]]
        pending = np.searchsorted(L, c0, side="left") - np.searchsorted(E, c0, side="right")
        full = pending >= QUEUE_MIN_PENDING
        cand, c0, c1 = cand[full], c0[full], c1[full]
        j = np.searchsorted(E, c1 + 1000, side="right") - 1
        ok = (j >= 0)
        ok[ok] &= E[j[ok]] > c0[ok]
        cand, j = cand[ok], j[ok]
        if not len(cand):
            continue
        waited = ends_sorted_idx[j]
        info["blocked_calls"] += int(len(cand))
        src_l.append(2 * waited + 1)
        dst_l.append(2 * calls[cand] + 1)
        own_l.append(calls[cand])
        # queue depth in launch calls
        rank = np.full(len(calls), -1, dtype=np.int64)
        rank[on] = np.arange(len(on))
        wl = launcher[waited]
        has = wl >= 0
        if has.sum() < QUEUE_MIN_BLOCKED:
            continue
        wl_rank = rank[np.searchsorted(calls, wl[has])]
        q = rank[cand[has]] - wl_rank
        q = q[q > 0]
        if len(q) < QUEUE_MIN_BLOCKED:
            continue
        Q = int(np.median(q))
        info["queue_depth"][int(dev)] = Q
        if len(on) > Q:
            prev = on[:-Q]
            nxt = on[Q:]
            src_l.append(2 * c_lastpos[prev] + 1)
            dst_l.append(2 * calls[nxt] + 1)
            own_l.append(calls[nxt])
    if not src_l:
        return empty, empty, empty, info
    return np.concatenate(src_l), np.concatenate(dst_l), np.concatenate(own_l), info


def _pick_binding(t: np.ndarray, src: np.ndarray, dst: np.ndarray, role: np.ndarray,
                  base: tuple[np.ndarray, int] | None = None) -> np.ndarray:
    """The edge that arrived last at each target (the critical path's rule, one pick:
    :func:`opgraph.analysis.critical_path.pick_critical`). ``base``: the pick's ``cedge``
    over the first edges and their count, when known (only the rest is picked among)."""
    prio_of = np.array([PRIORITY[r] for r in ROLES], dtype=np.int8)
    if base is not None:
        cedge = pick_critical_more(t, src, dst, prio_of[role], *base)
    else:
        _, cedge = pick_critical(t, src, dst, prio_of[role], len(t))
    binding = np.zeros(len(src), dtype=bool)
    binding[cedge[cedge >= 0]] = True
    return binding


def _role_in(role: np.ndarray, *names: str) -> np.ndarray:
    """Per edge: its role (a code into :data:`ROLES`) is one of ``names`` (a table lookup)."""
    of = np.zeros(len(ROLES), dtype=bool)
    of[[R[r] for r in names]] = True
    return of[role]


def _lags(t: np.ndarray, src: np.ndarray, dst: np.ndarray, role: np.ndarray, own: np.ndarray,
          binding: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray, dict[str, int]]:
    """Identity lags (module docstring), the per-node "blocking" mask (its end waited for
    device work or another thread) and the typical lag per latency role."""
    realized = t[dst] - t[src]

    def med(*roles: str) -> int:
        m = binding & _role_in(role, *roles)
        v = realized[m]
        return int(max(np.median(v), 0)) if len(v) else 0

    sync_like = med("sync", "blockcopy")
    typical = {"launch": med("launch"), "stream": med("stream"), "evwait": med("stream", "evwait"),
               "sync": sync_like, "blockcopy": sync_like,
               "queue": med("queue"), "handoff_start": med("handoff_start"),
               "handoff_resume": med("handoff_resume")}
    intrinsic = np.zeros(len(ROLES), dtype=np.int64)
    for k, v in typical.items():
        intrinsic[R[k]] = v
    lag = np.where(binding, realized, np.minimum(realized, intrinsic[role]))
    # blocking calls whose wait bounded their end: own time = min(duration, return latency)
    waited = binding & _role_in(role, "sync", "blockcopy", "queue", "handoff_resume", "late_resume") & (dst % 2 == 1)
    blocking = np.zeros(n, dtype=bool)
    blocking[own[waited]] = True
    ret = np.zeros(n, dtype=np.int64)
    ret[own[waited]] = realized[waited]
    lf = np.flatnonzero((role == R["leaf"]) & blocking[own])
    lag[lf] = np.clip(ret[own[lf]], 0, realized[lf])
    return lag.astype(np.int64), blocking, typical


def build_model(G: TraceGraph, infer: bool = True) -> BoundaryModel:
    """The boundary DAG of ``G`` with measured lags (see the module docstring).

    The dependency model is the critical path's (:func:`opgraph.analysis.critical_path.boundary_edges`),
    including the cross-thread edges the graph builder inferred (hand-offs, forward ->
    backward links, syncs, stream waits). ``infer``: also add, for the simulation only, the
    launch-queue back-pressure the trace shows (:func:`_queue_edges`). Paths
    (:func:`critical_dag`) always use the graph's model."""
    t0 = time.perf_counter()
    a = G.arrays
    t1 = time.perf_counter()
    n = a.n
    nb = 2 * n
    d = boundary_dag(None, a)   # the path's DAG (one per column view): its times, pick and categories
    t = d.t
    be = boundary_edges(a)
    src, dst, role = be.src, be.dst, be.role
    # the node whose time each lag is: a parent's own time is the parent's, any other edge's its target's
    own = np.where(_role_in(role, "first", "gap", "last"), be.own, dst // 2)
    owner = be.own.copy()
    graph_edge = np.ones(len(src), dtype=bool)
    inferred_flag = be.inferred.copy()
    is_host, is_act = a.is_host, a.is_activity
    codes, uniq = a.name_codes   # (a missing name has a code of its own: not a string, never matched)
    inferred: dict[str, Any] = {"queue_edges": 0, "handoff_edges": int((role == R["handoff_resume"]).sum()),
                                "stream_wait_edges": int(((role == R["evwait"]) & be.inferred).sum())}
    if infer:
        qs, qd, qo, qi = _queue_edges(a)
        inferred.update(qi)
        # an inferred dependency the trace contradicts (its source ended after its target) is dropped
        ok = t[qs] <= t[qd]
        inferred["contradicted_edges"] = int((~ok).sum())
        k = int(ok.sum())
        src = np.concatenate([src, qs[ok]])
        dst = np.concatenate([dst, qd[ok]])
        own = np.concatenate([own, qo[ok]])
        owner = np.concatenate([owner, qo[ok]])
        role = np.concatenate([role, np.full(k, R["queue"], np.int8)])
        graph_edge = np.concatenate([graph_edge, np.zeros(k, dtype=bool)])
        inferred_flag = np.concatenate([inferred_flag, np.ones(k, dtype=bool)])
        inferred["queue_edges"] = k
    # the path's pick over the graph's edges, completed with the queue edges
    binding = _pick_binding(t, src, dst, role, base=(d.cedge, len(be.src)))
    # categories: an edge's depends on its role, its node and its source only; the path's
    # DAG has them for the graph's edges with an owner, the rest are computed here
    cat = np.empty(len(src), dtype=np.int8)
    known = np.zeros(len(src), dtype=bool)
    known[:len(be.src)] = be.own >= 0
    cat[known] = d.cat[known[:len(be.src)]]
    rest = ~known
    cat[rest] = edge_categories(a, role[rest], np.where(owner[rest] >= 0, owner[rest], own[rest]), src[rest])
    lag, blocking, typical = _lags(t, src, dst, role, own, binding, n)
    t2 = time.perf_counter()

    # topological order of the boundaries; edges sorted by their target's position
    dropped = 0
    pos = _topo_order(nb, src, dst, t)
    if pos is None:
        soft = np.isin(role, (R["queue"], R["handoff_start"], R["handoff_resume"])) | ~graph_edge | inferred_flag
        pos, drop = _kahn(nb, src, dst, t, soft)
        if drop.any():
            dropped = int((drop & graph_edge & ~inferred_flag).sum())
            inferred["dropped_inferred_edges"] = int((drop & (~graph_edge | inferred_flag)).sum())
            keep = ~drop
            src, dst, role, own, owner, graph_edge, inferred_flag, cat = (
                x[keep] for x in (src, dst, role, own, owner, graph_edge, inferred_flag, cat))
            binding = _pick_binding(t, src, dst, role)
            lag, blocking, typical = _lags(t, src, dst, role, own, binding, n)
    eo = np.argsort(pos[dst], kind="stable")
    src, dst, role, own, owner, binding, lag, graph_edge, inferred_flag, cat = (
        x[eo] for x in (src, dst, role, own, owner, binding, lag, graph_edge, inferred_flag, cat))
    has_in = np.zeros(nb, dtype=bool)
    has_in[dst] = True
    t3 = time.perf_counter()
    return BoundaryModel(a, t, src, dst, role, own, binding, lag.astype(np.int64), has_in, typical,
                         blocking, dropped,
                         {"arrays_s": t1 - t0, "edges_s": t2 - t1, "order_s": t3 - t2}, inferred,
                         is_host, is_act, codes.astype(np.int64), np.asarray(uniq, dtype=object), cat,
                         owner, graph_edge, inferred_flag)


def critical_dag(m: BoundaryModel, arr: GraphArrays, live: np.ndarray | None = None) -> Any:
    """The critical path's :class:`opgraph.analysis.critical_path.BoundaryDAG` at the times
    of ``arr`` (measured or predicted): the model's graph edges (the critical path's own
    model, so a measured path here equals ``opgraph critical-path``'s exactly), picked by
    the one engine; ``live`` masks out edges a transform removed."""
    keep = m.graph_edge if live is None else (m.graph_edge & live)
    be = BoundaryEdges(m.src[keep], m.dst[keep], m.role[keep], m.owner[keep], m.inferred_edge[keep],
                       np.empty(0, np.int64))
    return dag_from_edges(arr, boundary_times(arr), be, m.cat[keep])


def simulate(m: BoundaryModel, lag: np.ndarray | None = None, start: np.ndarray | None = None) -> np.ndarray:
    """Boundary times of the replay with ``lag`` (default: the identity lags).

    ``start`` gives each boundary's own earliest time (default: the measured time for
    boundaries with no incoming edge, "never" for the others); every boundary happens at
    the latest of that and ``t(src) + lag`` over its incoming edges. Edges whose lag is
    :data:`NEVER` or less never bind. One sequential pass over the edges, in target order."""
    lag = m.lag if lag is None else lag
    if start is None:
        start = np.where(m.has_in, NEVER, m.t)
    tt = start.tolist()
    live = lag > NEVER // 2
    if not live.all():
        src, dst, lag = m.src[live], m.dst[live], lag[live]
    else:
        src, dst = m.src, m.dst
    # the edges as C int64 arrays, read one Python int at a time (a tolist would make 4.7M ints first)
    s_l, d_l, l_l = (array.array("q", np.ascontiguousarray(x, dtype=np.int64).tobytes()) for x in (src, dst, lag))
    for s, d, lg in zip(s_l, d_l, l_l):
        v = tt[s] + lg
        if v > tt[d]:
            tt[d] = v
    return np.array(tt, dtype=np.int64)


def predicted_arrays(m: BoundaryModel, tb: np.ndarray) -> GraphArrays:
    """The model's :class:`GraphArrays` with predicted times. Device annotations
    (``gpu_annotation``) are stretched over the activities they contain; boundaries the
    replay never reached (removed work with nothing before it) collapse onto the other
    boundary of their node, else keep their measured time."""
    a = m.arr
    s = tb[0::2].copy()
    e = tb[1::2].copy()
    never_s, never_e = s <= NEVER // 2, e <= NEVER // 2
    s[never_s] = np.where(never_e[never_s], a.ts[never_s], e[never_s])
    e[never_e] = np.maximum(s[never_e], np.where(never_s[never_e], a.end[never_e], s[never_e]))
    e = np.maximum(e, s)
    ga = np.flatnonzero(a.is_kind("gpu_annotation"))
    if len(ga):
        pd_ = np.flatnonzero(a.is_activity & (a.parent >= 0))
        pd_ = pd_[a.kind[a.parent[pd_]] == "gpu_annotation"]
        ps = a.parent[pd_]
        if len(ps):
            lo = np.full(a.n, np.iinfo(np.int64).max, dtype=np.int64)
            hi = np.full(a.n, np.iinfo(np.int64).min, dtype=np.int64)
            np.minimum.at(lo, ps, s[pd_])
            np.maximum.at(hi, ps, e[pd_])
            got = np.unique(ps)
            # keep the annotation's measured margins around its first and last activity
            lo_m = np.full(a.n, np.iinfo(np.int64).max, dtype=np.int64)
            hi_m = np.full(a.n, np.iinfo(np.int64).min, dtype=np.int64)
            np.minimum.at(lo_m, ps, a.ts[pd_])
            np.maximum.at(hi_m, ps, a.end[pd_])
            s[got] = lo[got] - (lo_m[got] - a.ts[got])
            e[got] = np.maximum(hi[got] + (a.end[got] - hi_m[got]), s[got])
    return replace(a, ts=s, end=e)


def predicted_graph(G: nx.DiGraph, pa: GraphArrays) -> nx.DiGraph:
    """A graph like ``G`` whose nodes carry the predicted ``ts``/``dur``. Node attribute
    dicts are new; the edge structure (adjacency dicts) and ``G.graph`` are shared with
    ``G`` (treat the result as read-only)."""
    H = G.__class__()
    H.graph = dict(G.graph)
    H.graph["predicted"] = True
    ts = pa.ts.tolist()
    dur = (pa.end - pa.ts).tolist()
    nodes = G._node
    H._node = {k: {**nodes[k], "ts": t_, "dur": d_} for k, t_, d_ in zip(pa.eid.tolist(), ts, dur)}
    H._adj = G._adj
    H._succ = G._succ
    H._pred = G._pred
    return H
