"""Attention rules (family ``attention``): ``scaled_dot_product_attention`` and its
flash / efficient / cuDNN / fused / CPU kernels, forward and backward.

Forward FLOPs = 2*B*H*Sq*Skv*(Dqk + Dv) (= 4*B*H*Sq*Skv*D for Dqk == Dv): the QK^T and PV
matmuls; softmax is not counted. With is_causal recorded True the count is halved (the
causal triangle). Backward = :data:`SDPA_BACKWARD_FACTOR` (2.5) x forward, the
FlashAttention convention (5 matmuls, counting the recomputation of QK^T: Dao,
"FlashAttention-2", arXiv 2307.08691, Sec. 4; flash-attention
benchmarks/benchmark_flash_attention.py; equally torch/utils/flop_counter.py
sdpa_backward_flop_count, 5 bmm = 2.5 x sdpa_flop_count). Bytes = q, k, v (+ mask / bias)
read and the output written (backward: grad_out, out, q, k, v read and dq, dk, dv
written). Each cost carries the problem size ``B H Sq Sk D Dv causal``.
"""

from __future__ import annotations

from typing import Any, Sequence

from opgraph.analysis.flops.args import op_dtype, prod
from opgraph.analysis.flops.cost import OpCost, make_cost, mul_bytes, sum_bytes
from opgraph.analysis.flops.rule import Ctx, RuleTable

__all__ = ["RULES", "SDPA_BACKWARD_FACTOR"]

#: The attention rules.
RULES = RuleTable("attention")

#: Backward/forward FLOP ratio for attention (see the module docstring).
SDPA_BACKWARD_FACTOR = 2.5


def _attn(c: Ctx, *, q: int, k: int, v: int, layout: str, causal: Any, causal_kind: str,
          extra_read: Sequence[int] = (), backward: bool = False, go: int | None = None,
          out: int | None = None, varlen: int | None = None) -> OpCost | None:
    a = c.a
    qs, ks, vs = a.shape(q), a.shape(k), a.shape(v)
    if qs is None or ks is None or vs is None:
        return None
    if varlen is not None and a.is_tensor(varlen):
        return None  # packed variable-length batch: per-sequence lengths are not recorded
    if layout == "bshd":
        if len(qs) != 4 or len(ks) != 4 or len(vs) != 4:
            return None
        bh, sq, d = qs[0] * qs[2], qs[1], qs[3]
        skv, dv = ks[1], vs[3]
        b_, h_ = qs[0], qs[2]
    else:  # [..., S, D] with batch and heads leading
        if len(qs) < 2 or len(ks) < 2 or len(vs) < 2:
            return None
        bh, sq, d = prod(qs[:-2]), qs[-2], qs[-1]
        skv, dv = ks[-2], vs[-1]
        b_, h_ = prod(qs[:-3]), (qs[-3] if len(qs) >= 3 else 1)
    if ks[-1] != d:
        return None
    notes: list[str] = []
    flops = 2 * bh * sq * skv * (d + dv)
    if causal_kind == "mask_type":  # efficient attention: 0 none, 1/2 causal variants
        is_causal = causal in (1, 2) if isinstance(causal, int) and not isinstance(causal, bool) else None
    else:
        is_causal = causal if isinstance(causal, bool) else None
    if is_causal is None:
        notes.append("is_causal not recorded: counted as non-causal")
    elif is_causal:
        flops //= 2
    size = a.itemsize(q)
    out_bytes = mul_bytes(bh * sq * dv, size)
    if backward:
        flops = int(flops * SDPA_BACKWARD_FACTOR)
        nbytes = sum_bytes(a.nbytes(go) if go is not None else 0,
                           a.nbytes(out) if out is not None else 0,
                           a.nbytes(q), a.nbytes(k), a.nbytes(v),          # read
                           a.nbytes(q), a.nbytes(k), a.nbytes(v),          # dq, dk, dv
                           *(a.nbytes(i) for i in extra_read))
    else:
        nbytes = sum_bytes(a.nbytes(q), a.nbytes(k), a.nbytes(v), out_bytes,
                           *(a.nbytes(i) for i in extra_read))
    return make_cost(flops, nbytes, op_dtype(a), "sdpa_backward" if backward else "sdpa", notes,
                     problem={"B": b_, "H": h_, "Sq": sq, "Sk": skv, "D": d, "Dv": dv, "causal": is_causal})


@RULES.rule("aten::scaled_dot_product_attention")
def _sdpa(c: Ctx) -> OpCost | None:
    # (query, key, value, attn_mask?, dropout_p, is_causal, scale?, enable_gqa)
    return _attn(c, q=0, k=1, v=2, layout="bhsd", causal=c.a.ci(5), causal_kind="bool",
                 extra_read=(3,))


@RULES.rule("aten::_scaled_dot_product_flash_attention",
            "aten::_scaled_dot_product_flash_attention_for_cpu")
