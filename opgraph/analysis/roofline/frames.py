"""The two frames of a roofline result, built from the attribution steps: ``kernels`` (one
row per device activity) and ``ops`` (one row per ``cpu_op`` that has a cost or launches
activities), and :class:`RooflineFrames`, what report shaping reads from a result.

Columns: times ``ts_ns`` / ``dur_ns`` / ``gpu_ns`` in ns; ``flops`` and ``bytes``
nullable ``Int64``; peaks ``peak_tflops`` (TFLOP/s) and ``peak_gbps`` (GB/s); the
achieved columns of :func:`~opgraph.analysis.roofline.rates.achieved_rates`."""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np
import pandas as pd

from opgraph.analysis.roofline.activity_dtypes import ActivityDtypes
from opgraph.analysis.roofline.attribution import ActivityOps, Shares
from opgraph.analysis.roofline.columns import TraceColumns
from opgraph.analysis.roofline.devices import DeviceInfo
from opgraph.analysis.roofline.kernel_names import COMPUTE_FAMILIES
from opgraph.analysis.roofline.objects import isin_obj, obj_series
from opgraph.analysis.roofline.op_costs import OpCosts
from opgraph.analysis.roofline.rates import achieved_rates, peak_rates


class RooflineFrames(Protocol):
    """What the report tables read from a result
    (:class:`~opgraph.analysis.roofline.result.RooflineResult`)."""

    kernels: pd.DataFrame
    ops: pd.DataFrame


def _add_rates(df: pd.DataFrame, flops: np.ndarray, has_f: np.ndarray, nbytes: np.ndarray, has_b: np.ndarray,
               dur_ns: np.ndarray, device: np.ndarray, dtype: np.ndarray, tf32: np.ndarray, coll: np.ndarray,
               devices: dict[int, DeviceInfo]) -> None:
    """Add the peak and achieved columns to ``df`` (rows aligned with the arrays)."""
    pf, pb = peak_rates(device, dtype, tf32, devices)
    df["peak_tflops"] = pf / 1e12
    df["peak_gbps"] = pb / 1e9
    for k, v in achieved_rates(flops, has_f, nbytes, has_b, dur_ns, pf, pb, coll).items():
        df[k] = obj_series(v) if k == "bound" else v


def kernel_frame(c: TraceColumns, links: ActivityOps, sh: Shares, dts: ActivityDtypes,
                 devices: dict[int, DeviceInfo]) -> pd.DataFrame:
    """The ``kernels`` frame (see :class:`~opgraph.analysis.roofline.result.RooflineResult`)."""
    act, owner, launcher = links.act, links.owner, links.launcher
    kdf = pd.DataFrame({
        "eid": c.eid[act], "kind": obj_series(c.kind[act]), "name": obj_series(c.name[act]), "device": c.device[act],
        "ts_ns": c.ts[act], "dur_ns": links.dur,
        "op_eid": np.where(owner >= 0, c.eid[np.maximum(owner, 0)], -1),
        "op_name": obj_series(np.where(owner >= 0, c.name[np.maximum(owner, 0)], None)),
        "launcher_eid": np.where(launcher >= 0, c.eid[np.maximum(launcher, 0)], -1),
        "launcher_name": obj_series(np.where(launcher >= 0, c.name[np.maximum(launcher, 0)], None)),
        "model": obj_series(sh.model), "family": obj_series(sh.family), "collective": sh.collective,
        "flops": pd.array(np.where(sh.has_f, sh.flops, 0), dtype="Int64"),
        "bytes": pd.array(np.where(sh.has_b, sh.nbytes, 0), dtype="Int64"),
        "dtype": obj_series(dts.dtype), "dtype_source": obj_series(dts.source),
        "flop_source": obj_series(sh.flop_source), "work": sh.work,
    })
    kdf.loc[~sh.has_f, "flops"] = pd.NA
    kdf.loc[~sh.has_b, "bytes"] = pd.NA
    _add_rates(kdf, sh.flops, sh.has_f, sh.nbytes, sh.has_b, links.dur, c.device[act], dts.dtype, dts.tf32,
               sh.collective, devices)
    return kdf


