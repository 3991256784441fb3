"""Convolution rules (family ``conv``): forward (``convolution``, ``conv1d/2d/3d``,
``conv_transpose*``, the cuDNN / MIOpen / oneDNN entry points) and backward
(``convolution_backward`` and the old cuDNN backward overloads).

FLOPs = 2 * N * prod(spatial) * numel(W), spatial = output spatial dims for a normal conv
(= 2*N*Cout*prod(out)*Cin/groups*prod(k)) and input spatial dims for a transposed conv.
Bias additions are not counted as FLOPs (grad_bias in the backward counts one add per
grad_output element). Bytes = input + weight (+ bias) + output under perfect reuse; the
output honours padding, dilation, groups and transposition. Each cost carries the problem
size ``N C H W K R S`` (+ ``D T`` for 3-d, ``stride padding dilation groups transposed``).
"""

from __future__ import annotations

from typing import Any, Sequence

from opgraph.analysis.flops.args import UNKNOWN, Args, bool_mask, is_shape, op_dtype, prod
from opgraph.analysis.flops.cost import OpCost, make_cost, mul_bytes, sum_bytes
from opgraph.analysis.flops.rule import Ctx, RuleTable

__all__ = ["RULES"]

#: The convolution rules.
RULES = RuleTable("conv")


def _as_list(v: Any, nd: int) -> list[int] | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return [v] * nd
    if isinstance(v, (list, tuple)) and v and all(isinstance(e, int) and not isinstance(e, bool) for e in v):
        if len(v) == 1:
            return list(v) * nd
        return list(v) if len(v) == nd else None
    return None


def _conv_out_spatial(in_sp: Sequence[int], k: Sequence[int], stride: Sequence[int],
                      pad: Sequence[int], dil: Sequence[int], transposed: bool,
                      out_pad: Sequence[int]) -> list[int] | None:
    out = []
    for i, kk, s, p, d, op in zip(in_sp, k, stride, pad, dil, out_pad):
        if transposed:
            o = (i - 1) * s - 2 * p + d * (kk - 1) + op + 1
        else:
            o = (i + 2 * p - d * (kk - 1) - 1) // s + 1
        if o < 0:
            return None
        out.append(o)
    return out


def _conv_problem(x: Sequence[Any], w: Sequence[int], cout: int | None, stride: Any, padding: Any,
                  dilation: Any, groups: Any, transposed: bool) -> dict[str, Any]:
    """``N C H W K R S`` (+ ``D T`` for 3-d) of a convolution with input ``x`` [N, C, *spatial]
    and weight ``w`` [K, C/groups, *kernel] (``[C, K/groups, ...]`` when transposed); ``x``
    may hold ``None`` for what is unknown."""
    nd = len(w) - 2
    sp, ks = list(x[2:]), list(w[2:])
    if nd == 1:
        sp, ks = [1] + sp, [1] + ks
    d3 = nd == 3
    def tup(v: Any) -> tuple[int, ...] | None:
        return tuple(v) if isinstance(v, (list, tuple)) else None
    g = groups if isinstance(groups, int) and not isinstance(groups, bool) and groups > 0 else None
    return {"N": x[0], "C": x[1], "D": sp[0] if d3 else None, "H": sp[-2], "W": sp[-1], "K": cout,
            "T": ks[0] if d3 else None, "R": ks[-2], "S": ks[-1], "stride": tup(stride), "padding": tup(padding),
            "dilation": tup(dilation), "groups": g, "transposed": bool(transposed)}


def _conv_forward(c: Ctx, *, bias: int | None, stride: Any, padding: Any, dilation: Any,
                  transposed: Any, output_padding: Any, groups: Any) -> OpCost | None:
    a = c.a
    x, w = a.shape(0), a.shape(1)
    if x is None or w is None or len(w) < 3:
        return None
    nd = len(w) - 2
    if len(x) == nd + 1:  # unbatched input
        x = (1,) + x
    if len(x) != nd + 2:
        return None
    n, in_sp = x[0], x[2:]
    if transposed is UNKNOWN or transposed is None or not isinstance(transposed, bool):
        return None
    notes: list[str] = []
    out_sp: list[int] | None = None
    if isinstance(padding, str):
        if padding == "valid":
            padding = 0
        elif padding == "same":
            padding = None
            out_sp = list(in_sp) if not transposed else None
    st, pd, dl = _as_list(stride, nd), _as_list(padding, nd), _as_list(dilation, nd)
    opd = _as_list(output_padding, nd) if transposed else [0] * nd
    if out_sp is None and None not in (st, pd, dl, opd):
        out_sp = _conv_out_spatial(in_sp, w[2:], st, pd, dl, transposed, opd)  # type: ignore[arg-type]
    g = groups if isinstance(groups, int) and not isinstance(groups, bool) and groups > 0 else None
    if transposed:
        cout = w[1] * g if g is not None else None
    else:
        cout = w[0]
    if out_sp is None and c.output_dims:
        od = c.output_dims[0]
        if is_shape(od) and len(od) == nd + 2:
            out_sp, cout = list(od[2:]), od[1]
            notes.append("output shape taken from output_dims")
    if out_sp is None and not transposed:
        return None
    spatial = in_sp if transposed else out_sp
    flops = 2 * n * prod(spatial) * prod(w)  # type: ignore[arg-type]
    if out_sp is None or cout is None:
        nbytes = None
    else:
        nbytes = sum_bytes(a.nbytes(0), a.nbytes(1), a.nbytes(bias) if bias is not None else 0,
                           mul_bytes(n * cout * prod(out_sp), a.itemsize(0)))
    return make_cost(flops, nbytes, op_dtype(a), "conv", notes,
                     problem=_conv_problem(x, w, cout, st, pd, dl, g, transposed))


