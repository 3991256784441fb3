"""Comparing two traces: kernels by normalised name, ops by (name, input shapes, call
path), step time and critical-path composition (docs/diff.md).

Pure analysis: two graphs in, one JSON-ready document out.
"""

from __future__ import annotations

import functools
import re
from typing import Any

import numpy as np
import orjson
import pandas as pd

from opgraph.exact_json import exact_default
from opgraph.model.trace_graph import TraceGraph
from opgraph.model.tree import tree_depths
from opgraph.names import HEX_RE, NAME_LEVELS, normalize_kernel_name
from opgraph.analysis.roofline import RooflineResult, TraceColumns, isin_obj, roofline
from opgraph.analysis.roofline.columns import columns_of

__all__ = ["kernel_table", "op_table", "diff_graphs", "call_paths"]


_STEP_NUM_RE = re.compile(r"#\d+")


def _norm_path_name(name: Any) -> str:
    s = name if isinstance(name, str) else ""
    return _STEP_NUM_RE.sub("#N", HEX_RE.sub("0x?", s))


def call_paths(c: TraceColumns) -> np.ndarray:
    """Per node position: the chain of enclosing op / annotation names, outermost first,
    joined by `` > `` (python frames are skipped; ``#<n>`` becomes ``#N`` and hex addresses
    ``0x?`` so that ``ProfilerStep#5`` and ``ProfilerStep#9`` match)."""
    n = c.n
    is_named = isin_obj(c.kind, ("cpu_op", "annotation"))
    depth = tree_depths(c.parent)   # number of host ancestors of every node
    ids: dict[tuple[int, str], int] = {}
    strings = [""]
    own = np.zeros(n, dtype=np.int64)   # path id including the node itself (if named)
    below = np.zeros(n, dtype=np.int64)  # path id of its ancestors
    host = np.flatnonzero(isin_obj(c.kind, ("cpu_op", "annotation", "python", "runtime")))
    order = host[np.argsort(depth[host], kind="stable")]
    names = c.name
    par = c.parent
    for p in order.tolist():
        q = par[p]
        b = own[q] if q >= 0 else 0
        below[p] = b
        if is_named[p]:
            key = (int(b), _norm_path_name(names[p]))
            j = ids.get(key)
            if j is None:
                j = len(strings)
                ids[key] = j
                strings.append(key[1] if b == 0 else strings[b] + " > " + key[1])
            own[p] = j
        else:
            own[p] = b
    arr = np.array(strings, dtype=object)
    return arr[below]


def kernel_table(res: RooflineResult, level: str = "default") -> pd.DataFrame:
    """Per normalised activity name: ``count time_ns flops`` (``flops`` <NA> when no
    instance has a model)."""
    k = res.kernels
    names = k["name"].to_numpy(dtype=object)
    kinds = k["kind"].to_numpy(dtype=object)
    codes, uniq = pd.factorize(pd.Series(names, dtype=object), use_na_sentinel=False)
    norm_u = np.array([normalize_kernel_name(u, level) if isinstance(u, str) else "" for u in uniq], dtype=object)
    key = norm_u[codes] if len(codes) else np.empty(0, dtype=object)
    key = np.where(kinds == "kernel", key, names)  # memcpy / memset names are kept as they are
    df = pd.DataFrame({"key": key, "kind": kinds, "dur": k["dur_ns"].to_numpy(),
                       "flops": k["flops"], "has": k["flops"].notna()})
    g = df.groupby("key", sort=True).agg(kind=("kind", "first"), count=("dur", "size"), time_ns=("dur", "sum"),
                                         flops=("flops", "sum"), has=("has", "any"))
    g["flops"] = g["flops"].astype("Int64")
    g.loc[~g["has"], "flops"] = pd.NA
    return g.drop(columns="has")


def _obj_fill(values: np.ndarray) -> np.ndarray:
    return np.array(["" if not isinstance(v, str) else v for v in values.tolist()], dtype=object)


