"""Copy and data-movement rules (family ``copy``): ``copy_``, ``_to_copy``, ``clone``,
``fill_`` / ``zero_``, ``masked_fill``, ``cat`` and ``index_select``.

FLOPs = 0 (model ``copy``; ``index_select`` is model ``gather``). Bytes = distinct
elements read + elements written, each in its own dtype (the target dtype for
``_to_copy``); ``cat`` records no dtypes for its tensor list, so its bytes are unknown.
"""

from __future__ import annotations

from opgraph.analysis.flops.args import UNKNOWN, op_dtype, prod
from opgraph.analysis.flops.cost import OpCost, make_cost, mul_bytes, sum_bytes
from opgraph.analysis.flops.elementwise import elementwise_cost
from opgraph.analysis.flops.rule import Ctx, RuleTable
from opgraph.dtypes import scalar_type_info

__all__ = ["RULES"]

#: The copy rules.
RULES = RuleTable("copy")

_COPY_FILL = {"fill_", "zero_"}


@RULES.rule("aten::copy_")
def _copy(c: Ctx) -> OpCost | None:
    # copy_(self, src, non_blocking): read src (distinct elements), write self
    a = c.a
    dst = a.shape(0)
    if dst is None or not a.is_tensor(1):
        return None
    nbytes = sum_bytes(a.nbytes(1), mul_bytes(prod(dst), a.itemsize(0)))
    return make_cost(0, nbytes, op_dtype(a), "copy")


@RULES.rule("aten::_to_copy")
def _to_copy(c: Ctx) -> OpCost | None:
    # _to_copy(self, dtype?, layout?, device?, pin_memory?, non_blocking, memory_format?)
    a = c.a
    xs = a.shape(0)
    if xs is None:
        return None
    notes = []
    code = a.ci(1)
    if isinstance(code, int) and not isinstance(code, bool):
        info = scalar_type_info(code)
        out_size = info[1] if info else None
    else:
        out_size = a.itemsize(0)
        if code is UNKNOWN:
            notes.append("target dtype not recorded: assumed unchanged")
    nbytes = sum_bytes(a.nbytes(0), mul_bytes(prod(xs), out_size))
    return make_cost(0, nbytes, op_dtype(a), "copy", notes)


@RULES.rule("aten::clone")
def _clone(c: Ctx) -> OpCost | None:
    a = c.a
    xs = a.shape(0)
    if xs is None:
        return None
    return make_cost(0, sum_bytes(a.nbytes(0), mul_bytes(prod(xs), a.itemsize(0))),
                     op_dtype(a), "copy")


@RULES.rule(*(f"aten::{n}" for n in _COPY_FILL))
def _fill(c: Ctx) -> OpCost | None:
    # write-only: self is overwritten (a 0-dim tensor value, if any, is read)
    a = c.a
    xs = a.shape(0)
    if xs is None:
        return None
    extra = [a.nbytes(i) for i in a.tensor_indices() if i != 0]
    return make_cost(0, sum_bytes(mul_bytes(prod(xs), a.itemsize(0)), *extra), op_dtype(a), "copy")


@RULES.rule("aten::masked_fill", "aten::masked_fill_")
def _masked_fill(c: Ctx) -> OpCost | None:
    return elementwise_cost(c, arith=False)


@RULES.rule("aten::cat", "aten::_cat")
def _cat(c: Ctx) -> OpCost | None:
    # cat(tensors, dim): bytes = 2 x sum of inputs; dtypes of TensorList are not recorded
    a = c.a
    tl = a.tensor_list(0)
    if tl is None:
        return None
    return make_cost(0, None, None, "copy")


@RULES.rule("aten::index_select")
def _index_select(c: Ctx) -> OpCost | None:
    # index_select(self, dim, index): gather rows; reads the selected slices, writes them
    a = c.a
    xs, idx = a.shape(0), a.shape(2)
    if xs is None or idx is None:
        return None
    dim = a.ci(1)
    if not isinstance(dim, int) or isinstance(dim, bool):
        if len(xs) != 1:
            return None
        dim = 0
    if not xs:
        return None
    dim %= len(xs)
    out_numel = prod(xs) // xs[dim] * prod(idx) if xs[dim] else 0
    size = a.itemsize(0)
    nbytes = sum_bytes(a.nbytes(2), mul_bytes(out_numel, size), mul_bytes(out_numel, size))
    return make_cost(0, nbytes, op_dtype(a), "gather")
