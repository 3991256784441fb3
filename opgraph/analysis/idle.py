"""GPU idle time: per device and per stream, how much the CPU caused, and which ops.

Definitions (docs/idle.md)
--------------------------
* Device ``span``: first activity start to last activity end (kernels, memcpy, memset).
  ``busy`` is the union of activity intervals over all streams; ``idle = span - busy``.
* Every device-idle gap (and every gap of a stream) is split **exclusively** by cause, in
  time order, from the activity ``x`` that ends it and its launch call ``c``:
  ``cpu_induced`` (the host was late: nothing was launched yet, from the gap start to
  ``c``'s start) less ``sync_drain`` (the part of that when the launching thread was blocked
  in a synchronizing call, a synchronous launch included: a sync emptied the queue and the
  host had not launched more) and less ``data_loading`` (the part when the thread waited in
  a DataLoader's ``__next__``: :func:`opgraph.graph.data_loading.data_loading_owners`);
  ``launch_latency`` (``c`` ran and the activity started: from ``c``'s start, or the gap
  start, until ``c``'s end plus :data:`opgraph.graph.streams.LATE_START_NS`);
  ``device_wait`` (``x`` was held by an event wait, recorded or inferred: until the awaited
  work ended, named by where it ran, and on to the gap's end, named by the call, when the
  host's ``cudaStreamWaitEvent`` held it); ``kernel_gap`` when ``x`` was queued (the device's own
  delay in starting queued work: at most the same bound after the gap start, or after the
  awaited work ended); the rest ``untraced`` (held by nothing the trace records; an ``x``
  launched before the trace began counts as queued). The causes sum to the idle.
* **Blame**: the CPU-induced part of each gap (never its launch latency, sync drain or
  waits) is split exclusively among the host events running on the launching thread, by
  the innermost event active at each instant (leaf level), and rolled up to the outermost
  CPU op that contains it (``cpu_op``; annotations such as ``ProfilerStep#N`` are not ops).
  Time with no event on the thread goes to ``(untraced)``. Both tables sum to the
  CPU-induced idle exactly.
* Per stream, HTA's categories: ``host_wait`` (the next activity's launch started after the
  previous activity ended), ``kernel_wait`` (other gaps shorter than ``kernel_wait_us``) and
  ``other``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from opgraph.intervals import innermost_segments, union_gaps
from opgraph.model.arrays import GraphArrays
from opgraph.model.tree import climb_to_last
from opgraph.model.trace_graph import TraceGraph
from opgraph.analysis.display import TableResult
from opgraph.graph.linking import DEVICE_SYNC_RE, EVENT_SYNC_RE, STREAM_SYNC_RE
from opgraph.graph.streams import LATE_START_NS
from opgraph.graph.data_loading import data_loading_owners
from opgraph.time_categories import IDLE_CAUSES

UNTRACED = "(untraced)"
#: The causes of device idle, in the order they are split off a gap (docs/idle.md; the
#: catalog: :mod:`opgraph.time_categories`).
CAUSES: tuple[str, ...] = tuple(IDLE_CAUSES)


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
    causes_ns: dict[str, int] = field(default_factory=dict)
    device_wait_by_ns: dict[str, int] = field(default_factory=dict)
    #: ``launch_unknown`` by the thread that launches most of the device's work (busy meanwhile)
    launch_unknown_by_ns: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"device": self.device, "span_us": self.span_ns / 1e3, "busy_us": self.busy_ns / 1e3,
                "idle_us": self.idle_ns / 1e3, "cpu_induced_idle_us": self.cpu_induced_idle_ns / 1e3,
                "launch_latency_us": self.launch_latency_ns / 1e3, "gaps": self.gaps,
                "cpu_induced_gaps": self.cpu_induced_gaps,
                "busy_pct": 100.0 * self.busy_ns / self.span_ns if self.span_ns else 0.0,
                "causes_us": {c: self.causes_ns.get(c, 0) / 1e3 for c in CAUSES},
                "device_wait_by_us": {k: v / 1e3 for k, v in self.device_wait_by_ns.items()},
                "launch_unknown_by_us": {k: v / 1e3 for k, v in self.launch_unknown_by_ns.items()}}


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
    causes_ns: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"device": self.device, "stream": self.stream, "span_us": self.span_ns / 1e3,
                "busy_us": self.busy_ns / 1e3, "idle_us": self.idle_ns / 1e3,
                "host_wait_us": self.host_wait_ns / 1e3, "kernel_wait_us": self.kernel_wait_ns / 1e3,
                "other_us": self.other_ns / 1e3,
                "causes_us": {c: self.causes_ns.get(c, 0) / 1e3 for c in CAUSES}}


@dataclass(repr=False)
class IdleResult(TableResult):
    """Output of :func:`idle_time`. ``blame_events`` has one row per blamed host event
    (``eid`` -1 for untraced time): ``eid``, ``kind``, ``name``, ``top_eid``, ``top_name``,
    ``blame_ns``. ``tables()``: ``devices`` and ``streams`` (µs, one column ``<cause>_us`` per cause),
    ``blame_top`` / ``blame_leaf`` and ``gaps`` (µs).

    Examples
    --------
    >>> import opgraph
    >>> G = opgraph.load(opgraph.example_trace("cpu_bound"))
    >>> d = opgraph.idle(G).to_frame().iloc[0]
    >>> float(round(d["idle_us"] - sum(d[f"{c}_us"] for c in CAUSES), 6))
    0.0
    """

    devices: list[DeviceIdle]
    streams: list[StreamIdle]
    blame_events: pd.DataFrame
    kernel_wait_us: float
    per_eid_blame_ns: dict[int, int] = field(default_factory=dict)
    #: One row per device-idle gap: ``device``, ``ender`` (eid of the activity that ends it),
    #: ``start_ns``, ``end_ns``, its time per cause (:data:`CAUSES`, ns) and ``held_by`` (eid
    #: of what held a device wait, -1).
    gaps: pd.DataFrame = field(default_factory=pd.DataFrame)
    #: The reconciling windows table (:func:`opgraph.analysis.busy_windows.idle_with_windows`
    #: sets it; ``to_dict`` carries it under ``windows``).
    windows: dict[str, Any] | None = None

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
        # ties broken by name and kind, so the order never depends on the events' order in the file
        out = out.assign(_n=out["name"].astype(str), _k=out["kind"].astype(str))
        return (out.sort_values(["blame_ns", "_n", "_k"], ascending=[False, True, True], kind="stable")
                .drop(columns=["_n", "_k"]).reset_index(drop=True))

    main_table: ClassVar[str] = "devices"
    display_tables: ClassVar[tuple[str, ...]] = ("devices", "blame_top")

    def tables(self) -> dict[str, pd.DataFrame]:
        """``devices``, ``streams`` (µs; causes as columns), ``blame_top``, ``blame_leaf``
        (µs, share in %) and ``gaps`` (one row per device gap, µs)."""
        def flat(d: dict[str, Any]) -> dict[str, Any]:
            out = {k: v for k, v in d.items() if not isinstance(v, (dict, list))}
            out.update({f"{c}_us": v for c, v in d.get("causes_us", {}).items()})
            return out

        def blame(level: str) -> pd.DataFrame:
            b = self.blame(level)
            return pd.DataFrame({"kind": b["kind"].astype(str), "name": b["name"].astype(str),
                                 "blame_us": b["blame_ns"] / 1e3, "count": b["count"], "share_pct": 100.0 * b["share"]})
        g = self.gaps.copy()
        for c in [c for c in g.columns if c in CAUSES or c in ("start_ns", "end_ns")]:
            g[c.replace("_ns", "_us") if c.endswith("_ns") else c] = g.pop(c) / 1e3
        return {"devices": pd.DataFrame([flat(d.to_dict()) for d in self.devices]),
                "streams": pd.DataFrame([flat(s.to_dict()) for s in self.streams]),
                "blame_top": blame("top"), "blame_leaf": blame("leaf"), "gaps": g}

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
                "blame_leaf": rows("leaf"), "blame_top": rows("top"),
                **({"windows": self.windows} if self.windows is not None else {})}


def _thread_segments(a: GraphArrays, members: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Partition of time on one thread by the innermost active event: (start, end, owner
    position; -1 where nothing runs), covering (-2**62, 2**62) (:func:`innermost_segments`)."""
    s, e, o = innermost_segments(a.ts[members], a.end[members])
    return s, e, np.where(o >= 0, members[np.maximum(o, 0)], -1)


