"""Embedding rules (family ``embedding``): ``embedding`` (+ backward), ``embedding_bag``
and the FBGEMM table-batched embedding (TBE) lookups of DLRM / TorchRec traces.

Bytes: indices + offsets (+ per-sample weights) + gathered rows (L x D) + output. FLOPs
for pooled lookups = one add per gathered element (two with per-sample weights, plus one
divide per output element for MEAN pooling); plain ``embedding`` is 0 FLOPs, its backward
one add per grad_output element.
"""

from __future__ import annotations

from opgraph.analysis.flops.args import UNKNOWN, is_shape, op_dtype, prod
from opgraph.analysis.flops.cost import OpCost, make_cost, mul_bytes, sum_bytes
from opgraph.analysis.flops.rule import Ctx, RuleTable

__all__ = ["RULES"]

#: The embedding rules.
RULES = RuleTable("embedding")

@RULES.rule("aten::embedding")
def _embedding(c: Ctx) -> OpCost | None:
    # embedding(weight[V, D], indices, padding_idx, scale_grad_by_freq, sparse)
    a = c.a
    w, idx = a.shape(0), a.shape(1)
    if w is None or idx is None or len(w) != 2:
        return None
    n, d = prod(idx), w[1]
    size = a.itemsize(0)
    nbytes = sum_bytes(a.nbytes(1), mul_bytes(n * d, size), mul_bytes(n * d, size))
    return make_cost(0, nbytes, op_dtype(a), "embedding")


@RULES.rule("aten::embedding_backward", "aten::embedding_dense_backward")
def _embedding_bwd(c: Ctx) -> OpCost | None:
    # (grad_output[..., D], indices, num_weights, padding_idx, scale_grad_by_freq[, sparse])
    a = c.a
    g, idx = a.shape(0), a.shape(1)
    if g is None or idx is None or not g:
        return None
    nw = a.ci(2)
    grad_w = mul_bytes(nw * g[-1], a.itemsize(0)) if isinstance(nw, int) and not isinstance(nw, bool) else None
    return make_cost(prod(g), sum_bytes(a.nbytes(0), a.nbytes(1), grad_w), op_dtype(a),
                     "embedding_backward")


@RULES.rule("aten::embedding_bag", "aten::_embedding_bag",
            "aten::_embedding_bag_forward_only")
def _embedding_bag(c: Ctx) -> OpCost | None:
    # (weight[V, D], indices, offsets, scale_grad_by_freq, mode, sparse,
    #  per_sample_weights?, include_last_offset, padding_idx)
    a = c.a
    w, idx = a.shape(0), a.shape(1)
    if w is None or idx is None or len(w) != 2:
        return None
    notes = []
    d, l = w[1], prod(idx)
    if len(idx) == 2:
        b = idx[0]
    else:
        offs = a.shape(2)
        if offs is None:
            return None
        ilo = a.ci(7)
        if not isinstance(ilo, bool):
            notes.append("include_last_offset not recorded: assumed False")
            ilo = False
        b = prod(offs) - (1 if ilo else 0)
    mode = a.ci(4)
    if not isinstance(mode, int) or isinstance(mode, bool):
        notes.append("mode not recorded: assumed sum")
        mode = 0
    weighted = a.is_tensor(6)
    flops = l * d * (2 if weighted else 1) + (b * d if mode == 1 else 0)
    size = a.itemsize(0)
    nbytes = sum_bytes(a.nbytes(1), a.nbytes(2), a.nbytes(6), mul_bytes(l * d, size),
                       mul_bytes(b * d, size))
    return make_cost(flops, nbytes, op_dtype(a), "embedding_bag", notes)


