"""What a trace holds: counts, devices, streams, threads, ranks, iterations, span, health."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pandas as pd

from opgraph.model.trace_graph import TraceGraph
from opgraph.graph.windows import select_windows
from opgraph.model.table import DEVICE_ACTIVITY_KINDS


def find_steps(G: TraceGraph, step_regex: str | None = None) -> pd.DataFrame:
    """The steps of :func:`opgraph.graph.windows.select_windows` as a table:
    ``ProfilerStep#N`` host ranges (one per N), else ``ProfilerStep#N`` GPU annotations,
    else NVTX ``Iteration N`` ranges; with ``step_regex``, the host ranges (else GPU
    annotations) it finds. None (an empty table) when the trace has no step.

    Returns a DataFrame with columns ``eid``, ``name``, ``step`` (N, or the order), ``ts``
    and ``end`` (ns), sorted by start. Raises
    :class:`~opgraph.graph.windows.WindowNotFound` when ``step_regex`` matches nothing."""
    w = select_windows(G, step_regex=step_regex, lanes=False)
    df = w.to_frame()[["eid", "name", "step", "ts", "end"]]
    return df if w.is_steps else df.iloc[:0].reset_index(drop=True)


def thread_names(ev: pd.DataFrame) -> dict[tuple[Any, Any], str]:
    """``(pid, tid) -> thread name`` from the trace's ``thread_name`` metadata events."""
    meta = ev[(ev["kind"] == "meta") & (ev["name"] == "thread_name")]
    out = {}
    for pid, tid, a in zip(meta["pid"], meta["tid"], meta["args"]):
        if isinstance(a, dict) and "name" in a:
            out[(pid, tid)] = str(a["name"])
    return out


_NODE_COLUMNS = ["kind", "name", "ts", "dur", "pid", "tid", "device", "stream"]


def _node_table(G: TraceGraph) -> pd.DataFrame:
    """The nodes' ``kind, name, ts, dur, pid, tid, device, stream`` indexed by node id (from
    the columns of ``G``, values as Python objects so that the dtypes are inferred as from
    node dicts)."""
    return pd.DataFrame({k: G.column(k).tolist() for k in _NODE_COLUMNS}, index=G.node_ids.tolist(),
                        columns=_NODE_COLUMNS)


def trace_info(G: TraceGraph) -> dict[str, Any]:
    """Everything ``opgraph info`` shows, as JSON-ready data (times in µs)."""
    from opgraph.graph import graph_summary

    s = graph_summary(G)
    ev: pd.DataFrame = G.graph["events"]
    nodes = _node_table(G)
    act = nodes[nodes["kind"].isin(DEVICE_ACTIVITY_KINDS)]
    streams = []
    if len(act):
        for (dev, st), grp in act.groupby(["device", "stream"], sort=True):
            streams.append({"device": int(dev), "stream": int(st), "activities": int(len(grp)),
                            "busy_us": round(float(grp["dur"].sum()) / 1000.0, 3)})
    host = nodes[~nodes["kind"].isin(DEVICE_ACTIVITY_KINDS + ("gpu_annotation",))]
    tnames = thread_names(ev)
    threads = []
    if len(host):
        cnt = Counter(zip(host["pid"].tolist(), host["tid"].tolist()))
        for (pid, tid), c in sorted(cnt.items(), key=lambda kv: -kv[1]):
            threads.append({"pid": pid, "tid": tid, "name": tnames.get((pid, tid)), "events": int(c)})
    devices = []
    for d in G.graph.get("device_properties") or []:
        if isinstance(d, dict):
            devices.append({"id": d.get("id"), "name": d.get("name"),
                            "memory_gb": round(d["totalGlobalMem"] / 2**30, 1) if isinstance(d.get("totalGlobalMem"), (int, float)) else None,
                            "sms": d.get("numSms")})
    di = G.graph.get("distributed_info") or {}
    ranks = {"rank": di.get("rank"), "world_size": di.get("world_size"), "backend": di.get("backend")}
    steps = find_steps(G)
    span = G.graph.get("span_ns", (0, 0))
    return {
        "source": s["source"],
        "events": s["events"],
        "events_by_kind": s["events_by_kind"],
        "nodes": s["nodes"],
        "nodes_by_kind": s["nodes_by_kind"],
        "edges": s["edges"],
        "edges_by_kind": s["edges_by_kind"],
        "devices": devices,
        "streams": streams,
        "threads": threads,
        "ranks": ranks,
        "iterations": {"count": int(len(steps)), "names": steps["name"].tolist()[:1000]},
        "span": {"start_us": span[0] / 1000.0, "end_us": span[1] / 1000.0,
                 "duration_us": (span[1] - span[0]) / 1000.0},
        "health": list(G.graph.get("health", [])),
        "inferred_dependencies": inferred_dependencies(G),
        **_graph_replay_section(G),
        "schema_version": G.graph.get("schema_version"),
        "opgraph_version": G.graph.get("opgraph_version"),
        **_job_section(G),
    }


def _graph_replay_section(G: TraceGraph) -> dict[str, Any]:
    """``graph_replay``: the counts of ``G.graph['graph_replay']`` (docs/graph-replay.md),
    without the per-activity map; absent when the trace replays no CUDA/HIP graph."""
    doc = G.graph.get("graph_replay")
    if not isinstance(doc, dict):
        return {}
    keys = ("replays", "activities", "mapped", "mapped_by", "unmapped")
    out = {k: doc.get(k) for k in keys}
    out["captures"] = [{k: c.get(k) for k in ("source", "label", "nodes", "names_recorded")}
                       for c in doc.get("captures", []) if isinstance(c, dict)]
    return {"graph_replay": out}


def inferred_dependencies(G: TraceGraph) -> list[dict[str, Any]]:
    """The dependency kinds the graph builder inferred (edges with ``inferred=True``), one row
    per edge kind and evidence: ``{"kind", "evidence", "count"}`` (docs/model.md, "Inferred
    edges"), most frequent first."""
    acc: dict[tuple[str, str], int] = {}
    kinds = G.edge_kinds()   # only edges with more than a kind can be inferred
    for d in ({**d, "kind": kinds[j]} for j, d in G.payload["edge_extra"].items()):
        if d.get("inferred"):
            ev = d.get("evidence") or d.get("sync_kind") or d.get("cat") or ""
            key = (str(d.get("kind")), str(ev))
            acc[key] = acc.get(key, 0) + 1
    return [{"kind": k, "evidence": e, "count": c} for (k, e), c in sorted(acc.items(), key=lambda kv: (-kv[1], kv[0]))]


def _job_section(G: TraceGraph) -> dict[str, Any]:
    """``{"job": ...}`` for a multi-rank job graph (docs/multirank.md), else empty."""
    job = G.graph.get("job")
    if not isinstance(job, dict):
        return {}
    from opgraph.multirank.report import job_info_doc
    return {"job": job_info_doc(job)}
