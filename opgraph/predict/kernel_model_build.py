"""Build the measured kernel models of ET-driven prediction from a profiled trace.

:func:`profile_ops` walks a profiled graph once: the *top-level ops* are exactly those of
the overheads analysis (:mod:`opgraph.analysis.overheads`: the outermost non-module CPU
ops in the steps' window, outside data loading), each op's *launch calls* are its leaf
runtime calls whose API is a counted launch API (``cudaLaunchKernel``, ``cudaMemcpyAsync``,
``cudaStreamSynchronize`` ...), and its *device activities* are those a runtime call under
the op launched (the graph's ``launch`` edges: CPU op -> runtime call -> kernel). From
that, :func:`build_lookup` makes the :class:`~opgraph.predict.kernel_models.KernelLookup`
and :func:`build_calibration` the
:class:`~opgraph.predict.kernel_models.RooflineCalibration`. Times are ns inside, µs in
the tables.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np
import pandas as pd

from opgraph.model.trace_graph import TraceGraph
from opgraph.analysis.op_hierarchy import input_dims
from opgraph.analysis.kind_codes import K_KERNEL, K_MEMCPY, K_MEMSET, K_RUNTIME
from opgraph.analysis.graph_frame import GraphFrame, frame_of
from opgraph.analysis.window import AnalysisWindow
from opgraph.analysis.overheads import OverheadParams, select_ops
from opgraph.predict.kernel_models import (
    Activity, ApiTiming, KernelLookup, LookupEntry, RooflineCalibration, device_peaks, fit_classes, op_class,
    roofline_bound_ns, shape_key,
)

_KIND_NAME = {K_KERNEL: "kernel", K_MEMCPY: "memcpy", K_MEMSET: "memset"}


def is_collective_name(name: str) -> bool:
    """A device activity of a collective library (NCCL / RCCL)."""
    low = name.lower()
    return "nccl" in low or "rccl" in low


@dataclass
class ProfileOps:
    """The top-level ops of a profile and what they launched (positions are frame rows).

    ``ops``: one row per op occurrence (``pos``, ``name``, ``shapes``, ``ts``, ``end``).
    ``calls``: counted launch calls (``op``, ``pos``, ``api``, ``ts``, ``end``, ``slot``,
    ``blocking``, ``wait_end`` = latest end of the device work it waited for, or -1).
    ``acts``: device activities launched under an op (``op``, ``pos``, ``name``, ``kind``,
    ``stream``, ``dur``, ``api``, ``slot``, ``order``, ``collective``, ``comm_wait``: the
    cross-rank wait removed from ``dur``, ns, 0 without ``comm_waits``).
    ``comm_waits``: what was removed (``kernels``, ``removed_us``), or None."""

    frame: GraphFrame
    window: AnalysisWindow
    ops: pd.DataFrame
    calls: pd.DataFrame
    acts: pd.DataFrame
    comm_waits: dict[str, Any] | None = None


def _sync_waits(f: GraphFrame) -> pd.Series:
    """Per runtime-call position: the latest end (ns) of the device work its ``sync``
    edges say it waited for."""
    a = f.G.arrays
    s_pos, d_pos = a.out_edges("sync")
    if not len(s_pos):
        return pd.Series(dtype=np.int64)
    src, dst = a.eid[s_pos], a.eid[d_pos]
    pos = pd.Series(np.arange(len(f)), index=f.node)
    s = pos.reindex(src).to_numpy()
    t = pos.reindex(dst).to_numpy()
    ok = ~(np.isnan(s) | np.isnan(t))
    s, t = s[ok].astype(np.int64), t[ok].astype(np.int64)
    return pd.Series(f.end[s]).groupby(t).max()


def profile_ops(G: TraceGraph | GraphFrame, params: OverheadParams | None = None,
                window: AnalysisWindow | None = None, comm_waits: Mapping[int, int] | None = None) -> ProfileOps:
    """The top-level ops of a profiled graph with their launch calls and device activities.

    ``comm_waits``: node id -> ns of cross-rank wait inside that collective kernel
    (:func:`opgraph.analysis.stragglers.rank_comm_waits` of the job the profile belongs
    to); it is subtracted from the kernels' durations, so the tables hold the rank's own
    transfer time and not how late the other ranks of the profiled run arrived."""
    p = params or OverheadParams()
    f = frame_of(G)
    sel = select_ops(f, p, window)
    w, hh, top, ops, op_ok = sel.window, sel.hierarchy, sel.top, sel.ops, sel.op_ok
    parent = hh.parent
    shapes = [shape_key(input_dims(a) if isinstance(a, dict) else None) for a in f.args_list(ops)]
    O = pd.DataFrame({"pos": ops, "name": f.name[ops], "shapes": shapes, "ts": f.ts[ops], "end": f.end[ops]})
    # counted launch calls: leaf runtime calls with a launch-API name under an op in scope
    n_children = np.bincount(parent[parent >= 0], minlength=len(f))
    api = set(p.launch_apis)
    rt = np.flatnonzero((f.kind == K_RUNTIME) & (top >= 0))
    rt = rt[op_ok[top[rt]]]
    counted = (n_children[rt] == 0) & np.fromiter((x in api for x in f.name[rt]), dtype=bool, count=len(rt))
    C = pd.DataFrame({"op": top[rt], "pos": rt, "api": f.name[rt], "ts": f.ts[rt], "end": f.end[rt],
                      "counted": counted}).sort_values(["op", "ts", "pos"], kind="stable")
    # slot: index among the op's counted calls; uncounted calls take the last counted before them
    C["k"] = C.groupby("op")["counted"].cumsum().astype(np.int64)
    C["slot"] = np.where(C["counted"], C["k"] - 1, C["k"] - 1)
    waits = _sync_waits(f)
    C["wait_end"] = waits.reindex(C["pos"].to_numpy()).fillna(-1).to_numpy(np.int64)
    C["blocking"] = C["wait_end"] >= 0
    # activities launched by any runtime call under an op in scope
    act = np.flatnonzero(f.is_activity & (f.launcher >= 0))
    lr = f.launcher[act]
    keep = (top[lr] >= 0) & op_ok[np.maximum(top[lr], 0)]
    act, lr = act[keep], lr[keep]
    slot_of = pd.Series(C["slot"].to_numpy(), index=C["pos"].to_numpy())
    A = pd.DataFrame({"op": top[lr], "pos": act, "name": f.name[act],
                      "kind": [_KIND_NAME.get(int(k), "kernel") for k in f.kind[act]],
                      "stream": f.stream[act], "dur": f.dur[act], "ts": f.ts[act], "api": f.name[lr],
                      "slot": slot_of.reindex(lr).fillna(-1).to_numpy(np.int64), "launch_ts": f.ts[lr]})
    A["collective"] = [is_collective_name(n) for n in A["name"]]
    cw_doc = None
    if comm_waits is not None:
        wt = pd.Series(comm_waits, dtype=np.int64).reindex(f.node[act]).fillna(0).to_numpy(np.int64)
        wt = np.clip(wt, 0, A["dur"].to_numpy(np.int64))
        A["comm_wait"] = wt
        A["dur"] = A["dur"].to_numpy(np.int64) - wt
        cw_doc = {"kernels": int((wt > 0).sum()), "matched": int(len(set(comm_waits) & set(f.node[act].tolist()))),
                  "removed_us": float(wt.sum()) / 1e3}
    else:
        A["comm_wait"] = np.zeros(len(A), np.int64)
    A = A.sort_values(["op", "launch_ts", "ts", "pos"], kind="stable").reset_index(drop=True)
    A["order"] = A.groupby("op").cumcount()
    calls = C[C["counted"]].drop(columns=["counted", "k"]).reset_index(drop=True)
    O["gap"] = _gaps_before(O, f.lane[ops], w)
    return ProfileOps(f, w, O, calls, A, cw_doc)


def _gaps_before(O: pd.DataFrame, lane: np.ndarray, w: AnalysisWindow) -> np.ndarray:
    """Per op: the host time between the previous top-level op of its thread and it (ns),
    minus the part covered by other threads' top-level ops (a thread blocked while the
    autograd thread runs) and by data loading; NaN for a thread's first op."""
    from opgraph.intervals import IntervalSet, union_intervals

    ts, end = O["ts"].to_numpy(), O["end"].to_numpy()
    o = np.lexsort((ts, lane))
    gap = np.full(len(O), np.nan)
    if len(O) < 2:
        return gap
    same = lane[o][1:] == lane[o][:-1]
    a = end[o][:-1][same]
    b = ts[o][1:][same]
    hi = np.maximum(a, b)
    us, ue = union_intervals(ts, end)
    busy = IntervalSet(us, ue).covered(a, hi)
    dl = w.data_loading.covered(a, hi) if len(w.data_loading) else 0
    gap[o[1:][same]] = np.maximum(hi - a - busy - dl, 0)
    return gap


