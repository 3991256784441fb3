"""The Perfetto overlay of a multi-rank job graph: the whole job in one trace file.

``export_perfetto_job(G, path)`` writes, for a job graph built by ``opgraph build DIR``
(docs/multirank.md, "Opening a job in Perfetto"):

* every rank kept in full, its original events unchanged except for three remappings
  that keep ranks apart: ``pid`` becomes ``rank * pid_stride + 1 + i`` (``i``: the rank's
  i-th distinct pid, in order of first appearance), integer flow ids are shifted by a
  per-rank offset, and ``ts`` is on the job's **aligned** clock (the rank's
  ``clock_offset_ns`` added, exact ns as µs decimals). Processes are named
  ``rank r — <original name>`` (``process_name`` metadata, carrying ``opgraph.rank`` and
  the original ``opgraph.pid``) and sorted by rank (``process_sort_index`` = the new pid);
* per rank, the single-rank additions of :mod:`opgraph.export.perfetto.overlay` that do not depend
  on the critical path: ``opgraph.launch_delay_us`` / ``opgraph.queue_wait_us``,
  ``opgraph.idle_blame_us``, the GPU counter tracks and names for unnamed lanes;
* on every collective kernel: ``opgraph.coll_id``, ``opgraph.last_rank``,
  ``opgraph.wait_us`` (this rank's wait for the last arrival) and ``opgraph.lateness_us``
  (the collective's lateness; docs/multirank.md, Stragglers), and one v1 flow (cat
  ``opgraph.collective``) per matched collective from the last-arriving rank's kernel to
  every other participant's kernel;
* the cross-rank critical path of every step (:func:`opgraph.analysis.crossrank.
  crossrank_critical_path`) marked as the single-rank overlay marks its path
  (``opgraph.critical`` / ``opgraph.bound_by`` / ``opgraph.critical_us`` args and
  ``opgraph.critical_path`` flows, the crossings between ranks included), plus one track
  per step in a process ``opgraph — cross-rank critical path`` whose slices are the path's
  segments (they tile the step's window: their durations sum to the path length);
* ranks not kept in full (``opgraph build --keep``): listed under the top-level
  ``opgraph.job.summarised_ranks`` key, and drawn as a process
  ``rank r — summarised (collectives only)`` holding their collective kernels from the
  job's collective table (aligned clock), so collective flows from and to them still show.

The top-level ``opgraph`` key also holds the per-rank mapping (pid base, original pids,
flow id offset, clock offset, file) and a per-step summary of the path.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from opgraph.gc_pause import gc_paused
from opgraph.analysis.crossrank import CROSS_CATEGORIES, CrossRankResult, crossrank_critical_path
from opgraph.analysis.idle import idle_time
from opgraph.analysis.stragglers import kernel_waits, per_collective
from opgraph.export.perfetto.args import ARG_PREFIX, critical_args, idle_args, launch_args, merge_args
from opgraph.export.perfetto.counters import (
    COUNTER_CAT, activity_frame, device_pids, gpu_busy_counters, queued_counters,
)
from opgraph.export.perfetto.flows import FLOW_MARGIN_NS, SliceIndex, critical_flows
from opgraph.export.perfetto.lanes import lane_codes, lane_key, metadata_events, object_column
from opgraph.model.trace_graph import TraceGraph

#: ``cat`` and ``name`` of the collective flows (last arrival -> every other participant).
COLL_FLOW_CAT = "opgraph.collective"
COLL_FLOW_NAME = "collective"
#: ``cat`` of the critical-path segment slices (the per-step tracks of the path process).
SEGMENT_CAT = "opgraph.path_segment"
#: ``cat`` of the collective slices drawn for ranks not kept in full.
SUMMARISED_CAT = "opgraph.summarised"
#: Preferred pid stride between ranks; smaller when ``(ranks + 1) * stride`` would not fit
#: a 32-bit pid (viewers read pids as 32-bit integers).
PID_STRIDE = 10**7
_PID_MAX = 2**31 - 1
_DASH = "\u2014"


# --------------------------------------------------------------------------- rank layout
@dataclass
class RankLayout:
    """Where rank ``rank`` lands in the exported trace.

    ``rows``: its rows ``[lo, hi)`` of the job's event table (empty when not kept in full);
    ``pid_base``: its pids are ``pid_base + 1 + i`` for its i-th original pid ``pids[i]``
    (``pid_base`` itself is the process of a summarised rank's collectives);
    ``flow_offset``: added to its integer flow ids; ``clock_offset_ns``: added to its own
    clock to get the job's aligned clock (ns)."""

    rank: int
    full: bool
    lo: int
    hi: int
    pid_base: int
    pids: list[Any] = field(default_factory=list)
    flow_offset: int = 0
    clock_offset_ns: int = 0

    def new_pid(self, orig: Any) -> int:
        """The exported pid of original pid ``orig`` of this rank."""
        return self.pid_base + 1 + self._index[lane_key(orig)]

    def __post_init__(self) -> None:
        self._index: dict[Any, int] = {}

    def set_pids(self, pids: list[Any]) -> None:
        self.pids = pids
        self._index = {lane_key(p): i for i, p in enumerate(pids)}

    def to_dict(self) -> dict[str, Any]:
        return {"rank": self.rank, "full": self.full, "pid_base": self.pid_base,
                "pids": {str(self.pid_base + 1 + i): p for i, p in enumerate(self.pids)},
                "flow_id_offset": self.flow_offset, "clock_offset_ns": self.clock_offset_ns}


def pid_stride(ranks: list[int], n_local: int) -> int:
    """:data:`PID_STRIDE`, or the smallest power of ten above ``n_local`` (the most pids a
    rank has, plus its summarised-collectives process) when ``PID_STRIDE`` would overflow
    32-bit pids for ranks up to ``max(ranks) + 1`` (the path process)."""
    top = (max(ranks) if ranks else 0) + 2
    if top * PID_STRIDE <= _PID_MAX:
        return PID_STRIDE
    stride = 10
    while stride <= n_local + 1:
        stride *= 10
    if top * stride > _PID_MAX:
        raise ValueError(f"{top - 1} ranks of {n_local} processes do not fit 32-bit pids")
    return stride


def remap_events(G: TraceGraph) -> tuple[pd.DataFrame, dict[int, RankLayout], int]:
    """The job's event table with pids and flow ids remapped per rank (a shallow copy: the
    other columns are shared), the layout of every rank and the pid stride.

    ``ts_ns`` is already on the aligned clock in a job graph (docs/multirank.md)."""
    job = G.graph["job"]
    ev: pd.DataFrame = G.graph["events"]
    pid = object_column(ev, "pid")
    fid = ev["flow_id"].to_numpy(np.int64)
    # distinct pids per rank in order of first appearance (digit strings = ints)
    codes, uniq = pd.factorize(pid, use_na_sentinel=True)
    norm = np.array([lane_key(u) for u in uniq.tolist()] if len(uniq) else [], dtype=object)
    rows = sorted(job["ranks"], key=lambda x: int(x["rank"]))
    local: dict[int, tuple[np.ndarray, list[Any]]] = {}
    for row in rows:
        if not row.get("full"):
            continue
        lo, hi = int(row["node_offset"]), int(row["node_offset"]) + int(row["n_events"])
        c = codes[lo:hi]
        ok = c >= 0
        nc, _ = pd.factorize(norm[c[ok]]) if ok.any() else (np.empty(0, np.int64), np.empty(0, object))
        idx = np.full(hi - lo, -1, dtype=np.int64)
        idx[ok] = nc
        # each distinct pid as first spelled (an int stays an int, a digit string a string)
        _, at = np.unique(nc, return_index=True)
        local[int(row["rank"])] = (idx, pid[lo:hi][ok][at].tolist())
    n_local = max((len(p) for _, p in local.values()), default=0)
    stride = pid_stride([int(r["rank"]) for r in rows], n_local)
    new_pid = np.full(len(ev), None, dtype=object)
    new_fid = fid.copy()
    layouts: dict[int, RankLayout] = {}
    flow_off = 0
    for row in rows:
        r = int(row["rank"])
        lay = RankLayout(r, bool(row.get("full")), 0, 0, r * stride, clock_offset_ns=int(row["clock_offset_ns"]))
        if r in local:
            lay.lo, lay.hi = int(row["node_offset"]), int(row["node_offset"]) + int(row["n_events"])
            idx, pids = local[r]
            lay.set_pids(pids)
            sl = slice(lay.lo, lay.hi)
            new_pid[sl] = np.where(idx >= 0, lay.pid_base + 1 + idx, None)
            f = fid[sl]
            has = f >= 0
            lay.flow_offset = flow_off
            new_fid[sl] = np.where(has, f + flow_off, f)
            flow_off += (int(f[has].max()) + 1) if has.any() else 0
        layouts[r] = lay
    out = ev.copy(deep=False)
    out["pid"] = new_pid
    out["flow_id"] = new_fid
    return out, layouts, stride


# --------------------------------------------------------------------------- per-rank pieces
def rank_additions(G: TraceGraph, lay: RankLayout) -> tuple[dict[int, dict[str, Any]], list[dict[str, Any]]]:
    """The single-rank additions of rank ``lay.rank`` that do not depend on the critical
    path, with job event ids and exported pids: args (launch delays, idle blame, process
    names ``rank r — <name>``) and extra events (GPU counters, names and sort indices).

    Counter ``ts`` are on the aligned clock, in ns."""
    from opgraph.multirank import rank_subgraph

    H = rank_subgraph(G, lay.rank, aligned=True)
    ev_r: pd.DataFrame = H.graph["events"]
    arr = H.arrays
    off = lay.lo
    args = {e + off: d for e, d in merge_args(launch_args(arr), idle_args(idle_time(H))).items()}
    counters = gpu_busy_counters(arr, ev_r) + queued_counters(arr, ev_r)
    counter_pids = list(device_pids(ev_r, activity_frame(arr)).values()) if counters else []
    meta = metadata_events(ev_r, counter_pids)
    for e in counters + meta:
        e["pid"] = lay.new_pid(e["pid"])
    prefix = f"rank {lay.rank} {_DASH} "
    named: set[int] = set()
    sorted_: set[int] = set()
    for e in meta:
        if e["name"] == "process_name":
            orig = lay.pids[e["pid"] - lay.pid_base - 1]
            e["args"] = {"name": prefix + e["args"]["name"], ARG_PREFIX + "rank": lay.rank, ARG_PREFIX + "pid": orig}
            named.add(e["pid"])
    # the trace's own process names and sort indices, rewritten in place (through args)
    ph, name, pid = object_column(ev_r, "ph"), object_column(ev_r, "name"), object_column(ev_r, "pid")
    rows_a = ev_r["args"].to_numpy(dtype=object)
    for i in np.flatnonzero((ph == "M") & np.isin(name, ("process_name", "process_sort_index"))).tolist():
        if pid[i] is None or pid[i] != pid[i]:
            continue
        p = lay.new_pid(pid[i])
        if name[i] == "process_name":
            old = (rows_a[i] or {}).get("name", f"process {lane_key(pid[i])}")
            extra = {"name": prefix + str(old), ARG_PREFIX + "rank": lay.rank, ARG_PREFIX + "pid": pid[i]}
            named.add(p)
        else:
            extra = {"sort_index": p}
            sorted_.add(p)
        args.setdefault(i + off, {}).update(extra)
    extra_ev: list[dict[str, Any]] = list(meta) + counters
    for i, orig in enumerate(lay.pids):
        p = lay.pid_base + 1 + i
        if p not in named:
            extra_ev.append({"ph": "M", "name": "process_name", "pid": p,
                             "args": {"name": f"{prefix}process {lane_key(orig)}", ARG_PREFIX + "rank": lay.rank,
                                      ARG_PREFIX + "pid": orig}})
        if p not in sorted_:
            extra_ev.append({"ph": "M", "name": "process_sort_index", "pid": p, "args": {"sort_index": p}})
    return args, extra_ev


# --------------------------------------------------------------------------- collectives
def collective_table(G: TraceGraph) -> pd.DataFrame:
    """The job's matched collective kernels with ``last_rank``, ``last_ts``, ``wait`` (ns,
    :func:`opgraph.analysis.stragglers.kernel_waits`) and the collective's ``lateness``
    (ns, :func:`opgraph.analysis.stragglers.per_collective`)."""
    coll = G.graph["job"]["collectives"]
    w = kernel_waits(coll)
    if not len(w):
        w["lateness"] = np.empty(0, np.int64)
        return w
    lat = per_collective(coll, w).set_index("coll_id")["lateness"]
    w["lateness"] = lat.reindex(w["coll_id"].to_numpy()).to_numpy(np.int64)
    return w


def collective_args(w: pd.DataFrame) -> dict[int, dict[str, Any]]:
    """``opgraph.coll_id``, ``opgraph.last_rank``, ``opgraph.wait_us`` (this kernel's wait
    for the last arrival, µs) and ``opgraph.lateness_us`` (the collective's lateness, µs)
    per collective kernel kept in full (job event ids)."""
    k = w[w["node"].to_numpy(np.int64) >= 0]
    keys = [ARG_PREFIX + x for x in ("coll_id", "last_rank", "wait_us", "lateness_us")]
    return {n: dict(zip(keys, vals)) for n, *vals in zip(
        k["node"].to_numpy(np.int64).tolist(), k["coll_id"].to_numpy(np.int64).tolist(),
        k["last_rank"].to_numpy(np.int64).tolist(), (k["wait"].to_numpy(np.int64) / 1000.0).tolist(),
        (k["lateness"].to_numpy(np.int64) / 1000.0).tolist())}


def summarised_slices(coll: pd.DataFrame, w: pd.DataFrame, layouts: dict[int, RankLayout]
                      ) -> tuple[list[dict[str, Any]], dict[tuple[int, int], tuple[int, int, int, int]]]:
    """For ranks not kept in full: one ``X`` slice per collective kernel of their rows in
    the collective table (aligned ns), in process ``pid_base`` with one thread per (device,
    stream), plus their names. Returns the events (``ts``/``dur`` in ns) and, per matched
    kernel ``(rank, coll_id)``, its slice's ``(pid, tid, ts, end)``."""
    summ = [r for r, lay in layouts.items() if not lay.full]
    out: list[dict[str, Any]] = []
    where: dict[tuple[int, int], tuple[int, int, int, int]] = {}
    if not summ:
        return out, where
    rows = coll[coll["rank"].isin(summ)].sort_values(["rank", "ts"], kind="stable")
    wk = w.set_index(["rank", "coll_id"]) if len(w) else None
    for r, g in rows.groupby("rank", sort=True):
        lay = layouts[int(r)]
        p = lay.pid_base
        out.append({"ph": "M", "name": "process_name", "pid": p,
                    "args": {"name": f"rank {r} {_DASH} summarised (collectives only)", ARG_PREFIX + "rank": int(r)}})
        out.append({"ph": "M", "name": "process_sort_index", "pid": p, "args": {"sort_index": p}})
        lanes, lane_keys = pd.factorize(pd.MultiIndex.from_arrays([g["device"].to_numpy(np.int64),
                                                                    g["stream"].to_numpy(np.int64)]))
        for j, (d, s) in enumerate(lane_keys.tolist()):
            out.append({"ph": "M", "name": "thread_name", "pid": p, "tid": j + 1,
                        "args": {"name": f"GPU {d} stream {s} (collectives)"}})
        for tid, cname, cid, ts, end in zip((lanes + 1).tolist(), g["coll"].astype(str).tolist(),
                                            g["coll_id"].to_numpy(np.int64).tolist(),
                                            g["ts"].to_numpy(np.int64).tolist(), g["end"].to_numpy(np.int64).tolist()):
            a: dict[str, Any] = {ARG_PREFIX + "rank": int(r)}
            if cid >= 0 and wk is not None and (int(r), cid) in wk.index:
                x = wk.loc[(int(r), cid)]
                a.update({ARG_PREFIX + "coll_id": cid, ARG_PREFIX + "last_rank": int(x["last_rank"]),
                          ARG_PREFIX + "wait_us": int(x["wait"]) / 1000.0,
                          ARG_PREFIX + "lateness_us": int(x["lateness"]) / 1000.0})
                where[(int(r), cid)] = (p, tid, ts, end)
            out.append({"ph": "X", "cat": SUMMARISED_CAT, "name": cname, "pid": p, "tid": tid, "ts": ts,
                        "dur": max(end - ts, 0), "args": a})
    return out, where


def _inside(a: int, b: int, t: int) -> int:
    """``t`` clamped into ``[a, b]``, kept :data:`FLOW_MARGIN_NS` inside when the slice is
    long enough (a quarter of it otherwise): a slice without children."""
    m = min(FLOW_MARGIN_NS, (b - a) // 4)
    return min(max(t, a + m), b - m)


def collective_flows(ev: pd.DataFrame, w: pd.DataFrame, idx: SliceIndex, first_id: int,
                     summarised: dict[tuple[int, int], tuple[int, int, int, int]]) -> list[dict[str, Any]]:
    """One v1 flow (``s``/``f``, cat :data:`COLL_FLOW_CAT`, ``bp: "e"``) per matched
    collective and participant other than the last-arriving rank: from the last rank's
    kernel, near its start (the last arrival), into the participant's kernel at the same
    time (the end of its wait; clamped into the kernel). Kernels of ranks not kept in full are their
    :func:`summarised_slices`; a participant with neither is skipped. ``ts`` in ns."""
    if not len(w):
        return []
    ts = ev["ts_ns"].to_numpy()
    end = ts + np.maximum(ev["dur_ns"].to_numpy(), 0)
    pid, tid = object_column(ev, "pid"), object_column(ev, "tid")

    def point(rank: int, cid: int, node: int, t: int) -> tuple[Any, Any, int] | None:
        if node >= 0:
            return pid[node], tid[node], idx.point(node, int(ts[node]), int(end[node]), t)
        got = summarised.get((rank, cid))
        if got is None:
            return None
        return got[0], got[1], _inside(got[2], got[3], t)

    out: list[dict[str, Any]] = []
    fid = first_id
    cols = [w[c].to_numpy(np.int64).tolist() for c in ("coll_id", "rank", "node", "last_ts", "is_last")]
    lasts = {cid: (r, n) for cid, r, n, _, il in zip(*cols) if il}
    for cid, r, n, lt, il in zip(*cols):
        if il:
            continue
        lr, ln = lasts[cid]
        src = point(lr, cid, ln, lt)
        dst = point(r, cid, n, src[2]) if src is not None else None
        if src is None or dst is None:
            continue
        a = {"coll_id": cid, "last_rank": lr, "to_rank": r}
        out.append({"ph": "s", "cat": COLL_FLOW_CAT, "name": COLL_FLOW_NAME, "id": fid, "pid": src[0],
                    "tid": src[1], "ts": src[2], "args": a})
        out.append({"ph": "f", "cat": COLL_FLOW_CAT, "name": COLL_FLOW_NAME, "id": fid, "pid": dst[0],
                    "tid": dst[1], "ts": dst[2], "bp": "e", "args": a})
        fid += 1
    return out


# --------------------------------------------------------------------------- the path
def path_tracks(cr: CrossRankResult, pid: int) -> list[dict[str, Any]]:
    """The process ``opgraph — cross-rank critical path``: one thread per step (tid = its
    position + 1, named ``ProfilerStep#N (window of rank r)``) whose ``X`` slices are the
    step's path segments, named by category (``args``: ``opgraph.rank``,
    ``opgraph.event``, ``opgraph.step``, ``opgraph.coll_id`` on collective kernels and, for
    waits, ``opgraph.wait_for_rank``). The segments tile the step's window, so their durations sum to the
    path length. ``ts``/``dur`` in ns."""
    out: list[dict[str, Any]] = [
        {"ph": "M", "name": "process_name", "pid": pid, "args": {"name": f"opgraph {_DASH} cross-rank critical path"}},
        {"ph": "M", "name": "process_sort_index", "pid": pid, "args": {"sort_index": -1}},
    ]
    for j, w in enumerate(cr.steps):
        tid = j + 1
        out.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid,
                    "args": {"name": f"{w.name} (window of rank {w.window_rank})"}})
        for s in w.path:
            a: dict[str, Any] = {ARG_PREFIX + "step": w.step, ARG_PREFIX + "rank": getattr(s, "rank", 0),
                                 ARG_PREFIX + "event": s.name}
            if getattr(s, "wait_for_rank", None) is not None:
                a[ARG_PREFIX + "wait_for_rank"] = s.wait_for_rank
            if getattr(s, "coll_id", None) is not None:
                a[ARG_PREFIX + "coll_id"] = s.coll_id
            out.append({"ph": "X", "cat": SEGMENT_CAT, "name": s.bound_by, "pid": pid, "tid": tid,
                        "ts": s.start_ns, "dur": s.dur_ns, "args": a})
    return out


