"""Peaks and achieved rates of activities and ops, and their roofline bound.

Inputs are FLOPs, bytes and durations in ns; peaks are FLOP/s and bytes/s (NaN =
unknown); outputs are TFLOP/s (``achieved_tflops``), GB/s (``achieved_gbps``), % of peak
and arithmetic intensity in FLOP/byte."""

from __future__ import annotations

import numpy as np
import pandas as pd

from opgraph.analysis.roofline.devices import DeviceInfo

#: Values of the ``bound`` column.
BOUNDS = ("compute", "memory", "communication")


def peak_rates(device: np.ndarray, dtype: np.ndarray, tf32: np.ndarray, devices: dict[int, DeviceInfo]
               ) -> tuple[np.ndarray, np.ndarray]:
    """(peak FLOP/s, peak DRAM bytes/s) per row of (device index, dtype, TF32 math); NaN
    where the device or the dtype's peak is unknown. Looked up once per distinct row."""
    n = len(device)
    pf = np.full(n, np.nan)
    pb = np.full(n, np.nan)
    if not n:
        return pf, pb
    keys = pd.DataFrame({"d": device, "t": np.asarray(dtype, dtype=object), "x": tf32})
    codes, uniq = pd.factorize(pd.MultiIndex.from_frame(keys.fillna({"t": ""})))
    vf = np.full(len(uniq), np.nan)
    vb = np.full(len(uniq), np.nan)
    for j, (d, t, x) in enumerate(uniq):
        info = devices.get(int(d))
        dev = info.table if info else None
        if dev is None:
            continue
        vb[j] = dev.dram_bytes_per_s
        if t:
            p = dev.peak_flops_per_s(t, tf32=bool(x))
            if p is None and x:
                p = dev.peak_flops_per_s(t)
            if p is not None:
                vf[j] = p
    return vf[codes], vb[codes]


def achieved_rates(flops: np.ndarray, has_f: np.ndarray, nbytes: np.ndarray, has_b: np.ndarray,
                   dur_ns: np.ndarray, pf: np.ndarray, pb: np.ndarray, coll: np.ndarray) -> dict[str, np.ndarray]:
    """Columns ``achieved_tflops achieved_gbps pct_peak_flops pct_peak_bw
    arithmetic_intensity bound`` for rows with ``flops`` / ``nbytes`` (known where
    ``has_f`` / ``has_b``) done in ``dur_ns``, against peaks ``pf`` (FLOP/s) and ``pb``
    (bytes/s). Collectives (``coll``) have no % of DRAM peak and are bound by
    ``communication``; else the bound is compute when the arithmetic intensity reaches
    the ridge point ``pf / pb``, memory below it."""
    n = len(flops)
    d = dur_ns.astype(float)
    pos = d > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        tflops = np.where(has_f & pos, flops / np.where(pos, d, 1) / 1e3, np.nan)
        gbps = np.where(has_b & pos, nbytes / np.where(pos, d, 1), np.nan)
        pct_f = np.where(np.isfinite(pf) & (pf > 0), 100.0 * tflops * 1e12 / pf, np.nan)
        pct_b = np.where(np.isfinite(pb) & (pb > 0) & ~coll, 100.0 * gbps * 1e9 / pb, np.nan)
        ai = np.where(has_f & has_b & (nbytes > 0), flops / np.where(nbytes > 0, nbytes, 1), np.nan)
        ridge = pf / pb
    bound = np.full(n, None, dtype=object)
    known = has_f & has_b
    comp = known & (((nbytes == 0) & (flops > 0)) | ((nbytes > 0) & np.isfinite(ridge) & (ai >= ridge)))
    mem = known & (((flops == 0) & (nbytes > 0)) | ((nbytes > 0) & (flops > 0) & np.isfinite(ridge) & (ai < ridge)))
    bound[comp] = "compute"
    bound[mem] = "memory"
    bound[coll & has_b] = "communication"
    return {"achieved_tflops": tflops, "achieved_gbps": gbps, "pct_peak_flops": pct_f, "pct_peak_bw": pct_b,
            "arithmetic_intensity": ai, "bound": bound}
