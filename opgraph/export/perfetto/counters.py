"""Counter tracks of the Perfetto overlay: GPU busy streams, activity mix, queue, memory.

``C`` events (``cat`` :data:`COUNTER_CAT`) written on each device's process: ``GPU <d>
busy`` (streams running an activity), ``GPU <d> activity`` (compute / comm / memory
activities at once), ``GPU <d> stream <s>`` (launched but not started) and ``<type> <d>
memory`` (allocated / reserved bytes from the trace's ``[memory]`` events). Each is a
step function, written where its value changes; times are int64 **ns** (written as µs).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from opgraph.export.perfetto.lanes import object_column
from opgraph.model.arrays import GraphArrays

#: ``cat`` of the counter events.
COUNTER_CAT = "opgraph"


def activity_frame(arr: GraphArrays) -> pd.DataFrame:
    """One row per device activity of ``arr`` (kernel, memcpy, memset): its position in
    ``arr`` (``pos``), ``eid``, ``device``, ``stream`` and ``ts`` / ``end`` (ns)."""
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
