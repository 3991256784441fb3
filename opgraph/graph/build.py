"""Canonical event table -> typed ``networkx.DiGraph`` (see docs/model.md).

The work is done on numpy arrays (sorted sweeps, merges, searchsorted) and the graph is
filled in bulk at the end, directly into networkx's adjacency dicts.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Callable

import networkx as nx
import numpy as np
import pandas as pd

from opgraph.gc_pause import gc_paused
from opgraph.version import GRAPH_SCHEMA_VERSION, __version__
from opgraph.graph.linking import (
    BLOCKING_COPY_RE, DEVICE_SYNC_RE, EVENT_SYNC_RE, LAUNCH_API_RE, LAUNCH_FLOW_CATS, PRE_TRACE_NS,
    STREAM_SYNC_RE, SYNC_RECORD_KINDS, Edges, StreamIndex, bind_points, link_launches,
)
from opgraph.graph.nesting import NEST_TOLERANCE_NS, nest_sweep, sibling_pairs
from opgraph.graph.streams import infer_stream_waits, infer_wait_calls
from opgraph.graph.threads import fwdbwd_by_sequence, infer_handoffs
from opgraph.ingest.table import (
    DEVICE_ACTIVITY_KINDS, DEVICE_KINDS, HOST_KINDS, NODE_KINDS, NONE_ID, EventTable, HealthItem,
)

#: A blocking call may return up to this long after the GPU work it awaited ended (ns).
SYNC_TOLERANCE_NS = 1000
#: Edge kinds; ``collective`` edges exist only in multi-rank job graphs (opgraph/multirank).
EDGE_KINDS = ("nest", "host_seq", "launch", "stream_seq", "sync", "event_wait", "flow", "data",  # [issue #7] + data
              "collective",  # [issue #9]
              "handoff")  # inferred cross-thread hand-offs (opgraph/graph/threads.py)

Step = Callable[[str], None]


def _noop(_: str) -> None:
    return None


def _device_key(device: np.ndarray, stream: np.ndarray) -> np.ndarray:
    """One int64 per (device, stream): device in the high bits, stream + 1 in the low 32."""
    return (device.astype(np.int64) + 1) * (1 << 32) + (stream.astype(np.int64) + 1)


def split_device_key(key: int) -> tuple[int, int]:
    """Inverse of the device key: (device, stream)."""
    return (key >> 32) - 1, (key & 0xFFFFFFFF) - 1


def build_graph(table: EventTable, step: Step = _noop) -> nx.DiGraph:
    """Build the typed DAG of a trace.

    Parameters
    ----------
    table : EventTable
        A reader's output (times in ns).
    step : callable, optional
        Called with a phase name as building proceeds (for progress display).

    Returns
    -------
    networkx.DiGraph
        Nodes are event ids with attributes ``kind``, ``name``, ``ts`` and ``dur`` (ns),
        ``pid``, ``tid``, ``device``, ``stream``, ``correlation``, ``external_id`` and
        ``args``; edges carry ``kind`` (one of :data:`EDGE_KINDS`). ``G.graph`` holds the
        source description, device properties, the canonical ``events`` table, the trace
        ``span_ns`` and the trace-health list ``health``.
    """
    from opgraph.graph.payload import payload_to_digraph

    with gc_paused():
        return payload_to_digraph(build_payload(table, step))


def build_payload(table: EventTable, step: Step = _noop) -> dict[str, Any]:
    """The graph of ``table`` in column form (what ``.gpickle`` files hold); turn it into a
    ``DiGraph`` with :func:`opgraph.graph.payload.payload_to_digraph`. ``opgraph build`` saves it
    directly, without making millions of Python dicts it would only take apart again."""
    if "graph_replay" not in table.meta:  # graph replays -> the ops that captured them (graph/replay.py)
        from opgraph.graph.replay import attach_captures
        attach_captures(table)
    ev = table.events
    health: list[HealthItem] = list(table.health)

    def warn(code: str, count: int, example: int | None, message: str) -> None:
        if count:
            health.append(HealthItem(code, int(count), None if example is None else int(example), message))

    kind = ev["kind"].to_numpy(dtype=object)
    ts = ev["ts_ns"].to_numpy()
    dur = ev["dur_ns"].to_numpy()
    end = ts + np.maximum(dur, 0)
    eid = ev["eid"].to_numpy()
    corr = ev["correlation"].to_numpy()
    device = ev["device"].to_numpy()
    stream = ev["stream"].to_numpy()
    has_ts = ev["has_ts"].to_numpy() if "has_ts" in ev else np.ones(len(ev), dtype=bool)
    names = ev["name"].to_numpy(dtype=object)

    # lanes: one code per (pid, tid)
    pid_codes, _ = pd.factorize(ev["pid"].to_numpy(dtype=object))
    tid_codes, tid_u = pd.factorize(ev["tid"].to_numpy(dtype=object))
    lane, _ = pd.factorize(pid_codes.astype(np.int64) * (len(tid_u) + 2) + tid_codes + 1)
    lane = lane.astype(np.int64)

    is_node = np.isin(kind, NODE_KINDS) & has_ts & (dur >= 0)
    is_host = is_node & np.isin(kind, HOST_KINDS)
    is_dev = is_node & np.isin(kind, DEVICE_KINDS)
    is_act = is_node & np.isin(kind, DEVICE_ACTIVITY_KINDS)
    is_rt = is_node & (kind == "runtime")
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
    edges["launch"].append(launch)
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
    is_launch_api = np.fromiter((isinstance(n, str) and bool(LAUNCH_API_RE.match(n)) for n in names[rt]),
                                dtype=bool, count=len(rt))
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
    sync_e, wait_e = _link_syncs(ev, kind, eid, ts, end, corr, device, stream, names, is_rt, sidx, warn,
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
    late = "device activities that started more than 100 µs after their launch returned and their stream was free, "
    for got, code, why in (
            (waits, "stream_wait_inferred", "within 20 µs after an activity of another stream of the device ended: "
             "taken to have waited for it (an unrecorded stream wait; event_wait edges with inferred=True, "
             "evidence=stream_end)"),
            (wcalls, "stream_wait_call_inferred", "launched right after a cudaStreamWaitEvent/hipStreamWaitEvent on "
             "the same thread: taken to have been held by that wait (its stream and event are not recorded; "
             "event_wait edges from the call, inferred=True, evidence=stream_wait_call)")):
        if len(got):
            edges["event_wait"].append(Edges(eid[got.src], eid[got.dst], got.attrs))
            warn(code, len(got), int(eid[got.dst[0]]), late + why)

    # --- cross-thread dependencies (opgraph/graph/threads.py) ---
    step("threads")
    _link_threads(ev, edges, eid, h, lane, pid_codes, ts, end, nr.parent, names, warn)

    # --- assemble ---
    step("graph")
    from opgraph.graph.et_link import add_extra_edges  # [issue #7 hook] ET data edges
    add_extra_edges(edges, table.meta.get("extra_edges"))  # [issue #7 hook]
    payload = _payload(ev, is_node, eid, ts, dur, device, stream, corr, edges, health_dup=warn)
    if len(payload["src"]):
        uk, kc = payload["edge_kind"]
        payload["src"], payload["dst"], kc, payload["edge_extra"] = _break_cycles(
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
    return payload


def _link_threads(ev: pd.DataFrame, edges: dict[str, list[Edges]], eid: np.ndarray, h: np.ndarray,
                  lane: np.ndarray, pid_codes: np.ndarray, ts: np.ndarray, end: np.ndarray, parent: np.ndarray,
                  names: np.ndarray, warn: Callable[..., None]) -> None:
    """Add the inferred cross-thread edges of :mod:`opgraph.graph.threads` (host events
    ``h``, their nest ``parent`` positions within ``h``) to ``edges``, with health counts."""
    has_fwdbwd = any(len(e) and "cat" in e.attrs and (e.attrs["cat"] == "fwdbwd").any() for e in edges["flow"])
    if not has_fwdbwd and len(h):
        fb = fwdbwd_by_sequence(eid[h], lane[h], ts[h], end[h], ev["args"].to_numpy(dtype=object)[h])
        if len(fb):
            edges["flow"].append(fb)
            warn("fwdbwd_inferred", len(fb), int(fb.dst[0]),
                 "backward ops linked to their forward op by the 'Sequence number' / 'Fwd thread id' args "
                 "(the trace has no fwdbwd flows; flow edges with inferred=True)")
    ho, n_burst, n_block = infer_handoffs(eid[h], lane[h], pid_codes[h], ts[h], end[h], parent, names[h])
    if len(ho):
        edges["handoff"].append(ho)
        warn("handoff_inferred", len(ho), int(ho.dst[0]),
             f"threads that went quiet while another thread of their process ran a burst of work and resumed "
             f"right after it ({n_burst} hand-offs, {n_block} blocking waits resumed by another thread): "
             f"handoff edges with inferred=True (docs/critical-path.md)")


def link_flows(ev: pd.DataFrame, kind: np.ndarray, lane: np.ndarray, ts: np.ndarray, end: np.ndarray,
                eid: np.ndarray, is_node: np.ndarray, launch: Edges
                ) -> tuple[Edges, Edges, tuple[int, int], tuple[int, int]]:
    fl = np.flatnonzero(np.isin(kind, ("flow_start", "flow_end")) & (ev["flow_id"].to_numpy() >= 0))
    if not len(fl):
        return Edges.empty(), Edges.empty(), (0, -1), (0, -1)
    nodes = np.flatnonzero(is_node | (kind == "cuda_sync"))
    bound = bind_points(lane[nodes], ts[nodes], end[nodes], eid[nodes], lane[fl], ts[fl],
                        ev["correlation"].to_numpy()[nodes], ev["flow_id"].to_numpy()[fl])
    cats = ev["cat"].to_numpy(dtype=object)[fl]
    df = pd.DataFrame({"cat": pd.Series(cats).astype(str).to_numpy(), "id": ev["flow_id"].to_numpy()[fl],
                       "start": kind[fl] == "flow_start", "ev": bound, "ts": ts[fl], "fe": eid[fl]})
    unb = df["ev"] < 0
    unbound = (int(unb.sum()), int(df.loc[unb, "fe"].iloc[0]) if unb.any() else -1)
    df = df[~unb]
    s = df[df["start"]][["cat", "id", "ev", "ts"]]
    f = df[~df["start"]][["cat", "id", "ev", "ts"]]
    m = s.merge(f, on=["cat", "id"], suffixes=("_s", "_f"))
    # opgraph's own overlay flows (critical path) are not dependencies of the program
    m = m[~m["cat"].str.startswith("opgraph.")]
    if m.duplicated(["cat", "ev_f"]).any():
        m = (m[m["ts_s"] <= m["ts_f"] + NEST_TOLERANCE_NS].sort_values("ts_s", kind="stable")
             .drop_duplicates(["cat", "ev_f"], keep="last"))
    m = m[m["ev_s"] != m["ev_f"]]
    # flows to cuda_sync events mirror the sync correlation, handled by the sync linker
    m = m[(kind[m["ev_s"].to_numpy()] != "cuda_sync") & (kind[m["ev_f"].to_numpy()] != "cuda_sync")]
    is_launch_flow = m["cat"].isin(LAUNCH_FLOW_CATS).to_numpy()
    lf = m[is_launch_flow]
    other = m[~is_launch_flow]
    # keep only launch flows from a runtime call to a device activity
    k_s = kind[lf["ev_s"].to_numpy()]
    k_f = kind[lf["ev_f"].to_numpy()]
    lf = lf[(k_s == "runtime") & np.isin(k_f, DEVICE_ACTIVITY_KINDS)]
    have = pd.Series(launch.src, index=launch.dst)
    have = have[~have.index.duplicated()]
    known = lf["ev_f"].isin(have.index)
    lf_known = lf[known]
    mismatch = have.reindex(lf_known["ev_f"]).to_numpy() != lf_known["ev_s"].to_numpy()
    # a CUDA-graph launch reaches many kernels: a flow to any of them agrees
    disagree = (int(mismatch.sum()), int(lf_known["ev_s"].to_numpy()[mismatch][0]) if mismatch.any() else -1)
    new = lf[~known].drop_duplicates("ev_f")
    flow_edges = Edges(other["ev_s"].to_numpy(np.int64), other["ev_f"].to_numpy(np.int64),
                       {"cat": other["cat"].to_numpy(dtype=object)})
    return (flow_edges, Edges(new["ev_s"].to_numpy(np.int64), new["ev_f"].to_numpy(np.int64)),
            disagree, unbound)


def _link_syncs(ev: pd.DataFrame, kind: np.ndarray, eid: np.ndarray, ts: np.ndarray, end: np.ndarray,
                corr: np.ndarray, device: np.ndarray, stream: np.ndarray, names: np.ndarray,
                is_rt: np.ndarray, sidx: StreamIndex, warn: Callable[..., None],
                blocking_rt: set[int] = frozenset()) -> tuple[Edges, Edges]:
    """Sync edges (device activity -> the blocking host call that waited for it) and
    event-wait edges (last activity of the awaited stream -> first activity the waiting
    stream ran after the wait). Times in ns.

    Recorded first: each ``cuda_sync`` record links the host call of its correlation, by
    ``args.cuda_sync_kind`` (or, for MTIA's device-side records, by name through
    :data:`~opgraph.graph.linking.SYNC_RECORD_KINDS`). Then, per call: every blocking
    runtime call (see :func:`blocking_call_modes`) without a resolved record of its own
    gets inferred edges (``inferred=True``) from the activity it waited for, the one that
    ended last before it returned (+ :data:`SYNC_TOLERANCE_NS`) among those launched before
    it started: one per stream of its device for a device sync, else on the stream its args
    name, or the latest-ending over the streams (a blocking copy: its own copy excluded). Health: ``cuda_sync_absent`` (a trace without
    records), ``sync_inferred`` (calls without a record of their own in a trace with
    records), ``sync_unresolved`` (records that could not be linked)."""
    tol = SYNC_TOLERANCE_NS
    rt = np.flatnonzero(is_rt)
    rt_by_corr: dict[int, int] = {}
    for c, e in zip(corr[rt].tolist(), eid[rt].tolist()):
        if c >= 0 and c not in rt_by_corr:
            rt_by_corr[c] = e
    args = ev["args"].to_numpy(dtype=object)
    s_src: list[int] = []
    s_dst: list[int] = []
    s_kind: list[str] = []
    s_inf: list[bool] = []
    w_src: list[int] = []
    w_dst: list[int] = []
    keys_of_device: dict[int, list[int]] = {}
    for k in sidx.bounds:
        keys_of_device.setdefault(int((k >> 32) - 1), []).append(k)
    all_keys = list(sidx.bounds)

    def add_sync(pos: int, call: int, sk: str, inferred: bool) -> bool:
        if pos < 0:
            return False
        s_src.append(int(sidx.eid[pos]))
        s_dst.append(call)
        s_kind.append(sk)
        s_inf.append(inferred)
        return True

    def key(dev: int, st: int) -> int:
        return (dev + 1) * (1 << 32) + (st + 1)

    # --- recorded syncs ---
    cs = np.flatnonzero(kind == "cuda_sync")
    rec_kind: list[str] = []
    seq_record_ts: dict[tuple[int, int, int], int] = {}  # (device, stream, seq_num) -> start (ns)
    for i in cs.tolist():
        a = args[i] if isinstance(args[i], dict) else {}
        sk = a.get("cuda_sync_kind") or SYNC_RECORD_KINDS.get(names[i], names[i])
        rec_kind.append(sk)
        if sk == "Event Record":
            seq = _int_or_none(a.get("seq_num"))
            if seq is not None:
                seq_record_ts.setdefault((int(device[i]), int(stream[i]), seq), int(ts[i]))
    recorded: set[int] = set()
    unresolved = [0, -1]

    def unresolved_at(i: int) -> None:
        unresolved[0] += 1
        unresolved[1] = unresolved[1] if unresolved[1] >= 0 else i

    for i, sk in zip(cs.tolist(), rec_kind):
        a = args[i] if isinstance(args[i], dict) else {}
        call = rt_by_corr.get(int(corr[i]), -1)
        dev = int(device[i])
        if sk == "Event Record":
            continue
        if sk == "Device Event Wait":
            src_stream = _int_or_none(a.get("wait_on_stream"))
            if src_stream is None or src_stream < 0:
                unresolved_at(i)
                continue
            rec_ts = seq_record_ts.get((dev, src_stream, _int_or_none(a.get("seq_num")) or -1))
            if rec_ts is not None:
                p = sidx.last_started_before(key(dev, src_stream), rec_ts)
            else:
                p = sidx.last_ended_before(key(dev, src_stream), int(end[i]) + tol)
            q = sidx.first_started_after(key(dev, int(stream[i])), int(ts[i]))
            if p >= 0 and q >= 0:
                w_src.append(int(sidx.eid[p]))
                w_dst.append(int(sidx.eid[q]))
            continue
        if sk == "Stream Wait Event":
            rec = rt_by_corr.get(a.get("wait_on_cuda_event_record_corr_id", -1), -1)
            src_stream = a.get("wait_on_stream", -1)
            if rec < 0 or src_stream is None or src_stream < 0 or call < 0:
                unresolved_at(i)
                continue
            p = sidx.last_launched_before(key(dev, int(src_stream)), int(ts[rec]))
            q = sidx.first_launched_after(key(dev, int(stream[i])), int(ts[call]))
            if p >= 0 and q >= 0:
                w_src.append(int(sidx.eid[p]))
                w_dst.append(int(sidx.eid[q]))
            continue
        if call < 0:
            unresolved_at(i)
            continue
        c0, c1 = int(ts[call]), int(end[call])
        if sk == "Stream Sync" and 0 <= int(stream[i]) < 0xFFFFFFFF:
            add_sync(sidx.awaited(key(dev, int(stream[i])), c0, c1, tol, call), call, "stream", False)
        elif sk == "Event Sync":
            rec = rt_by_corr.get(a.get("wait_on_cuda_event_record_corr_id", -1), -1)
            src_stream = a.get("wait_on_stream", -1)
            if rec < 0 or src_stream is None or src_stream < 0:
                unresolved_at(i)
                continue
            p = sidx.last_launched_before(key(dev, int(src_stream)), int(ts[rec]))
            add_sync(p, call, "event", False)
        else:  # Context Sync, a stream sync without a stream, and anything device-wide
            for k in keys_of_device.get(dev, all_keys):
                add_sync(sidx.awaited(k, c0, c1, tol, call), call, "device", False)
        recorded.add(call)
    if unresolved[0]:
        warn("sync_unresolved", unresolved[0], unresolved[1],
             "cuda_sync events whose host call, event record or stream is unknown (no edge from the "
             "record; a blocking call among them gets an inferred edge instead)")

    # --- inferred, per blocking call without a record of its own ---
    modes = blocking_call_modes(names[rt], np.isin(eid[rt], list(blocking_rt)))
    n_calls = {"device": 0, "stream": 0, "event": 0, "memcpy": 0}
    example = -1
    for i, mode in zip(rt[modes != ""].tolist(), modes[modes != ""].tolist()):
        call = int(eid[i])
        if call in recorded:
            continue
        a = args[i] if isinstance(args[i], dict) else {}
        dev = _int_or_none(a.get("device"))
        st = _int_or_none(a.get("stream", a.get("stream_id")))
        keys = keys_of_device.get(dev, all_keys) if dev is not None else all_keys
        c0, c1 = int(ts[i]), int(end[i])
        linked = False
        if mode == "device":
            for k in keys:
                linked |= add_sync(sidx.awaited(k, c0, c1, tol, call), call, mode, True)
        elif mode == "stream" and dev is not None and st is not None and key(dev, st) in sidx.bounds:
            linked = add_sync(sidx.awaited(key(dev, st), c0, c1, tol, call), call, mode, True)
        else:
            best, best_end = -1, -1
            for k in keys:
                p = sidx.awaited(k, c0, c1, tol, call)
                if p >= 0 and sidx.end[p] > best_end:
                    best, best_end = p, int(sidx.end[p])
            linked = add_sync(best, call, mode, True)
        if linked:
            n_calls[mode] += 1
            example = call if example < 0 else example
    n_inferred = sum(n_calls.values())
    parts = ", ".join(f"{n} {m}" for m, n in n_calls.items() if n)
    if n_inferred and not len(cs):
        warn("cuda_sync_absent", n_inferred, example,
             f"no cuda_sync events in the trace: sync edges were inferred from the blocking runtime "
             f"calls ({parts}; the activity that ended last before each call returned, inferred=True)")
    elif n_inferred:
        warn("sync_inferred", n_inferred, example,
             f"blocking runtime calls without a cuda_sync record of their own in a trace that has records "
             f"({parts}; blocking copies are never recorded): sync edges inferred from the call "
             f"(the activity that ended last before it returned, inferred=True)")
    sync = Edges(np.array(s_src, dtype=np.int64), np.array(s_dst, dtype=np.int64),
                 {"sync_kind": np.array(s_kind, dtype=object), "inferred": np.array(s_inf, dtype=bool)})
    return sync, Edges(np.array(w_src, dtype=np.int64), np.array(w_dst, dtype=np.int64))


def blocking_call_modes(call_names: np.ndarray, blocking: np.ndarray | None = None) -> np.ndarray:
    """How each runtime call blocks the host: ``"device"`` (device synchronize: CUDA, driver,
    HIP, MTIA ``synchronize``), ``"stream"``, ``"event"``, ``"memcpy"`` (blocking copies by
    name, or where ``blocking`` is True: e.g. async copies to pageable memory), ``""`` (does
    not block). Regexes run once per distinct name."""
    codes, uniq = pd.factorize(pd.Series(call_names, dtype=object).fillna(""))
    out_u = np.empty(len(uniq), dtype=object)
    for j, nm in enumerate(uniq.tolist()):
        nm = str(nm)
        out_u[j] = ("device" if DEVICE_SYNC_RE.match(nm) else "stream" if STREAM_SYNC_RE.match(nm)
                    else "event" if EVENT_SYNC_RE.match(nm) else "memcpy" if BLOCKING_COPY_RE.match(nm) else "")
    out = out_u[codes].astype(object) if len(codes) else np.empty(0, dtype=object)
    if blocking is not None and len(out):
        out[(out == "") & blocking] = "memcpy"
    return out


def _int_or_none(v: Any) -> int | None:
    """An integer arg (ints, or digit strings such as MTIA's ``"stream_id": "108"``); None otherwise."""
    if type(v) is int:
        return v
    if isinstance(v, str) and v.strip().lstrip("-").isdigit():
        return int(v)
    return None


#: An activity counts as held back when it starts this long after its launch call began (ns).
JOIN_MIN_DELAY_NS = 50_000
#: ... and a collective kernel of its device, on another stream, ended at most this long
#: before it started (ns).
JOIN_MAX_GAP_NS = 20_000


def infer_stream_joins(act: np.ndarray, names: np.ndarray, dkey: np.ndarray, device: np.ndarray,
                       ts: np.ndarray, end: np.ndarray, launch_ts: np.ndarray, launcher: np.ndarray) -> Edges:
    """Unrecorded waits of a stream for a collective (NCCL's stream join: a
    ``cudaStreamWaitEvent`` on the communication stream's event, which Kineto records only
    as ``cuda_sync`` events). Used when the trace has no ``cuda_sync`` events.

    A launched activity ``x`` (positions ``act``, times in ns) qualifies when it started at
    least :data:`JOIN_MIN_DELAY_NS` after its launch call began, its stream was free (the
    previous activity on the stream ended before the collective did), and a collective
    kernel of the same device on another stream ended at most :data:`JOIN_MAX_GAP_NS`
    before ``x`` started and after ``x``'s launch call began. The latest such collective
    is taken: an ``event_wait`` edge ``collective -> x`` with ``inferred=True``."""
    from opgraph.graph.linking import COMM_KERNEL_PATTERN

    empty = Edges(np.empty(0, np.int64), np.empty(0, np.int64), {"inferred": np.empty(0, dtype=bool)})
    if not len(act):
        return empty
    uniq, codes = np.unique(names[act].astype(str), return_inverse=True)
    is_comm_u = pd.Series(uniq).str.contains(COMM_KERNEL_PATTERN, regex=True).to_numpy(bool)
    is_comm = is_comm_u[codes]
    coll = act[is_comm]
    if not len(coll):
        return empty
    # previous activity end on the same stream
    o = act[np.lexsort((ts[act], dkey[act]))]
    prev_end = np.full(len(ts), np.iinfo(np.int64).min, dtype=np.int64)
    same = dkey[o][1:] == dkey[o][:-1]
    prev_end[o[1:][same]] = end[o[:-1][same]]
    cand = act[~is_comm & (launcher[act] >= 0) & (ts[act] - launch_ts[act] >= JOIN_MIN_DELAY_NS)]
    if not len(cand):
        return empty
    src_l, dst_l = [], []
    oc = coll[np.lexsort((end[coll], device[coll]))]
    for dv in np.unique(device[cand]):
        cs = oc[device[oc] == dv]
        if not len(cs):
            continue
        xs = cand[device[cand] == dv]
        j = np.searchsorted(end[cs], ts[xs], "right") - 1
        ok = j >= 0
        xs, c = xs[ok], cs[j[ok]]
        ok = ((ts[xs] - end[c] <= JOIN_MAX_GAP_NS) & (end[c] > launch_ts[xs]) & (dkey[c] != dkey[xs])
              & (prev_end[xs] < end[c]))
        src_l.append(c[ok])
        dst_l.append(xs[ok])
    if not src_l:
        return empty
    src, dst = np.concatenate(src_l), np.concatenate(dst_l)
    return Edges(src, dst, {"inferred": np.ones(len(src), dtype=bool)})


def pageable_dtoh(names: np.ndarray) -> np.ndarray:
    """Copies from device to pageable host memory: their (async) API call returns only once
    the copy has completed (CUDA runtime API docs, "API synchronization behavior")."""
    return np.fromiter((isinstance(n, str) and "DtoH" in n and "Pageable" in n for n in names),
                       dtype=bool, count=len(names))


def _codes(col: pd.Series, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(uniques, codes) of a categorical column restricted to rows ``idx`` (missing -> None)."""
    cat = col.array
    codes = np.asarray(cat.codes)[idx].astype(np.int32)
    uniq = np.append(np.asarray(cat.categories, dtype=object), None).astype(object)
    codes = np.where(codes < 0, len(uniq) - 1, codes).astype(np.int32)
    return uniq, codes


def _payload(ev: pd.DataFrame, is_node: np.ndarray, eid: np.ndarray, ts: np.ndarray, dur: np.ndarray,
             device: np.ndarray, stream: np.ndarray, corr: np.ndarray, edges: dict[str, list[Edges]],
             health_dup: Callable[..., None]) -> dict[str, Any]:
    """The graph as columns (the form it is pickled in, see :mod:`opgraph.graph.io`)."""
    from opgraph.graph.payload import PICKLE_MAGIC

    idx = np.flatnonzero(is_node)
    cols: dict[str, Any] = {
        "ts": ts[idx], "dur": dur[idx], "device": device[idx], "stream": stream[idx], "correlation": corr[idx],
        "external_id": ev["external_id"].to_numpy()[idx],
    }
    for k in ("kind", "name", "pid", "tid"):
        cols[k] = _codes(ev[k], idx)
    src_l, dst_l, kind_l, attr_l = [], [], [], []
    for j, ek in enumerate(EDGE_KINDS):
        for e in edges[ek]:
            if not len(e):
                continue
            src_l.append(e.src)
            dst_l.append(e.dst)
            kind_l.append(np.full(len(e), j, dtype=np.int32))
            attr_l.append(e.attrs if e.attrs else None)
    if src_l:
        src = np.concatenate(src_l)
        dst = np.concatenate(dst_l)
        kcode = np.concatenate(kind_l)
    else:
        src = dst = np.empty(0, np.int64)
        kcode = np.empty(0, np.int32)
    # per-edge extra attributes, keyed by position in the concatenated arrays
    extra: dict[int, dict[str, Any]] = {}
    off = 0
    for s_, attrs in zip(src_l, attr_l):
        if attrs:
            names_ = list(attrs)
            vals = [v.tolist() for v in attrs.values()]
            for j in range(len(s_)):
                extra[off + j] = {nm: vv[j] for nm, vv in zip(names_, vals)}
        off += len(s_)
    # a pair linked twice keeps its first edge
    if len(src):
        dup = pd.DataFrame({"s": src, "d": dst}).duplicated().to_numpy()
        if dup.any():
            health_dup("parallel_edge", int(dup.sum()), int(src[dup][0]),
                       "node pairs linked twice; the first edge kind was kept")
            keep = np.flatnonzero(~dup)
            remap = {int(o): n for n, o in enumerate(keep.tolist())}
            extra = {remap[j]: a for j, a in extra.items() if j in remap}
            src, dst, kcode = src[keep], dst[keep], kcode[keep]
    return {"magic": PICKLE_MAGIC, "graph": {}, "nodes": eid[idx], "node_cols": cols, "src": src, "dst": dst,
            "edge_kind": (np.array(EDGE_KINDS, dtype=object), kcode), "edge_extra": extra}


#: Edge kinds that follow from the order of events on one lane (never dropped to break a cycle).
_STRUCTURAL = frozenset({"nest", "host_seq", "stream_seq"})
#: Cycles broken one edge at a time before the trace is refused.
MAX_CYCLE_BREAKS = 1000


def has_cycle(src: np.ndarray, dst: np.ndarray) -> bool:
    """Whether the edges ``src -> dst`` (node ids) contain a directed cycle: Kahn's
    algorithm over a CSR view, in a plain loop over int lists (no networkx graph is built)."""
    if not len(src):
        return False
    nodes, inv = np.unique(np.concatenate([src, dst]), return_inverse=True)
    n = len(nodes)
    s, d = inv[:len(src)], inv[len(src):]
    o = np.argsort(s, kind="stable")
    s, d = s[o], d[o]
    start = np.searchsorted(s, np.arange(n + 1)).tolist()
    succ = d.tolist()
    indeg = np.bincount(d, minlength=n).tolist()
    stack = [i for i in range(n) if indeg[i] == 0]
    seen = 0
    while stack:
        u = stack.pop()
        seen += 1
        for j in range(start[u], start[u + 1]):
            v = succ[j]
            indeg[v] -= 1
            if indeg[v] == 0:
                stack.append(v)
    return seen < n


def _break_cycles(ts: np.ndarray, src: np.ndarray, dst: np.ndarray, kcode: np.ndarray,
                  extra: dict[int, dict[str, Any]], warn: Callable[..., None], path: str | None = None
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[int, dict[str, Any]]]:
    """The edges without the links that close a cycle among the kinds that must be acyclic
    (every kind but ``collective``, docs/model.md), with the health warning ``cycle_broken``.

    A cycle needs an edge that goes back in time (or only edges between events with the
    same start), so the check costs one vectorised comparison for an ordinary trace; links
    that contradict the timestamps (a flow pointing back, a runtime call stamped after its
    kernel) are dropped: first every backward link inside a strongly connected component,
    then, for cycles among same-time events, one link per cycle. A cycle made only of
    nesting and lane-order edges (which cannot happen) is refused with one line."""
    from opgraph.errors import OpgraphInputError

    t = ts  # start time by event id: the table's eid is its position
    acyc = kcode != EDGE_KINDS.index("collective")
    back = acyc & (t[dst] < t[src])
    same = acyc & (t[dst] == t[src])
    if not back.any() and not same.any():
        return src, dst, kcode, extra
    structural = np.isin(kcode, [EDGE_KINDS.index(k) for k in _STRUCTURAL])
    inside = same
    if back.any():
        # Every event of a cycle lies in the union of the time spans of its backward edges
        # (each level it climbs back from is crossed by a backward edge): only edges there count.
        lo, hi = t[dst[back]], t[src[back]]
        o = np.argsort(lo, kind="stable")
        lo, cm = lo[o], np.maximum.accumulate(hi[o])
        start = np.ones(len(lo), dtype=bool)
        start[1:] = lo[1:] > cm[:-1]
        L = lo[start]
        R = cm[np.append(np.flatnonzero(start)[1:] - 1, len(lo) - 1)]

        def within(x: np.ndarray) -> np.ndarray:
            k = np.searchsorted(L, x, side="right") - 1
            return (k >= 0) & (x <= R[np.maximum(k, 0)])
        inside = same | (within(t[src]) & within(t[dst]))
    cand = np.flatnonzero(acyc & inside)
    if not has_cycle(src[cand], dst[cand]):
        return src, dst, kcode, extra
    H = nx.DiGraph()
    H.add_edges_from(zip(src[cand].tolist(), dst[cand].tolist(), ({"j": j} for j in cand.tolist())))
    drop: list[int] = []
    for comp in nx.strongly_connected_components(H):
        if len(comp) < 2:
            continue
        sub = H.subgraph(comp)
        drop += [d["j"] for u, v, d in sub.edges(data=True) if back[d["j"]] and not structural[d["j"]]]
    H.remove_edges_from([(int(src[j]), int(dst[j])) for j in drop])
    for _ in range(MAX_CYCLE_BREAKS):
        try:
            cyc = nx.find_cycle(H)
        except nx.NetworkXNoCycle:
            break
        js = [H.edges[u, v]["j"] for u, v, *_ in cyc]
        links = [j for j in js if not structural[j]]
        if not links:
            raise OpgraphInputError(path, f"the nesting and lane-order edges form a cycle through events "
                                          f"{[int(src[j]) for j in js][:8]}")
        j = max(links, key=lambda j: (int(t[src[j]]) - int(t[dst[j]]), EDGE_KINDS[kcode[j]] == "flow"))
        drop.append(j)
        H.remove_edge(int(src[j]), int(dst[j]))
    else:
        raise OpgraphInputError(path, f"the trace's links form more than {MAX_CYCLE_BREAKS} cycles "
                                      "(timestamps that contradict the launch/sync/flow links)")
    kinds = Counter(EDGE_KINDS[kcode[j]] for j in drop)
    warn("cycle_broken", len(drop), int(dst[drop[0]]),
         "links that closed a cycle (their timestamps contradict them) were dropped: "
         + ", ".join(f"{n} {k}" for k, n in sorted(kinds.items())))
    keep = np.ones(len(src), dtype=bool)
    keep[drop] = False
    remap = np.cumsum(keep) - 1
    extra = {int(remap[j]): a for j, a in extra.items() if keep[j]}
    return src[keep], dst[keep], kcode[keep], extra


def edge_kind_counts(G: nx.DiGraph) -> Counter:
    """Number of edges of each kind."""
    return Counter(d["kind"] for _, _, d in G.edges(data=True))


def node_kind_counts(G: nx.DiGraph) -> Counter:
    """Number of nodes of each kind."""
    return Counter(d["kind"] for _, d in G.nodes(data=True))


def graph_summary(G: nx.DiGraph) -> dict[str, Any]:
    """Counts and metadata of a built graph (the content of ``opgraph info``)."""
    ev: pd.DataFrame = G.graph.get("events")
    nodes = node_kind_counts(G)
    summary: dict[str, Any] = {
        "source": G.graph.get("source", {}),
        "events": int(len(ev)) if ev is not None else None,
        "events_by_kind": {str(k): int(v) for k, v in ev["kind"].value_counts().items() if v} if ev is not None else {},
        "nodes": G.number_of_nodes(),
        "nodes_by_kind": dict(sorted(nodes.items())),
        "edges": G.number_of_edges(),
        "edges_by_kind": dict(sorted(edge_kind_counts(G).items())),
    }
    return summary
