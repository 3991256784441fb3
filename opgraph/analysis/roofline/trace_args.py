"""The args ``opgraph augment`` writes into a trace (:func:`augment_args`): per event id,
``kernel_flop`` (FLOPs, int), ``kernel_num_gb`` (GB = 1e9 bytes), ``achieved_tflops``
(TFLOP/s), ``achieved_gbps`` (GB/s), ``pct_peak_flops`` / ``pct_peak_bw`` (%),
``arithmetic_intensity`` (FLOP/byte), ``roofline_bound``, ``flop_model`` and
``roofline_dtype``."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from opgraph.analysis.roofline.frames import RooflineFrames

#: Rate columns copied (rounded to 4 decimals) when finite.
RATE_ARGS = ("achieved_tflops", "achieved_gbps", "pct_peak_flops", "pct_peak_bw", "arithmetic_intensity")


def augment_args(res: RooflineFrames) -> dict[int, dict[str, Any]]:
    """Extra args per event id for :func:`opgraph.export.perfetto.chrome.write_trace`.

    On activities with a model and on counted ops: ``kernel_flop`` (int), ``kernel_num_gb``
    (GB = 1e9 bytes), ``achieved_tflops``, ``achieved_gbps``, ``pct_peak_flops``,
    ``pct_peak_bw``, ``arithmetic_intensity`` (FLOP/byte), ``roofline_bound``, plus
    ``flop_model`` (the rule) and ``roofline_dtype``. Ops that launch activities but have
    no model get ``flop_model: "none"``. Values that are unknown are left out.
    """
    out: dict[int, dict[str, Any]] = {}
    k = res.kernels
    _rate_args(out, k, "flops", "bytes", k["model"].notna().to_numpy())
    o = res.ops
    _rate_args(out, o, "attributed_flops", "attributed_bytes", (o["counted"] & (o["kernels"] > 0)).to_numpy())
    _host_only_args(out, o)
    unmod = (o["model"].isna() & (o["kernels"] > 0)).to_numpy()
    for e in o["eid"][unmod].tolist():
        out.setdefault(int(e), {"flop_model": "none"})
    return out


def _rate_args(out: dict[int, dict[str, Any]], df: pd.DataFrame, flops_col: str, bytes_col: str,
               mask: np.ndarray) -> None:
    """Args of the rows ``mask`` of a kernels or ops frame, values from ``flops_col`` /
    ``bytes_col`` (bytes only where the row's bytes are known), into ``out``."""
    sub = df[mask]
    if not len(sub):
        return
    eids = sub["eid"].to_numpy().tolist()
    fl = sub[flops_col].to_numpy(dtype=object)
    by = sub[bytes_col].to_numpy(dtype=object)
    if bytes_col == "attributed_bytes":
        bk = sub["bytes"].notna().to_numpy()
    else:
        bk = sub[bytes_col].notna().to_numpy()
    vals = {k: np.round(sub[k].to_numpy(dtype=float), 4) for k in RATE_ARGS}
    bound = sub["bound"].to_numpy(dtype=object)
    model = sub["model"].to_numpy(dtype=object)
    dt = sub["dtype"].to_numpy(dtype=object)
    for j, e in enumerate(eids):
        d: dict[str, Any] = {"kernel_flop": int(fl[j]) if fl[j] is not pd.NA else 0}
        if bk[j]:
            d["kernel_num_gb"] = float(by[j]) / 1e9
        for k in RATE_ARGS:
            v = vals[k][j]
            if np.isfinite(v):
                d[k] = float(v)
        if bound[j] is not None:
            d["roofline_bound"] = bound[j]
        d["flop_model"] = model[j]
        if dt[j] is not None:
            d["roofline_dtype"] = dt[j]
        out[int(e)] = d


def _host_only_args(out: dict[int, dict[str, Any]], o: pd.DataFrame) -> None:
    """Args of the counted ops that launch no activity (their cost, no rates), into ``out``."""
    host_only = (o["counted"] & (o["kernels"] == 0)).to_numpy()
    for e, f, b, mdl, dt in zip(o["eid"][host_only].tolist(), o["flops"][host_only].tolist(),
                                o["bytes"][host_only].tolist(), o["model"][host_only].tolist(),
                                o["dtype"][host_only].tolist()):
        d = {"kernel_flop": int(f), "flop_model": mdl}
        if b is not pd.NA and b is not None:
            d["kernel_num_gb"] = int(b) / 1e9
        if dt is not None:
            d["roofline_dtype"] = dt
        out[int(e)] = d
