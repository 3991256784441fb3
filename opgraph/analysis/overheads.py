"""CPU overheads T1-T5 (seed-algorithms.md §2), with the seed's bugs fixed.

``ops`` are the outermost non-module CPU ops (the seed's ``get_operators``), in the analysis
window and outside data loading, in time order per thread. For each op, its *launches* are
its leaf runtime descendants whose name is a launch API (default ``cudaLaunchKernel``,
``cudaMemcpyAsync``, ``cudaStreamSynchronize``, plus their HIP twins), sorted by start.

- **T1** (op-independent): for consecutive ops of one thread with the same ``nest`` parent
  (both roots counts), ``gap = op.start − prev.end`` when ``gap < t1_max_gap`` (200 µs by
  default: longer gaps are data loading or waits); optional lower bound; gaps that overlap
  data loading are skipped.
- **T2** (per op): ``first launch start − op start``; **T3**: ``op end − last launch end``;
- **T5** (per op): every gap between consecutive launches (one sample of 0 for an op with
  a single launch);
- **T4** (per launch API): each launch's duration;
- **whole** (per op): the duration of occurrences with no launch. The seed put these in T5
  and kept only the last occurrence; here every occurrence is kept and they are a separate
  sample set, so T5 never mixes gaps with whole durations and whole ops add no T2/T3.

Every statistic is ``{mean, std, n}`` in µs (std is the population std, as ``np.std``),
optionally split by input shapes. Times are ns inside.

**Outliers** (``OverheadParams.drop_outliers="iqr"``, ``opgraph overheads --drop-outliers
iqr``; off by default): as the seed's HEAD, each sample list a statistic summarises (T1;
T4 per API; T2/T3/T5/whole per op, and per op + shapes for the shape level) drops the
samples outside ``[Q1 − 1.5·IQR, Q3 + 1.5·IQR]`` (quartiles by linear interpolation, as
``np.percentile``) before ``mean``/``std``/``n`` are taken; the statistic then also gives
``median`` and ``dropped`` (samples removed). A one-off sample (a first iteration after a
1 s pause, a call that waited) otherwise dominates a mean of a few samples.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from opgraph.model.trace_graph import TraceGraph
from opgraph.analysis.op_hierarchy import DEFAULT_MODULE_MARKERS, host_hierarchy, input_dims, outermost_ops
from opgraph.analysis.kind_codes import K_RUNTIME
from opgraph.analysis.graph_frame import GraphFrame, frame_of
from opgraph.analysis.window import AnalysisWindow, analysis_window

#: The seed's launch APIs, plus their HIP equivalents (which never appear in CUDA traces).
DEFAULT_LAUNCH_APIS: tuple[str, ...] = (
    "cudaLaunchKernel", "cudaMemcpyAsync", "cudaStreamSynchronize",
    "hipLaunchKernel", "hipExtModuleLaunchKernel", "hipModuleLaunchKernel", "hipMemcpyAsync",
    "hipStreamSynchronize",
)
#: The seed's T1 cut (µs): longer gaps between ops are data loading or waits.
DEFAULT_T1_MAX_GAP_US = 200.0
#: Outlier rules of :class:`OverheadParams` (None: keep every sample).
OUTLIER_RULES: tuple[str | None, ...] = (None, "iqr")
#: The seed's IQR factor.
IQR_K = 1.5


def iqr_keep(x: np.ndarray, k: float = IQR_K) -> np.ndarray:
    """Bool mask of the samples inside ``[Q1 - k·IQR, Q3 + k·IQR]`` (``np.percentile``
    quartiles, linear interpolation). Applied to any list: with one or two samples the
    fences contain every sample."""
    x = np.asarray(x, dtype=np.float64)
    if len(x) == 0:
        return np.zeros(0, dtype=bool)
    q1, q3 = np.percentile(x, [25, 75])
    lo, hi = q1 - k * (q3 - q1), q3 + k * (q3 - q1)
    return (x >= lo) & (x <= hi)


@dataclass
class OverheadParams:
    """Parameters of :func:`overhead_samples` (µs for thresholds)."""

    t1_max_gap_us: float = DEFAULT_T1_MAX_GAP_US
    t1_min_gap_us: float | None = None
    launch_apis: tuple[str, ...] = DEFAULT_LAUNCH_APIS
    module_markers: tuple[str, ...] = DEFAULT_MODULE_MARKERS
    data_markers: tuple[str, ...] | None = None
    step_regex: str | None = None
    #: None (keep every sample) or ``"iqr"`` (drop 1.5 x IQR outliers per sample list)
    drop_outliers: str | None = None

    def __post_init__(self) -> None:
        if self.drop_outliers not in OUTLIER_RULES:
            raise ValueError(f"drop_outliers must be one of {', '.join(str(x) for x in OUTLIER_RULES)}, "
                             f"not {self.drop_outliers!r}")

    def to_dict(self) -> dict[str, Any]:
        extra = {"drop_outliers": self.drop_outliers} if self.drop_outliers is not None else {}
        return extra | {"t1_max_gap_us": self.t1_max_gap_us, "t1_min_gap_us": self.t1_min_gap_us,
                "launch_apis": list(self.launch_apis), "module_markers": list(self.module_markers),
                "data_markers": list(self.data_markers) if self.data_markers is not None else ["DataLoader"],
                "step_regex": self.step_regex}


@dataclass
class OpSelection:
    """The top-level ops an overheads analysis walks: outside data loading, starting in the
    analysis window, ordered by thread then start (positions into the frame)."""

    window: Any
    hierarchy: Any
    top: np.ndarray      # per position: its outermost op's position, or -1
    ops: np.ndarray      # positions of the selected ops, in walk order
    op_ok: np.ndarray    # bool per position: selected op


def select_ops(f: GraphFrame, p: OverheadParams, window: Any = None) -> OpSelection:
    """Shared by :func:`overhead_samples` and the ET predictor's profile tables."""
    w = window if window is not None else analysis_window(f, p.step_regex, p.data_markers)
    hh = host_hierarchy(f)  # CPU ops, annotations and runtime calls; no python frames
    parent = hh.parent
    is_op, top = outermost_ops(f, p.module_markers)
    # data-loading subtrees
    in_dl = np.zeros(len(f), dtype=bool)
    in_dl[w.data_nodes] = True
    for lvl in hh.levels[1:]:
        in_dl[lvl] |= in_dl[parent[lvl]]
    ops = np.flatnonzero(is_op & ~in_dl & (f.ts >= w.start) & (f.ts < w.end))
    ops = ops[np.lexsort((ops, f.ts[ops], f.lane[ops]))]
    op_ok = np.zeros(len(f), dtype=bool)
    op_ok[ops] = True
    return OpSelection(w, hh, top, ops, op_ok)