@RULES.rule("aten::convolution", "aten::_convolution", "aten::convolution_overrideable")
def _convolution(c: Ctx) -> OpCost | None:
    a = c.a
    return _conv_forward(c, bias=2, stride=a.ci(3), padding=a.ci(4), dilation=a.ci(5),
                         transposed=a.ci(6), output_padding=a.ci(7), groups=a.ci(8))


@RULES.rule("aten::conv1d", "aten::conv2d", "aten::conv3d")
def _convnd(c: Ctx) -> OpCost | None:
    a = c.a
    return _conv_forward(c, bias=2, stride=a.ci(3), padding=a.ci(4), dilation=a.ci(5),
                         transposed=False, output_padding=0, groups=a.ci(6))


@RULES.rule("aten::conv_transpose1d", "aten::conv_transpose2d", "aten::conv_transpose3d")
def _conv_transpose(c: Ctx) -> OpCost | None:
    # conv_transposeNd(input, weight, bias, stride, padding, output_padding, groups, dilation)
    a = c.a
    return _conv_forward(c, bias=2, stride=a.ci(3), padding=a.ci(4), dilation=a.ci(7),
                         transposed=True, output_padding=a.ci(5), groups=a.ci(6))


@RULES.rule("aten::cudnn_convolution")
def _cudnn_conv(c: Ctx) -> OpCost | None:
    a = c.a
    if a.is_tensor(2):  # old overload with bias: (self, weight, bias, padding, stride, dilation, groups, ...)
        return _conv_forward(c, bias=2, padding=a.ci(3), stride=a.ci(4), dilation=a.ci(5),
                             transposed=False, output_padding=0, groups=a.ci(6))
    # (self, weight, padding, stride, dilation, groups, benchmark, deterministic, allow_tf32)
    return _conv_forward(c, bias=None, padding=a.ci(2), stride=a.ci(3), dilation=a.ci(4),
                         transposed=False, output_padding=0, groups=a.ci(5))


@RULES.rule("aten::cudnn_convolution_transpose")
def _cudnn_conv_t(c: Ctx) -> OpCost | None:
    # (self, weight, padding, output_padding, stride, dilation, groups, ...)
    a = c.a
    return _conv_forward(c, bias=None, padding=a.ci(2), output_padding=a.ci(3), stride=a.ci(4),
                         dilation=a.ci(5), transposed=True, groups=a.ci(6))


@RULES.rule("aten::miopen_convolution", "aten::miopen_depthwise_convolution",
            "aten::mkldnn_convolution")
def _miopen_conv(c: Ctx) -> OpCost | None:
    # (self, weight, bias?, padding, stride, dilation, groups, ...)
    a = c.a
    return _conv_forward(c, bias=2, padding=a.ci(3), stride=a.ci(4), dilation=a.ci(5),
                         transposed=False, output_padding=0, groups=a.ci(6))


@RULES.rule("aten::miopen_convolution_transpose")
def _miopen_conv_t(c: Ctx) -> OpCost | None:
    # (self, weight, bias?, padding, output_padding, stride, dilation, groups, ...)
    a = c.a
    return _conv_forward(c, bias=2, padding=a.ci(3), output_padding=a.ci(4), stride=a.ci(5),
                         dilation=a.ci(6), transposed=True, groups=a.ci(7))