def _top_ancestor(a: GraphArrays) -> np.ndarray:
    """Position of each host node's top-level op: its outermost ``cpu_op`` ancestor (itself
    included; a ``record_function`` label recorded as an op is not one), or the node itself
    when no op contains it (e.g. a runtime call made directly under an annotation)."""
    is_op = a.is_kind("cpu_op") & ~a.annotation_like
    idx = np.arange(a.n, dtype=np.int64)
    best = climb_to_last(idx, a.host_parent, is_op)
    return np.where(best >= 0, best, idx)


def _sync_calls(a: GraphArrays) -> np.ndarray:
    """Per node: a host call that waits for the device (the target of a ``sync`` edge, a
    synchronous launch (:func:`opgraph.graph.syncs.synchronous_launches`), or a synchronize
    call by name)."""
    out = np.zeros(a.n, dtype=bool)
    _, yd = a.out_edges("sync")
    out[yd] = True
    ls, _ld = a.out_edges("launch")
    out[ls[a.edge_attr("launch", "evidence", None) == "synchronous_launch"]] = True
    syncing = a.names_where(lambda u: DEVICE_SYNC_RE.match(u) or STREAM_SYNC_RE.match(u) or EVENT_SYNC_RE.match(u))
    out |= syncing & a.is_kind("runtime")
    return out


