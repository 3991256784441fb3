"""The dependency model of the critical path: boundary edges, their roles and categories.

Every host event and device activity has a start boundary ``S`` (``2p`` for node position
``p``) and an end boundary ``E`` (``2p+1``). Graph edges become boundary edges with a
*role* (what kind of dependency it is) and an *owner* (the node whose own interval holds
the time the edge spans, or -1 when that time lies between events):

==============  ===================================  ==========================  =========
role            boundary edge                        category of its time        owner
==============  ===================================  ==========================  =========
leaf            ``S -> E`` of a leaf host event      ``cpu`` (``untraced`` for   the event
                                                     a blocking wait by name)
first           ``S(parent) -> S(first child)``      ``cpu``                     the parent
gap             ``E(child) -> S(next child)``        ``cpu``                     the parent
last            ``E(last child) -> E(parent)``       ``cpu``                     the parent
top             ``E -> S`` of top-level neighbours   ``untraced``                -1
act             ``S -> E`` of a device activity      ``gpu_compute`` /           the activity
                                                     ``gpu_comm`` / ``gpu_memory``
stream          ``E(prev) -> S(act)`` same stream    ``kernel_gap`` (the rest    -1
                                                     ``untraced``, see engine)
launch          ``S(call) -> S(act)``                ``launch_overhead`` (split  the call /
                                                     by the engine)              -1
blockcopy       ``E(own copy) -> E(call)``           ``sync_wait``               the call
sync            ``E(awaited) -> E(blocking call)``   ``sync_wait``               the call
evwait          ``E(before record) -> S(after)``     ``device_wait``             -1
fwdbwd          ``E(forward op) -> S(backward op)``  ``thread_wait``             -1
flow            ``S -> S`` (other flows)             ``other``                   -1
handoff_start   ``wait_from -> S(first of burst)``   ``thread_wait``             the waiter
                                                                                 if it
                                                                                 contains it
handoff_resume  ``E(last of burst) -> resume``       ``thread_wait``             the resumed
                                                                                 event if
                                                                                 ``E``
==============  ===================================  ==========================  =========

A blocking wait by name (:data:`opgraph.graph.threads.BLOCKING_WAIT_RE`) whose end has no
binding dependency from another thread was blocked on something the trace does not show:
its span is ``untraced``, never ``cpu``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from opgraph.model.arrays import GraphArrays
from opgraph.graph.linking import COMM_KERNEL_PATTERN
from opgraph.graph.build import pageable_dtoh
from opgraph.graph.linking import BLOCKING_COPY_RE, DEVICE_SYNC_RE, EVENT_SYNC_RE, STREAM_SYNC_RE
from opgraph.graph.threads import BLOCKING_WAIT_RE
from opgraph.graph.data_loading import data_loading_owners
from opgraph.time_categories import PATH_CATEGORIES, WAIT_CATEGORIES as CATALOG_WAITS

#: Path categories, in display order (the catalog: :mod:`opgraph.time_categories`).
CATEGORIES: tuple[str, ...] = tuple(PATH_CATEGORIES)
CAT: dict[str, int] = {c: i for i, c in enumerate(CATEGORIES)}
#: Categories in which a thread or a stream waits (reported as "longest wait").
WAIT_CATEGORIES: tuple[str, ...] = CATALOG_WAITS

#: Roles of boundary edges (shared with :mod:`opgraph.predict`).
ROLES: tuple[str, ...] = ("leaf", "first", "gap", "last", "top", "act", "stream", "launch", "blockcopy", "sync",
                          "evwait", "flow", "queue", "handoff_start", "handoff_resume", "fwdbwd", "late_resume")
R: dict[str, int] = {r: i for i, r in enumerate(ROLES)}
#: Tie priority of each role when picking the last-arriving edge (higher wins).
PRIORITY: dict[str, int] = {"leaf": 3, "first": 3, "gap": 3, "last": 3, "top": 3, "act": 3, "stream": 2,
                            "blockcopy": 2, "sync": 2, "evwait": 2, "launch": 1, "flow": 0, "queue": 2,
                            "handoff_start": 2, "handoff_resume": 2, "fwdbwd": 1, "late_resume": 2}
#: Category of each role (activity spans and blocking leaves are refined per edge).
ROLE_CATEGORY: dict[str, str] = {
    "leaf": "cpu", "first": "cpu", "gap": "cpu", "last": "cpu", "top": "untraced", "act": "gpu_compute",
    "stream": "kernel_gap", "launch": "launch_overhead", "blockcopy": "sync_wait", "sync": "sync_wait",
    "evwait": "device_wait", "flow": "other", "queue": "sync_wait", "handoff_start": "thread_wait",
    "handoff_resume": "thread_wait", "fwdbwd": "thread_wait", "late_resume": "untraced"}


@dataclass
class BoundaryEdges:
    """The model's boundary edges: ``src``/``dst`` boundaries, ``role`` (index into
    :data:`ROLES`), ``own`` (node position whose interval holds the edge's time, -1 for
    none), ``inferred`` (the graph edge behind it was inferred), and per node its nest
    ``parent`` (host events, -1 for none)."""

    src: np.ndarray
    dst: np.ndarray
    role: np.ndarray
    own: np.ndarray
    inferred: np.ndarray
    parent: np.ndarray

    def __len__(self) -> int:
        return len(self.src)


def blocking_waits(a: GraphArrays) -> np.ndarray:
    """Per node: a host call that blocks its thread by name: Python waits, lock acquires,
    ``run_backward``, ... (:data:`opgraph.graph.threads.BLOCKING_WAIT_RE`) and the runtime's
    synchronize calls. When no dependency explains its end, its span is ``untraced``."""
    def make() -> np.ndarray:
        syncing = a.names_where(lambda u: DEVICE_SYNC_RE.search(u) or STREAM_SYNC_RE.search(u)
                                or EVENT_SYNC_RE.search(u))
        out = (a.is_host & a.names_match(BLOCKING_WAIT_RE)) | (a.is_kind("runtime") & syncing)
        out.flags.writeable = False
        return out
    return a.derived("critical_path.blocking_waits", make)   # once per column view (read-only)


def boundary_edges(a: GraphArrays) -> BoundaryEdges:
    """The boundary edges of the model (module docstring) for the graph behind ``a``, made
    once per column view (:meth:`GraphArrays.derived`; its arrays are read-only)."""
    return a.derived("critical_path.boundary_edges", lambda: _frozen_edges(_boundary_edges(a)))


def _frozen_edges(be: BoundaryEdges) -> BoundaryEdges:
    for x in (be.src, be.dst, be.role, be.own, be.inferred):
        x.flags.writeable = False
    return be


def _boundary_edges(a: GraphArrays) -> BoundaryEdges:
    n = a.n
    is_host = a.is_host
    is_act = a.is_activity
    src_l, dst_l, role_l, own_l, inf_l = [], [], [], [], []

    def add(s: np.ndarray, d: np.ndarray, role: np.ndarray | int, own: np.ndarray | int,
            inferred: np.ndarray | bool = False) -> None:
        if len(s):
            src_l.append(np.asarray(s, dtype=np.int64))
            dst_l.append(np.asarray(d, dtype=np.int64))
            role_l.append(np.broadcast_to(np.asarray(role, dtype=np.int8), np.shape(s)))
            own_l.append(np.broadcast_to(np.asarray(own, dtype=np.int64), np.shape(s)))
            inf_l.append(np.broadcast_to(np.asarray(inferred, dtype=bool), np.shape(s)))

    parent = a.host_parent
    nd_ = np.flatnonzero(parent >= 0)
    ns_ = parent[nd_]
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
    add(2 * hs + 1, 2 * hd, np.where(par >= 0, R["gap"], R["top"]), np.where(par >= 0, par, -1))
    act = np.flatnonzero(is_act)
    add(2 * act, 2 * act + 1, R["act"], act)
    ss, sd = a.out_edges("stream_seq")
    add(2 * ss + 1, 2 * sd, R["stream"], -1)
    ls, ld = a.out_edges("launch")
    add(2 * ls, 2 * ld, R["launch"], ls)
    blocking = a.names_match(BLOCKING_COPY_RE)[ls] | pageable_dtoh(a.name_codes)[ld]   # once per distinct name
    add(2 * ld[blocking] + 1, 2 * ls[blocking] + 1, R["blockcopy"], ls[blocking])
    # a synchronous launch (graph/syncs.py) waited for its own activity: E(act) -> E(call), inferred
    sl = (a.edge_attr("launch", "evidence", None) == "synchronous_launch") & ~blocking
    add(2 * ld[sl] + 1, 2 * ls[sl] + 1, R["blockcopy"], ls[sl], True)
    ys, yd = a.out_edges("sync")
    add(2 * ys + 1, 2 * yd + 1, R["sync"], yd, a.edge_attr("sync", "inferred", False).astype(bool))
    ws_, wd_ = a.out_edges("event_wait")
    add(2 * ws_ + 1, 2 * wd_, R["evwait"], -1, a.edge_attr("event_wait", "inferred", False).astype(bool))
    fs, fd = a.out_edges("flow")
    fm = (is_host[fs] | is_act[fs]) & (is_host[fd] | is_act[fd])
    fcat = a.edge_attr("flow", "cat", None)
    finf = a.edge_attr("flow", "inferred", False).astype(bool)
    fb = fm & (fcat == "fwdbwd")
    add(2 * fs[fb] + 1, 2 * fd[fb], R["fwdbwd"], -1, finf[fb])
    fo = fm & ~fb
    add(2 * fs[fo], 2 * fd[fo], R["flow"], -1, finf[fo])
    # hand-offs: wait_from -> S(first), E(last) -> resume (opgraph/graph/threads.py)
    hs2, hd2 = a.out_edges("handoff")
    if len(hs2):
        first_ = a.edge_attr("handoff", "first", -1).astype(np.int64)
        wfrom = a.edge_attr("handoff", "wait_from", -1).astype(np.int64)
        wend = a.edge_attr("handoff", "wait_from_end", False).astype(bool)
        rend = a.edge_attr("handoff", "resume_end", False).astype(bool)
        st = (first_ >= 0) & (wfrom >= 0)
        w_b = 2 * wfrom[st] + wend[st]
        # the waiter owns the hand-off latency when the wait is its own span (S of a call that contains it)
        add(w_b, 2 * first_[st], R["handoff_start"], np.where(~wend[st], wfrom[st], -1), True)
        # a late resume (the waiter resumed long after the worker ended): its resume half is untraced
        late = a.edge_attr("handoff", "evidence", None) == "late_resume"
        add(2 * hs2 + 1, 2 * hd2 + rend, np.where(late, R["late_resume"], R["handoff_resume"]),
            np.where(rend, hd2, -1), True)
    if src_l:
        return BoundaryEdges(np.concatenate(src_l), np.concatenate(dst_l), np.concatenate(role_l).astype(np.int8),
                             np.concatenate(own_l).astype(np.int64), np.concatenate(inf_l).astype(bool), parent)
    e = np.empty(0, np.int64)
    return BoundaryEdges(e, e.copy(), np.empty(0, np.int8), e.copy(), np.empty(0, bool), parent)


def edge_categories(a: GraphArrays, role: np.ndarray, own: np.ndarray, src: np.ndarray,
                    parent: np.ndarray | None = None) -> np.ndarray:
    """The category code (index into :data:`CATEGORIES`) of every boundary edge: its
    role's, refined per edge (docs/critical-path.md, "Categories"):

    * device activity spans: compute / communication / memory;
    * a blocking wait's span (a leaf whose name blocks): ``untraced``;
    * own time (``leaf``/``first``/``gap``/``last``) of an annotation (a ``record_function``
      range, :func:`opgraph.names.annotation_like`): ``untraced``, named by the annotation:
      nothing the thread did is recorded in it;
    * own time of a DataLoader's ``__next__`` and of the waits inside it
      (:func:`opgraph.graph.data_loading.data_loading_owners`): ``data_loading``.

    ``parent``: the host nest parent per node (computed when not given)."""
    rc = np.array([CAT[ROLE_CATEGORY[r]] for r in ROLES], dtype=np.int8)
    cat = rc[role]
    act_cat = np.full(a.n, CAT["gpu_compute"], dtype=np.int8)
    act_cat[a.is_kind("memcpy", "memset")] = CAT["gpu_memory"]
    act_cat[a.is_kind("kernel") & a.names_match(re.compile(COMM_KERNEL_PATTERN))] = CAT["gpu_comm"]
    m = role == R["act"]
    cat[m] = act_cat[own[m]]
    lf = np.flatnonzero(role == R["leaf"])
    blocked = blocking_waits(a)
    cat[lf[blocked[own[lf]]]] = CAT["untraced"]
    own_time = np.flatnonzero(np.isin(role, (R["leaf"], R["first"], R["gap"], R["last"])) & (own >= 0))
    if len(own_time):
        o = own[own_time]
        cat[own_time[a.annotation_like[o]]] = CAT["untraced"]
        dl = data_loading_owners(a, parent)
        cat[own_time[dl[o]]] = CAT["data_loading"]
    return cat