# --------------------------------------------------------------------------- assembly
@dataclass
class JobOverlay:
    """What the job export writes: the remapped event table, the args merged into it, the
    events appended (ns), the top-level ``opgraph`` key, and counts for the summary."""

    events: pd.DataFrame
    add_args: dict[int, dict[str, Any]]
    extra: list[dict[str, Any]]
    top: dict[str, Any]
    counts: dict[str, int]


def build_job_overlay(G: TraceGraph, cr: CrossRankResult | None = None) -> JobOverlay:
    """Everything :func:`export_perfetto_job` writes, without writing it (see the module
    doc). ``cr``: a precomputed cross-rank critical path of ``G`` (every full rank)."""
    job = G.graph["job"]
    ev, layouts, stride = remap_events(G)
    full = [r for r, lay in layouts.items() if lay.full]
    summ = [r for r, lay in layouts.items() if not lay.full]
    if not full:
        raise ValueError("no rank of this job is kept in full (opgraph build --keep): nothing to draw")
    parts: list[dict[int, dict[str, Any]]] = []
    extra: list[dict[str, Any]] = []
    for r in full:
        a, e = rank_additions(G, layouts[r])
        parts.append(a)
        extra += e
    if cr is None:
        cr = crossrank_critical_path(G)
    w = collective_table(G)
    parts.append(collective_args(w))
    parts.append(critical_args(cr, CROSS_CATEGORIES))
    summ_ev, summ_at = summarised_slices(job["collectives"], w, layouts)
    idx = SliceIndex(ev, lane_codes(ev))
    fids = ev["flow_id"].to_numpy(np.int64)
    first = max(int(fids.max()) if len(fids) else -1, 0) + 1
    crit = critical_flows(ev, cr, first, idx)
    coll = collective_flows(ev, w, idx, first + len(crit) // 2, summ_at)
    path_pid = (max(layouts) + 1) * stride
    path = path_tracks(cr, path_pid)
    extra += summ_ev + path + crit + coll
    top = {"opgraph": {"job": {
        "ranks": [layouts[r].to_dict() | {"file": row.get("file"), "n_events": int(row.get("n_events", 0))}
                  for r, row in ((int(x["rank"]), x) for x in job["ranks"])],
        "kept_ranks": full, "summarised_ranks": summ, "pid_stride": stride, "path_pid": path_pid,
        "clock": "aligned: each rank's ts + its clock_offset_ns (docs/multirank.md)",
        "alignment": job.get("alignment"), "keep": job.get("keep"),
        "critical_path": [{"step": s.step, "name": s.name, "window_rank": s.window_rank,
                           "start_us": s.start_ns / 1000.0, "length_us": s.length_ns / 1000.0,
                           "ranks_on_path": s.ranks_on_path, "crossings": s.crossings()} for s in cr.steps],
        "notes": cr.notes,
    }}}
    add_args = merge_args(*parts)
    counts = {"ranks": len(layouts), "kept": len(full), "summarised": len(summ), "events": int(len(ev)),
              "steps": len(cr.steps), "critical_flows": len(crit) // 2, "collective_flows": len(coll) // 2,
              "annotated_events": len(add_args),
              "critical_events": sum(1 for d in add_args.values() if d.get(ARG_PREFIX + "critical")),
              "counter_events": sum(1 for e in extra if e.get("ph") == "C" and e.get("cat") == COUNTER_CAT)}
    return JobOverlay(ev, add_args, extra, top, counts)


def export_perfetto_job(G: TraceGraph, path: str | Path, inputs: tuple[str | Path, ...] = ()) -> dict[str, Any]:
    """Write the Perfetto overlay of job graph ``G`` to ``path`` (``.json`` or
    ``.json.gz``; never over one of ``inputs``). Returns a summary: the path and the counts of :class:`JobOverlay`."""
    from opgraph.export.perfetto.chrome import write_trace_doc

    if not isinstance(G.graph.get("job"), dict):
        raise ValueError("not a multi-rank job graph (build one with opgraph build DIR)")
    if not isinstance(G.graph.get("events"), pd.DataFrame):
        raise ValueError("the job graph has no source event table (G.graph['events'])")
    with gc_paused():
        ov = build_job_overlay(G)
        write_trace_doc(ov.top, ov.events, path, ov.add_args, ov.extra, inputs)
    return {"path": str(path), **ov.counts, "summarised_ranks": ov.top["opgraph"]["job"]["summarised_ranks"]}