@dataclass
class _Holds:
    """Per node, what held it by an event wait (-1: nothing): ``act`` the awaited device
    activity that ended last (a recorded wait, an inferred stream join or stream end, or the
    work a host-side ``cudaStreamWaitEvent`` followed), ``call`` the host's wait call (its
    stream and event are not recorded: it holds until the activity starts)."""

    act: np.ndarray
    call: np.ndarray

    @classmethod
    def of(cls, a: GraphArrays) -> "_Holds":
        act = np.full(a.n, -1, dtype=np.int64)
        call = np.full(a.n, -1, dtype=np.int64)
        ws_, wd_ = a.out_edges("event_wait")
        if len(ws_):
            o = np.argsort(a.end[ws_], kind="stable")  # the latest-ending source names the wait
            ws_, wd_ = ws_[o], wd_[o]
            on_dev = a.is_activity[ws_]
            act[wd_[on_dev]] = ws_[on_dev]
            call[wd_[~on_dev]] = ws_[~on_dev]
        return cls(act, call)


@dataclass
class _Split:
    """Per gap (ns): the end of the host-late part, of the launch latency, of the device
    wait on the awaited activity, of the whole device wait and of the kernel gap; whether an
    event wait held the activity, and by what (``held_act`` / ``held_call``, -1: none)."""

    host_end: np.ndarray
    lat_end: np.ndarray
    act_end: np.ndarray
    wait_end: np.ndarray
    gap_end: np.ndarray
    unk_end: np.ndarray
    held: np.ndarray
    held_act: np.ndarray
    held_call: np.ndarray

    @property
    def held_by(self) -> np.ndarray:
        """Per gap, what held it: the awaited activity when the wait on it covers part of the
        gap, else the wait call, else the activity (-1: not held)."""
        return np.where((self.held_act >= 0) & ((self.act_end > self.lat_end) | (self.held_call < 0)),
                        self.held_act, self.held_call)


