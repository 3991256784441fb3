"""Shape tables: GEMM, attention and convolution calls grouped by their problem size, with
the achieved rate of each shape (the per-category sheets of AMD TraceLens; docs/shapes.md).

Built on the roofline attribution (:func:`opgraph.analysis.roofline.roofline`): the calls
are its **counted ops** of family ``gemm``, ``attention`` or ``conv`` that own at least
one device activity, with the FLOPs, bytes and dtype of their rule
(:mod:`opgraph.analysis.flops`) and the problem size that rule read
(``OpCost.problem``). One row per unique (op name, ``Input Dims``, ``Input type``, dtype,
problem size, FLOPs and bytes per call); per row:

* ``count``: calls; ``kernels``: device activities they own (kernels, plus any memcpy /
  memset the op launched); ``total_us`` / ``mean_us``: the sum of those activities'
  durations, in total and per call (µs; integer ns inside);
* ``flops_per_call`` (FMA = 2) and ``bytes_per_call`` (perfect reuse; null when a dtype
  is unknown), as the rule counts them;
* ``achieved_tflops`` = ``flops_per_call * count / total time`` (TFLOP/s) and
  ``achieved_tbps`` = ``bytes_per_call * count / total time`` (TB/s = 1e12 B/s);
* ``peak_tflops`` / ``peak_tbps``: the device's dense peak for the dtype (and its DRAM
  bandwidth), time-weighted over the calls' activities, whose peaks the roofline sets
  (device, dtype of the op or else of the kernel name, TF32 kernels); ``pct_peak_flops``
  / ``pct_peak_bw``: achieved / peak in % (Σ FLOPs / Σ (time × peak), as ``opgraph
  report``); ``dtype``: the op's (largest input), else its longest kernel's;
* ``flop_per_byte``: arithmetic intensity; ``bound``: ``compute`` when it is at or above
  the ridge point ``peak FLOP/s / peak B/s``, else ``memory`` (null without both peaks);
* ``family_time_pct``: the row's share of the family's GPU time (the time of every
  activity the roofline gives to an op of that family; the rows add up to it).

Problem-size columns: GEMM ``B M N K`` (C[B, M, N] = A[B, M, K] @ B[B, K, N]) and
``aligned``: M, N and K all multiples of 8 for fp16/bf16, of 16 for 1-byte types (fp8,
int8) — tensor cores need aligned dims — null for other dtypes. Attention ``B H Sq Sk D
Dv causal``. Convolution ``N C H W K R S`` (``D T``: input / filter depth of 3-d
convolutions), ``stride padding dilation`` (``"2x2"``), ``groups``, ``transposed``; for a
backward convolution the shape is that of its forward. Rows are sorted by ``total_us``,
descending.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Mapping

import numpy as np
import orjson
import pandas as pd

from opgraph.exact_json import exact_default
from opgraph.analysis.display import TableResult, json_records, json_value
from opgraph.analysis.roofline.kernel_names import COMPUTE_FAMILIES
from opgraph.model.trace_graph import TraceGraph

__all__ = ["FAMILIES", "FAMILY_LABELS", "KEY_COLUMNS", "PROBLEM_COLUMNS", "METRIC_COLUMNS", "Shapes", "shapes",
           "shape_columns"]

#: The families with a shape table, in output order: the roofline's compute families.
FAMILIES: tuple[str, ...] = COMPUTE_FAMILIES
#: How the families are named in text.
FAMILY_LABELS: dict[str, str] = {"gemm": "GEMM", "attention": "attention", "conv": "convolution"}
#: Leading columns of every table.
KEY_COLUMNS: tuple[str, ...] = ("name", "input_dims", "input_types", "dtype")
#: Problem-size columns per family (``OpCost.problem`` keys; GEMM adds ``aligned``).
PROBLEM_COLUMNS: dict[str, tuple[str, ...]] = {
    "gemm": ("B", "M", "N", "K"),
    "attention": ("B", "H", "Sq", "Sk", "D", "Dv", "causal"),
    "conv": ("N", "C", "D", "H", "W", "K", "T", "R", "S", "stride", "padding", "dilation", "groups", "transposed"),
}
#: Measured columns of every table.
METRIC_COLUMNS: tuple[str, ...] = (
    "count", "kernels", "total_us", "mean_us", "flops_per_call", "bytes_per_call", "achieved_tflops", "peak_tflops",
    "pct_peak_flops", "achieved_tbps", "peak_tbps", "pct_peak_bw", "flop_per_byte", "bound", "family_time_pct")
_BOOL = frozenset({"causal", "transposed", "aligned"})
_STR = frozenset({"stride", "padding", "dilation"})


def shape_columns(family: str) -> list[str]:
    """The columns of ``family``'s table, in order."""
    extra = ("aligned",) if family == "gemm" else ()
    return [*KEY_COLUMNS, *PROBLEM_COLUMNS[family], *extra, *METRIC_COLUMNS]