def op_table(c: TraceColumns, res: RooflineResult) -> pd.DataFrame:
    """Per (name, input shapes, call path) of ``cpu_op`` nodes: ``count cpu_ns gpu_ns
    flops`` (``gpu_ns``: device activities launched from inside the op, children
    included; ``flops``: the op's own model, <NA> when none)."""
    is_cpu = c.kind == "cpu_op"
    cpu = np.flatnonzero(is_cpu)
    if not len(cpu):
        return pd.DataFrame(columns=["count", "cpu_ns", "gpu_ns", "flops"],
                            index=pd.MultiIndex.from_arrays([[], [], []], names=["name", "shapes", "path"]))
    paths = call_paths(c)
    dumps = functools.partial(orjson.dumps, default=exact_default)

    def shapes_of(a: Any) -> str:
        if not a:
            return ""
        d = a.get("Input Dims", a.get("Input dims"))
        if d is None:
            return ""
        try:
            return dumps(d).decode()
        except TypeError:
            return str(d)

    shapes = np.array([shapes_of(a) for a in c.args[cpu].tolist()], dtype=object)
    # inclusive GPU time: each activity adds its duration to every op above its launch
    gpu = np.zeros(c.n, dtype=np.int64)
    pos_of = pd.Series(np.arange(c.n), index=c.eid)
    k = res.kernels
    le = k["launcher_eid"].to_numpy()
    m = le >= 0
    cur = pos_of.reindex(le[m]).to_numpy().astype(np.int64)
    w = k["dur_ns"].to_numpy()[m]
    while len(cur):
        np.add.at(gpu, cur, np.where(is_cpu[cur], w, 0))
        cur = c.parent[cur]
        ok = cur >= 0
        cur, w = cur[ok], w[ok]
    o = res.ops
    flops = np.zeros(c.n, dtype=np.int64)  # integer sums: FLOP totals can exceed 2**53
    has = np.zeros(c.n, dtype=bool)
    if len(o):
        op_pos = pos_of.reindex(o["eid"].to_numpy()).to_numpy().astype(np.int64)
        known = o["flops"].notna().to_numpy()
        flops[op_pos[known]] = o["flops"].to_numpy(dtype=object)[known].astype(np.int64)
        has[op_pos[known]] = True
    df = pd.DataFrame({"name": _obj_fill(c.name[cpu]), "shapes": shapes, "path": paths[cpu],
                       "cpu": np.maximum(c.dur[cpu], 0), "gpu": gpu[cpu], "flops": flops[cpu], "has": has[cpu]})
    g = df.groupby(["name", "shapes", "path"], sort=True).agg(
        count=("cpu", "size"), cpu_ns=("cpu", "sum"), gpu_ns=("gpu", "sum"), flops=("flops", "sum"), has=("has", "any"))
    g["flops"] = g["flops"].astype("Int64")
    g.loc[~g["has"], "flops"] = pd.NA
    return g.drop(columns="has")


def _clean(x: Any) -> Any:
    if x is None or x is pd.NA:
        return None
    if isinstance(x, (float, np.floating)) and not np.isfinite(x):
        return None
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (np.floating,)):
        return float(x)
    return x


#: (column, output name, factor, nullable): counts and times are 0 when absent, FLOPs null.
_Spec = tuple[str, str, float, bool]