def _api_timings(calls: pd.DataFrame) -> dict[str, ApiTiming]:
    """Own time (calls that did not wait) and return latency (calls that waited) per API."""
    if not len(calls):
        return {}
    waited = calls["wait_end"].to_numpy() > calls["ts"].to_numpy()
    dur = (calls["end"] - calls["ts"]).to_numpy(np.float64)
    ret = np.maximum(calls["end"].to_numpy() - calls["wait_end"].to_numpy(), 0).astype(np.float64)
    df = pd.DataFrame({"api": calls["api"].to_numpy(), "waited": waited, "dur": dur, "ret": ret})
    out: dict[str, ApiTiming] = {}
    for a, g in df.groupby("api", sort=True):
        own = g.loc[~g["waited"], "dur"]
        back = g.loc[g["waited"], "ret"]
        own_us = float(own.mean()) / 1e3 if len(own) else float(g["dur"].min()) / 1e3
        out[str(a)] = ApiTiming(own_us, int(len(own)), float(back.mean()) / 1e3 if len(back) else 0.0, int(len(back)))
    return out


def _stream_roles(acts: pd.DataFrame) -> dict[int, str]:
    if not len(acts):
        return {}
    roles: dict[int, str] = {}
    comp = acts[~acts["collective"]].groupby("stream")["dur"].sum()
    main = int(comp.idxmax()) if len(comp) else None
    for s in sorted(set(acts["stream"].tolist())):
        s = int(s)
        if s == main:
            roles[s] = "compute"
        elif acts.loc[acts["stream"] == s, "collective"].any():
            roles[s] = "comm"
        else:
            roles[s] = "other"
    return roles