def _split(g0: np.ndarray, g1: np.ndarray, ender: np.ndarray, launch_ts: np.ndarray, call_end: np.ndarray,
           launcher: np.ndarray, holds: _Holds, end: np.ndarray, unknown: np.ndarray | None = None) -> _Split:
    """The time-ordered cut points of each gap ``[g0, g1)`` ended by activity ``ender``
    (module docstring): host late until the launch call starts; launch latency until the
    call's end plus :data:`LATE_START_NS`; for an activity held by an event wait, a device
    wait until the awaited activity ended (``end``), and on to the gap's end when the
    host's wait call also held it (the call says the stream waited until the activity
    started); then, for queued work, a kernel gap of at most :data:`LATE_START_NS` after the
    gap start (after the awaited work ended, for held work); the rest is untraced, except
    for gaps marked ``unknown`` (:func:`_launch_unknown`), where it is all ``launch_unknown``."""
    has = launcher[ender] >= 0
    host_end = np.where(has, np.clip(launch_ts[ender], g0, g1), g0)
    lat_end = np.where(has, np.clip(call_end[ender] + LATE_START_NS, host_end, g1), host_end)
    ha, hc = holds.act[ender], holds.call[ender]
    held = (ha >= 0) | (hc >= 0)
    act_end = np.where(ha >= 0, np.clip(end[np.maximum(ha, 0)], lat_end, g1), lat_end)
    wait_end = np.where(hc >= 0, g1, act_end)
    queued = ~has | (launch_ts[ender] < g0) | held
    base = np.where(held, wait_end, g0)  # the activity could start from here on
    gap_end = np.where(queued, np.clip(base + LATE_START_NS, wait_end, g1), wait_end)
    unk_end = gap_end
    if unknown is not None:
        gap_end = np.where(unknown, wait_end, gap_end)
        unk_end = np.where(unknown, g1, gap_end)
    return _Split(host_end, lat_end, act_end, wait_end, gap_end, unk_end, held, ha, hc)


@dataclass
class _Launchers:
    """Per device with a launch in the trace: when its first launch call returned (ns) and
    the host thread (lane code) that launches most of its work; per node, the start of the
    first activity of its stream that has a launch call in the trace (ns; far future: none)."""

    first_return: dict[int, int]
    lane: dict[int, int]
    stream_first_launched: np.ndarray


def _launchers(a: GraphArrays, ls: np.ndarray, ld: np.ndarray) -> _Launchers:
    """Per device: when its first launch call in the trace returned, and the thread that
    launches most of its work (the most launch edges; ties: the lower lane code); per
    stream, when its first activity launched in the trace started."""
    first: dict[int, int] = {}
    lane: dict[int, int] = {}
    devs = np.unique(a.device[ld]).tolist() if len(ld) else []
    for dev in devs:
        m = a.device[ld] == dev
        calls = np.unique(ls[m])
        first[int(dev)] = int(a.end[calls].min())
        lanes, counts = np.unique(a.lane[ls[m]], return_counts=True)
        lane[int(dev)] = int(lanes[np.argmax(counts)])
    never = np.iinfo(np.int64).max
    per_lane = np.full(int(a.lane.max()) + 1 if a.n else 0, never, dtype=np.int64)
    if len(ld):
        np.minimum.at(per_lane, a.lane[ld], a.ts[ld])
    return _Launchers(first, lane, per_lane[a.lane] if a.n else np.empty(0, np.int64))


