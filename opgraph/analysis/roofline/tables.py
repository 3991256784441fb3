"""The report tables of a roofline result: :func:`group_table` (one row per kernel name or
op name) and :func:`no_model_table` (ops that launch activities but have no model).

Times in µs (``total_us``, ``mean_us``, ``time_us``), FLOPs and bytes as ints, rates in
TFLOP/s (``tflops``) and GB/s (``gbps``), % of peak time-weighted, arithmetic intensity
in FLOP/byte."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from opgraph.analysis.roofline.frames import RooflineFrames
from opgraph.analysis.roofline.objects import objectify

#: Columns of :func:`group_table` for both groupings, then those of each.
GROUP_COLUMNS = ("name", "count", "total_us", "mean_us", "flops", "bytes", "tflops", "gbps", "pct_peak_flops",
                 "pct_peak_bw", "arithmetic_intensity", "bound", "modelled", "model", "dtype")
GROUP_EXTRA = {"kernel": ("kind", "op"), "op": ("calls", "kernels")}


def weighted_pct(flops: np.ndarray, dur_s: np.ndarray, peak: np.ndarray) -> float | None:
    """Σ flops / Σ (duration (s) × peak (per s)) in %, over the rows with a known peak and
    value (None when there are none): the time-weighted % of peak of a group."""
    m = np.isfinite(peak) & (peak > 0) & np.isfinite(flops)
    den = float((dur_s[m] * peak[m]).sum())
    return 100.0 * float(flops[m].sum()) / den if den > 0 else None


def group_table(res: RooflineFrames, by: str = "kernel") -> pd.DataFrame:
    """The report table: one row per kernel name (``by="kernel"``) or op name (``"op"``).

    Columns: ``name count total_us mean_us flops bytes tflops gbps pct_peak_flops
    pct_peak_bw arithmetic_intensity bound modelled model dtype`` and ``kind``/``op``
    (kernel rows: the kind and the op owning most of the time) or ``calls``/``kernels``
    (op rows). Rates are totals over the modelled instances (Σ FLOPs / Σ time); % of peak is
    Σ FLOPs / Σ (time × peak), i.e. time-weighted; ``bound`` is the bound of the most time.
    Op rows cover the ops that launch activities: counted ops, and ops without a model
    (``model`` null). Sorted by total time, descending."""
    if by not in GROUP_EXTRA:
        raise ValueError(f"by must be 'kernel' or 'op', not {by!r}")
    cols = list(GROUP_COLUMNS) + list(GROUP_EXTRA[by])
    df = _group_input(res, by)
    if not len(df):
        return pd.DataFrame(columns=cols)
    rows = [_group_row(key, g, by) for key, g in df.groupby("_key", sort=False)]
    out = pd.DataFrame(rows, columns=cols)
    for c_ in ("flops", "bytes"):
        out[c_] = out[c_].astype("Int64")
    objectify(out, ("name", "bound", "model", "dtype", "kind", "op"))
    return out.sort_values(["total_us", "name"], ascending=[False, True], kind="stable").reset_index(drop=True)


def _group_input(res: RooflineFrames, by: str) -> pd.DataFrame:
    """The rows to group (kernels, or the ops that launch activities and are counted or
    have no model) with the helper columns ``_key _calls _dur`` (ns) ``_durs`` (s) ``_f
    _b`` (float, NaN = unknown) ``_fi _bi`` (exact ints) ``_pf _pb`` (peaks per s)
    ``_coll``."""
    if by == "kernel":
        df = res.kernels.copy()
        dur = df["dur_ns"].to_numpy()
        flops = df["flops"].to_numpy(dtype=float, na_value=np.nan)
        nbytes = df["bytes"].to_numpy(dtype=float, na_value=np.nan)
    else:
        df = res.ops[res.ops["kernels"] > 0].copy()
        df = df[df["counted"] | df["model"].isna()]
        dur = df["gpu_ns"].to_numpy()
        flops = np.where(df["model"].notna(), df["attributed_flops"].to_numpy(dtype=float), np.nan)
        nbytes = np.where(df["bytes"].notna(), df["attributed_bytes"].to_numpy(dtype=float), np.nan)
    df["_key"] = df["name"].fillna("")
    df["_calls"] = 1
    peak_f = df["peak_tflops"].to_numpy() * 1e12
    peak_b = df["peak_gbps"].to_numpy() * 1e9
    coll = df["collective"].to_numpy()
    if not len(df):
        return df
    dur_s = dur.astype(float) * 1e-9
    # exact integer totals (float sums lose FLOPs beyond 2**53)
    if by == "kernel":
        fi = df["flops"].fillna(0).to_numpy(dtype=np.int64)
        bi = df["bytes"].fillna(0).to_numpy(dtype=np.int64)
    else:
        fi = np.where(df["model"].notna(), df["attributed_flops"].to_numpy(dtype=np.int64), 0)
        bi = np.where(df["bytes"].notna(), df["attributed_bytes"].to_numpy(dtype=np.int64), 0)
    return df.assign(_dur=dur, _durs=dur_s, _f=flops, _b=nbytes, _fi=fi, _bi=bi, _pf=peak_f, _pb=peak_b, _coll=coll)


def _most_time(d: np.ndarray, values: np.ndarray) -> str | None:
    """The value (as str) with the most time ``d`` among the rows where it is not null."""
    m = pd.notna(values)
    if not m.any():
        return None
    return str(pd.Series(d[m]).groupby(values[m]).sum().idxmax())


def _group_row(key: str, g: pd.DataFrame, by: str) -> dict[str, Any]:
    """One row of :func:`group_table` for the group ``g`` named ``key``."""
    f = g["_f"].to_numpy()
    b = g["_b"].to_numpy()
    d = g["_dur"].to_numpy()
    ds = g["_durs"].to_numpy()
    hf = np.isfinite(f)
    hb = np.isfinite(b)
    tf_time = d[hf].sum()
    tb_time = d[hb].sum()
    tot = int(d.sum())
    fsum = int(g["_fi"].to_numpy()[hf].sum()) if hf.any() else None
    bsum = int(g["_bi"].to_numpy()[hb].sum()) if hb.any() else None
    mm = g["model"].notna().to_numpy()
    notc = ~g["_coll"].to_numpy().astype(bool)
    row = {
        "name": key, "count": int(len(g)), "total_us": tot / 1e3, "mean_us": tot / 1e3 / len(g),
        "flops": fsum, "bytes": bsum,
        "tflops": (fsum / tf_time / 1e3) if fsum is not None and tf_time > 0 else None,
        "gbps": (bsum / tb_time) if bsum is not None and tb_time > 0 else None,
        "pct_peak_flops": weighted_pct(np.where(hf, f, np.nan), ds, g["_pf"].to_numpy()) if hf.any() else None,
        "pct_peak_bw": weighted_pct(np.where(hb & notc, b, np.nan), ds, g["_pb"].to_numpy())
        if (hb & notc).any() else None,
        "arithmetic_intensity": (fsum / bsum) if fsum is not None and bsum else None,
        "bound": _most_time(d, g["bound"].to_numpy()), "modelled": int(mm.sum()),
        "model": _most_time(d, g["model"].to_numpy()), "dtype": _most_time(d, g["dtype"].to_numpy()),
    }
    if by == "kernel":
        row["kind"] = str(g["kind"].iloc[0])
        row["op"] = _most_time(d, g["op_name"].to_numpy())
        if row["op"] is None:
            row["op"] = _most_time(d, g["launcher_name"].to_numpy())
    else:
        row["calls"] = int(len(g))
        row["kernels"] = int(g["kernels"].sum())
        row["count"] = row["calls"]
    return row


def no_model_table(res: RooflineFrames) -> pd.DataFrame:
    """Ops that launch activities but have no model: ``name calls activities time_us``,
    by GPU time (activities with no launching op at all are one row named ``(no op)``)."""
    k = res.kernels
    um = k[k["model"].isna()]
    if not len(um):
        return pd.DataFrame(columns=["name", "calls", "activities", "time_us"])
    nm = um["launcher_name"].fillna("(no op)")
    g = um.assign(_n=nm).groupby("_n", sort=False).agg(
        calls=("launcher_eid", lambda s: int(s[s >= 0].nunique())), activities=("eid", "size"),
        time_ns=("dur_ns", "sum"))
    g = g.reset_index().rename(columns={"_n": "name"})
    objectify(g, ("name",))
    g["time_us"] = g["time_ns"] / 1e3
    return g.drop(columns="time_ns").sort_values(["time_us", "name"], ascending=[False, True]).reset_index(drop=True)
