"""Memory timeline from the profiler's ``[memory]`` events (PyTorch ``profile_memory=True``;
the TensorBoard plugin's memory view, HTA's memory analysis).

Kineto writes one instant event (``ph`` ``i``, ``cat`` ``cpu_instant_event``, name
``[memory]``) per allocator call, on the thread that made it, with ``args``: ``Bytes``
(> 0 an allocation, < 0 a free), ``Addr``, ``Device Type`` (c10: 0 CPU, 1 CUDA, 6 HIP, ...),
``Device Id`` (-1 for the CPU) and, since 2021, the allocator's running ``Total Allocated``
and ``Total Reserved`` after the call. The reader keeps them in the event table
(``G.graph["events"]``, kind ``instant``); they are not graph nodes.

Per device (``device_type``, ``device``), over its events in time order (file order on
ties), docs/memory-timeline.md:

* ``allocated_bytes`` = the level before the first event + the running sum of ``Bytes``.
  The level before is taken from the trace (``Total Allocated`` − running sum at the first
  event that has it: memory allocated before the trace began); without ``Total
  Allocated`` (2021 traces) it is 0 and the series is relative to the trace start.
  Where the trace has ``Total Allocated``, each event is compared with it: the count of
  events that differ and the largest difference are reported (0 on every reference trace).
  ``reserved_bytes`` is the trace's ``Total Reserved`` (the caching allocator's pool).
* the peak of each over the whole trace and per step (the ``ProfilerStep`` windows of
  :func:`opgraph.graph.windows.select_windows`; the level carried into a step counts);
* ``allocators``: allocations (``Bytes`` > 0) grouped by the CPU op around them on their
  thread: ``op`` the outermost non-module CPU op (as the host breakdown's operators) and
  ``inner_op`` the innermost non-module CPU op (``(outside any op)`` when none);
* ``live_at_peak``: the allocations made up to the peak event and not freed by then
  (a free pairs with the latest allocation of the same ``Addr`` on the device; an
  allocation whose free is not in the trace stays live), grouped the same way. The rest of
  the peak, ``pre_trace_at_peak_bytes``, is memory allocated before the trace.

Bad events (``args`` not an object, ``Bytes`` / ``Device Type`` / ``Device Id`` missing or
not integers) are skipped and counted in :attr:`MemoryTimeline.warnings`; never an error.
Integer ns and bytes inside; the tables give µs and bytes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from opgraph.model.trace_graph import TraceGraph
from opgraph.analysis.device_breakdown import OUTSIDE_OPS
from opgraph.analysis.display import TableResult, json_records
from opgraph.analysis.graph_frame import GraphFrame, graph_frame
from opgraph.model.table import HealthItem

#: Name of the profiler's memory instants.
MEMORY_EVENT = "[memory]"
#: ``c10::DeviceType`` codes as written in ``Device Type``.
DEVICE_TYPES: dict[int, str] = {
    0: "CPU", 1: "CUDA", 2: "MKLDNN", 3: "OPENGL", 4: "OPENCL", 5: "IDEEP", 6: "HIP", 7: "FPGA", 8: "MAIA",
    9: "XLA", 10: "Vulkan", 11: "Metal", 12: "XPU", 13: "MPS", 14: "Meta", 15: "HPU", 16: "VE", 17: "Lazy",
    18: "IPU", 19: "MTIA", 20: "PrivateUse1",
}
#: Why a memory table has no row.
NO_MEMORY = "no [memory] events in this trace (record them with torch.profiler's profile_memory=True)"

DEVICE_COLUMNS: tuple[str, ...] = (
    "device_type", "device", "events", "allocations", "frees", "alloc_bytes", "freed_bytes", "first_us", "last_us",
    "start_allocated_bytes", "end_allocated_bytes", "peak_allocated_bytes", "peak_allocated_us",
    "peak_reserved_bytes", "live_at_peak_bytes", "pre_trace_at_peak_bytes", "live_at_end_bytes",
    "has_totals", "total_mismatch_events", "max_total_mismatch_bytes")
SERIES_COLUMNS: tuple[str, ...] = ("device_type", "device", "ts_us", "eid", "bytes", "allocated_bytes",
                                   "reserved_bytes", "trace_allocated_bytes")
STEP_COLUMNS: tuple[str, ...] = ("step", "name", "device_type", "device", "start_us", "end_us",
                                 "start_allocated_bytes", "end_allocated_bytes", "peak_allocated_bytes",
                                 "peak_allocated_us", "peak_reserved_bytes", "allocations", "alloc_bytes")
ALLOCATOR_COLUMNS: tuple[str, ...] = ("device_type", "device", "op", "inner_op", "allocations", "alloc_bytes",
                                      "share", "live_at_end_bytes")
LIVE_COLUMNS: tuple[str, ...] = ("device_type", "device", "op", "inner_op", "allocations", "live_bytes",
                                 "share_of_peak")


def device_type_name(code: int) -> str:
    """``CUDA`` for 1, ``HIP`` for 6, ...; ``type <n>`` for a code c10 does not list."""
    return DEVICE_TYPES.get(int(code), f"type {int(code)}")


# --------------------------------------------------------------------------- parsing
def _int_column(s: pd.Series) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(int64 values, present, valid) of one args column: integers (and integral floats) are
    valid; None/NaN is absent; anything else (strings, bools, lists, fractions) is invalid."""
    n = len(s)
    if pd.api.types.is_integer_dtype(s.dtype) and not pd.api.types.is_bool_dtype(s.dtype):
        v = s.to_numpy(dtype=np.int64, na_value=0) if s.hasnans else s.to_numpy(dtype=np.int64)
        ok = ~s.isna().to_numpy() if s.hasnans else np.ones(n, dtype=bool)
        return np.where(ok, v, 0), ok, ok
    if pd.api.types.is_float_dtype(s.dtype):
        f = s.to_numpy(dtype=np.float64)
        present = ~np.isnan(f)
        ok = present & (np.abs(f) < 2.0**63) & (np.floor(f) == f)
        return np.where(ok, f, 0).astype(np.int64), present, ok
    if pd.api.types.is_bool_dtype(s.dtype):
        return np.zeros(n, np.int64), np.ones(n, dtype=bool), np.zeros(n, dtype=bool)
    # object: mixed types (bad input only); classified per distinct type, values per element
    vals = s.to_numpy(dtype=object)
    types = np.array([type(v) for v in vals.tolist()], dtype=object)
    present = ~((types == type(None)) | np.array([isinstance(v, float) and v != v for v in vals.tolist()], bool))
    is_int = types == int
    is_float = types == float
    out = np.zeros(n, np.int64)
    ok = np.zeros(n, dtype=bool)
    for i in np.flatnonzero(is_int | is_float).tolist():
        v = vals[i]
        if (type(v) is int and -(2**63) <= v < 2**63) or (type(v) is float and v == v and abs(v) < 2.0**63
                                                         and float(v).is_integer()):
            out[i] = int(v)
            ok[i] = True
    return out, present, ok