def overhead_samples(G: TraceGraph | GraphFrame, params: OverheadParams | None = None,
                     window: AnalysisWindow | None = None, with_shapes: bool = False) -> tuple[pd.DataFrame, pd.DataFrame, AnalysisWindow]:
    """Raw T1-T5 samples.

    Parameters
    ----------
    G : TraceGraph or GraphFrame
    params : OverheadParams, optional
    window : AnalysisWindow, optional
        Default :func:`~opgraph.analysis.window.analysis_window`.
    with_shapes : bool
        Fill the ``shapes`` column (input dims of the op); else ``"-"``.

    Returns
    -------
    (samples, launches, window)
        ``samples``: one row per sample with ``type`` (``t1``..``t5``, ``whole``),
        ``op`` (op name, or the launch API for t4, ``""`` for t1), ``shapes``, ``ns``.
        ``launches``: per op name the launch-API sequences seen, with counts
        (``op``, ``seq`` tuple, ``count``, ``first`` position).
    """
    p = params or OverheadParams()
    f = frame_of(G)
    sel = select_ops(f, p, window)
    w, hh, top, ops, op_ok = sel.window, sel.hierarchy, sel.top, sel.ops, sel.op_ok
    parent = hh.parent
    # launches: leaf runtime calls with a launch API name under an op in scope
    n_children = np.bincount(parent[parent >= 0], minlength=len(f))
    api = set(p.launch_apis)
    rt = np.flatnonzero((f.kind == K_RUNTIME) & (n_children == 0) & (top >= 0))
    if len(rt):
        codes, uniq = pd.factorize(f.name[rt])
        hit = np.fromiter((u in api for u in uniq), dtype=bool, count=len(uniq))
        rt = rt[hit[codes]]
    rt = rt[op_ok[top[rt]]]
    L = pd.DataFrame({"op": top[rt], "ts": f.ts[rt], "end": f.end[rt], "dur": f.dur[rt], "api": f.name[rt]})
    L = L.sort_values(["op", "ts", "end"], kind="stable").reset_index(drop=True)
    opname = f.name
    if with_shapes:
        dims = np.array([input_dims(a) if isinstance(a, dict) else "-" for a in f.args_list(np.asarray(ops))],
                        dtype=object)
        shape_of = pd.Series(dims, index=ops)
    else:
        shape_of = pd.Series("-", index=ops, dtype=object)
    parts = []
    if len(L):
        g = L.groupby("op", sort=False)
        first_ts = g["ts"].first()
        last_end = g["end"].last()
        o = first_ts.index.to_numpy(np.int64)
        parts.append(pd.DataFrame({"type": "t2", "pos": o, "ns": first_ts.to_numpy() - f.ts[o]}))
        parts.append(pd.DataFrame({"type": "t3", "pos": o, "ns": f.end[o] - last_end.to_numpy()}))
        same = L["op"].to_numpy()[1:] == L["op"].to_numpy()[:-1]
        gap = L["ts"].to_numpy()[1:] - L["end"].to_numpy()[:-1]
        parts.append(pd.DataFrame({"type": "t5", "pos": L["op"].to_numpy()[1:][same], "ns": gap[same]}))
        single = g.size()
        single = single[single == 1].index.to_numpy(np.int64)
        parts.append(pd.DataFrame({"type": "t5", "pos": single, "ns": np.zeros(len(single), np.int64)}))
        t4 = pd.DataFrame({"type": "t4", "pos": L["op"].to_numpy(), "ns": L["dur"].to_numpy(),
                           "api": L["api"].to_numpy()})
    else:
        t4 = pd.DataFrame(columns=["type", "pos", "ns", "api"])
    launching = np.unique(L["op"].to_numpy()) if len(L) else np.empty(0, np.int64)
    whole = ops[~np.isin(ops, launching)]
    parts.append(pd.DataFrame({"type": "whole", "pos": whole, "ns": f.dur[whole]}))
    S = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=["type", "pos", "ns"])
    pos = S["pos"].to_numpy(np.int64)
    S["op"] = opname[pos] if len(pos) else []
    S["shapes"] = shape_of.reindex(pos).to_numpy() if len(pos) else []
    S["order"] = f.ts[pos] if len(pos) else []
    if len(t4):
        t4pos = t4["pos"].to_numpy(np.int64)
        t4 = pd.DataFrame({"type": "t4", "pos": t4pos, "ns": t4["ns"].to_numpy(np.int64),
                           "op": t4["api"].to_numpy(), "shapes": "-", "order": f.ts[t4pos]})
        S = pd.concat([S, t4], ignore_index=True)
    # T1: consecutive ops of a thread with the same parent
    if len(ops) > 1:
        a, b = ops[:-1], ops[1:]
        same = (f.lane[a] == f.lane[b]) & (parent[a] == parent[b])
        a, b = a[same], b[same]
        gap = f.ts[b] - f.end[a]
        ok = gap < int(round(p.t1_max_gap_us * 1000))
        if p.t1_min_gap_us is not None:
            ok &= gap >= int(round(p.t1_min_gap_us * 1000))
        if len(w.data_loading):
            lo = np.minimum(f.end[a], f.ts[b])
            hi = np.maximum(f.end[a], f.ts[b])
            ok &= w.data_loading.covered(lo, hi) == 0
        t1 = pd.DataFrame({"type": "t1", "pos": b[ok], "ns": gap[ok], "op": "", "shapes": "-", "order": f.ts[b[ok]]})
        S = pd.concat([S, t1], ignore_index=True)
    S = S.sort_values(["type", "order", "pos"], kind="stable").reset_index(drop=True)
    S["ns"] = S["ns"].astype(np.int64)
    # launch sequences per op name
    if len(L):
        codes, uniq = pd.factorize(L["api"])
        seq = pd.Series(codes).groupby(L["op"].to_numpy(), sort=False).agg(tuple)
        sq = pd.DataFrame({"pos": seq.index.to_numpy(np.int64), "seq": seq.to_numpy()})
        sq["op"] = opname[sq["pos"].to_numpy()]
        sq["ts"] = f.ts[sq["pos"].to_numpy()]
        ls = sq.groupby(["op", "seq"], sort=False).agg(count=("pos", "size"), first=("ts", "min")).reset_index()
        ls["seq"] = [tuple(uniq[list(s)]) for s in ls["seq"]]
    else:
        ls = pd.DataFrame(columns=["op", "seq", "count", "first"])
    return S[["type", "op", "shapes", "ns", "pos"]], ls, w