def _conv_bwd(a: Args, go: tuple[int, ...], x: tuple[int, ...] | None, w: tuple[int, ...],
              transposed: bool, mask: Sequence[bool], *, go_i: int, x_i: int | None, w_i: int,
              grad_input_numel: int | None, grad_weight_numel: int | None,
              hyper: Sequence[Any] = (None, None, None, None),
              input_shape: Any = None) -> OpCost | None:
    """``hyper``: the recorded (stride, padding, dilation, groups); ``input_shape``: the
    forward input's shape when ``x`` is not an argument (the problem size only)."""
    nd = len(w) - 2
    if len(go) == nd + 1:
        go = (1,) + go
    if len(go) != nd + 2:
        return None
    if transposed:
        if x is None:
            return None
        xx = (1,) + x if len(x) == nd + 1 else x
        spatial = xx[2:]
    else:
        spatial = go[2:]
    n = go[0]
    fwd = 2 * n * prod(spatial) * prod(w)
    flops = (fwd if mask[0] else 0) + (fwd if mask[1] else 0)
    if len(mask) > 2 and mask[2]:
        flops += prod(go)  # grad_bias: one add per grad_output element
    size = a.itemsize(go_i)
    parts: list[int | None] = [a.nbytes(go_i)]
    if mask[0]:
        parts.append(a.nbytes(w_i))
        parts.append(mul_bytes(grad_input_numel, size) if grad_input_numel is not None else None)
    if mask[1]:
        parts.append(a.nbytes(x_i) if x_i is not None else 0)
        parts.append(mul_bytes(grad_weight_numel, size) if grad_weight_numel is not None else None)
    if len(mask) > 2 and mask[2]:
        parts.append(mul_bytes(go[1], size))
    xs: Any = x if x is not None else (tuple(input_shape) if is_shape(input_shape) and input_shape else None)
    if xs is not None and len(xs) == nd + 1:
        xs = (1,) + tuple(xs)
    if xs is None or len(xs) != nd + 2:  # forward input unknown: batch from grad_output only
        xs = (go[0], None) + (None,) * nd
    st, pd, dl = (_as_list(h, nd) for h in hyper[:3])
    g = hyper[3]
    gi = g if isinstance(g, int) and not isinstance(g, bool) and g > 0 else None
    cout = (w[1] * gi if gi is not None else None) if transposed else w[0]
    problem = _conv_problem(xs, w, cout, st, pd, dl, gi, transposed)
    return make_cost(flops, sum_bytes(*parts), op_dtype(a), "conv_backward", problem=problem)


@RULES.rule("aten::convolution_backward", "aten::convolution_backward_overrideable")
def _convolution_backward(c: Ctx) -> OpCost | None:
    # (grad_output, input, weight, bias_sizes, stride, padding, dilation, transposed,
    #  output_padding, groups, output_mask[3])
    a = c.a
    go, x, w = a.shape(0), a.shape(1), a.shape(2)
    transposed = a.ci(7)
    mask = bool_mask(a.ci(10), 3)
    if go is None or w is None or len(w) < 3 or mask is None or not isinstance(transposed, bool):
        return None
    return _conv_bwd(a, go, x, w, transposed, mask, go_i=0, x_i=1, w_i=2,
                     grad_input_numel=a.numel(1) if x is not None else None,
                     grad_weight_numel=prod(w), hyper=(a.ci(4), a.ci(5), a.ci(6), a.ci(9)))


@RULES.rule("aten::cudnn_convolution_backward")
def _cudnn_convolution_backward(c: Ctx) -> OpCost | None:
    # old (<= 1.10): (self, grad_output, weight, padding, stride, dilation, groups,
    #                 benchmark, deterministic, allow_tf32, output_mask[2])
    a = c.a
    x, go, w = a.shape(0), a.shape(1), a.shape(2)
    mask = bool_mask(a.ci(10), 2)
    if go is None or w is None or len(w) < 3 or mask is None:
        return None
    return _conv_bwd(a, go, x, w, False, mask, go_i=1, x_i=0, w_i=2,
                     grad_input_numel=a.numel(0) if x is not None else None,
                     grad_weight_numel=prod(w), hyper=(a.ci(4), a.ci(3), a.ci(5), a.ci(6)))


@RULES.rule("aten::cudnn_convolution_backward_input")
def _cudnn_conv_bwd_input(c: Ctx) -> OpCost | None:
    # old: (self_size, grad_output, weight, padding, stride, dilation, groups, ...)
    a = c.a
    go, w = a.shape(1), a.shape(2)
    if go is None or w is None or len(w) < 3:
        return None
    size = a.ci(0)
    gi = prod(size) if is_shape(size) and size else None
    return _conv_bwd(a, go, None, w, False, [True, False], go_i=1, x_i=None, w_i=2,
                     grad_input_numel=gi, grad_weight_numel=None,
                     hyper=(a.ci(4), a.ci(3), a.ci(5), a.ci(6)), input_shape=size)


@RULES.rule("aten::cudnn_convolution_backward_weight")
def _cudnn_conv_bwd_weight(c: Ctx) -> OpCost | None:
    # old: (weight_size, grad_output, self, padding, stride, dilation, groups, ...)
    a = c.a
    go, x = a.shape(1), a.shape(2)
    size = a.ci(0)
    if not (is_shape(size) and len(size) >= 3):
        od = c.output_dims[0] if c.output_dims else None
        size = od if od is not None and is_shape(od) and len(od) >= 3 else None
    if go is None or size is None:
        return None
    return _conv_bwd(a, go, x, tuple(size), False, [False, True], go_i=1, x_i=2, w_i=1,
                     grad_input_numel=None, grad_weight_numel=prod(size),
                     hyper=(a.ci(4), a.ci(3), a.ci(5), a.ci(6)))