def _addr_codes(s: pd.Series) -> np.ndarray:
    """One int per distinct ``Addr`` (ints or strings), -1 where absent or of another type."""
    vals = s.to_numpy(dtype=object)
    if s.dtype == object:
        bad = np.array([not isinstance(v, (int, str)) or isinstance(v, bool) for v in vals.tolist()], dtype=bool)
        vals = np.where(bad, None, vals)
    codes, _ = pd.factorize(vals)
    return codes.astype(np.int64)


@dataclass
class MemoryEvents:
    """The valid ``[memory]`` events of a trace, sorted by (device key, ts, eid), with the
    running allocated level; see :func:`memory_events`."""

    frame: pd.DataFrame
    warnings: list[HealthItem] = field(default_factory=list)
    total: int = 0


def _warn(out: list[HealthItem], code: str, mask: np.ndarray, eid: np.ndarray, message: str) -> None:
    if mask.any():
        out.append(HealthItem(code, int(mask.sum()), int(eid[np.flatnonzero(mask)[0]]), message))


def memory_events(ev: pd.DataFrame | None) -> MemoryEvents:
    """The ``[memory]`` events of an event table, parsed and checked (vectorised).

    Returns a :class:`MemoryEvents` whose ``frame`` has one row per valid event, sorted per
    device by time: ``eid``, ``ts_ns``, ``pid``, ``tid``, ``device_type``, ``device``,
    ``bytes``, ``addr`` (code, -1 none), ``trace_allocated`` / ``trace_reserved`` (int64,
    with ``has_allocated`` / ``has_reserved`` masks), ``group`` (device index),
    ``allocated`` (the level after the event, bytes) and ``baseline`` (the level before the
    device's first event)."""
    empty = pd.DataFrame({c: np.empty(0, np.int64) for c in (
        "eid", "ts_ns", "device_type", "device", "bytes", "addr", "trace_allocated", "trace_reserved", "group",
        "allocated", "baseline")})
    if ev is None or not len(ev) or "name" not in ev:
        return MemoryEvents(empty)
    sel = (ev["name"] == MEMORY_EVENT).to_numpy(dtype=bool).copy()
    if "kind" in ev:
        sel &= (ev["kind"] == "instant").to_numpy(dtype=bool)
    if "has_ts" in ev:
        sel &= ev["has_ts"].to_numpy(dtype=bool)
    rows = np.flatnonzero(sel)
    if not len(rows):
        return MemoryEvents(empty)
    warnings: list[HealthItem] = []
    eid = ev["eid"].to_numpy(dtype=np.int64)[rows]
    args = ev["args"].to_numpy(dtype=object)[rows]
    is_dict = np.fromiter((type(a) is dict for a in args.tolist()), dtype=bool, count=len(args))
    _warn(warnings, "memory_bad_args", ~is_dict, eid, "[memory] events without an args object: skipped")
    keys = ["Bytes", "Addr", "Device Type", "Device Id", "Total Allocated", "Total Reserved"]
    a = pd.DataFrame.from_records([x if ok else {} for x, ok in zip(args.tolist(), is_dict.tolist())],
                                  columns=keys)
    nbytes, b_present, b_ok = _int_column(a["Bytes"])
    dtype, t_present, t_ok = _int_column(a["Device Type"])
    dev, d_present, d_ok = _int_column(a["Device Id"])
    ta, ta_present, ta_ok = _int_column(a["Total Allocated"])
    tr, tr_present, tr_ok = _int_column(a["Total Reserved"])
    _warn(warnings, "memory_bytes_missing", is_dict & ~b_present, eid,
          "[memory] events without 'Bytes': skipped")
    _warn(warnings, "memory_bytes_bad", is_dict & b_present & ~b_ok, eid,
          "[memory] events whose 'Bytes' is not an integer: skipped")
    dev_bad = is_dict & b_ok & ~(t_ok & d_ok)
    _warn(warnings, "memory_device_bad", dev_bad, eid,
          "[memory] events whose 'Device Type' or 'Device Id' is missing or not an integer: skipped")
    keep = is_dict & b_ok & t_ok & d_ok
    _warn(warnings, "memory_total_bad", keep & ((ta_present & ~ta_ok) | (tr_present & ~tr_ok)), eid,
          "[memory] events whose 'Total Allocated' or 'Total Reserved' is not an integer: that total is ignored")
    addr = _addr_codes(a["Addr"])
    _warn(warnings, "memory_no_addr", keep & (addr < 0), eid,
          "[memory] events without an 'Addr': their allocations cannot be paired with frees, so live-at-peak "
          "is not computed for their device")
    ts = ev["ts_ns"].to_numpy(dtype=np.int64)[rows]
    pid = ev["pid"].to_numpy(dtype=object)[rows] if "pid" in ev else np.full(len(rows), None, dtype=object)
    tid = ev["tid"].to_numpy(dtype=object)[rows] if "tid" in ev else np.full(len(rows), None, dtype=object)
    k = np.flatnonzero(keep)
    df = pd.DataFrame({"eid": eid[k], "ts_ns": ts[k], "pid": pid[k], "tid": tid[k], "device_type": dtype[k],
                       "device": dev[k], "bytes": nbytes[k], "addr": addr[k], "trace_allocated": ta[k],
                       "has_allocated": ta_ok[k], "trace_reserved": tr[k], "has_reserved": tr_ok[k]})
    if not len(df):
        return MemoryEvents(empty, warnings, int(len(rows)))
    o = np.lexsort((df["eid"].to_numpy(), df["ts_ns"].to_numpy(), df["device"].to_numpy(),
                    df["device_type"].to_numpy()))
    df = df.iloc[o].reset_index(drop=True)
    dt_, dv_ = df["device_type"].to_numpy(), df["device"].to_numpy()
    first = np.ones(len(df), dtype=bool)
    first[1:] = (dt_[1:] != dt_[:-1]) | (dv_[1:] != dv_[:-1])
    group = np.cumsum(first) - 1
    starts = np.flatnonzero(first)
    b = df["bytes"].to_numpy()
    cs = np.cumsum(b)
    run = cs - np.repeat(cs[starts] - b[starts], np.diff(np.append(starts, len(df))))
    # level before each device's first event: from its first event that has Total Allocated
    has = df["has_allocated"].to_numpy()
    anchor = pd.Series(np.where(has, df["trace_allocated"].to_numpy() - run, 0)).where(has)
    base = anchor.groupby(group).first()  # NaN where the device has no Total Allocated
    baseline = base.reindex(range(len(starts))).fillna(0).to_numpy().astype(np.int64)
    df["group"] = group
    df["baseline"] = baseline[group]
    df["allocated"] = df["baseline"].to_numpy() + run
    return MemoryEvents(df, warnings, int(len(rows)))


