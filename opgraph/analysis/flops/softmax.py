"""Softmax rules (family ``softmax``): ``softmax``, ``log_softmax``, ``_safe_softmax``
and their backward.

FLOPs: forward 5 per element (max, subtract, exp, sum, divide -- or subtract the log for
log_softmax); backward 4 per element. Bytes = input read + output written (backward:
grad_output and output read, grad_input written), the output in the recorded output
dtype when there is one.
"""

from __future__ import annotations

from typing import Any

from opgraph.analysis.flops.args import UNKNOWN, op_dtype, prod
from opgraph.analysis.flops.cost import OpCost, make_cost, mul_bytes, sum_bytes
from opgraph.analysis.flops.rule import Ctx, RuleTable
from opgraph.dtypes import scalar_type_info

__all__ = ["RULES"]

#: The softmax rules.
RULES = RuleTable("softmax")


def _softmax_common(c: Ctx, *, out_fp32: Any, backward: bool) -> OpCost | None:
    a = c.a
    if backward:
        # (grad_output, output, dim, input_dtype)
        gs = a.shape(0)
        if gs is None:
            return None
        numel = prod(gs)
        code = a.ci(3)
        info = scalar_type_info(code) if isinstance(code, int) else None
        out_size = info[1] if info else a.itemsize(0)
        nbytes = sum_bytes(a.nbytes(0), a.nbytes(1), mul_bytes(numel, out_size))
        return make_cost(4 * numel, nbytes, op_dtype(a), "softmax_backward")
    xs = a.shape(0)
    if xs is None:
        return None
    numel = prod(xs)
    notes = []
    out_size = a.itemsize(0)
    if out_fp32 is True:
        out_size = 4
    elif isinstance(out_fp32, int) and not isinstance(out_fp32, bool):
        info = scalar_type_info(out_fp32)
        out_size = info[1] if info else None
    elif out_fp32 is UNKNOWN and a.dtype(0) in ("fp16", "bf16"):
        notes.append("half_to_float / dtype not recorded: assumed output in the input dtype")
    nbytes = sum_bytes(a.nbytes(0), mul_bytes(numel, out_size))
    return make_cost(5 * numel, nbytes, op_dtype(a), "softmax", notes)


@RULES.rule("aten::_softmax", "aten::_log_softmax")
def _softmax_impl(c: Ctx) -> OpCost | None:
    # (self, dim, half_to_float)
    return _softmax_common(c, out_fp32=c.a.ci(2), backward=False)


@RULES.rule("aten::softmax", "aten::log_softmax", "aten::_safe_softmax")
def _softmax_api(c: Ctx) -> OpCost | None:
    # (self, dim, dtype?) ; dtype is a ScalarType code
    return _softmax_common(c, out_fp32=c.a.ci(2), backward=False)


@RULES.rule("aten::_softmax_backward_data", "aten::_log_softmax_backward_data")
def _softmax_bwd(c: Ctx) -> OpCost | None:
    return _softmax_common(c, out_fp32=None, backward=True)
