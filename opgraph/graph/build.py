"""Canonical event table -> the typed DAG, a :class:`~opgraph.model.trace_graph.TraceGraph`
(see docs/model.md).

The work is done on numpy arrays (sorted sweeps, merges, searchsorted) and the graph is
assembled in bulk at the end into its column payload (no per-node dict is made).

This module holds the builder's phases (:func:`build_payload`: nesting and lane order,
launches, flows, syncs and inferred waits, cross-thread links, assembly; times in ns) and
:func:`build_graph`. The linkers it calls live in:

* :mod:`~opgraph.model.edge_kinds`: :data:`EDGE_KINDS`;
* :mod:`~opgraph.graph.nesting`, :mod:`~opgraph.graph.linking`: nesting sweeps, launches;
* :mod:`~opgraph.graph.flows`: flow events to edges (:func:`link_flows`);
* :mod:`~opgraph.graph.syncs`: sync and event-wait edges (:func:`link_syncs`,
  :data:`SYNC_TOLERANCE_NS`, :func:`blocking_call_modes`, :func:`pageable_dtoh`);
* :mod:`~opgraph.graph.stream_joins`: inferred stream joins (:func:`infer_stream_joins`);
* :mod:`~opgraph.graph.streams`, :mod:`~opgraph.graph.threads`: inferred stream waits,
  hand-offs and forward/backward links;
* :mod:`~opgraph.graph.assemble`: edge lists to the column payload;
* :mod:`~opgraph.model.cycles`: cycle check and breaking (:func:`has_cycle`);
* :mod:`~opgraph.graph.summary`: counts by kind (:func:`graph_summary`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from opgraph.gc_pause import gc_paused
from opgraph.version import GRAPH_SCHEMA_VERSION, __version__
from opgraph.graph.assemble import assemble_payload
from opgraph.model.cycles import MAX_CYCLE_BREAKS, break_cycles, has_cycle
from opgraph.model.edge_kinds import EDGE_KINDS
from opgraph.graph.event_columns import EventColumns
from opgraph.graph.flows import link_flows
from opgraph.graph.linking import LAUNCH_API_RE, PRE_TRACE_NS, Edges, StreamIndex, link_launches
from opgraph.graph.nesting import nest_sweep, sibling_pairs
from opgraph.model.packed_args import attach_raw_args
from opgraph.graph.stream_joins import JOIN_MAX_GAP_NS, JOIN_MIN_DELAY_NS, infer_stream_joins
from opgraph.graph.streams import awaited_work, infer_stream_waits, infer_wait_calls
from opgraph.graph.summary import edge_kind_counts, graph_summary, node_kind_counts
from opgraph.graph.syncs import (
    SYNC_TOLERANCE_NS, blocking_call_modes, link_syncs, pageable_dtoh, synchronous_launches,
)
from opgraph.graph.threads import fwdbwd_by_sequence, infer_handoffs
from opgraph.model.event_args import ArgsColumn
from opgraph.model.table import (
    DEVICE_ACTIVITY_KINDS, DEVICE_KINDS, HOST_KINDS, NONE_ID, EventTable, HealthItem,
)
from opgraph.names import annotation_like, names_where

if TYPE_CHECKING:
    from opgraph.model.trace_graph import TraceGraph

Step = Callable[[str], None]


def _noop(_: str) -> None:
    return None


def _device_key(device: np.ndarray, stream: np.ndarray) -> np.ndarray:
    """One int64 per (device, stream): device in the high bits, stream + 1 in the low 32."""
    return (device.astype(np.int64) + 1) * (1 << 32) + (stream.astype(np.int64) + 1)


def split_device_key(key: int) -> tuple[int, int]:
    """Inverse of the device key: (device, stream)."""
    return (key >> 32) - 1, (key & 0xFFFFFFFF) - 1


def build_graph(table: EventTable, step: Step = _noop) -> "TraceGraph":
    """Build the typed DAG of a trace.

    Parameters
    ----------
    table : EventTable
        A reader's output (times in ns).
    step : callable, optional
        Called with a phase name as building proceeds (for progress display).

    Returns
    -------
    TraceGraph
        The graph in columns (:class:`~opgraph.model.trace_graph.TraceGraph`, docs/model.md).
        Its nodes are event ids with ``kind``, ``name``, ``ts`` and ``dur`` (ns), ``pid``,
        ``tid``, ``device``, ``stream``, ``correlation``, ``external_id`` and ``args``; edges
        carry ``kind`` (one of :data:`EDGE_KINDS`). ``G.graph`` holds the source
        description, device properties, the canonical ``events`` table, the trace
        ``span_ns`` and the trace-health list ``health``. ``G.to_networkx()`` is the
        ``networkx.DiGraph`` view.
    """
    from opgraph.model.trace_graph import TraceGraph

    with gc_paused():
        return TraceGraph(build_payload(table, step))


def build_payload(table: EventTable, step: Step = _noop) -> dict[str, Any]:
    """The graph of ``table`` in column form (what ``.gpickle`` files hold and a
    :class:`~opgraph.model.trace_graph.TraceGraph` wraps). ``opgraph build`` saves it
    directly, without making millions of Python dicts it would only take apart again."""
    if "graph_replay" not in table.meta:  # graph replays -> the ops that captured them (graph/graph_replay.py)
        from opgraph.graph.graph_replay import attach_captures
        attach_captures(table)
    ev = table.frame   # without args while they are raw JSON text (read by rows: table.event_args())
    args = table.event_args()
    health: list[HealthItem] = list(table.health)

    def warn(code: str, count: int, example: int | None, message: str) -> None:
        if count:
            health.append(HealthItem(code, int(count), None if example is None else int(example), message))

    c = EventColumns.of(ev)   # lanes: one code per (pid, tid); the node mask
    kind, ts, dur, end, eid, corr = c.kind, c.ts, c.dur, c.end, c.eid, c.corr
    pid_codes, lane, is_node = c.pid_codes, c.lane, c.is_node
    device = ev["device"].to_numpy()
    stream = ev["stream"].to_numpy()
    names = ev["name"].to_numpy(dtype=object)

    is_host = is_node & c.kind_in(*HOST_KINDS)
    is_dev = is_node & c.kind_in(*DEVICE_KINDS)
    is_act = is_node & c.kind_in(*DEVICE_ACTIVITY_KINDS)
    is_rt = is_node & c.kind_in("runtime")
    step("nesting")

    edges: dict[str, list[Edges]] = {k: [] for k in EDGE_KINDS}

    # --- host nesting and program order ---
    h = np.flatnonzero(is_host)
    nr = nest_sweep(lane[h], ts[h], end[h])
    has_p = nr.parent >= 0
    edges["nest"].append(Edges(eid[h][nr.parent[has_p]], eid[h][has_p]))
    a, b = sibling_pairs(lane[h], nr.parent, nr.order)
    edges["host_seq"].append(Edges(eid[h][a], eid[h][b]))
    if len(nr.crossovers):
        warn("nesting_crossover", len(nr.crossovers), eid[h][nr.crossovers[0]],
             "host ranges that end after their parent (crossovers) were nested with their end "
             "clipped to the parent's for the sweep")

    # --- device lanes: gpu_annotation ranges contain activities; stream order ---
    dkey = _device_key(device, stream)
    d = np.flatnonzero(is_dev)
    dr = nest_sweep(dkey[d], ts[d], end[d], can_parent=(kind[d] == "gpu_annotation"))
    has_p = dr.parent >= 0
    edges["nest"].append(Edges(eid[d][dr.parent[has_p]], eid[d][has_p]))
    act = np.flatnonzero(is_act)
    o = act[np.lexsort((eid[act], -(dur[act]), ts[act], dkey[act]))]
    same = dkey[o][1:] == dkey[o][:-1]
    s_src, s_dst = o[:-1][same], o[1:][same]
    edges["stream_seq"].append(Edges(eid[s_src], eid[s_dst]))
    over = end[s_src] > ts[s_dst]
    if over.any():
        warn("duration_overflow", int(over.sum()), eid[s_src][over][0],
             "device activities whose end overlaps the start of the next activity on the same stream")
    step("launches")

    # --- launches by correlation ---
    rt = np.flatnonzero(is_rt)
    launch, unlinked, n_coll, coll_ex = link_launches(
        eid[rt], corr[rt], pid_codes[rt], ts[rt], eid[act], corr[act], ts[act])
    if n_coll:
        warn("correlation_collision", n_coll, coll_ex,
             "runtime calls whose correlation id repeats another call's (across processes or "
             "within one); each device activity was linked to one call only: the one with its "
             "id that started last at or before it")

    # --- flows: bind end points, pair s/f, cross-check launches ---
    step("flows")
    flow_edges, launch_from_flows, disagree, unbound = link_flows(ev, kind, lane, ts, end, eid, is_node, launch)
    if len(launch_from_flows):
        launch = Edges(np.concatenate([launch.src, launch_from_flows.src]),
                       np.concatenate([launch.dst, launch_from_flows.dst]))
        unlinked = np.setdiff1d(unlinked, launch_from_flows.dst)
    sync_l = synchronous_launches(ts[launch.src], end[launch.src], ts[launch.dst], end[launch.dst],
                                  names[launch.src])
    edges["launch"].append(Edges(launch.src[~sync_l], launch.dst[~sync_l]))
    if sync_l.any():
        edges["launch"].append(Edges(launch.src[sync_l], launch.dst[sync_l],
                                     {"evidence": np.full(int(sync_l.sum()), "synchronous_launch", dtype=object)}))
        warn("synchronous_launch_inferred", int(sync_l.sum()), int(eid[launch.src[sync_l][0]]),
             "launch calls that returned only after their own device activity ended (it ran at least 50 us "
             "and half the call): taken to have waited for it; the critical path runs through the activity "
             "and the call's end waits for its end (launch edges with evidence=synchronous_launch)")
    edges["flow"].append(flow_edges)
    if disagree[0]:
        warn("flow_launch_mismatch", disagree[0], disagree[1],
             "launch flows (ac2g) that disagree with the correlation-id link (correlation kept)")
    if unbound[0]:
        warn("flow_unbound", unbound[0], unbound[1],
             "flow end points that bind to no event (no slice starts at or encloses them)")
    if len(unlinked):
        warn("kernel_without_launch", len(unlinked), unlinked[0],
             "device activities whose launching runtime call is absent from the trace")
    launched_rt = np.unique(launch.src)
    is_launch_api = names_where(names[rt], LAUNCH_API_RE.match)
    lonely = np.setdiff1d(eid[rt][is_launch_api], launched_rt)
    if len(lonely):
        warn("launch_without_kernel", len(lonely), lonely[0],
             "kernel/copy launch calls with no device activity in the trace (e.g. CUDA-graph "
             "capture, or activities not recorded)")

    # --- syncs and event waits ---
    step("syncs")
    launch_ts = np.full(len(ev), NONE_ID, dtype=np.int64)
    launch_ts[act] = ts[act]
    launch_ts[launch.dst] = ts[launch.src]
    launcher_pid = np.full(len(ev), NONE_ID, dtype=np.int64)
    launcher_pid[launch.dst] = pid_codes[launch.src]
    launcher = np.full(len(ev), NONE_ID, dtype=np.int64)
    launcher[launch.dst] = launch.src
    # activities without a launch call in the trace were enqueued before it began (D4)
    sidx_launch = np.where(launcher[act] >= 0, launch_ts[act], PRE_TRACE_NS)
    sidx = StreamIndex(eid[act], dkey[act], ts[act], end[act], sidx_launch, launcher_pid[act], launcher[act])
    blocking_rt = set(launch.src[pageable_dtoh(names[launch.dst])].tolist())
    sync_e, wait_e = link_syncs(args, kind, eid, ts, end, corr, device, stream, names, is_rt, sidx, warn,
                                blocking_rt)
    edges["sync"].append(sync_e)
    edges["event_wait"].append(wait_e)
    held = np.zeros(len(ev), dtype=bool)  # activities whose start a wait already explains
    held[wait_e.dst] = True
    if not (kind == "cuda_sync").any():
        joins = infer_stream_joins(act, names, dkey, device, ts, end, launch_ts, launcher)
        if len(joins):
            joins.attrs["evidence"] = np.full(len(joins), "stream_join", dtype=object)
            edges["event_wait"].append(joins)
            held[joins.dst] = True
            warn("stream_join_inferred", len(joins), int(eid[joins.dst[0]]) if len(joins) else None,
                 "device activities that started long after their launch on a free stream, just after "
                 "a collective kernel on another stream of the device ended: taken to have waited for it "
                 "(an unrecorded cudaStreamWaitEvent; event_wait edges with inferred=True)")
    call_end = np.full(len(ev), np.iinfo(np.int64).min // 2, dtype=np.int64)
    call_end[launch.dst] = end[launch.src]
    waits = infer_stream_waits(act, dkey, device, ts, end, launch_ts, call_end, launcher, held)
    held[waits.dst] = True
    wcalls = infer_wait_calls(act, dkey, ts, end, launch_ts, call_end, launcher, lane, rt, names, launched_rt, held)
    wwork = awaited_work(wcalls, act, dkey, device, ts, end, launch_ts, launcher, lane)
    late = "device activities that started more than 100 µs after their launch returned and their stream was free, "
    for got, code, why in (
            (waits, "stream_wait_inferred", "within 20 µs after an activity of another stream of the device ended: "
             "taken to have waited for it (an unrecorded stream wait; event_wait edges with inferred=True, "
             "evidence=stream_end)"),
            (wcalls, "stream_wait_call_inferred", "launched right after a cudaStreamWaitEvent/hipStreamWaitEvent on "
             "the same thread: taken to have been held by that wait (its stream and event are not recorded; "
             "event_wait edges from the call, inferred=True, evidence=stream_wait_call)"),
            (wwork, "stream_wait_work_inferred", "held by a cudaStreamWaitEvent/hipStreamWaitEvent: linked to the last "
             "activity the same thread launched on another stream of the device before the wait call, which ended "
             "before it started (the work the awaited event follows; event_wait edges, inferred=True, "
             "evidence=stream_wait_work)")):
        if len(got):
            edges["event_wait"].append(Edges(eid[got.src], eid[got.dst], got.attrs))
            warn(code, len(got), int(eid[got.dst[0]]), late + why)

    # --- cross-thread dependencies (opgraph/graph/threads.py) ---
    step("threads")
    _link_threads(args, edges, eid, h, kind, lane, pid_codes, ts, end, nr.parent, names, warn)

    # --- assemble ---
    step("graph")
    from opgraph.graph.et_link import add_extra_edges  # [issue #7 hook] ET data edges
    add_extra_edges(edges, table.meta.get("extra_edges"))  # [issue #7 hook]
    payload = assemble_payload(ev, is_node, eid, ts, dur, device, stream, corr, edges, health_dup=warn)
    if len(payload["src"]):
        uk, kc = payload["edge_kind"]
        payload["src"], payload["dst"], kc, payload["edge_extra"] = break_cycles(
            ts, payload["src"], payload["dst"], kc, payload["edge_extra"], warn, table.meta.get("file"))
        payload["edge_kind"] = (uk, kc)
    span = (int(ts[is_node].min()), int(end[is_node].max())) if is_node.any() else (0, 0)
    meta = table.meta
    payload["graph"].update({
        "source": {"format": meta.get("format"), "file": meta.get("file"), "sha256": meta.get("sha256")},
        "device_properties": meta.get("device_properties", []),
        "distributed_info": meta.get("distributed_info", {}),
        "trace_metadata": meta.get("trace_metadata", {}),
        **({"graph_replay": meta["graph_replay"]} if meta.get("graph_replay") is not None else {}),
        "schema_version": GRAPH_SCHEMA_VERSION,
        "opgraph_version": __version__,
        "span_ns": span,
        "health": [hi.to_dict() for hi in health],
        "events": ev,
    })
    if table.raw_args is not None:   # kept as raw JSON text: decoded when graph["events"] is read
        attach_raw_args(payload, table.raw_args, table.args_at, meta.get("file"))
    return payload


def _link_threads(args: ArgsColumn, edges: dict[str, list[Edges]], eid: np.ndarray, h: np.ndarray,
                  kind: np.ndarray, lane: np.ndarray, pid_codes: np.ndarray, ts: np.ndarray, end: np.ndarray, parent: np.ndarray,
                  names: np.ndarray, warn: Callable[..., None]) -> None:
    """Add the inferred cross-thread edges of :mod:`opgraph.graph.threads` (host events
    ``h`` with their ``kind``, their nest ``parent`` positions within ``h``; ``args``: the events' args, whose
    ``Sequence number`` / ``Fwd thread id`` are read) to ``edges``, with health counts."""
    has_fwdbwd = any(len(e) and "cat" in e.attrs and (e.attrs["cat"] == "fwdbwd").any() for e in edges["flow"])
    if not has_fwdbwd and len(h):
        fb = fwdbwd_by_sequence(eid[h], lane[h], ts[h], end[h], args.key_values("Sequence number", h),
                                args.key_values("Fwd thread id", h))
        if len(fb):
            edges["flow"].append(fb)
            warn("fwdbwd_inferred", len(fb), int(fb.dst[0]),
                 "backward ops linked to their forward op by the 'Sequence number' / 'Fwd thread id' args "
                 "(the trace has no fwdbwd flows; flow edges with inferred=True)")
    ho, n_burst, n_block = infer_handoffs(eid[h], lane[h], pid_codes[h], ts[h], end[h], parent, names[h],
                                          annotation_like(kind[h], names[h]))
    if len(ho):
        edges["handoff"].append(ho)
        warn("handoff_inferred", len(ho), int(ho.dst[0]),
             f"threads that went quiet while another thread of their process ran a burst of work and resumed "
             f"right after it ({n_burst} hand-offs, {n_block} blocking waits resumed by another thread): "
             f"handoff edges with inferred=True (docs/critical-path.md)")



__all__ = [
    "Step", "split_device_key", "build_graph", "build_payload",
    # re-exported from the modules that hold them
    "EDGE_KINDS", "SYNC_TOLERANCE_NS", "link_syncs", "blocking_call_modes", "pageable_dtoh", "link_flows",
    "JOIN_MIN_DELAY_NS", "JOIN_MAX_GAP_NS", "infer_stream_joins", "assemble_payload", "MAX_CYCLE_BREAKS",
    "has_cycle", "break_cycles", "edge_kind_counts", "node_kind_counts", "graph_summary",
]