def _stats(ns: np.ndarray, outliers: str | None = None) -> dict[str, Any] | None:
    if not len(ns):
        return None
    x = ns.astype(np.float64) / 1e3
    if outliers is None:
        return {"mean": float(x.mean()), "std": float(x.std()), "n": int(len(x))}
    keep = iqr_keep(x)
    y = x[keep]
    return {"mean": float(y.mean()), "std": float(y.std()), "n": int(len(y)), "median": float(np.median(y)),
            "dropped": int(len(x) - len(y))}


def _group_stats(df: pd.DataFrame, key: str, outliers: str | None = None) -> dict[str, dict[str, Any]]:
    """{key: {mean, std (population), n}} in µs (with ``outliers``: per group, after
    dropping them, plus ``median`` and ``dropped``)."""
    if not len(df):
        return {}
    if outliers is not None:
        return {str(k): _stats(g.to_numpy(np.int64), outliers)
                for k, g in df["ns"].groupby(df[key].to_numpy(), sort=True)}
    g = df["ns"].astype(np.float64).groupby(df[key].to_numpy(), sort=True)
    mean, std, n = g.mean(), g.std(ddof=0), g.size()
    return {str(k): {"mean": float(mean[k]) / 1e3, "std": float(std[k]) / 1e3, "n": int(n[k])} for k in mean.index}


