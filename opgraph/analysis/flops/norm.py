"""Normalisation rules (family ``norm``): layer norm, RMSNorm (aten and vLLM), group norm
and batch norm, forward and backward.

FLOPs per element (convention; these ops are memory-bound): statistics 3 (mean: 1 add;
variance: 1 sub + 1 FMA-ish), normalise 2 (sub, mul), RMSNorm statistics 2 (square, add)
and normalise 1 (mul), affine +1 per weight and +1 per bias. Backward = 2 x forward FLOPs.
Bytes: read x (+ weight, bias, running stats); write y and the saved statistics (one mean
and one rstd per normalised group, in fp32, fp64 for fp64 inputs).
"""

from __future__ import annotations

from typing import Any, Sequence

from opgraph.analysis.flops.args import Args, bool_mask, is_shape, op_dtype, prod
from opgraph.analysis.flops.cost import OpCost, make_cost, mul_bytes, sum_bytes
from opgraph.analysis.flops.rule import Ctx, RuleTable

__all__ = ["RULES"]

#: The normalisation rules.
RULES = RuleTable("norm")

_NORM_BWD_FACTOR = 2


def _stat_size(dtype: str | None) -> int:
    return 8 if dtype == "fp64" else 4


def _norm_fwd(a: Args, *, x: int, weight: int | None, bias: int | None, groups: int | None,
              n_stats: int, per_elem: int, extra: Sequence[int] = (), rule: str,
              notes: Sequence[str] = (), write_extra: Sequence[int] = ()) -> OpCost | None:
    xs = a.shape(x)
    if xs is None:
        return None
    numel = prod(xs)
    affine = int(weight is not None and a.is_tensor(weight)) + int(bias is not None and a.is_tensor(bias))
    flops = numel * (per_elem + affine)
    stats = None if groups is None else mul_bytes(n_stats * groups, _stat_size(a.dtype(x)))
    nbytes = sum_bytes(a.nbytes(x), a.nbytes(weight) if weight is not None else 0,
                       a.nbytes(bias) if bias is not None else 0,
                       *(a.nbytes(i) for i in extra), mul_bytes(numel, a.itemsize(x)), stats,
                       *(a.nbytes(i) for i in write_extra))
    return make_cost(flops, nbytes, op_dtype(a), rule, notes)


def _groups_from_shape(xs: tuple[int, ...] | None, norm_shape: Any) -> int | None:
    if xs is None or not is_shape(norm_shape):
        return None
    inner = prod(norm_shape) if norm_shape else 1
    return prod(xs) // inner if inner else None


def _norm_shape(a: Args, idx: int, weight: int | None) -> Any:
    ns = a.ci(idx)
    if is_shape(ns):
        return ns
    if weight is not None and a.is_tensor(weight):
        return list(a.shape(weight) or [])  # weight.shape == normalized_shape by definition
    return None


@RULES.rule("aten::layer_norm", "aten::native_layer_norm")
def _layer_norm(c: Ctx) -> OpCost | None:
    # layer_norm(input, normalized_shape, weight?, bias?, eps, cudnn_enable)
    a = c.a
    groups = _groups_from_shape(a.shape(0), _norm_shape(a, 1, 2))
    return _norm_fwd(a, x=0, weight=2, bias=3, groups=groups, n_stats=2, per_elem=5,
                     rule="layer_norm")


@RULES.rule("aten::rms_norm", "aten::_fused_rms_norm")
def _rms_norm(c: Ctx) -> OpCost | None:
    # rms_norm(input, normalized_shape, weight?, eps?)
    a = c.a
    groups = _groups_from_shape(a.shape(0), _norm_shape(a, 1, 2))
    return _norm_fwd(a, x=0, weight=2, bias=None, groups=groups, n_stats=1, per_elem=3,
                     rule="rms_norm")


@RULES.rule("_C::rms_norm")
def _vllm_rms_norm(c: Ctx) -> OpCost | None:
    # vLLM: rms_norm(out!, input, weight, epsilon); no statistics written
    a = c.a
    xs = a.shape(1)
    if xs is None:
        return None
    numel = prod(xs)
    nbytes = sum_bytes(a.nbytes(1), a.nbytes(2), mul_bytes(numel, a.itemsize(0)))
    return make_cost(numel * 4, nbytes, op_dtype(a), "rms_norm")


@RULES.rule("_C::fused_add_rms_norm")
def _vllm_fused_add_rms_norm(c: Ctx) -> OpCost | None:
    # vLLM: fused_add_rms_norm(input!, residual!, weight, epsilon): residual += input;
    # input = rms_norm(residual) * weight. Reads input, residual, weight; writes both.
    a = c.a
    xs = a.shape(0)
    if xs is None:
        return None
    numel = prod(xs)
    nbytes = sum_bytes(a.nbytes(0), a.nbytes(1), a.nbytes(2),
                       mul_bytes(numel, a.itemsize(0)), mul_bytes(numel, a.itemsize(1)))
    return make_cost(numel * 5, nbytes, op_dtype(a), "rms_norm")


@RULES.rule("aten::group_norm")
def _group_norm(c: Ctx) -> OpCost | None:
    # group_norm(input, num_groups, weight?, bias?, eps, cudnn_enabled)
    a = c.a
    xs, g = a.shape(0), a.ci(1)
    groups = xs[0] * g if xs is not None and isinstance(g, int) and xs else None
    return _norm_fwd(a, x=0, weight=2, bias=3, groups=groups, n_stats=2, per_elem=5,
                     rule="group_norm")


