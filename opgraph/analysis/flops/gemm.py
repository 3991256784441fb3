"""GEMM rules (family ``gemm``): ``mm``, ``addmm``, ``bmm``, ``baddbmm`` / ``addbmm``,
``_scaled_mm``, ``matmul`` and ``linear``.

FLOPs = 2*M*N*K (times the batch); bias / beta*C additions are not counted as FLOPs
(their bytes are). Bytes = the operand matrices (+ bias / C when read) + the output, in
the output dtype = dtype of the first matrix unless ``out_dtype`` is recorded. Each cost
carries the problem size ``B M N K``.
"""

from __future__ import annotations

from typing import Any, Sequence

from opgraph.analysis.flops.args import UNKNOWN, Args, broadcast, op_dtype, prod
from opgraph.analysis.flops.cost import OpCost, make_cost, mul_bytes, sum_bytes
from opgraph.analysis.flops.rule import Ctx, RuleTable
from opgraph.dtypes import scalar_type_info

__all__ = ["RULES"]

#: The GEMM rules.
RULES = RuleTable("gemm")


def _gemm_problem(b: int, m: int, n: int, k: int) -> dict[str, Any]:
    return {"B": b, "M": m, "N": n, "K": k}


def _gemm_bytes(a: Args, mats: Sequence[int], out_numel: int, out_size: int | None,
                extra: Sequence[int] = ()) -> int | None:
    return sum_bytes(*(a.nbytes(i) for i in (*mats, *extra)), mul_bytes(out_numel, out_size))


@RULES.rule("aten::mm", "aten::_int_mm")
def _mm(c: Ctx) -> OpCost | None:
    a = c.a
    x, w = a.shape(0), a.shape(1)
    if x is None or w is None or len(x) != 2 or len(w) != 2 or x[1] != w[0]:
        return None
    m, k, n = x[0], x[1], w[1]
    out_size = 4 if c.name == "aten::_int_mm" else a.itemsize(0)
    return make_cost(2 * m * n * k, _gemm_bytes(a, (0, 1), m * n, out_size), op_dtype(a), "gemm",
                     problem=_gemm_problem(1, m, n, k))


@RULES.rule("aten::addmm", "aten::addmm_")
def _addmm(c: Ctx) -> OpCost | None:
    a = c.a
    x, w = a.shape(1), a.shape(2)
    if x is None or w is None or len(x) != 2 or len(w) != 2 or x[1] != w[0]:
        return None
    m, k, n = x[0], x[1], w[1]
    beta = a.ci(3)
    extra = () if beta == 0 else (0,)  # beta == 0: C is not read
    return make_cost(2 * m * n * k, _gemm_bytes(a, (1, 2), m * n, a.itemsize(1), extra),
                     op_dtype(a), "gemm", problem=_gemm_problem(1, m, n, k))


@RULES.rule("aten::bmm")
def _bmm(c: Ctx) -> OpCost | None:
    a = c.a
    x, w = a.shape(0), a.shape(1)
    if x is None or w is None or len(x) != 3 or len(w) != 3 or x[0] != w[0] or x[2] != w[1]:
        return None
    b, m, k, n = x[0], x[1], x[2], w[2]
    return make_cost(2 * b * m * n * k, _gemm_bytes(a, (0, 1), b * m * n, a.itemsize(0)),
                     op_dtype(a), "gemm", problem=_gemm_problem(b, m, n, k))


@RULES.rule("aten::baddbmm", "aten::baddbmm_", "aten::addbmm", "aten::addbmm_")
def _baddbmm(c: Ctx) -> OpCost | None:
    a = c.a
    x, w = a.shape(1), a.shape(2)
    if x is None or w is None or len(x) != 3 or len(w) != 3 or x[0] != w[0] or x[2] != w[1]:
        return None
    b, m, k, n = x[0], x[1], x[2], w[2]
    out_numel = m * n if c.name.startswith("aten::addbmm") else b * m * n
    extra = () if a.ci(3) == 0 else (0,)
    return make_cost(2 * b * m * n * k, _gemm_bytes(a, (1, 2), out_numel, a.itemsize(1), extra),
                     op_dtype(a), "gemm", problem=_gemm_problem(b, m, n, k))


@RULES.rule("aten::_scaled_mm")
def _scaled_mm(c: Ctx) -> OpCost | None:
    # _scaled_mm(self, mat2, scale_a, scale_b, bias?, scale_result?, out_dtype?, use_fast_accum)
    a = c.a
    x, w = a.shape(0), a.shape(1)
    if x is None or w is None or len(x) != 2 or len(w) != 2 or x[1] != w[0]:
        return None
    m, k, n = x[0], x[1], w[1]
    notes = []
    od = a.ci(6)
    if isinstance(od, int):
        info = scalar_type_info(od)
        out_size = info[1] if info else None
    else:
        out_size = a.itemsize(0)  # out_dtype=None means the dtype of self
        if od is UNKNOWN:
            notes.append("out_dtype not recorded: assumed the input dtype")
    return make_cost(2 * m * n * k, _gemm_bytes(a, (0, 1), m * n, out_size, (2, 3, 4, 5)),
                     op_dtype(a), "gemm", notes, problem=_gemm_problem(1, m, n, k))


def _matmul_shapes(x: tuple[int, ...], w: tuple[int, ...]) -> tuple[int, int, int, int] | None:
    """(batch, M, K, N) of torch.matmul semantics, batch dims broadcast."""
    if len(x) == 0 or len(w) == 0:
        return None
    xs = (1,) + x if len(x) == 1 else x
    ws = w + (1,) if len(w) == 1 else w
    if xs[-1] != ws[-2]:
        return None
    batch = broadcast([xs[:-2], ws[:-2]])
    if batch is None:
        return None
    return prod(batch), xs[-2], xs[-1], ws[-1]


@RULES.rule("aten::matmul")
def _matmul(c: Ctx) -> OpCost | None:
    a = c.a
    x, w = a.shape(0), a.shape(1)
    if x is None or w is None:
        return None
    bmkn = _matmul_shapes(x, w)
    if bmkn is None:
        return None
    b, m, k, n = bmkn
    return make_cost(2 * b * m * n * k, _gemm_bytes(a, (0, 1), b * m * n, a.itemsize(0)),
                     op_dtype(a), "gemm", problem=_gemm_problem(b, m, n, k))


@RULES.rule("aten::linear", "vllm::rocm_unquantized_gemm")
def _linear(c: Ctx) -> OpCost | None:
    # linear(input[..., K], weight[N, K], bias[N]?) -> [..., N]
    a = c.a
    x, w = a.shape(0), a.shape(1)
    if x is None or w is None or len(x) < 1 or len(w) not in (1, 2) or x[-1] != w[-1]:
        return None
    k = x[-1]
    n = w[0] if len(w) == 2 else 1
    m = prod(x[:-1])
    return make_cost(2 * m * n * k, _gemm_bytes(a, (0, 1), m * n, a.itemsize(0), (2,)),
                     op_dtype(a), "gemm", problem=_gemm_problem(1, m, n, k))