def _sdpa_flash(c: Ctx) -> OpCost | None:
    # (query, key, value, dropout_p, is_causal, ...)
    return _attn(c, q=0, k=1, v=2, layout="bhsd", causal=c.a.ci(4), causal_kind="bool")


@RULES.rule("aten::_scaled_dot_product_efficient_attention",
            "aten::_scaled_dot_product_cudnn_attention")
def _sdpa_eff(c: Ctx) -> OpCost | None:
    # (query, key, value, attn_bias?, compute_log_sumexp, dropout_p, is_causal, ...)
    return _attn(c, q=0, k=1, v=2, layout="bhsd", causal=c.a.ci(6), causal_kind="bool",
                 extra_read=(3,))


@RULES.rule("aten::_scaled_dot_product_fused_attention_overrideable")
def _sdpa_fused(c: Ctx) -> OpCost | None:
    # (query, key, value, attn_bias?, dropout_p, is_causal, return_debug_mask, scale?)
    return _attn(c, q=0, k=1, v=2, layout="bhsd", causal=c.a.ci(5), causal_kind="bool",
                 extra_read=(3,))


@RULES.rule("aten::_flash_attention_forward")
def _flash_fwd(c: Ctx) -> OpCost | None:
    # (query[B,S,H,D], key, value, cum_seq_q?, cum_seq_k?, max_q, max_k, dropout_p, is_causal, ...)
    return _attn(c, q=0, k=1, v=2, layout="bshd", causal=c.a.ci(8), causal_kind="bool", varlen=3)


@RULES.rule("aten::_efficient_attention_forward")
def _eff_fwd(c: Ctx) -> OpCost | None:
    # (query[B,S,H,D], key, value, bias?, cu_seqlens_q?, cu_seqlens_k?, max_seqlen_q,
    #  max_seqlen_k, dropout_p, custom_mask_type, ...)
    return _attn(c, q=0, k=1, v=2, layout="bshd", causal=c.a.ci(9), causal_kind="mask_type",
                 extra_read=(3,), varlen=4)


@RULES.rule("aten::_scaled_dot_product_flash_attention_backward")
def _sdpa_flash_bwd(c: Ctx) -> OpCost | None:
    # (grad_out, query, key, value, out, logsumexp, cum_seq_q, cum_seq_k, max_q, max_k,
    #  dropout_p, is_causal, ...)
    return _attn(c, q=1, k=2, v=3, layout="bhsd", causal=c.a.ci(11), causal_kind="bool",
                 backward=True, go=0, out=4)


@RULES.rule("aten::_scaled_dot_product_efficient_attention_backward")
def _sdpa_eff_bwd(c: Ctx) -> OpCost | None:
    # (grad_out, query, key, value, attn_bias, out, logsumexp, philox_seed, philox_offset,
    #  dropout_p, grad_input_mask, is_causal, ...)
    return _attn(c, q=1, k=2, v=3, layout="bhsd", causal=c.a.ci(11), causal_kind="bool",
                 backward=True, go=0, out=5, extra_read=(4,))


@RULES.rule("aten::_scaled_dot_product_cudnn_attention_backward")
def _sdpa_cudnn_bwd(c: Ctx) -> OpCost | None:
    # (grad_out, query, key, value, out, logsumexp, philox_seed, philox_offset, attn_bias,
    #  cum_seq_q, cum_seq_k, max_q, max_k, dropout_p, is_causal, ...)
    return _attn(c, q=1, k=2, v=3, layout="bhsd", causal=c.a.ci(14), causal_kind="bool",
                 backward=True, go=0, out=4, extra_read=(8,))


@RULES.rule("aten::_scaled_dot_product_flash_attention_for_cpu_backward")
def _sdpa_cpu_bwd(c: Ctx) -> OpCost | None:
    # (grad_out, query, key, value, out, logsumexp, dropout_p, is_causal, ...)
    return _attn(c, q=1, k=2, v=3, layout="bhsd", causal=c.a.ci(7), causal_kind="bool",
                 backward=True, go=0, out=4)


@RULES.rule("aten::_flash_attention_backward")
def _flash_bwd(c: Ctx) -> OpCost | None:
    # (grad_out, query[B,S,H,D], key, value, out, logsumexp, cum_seq_q, cum_seq_k, max_q,
    #  max_k, dropout_p, is_causal, ...)
    return _attn(c, q=1, k=2, v=3, layout="bshd", causal=c.a.ci(11), causal_kind="bool",
                 backward=True, go=0, out=4, varlen=6)


@RULES.rule("aten::_efficient_attention_backward")
def _eff_bwd(c: Ctx) -> OpCost | None:
    # (grad_out, query[B,S,H,D], key, value, bias?, out, cu_seqlens_q?, cu_seqlens_k?,
    #  max_seqlen_q, max_seqlen_k, logsumexp, dropout_p, philox_seed, philox_offset,
    #  custom_mask_type, ...)
    return _attn(c, q=1, k=2, v=3, layout="bshd", causal=c.a.ci(14), causal_kind="mask_type",
                 backward=True, go=0, out=5, extra_read=(4,), varlen=6)