def overheads_doc(G: TraceGraph | GraphFrame, params: OverheadParams | None = None, by_shapes: bool = False,
                  samples: tuple[pd.DataFrame, pd.DataFrame, AnalysisWindow] | None = None) -> dict[str, Any]:
    """The overheads JSON (schemas/overheads.schema.json), consumed by prediction.

    Parameters
    ----------
    G : TraceGraph or GraphFrame
    params : OverheadParams, optional
    by_shapes : bool
        Add a ``shapes`` level under each op (keyed by the input-dims string).
    samples : optional
        The result of :func:`overhead_samples`, if already computed.

    Returns
    -------
    dict
        ``t1`` and ``t4`` (op-independent), ``t2``/``t3``/``t5`` keyed by op name (the
        seed's layout; ``t5`` of an op that never launches is its whole duration), the
        per-op detail ``ops`` (``count``, ``launching``, ``whole_count``, ``t2``, ``t3``,
        ``t5`` (launch gaps only), ``whole``, ``launches``, and optionally ``shapes``), and
        ``launches`` (the most common launch sequence of each op). Times in µs.
    """
    p = params or OverheadParams()
    f = frame_of(G)
    S, ls, w = samples if samples is not None else overhead_samples(f, p, with_shapes=by_shapes)
    src = f.G.graph.get("source", {}) if isinstance(f.G.graph.get("source"), dict) else {}
    by_type = {t: g for t, g in S.groupby("type", sort=False)}
    empty = S.iloc[:0]
    ol = p.drop_outliers
    t1 = _stats(by_type.get("t1", empty)["ns"].to_numpy(), ol)
    t4 = _group_stats(by_type.get("t4", empty), "op", ol)
    per = {t: _group_stats(by_type.get(t, empty), "op", ol) for t in ("t2", "t3", "t5", "whole")}
    # most common launch sequence per op (ties: first seen)
    launches: dict[str, list[str]] = {}
    if len(ls):
        best = ls.sort_values(["op", "count", "first"], ascending=[True, False, True]).drop_duplicates("op")
        launches = {str(r.op): list(r.seq) for r in best.itertuples(index=False)}
    occ = S[S["type"].isin(["t2", "whole"])].groupby(["op", "type"]).size().unstack(fill_value=0)
    ops_doc: dict[str, Any] = {}
    shape_groups = None
    if by_shapes:
        shape_groups = {t: {k: _group_stats(g, "shapes", ol) for k, g in by_type.get(t, empty).groupby("op", sort=False)}
                        for t in ("t2", "t3", "t5", "whole")}
    for op in sorted(set(occ.index.tolist())):
        n_l = int(occ.loc[op, "t2"]) if "t2" in occ.columns else 0
        n_w = int(occ.loc[op, "whole"]) if "whole" in occ.columns else 0
        e: dict[str, Any] = {"count": n_l + n_w, "launching": n_l, "whole_count": n_w,
                             "t2": per["t2"].get(op), "t3": per["t3"].get(op), "t5": per["t5"].get(op),
                             "whole": per["whole"].get(op), "launches": launches.get(op, [])}
        if shape_groups is not None:
            shapes: dict[str, Any] = {}
            for t in ("t2", "t3", "t5", "whole"):
                for sh, st in shape_groups[t].get(op, {}).items():
                    shapes.setdefault(sh, {"t2": None, "t3": None, "t5": None, "whole": None})[t] = st
            e["shapes"] = shapes
        ops_doc[op] = e
    t5_flat = dict(per["t5"])
    for op, st in per["whole"].items():
        if op not in t5_flat and ops_doc.get(op, {}).get("launching", 0) == 0:
            t5_flat[op] = st
    return {
        "schema_version": 1,
        "source": {"file": src.get("file"), "sha256": src.get("sha256")},
        "unit": "us",
        "params": p.to_dict() | {"by_shapes": by_shapes},
        "window": w.to_dict(),
        "t1": t1,
        "t2": per["t2"],
        "t3": per["t3"],
        "t4": t4,
        "t5": t5_flat,
        "launches": launches,
        "ops": ops_doc,
    }