def _launch_unknown(a: GraphArrays, un: _Launchers, dev: int, g0: np.ndarray, g1: np.ndarray, ender: np.ndarray,
                    launcher: np.ndarray, holds: _Holds, is_sync: np.ndarray,
                    seg_cache: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]]) -> np.ndarray:
    """Per gap ``[g0, g1)`` of device ``dev`` ended by activity ``ender``: its launch is
    unknown (an activity with no launch link, e.g. an MTIA ``dma_request`` without a
    correlation, not held by an event wait, that starts after the device's first launch
    call in the trace returned and after an activity of its own stream launched in the
    trace started: a stream runs its work in order, so it was not queued before the trace,
    unlike a backlog a stream runs through at the trace's start) and the thread that
    launches most of the device's work was busy the whole gap (perhaps issuing it: not
    late, not idle): its innermost event at every instant an op, a Python frame or a
    runtime call, never only an annotation's own time or a synchronizing call (``is_sync``:
    a thread that waits for the device is not issuing work)."""
    out = np.zeros(len(g0), dtype=bool)
    ln = un.lane.get(int(dev))
    if ln is None or not len(g0):
        return out
    cand = (launcher[ender] < 0) & (holds.act[ender] < 0) & (holds.call[ender] < 0) & (
        a.ts[ender] > un.first_return[int(dev)]) & (a.ts[ender] > un.stream_first_launched[ender]) & (g1 > g0)
    if not cand.any():
        return out
    if ln not in seg_cache:
        host = np.flatnonzero(a.is_host)
        seg_cache[ln] = _thread_segments(a, host[a.lane[host] == ln])
    s, e, o = seg_cache[ln]
    oc = np.maximum(o, 0)
    not_busy = (o < 0) | a.is_kind("annotation")[oc] | is_sync[oc]
    idle_seen = np.concatenate([[0], np.cumsum(not_busy)])
    i = np.searchsorted(e, g0, side="right")          # the first segment ending after g0
    j = np.searchsorted(s, g1, side="left")           # past the last segment starting before g1
    out[cand] = (idle_seen[j[cand]] - idle_seen[i[cand]]) == 0
    return out


#: Times are kept within +-2**62 ns (about 146 years either side of the epoch) so that
#: every difference and sum below fits in int64.
_TIME_BOUND = 2**62 - 2**40


def _bounded_times(a: GraphArrays) -> GraphArrays:
    """``a`` with ``ts`` clipped to +-:data:`_TIME_BOUND` and ``end`` to ``[ts, bound]``.

    An ``end`` before its ``ts`` is an int64 ``ts + dur`` that wrapped (a duration past
    the int64-nanosecond range, e.g. from a hand-edited saved graph): it ends at the bound.
    Without this the wrapped end made the device's span and the first gap's CPU-induced
    part hugely negative (and the causes still summed to the negative idle)."""
    ts, end = a.ts, a.end
    if not len(ts) or (ts.min() >= -_TIME_BOUND and end.max() <= _TIME_BOUND and (end >= ts).all()):
        return a
    import dataclasses

    t = np.clip(ts, -_TIME_BOUND, _TIME_BOUND)
    e = np.where(end < ts, _TIME_BOUND, np.clip(end, t, _TIME_BOUND))
    return dataclasses.replace(a, ts=t, end=e)


