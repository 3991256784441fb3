"""Coverage and totals of a roofline result (:func:`summarize`, JSON-ready): how much
kernel time has a model, FLOP and byte totals, achieved rates, and what is left without a
model. Times in µs, FLOPs and bytes as ints, rates in TFLOP/s and GB/s, shares in %."""

from __future__ import annotations

from typing import Any

from opgraph.analysis.roofline.frames import RooflineFrames


def summarize(res: RooflineFrames) -> dict[str, Any]:
    """Coverage and totals (JSON-ready; times in µs)."""
    k = res.kernels
    kern = k[k["kind"] == "kernel"]
    t_all = int(kern["dur_ns"].sum())
    modelled = kern["model"].notna()
    t_mod = int(kern.loc[modelled, "dur_ns"].sum())
    carrying = kern["flops"].fillna(0).to_numpy() > 0
    t_carry = int(kern.loc[carrying, "dur_ns"].sum())
    fl = k["flops"].fillna(0).to_numpy()
    by = k["bytes"].fillna(0).to_numpy()
    # the dtype matters for the FLOP peak only
    dtype_unknown = k["model"].notna() & k["dtype"].isna() & (k["flops"].fillna(0) > 0)
    o = res.ops
    counted = o["counted"].to_numpy()
    with_k = (o["kernels"] > 0).to_numpy()
    no_model = o["model"].isna().to_numpy() & with_k
    unowned = k["model"].isna()
    mod_time = int(k.loc[k["model"].notna(), "dur_ns"].sum())
    t_launched = int(kern.loc[(kern["launcher_eid"] >= 0) | kern["model"].notna(), "dur_ns"].sum())
    return {
        "activities": int(len(k)),
        "kernels": int(len(kern)),
        "kernel_time_us": t_all / 1e3,
        "modelled_kernels": int(modelled.sum()),
        "modelled_kernel_time_us": t_mod / 1e3,
        "coverage_time_pct": (100.0 * t_mod / t_all) if t_all else None,
        "coverage_count_pct": (100.0 * float(modelled.sum()) / len(kern)) if len(kern) else None,
        "coverage_launched_time_pct": (100.0 * t_mod / t_launched) if t_launched else None,
        "flop_kernel_time_pct": (100.0 * t_carry / t_all) if t_all else None,
        "flops_total": int(fl.sum()),
        "bytes_total": int(by.sum()),
        "achieved_tflops": (float(fl.sum()) / mod_time / 1e3) if mod_time else None,
        "achieved_gbps": (float(by.sum()) / mod_time) if mod_time else None,
        "counted_ops": int(counted.sum()),
        "op_flops_total": int(o.loc[counted, "flops"].fillna(0).sum()),
        "op_flops_without_activities": int(o.loc[counted & ~with_k, "flops"].fillna(0).sum()),
        "no_model_ops": int(no_model.sum()),
        "no_model_op_names": int(o.loc[no_model, "name"].nunique()),
        "no_model_activities": int(unowned.sum()),
        "no_model_time_us": int(k.loc[unowned, "dur_ns"].sum()) / 1e3,
        "unlaunched_activities": int(((k["launcher_eid"] < 0) & unowned).sum()),
        "unknown_dtype_activities": int(dtype_unknown.sum()),
        "unknown_dtype_time_us": int(k.loc[dtype_unknown, "dur_ns"].sum()) / 1e3,
    }