# --------------------------------------------------------------------------- ops
def _alloc_ops(f: GraphFrame, m: pd.DataFrame, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(outermost, innermost) non-module CPU op name around each event ``rows`` of ``m`` on
    its thread (:data:`OUTSIDE_OPS` for none): the innermost host range containing the
    event's time (``start <= t <= end``), found by one sorted search per thread and a walk up
    the nesting (vectorised over the events, one step per level)."""
    n_q = len(rows)
    outer = np.full(n_q, OUTSIDE_OPS, dtype=object)
    inner = np.full(n_q, OUTSIDE_OPS, dtype=object)
    if not n_q or not len(f):
        return outer, inner
    from opgraph.analysis.op_hierarchy import DEFAULT_MODULE_MARKERS, host_hierarchy, module_mask, outermost_ops
    from opgraph.model.tree import tree_depths
    from opgraph.analysis.kind_codes import K_CPU_OP

    hh = host_hierarchy(f)
    _, top = outermost_ops(f)
    cand = (f.kind == K_CPU_OP) & ~module_mask(f.name, DEFAULT_MODULE_MARKERS)
    inner_of = np.full(len(f), -1, dtype=np.int64)
    for lvl in hh.levels:
        p = hh.parent[lvl]
        inherited = np.where(p >= 0, inner_of[np.maximum(p, 0)], -1)
        inner_of[lvl] = np.where(cand[lvl], lvl, inherited)
    hp = np.flatnonzero(hh.host)
    if not len(hp):
        return outer, inner
    # thread of each query, as a lane code of the frame (same (str(pid), str(tid)) identity)
    lanes, first = np.unique(f.lane[hp], return_index=True)
    fkey = pd.Series(f.pid[hp[first]], dtype=object).astype(str) + "\x1f" + pd.Series(
        f.tid[hp[first]], dtype=object).astype(str)
    lane_of = dict(zip(fkey.tolist(), lanes.tolist()))
    qkey = (pd.Series(m["pid"].to_numpy()[rows], dtype=object).astype(str) + "\x1f"
            + pd.Series(m["tid"].to_numpy()[rows], dtype=object).astype(str))
    qc, qu = pd.factorize(qkey)
    qlane = np.array([lane_of.get(u, -1) for u in qu.tolist()], dtype=np.int64)[qc]
    t = m["ts_ns"].to_numpy()[rows]
    depth = tree_depths(hh.parent)
    o = hp[np.lexsort((depth[hp], f.ts[hp], f.lane[hp]))]
    o_lane = f.lane[o]
    cur = np.full(n_q, -1, dtype=np.int64)
    for ln in np.unique(qlane[qlane >= 0]).tolist():
        lo, hi = np.searchsorted(o_lane, ln, "left"), np.searchsorted(o_lane, ln, "right")
        if lo == hi:
            continue
        q = np.flatnonzero(qlane == ln)
        j = np.searchsorted(f.ts[o[lo:hi]], t[q], side="right") - 1
        cur[q] = np.where(j >= 0, o[lo + np.maximum(j, 0)], -1)
    live = np.flatnonzero(cur >= 0)
    while len(live):  # climb while the candidate ended before the event
        c = cur[live]
        out_ = f.end[c] < t[live]
        live = live[out_]
        cur[live] = hh.parent[cur[live]]
        live = live[cur[live] >= 0]
    has = cur >= 0
    tp = np.where(has, top[np.maximum(cur, 0)], -1)
    ip = np.where(has, inner_of[np.maximum(cur, 0)], -1)
    outer[tp >= 0] = f.name[tp[tp >= 0]]
    inner[ip >= 0] = f.name[ip[ip >= 0]]
    return outer, inner


def _pair_frees(m: pd.DataFrame, warnings: list[HealthItem]) -> np.ndarray:
    """Row (in ``m``) of each allocation's free, -1 when not in the trace or not an
    allocation. Per (device, Addr), in time order, a free ends the allocation just before it."""
    n = len(m)
    free_row = np.full(n, -1, dtype=np.int64)
    addr = m["addr"].to_numpy()
    idx = np.flatnonzero(addr >= 0)
    if len(idx) < 2:
        return free_row
    g = m["group"].to_numpy()
    o = idx[np.lexsort((idx, addr[idx], g[idx]))]
    b = m["bytes"].to_numpy()
    same = (g[o[1:]] == g[o[:-1]]) & (addr[o[1:]] == addr[o[:-1]])
    is_alloc, nxt_free = b[o[:-1]] > 0, b[o[1:]] < 0
    pair = same & is_alloc & nxt_free
    free_row[o[:-1][pair]] = o[1:][pair]
    eid = m["eid"].to_numpy()
    mism = np.zeros(n, dtype=bool)
    mism[o[1:][pair]] = (-b[o[1:][pair]]) != b[o[:-1][pair]]
    _warn(warnings, "memory_free_size_mismatch", mism, eid,
          "[memory] frees whose size differs from their allocation's (paired by address anyway)")
    reuse = np.zeros(n, dtype=bool)
    reuse[o[:-1][same & is_alloc & (b[o[1:]] > 0)]] = True
    _warn(warnings, "memory_alloc_without_free", reuse, eid,
          "[memory] allocations whose address is allocated again before any free in the trace: their free "
          "is missing, so they are counted live to the end")
    return free_row


# --------------------------------------------------------------------------- result
@dataclass(repr=False)
class MemoryTimeline(TableResult):
    """Result of :func:`memory_timeline` (bytes; times in µs in the tables).

    ``devices``: one row per device (whole-trace peaks, live-at-peak, consistency with the
    trace's totals); ``series``: one row per ``[memory]`` event (``allocated_bytes`` and
    ``reserved_bytes`` after it); ``steps``: per step and device, the peak; ``allocators``:
    bytes and allocations per (device, op, inner op), largest first; ``live_at_peak``: the
    bytes live at each device's peak per (op, inner op); ``warnings``: skipped or odd events.

    Examples
    --------
    >>> import opgraph
    >>> from opgraph.analysis.memory_timeline import memory_timeline
    >>> m = memory_timeline(opgraph.load(opgraph.example_trace("memory")))
    >>> gpu = m.to_frame().set_index("device_type").loc["CUDA"]
    >>> int(gpu["peak_allocated_bytes"]) >> 20, int(gpu["live_at_peak_bytes"]) >> 20  # MiB
    (102, 38)
    >>> a = m.to_frame("allocators")
    >>> a[a["device_type"] == "CUDA"][["op", "inner_op", "allocations"]].values.tolist()[:2]
    [['aten::linear', 'aten::addmm', 3], ['aten::relu', 'aten::relu', 3]]
    """

    devices: pd.DataFrame
    series: pd.DataFrame
    steps: pd.DataFrame
    allocators: pd.DataFrame
    live_at_peak: pd.DataFrame
    warnings: list[HealthItem]
    memory_events: int = 0
    window_source: str = "all"
    main_table: ClassVar[str] = "devices"
    display_tables: ClassVar[tuple[str, ...]] = ("devices", "steps", "allocators", "live_at_peak")

    @property
    def empty(self) -> bool:
        """True when the trace has no usable ``[memory]`` event."""
        return not len(self.devices)

    def tables(self) -> dict[str, pd.DataFrame]:
        """``devices``, ``series``, ``steps``, ``allocators``, ``live_at_peak`` (µs, bytes)."""
        return {"devices": self.devices, "series": self.series, "steps": self.steps,
                "allocators": self.allocators, "live_at_peak": self.live_at_peak}

    def to_dict(self, series: bool = False) -> dict[str, Any]:
        """JSON-ready (``schemas/memory-timeline.schema.json``); ``series``: include the
        per-event series too."""
        doc: dict[str, Any] = {
            "memory_events": int(self.memory_events), "window_source": self.window_source,
            "devices": json_records(self.devices), "steps": json_records(self.steps),
            "allocators": json_records(self.allocators), "live_at_peak": json_records(self.live_at_peak),
            "warnings": [w.to_dict() for w in self.warnings],
        }
        if series:
            doc["series"] = json_records(self.series)
        return doc


def _empty(cols: tuple[str, ...]) -> pd.DataFrame:
    return pd.DataFrame({c: [] for c in cols})


def _nullable(v: np.ndarray, ok: np.ndarray) -> pd.Series:
    return pd.Series(pd.array(np.where(ok, v, 0), dtype="Int64")).mask(~ok)


def memory_timeline(G: TraceGraph, window: str | None = None) -> MemoryTimeline:
    """Allocated / reserved memory over time per device, peaks per step and over the trace,
    and the ops that allocate (module docstring). ``window``: the steps (``None``: the
    ``ProfilerStep`` windows), ``"all"`` or a regex (:func:`~opgraph.graph.windows.select_windows`)."""
    me = memory_events(G.graph.get("events"))
    m, warnings = me.frame, list(me.warnings)
    if not len(m):
        return MemoryTimeline(_empty(DEVICE_COLUMNS), _empty(SERIES_COLUMNS), _empty(STEP_COLUMNS),
                              _empty(ALLOCATOR_COLUMNS), _empty(LIVE_COLUMNS), warnings, me.total, "all")
    n = len(m)
    g = m["group"].to_numpy()
    ts = m["ts_ns"].to_numpy()
    b = m["bytes"].to_numpy()
    alloc = m["allocated"].to_numpy()
    has_res = m["has_reserved"].to_numpy()
    res = m["trace_reserved"].to_numpy()
    has_ta = m["has_allocated"].to_numpy()
    ta = m["trace_allocated"].to_numpy()
    starts = np.flatnonzero(np.r_[True, g[1:] != g[:-1]])
    ends = np.append(starts[1:], n)
    ng = len(starts)
    type_names = np.array([device_type_name(c) for c in m["device_type"].to_numpy()[starts].tolist()], dtype=object)
    dev_ids = m["device"].to_numpy()[starts]

    # peaks (first maximum) per device
    o = np.lexsort((np.arange(n), -alloc, g))
    peak_row = o[np.r_[True, g[o][1:] != g[o][:-1]]]
    res_f = np.where(has_res, res, -1).astype(np.int64)
    peak_res = np.maximum.reduceat(res_f, starts)
    # allocations, frees, pairing, live sets
    is_alloc = b > 0
    free_row = _pair_frees(m, warnings)
    pos = np.arange(n)
    free_pos = np.where(free_row >= 0, free_row, n + 1)
    paired_dev = np.bincount(g, weights=(m["addr"].to_numpy() < 0), minlength=ng) == 0
    live_mask = is_alloc & (pos <= peak_row[g]) & (free_pos > peak_row[g]) & paired_dev[g]
    live_end = is_alloc & (free_row < 0)
    a_rows = np.flatnonzero(is_alloc)
    f = graph_frame(G)  # one column view for the allocating ops and the step windows
    outer, inner = _alloc_ops(f, m, a_rows)

    def gsum(w: np.ndarray) -> np.ndarray:
        return np.bincount(g, weights=w, minlength=ng).astype(np.int64)

    mism = has_ta & (alloc != ta)
    diff = np.where(has_ta, np.abs(alloc - ta), 0)
    live_at_peak = gsum(np.where(live_mask, b, 0))
    peak_alloc = alloc[peak_row]
    devices = pd.DataFrame({
        "device_type": type_names, "device": dev_ids, "events": np.diff(np.append(starts, n)),
        "allocations": gsum(is_alloc), "frees": gsum(b < 0), "alloc_bytes": gsum(np.where(is_alloc, b, 0)),
        "freed_bytes": gsum(np.where(b < 0, -b, 0)), "first_us": ts[starts] / 1e3, "last_us": ts[ends - 1] / 1e3,
        "start_allocated_bytes": m["baseline"].to_numpy()[starts], "end_allocated_bytes": alloc[ends - 1],
        "peak_allocated_bytes": peak_alloc, "peak_allocated_us": ts[peak_row] / 1e3,
        "peak_reserved_bytes": _nullable(peak_res, peak_res >= 0),
        "live_at_peak_bytes": _nullable(live_at_peak, paired_dev),
        "pre_trace_at_peak_bytes": _nullable(peak_alloc - live_at_peak, paired_dev & (np.bincount(
            g, weights=has_ta, minlength=ng) > 0)),
        "live_at_end_bytes": _nullable(gsum(np.where(live_end, b, 0)), paired_dev),
        "has_totals": np.bincount(g, weights=has_ta, minlength=ng) > 0,
        "total_mismatch_events": gsum(mism),
        "max_total_mismatch_bytes": np.maximum.reduceat(diff, starts),
    })
    if mism.any():
        _warn(warnings, "memory_total_mismatch", mism, m["eid"].to_numpy(),
              "[memory] events whose 'Total Allocated' differs from the running sum of 'Bytes' (events missing "
              "from the trace, or several threads' events out of order): see total_mismatch_events")
    series = pd.DataFrame({
        "device_type": type_names[g], "device": m["device"].to_numpy(), "ts_us": ts / 1e3,
        "eid": m["eid"].to_numpy(), "bytes": b, "allocated_bytes": alloc,
        "reserved_bytes": _nullable(res, has_res), "trace_allocated_bytes": _nullable(ta, has_ta)})

    # allocators and live at peak, by (device, op, inner op)
    ad = pd.DataFrame({"g": g[a_rows], "op": outer, "inner_op": inner, "bytes": b[a_rows],
                       "live_end": np.where(live_end[a_rows], b[a_rows], 0),
                       "live_peak": live_mask[a_rows]})
    tot = gsum(np.where(is_alloc, b, 0))
    allocators = _empty(ALLOCATOR_COLUMNS)
    live = _empty(LIVE_COLUMNS)
    if len(ad):
        agg = ad.groupby(["g", "op", "inner_op"], sort=False).agg(
            allocations=("bytes", "size"), alloc_bytes=("bytes", "sum"), live_at_end_bytes=("live_end", "sum"))
        agg = agg.reset_index()
        gi = agg["g"].to_numpy()
        agg["share"] = agg["alloc_bytes"] / np.maximum(tot[gi], 1)
        agg["device_type"], agg["device"] = type_names[gi], dev_ids[gi]
        allocators = agg.sort_values(["g", "alloc_bytes", "allocations", "op", "inner_op"],
                                     ascending=[True, False, False, True, True])[list(ALLOCATOR_COLUMNS)]
        allocators = allocators.reset_index(drop=True)
        lp = ad[ad["live_peak"]]
        if len(lp):
            la = lp.groupby(["g", "op", "inner_op"], sort=False).agg(
                allocations=("bytes", "size"), live_bytes=("bytes", "sum")).reset_index()
            gi = la["g"].to_numpy()
            la["share_of_peak"] = la["live_bytes"] / np.maximum(peak_alloc[gi], 1)
            la["device_type"], la["device"] = type_names[gi], dev_ids[gi]
            live = la.sort_values(["g", "live_bytes", "op", "inner_op"], ascending=[True, False, True, True])
            live = live[list(LIVE_COLUMNS)].reset_index(drop=True)

    steps, source = _steps(f, window, m, starts, ends, type_names, dev_ids)
    return MemoryTimeline(devices, series, steps, allocators, live, warnings, me.total, source)


def _steps(f: GraphFrame, window: str | None, m: pd.DataFrame, starts: np.ndarray, ends: np.ndarray,
           type_names: np.ndarray, dev_ids: np.ndarray) -> tuple[pd.DataFrame, str]:
    """Per window and device: the allocated level carried in, at the end, its peak (and
    when), the reserved peak, and the allocations inside ``[start, end)``."""
    from opgraph.graph.windows import select_windows

    if not len(f):
        return _empty(STEP_COLUMNS), "all"
    w = select_windows(f, window, lanes=False)
    if not w.is_steps:
        return _empty(STEP_COLUMNS), w.source
    ts = m["ts_ns"].to_numpy()
    alloc = m["allocated"].to_numpy()
    b = m["bytes"].to_numpy()
    has_res = m["has_reserved"].to_numpy()
    res = np.where(has_res, m["trace_reserved"].to_numpy(), -1)
    base = m["baseline"].to_numpy()
    ws = np.array([x.start_ns for x in w], dtype=np.int64)
    we = np.array([x.end_ns for x in w], dtype=np.int64)
    rows = []
    for gi, (s0, e0) in enumerate(zip(starts.tolist(), ends.tolist())):
        t, a, r, bb = ts[s0:e0], alloc[s0:e0], res[s0:e0], b[s0:e0]
        # reserved carried forward over events without it
        r_ff = np.maximum.accumulate(np.where(r >= 0, np.arange(len(r)), -1))
        r_level = np.where(r_ff >= 0, r[np.maximum(r_ff, 0)], -1)
        lo = np.searchsorted(t, ws, "left")
        hi = np.searchsorted(t, we, "left")
        cs = np.concatenate([[0], np.cumsum(np.where(bb > 0, bb, 0))])
        cn = np.concatenate([[0], np.cumsum(bb > 0)])
        for k, win in enumerate(w):
            l, h = int(lo[k]), int(hi[k])
            carried = int(a[l - 1]) if l > 0 else int(base[s0])
            end_level = int(a[h - 1]) if h > 0 else int(base[s0])
            peak, peak_t = carried, win.start_ns
            if h > l:
                j = l + int(np.argmax(a[l:h]))
                if a[j] > peak:
                    peak, peak_t = int(a[j]), int(t[j])
            rc = int(r_level[l - 1]) if l > 0 else -1
            rp = max(rc, int(r[l:h].max()) if h > l else -1)
            rows.append({"step": win.step, "name": win.name, "device_type": type_names[gi], "device": int(dev_ids[gi]),
                         "start_us": win.start_ns / 1e3, "end_us": win.end_ns / 1e3,
                         "start_allocated_bytes": carried, "end_allocated_bytes": end_level,
                         "peak_allocated_bytes": peak, "peak_allocated_us": peak_t / 1e3,
                         "peak_reserved_bytes": rp if rp >= 0 else None,
                         "allocations": int(cn[h] - cn[l]), "alloc_bytes": int(cs[h] - cs[l])})
    df = pd.DataFrame(rows, columns=list(STEP_COLUMNS))
    df["peak_reserved_bytes"] = pd.array(df["peak_reserved_bytes"].tolist(), dtype="Int64")
    return df, w.source