def idle_time(G: TraceGraph, kernel_wait_us: float = 30.0) -> IdleResult:
    """GPU idle time per device and stream, split by cause, and the blame of its CPU-induced part.

    Parameters
    ----------
    G : TraceGraph
        A graph built by :func:`opgraph.graph.build_graph`.
    kernel_wait_us : float
        Per-stream gaps shorter than this (µs) that are not host waits count as
        ``kernel_wait`` (HTA's categories; HTA's default is 30 µs).

    Returns
    -------
    IdleResult
        Times in ns (``to_dict`` gives µs). Per device and per stream, the causes
        (:data:`CAUSES`) sum to the idle time.
    """
    a = _bounded_times(G.arrays)
    act = np.flatnonzero(a.is_activity)
    ls, ld = a.out_edges("launch")
    launch_ts = np.full(a.n, np.iinfo(np.int64).min, dtype=np.int64)
    call_end = np.full(a.n, np.iinfo(np.int64).min // 2, dtype=np.int64)
    launch_ts[ld] = a.ts[ls]
    call_end[ld] = a.end[ls]
    launcher = a.launcher
    holds = _Holds.of(a)
    un = _launchers(a, ls, ld)
    seg_cache: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}  # per lane, shared by every pass
    is_sync = _sync_calls(a)
    kw_ns = int(round(kernel_wait_us * 1000))
    devices: list[DeviceIdle] = []
    streams: list[StreamIdle] = []
    dev_gaps: list[tuple[int, int, int, int]] = []  # (host-late start, end, launcher, device index)
    stream_gaps: list[tuple[int, int, int, int]] = []  # ... stream index
    dev_parts: list[tuple[int, np.ndarray, np.ndarray, np.ndarray, _Split, int]] = []
    n_dev_gaps = 0
    st_parts: list[tuple[int, int, int, np.ndarray, np.ndarray, _Split, np.ndarray, tuple[int, int, int]]] = []
    for dev in np.unique(a.device[act]).tolist():
        sel = act[a.device[act] == dev]
        sel = sel[np.lexsort((a.end[sel], a.ts[sel]))]
        st, en = a.ts[sel], a.end[sel]
        busy, g0, g1, nxt = union_gaps(st, en)
        span = int(en.max() - st[0])
        ender = sel[nxt]
        unk = _launch_unknown(a, un, dev, g0, g1, ender, launcher, holds, is_sync, seg_cache)
        sp = _split(g0, g1, ender, launch_ts, call_end, launcher, holds, a.end, unk)
        late = sp.host_end > g0
        di = len(devices)
        base = n_dev_gaps
        n_dev_gaps += len(g0)
        dev_gaps.extend(zip(g0[late].tolist(), sp.host_end[late].tolist(), launcher[ender][late].tolist(),
                            (base + np.flatnonzero(late)).tolist()))
        devices.append(DeviceIdle(int(dev), span, busy, span - busy, 0, int((sp.lat_end - sp.host_end).sum()),
                                  int(len(g0)), int(late.sum())))
        dev_parts.append((di, g0, g1, ender, sp, base))
        for stv in np.unique(a.stream[sel]).tolist():
            ss = sel[a.stream[sel] == stv]
            sst, sen = a.ts[ss], a.end[ss]
            sbusy, sg0, sg1, snxt = union_gaps(sst, sen)
            sspan = int(sen.max() - sst[0])
            s_end = ss[snxt]
            nl = launch_ts[s_end]
            host = (launcher[s_end] >= 0) & (nl >= sg0)
            glen = sg1 - sg0
            kern = ~host & (glen < kw_ns)
            si = len(streams)
            sunk = _launch_unknown(a, un, dev, sg0, sg1, s_end, launcher, holds, is_sync, seg_cache)
            ssp = _split(sg0, sg1, s_end, launch_ts, call_end, launcher, holds, a.end, sunk)
            slate = ssp.host_end > sg0
            stream_gaps.extend(zip(sg0[slate].tolist(), ssp.host_end[slate].tolist(),
                                   launcher[s_end][slate].tolist(), [si] * int(slate.sum())))
            streams.append(StreamIdle(int(dev), int(stv), sspan, sbusy, sspan - sbusy, int(glen[host].sum()),
                                      int(glen[kern].sum()), int(glen[~host & ~kern].sum())))
            st_parts.append((si, 0, 0, sg0, sg1, ssp, slate, (0, 0, 0)))
    is_dl = data_loading_owners(a)
    blame, gap_drain, gap_dl = _blame(a, dev_gaps, is_sync, is_dl, n_dev_gaps, collect=True, seg_cache=seg_cache)
    _, st_drain, st_dl = _blame(a, stream_gaps, is_sync, is_dl, len(streams), collect=False, seg_cache=seg_cache)
    gap_rows: list[pd.DataFrame] = []
    for di, g0, g1, ender, sp, base in dev_parts:
        d = devices[di]
        # a gap's drain is time inside its host-late part (thread segments never overlap);
        # the clip makes "0 <= cpu_induced" hold by construction
        drain = np.minimum(gap_drain[base:base + len(g0)], sp.host_end - g0)
        dl = np.minimum(gap_dl[base:base + len(g0)], sp.host_end - g0 - drain)
        gap_rows.append(pd.DataFrame({
            "device": d.device, "ender": a.eid[ender], "start_ns": g0, "end_ns": g1,
            "cpu_induced": sp.host_end - g0 - drain - dl, "data_loading": dl, "sync_drain": drain,
            "launch_latency": sp.lat_end - sp.host_end,
            "kernel_gap": sp.gap_end - sp.wait_end, "device_wait": sp.wait_end - sp.lat_end,
            "launch_unknown": sp.unk_end - sp.gap_end, "untraced": g1 - sp.unk_end,
            "held_by": np.where(sp.held, a.eid[np.maximum(sp.held_by, 0)], -1)}))
        host_late = int((sp.host_end - g0).sum())
        wait = sp.wait_end - sp.lat_end
        by: dict[str, int] = {}
        # the wait on the awaited activity names its stream; the rest, the host's wait call
        for src, part in ((sp.held_act, sp.act_end - sp.lat_end), (sp.held_call, sp.wait_end - sp.act_end)):
            held = (part > 0) & (src >= 0)
            for hb, r in zip(src[held].tolist(), part[held].tolist()):
                k = _lane_name(a, hb)
                by[k] = by.get(k, 0) + int(r)
        d.cpu_induced_idle_ns = host_late - int(drain.sum()) - int(dl.sum())
        d.causes_ns = {"cpu_induced": d.cpu_induced_idle_ns, "data_loading": int(dl.sum()),
                       "sync_drain": int(drain.sum()),
                       "launch_latency": d.launch_latency_ns, "kernel_gap": int((sp.gap_end - sp.wait_end).sum()),
                       "device_wait": int(wait.sum()), "launch_unknown": int((sp.unk_end - sp.gap_end).sum()),
                       "untraced": int((g1 - sp.unk_end).sum())}
        d.device_wait_by_ns = dict(sorted(by.items(), key=lambda kv: -kv[1]))
        if d.causes_ns["launch_unknown"]:
            ln = un.lane[d.device]
            p = int(np.flatnonzero(a.lane == ln)[0])
            d.launch_unknown_by_ns = {f"thread {a.pid[p]}/{a.tid[p]}": d.causes_ns["launch_unknown"]}
    for si, _x, _y, sg0, sg1, ssp, slate, _z in st_parts:
        host_late = int((ssp.host_end - sg0).sum())
        s_drain = min(int(st_drain[si]), host_late)
        s_dl = min(int(st_dl[si]), host_late - s_drain)
        streams[si].causes_ns = {"cpu_induced": host_late - s_drain - s_dl, "data_loading": s_dl,
                                 "sync_drain": s_drain,
                                 "launch_latency": int((ssp.lat_end - ssp.host_end).sum()),
                                 "kernel_gap": int((ssp.gap_end - ssp.wait_end).sum()),
                                 "device_wait": int((ssp.wait_end - ssp.lat_end).sum()),
                                 "launch_unknown": int((ssp.unk_end - ssp.gap_end).sum()),
                                 "untraced": int((sg1 - ssp.unk_end).sum())}
    per_eid: dict[int, int] = {}
    if len(blame):
        sub = blame[blame["eid"] >= 0]
        per_eid = dict(zip(sub["eid"].tolist(), sub["blame_ns"].tolist()))
    gaps = pd.concat(gap_rows, ignore_index=True) if gap_rows else pd.DataFrame(
        columns=["device", "ender", "start_ns", "end_ns", *CAUSES, "held_by"])
    return IdleResult(devices, streams, blame, kernel_wait_us, per_eid, gaps)