def _alignment(dtype: Any) -> int | None:
    """Tensor-core multiple for a canonical dtype: 8 (2-byte floats), 16 (1-byte types)."""
    if dtype in ("fp16", "bf16"):
        return 8
    if isinstance(dtype, str) and (dtype.startswith("fp8") or dtype in ("int8", "uint8")):
        return 16
    return None


def _text(v: Any) -> str | None:
    """A recorded argument list as compact JSON text (the grouping key), or None."""
    if v is None:
        return None
    try:
        return orjson.dumps(v, default=exact_default).decode()
    except TypeError:
        return str(v)


def _hyper(v: Any) -> str | None:
    return "x".join(str(int(e)) for e in v) if isinstance(v, (list, tuple)) else None


def _empty(family: str) -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series([], dtype=object) for c in shape_columns(family)})


@dataclass(repr=False)
class Shapes(TableResult):
    """Result of :func:`shapes`: one table per family (``gemm``, ``attention``, ``conv``;
    columns in :func:`shape_columns`, times in µs, rates in TFLOP/s and TB/s) and
    ``summary`` (per family: calls, rows, GPU time in µs, and the time of activities
    launched by ops of the family that have no recorded shapes, ``unshaped_us``).

    Examples
    --------
    >>> import opgraph
    >>> from opgraph.analysis.shapes import shapes
    >>> s = shapes(opgraph.load(opgraph.example_trace("gemm_shapes")))
    >>> g = s.to_frame("gemm")
    >>> r = g.iloc[0]                               # the slowest GEMM shape first
    >>> (r["name"], int(r["M"]), int(r["N"]), int(r["K"]), int(r["count"]), float(r["total_us"]))
    ('aten::mm', 1024, 4096, 4096, 3, 600.0)
    >>> int(r["flops_per_call"]) == 2 * 1024 * 4096 * 4096
    True
    >>> round(float(r["achieved_tflops"]), 2), round(float(r["pct_peak_flops"]), 1)   # A100: bf16 312 TFLOP/s
    (171.8, 55.1)
    >>> bool(g.loc[g["M"] == 100, "aligned"].iloc[0])  # [100, 1000] x [1000, 30] fp16
    False
    >>> s.to_dict()["families"]["attention"]["rows"][0]["Sq"], s.to_dict()["families"]["attention"]["rows"][0]["causal"]
    (1024, True)
    """

    gemm: pd.DataFrame
    attention: pd.DataFrame
    conv: pd.DataFrame
    summary: pd.DataFrame
    source: Mapping[str, Any] = field(default_factory=dict)
    devices: list[dict[str, Any]] = field(default_factory=list)
    main_table: ClassVar[str] = "gemm"
    display_tables: ClassVar[tuple[str, ...]] = FAMILIES

    def tables(self) -> dict[str, pd.DataFrame]:
        """``gemm``, ``attention`` and ``conv`` (one row per shape, µs, TFLOP/s, TB/s)."""
        return {"gemm": self.gemm, "attention": self.attention, "conv": self.conv}

    def to_dict(self, top: int | None = None, families: tuple[str, ...] = FAMILIES) -> dict[str, Any]:
        """JSON-ready (``schemas/shapes.schema.json``): per family its totals and its rows
        (the first ``top`` when given)."""
        fams = {}
        summ = self.summary.set_index("family")
        for f in families:
            s = summ.loc[f]
            fams[f] = {"calls": int(s["calls"]), "shapes": int(s["shapes"]), "gpu_time_us": float(s["gpu_time_us"]),
                       "unshaped_us": float(s["unshaped_us"]),
                       "rows": json_records(getattr(self, f), top)}
        return {"schema_version": 1, "source": {k: json_value(v) for k, v in dict(self.source).items()},
                "devices": list(self.devices), "families": fams}


