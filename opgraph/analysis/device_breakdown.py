"""The device breakdown (seed-algorithms.md §1.5), over all occurrences: per (device,
stream), each device activity's time (clipped to the analysis window) attributed to the
CPU path of the op that launched it (``launch`` edge -> the runtime call -> its ``nest``
parent), so an op's device time is the sum over all of its occurrences and all kernels
below it (the seed looked at the first occurrence only) (:func:`device_breakdown`), with
a per-op table (outermost ops, graph replays mapped to the op that captured them), and
its JSON document (:func:`device_breakdown_doc`).

All times are ns inside; the document is in µs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

import numpy as np
import pandas as pd

from opgraph.model.trace_graph import TraceGraph
from opgraph.analysis.breakdown_tree import OTHERS, UNACCOUNTED, doc_source, tree_entry
from opgraph.analysis.graph_frame import GraphFrame, frame_of
from opgraph.analysis.host_breakdown import HostBreakdown, host_breakdown
from opgraph.analysis.kind_codes import K_KERNEL
from opgraph.analysis.multistream import device_stats, stream_stats
from opgraph.analysis.op_hierarchy import DEFAULT_MODULE_MARKERS, outermost_ops
from opgraph.analysis.replayed_ops import replayed_ops
from opgraph.analysis.window import AnalysisWindow, analysis_window
from opgraph.names import short_kernel_name

__all__ = ["NO_LAUNCH", "OUTSIDE_OPS", "DeviceBreakdown", "device_breakdown", "device_breakdown_doc"]

#: Prefix of the name of a kernel leaf whose launching runtime call is not in the trace.
NO_LAUNCH = "(launch not in trace)"
#: Per-op table label of device time launched outside any outermost op.
OUTSIDE_OPS = "(outside any op)"


@dataclass
class DeviceBreakdown:
    """Result of :func:`device_breakdown`.

    ``items``: one row per (stream key, tree node) with ``device``, ``stream``, ``node``
    (path id for op nodes; negative ids for kernel leaves), ``parent`` (path id or -1 for
    the stream root), ``name``, ``kind`` (``op``/``kernel``/``no_launch``), ``time_ns``
    (device time), ``activities``. ``streams``: :func:`~opgraph.analysis.multistream.stream_stats`.
    ``ops``: per outermost op name, ``count``, ``kernels``, ``device_ns``, ``host_ns``.
    ``devices``: :func:`~opgraph.analysis.multistream.device_stats` (busy, idle, overlap).
    """

    window: AnalysisWindow
    items: pd.DataFrame
    streams: pd.DataFrame
    ops: pd.DataFrame
    host: HostBreakdown
    devices: pd.DataFrame


def device_breakdown(G: TraceGraph | GraphFrame, window: AnalysisWindow | None = None, step_regex: str | None = None,
                     data_markers: Iterable[str] | None = None,
                     module_markers: Iterable[str] = DEFAULT_MODULE_MARKERS,
                     short_names: bool = True, include_python: bool = False) -> DeviceBreakdown:
    """Device time per stream, attributed to the CPU op hierarchy that launched it.

    Parameters
    ----------
    G : TraceGraph or GraphFrame
    window : AnalysisWindow, optional
    step_regex, data_markers : optional
        See :func:`~opgraph.analysis.steps.find_iterations`.
    module_markers : iterable of str
        Name prefixes of label ranges that are not ops (for the per-op table).
    short_names : bool
        Shorten kernel names (:func:`opgraph.names.short_kernel_name`).
    include_python : bool
        Attribute through ``python_function`` frames too (default: CPU ops only).

    Returns
    -------
    DeviceBreakdown
        Times in ns. For each stream the op tree sums exactly to the stream's device time.
    """
    f = frame_of(G)
    w = window if window is not None else analysis_window(f, step_regex, data_markers)
    hb = host_breakdown(f, w, include_python=include_python)
    paths = hb.paths
    w0, w1 = w.start, w.end
    act = np.flatnonzero(f.is_activity & (((f.end > w0) & (f.ts < w1)) | ((f.dur == 0) & (f.ts >= w0) & (f.ts < w1))))
    a = np.clip(f.ts[act], w0, w1)
    b = np.maximum(np.clip(f.end[act], w0, w1), a)
    dt = b - a
    rt = f.launcher[act]
    op_parent = np.where(rt >= 0, hb.parent[np.maximum(rt, 0)], -1)
    # attach to the runtime's parent path; a runtime at the root attaches to its thread root
    attach = np.where(op_parent >= 0, hb.event_path[np.maximum(op_parent, 0)], -1)
    lane_of_rt = np.where(rt >= 0, f.lane[np.maximum(rt, 0)], -1)
    skey = (f.device[act] << 32) + f.stream[act] + 1
    kname = f.name[act]
    if short_names:
        kc, ku = pd.factorize(kname)
        if len(ku):
            is_k = np.zeros(len(ku), dtype=bool)
            is_k[kc] = f.kind[act] == K_KERNEL
            ku = np.array([short_kernel_name(k) if is_k[i] and isinstance(k, str) else k for i, k in enumerate(ku)],
                          dtype=object)
            kname = ku[kc]
    leaf = pd.DataFrame({"skey": skey, "device": f.device[act], "stream": f.stream[act],
                         "attach": attach, "lane": lane_of_rt, "has_rt": rt >= 0, "kname": kname, "t": dt})
    # kernel leaves
    leaf["parent"] = np.where(leaf["has_rt"], leaf["attach"], -2)  # -2: no launch known
    leaf.loc[leaf["has_rt"] & (leaf["attach"] < 0), "parent"] = -3 - leaf["lane"]  # thread root
    kl = leaf.groupby(["skey", "parent", "kname"], as_index=False, sort=False).agg(
        device=("device", "first"), stream=("stream", "first"), time_ns=("t", "sum"), activities=("t", "size"))
    kl["kind"] = "kernel"
    kl = kl.rename(columns={"kname": "name"})
    # op nodes: roll kernel time up the path tree
    direct = kl[kl["parent"] >= 0].groupby(["skey", "parent"], as_index=False).agg(
        time_ns=("time_ns", "sum"), activities=("activities", "sum"))
    direct = direct.rename(columns={"parent": "node"})
    pparent = paths["parent"].to_numpy()
    pdepth = paths["depth"].to_numpy()
    ops = _roll_up(direct, pparent, pdepth)
    nodes = ops["node"].to_numpy(np.int64)
    ops["parent"] = pparent[nodes] if len(nodes) else []
    ops["lane"] = paths["lane"].to_numpy()[nodes] if len(nodes) else []
    ops["parent"] = np.where(ops["parent"] >= 0, ops["parent"], -3 - ops["lane"]) if len(nodes) else []
    ops["name"] = paths["name"].to_numpy()[nodes] if len(nodes) else []
    ops["depth"] = pdepth[nodes] if len(nodes) else []
    ops["kind"] = "op"
    sk = ops["skey"].to_numpy(np.int64)
    ops["device"] = sk >> 32
    ops["stream"] = (sk & 0xFFFFFFFF) - 1
    # kernel leaves get negative node ids; thread-root pseudo parents are -3 - lane
    kl["node"] = -1000000000 - np.arange(len(kl))
    kl.loc[kl["parent"] == -2, "kind"] = "no_launch"
    cols = ["skey", "device", "stream", "node", "parent", "name", "kind", "time_ns", "activities"]
    items = pd.concat([ops[cols], kl[cols]], ignore_index=True)
    items["time_ns"] = items["time_ns"].astype(np.int64)
    items["activities"] = items["activities"].astype(np.int64)
    ss = stream_stats(f, w)
    # per-op table (outermost ops)
    is_op, top = outermost_ops(f, module_markers, include_python)
    occ = np.flatnonzero(is_op & hb.in_scope)
    host_t = pd.DataFrame({"op": f.name[occ], "host_ns": hb.event_time[occ]}).groupby("op").agg(
        count=("host_ns", "size"), host_ns=("host_ns", "sum"))
    top_of_act = np.where(rt >= 0, top[np.maximum(rt, 0)], -1)
    op_label = np.where(top_of_act >= 0, f.name[np.maximum(top_of_act, 0)], OUTSIDE_OPS).astype(object)
    # graph replays: the op that captured the kernel, else (outside any op) its category
    replayed, mapped, rlabel = replayed_ops(f, act, module_markers)
    use = mapped | (replayed & (top_of_act < 0))
    op_label[use] = rlabel[use]
    dev_t = pd.DataFrame({"op": op_label, "t": dt, "k": 1, "g": replayed.astype(np.int64)}).groupby("op").agg(
        kernels=("k", "sum"), device_ns=("t", "sum"), graph_kernels=("g", "sum"))
    opt = host_t.join(dev_t, how="outer").fillna(0)
    opt = opt.astype({"count": np.int64, "host_ns": np.int64, "kernels": np.int64, "device_ns": np.int64,
                      "graph_kernels": np.int64})
    opt = opt.reset_index().rename(columns={"index": "op"})
    opt = opt.sort_values(["device_ns", "host_ns", "op"], ascending=[False, False, True]).reset_index(drop=True)
    return DeviceBreakdown(w, items, ss, opt, hb, device_stats(f, w))


def _roll_up(direct: pd.DataFrame, pparent: np.ndarray, pdepth: np.ndarray) -> pd.DataFrame:
    """Per (skey, path node): the sum of ``time_ns`` and ``activities`` of ``direct`` over
    the node and all its descendants. Rows move up one depth at a time, deepest first, and
    only the rows at the current depth are touched (numpy only): O(output log output) plus a
    small constant per level, also for an N-deep chain of ops."""
    cols = ["skey", "node", "time_ns", "activities"]
    if not len(direct):
        return pd.DataFrame(columns=cols)
    kc, ku = pd.factorize(direct["skey"].to_numpy(np.int64))
    n_nodes = max(len(pparent), 1)
    node = direct["node"].to_numpy(np.int64)
    key = kc.astype(np.int64) * n_nodes + node
    t = direct["time_ns"].to_numpy(np.int64)
    a = direct["activities"].to_numpy(np.int64)
    dep = pdepth[node]
    o = np.argsort(-dep, kind="stable")
    key, t, a, dep = key[o], t[o], a[o], dep[o]
    cut = np.flatnonzero(np.diff(dep)) + 1
    pending: dict[int, list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = {}
    for lo, hi in zip(np.concatenate(([0], cut)).tolist(), np.concatenate((cut, [len(dep)])).tolist()):
        pending.setdefault(int(dep[lo]), []).append((key[lo:hi], t[lo:hi], a[lo:hi]))
    out_k, out_t, out_a = [], [], []
    d = max(pending)
    while d >= 0:
        parts = pending.pop(d, None)
        if parts:
            k = np.concatenate([p[0] for p in parts])
            o = np.argsort(k, kind="stable")  # exact int64 sums per key (no float bincount)
            k = k[o]
            first = np.flatnonzero(np.concatenate(([True], k[1:] != k[:-1])))
            uk = k[first]
            st = np.add.reduceat(np.concatenate([p[1] for p in parts])[o], first)
            sa = np.add.reduceat(np.concatenate([p[2] for p in parts])[o], first)
            out_k.append(uk)
            out_t.append(st)
            out_a.append(sa)
            par = pparent[uk % n_nodes]
            up = par >= 0
            if up.any():
                pending.setdefault(d - 1, []).append(((uk[up] // n_nodes) * n_nodes + par[up], st[up], sa[up]))
        d -= 1
    k = np.concatenate(out_k)
    o = np.argsort(k, kind="stable")
    k = k[o]
    return pd.DataFrame({"skey": np.asarray(ku, dtype=np.int64)[k // n_nodes], "node": k % n_nodes,
                         "time_ns": np.concatenate(out_t)[o], "activities": np.concatenate(out_a)[o]}
                        ).sort_values(["skey", "node"], kind="stable").reset_index(drop=True)


def device_breakdown_doc(db: DeviceBreakdown, depth: int = 3, top: int = 10) -> dict[str, Any]:
    """The device breakdown as a JSON-ready document (schemas/breakdown.schema.json), µs.

    Per stream: span, active, idle (active + idle = span), device time, and a tree of CPU
    ops -> kernels with device time, ``depth`` levels deep and ``top`` entries per parent
    (the rest in ``Others``; ``Unaccounted`` closes each level to 100 %). Also the per-op
    table (``ops``: op, count, kernels, device µs, host µs, device/host ratio).
    """
    items = db.items.sort_values(["skey", "parent", "time_ns", "name"], ascending=[True, True, False, True],
                                 kind="stable").reset_index(drop=True)
    groups = items.groupby(["skey", "parent"], sort=False).indices  # positions, in sorted order

    def children_of(skey: int, key: int) -> pd.DataFrame | None:
        idx = groups.get((skey, key))
        return None if idx is None else items.iloc[idx]

    def build(skey: int, key: int, parent_ns: int, lvl: int) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        g = children_of(skey, key)
        covered = 0
        if g is not None:
            head, rest = g.iloc[:top], g.iloc[top:]
            for r in head.itertuples(index=False):
                e = tree_entry(str(r.name) if r.kind != "no_launch" else f"{NO_LAUNCH} {r.name}", str(r.kind),
                           int(r.time_ns), parent_ns, int(r.activities))
                if r.kind == "op" and lvl + 1 < depth:
                    e["children"] = build(skey, int(r.node), int(r.time_ns), lvl + 1)
                out.append(e)
                covered += int(r.time_ns)
            if len(rest):
                t = int(rest["time_ns"].sum())
                e = tree_entry(OTHERS, "others", t, parent_ns, int(rest["activities"].sum()))
                e["entries"] = int(len(rest))
                out.append(e)
                covered += t
        else:
            covered = parent_ns
        un = parent_ns - covered
        if un != 0 or not out:
            out.append(tree_entry(UNACCOUNTED, "unaccounted", un, parent_ns, 0))
        return out

    streams = []
    for r in db.streams.itertuples(index=False):
        skey = int(r.device) * (1 << 32) + int(r.stream) + 1
        roots = items[(items["skey"] == skey) & (items["parent"] < 0)]
        total = int(r.device_ns)
        # top level: thread roots merged under the stream
        top_entries: list[dict[str, Any]] = []
        rows = roots.sort_values(["time_ns", "name"], ascending=[False, True])
        head, rest = rows.iloc[:top], rows.iloc[top:]
        covered = 0
        for x in head.itertuples(index=False):
            e = tree_entry(str(x.name) if x.kind != "no_launch" else f"{NO_LAUNCH} {x.name}", str(x.kind),
                       int(x.time_ns), total, int(x.activities))
            if x.kind == "op" and depth > 1:
                e["children"] = build(skey, int(x.node), int(x.time_ns), 1)
            top_entries.append(e)
            covered += int(x.time_ns)
        if len(rest):
            t = int(rest["time_ns"].sum())
            e = tree_entry(OTHERS, "others", t, total, int(rest["activities"].sum()))
            e["entries"] = int(len(rest))
            top_entries.append(e)
            covered += t
        if total - covered != 0 or not top_entries:
            top_entries.append(tree_entry(UNACCOUNTED, "unaccounted", total - covered, total, 0))
        span = int(r.span_ns) or 1
        streams.append({"device": int(r.device), "stream": int(r.stream), "span_us": r.span_ns / 1e3,
                        "active_us": r.active_ns / 1e3, "idle_us": r.idle_ns / 1e3,
                        "active_pct": 100.0 * r.active_ns / span, "idle_pct": 100.0 * r.idle_ns / span,
                        "device_us": r.device_ns / 1e3, "activities": int(r.activities), "kernels": int(r.kernels),
                        "entries": top_entries})
    ops = []
    for r in db.ops.itertuples(index=False):
        ops.append({"op": str(r.op), "count": int(r.count), "kernels": int(r.kernels),
                    "graph_kernels": int(r.graph_kernels), "device_us": r.device_ns / 1e3,
                    "host_us": r.host_ns / 1e3,
                    "ratio": (r.device_ns / r.host_ns) if r.host_ns > 0 else None})
    devices = [{"device": int(r.device), "streams": int(r.streams), "span_us": r.span_ns / 1e3,
                "busy_us": r.busy_ns / 1e3, "idle_us": r.idle_ns / 1e3, "overlap_us": r.overlap_ns / 1e3}
               for r in db.devices.itertuples(index=False)]
    return {"mode": "device", "source": doc_source(db.host.frame), "window": db.window.to_dict(), "depth": depth,
            "top": top, "devices": devices, "streams": streams,
            "ops": ops}