def compare_tables(a: pd.DataFrame, b: pd.DataFrame, specs: list[_Spec], key_names: list[str],
                   include_same: bool = False, extra: tuple[str, ...] = (), sort_by: tuple[str, ...] = ()
                   ) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Rows of two tables (same index) side by side: ``<out>_a``, ``<out>_b``,
    ``delta_<out>`` (b − a) and ``status`` (``same``, ``changed``, ``new`` = only in b,
    ``missing`` = only in a). Rows are sorted by the largest absolute change of the
    ``sort_by`` outputs (default: the first time column), in that order; ``same`` rows
    are left out unless ``include_same``. Returns (rows, counts per status)."""
    j = a.add_suffix("_a").join(b.add_suffix("_b"), how="outer")
    in_a = j.index.isin(a.index)
    in_b = j.index.isin(b.index)
    recs = j.to_dict("records")
    rows: list[dict[str, Any]] = []
    counts = {"changed": 0, "new": 0, "missing": 0, "same": 0}
    sort_key: list[tuple[float, ...]] = []
    tcols = sort_by or (next((out for col, out, f, _n in specs if f != 1), specs[0][1]),)
    for idx, r, pa, pb in zip(j.index, recs, in_a.tolist(), in_b.tolist()):
        key = idx if isinstance(idx, tuple) else (idx,)
        row: dict[str, Any] = dict(zip(key_names, key))
        for e in extra:
            row[e] = _clean(r.get(f"{e}_a")) if pa else _clean(r.get(f"{e}_b"))
        changed = False
        for col, out, f, nullable in specs:
            va = _clean(r.get(f"{col}_a")) if pa else None
            vb = _clean(r.get(f"{col}_b")) if pb else None
            if not nullable:
                va = 0 if va is None else va
                vb = 0 if vb is None else vb
            changed |= va != vb
            d = None if va is None and vb is None else (vb or 0) - (va or 0)
            conv = (lambda v: v if v is None else int(round(v))) if f == 1 else \
                (lambda v, f=f: v if v is None else v * f)
            row[f"{out}_a"] = conv(va)
            row[f"{out}_b"] = conv(vb)
            row[f"delta_{out}"] = conv(d)
        status = "new" if not pa else "missing" if not pb else "changed" if changed else "same"
        counts[status] += 1
        row["status"] = status
        if status != "same" or include_same:
            rows.append(row)
            sort_key.append(tuple(-abs(row.get(f"delta_{t}") or 0) for t in tcols))
    order = sorted(range(len(rows)), key=lambda i: sort_key[i])
    return [rows[i] for i in order], counts


def _steps(G: TraceGraph) -> dict[str, Any] | None:
    """Step-time statistics over the steps of the one selector (µs); None without steps."""
    from opgraph.analysis.info import find_steps

    s = find_steps(G)
    if not len(s):
        return None
    d = (s["end"] - s["ts"]).to_numpy(dtype=float)
    return {"count": int(len(s)), "mean_us": float(d.mean()) / 1e3, "median_us": float(np.median(d)) / 1e3,
            "total_us": float(d.sum()) / 1e3}


def _cp(G: TraceGraph) -> dict[str, Any]:
    from opgraph.analysis.critical_path.path import critical_path

    sm = critical_path(G).summary()
    w = max(int(sm["windows"]), 1)
    return {"windows": int(sm["windows"]), "bound": sm["bound"], "length_us": sm["length_us"],
            "per_step_us": {k: v / w for k, v in sm["breakdown_us"].items()},
            "breakdown_pct": dict(sm["breakdown_pct"])}


def _side_info(G: TraceGraph, res: RooflineResult) -> dict[str, Any]:
    k = res.kernels
    kern = k[k["kind"] == "kernel"]
    return {
        "source": dict(G.graph.get("source") or {}),
        "devices": [d.to_dict() for d in res.devices.values()],
        "kernels": int(len(kern)),
        "kernel_time_us": float(kern["dur_ns"].sum()) / 1e3,
        "activities": int(len(k)),
        "flops": int(k["flops"].fillna(0).sum()),
    }


def diff_graphs(Ga: TraceGraph, Gb: TraceGraph, *, name_level: str = "default", include_same: bool = False,
                dtype: str | None = None, with_critical_path: bool = True) -> dict[str, Any]:
    """The ``opgraph diff --json`` document (schemas/diff.schema.json): ``b`` compared with
    ``a`` (deltas are b − a); each a :class:`~opgraph.model.trace_graph.TraceGraph`."""
    if name_level not in NAME_LEVELS:
        raise ValueError(f"unknown name level {name_level!r}; use one of {', '.join(NAME_LEVELS)}")
    ca, cb = columns_of(Ga), columns_of(Gb)
    ra, rb = roofline(ca, dtype=dtype), roofline(cb, dtype=dtype)
    ka, kb = kernel_table(ra, name_level), kernel_table(rb, name_level)
    krows, kc = compare_tables(ka, kb, [("count", "count", 1, False), ("time_ns", "time_us", 1e-3, False),
                                        ("flops", "flops", 1, True)], ["name"], include_same, extra=("kind",))
    oa, ob = op_table(ca, ra), op_table(cb, rb)
    orows, oc = compare_tables(oa, ob, [("count", "count", 1, False), ("cpu_ns", "cpu_us", 1e-3, False),
                                        ("gpu_ns", "gpu_us", 1e-3, False), ("flops", "flops", 1, True)],
                               ["name", "shapes", "path"], include_same, sort_by=("gpu_us", "cpu_us"))

    sa, sb = _steps(Ga), _steps(Gb)
    steps = None
    cp = None
    if sa and sb:
        steps = {"a": sa, "b": sb, "delta_mean_us": sb["mean_us"] - sa["mean_us"],
                 "delta_pct": (100.0 * (sb["mean_us"] - sa["mean_us"]) / sa["mean_us"]) if sa["mean_us"] else None}
        if with_critical_path:
            pa, pb = _cp(Ga), _cp(Gb)
            cats = list(pa["breakdown_pct"])
            cp = {"a": pa, "b": pb,
                  "delta_pct": {c: pb["breakdown_pct"].get(c, 0.0) - pa["breakdown_pct"].get(c, 0.0) for c in cats},
                  "delta_per_step_us": {c: pb["per_step_us"].get(c, 0.0) - pa["per_step_us"].get(c, 0.0)
                                        for c in cats}}
    same_steps = steps is None or (steps["delta_mean_us"] == 0 and sa["count"] == sb["count"])
    same_cp = cp is None or all(v == 0 for v in cp["delta_per_step_us"].values())
    identical = (kc["changed"] + kc["new"] + kc["missing"] + oc["changed"] + oc["new"] + oc["missing"] == 0
                 and same_steps and same_cp)
    ia, ib = _side_info(Ga, ra), _side_info(Gb, rb)
    ia["cpu_ops"] = int(oa["count"].sum()) if len(oa) else 0
    ib["cpu_ops"] = int(ob["count"].sum()) if len(ob) else 0
    ia["steps"], ib["steps"] = sa, sb
    return {
        "schema_version": 1,
        "name_level": name_level,
        "identical": bool(identical),
        "a": ia,
        "b": ib,
        "kernels": {"counts": kc, "rows": krows},
        "ops": {"counts": oc, "rows": orows},
        "steps": steps,
        "critical_path": cp,
    }