def shapes(source: "TraceGraph | Any", *, device: str | None = None, dtype: str | None = None) -> Shapes:
    """Shape tables of a graph (module docstring), or of a finished
    :class:`~opgraph.analysis.roofline.RooflineResult` (``source``); ``device`` / ``dtype``
    as in :func:`~opgraph.analysis.roofline.roofline` (a ``ValueError`` when unknown)."""
    from opgraph.analysis.flops import op_family
    from opgraph.analysis.roofline import RooflineResult, roofline

    res = source if isinstance(source, RooflineResult) else roofline(source, device=device, dtype=dtype)
    k = res.kernels
    fam_k = k["family"].to_numpy(dtype=object)
    in_fam = np.isin(fam_k.astype(str), FAMILIES) & (k["op_eid"].to_numpy() >= 0)
    kk = k.loc[in_fam, ["op_eid", "dur_ns", "family", "dtype", "peak_tflops", "peak_gbps"]]
    dur = kk["dur_ns"].to_numpy(dtype=np.int64)
    pf, pb = kk["peak_tflops"].to_numpy(dtype=float), kk["peak_gbps"].to_numpy(dtype=float)
    # peaks: those of the activities (device, dtype of the op or else of the kernel name, TF32)
    kk = kk.assign(_tf=np.where(np.isfinite(pf), dur, 0), _tpf=np.where(np.isfinite(pf), dur * pf, 0.0),
                   _tb=np.where(np.isfinite(pb), dur, 0), _tpb=np.where(np.isfinite(pb), dur * pb, 0.0))
    per_op = kk.groupby("op_eid", sort=False).agg(
        kernels=("dur_ns", "size"), time_ns=("dur_ns", "sum"), _tf=("_tf", "sum"), _tpf=("_tpf", "sum"),
        _tb=("_tb", "sum"), _tpb=("_tpb", "sum"))
    with np.errstate(divide="ignore", invalid="ignore"):
        per_op["peak_tflops"] = np.where(per_op["_tf"] > 0, per_op["_tpf"] / per_op["_tf"], np.nan)
        per_op["peak_gbps"] = np.where(per_op["_tb"] > 0, per_op["_tpb"] / per_op["_tb"], np.nan)
    per_op = per_op.drop(columns=["_tf", "_tpf", "_tb", "_tpb"])
    # dtype: the op's, else that of its longest activity (kernel name)
    kdt = kk.sort_values("dur_ns", ascending=False, kind="stable").drop_duplicates("op_eid").set_index("op_eid")
    ops = res.ops.set_index("eid")
    o = ops.loc[per_op.index, ["name", "family", "flops", "bytes", "dtype"]].join(per_op)
    o["_kdt"] = kdt["dtype"].reindex(o.index).to_numpy(dtype=object)
    eids = o.index.to_numpy()
    args = [res.op_args.get(int(e)) or {} for e in eids.tolist()]
    o["input_dims"] = [_text(a.get("Input Dims", a.get("Input dims"))) for a in args]
    o["input_types"] = [_text(a.get("Input type")) for a in args]
    probs = [res.problems.get(int(e)) or {} for e in eids.tolist()]

    # activities launched by ops of a family that have no cost (no recorded shapes)
    un = k[k["model"].isna() & k["launcher_name"].notna()]
    codes, names = pd.factorize(un["launcher_name"].to_numpy(dtype=object))   # op_family once per name
    un_fam = np.array([op_family(nm) if isinstance(nm, str) else None for nm in names], dtype=object)[codes]
    unshaped = (un.groupby(un_fam.astype(str), sort=False)["dur_ns"].sum() if len(un)
                else pd.Series(dtype=np.int64))

    fam_tot = kk.groupby("family", sort=False)["dur_ns"].sum()
    out: dict[str, pd.DataFrame] = {}
    summary = []
    for f in FAMILIES:
        m = (o["family"] == f).to_numpy()
        total_ns = int(fam_tot.get(f, 0))
        summary.append({"family": f, "calls": int(m.sum()), "gpu_time_us": total_ns / 1e3,
                        "unshaped_us": int(unshaped.get(f, 0)) / 1e3})
        if not m.any():
            out[f] = _empty(f)
            summary[-1]["shapes"] = 0
            continue
        out[f] = _family_table(f, o[m], [p for p, keep in zip(probs, m.tolist()) if keep], total_ns)
        summary[-1]["shapes"] = len(out[f])
    summ = pd.DataFrame(summary, columns=["family", "calls", "shapes", "gpu_time_us", "unshaped_us"])
    return Shapes(out["gemm"], out["attention"], out["conv"], summ, dict(res.source),
                  [d.to_dict() for d in res.devices.values()])


