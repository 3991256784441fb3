"""The dtype of each device activity, which picks its FLOP peak: its op's dtype (largest
tensor input), else what the kernel name shows, else the caller's default, else unknown;
fp32 GEMM/conv kernels whose names show TF32 tensor-core math use the TF32 peak.
No units (dtype names: ``fp8``, ``bf16``, ``fp16``, ``fp32``, ``tf32``, ``fp64`` ...)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from opgraph.analysis.flops import dtype_info
from opgraph.analysis.roofline.kernel_names import kernel_name_dtype, tf32_name_mask
from opgraph.analysis.roofline.objects import map_distinct
from opgraph.devices.peaks import peak_dtype_key


def canonical_dtype(dtype: str | None) -> str | None:
    """The canonical name of a default dtype given by the caller (None stays None).
    Raises ``ValueError`` for a dtype neither the cost rules nor the peak tables know."""
    if dtype is None:
        return None
    info = dtype_info(dtype)
    canon = info[0] if info else None
    if canon is None and peak_dtype_key(dtype) is None:
        raise ValueError(f"unknown dtype {dtype!r}; use e.g. bf16, fp16, fp32, tf32, fp8, fp64")
    return canon or peak_dtype_key(dtype)


@dataclass
class ActivityDtypes:
    """Per activity: ``dtype`` (object, None = unknown), ``source`` (``op``,
    ``kernel_name``, ``default`` or None) and ``tf32`` (bool: use the TF32 peak)."""

    dtype: np.ndarray
    source: np.ndarray
    tf32: np.ndarray


def activity_dtypes(names: np.ndarray, op_dtype: np.ndarray, default: str | None) -> ActivityDtypes:
    """dtypes of the activities named ``names`` whose owning ops' cost dtypes are
    ``op_dtype`` (None where no op or no dtype), ``default`` (canonical) filling the rest."""
    # unmodelled kernels: the dtype of their launching op's cost is unknown; use names
    name_dt = map_distinct(names, kernel_name_dtype)
    kdtype = np.where(op_dtype != None, op_dtype, name_dt)  # noqa: E711
    dsrc = np.where(op_dtype != None, "op", np.where(name_dt != None, "kernel_name", None))  # noqa: E711
    if default is not None:
        fill = kdtype == None  # noqa: E711
        kdtype[fill] = default
        dsrc[fill] = "default"
    tf32 = (kdtype == "fp32") & tf32_name_mask(names)
    if default == "tf32":
        tf32 |= dsrc == "default"
    return ActivityDtypes(kdtype, dsrc, tf32)
