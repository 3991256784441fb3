"""Cross-lane links: launches (correlation, per process), flows, syncs and event waits.

All functions work on numpy arrays of the canonical table and return edge arrays of
event ids (``eid``), so that the builder can add them in bulk.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
import pandas as pd


#: Communication kernels (NCCL / RCCL / c10d) by name: a regular expression searched in kernel
#: names (case-insensitive).
COMM_KERNEL_PATTERN = r"(?i)nccl|rccl|all_?reduce|all_?gather|reduce_?scatter|all_?to_?all|sendrecv|c10d"
#: Runtime APIs that enqueue device work (CUDA, driver, HIP).
LAUNCH_API_RE = re.compile(
    r"^(cuda|hip|cu)(LaunchKernel|LaunchKernelExC|LaunchKernelEx|LaunchCooperativeKernel|"
    r"ExtModuleLaunchKernel|ModuleLaunchKernel|ExtLaunchKernel|LaunchKernelEx_?|"
    r"GraphLaunch|Memcpy\w*|Memset\w*|LaunchHostFunc)(_v\d+|_ptsz|_spt)?$")
#: Runtime APIs that block the host until device work completes: CUDA runtime and driver,
#: HIP, and the MTIA runtime (Kineto ``mtia_runtime``: ``synchronize`` waits for the
#: device, ``synchronizeStream`` for one stream, named by ``args.stream_id``).
DEVICE_SYNC_RE = re.compile(r"^((cuda|hip|cu)(DeviceSynchronize|CtxSynchronize)(_v\d+)?|synchronize)$")
STREAM_SYNC_RE = re.compile(r"^((cuda|hip|cu)(StreamSynchronize)(_v\d+|_ptsz|_spt)?|synchronizeStream)$")
EVENT_SYNC_RE = re.compile(r"^(cuda|hip|cu)(EventSynchronize)(_v\d+)?$")
BLOCKING_COPY_RE = re.compile(r"^(cudaMemcpy|cudaMemcpy2D|cudaMemcpy3D|cudaMemset|hipMemcpy|hipMemset|"
                              r"hipMemcpyWithStream|cuMemcpy[HD]to[HD](_v2)?|cudaMemcpyToSymbol|"
                              r"cudaMemcpyFromSymbol|hipMemcpyToSymbol|hipMemcpyFromSymbol)$")
#: Flow categories that mirror the launch correlation.
LAUNCH_FLOW_CATS = frozenset({"ac2g", "async", "async_gpu", "async_cpu_to_gpu"})
#: Launch time (ns) given to device activities with no launching call in the trace: they
#: were enqueued before profiling began, so a blocking call that starts while they run
#: waits for them. Far below any trace time, yet far from int64 overflow in differences.
PRE_TRACE_NS = np.iinfo(np.int64).min // 4
#: ``cuda_sync`` records without ``args.cuda_sync_kind`` -> the kind they play. These are
#: MTIA's device-side records (opgraph/ingest/kineto_kinds.py): ``synchronize`` mirrors a host
#: ``synchronizeStream``/``synchronize`` call (same correlation) on its stream;
#: ``event_wait`` is a wait executed and timed on the device (``args.stream`` waits for the
#: ``event_record`` with the same ``seq_num`` on ``args.wait_on_stream``); ``event_record``
#: is a marker with no edge of its own.
SYNC_RECORD_KINDS: dict[str, str] = {
    "synchronize": "Stream Sync", "event_wait": "Device Event Wait", "event_record": "Event Record",
}


@dataclass
class Edges:
    """Edge arrays (eids) of one kind plus optional per-edge attributes."""

    src: np.ndarray
    dst: np.ndarray
    attrs: dict[str, np.ndarray] = field(default_factory=dict)

    @staticmethod
    def empty() -> "Edges":
        return Edges(np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64))

    def __len__(self) -> int:
        return len(self.src)


def link_launches(rt_eid: np.ndarray, rt_corr: np.ndarray, rt_pid: np.ndarray, rt_ts: np.ndarray,
                  dev_eid: np.ndarray, dev_corr: np.ndarray, dev_ts: np.ndarray
                  ) -> tuple[Edges, np.ndarray, int, int]:
    """Runtime call -> device activity by correlation id.

    Correlation ids are unique per process. When one id is carried by several runtime
    calls (a collision across processes, or a repeated id), each device activity is linked
    to at most one of them: the call with that id that started last at or before the
    activity (the one that can have launched it), else (clock skew) the first one after
    it. One sorted ``merge_asof``: O(n log n) and no launch x activity product.

    Returns (edges, unlinked device eids with a correlation, number of runtime calls whose
    id repeats another call's (0 when all ids are unique), example eid of one or -1).
    """
    have = rt_corr >= 0
    rt = pd.DataFrame({"corr": rt_corr[have].astype(np.int64), "rt": rt_eid[have].astype(np.int64),
                       "rt_ts": rt_ts[have].astype(np.int64)})
    dmask = dev_corr >= 0
    dv = pd.DataFrame({"corr": dev_corr[dmask].astype(np.int64), "dev": dev_eid[dmask].astype(np.int64),
                       "dev_ts": dev_ts[dmask].astype(np.int64)})
    dup = rt["corr"].duplicated(keep="first")
    n_coll = int(dup.sum())
    coll_example = int(rt.loc[dup, "rt"].iloc[0]) if n_coll else -1
    if n_coll:
        rts = rt.sort_values(["rt_ts", "rt"], kind="stable")
        dvs = dv.sort_values(["dev_ts", "dev"], kind="stable")
        back = pd.merge_asof(dvs, rts, left_on="dev_ts", right_on="rt_ts", by="corr", direction="backward")
        miss = back["rt"].isna().to_numpy()
        m = back[~miss]
        if miss.any():  # clock skew: no call at or before the activity, take the first after
            fwd = pd.merge_asof(dvs[miss], rts, left_on="dev_ts", right_on="rt_ts", by="corr",
                                direction="forward")
            m = pd.concat([m, fwd[fwd["rt"].notna()]])
        m = m.astype({"rt": np.int64})
    else:
        m = dv.merge(rt, on="corr", how="inner")
    e = Edges(m["rt"].to_numpy(np.int64), m["dev"].to_numpy(np.int64))
    unlinked = np.setdiff1d(dev_eid[dmask], e.dst)
    return e, unlinked, n_coll, coll_example


def bind_points(ev_lane: np.ndarray, ev_ts: np.ndarray, ev_end: np.ndarray, ev_eid: np.ndarray,
                pt_lane: np.ndarray, pt_ts: np.ndarray, ev_corr: np.ndarray | None = None,
                pt_id: np.ndarray | None = None) -> np.ndarray:
    """Bind flow end points (lane, ts) to events: an event on the lane that starts exactly at
    ts — the one whose correlation equals the flow id when given (launch flows), else the
    innermost — else the innermost event that encloses ts (Chrome's ``bp: "e"`` binding).
    Returns eids, -1 where nothing binds. Lanes are int codes.
    """
    n_pt = len(pt_ts)
    out = np.full(n_pt, -1, dtype=np.int64)
    if n_pt == 0 or len(ev_ts) == 0:
        return out
    evd = pd.DataFrame({"lane": ev_lane, "ts": ev_ts, "eid": ev_eid, "dur": ev_end - ev_ts,
                        "corr": ev_corr if ev_corr is not None else np.full(len(ev_ts), -1)})
    ptd = pd.DataFrame({"lane": pt_lane, "ts": pt_ts, "p": np.arange(n_pt),
                        "id": pt_id if pt_id is not None else np.full(n_pt, -2)})
    m = ptd.merge(evd, on=["lane", "ts"], how="inner")
    if len(m):
        m["match"] = (m["corr"] == m["id"]).astype(np.int8)
        m = m.sort_values(["p", "match", "dur"], ascending=[True, False, True], kind="stable")
        m = m.drop_duplicates("p")
        out[m["p"].to_numpy()] = m["eid"].to_numpy()
    miss = np.flatnonzero(out < 0)
    if len(miss):
        o = np.lexsort((-(ev_end - ev_ts), ev_ts, ev_lane))
        L, T, E, I = ev_lane[o], ev_ts[o], ev_end[o], ev_eid[o]
        lane_start = np.searchsorted(L, pt_lane[miss], side="left")
        lane_end = np.searchsorted(L, pt_lane[miss], side="right")
        for j, p in enumerate(miss.tolist()):
            lo, hi = int(lane_start[j]), int(lane_end[j])
            if lo == hi:
                continue
            k = lo + int(np.searchsorted(T[lo:hi], pt_ts[p], side="right")) - 1
            steps = 0
            while k >= lo and steps < 64:
                if E[k] >= pt_ts[p]:
                    out[p] = I[k]
                    break
                k -= 1
                steps += 1
    return out


class StreamIndex:
    """Per-(device, stream) arrays of device activities in stream order, for sync and
    event-wait queries.

    ``launch_ts`` is the start of the launching runtime call (ns), or :data:`PRE_TRACE_NS`
    when the trace has no launch call for the activity (enqueued before the trace began);
    ``end`` is the activity end (ns). Launches are FIFO per stream, so an activity counts
    as launched no earlier than any activity before it on its stream (running maximum)."""

    def __init__(self, eid: np.ndarray, key: np.ndarray, start: np.ndarray, end: np.ndarray,
                 launch_ts: np.ndarray, launcher_pid: np.ndarray, launcher: np.ndarray | None = None):
        o = np.lexsort((eid, start, key))
        self.eid, self.key, self.start, self.end = eid[o], key[o], start[o], end[o]
        # launches are FIFO per stream; a running max makes the search monotone
        self.launch_ts = launch_ts[o]
        self.launch_max = self.launch_ts.copy()
        self.launcher_pid = launcher_pid[o]
        self.launcher = launcher[o] if launcher is not None else np.full(len(o), -1, dtype=np.int64)
        self.keys, first = np.unique(self.key, return_index=True)
        self.bounds = dict(zip(self.keys.tolist(), zip(first.tolist(), np.append(first[1:], len(o)).tolist())))
        for lo, hi in self.bounds.values():
            self.launch_max[lo:hi] = np.maximum.accumulate(self.launch_ts[lo:hi])
        self.end_max = self.end.copy()
        for lo, hi in self.bounds.values():
            self.end_max[lo:hi] = np.maximum.accumulate(self.end[lo:hi])

    def _last_at_or_before(self, key: int, sorted_col: np.ndarray, t: int) -> int:
        """Position of the last entry on ``key`` whose ``sorted_col`` value is <= ``t``; -1 if none."""
        b = self.bounds.get(key)
        if b is None:
            return -1
        lo, hi = b
        k = lo + int(np.searchsorted(sorted_col[lo:hi], t, side="right")) - 1
        return k if k >= lo else -1

    def _first_at_or_after(self, key: int, sorted_col: np.ndarray, t: int) -> int:
        """Position of the first entry on ``key`` whose ``sorted_col`` value is >= ``t``; -1 if none."""
        b = self.bounds.get(key)
        if b is None:
            return -1
        lo, hi = b
        k = lo + int(np.searchsorted(sorted_col[lo:hi], t, side="left"))
        return k if k < hi else -1

    def last_launched_before(self, key: int, t: int) -> int:
        """Position of the last activity on ``key`` launched at or before ``t``; -1 if none."""
        return self._last_at_or_before(key, self.launch_max, t)

    def first_launched_after(self, key: int, t: int) -> int:
        """Position of the first activity on ``key`` launched at or after ``t``; -1 if none."""
        return self._first_at_or_after(key, self.launch_max, t)

    def last_started_before(self, key: int, t: int) -> int:
        """Position of the last activity on ``key`` that started at or before ``t`` (ns,
        device clock: for records timed on the device); -1 if none."""
        return self._last_at_or_before(key, self.start, t)

    def first_started_after(self, key: int, t: int) -> int:
        """Position of the first activity on ``key`` that started at or after ``t`` (ns,
        device clock); -1 if none."""
        return self._first_at_or_after(key, self.start, t)

    def last_ended_before(self, key: int, t: int) -> int:
        """Position of the last activity on ``key`` such that it and every activity before
        it on the stream ended at or before ``t`` (ns, device clock); -1 if none."""
        return self._last_at_or_before(key, self.end_max, t)

    def awaited(self, key: int, call_start: int, call_end: int, tol: int, call: int = -1) -> int:
        """The activity on ``key`` a blocking call starting at ``call_start`` and returning
        at ``call_end`` waited for: launched at or before the call started (and not by the
        call itself, eid ``call``) and ended last at or before the return (+tol). -1 if none."""
        k = self.last_launched_before(key, call_start)
        lo = self.bounds[key][0] if k >= 0 else 0
        while k >= lo and (self.end[k] > call_end + tol or (call >= 0 and self.launcher[k] == call)):
            k -= 1
        return k if k >= lo and k >= 0 else -1