def _entries(po: ProfileOps, by: list[str]) -> dict[Any, LookupEntry]:
    """Group op occurrences by ``by`` (``name`` + ``shapes`` or ``name``); per group the most
    common launch signature, with activity durations averaged position-wise."""
    O, C, A = po.ops, po.calls, po.acts
    call_sig = C.groupby("op").agg(launches=("api", tuple), blocking=("blocking", tuple))
    act_sig = A.groupby("op").apply(
        lambda g: tuple(zip(g["slot"].tolist(), g["api"].tolist(), g["name"].tolist(), g["kind"].tolist(),
                            g["stream"].tolist(), g["collective"].tolist())), include_groups=False) if len(A) else pd.Series(dtype=object)
    S = O.set_index("pos")
    S["launches"] = call_sig["launches"].reindex(S.index)
    S["blocking"] = call_sig["blocking"].reindex(S.index)
    S["acts"] = act_sig.reindex(S.index) if len(act_sig) else None
    for c in ("launches", "blocking", "acts"):
        S[c] = [x if isinstance(x, tuple) else () for x in S[c]]
    S["sig"] = list(zip(S["launches"], S["acts"]))
    gap_mean = S.groupby(by, sort=False)["gap"].mean()
    out: dict[Any, LookupEntry] = {}
    durs = A.set_index(["op", "order"])["dur"] if len(A) else None
    for key, g in S.groupby(by, sort=False):
        cnt = Counter(g["sig"])
        best, n = cnt.most_common(1)[0]
        members = g.index[[s == best for s in g["sig"]]].to_numpy()
        launches, acts = best
        blocking = Counter(tuple(b) for b, s in zip(g["blocking"], g["sig"]) if s == best).most_common(1)[0][0]
        acts_out: list[Activity] = []
        for j, (slot, api_, name, kind, stream, coll) in enumerate(acts):
            d = durs.reindex(pd.MultiIndex.from_arrays([members, np.full(len(members), j)])).to_numpy(np.float64) / 1e3
            acts_out.append(Activity(int(slot), str(api_), str(name), str(kind), int(stream), bool(coll),
                                     float(np.nanmean(d)), float(np.nanstd(d)), int(np.isfinite(d).sum())))
        k = key if isinstance(key, tuple) else (key,)
        op = str(k[0])
        shp = str(k[1]) if len(k) > 1 else "*"
        gm = gap_mean.get(key)
        out[key] = LookupEntry(op, shp, list(launches), [bool(b) for b in blocking], acts_out, int(n), int(len(g)),
                               None if gm is None or not np.isfinite(gm) else float(gm) / 1e3)
    return out


