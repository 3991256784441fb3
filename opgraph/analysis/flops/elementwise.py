"""Elementwise rules (family ``elementwise``): the arithmetic, activation and comparison
operators listed below (in-place and out-of-place) and the ``_foreach_*`` list operators.

FLOPs = output elements (transcendentals count 1; comparisons too). Bytes = inputs +
outputs (broadcast inputs counted by their distinct elements; the output in the promoted
dtype, ``bool`` for comparisons). ``_foreach_*`` ops record element counts but not dtypes:
their bytes are unknown. Only the operators listed here are modelled.
"""

from __future__ import annotations

from opgraph.analysis.flops.args import broadcast, op_dtype, promote, prod
from opgraph.analysis.flops.cost import OpCost, make_cost, mul_bytes, sum_bytes
from opgraph.analysis.flops.rule import Ctx, RuleTable
from opgraph.dtypes import itemsize as dtype_itemsize

__all__ = ["RULES", "elementwise_cost"]

#: The elementwise rules.
RULES = RuleTable("elementwise")

_ARITH = {
    "add", "add_", "sub", "sub_", "rsub", "mul", "mul_", "div", "div_", "divide", "divide_",
    "true_divide", "true_divide_", "floor_divide", "floor_divide_", "remainder", "remainder_",
    "fmod", "fmod_", "neg", "neg_", "abs", "abs_", "sgn", "sgn_", "sign", "sign_",
    "reciprocal", "reciprocal_", "sqrt", "sqrt_", "rsqrt", "rsqrt_", "exp", "exp_", "exp2",
    "exp2_", "expm1", "expm1_", "log", "log_", "log2", "log2_", "log10", "log10_", "log1p",
    "log1p_", "pow", "pow_", "square", "square_", "sin", "sin_", "cos", "cos_", "tan", "tan_",
    "tanh", "tanh_", "sigmoid", "sigmoid_", "erf", "erf_", "erfinv", "erfinv_", "relu",
    "relu_", "gelu", "gelu_", "silu", "silu_", "elu", "elu_", "leaky_relu", "leaky_relu_",
    "hardtanh", "hardtanh_", "hardswish", "hardswish_", "hardsigmoid", "hardsigmoid_", "mish",
    "mish_", "softplus", "clamp", "clamp_", "clamp_min", "clamp_min_", "clamp_max",
    "clamp_max_", "clip", "clip_", "threshold", "threshold_", "threshold_backward",
    "sigmoid_backward", "tanh_backward", "gelu_backward", "silu_backward", "elu_backward",
    "hardtanh_backward", "leaky_relu_backward", "hardswish_backward", "softplus_backward",
    "maximum", "minimum", "fmax", "fmin", "lerp", "lerp_", "addcmul", "addcmul_", "addcdiv",
    "addcdiv_", "where", "nan_to_num", "nan_to_num_", "floor", "floor_", "ceil", "ceil_",
    "round", "round_", "trunc", "trunc_", "frac", "frac_", "xlogy", "logit", "sinh", "cosh",
    "atan", "atan2", "asin", "acos", "bitwise_and", "bitwise_and_", "bitwise_or",
    "bitwise_or_", "bitwise_xor", "bitwise_xor_", "bitwise_not", "bitwise_not_",
}
_COMPARE = {
    "eq", "eq_", "ne", "ne_", "lt", "lt_", "le", "le_", "gt", "gt_", "ge", "ge_",
    "logical_and", "logical_and_", "logical_or", "logical_or_", "logical_xor",
    "logical_xor_", "logical_not", "logical_not_", "isnan", "isinf", "isfinite",
}
_FOREACH_ARITH = {
    "add", "add_", "sub", "sub_", "mul", "mul_", "div", "div_", "addcmul", "addcmul_",
    "addcdiv", "addcdiv_", "sqrt", "sqrt_", "lerp", "lerp_", "neg", "neg_", "exp", "exp_",
    "maximum_", "minimum_", "pow", "pow_", "reciprocal", "reciprocal_", "sign", "abs",
    "clamp_min_", "clamp_max_", "norm",
}


def elementwise_cost(c: Ctx, *, arith: bool, compare: bool = False) -> OpCost | None:
    """Cost of an elementwise call *c* (model ``elementwise``): bytes = the tensor inputs
    (distinct elements) + the broadcast output in the promoted dtype (``bool`` when
    *compare*; the first argument's shape and dtype for in-place ``op_``); FLOPs = output
    elements when *arith*, else 0. ``None`` when the shapes do not broadcast."""
    a = c.a
    idx = a.tensor_indices()
    if not idx or (c.name == "aten::where" and len(idx) == 1):  # where(cond) == nonzero
        return None
    base = c.name.split("::", 1)[-1]
    inplace = base.endswith("_") and not base.endswith("__")
    if inplace:
        out_shape = a.shape(0)
        if out_shape is None:
            return None
        out_dtype = a.dtype(0)
    else:
        out_shape = broadcast([a.shape(i) for i in idx])  # type: ignore[misc]
        if out_shape is None and len(idx) > 1 and a.numel(idx[-1]) == 0:
            # an empty trailing tensor is the not-yet-resized out= buffer of an .out overload
            idx = idx[:-1]
            out_shape = broadcast([a.shape(i) for i in idx])  # type: ignore[misc]
        if out_shape is None:
            return None
        if compare:
            out_dtype = "bool"
        else:
            out_dtype = promote([a.dtype(i) for i in idx], [len(a.shape(i) or ()) for i in idx])
    out_numel = prod(out_shape)
    nbytes = sum_bytes(*(a.nbytes(i) for i in idx), mul_bytes(out_numel, dtype_itemsize(out_dtype)))
    return make_cost(out_numel if arith else 0, nbytes, op_dtype(a), "elementwise")


@RULES.rule(*(f"aten::{n}" for n in _ARITH))
def _elementwise(c: Ctx) -> OpCost | None:
    return elementwise_cost(c, arith=True)


@RULES.rule(*(f"aten::{n}" for n in _COMPARE))
def _compare(c: Ctx) -> OpCost | None:
    return elementwise_cost(c, arith=True, compare=True)


@RULES.rule(*(f"aten::_foreach_{n}" for n in _FOREACH_ARITH))
def _foreach(c: Ctx) -> OpCost | None:
    # Tensor lists: element counts are recorded, dtypes are not ("TensorList").
    a = c.a
    first = a.tensor_list(0)
    if first is None:
        return None
    flops = sum(prod(s) for s in first)
    return make_cost(flops, None, None, "elementwise")
