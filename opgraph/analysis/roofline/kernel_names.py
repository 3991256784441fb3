"""What a device activity's name tells the roofline analysis: whether it does an op's main
work (matrix / convolution / attention kernels, not helpers) and which dtype (and TF32
tensor-core math) it shows. Pure string matching; no units."""

from __future__ import annotations

import re
from functools import lru_cache

import numpy as np

from opgraph.analysis.roofline.objects import map_distinct

#: Families whose FLOPs go to the matrix/conv/attention kernels only.
COMPUTE_FAMILIES = ("gemm", "attention", "conv")
_WORK_RE = {
    "gemm": re.compile(r"(?i)gemm|gemv|cutlass|xmma|nvjet|cijk|cublas|wmma|tensorop|hipblaslt|rocblas"
                       r"|matmul|_mm_|dot_kernel|ck::|sm\d\d_|ampere_|volta_|turing_|hopper_|maxwell_"),
    "conv": re.compile(r"(?i)conv|implicit|igemm|gemm|xmma|cudnn|miopen|winograd|fft|wgrad|dgrad|fprop"
                       r"|cutlass|cijk|ck::|sm\d\d_|ampere_|volta_|turing_|hopper_|maxwell_|naive_conv"),
    "attention": re.compile(r"(?i)flash|fmha|attention|attn|sdpa|mha|cutlass|gemm|xmma|ck::|aiter|"
                            r"softmax|fwd|bwd"),
}
_HELPER_RE = re.compile(r"(?i)elementwise|vectorized_|fill|copy|memset|memcpy|splitk\w*reduce|reduce_kernel"
                        r"|nchw|nhwc|transpose|permute|convert_dq|dot_do_o|scal_kernel")

_NAME_DTYPES = [
    (re.compile(r"(?i)fp8|f8f8|e4m3|e5m2"), "fp8"),
    (re.compile(r"(?i)bf16|bfloat16"), "bf16"),
    (re.compile(r"(?i)fp16|c10::half|\bhalf\b|\b__half\b|(?<![a-z0-9])f16|h884|h1688|h16816|hgemm"), "fp16"),
    (re.compile(r"(?i)tf32"), "fp32"),
    (re.compile(r"(?i)\bdouble\b|fp64|dgemm|(?<![a-z0-9])f64"), "fp64"),
    (re.compile(r"(?i)\bfloat\b|fp32|sgemm|(?<![a-z0-9])f32|s1688|s884|s16816"), "fp32"),
]
_TF32_RE = re.compile(r"(?i)tf32|tensorop_s1688|tensorop_s16816|_s1688gemm|_s16816gemm")


@lru_cache(maxsize=65536)
def kernel_name_dtype(name: str) -> str | None:
    """dtype a kernel name shows (``fp8``, ``bf16``, ``fp16``, ``fp64``, ``fp32``), or None.

    Checked in that order, so a ``bf16`` GEMM with fp32 accumulation reads as ``bf16``."""
    if not isinstance(name, str):
        return None
    for rx, dt in _NAME_DTYPES:
        if rx.search(name):
            return dt
    return None


def tf32_name_mask(names: np.ndarray) -> np.ndarray:
    """Per name: whether it shows TF32 tensor-core math (``tf32``, ``s1688``/``s16816``
    tensor-op GEMMs)."""
    return map_distinct(names, lambda s: isinstance(s, str) and bool(_TF32_RE.search(s))).astype(bool)


def work_kernel_mask(names: np.ndarray, kinds: np.ndarray, family: str | None) -> np.ndarray:
    """Which activities of an op of ``family`` do its main work: for the
    :data:`COMPUTE_FAMILIES`, the kernels whose names look like matrix/conv/attention
    kernels and not like elementwise, fill, copy, layout-transform or split-K reduce
    helpers; for every other family, all of them."""
    if family not in COMPUTE_FAMILIES:
        return np.ones(len(names), dtype=bool)
    rx = _WORK_RE[family]
    ok = map_distinct(names, lambda n: isinstance(n, str) and bool(rx.search(n)) and not _HELPER_RE.search(n))
    return ok.astype(bool) & (kinds == "kernel")
