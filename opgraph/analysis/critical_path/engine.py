"""The one critical-path engine: pick each boundary's last-arriving dependency, walk back
from a sink, and turn the walked edges into categorised path segments.

Used by the single-rank path (:func:`opgraph.analysis.critical_path.critical_path`), the
cross-rank path (:mod:`opgraph.analysis.crossrank`), the replay's measured and predicted
paths (:mod:`opgraph.predict`) and the Graphviz picture of the path (:mod:`opgraph.export.dot.critical`).

**Pick.** Each boundary's *critical predecessor* is the dependency that arrived last:
latest ``min(t(src), t(dst))``, ties broken by role priority
(:data:`opgraph.analysis.critical_path.boundary_edges.PRIORITY`), then by the later source boundary
(never by edge order, so any caller's edge order picks the same path). With a window
source joined to every boundary at the window start, every source-to-boundary path has the
same elapsed length, so the longest path is exactly the chain of last-arriving dependencies
and its length equals the window span.

**Walk.** From the sink boundary back along critical predecessors until one lies at or
before the window start; each step's time is clamped to its successor's, so the steps tile
``[window start, sink time]`` exactly. A boundary with no predecessor inside the window
leaves ``[window start, its time]`` ``untraced`` (nothing recorded explains it).

**Segments.** Each walked edge's time gets its role's category, with two splits:

* ``launch`` (call start -> activity start on a free stream): the call's own time up to
  the activity start is ``launch_overhead`` owned by the call, for at most
  :data:`LAUNCH_CALL_MAX_NS` (a longer call was blocked: the excess is ``untraced``,
  owned by the call); after the call returned, up to :data:`LAUNCH_LATENCY_MAX_NS` is
  ``launch_overhead`` (the launch latency); the rest is ``device_wait`` when an event wait
  (recorded or inferred) held the activity, naming what held it, else ``untraced`` on the
  device stream (the stream was idle and the launch had returned; nothing recorded held it).
* ``stream`` (previous activity end -> next start, the next one already queued): up to
  :data:`KERNEL_GAP_MAX_NS` is ``kernel_gap``, the rest ``device_wait`` or ``untraced``
  as above.

Time is charged to an event (``owner``) only when it lies inside that event's own
interval; time between events has no owner and names the events on either side.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from opgraph.model.arrays import GraphArrays
from opgraph.model.trace_graph import TraceGraph
from opgraph.graph.streams import LATE_START_NS
from opgraph.analysis.critical_path.boundary_edges import (
    CAT, PRIORITY, ROLES, R, BoundaryEdges, boundary_edges, edge_categories,
)

#: A launch call keeps at most this (ns) of its own time up to the activity's start as
#: ``launch_overhead``; the rest it was blocked (a full launch queue, lazy module loading, a
#: synchronous launch), not launching. Set from the real traces (``benchmarks/cp_latencies.py``,
#: ``launch_from_call``): over the 37,080 binding launches of the 47 Kineto traces a free
#: stream's activity starts 11.0 µs after its launch call started at the median, 36.1 µs
#: at p99 (the part inside the call: 29.0 µs at p99), 715 µs at p99.9; 50 µs is the p99
#: rounded up.
LAUNCH_CALL_MAX_NS = 50_000
#: After the launch call returns, a free stream starts the activity within this (ns): the
#: launch latency. Beyond it something not recorded held the activity (docs/critical-path.md
#: gives the measured distribution on the real traces).
LAUNCH_LATENCY_MAX_NS = LATE_START_NS
#: Longest gap (ns) between back-to-back activities of a stream (the next one already
#: queued) that counts as ``kernel_gap``; beyond it the stream was held by something.
KERNEL_GAP_MAX_NS = LATE_START_NS


@dataclass
class ExtraEdges:
    """Boundary edges added to the model by a caller (e.g. cross-rank ``collective`` edges of
    :mod:`opgraph.analysis.crossrank`): boundaries ``src -> dst``, each with a category code
    (index into :data:`opgraph.analysis.critical_path.boundary_edges.CATEGORIES`), an owner position
    and a tie priority (higher wins among equal arrival times; the model's own edges use
    0..3)."""

    src: np.ndarray
    dst: np.ndarray
    cat: np.ndarray
    own: np.ndarray
    prio: np.ndarray


@dataclass
class BoundaryDAG:
    """The event-boundary DAG with each boundary's critical predecessor.

    Boundary ``2p`` is the start and ``2p+1`` the end of node position ``p``; ``t`` holds
    their times (ns). ``cpred[b]`` is the boundary the critical edge into ``b`` comes from
    (-1: none) and ``cedge[b]`` that edge's index into the edge arrays ``src``, ``dst``,
    ``role`` (-1 for a caller's extra edge), ``cat``, ``own`` and ``inferred``.
    ``launch_time`` is per node position the launching call's start, else the own start.
    """

    arr: GraphArrays
    t: np.ndarray
    cpred: np.ndarray
    cedge: np.ndarray
    src: np.ndarray
    dst: np.ndarray
    role: np.ndarray
    cat: np.ndarray
    own: np.ndarray
    inferred: np.ndarray
    launch_time: np.ndarray
    held_by: np.ndarray | None = None  # per node: source of an event wait into it (-1: none)
    held_inferred: np.ndarray | None = None  # per node: that event wait was inferred


def boundary_times(a: GraphArrays) -> np.ndarray:
    """Boundary times (ns): ``t[2p]`` = start, ``t[2p+1]`` = end of node position ``p``."""
    t = np.empty(2 * a.n, dtype=np.int64)
    t[0::2] = a.ts
    t[1::2] = a.end
    return t


def _last_arriving(t: np.ndarray, src: np.ndarray, dst: np.ndarray, prio: np.ndarray, edges: np.ndarray
                   ) -> np.ndarray:
    """Among ``edges`` (indices, in edge order), the last-arriving one into each of their
    targets: latest arrival, then highest priority, then highest source boundary, then the
    later edge (a stable sort), so the pick never depends on how ties were listed."""
    s, d = src[edges], dst[edges]
    o = np.lexsort((s, prio[edges], np.minimum(t[s], t[d]), d))
    last_of = np.ones(len(o), dtype=bool)
    last_of[:-1] = d[o][1:] != d[o][:-1]
    return edges[o[last_of]]


def pick_critical(t: np.ndarray, src: np.ndarray, dst: np.ndarray, prio: np.ndarray, nb: int
                  ) -> tuple[np.ndarray, np.ndarray]:
    """The last-arriving edge into every boundary (module docstring): ``(cpred, cedge)``
    arrays of length ``nb`` (-1 where a boundary has no incoming edge)."""
    pick = _last_arriving(t, src, dst, prio, np.arange(len(src), dtype=np.int64))
    cpred = np.full(nb, -1, dtype=np.int64)
    cedge = np.full(nb, -1, dtype=np.int64)
    cpred[dst[pick]] = src[pick]
    cedge[dst[pick]] = pick
    return cpred, cedge


def pick_critical_more(t: np.ndarray, src: np.ndarray, dst: np.ndarray, prio: np.ndarray, cedge: np.ndarray,
                       n_base: int) -> np.ndarray:
    """:func:`pick_critical`'s ``cedge`` over all edges, given its ``cedge`` over the first
    ``n_base`` of them: a target's pick is the last-arriving of its old pick and the edges
    added into it (ties as :func:`pick_critical` breaks them: the added edges come later)."""
    out = cedge.copy()
    new = np.arange(n_base, len(src), dtype=np.int64)
    if not len(new):
        return out
    old = out[dst[new]]
    pick = _last_arriving(t, src, dst, prio, np.concatenate([np.unique(old[old >= 0]), new]))
    out[dst[pick]] = pick
    return out


def dag_from_edges(a: GraphArrays, t: np.ndarray, be: BoundaryEdges, cat: np.ndarray,
                   live: np.ndarray | None = None, extra: ExtraEdges | None = None) -> BoundaryDAG:
    """A :class:`BoundaryDAG` of boundary edges ``be`` (with categories ``cat``) at times
    ``t``; ``live`` masks edges out (a what-if removed them); ``extra`` edges join before
    the pick."""
    src, dst, role, own, inf = be.src, be.dst, be.role.astype(np.int16), be.own, be.inferred
    if live is not None:
        src, dst, role, cat, own, inf = src[live], dst[live], role[live], cat[live], own[live], inf[live]
    prio = np.array([PRIORITY[r] for r in ROLES], dtype=np.int8)[role]
    if extra is not None and len(extra.src):
        k = len(extra.src)
        src = np.concatenate([src, np.asarray(extra.src, np.int64)])
        dst = np.concatenate([dst, np.asarray(extra.dst, np.int64)])
        role = np.concatenate([role, np.full(k, -1, np.int16)])
        cat = np.concatenate([cat, np.asarray(extra.cat, np.int8)])
        own = np.concatenate([own, np.asarray(extra.own, np.int64)])
        inf = np.concatenate([inf, np.zeros(k, bool)])
        prio = np.concatenate([prio, np.asarray(extra.prio, np.int8)])
    cpred, cedge = pick_critical(t, src, dst, prio, len(t))
    ls, ld = a.out_edges("launch")
    launch_time = a.ts.copy()
    launch_time[ld] = a.ts[ls]
    held_by = np.full(a.n, -1, dtype=np.int64)
    ev = np.flatnonzero(role == R["evwait"])
    ev = ev[np.argsort(t[src[ev]], kind="stable")]  # the latest-ending source wins
    held_by[dst[ev] // 2] = src[ev] // 2
    held_inf = np.zeros(a.n, dtype=bool)
    held_inf[dst[ev] // 2] = inf[ev]
    return BoundaryDAG(a, t, cpred, cedge, src, dst, role, cat, own, inf, launch_time, held_by, held_inf)


def boundary_dag(G: TraceGraph | None, arr: GraphArrays | None = None, extra: ExtraEdges | None = None
                 ) -> BoundaryDAG:
    """Build the boundary DAG of ``G`` (or of ``arr``) and pick every boundary's critical
    predecessor; ``extra`` edges join the model's own edges before the pick. Without
    ``extra``, made once per :class:`GraphArrays` (:meth:`GraphArrays.derived`): treat it
    as read-only."""
    a = arr if arr is not None else G.arrays

    def make() -> BoundaryDAG:
        be = boundary_edges(a)
        cat = edge_categories(a, be.role, be.own, be.src, be.parent)
        return dag_from_edges(a, boundary_times(a), be, cat, extra=extra)
    # the graph's own DAG is made once per column view (the path and the what-if pricing share it)
    return make() if extra is not None else a.derived("critical_path.boundary_dag", make)


#: One walked step: (edge index or -1, source boundary or -1, target boundary, t0, t1) (ns).
Step = tuple[int, int, int, int, int]


class CircularPath(ValueError):
    """The critical predecessors run in a circle: the dependencies as recorded and matched
    contradict each other (on a job graph, ranks that ran their collectives in different
    orders yet were matched). No path through them can be named."""


#: Edge index of a walked step into an exit boundary (:func:`walk_back`'s ``exits``).
EXIT_EDGE = -2


def walk_back(d: BoundaryDAG, b: int, ws: int, tb: int | None = None, exits: dict[int, int] | None = None
              ) -> list[Step]:
    """The critical path into boundary ``b`` back to time ``ws`` (ns), as walked edges in
    time order; the steps tile ``[ws, t(b)]`` exactly (module docstring).

    ``tb``: the time the walk reaches ``b`` (default ``t(b)``; a walk continued from
    elsewhere arrives clamped). ``exits`` maps boundaries whose critical predecessor lies
    outside ``d`` (another rank of a job) to that predecessor's time: the walk ends there
    with the step into the exit, edge :data:`EXIT_EDGE` and no source.

    Raises :class:`CircularPath` when the walk comes back to a boundary it passed (a
    circle of critical predecessors, possible only across a job's collective edges: each
    rank's model is acyclic). A circle goes around without time passing once the clamps
    settle, so the boundaries of each run of zero-length steps are watched."""
    t, cpred, cedge = d.t, d.cpred, d.cedge
    steps: list[Step] = []
    tb = int(t[b]) if tb is None else tb
    guard = len(t) + 1
    still: set[int] | None = None  # boundaries passed since time last moved
    while guard:
        guard -= 1
        if exits is not None and b in exits:
            tu = max(min(exits[b], tb), ws)
            if tb > tu:
                steps.append((EXIT_EDGE, -1, b, tu, tb))
            break
        u = int(cpred[b])
        if u < 0:
            if tb > ws:
                steps.append((-1, -1, b, ws, tb))
            break
        tu = min(int(t[u]), tb)
        if tu <= ws:
            if tb > ws:
                steps.append((int(cedge[b]), u, b, ws, tb))
            break
        if tb > tu:
            steps.append((int(cedge[b]), u, b, tu, tb))
            still = None
        else:
            if still is None:
                still = {b}
            if u in still:
                p = u // 2
                raise CircularPath(f"the critical path runs in a circle through {d.arr.name[p]!s} (event "
                                   f"{int(d.arr.eid[p])}) at {tu / 1000.0:.3f} us: the recorded and matched "
                                   "dependencies contradict each other")
            still.add(u)
        b, tb = u, tu
    steps.reverse()
    return steps


@dataclass
class RawSegment:
    """One categorised stretch of a walked path (positions, ns): ``owner`` is the node whose
    own interval holds it (-1: between events), ``src``/``dst`` the nodes of the dependency
    it crosses (-1: none), ``lane`` the thread or stream it happens on (a lane code of
    :class:`GraphArrays`), ``role`` the edge role (-1: none / a caller's edge)."""

    owner: int
    cat: int
    t0: int
    t1: int
    src: int
    dst: int
    lane: int
    role: int
    inferred: bool


#: The fields of a :class:`RawSegment`, the keys of :func:`segment_columns`.
SEGMENT_FIELDS = ("owner", "cat", "t0", "t1", "src", "dst", "lane", "role", "inferred")


def segments(d: BoundaryDAG, steps: list[Step]) -> list[RawSegment]:
    """Categorised segments of walked ``steps`` (module docstring: splits and owners);
    consecutive pieces of one owner and category are merged (:func:`segment_columns`, as
    objects)."""
    c = segment_columns(d, steps)
    return [RawSegment(*t) for t in zip(*(c[f].tolist() for f in SEGMENT_FIELDS))]


def segment_columns(d: BoundaryDAG, steps: list[Step]) -> dict[str, np.ndarray]:
    """The segments of :func:`segments` as arrays, one per field of :class:`RawSegment`
    (:data:`SEGMENT_FIELDS`; positions, ns, codes).

    Vectorised: every step becomes up to four pieces (a launch: the call, its untraced
    tail, the launch latency, the delay before the activity; a stream hand-off: the kernel
    gap and the delay; any other edge: one piece), empty pieces are dropped, and a piece
    with an owner joins the one before it when both have the same owner, category and
    confidence and touch."""
    a = d.arr
    if not steps:
        return {f: np.empty(0, dtype=bool if f == "inferred" else np.int64) for f in SEGMENT_FIELDS}
    st = np.array(steps, dtype=np.int64)
    E, U, B, T0, T1 = st[:, 0], st[:, 1], st[:, 2], st[:, 3], st[:, 4]
    k = len(st)
    X = B // 2
    S = np.where(U >= 0, U // 2, 0)
    Ec = np.maximum(E, 0)
    has_e = E >= 0
    role = np.where(has_e, d.role[Ec], -1).astype(np.int64)
    cat = d.cat[Ec].astype(np.int64)
    own = d.own[Ec].astype(np.int64)
    inf = d.inferred[Ec].astype(bool) & has_e
    lane_x, lane_s = a.lane[X], a.lane[S]
    lane_own = a.lane[np.where(own >= 0, own, X)]
    if d.held_by is not None:
        hb = d.held_by[X]
        held = hb >= 0
        hsrc = np.where(held, hb, S)
        # a held delay rests on the edge's inference or on the wait's
        h_inf = inf | (held & d.held_inferred[X].astype(bool)) if d.held_inferred is not None else inf
    else:
        held = np.zeros(k, dtype=bool)
        hsrc = S
        h_inf = inf
    untraced, launch_oh, kgap, dwait = CAT["untraced"], CAT["launch_overhead"], CAT["kernel_gap"], CAT["device_wait"]
    h_cat = np.where(held, dwait, untraced)
    is_l = has_e & (role == R["launch"])
    is_s = has_e & (role == R["stream"])
    other = has_e & ~is_l & ~is_s
    # launch: call (busy up to LAUNCH_CALL_MAX_NS), its untraced tail, latency, delay
    c_end = np.minimum(T1, np.maximum(T0, a.end[S]))
    busy_end = np.maximum(T0, np.minimum(c_end, a.ts[S] + LAUNCH_CALL_MAX_NS))
    lat_end = np.minimum(T1, c_end + LAUNCH_LATENCY_MAX_NS)
    g_end = np.minimum(T1, T0 + KERNEL_GAP_MAX_NS)
    none = np.full(k, -1, dtype=np.int64)
    # four slots per step: (owner, cat, t0, t1, src, lane, inferred, used)
    slots = [
        (np.where(is_l, S, np.where(other, own, -1)),
         np.where(is_l, launch_oh, np.where(is_s, kgap, np.where(other, cat, untraced))),
         T0, np.where(is_l, busy_end, np.where(is_s, g_end, T1)),
         np.where(has_e, S, -1), np.where(is_l, lane_s, np.where(other, lane_own, lane_x)), inf,
         np.ones(k, dtype=bool)),
        (np.where(is_l, S, -1), np.where(is_l, untraced, h_cat), np.where(is_l, busy_end, g_end),
         np.where(is_l, c_end, T1), np.where(is_l, S, hsrc), np.where(is_l, lane_s, lane_x),
         np.where(is_l, inf, h_inf), is_l | is_s),
        (none, np.full(k, launch_oh), c_end, lat_end, S, lane_x, inf, is_l),
        (none, h_cat, lat_end, T1, hsrc, lane_x, h_inf, is_l),
    ]
    cols = [np.stack([sl[i] for sl in slots], axis=1).ravel() for i in range(8)]
    owner, pcat, p0, p1, psrc, plane, pinf, used = cols
    step_of = np.repeat(np.arange(k), 4)
    keep = used.astype(bool) & (p1 > p0)
    idx = np.flatnonzero(keep)
    owner, pcat, p0, p1, psrc, plane, pinf = (c[idx] for c in (owner, pcat, p0, p1, psrc, plane, pinf))
    pinf = pinf.astype(bool)
    sidx = step_of[idx]
    prole, pdst = role[sidx], X[sidx]
    # a piece with an owner joins the previous piece: same owner, category, confidence, touching
    join = np.zeros(len(idx), dtype=bool)
    if len(idx) > 1:
        join[1:] = ((owner[1:] >= 0) & (owner[1:] == owner[:-1]) & (pcat[1:] == pcat[:-1])
                    & (p1[:-1] == p0[1:]) & (pinf[1:] == pinf[:-1]))
    first = np.flatnonzero(~join)
    last = np.append(first[1:] - 1, len(idx) - 1)
    return {"owner": owner[first], "cat": pcat[first], "t0": p0[first], "t1": p1[last], "src": psrc[first],
            "dst": pdst[first], "lane": plane[first], "role": prole[first], "inferred": pinf[first]}