# FBGEMM table-batched embedding (TBE) lookups, as in DLRM / TorchRec traces:
#   fbgemm::split_embedding_codegen_lookup_<optimizer>_function(
#     placeholder_autograd_tensor, dev_weights, uvm_weights, lxu_cache_weights,
#     weights_placements, weights_offsets, D_offsets, total_D, max_D, hash_size_cumsum,
#     total_hash_size_bits, indices, offsets, pooling_mode, indice_weights?, ...)
#   fbgemm::dense_embedding_codegen_lookup_function(
#     dev_weights, weights_offsets, D_offsets, total_D, max_D, hash_size_cumsum,
#     total_hash_size_bits, indices, offsets, pooling_mode, indice_weights?,
#     feature_requires_grad?, output_dtype)
# T = len(D_offsets) - 1 tables, B = (len(offsets) - 1) / T, L = len(indices).
# pooling_mode: 0 SUM, 1 MEAN, 2 NONE (sequence). output_dtype (SparseType): 0 FP32,
# 1 FP16, 5 BF16 (FP32 by default).

_SPARSE_TYPE_SIZE = {0: 4, 1: 2, 5: 2}


def _tbe(c: Ctx, *, w: int, uvm: int | None, d_off: int, total_d: int, max_d: int, ind: int,
         off: int, pool: int, iw: int, out_dtype: int | None) -> OpCost | None:
    a = c.a
    d_offsets, indices, offsets = a.shape(d_off), a.shape(ind), a.shape(off)
    if d_offsets is None or indices is None or offsets is None:
        return None
    t = prod(d_offsets) - 1
    bt = prod(offsets) - 1
    if t <= 0 or bt < 0 or bt % t:
        return None
    b, l = bt // t, prod(indices)
    notes: list[str] = []
    tot_d, mx_d, pm = a.ci(total_d), a.ci(max_d), a.ci(pool)
    od = c.output_dims[0] if c.output_dims else None
    if not isinstance(tot_d, int) and od is not None and is_shape(od) and len(od) == 2 and od[0] == b:
        tot_d = od[1]
        notes.append("total_D taken from output_dims")
        if not isinstance(pm, int):
            pm = 0
            notes.append("pooling_mode not recorded: assumed SUM (pooled output)")
    if not isinstance(pm, int) or isinstance(pm, bool):
        return None
    # weights dtype: device weights, or UVM weights when the device tensor is empty
    wi = w if a.numel(w) > 0 or uvm is None else uvm
    w_size = a.itemsize(wi)
    code = a.ci(out_dtype) if out_dtype is not None else UNKNOWN
    if isinstance(code, int) and not isinstance(code, bool):
        out_size = _SPARSE_TYPE_SIZE.get(code)
    else:
        out_size = 4
        notes.append("output_dtype not recorded: assumed FP32 (the TBE default)")
    weighted = a.is_tensor(iw)
    if pm == 2:  # NONE: one D-wide row per index
        if not isinstance(mx_d, int):
            return None
        rows: float = l * mx_d
        flops = rows if weighted else 0
        out_elems = l * mx_d
    else:
        if not isinstance(tot_d, int) or tot_d <= 0:
            return None
        if isinstance(mx_d, int) and mx_d * t != tot_d:
            notes.append("tables of different D: indices assumed spread evenly over tables")
        rows = l * tot_d / t
        flops = rows * (2 if weighted else 1) + (b * tot_d if pm == 1 else 0)
        out_elems = b * tot_d
    nbytes = sum_bytes(a.nbytes(ind), a.nbytes(off), a.nbytes(iw),
                       mul_bytes(int(round(rows)), w_size), mul_bytes(out_elems, out_size))
    return make_cost(flops, nbytes, op_dtype(a), "tbe_lookup", notes)


@RULES.pattern(r"^fbgemm::split_embedding_codegen_lookup_[a-z0-9_]+_function(_cpu)?$")
def _tbe_split(c: Ctx) -> OpCost | None:
    return _tbe(c, w=1, uvm=2, d_off=6, total_d=7, max_d=8, ind=11, off=12, pool=13, iw=14,
                out_dtype=None)


@RULES.rule("fbgemm::dense_embedding_codegen_lookup_function")
def _tbe_dense(c: Ctx) -> OpCost | None:
    return _tbe(c, w=0, uvm=None, d_off=2, total_d=3, max_d=4, ind=7, off=8, pool=9, iw=10,
                out_dtype=12)