def op_frame(c: TraceColumns, oc: OpCosts, composite: np.ndarray, counted: np.ndarray, links: ActivityOps,
             sh: Shares, dts: ActivityDtypes, devices: dict[int, DeviceInfo], default_dtype: str | None
             ) -> pd.DataFrame:
    """The ``ops`` frame: the costed ``cpu_op`` s and those that launch activities, with
    their activities' totals; an op's device and peak are those of its first activity."""
    n = c.n
    act, owner, launcher, kdur = links.act, links.owner, links.launcher, links.dur
    is_launcher = np.zeros(n, dtype=bool)
    is_launcher[launcher[launcher >= 0]] = True
    op_rows = np.flatnonzero(c.is_cpu_op & (oc.costed | is_launcher))
    gpu_ns = np.zeros(n, dtype=np.int64)
    nk = np.zeros(n, dtype=np.int64)
    af = np.zeros(n, dtype=np.int64)
    ab = np.zeros(n, dtype=np.int64)
    key = np.where(owner >= 0, owner, launcher)
    m = key >= 0
    np.add.at(gpu_ns, key[m], kdur[m])
    np.add.at(nk, key[m], 1)
    mo = sh.has_owner  # activities whose FLOPs/bytes come from their op (not from the trace)
    owned = np.zeros(n, dtype=np.int64)
    np.add.at(owned, owner[mo], 1)
    np.add.at(af, owner[mo], np.where(sh.has_f[mo], sh.flops[mo], 0))
    np.add.at(ab, owner[mo], np.where(sh.has_b[mo], sh.nbytes[mo], 0))
    # device and peak of an op: those of its first activity
    first_dev = np.full(n, -1, dtype=np.int64)
    first_tf = np.zeros(n, dtype=bool)
    if m.any():
        kk = key[m][::-1]
        first_dev[kk] = c.device[act][m][::-1]
        first_tf[kk] = dts.tf32[m][::-1]
    odt = oc.dtype[op_rows].copy()
    if default_dtype is not None:
        odt[odt == None] = default_dtype  # noqa: E711
    r = op_rows
    odf = pd.DataFrame({
        "eid": c.eid[r], "name": obj_series(c.name[r]), "ts_ns": c.ts[r], "dur_ns": c.dur[r],
        "model": obj_series(oc.model[r]), "family": obj_series(oc.family[r]), "composite": composite[r],
        "counted": counted[r], "collective": oc.collective[r],
        "flops": pd.array(oc.flops[r], dtype="Int64"), "bytes": pd.array(oc.bytes[r], dtype="Int64"),
        "dtype": obj_series(odt), "device": first_dev[r], "kernels": nk[r], "owned": owned[r],
        "gpu_ns": gpu_ns[r], "attributed_flops": af[r], "attributed_bytes": ab[r],
    })
    odf.loc[~oc.costed[r], ["flops"]] = pd.NA
    odf.loc[oc.bytes[r] < 0, ["bytes"]] = pd.NA
    ohf = counted[r] & (nk[r] > 0)
    ohb = ohf & (oc.bytes[r] >= 0)
    _add_rates(odf, af[r], ohf, ab[r], ohb, gpu_ns[r], first_dev[r], odt, first_tf[r], oc.collective[r], devices)
    return odf


def problem_sizes(c: TraceColumns, oc: OpCosts, counted: np.ndarray) -> tuple[dict[int, Any], dict[int, Any]]:
    """(op eid -> problem size its rule read, op eid -> recorded args) of the counted GEMM,
    convolution and attention ops (problem sizes only where the rule gave one)."""
    pr = np.flatnonzero(counted & isin_obj(oc.family, COMPUTE_FAMILIES))
    op_args = dict(zip(c.eid[pr].tolist(), c.args[pr].tolist()))
    pr = pr[oc.problem[pr] != None]  # noqa: E711
    problems = dict(zip(c.eid[pr].tolist(), oc.problem[pr].tolist()))
    return problems, op_args