@RULES.rule("aten::native_group_norm")
def _native_group_norm(c: Ctx) -> OpCost | None:
    # native_group_norm(input, weight?, bias?, N, C, HxW, group, eps)
    a = c.a
    n, g = a.ci(3), a.ci(6)
    groups = n * g if isinstance(n, int) and isinstance(g, int) else None
    return _norm_fwd(a, x=0, weight=1, bias=2, groups=groups, n_stats=2, per_elem=5,
                     rule="group_norm")


def _bn_fwd(c: Ctx, *, training: Any) -> OpCost | None:
    # (input, weight?, bias?, running_mean?, running_var?, ...)
    a = c.a
    xs = a.shape(0)
    if xs is None or len(xs) < 2:
        return None
    notes = []
    if not isinstance(training, bool):
        notes.append("training flag not recorded: assumed training")
        training = True
    if training:
        # statistics per channel; running stats read and updated
        return _norm_fwd(a, x=0, weight=1, bias=2, groups=xs[1], n_stats=2, per_elem=5,
                         extra=(3, 4), write_extra=(3, 4), rule="batch_norm", notes=notes)
    return _norm_fwd(a, x=0, weight=1, bias=2, groups=0, n_stats=0, per_elem=2, extra=(3, 4),
                     rule="batch_norm", notes=notes)


@RULES.rule("aten::batch_norm", "aten::_batch_norm_impl_index", "aten::native_batch_norm",
            "aten::_native_batch_norm_legit", "aten::cudnn_batch_norm", "aten::miopen_batch_norm")
def _batch_norm(c: Ctx) -> OpCost | None:
    # (input, weight, bias, running_mean, running_var, training, momentum, eps, ...)
    return _bn_fwd(c, training=c.a.ci(5))


@RULES.rule("aten::_native_batch_norm_legit_no_training")
def _batch_norm_eval(c: Ctx) -> OpCost | None:
    return _bn_fwd(c, training=False)


def _norm_bwd(a: Args, *, go: int, x: int, weight: int | None, bias: int | None,
              reads: Sequence[int], mask: Sequence[bool] | None, fwd_per_elem: int,
              rule: str, bias_numel: int | None = None) -> OpCost | None:
    xs = a.shape(x)
    if xs is None:
        return None
    numel = prod(xs)
    notes = []
    has_w = weight is not None and a.is_tensor(weight)
    if mask is None:
        mask = [True, has_w, has_w and (bias is not None)]
        notes.append("output_mask not recorded: assumed gradients for input and affine params")
    affine = int(has_w) + int(bias is not None and has_w)
    flops = _NORM_BWD_FACTOR * numel * (fwd_per_elem + affine)
    size = a.itemsize(x)
    parts: list[int | None] = [a.nbytes(go), a.nbytes(x), *(a.nbytes(i) for i in reads)]
    if mask[0]:
        parts.append(mul_bytes(numel, size))
    wbytes = a.nbytes(weight) if has_w and weight is not None else 0
    if len(mask) > 1 and mask[1]:
        parts.append(wbytes)
    if len(mask) > 2 and mask[2]:
        parts.append(wbytes if bias_numel is None else mul_bytes(bias_numel, a.itemsize(weight) if weight is not None else None))
    return make_cost(flops, sum_bytes(*parts), op_dtype(a), rule, notes)


@RULES.rule("aten::native_layer_norm_backward")
def _layer_norm_bwd(c: Ctx) -> OpCost | None:
    # (grad_out, input, normalized_shape, mean, rstd, weight?, bias?, output_mask[3])
    a = c.a
    return _norm_bwd(a, go=0, x=1, weight=5, bias=6, reads=(3, 4, 5),
                     mask=bool_mask(a.ci(7), 3), fwd_per_elem=5, rule="layer_norm_backward")


@RULES.rule("aten::_fused_rms_norm_backward")
def _rms_norm_bwd(c: Ctx) -> OpCost | None:
    # (grad_out, input, normalized_shape, rstd, weight?, output_mask[2])
    a = c.a
    return _norm_bwd(a, go=0, x=1, weight=4, bias=None, reads=(3, 4),
                     mask=bool_mask(a.ci(5), 2), fwd_per_elem=3, rule="rms_norm_backward")


@RULES.rule("aten::native_group_norm_backward")
def _group_norm_bwd(c: Ctx) -> OpCost | None:
    # (grad_out, input, mean, rstd, weight?, N, C, HxW, group, output_mask[3])
    a = c.a
    return _norm_bwd(a, go=0, x=1, weight=4, bias=4, reads=(2, 3, 4),
                     mask=bool_mask(a.ci(9), 3), fwd_per_elem=5, rule="group_norm_backward")


@RULES.rule("aten::native_batch_norm_backward")
def _bn_bwd(c: Ctx) -> OpCost | None:
    # (grad_out, input, weight?, running_mean?, running_var?, save_mean?, save_invstd?,
    #  train, eps, output_mask[3])
    a = c.a
    return _norm_bwd(a, go=0, x=1, weight=2, bias=2, reads=(2, 5, 6),
                     mask=bool_mask(a.ci(9), 3), fwd_per_elem=5, rule="batch_norm_backward")


@RULES.rule("aten::cudnn_batch_norm_backward", "aten::miopen_batch_norm_backward")
def _bn_bwd_vendor(c: Ctx) -> OpCost | None:
    # (input, grad_output, weight, running_mean?, running_var?, save_mean?, save_var?,
    #  epsilon, reserveSpace?): computes grad_input, grad_weight and grad_bias
    a = c.a
    return _norm_bwd(a, go=1, x=0, weight=2, bias=2, reads=(2, 5, 6),
                     mask=[True, True, True], fwd_per_elem=5, rule="batch_norm_backward")