def _lane_name(a: GraphArrays, p: int) -> str:
    """Where node ``p`` runs: ``stream <device>/<stream>`` or ``thread <pid>/<tid>`` (a host
    call that made the stream wait)."""
    if a.kind[p] in ("kernel", "memcpy", "memset", "gpu_annotation"):
        return f"stream {int(a.device[p])}/{int(a.stream[p])}"
    return f"thread {a.pid[p]}/{a.tid[p]} ({a.name[p]})"


def _blame(a: GraphArrays, gaps: list[tuple[int, int, int, int]], is_sync: np.ndarray, is_dl: np.ndarray,
           n_groups: int, collect: bool = True,
           seg_cache: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] | None = None
           ) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """Split the host-late parts ``(g0, g1, launcher, group)`` of gaps over the innermost
    events of each launching thread: time whose innermost event is a synchronizing call is
    the group's sync drain, time whose innermost event is a data-loading wait (``is_dl``)
    its data loading (both returned per group); the rest is the CPU-induced idle, blamed
    per event (a DataFrame, when ``collect``). ``seg_cache``: each lane's thread segments,
    kept across calls."""
    cols = ["eid", "kind", "name", "top_eid", "top_kind", "top_name", "blame_ns"]
    drain = np.zeros(n_groups, dtype=np.int64)
    dl = np.zeros(n_groups, dtype=np.int64)
    empty = pd.DataFrame({c: pd.Series(dtype=object if "name" in c or "kind" in c else np.int64) for c in cols})
    if not gaps:
        return empty, drain, dl
    g = np.array(gaps, dtype=np.int64)
    lane_of_gap = a.lane[g[:, 2]]
    host = np.flatnonzero(a.is_host)
    cache = seg_cache if seg_cache is not None else {}
    own_parts: list[np.ndarray] = []
    ov_parts: list[np.ndarray] = []
    for lane in np.unique(lane_of_gap).tolist():
        if lane not in cache:
            cache[lane] = _thread_segments(a, host[a.lane[host] == lane])
        s, e, o = cache[lane]
        gl = g[lane_of_gap == lane]
        # the segments a gap overlaps are contiguous (the lane's segments tile it in order):
        # from the first ending after g0 to the last starting before g1
        first = np.searchsorted(e, gl[:, 0], side="right")
        count = np.maximum(np.searchsorted(s, gl[:, 1], side="left") - first, 0)
        if not count.sum():
            continue
        gi = np.repeat(np.arange(len(gl)), count)   # gap of each (gap, segment) pair, in gap order
        k = first[gi] + np.arange(len(gi)) - np.repeat(np.cumsum(count) - count, count)
        ov = np.minimum(e[k], gl[gi, 1]) - np.maximum(s[k], gl[gi, 0])
        pos = ov > 0
        k, gi, ov = k[pos], gi[pos], ov[pos]
        ok = o[k]
        sync = ok >= 0
        sync[sync] = is_sync[ok[sync]]
        np.add.at(drain, gl[gi[sync], 3], ov[sync])
        load = (ok >= 0) & ~sync
        load[load] = is_dl[ok[load]]
        np.add.at(dl, gl[gi[load], 3], ov[load])
        if collect:
            rest = ~sync & ~load
            own_parts.append(np.where(ok[rest] >= 0, ok[rest], -1 - lane))   # untraced: one key per lane
            ov_parts.append(ov[rest])
    owners = np.concatenate(own_parts) if own_parts else np.empty(0, np.int64)
    if not collect or not len(owners):
        return empty, drain, dl
    top = _top_ancestor(a)
    # per owner, in order of first blame (as the sweep meets them)
    sums = pd.Series(np.concatenate(ov_parts)).groupby(owners, sort=False).sum()
    keys = sums.index.to_numpy(dtype=np.int64)
    vals = sums.to_numpy(dtype=np.int64)
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
    }), drain, dl