def build_lookup(G: TraceGraph | GraphFrame, params: OverheadParams | None = None,
                 po: ProfileOps | None = None, device: str | None = None) -> KernelLookup:
    """The measured lookup table of a profiled trace (see the module docstring)."""
    po = po or profile_ops(G, params)
    f = po.frame
    exact = _entries(po, ["name", "shapes"])
    by_name = _entries(po, ["name"])
    src = f.G.graph.get("source") if isinstance(f.G.graph.get("source"), dict) else {}
    steps = max(len(po.window.steps), 1)
    return KernelLookup(entries={(e.op, e.shapes): e for e in exact.values()},
                        by_name={e.op: e for e in by_name.values()},
                        apis=_api_timings(po.calls), streams=_stream_roles(po.acts),
                        data_loading_us=po.window.data_loading_ns / 1e3 / steps, steps=len(po.window.steps),
                        device=device or profile_device_name(f.G),
                        source={"file": src.get("file"), "sha256": src.get("sha256")},
                        comm_waits=po.comm_waits)


def profile_device_name(G: TraceGraph) -> str | None:
    """The ``devices.json`` name of the trace's GPU (from ``deviceProperties``), if known."""
    from opgraph.devices.peaks import lookup_properties

    for p in G.graph.get("device_properties") or []:
        if isinstance(p, dict):
            d = lookup_properties(p)
            if d is not None:
                return d.name
    return None


def build_calibration(G: TraceGraph | GraphFrame, device: str | None = None, params: OverheadParams | None = None,
                      po: ProfileOps | None = None) -> RooflineCalibration:
    """Per-op-class roofline fits of a profiled trace: for every top-level op that
    launched device work and has a FLOP/byte model (:func:`opgraph.analysis.flops.op_cost`),
    its bound on ``device`` (default: the trace's GPU) against its summed activity time.
    Raises ``ValueError`` when the device is unknown."""
    from opgraph.analysis.flops import op_cost_from_args, op_family

    po = po or profile_ops(G, params)
    f = po.frame
    name = device or profile_device_name(f.G)
    pk = device_peaks(name) if name else None
    if pk is None:
        raise ValueError(f"unknown device {name!r} for the roofline calibration; pass --device"
                         if name else "the trace does not identify its GPU; pass --device")
    di = f.G.graph.get("distributed_info") or {}
    ws = di.get("world_size") if isinstance(di.get("world_size"), int) else None
    gpu = po.acts.groupby("op")["dur"].sum() if len(po.acts) else pd.Series(dtype=np.float64)
    O = po.ops[po.ops["pos"].isin(gpu.index)]
    fl, by, rate, cls = [], [], [], []
    for pos, nm in zip(O["pos"].tolist(), O["name"].tolist()):
        c = op_cost_from_args(nm, f.args(pos), world_size=ws)
        fam = op_family(nm)
        cls.append(op_class(nm, fam or (c.model if c else None)))
        fl.append(np.nan if c is None else float(c.flops))
        by.append(np.nan if c is None or c.bytes is None else float(c.bytes))
        rate.append(np.nan if c is None else (pk.flops_rate(c.dtype) or np.nan))
    fl_a, by_a = np.asarray(fl, np.float64), np.asarray(by, np.float64)
    fl_a[fl_a == 0] = np.nan      # zero-FLOP ops are bound by bytes alone
    bound = roofline_bound_ns(fl_a, by_a, np.asarray(rate, np.float64), pk.dram_bytes_per_ns) / 1e3
    dur = gpu.reindex(O["pos"]).to_numpy(np.float64) / 1e3
    fits = fit_classes(np.asarray(cls, dtype=object), bound, dur)
    src = f.G.graph.get("source") if isinstance(f.G.graph.get("source"), dict) else {}
    return RooflineCalibration(pk.device, pk, fits, {"file": src.get("file"), "sha256": src.get("sha256")})