def _family_table(family: str, o: pd.DataFrame, probs: list[Mapping[str, Any]], family_ns: int) -> pd.DataFrame:
    """One family's rows from its calls ``o`` (index op eid) and their problem sizes."""
    pcols = PROBLEM_COLUMNS[family]
    p = pd.DataFrame(index=o.index)
    for c in pcols:
        v = [pr.get(c) for pr in probs]
        if c in _STR:
            p[c] = pd.Series([_hyper(x) for x in v], index=p.index, dtype=object)
        elif c in _BOOL:
            p[c] = pd.array([None if x is None else bool(x) for x in v], dtype="boolean")
        else:
            p[c] = pd.array([None if x is None else int(x) for x in v], dtype="Int64")
    d = pd.concat([o, p], axis=1)
    t = d["time_ns"].to_numpy(dtype=np.int64)
    pk_f = d["peak_tflops"].to_numpy(dtype=float)      # TFLOP/s
    pk_b = d["peak_gbps"].to_numpy(dtype=float)        # GB/s
    okf = np.isfinite(pk_f)
    okb = np.isfinite(pk_b)
    fl = d["flops"].to_numpy(dtype=float, na_value=np.nan)
    d = d.assign(
        _t=t, _tf=np.where(okf, t, 0), _tpf=np.where(okf, t * pk_f, 0.0), _ff=np.where(okf, fl, 0.0),
        _tb=np.where(okb, t, 0), _tpb=np.where(okb, t * pk_b, 0.0))
    key = ["name", "input_dims", "input_types", "dtype", *pcols, "flops", "bytes"]
    g = d.groupby(key, sort=False, dropna=False).agg(
        count=("_t", "size"), kernels=("kernels", "sum"), total_ns=("_t", "sum"), _tf=("_tf", "sum"),
        _tpf=("_tpf", "sum"), _ff=("_ff", "sum"), _tb=("_tb", "sum"), _tpb=("_tpb", "sum"),
        _kdt=("_kdt", "first")).reset_index()
    # calls whose op shows no dtype: that of the first call's longest kernel (kernel name)
    g["dtype"] = [k if (d is None or d is pd.NA or (isinstance(d, float) and np.isnan(d))) else d
                  for d, k in zip(g["dtype"].tolist(), g["_kdt"].tolist())]
    tot = g["total_ns"].to_numpy(dtype=np.int64)
    cnt = g["count"].to_numpy(dtype=np.int64)
    fpc = g["flops"].to_numpy(dtype=float, na_value=np.nan)
    bpc = g["bytes"].to_numpy(dtype=float, na_value=np.nan)
    tf, tb = g["_tf"].to_numpy(dtype=float), g["_tb"].to_numpy(dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        pos = tot > 0
        ach_f = np.where(pos, fpc * cnt / np.where(pos, tot, 1) / 1e3, np.nan)        # FLOP/ns / 1e3 = TFLOP/s
        ach_b = np.where(pos, bpc * cnt / np.where(pos, tot, 1) / 1e3, np.nan)        # B/ns / 1e3 = TB/s
        peak_f = np.where(tf > 0, g["_tpf"].to_numpy() / np.where(tf > 0, tf, 1), np.nan)
        peak_b = np.where(tb > 0, g["_tpb"].to_numpy() / np.where(tb > 0, tb, 1), np.nan) / 1e3
        den_f = g["_tpf"].to_numpy() * 1e3                                                # Σ ns × TFLOP/s × 1e3 = FLOP
        pct_f = np.where(den_f > 0, 100.0 * g["_ff"].to_numpy() / np.where(den_f > 0, den_f, 1), np.nan)
        pct_b = np.where(peak_b > 0, 100.0 * ach_b / peak_b, np.nan)
        ai = np.where(bpc > 0, fpc / np.where(bpc > 0, bpc, 1), np.nan)
        ridge = peak_f * 1e12 / (peak_b * 1e12)
    bound = np.full(len(g), None, dtype=object)
    known = np.isfinite(ai) & np.isfinite(ridge)
    bound[known & (ai >= ridge)] = "compute"
    bound[known & (ai < ridge)] = "memory"
    g["total_us"] = tot / 1e3
    g["mean_us"] = tot / 1e3 / cnt
    g["flops_per_call"] = g["flops"].astype("Int64")
    g["bytes_per_call"] = g["bytes"].astype("Int64")
    g["achieved_tflops"] = ach_f
    g["peak_tflops"] = peak_f
    g["pct_peak_flops"] = pct_f
    g["achieved_tbps"] = ach_b
    g["peak_tbps"] = peak_b
    g["pct_peak_bw"] = pct_b
    g["flop_per_byte"] = ai
    g["bound"] = pd.Series(bound, index=g.index, dtype=object)
    g["family_time_pct"] = 100.0 * tot / family_ns if family_ns > 0 else np.nan
    g["kernels"] = g["kernels"].astype(np.int64)
    if family == "gemm":
        align = np.array([_alignment(x) for x in g["dtype"].tolist()], dtype=object)
        has = np.array([a is not None for a in align]) & g[["M", "N", "K"]].notna().all(axis=1).to_numpy()
        mult = np.where(has, align, 1).astype(np.int64)
        mnk = g[["M", "N", "K"]].fillna(0).to_numpy(dtype=np.int64)
        ok = (mnk % mult[:, None] == 0).all(axis=1)
        g["aligned"] = pd.array(np.where(has, ok, None).tolist(), dtype="boolean")
    for c in ("name", "input_dims", "input_types", "dtype", *(c for c in pcols if c in _STR)):
        g[c] = pd.Series([None if (x is None or x is pd.NA or (isinstance(x, float) and np.isnan(x))) else x
                          for x in g[c].tolist()], index=g.index, dtype=object)
    g = g.sort_values(["total_ns", "name", "input_dims"], ascending=[False, True, True], kind="stable",
                      na_position="last")
    return g[shape_columns(family)].reset_index(drop=True)
