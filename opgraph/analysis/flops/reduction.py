"""Reduction rules (family ``reduction``): ``sum``, ``mean``, ``prod``, ``amax``/``amin``,
``max``/``min``, ``argmax``/``argmin``, ``any``/``all``, ``logsumexp``, ``var``/``std``,
``norm``.

FLOPs = input elements x k (k = 1; 2 for norms; 3 for var/std/logsumexp). Bytes = input +
output; the output size needs the reduced dims (Concrete Inputs), except for full
reductions. ``max(self, other)`` / ``min(self, other)`` are elementwise and costed as such
(:func:`~opgraph.analysis.flops.elementwise.elementwise_cost`).
"""

from __future__ import annotations

from typing import Any

from opgraph.analysis.flops.args import UNKNOWN, op_dtype, prod
from opgraph.analysis.flops.cost import OpCost, make_cost, mul_bytes, sum_bytes
from opgraph.analysis.flops.elementwise import elementwise_cost
from opgraph.analysis.flops.rule import Ctx, RuleTable
from opgraph.dtypes import DTYPE_CATEGORY

__all__ = ["RULES"]

#: The reduction rules.
RULES = RuleTable("reduction")

_REDUCTIONS: dict[str, tuple[int, int | None, int | None, str]] = {
    # name: (flops per element, dim arg index, keepdim arg index, output dtype rule)
    "aten::sum": (1, 1, 2, "acc_int64"),
    "aten::nansum": (1, 1, 2, "acc_int64"),
    "aten::prod": (1, 1, 2, "acc_int64"),
    "aten::mean": (1, 1, 2, "same"),
    "aten::amax": (1, 1, 2, "same"),
    "aten::amin": (1, 1, 2, "same"),
    "aten::max": (1, 1, 2, "same+index"),
    "aten::min": (1, 1, 2, "same+index"),
    "aten::argmax": (1, 1, 2, "int64"),
    "aten::argmin": (1, 1, 2, "int64"),
    "aten::any": (1, 1, 2, "bool"),
    "aten::all": (1, 1, 2, "bool"),
    "aten::logsumexp": (3, 1, 2, "same"),
    "aten::var": (3, 1, 3, "same"),
    "aten::std": (3, 1, 3, "same"),
    "aten::norm": (2, 2, 3, "same"),
    "aten::linalg_vector_norm": (2, 2, 3, "same"),
}


@RULES.rule(*_REDUCTIONS)
def _reduction(c: Ctx) -> OpCost | None:
    a = c.a
    if c.name in ("aten::max", "aten::min") and a.is_tensor(1):
        return elementwise_cost(c, arith=True)  # max(self, other): elementwise maximum
    xs = a.shape(0)
    if xs is None:
        return None
    k, dim_i, keep_i, rule = _REDUCTIONS[c.name]
    numel = prod(xs)
    nd = len(xs)
    # reduced dims
    dim: Any = None
    if dim_i is not None and dim_i < a.n:
        dim = a.ci(dim_i)
    if c.name in ("aten::max", "aten::min") and not isinstance(dim, int):
        dim = None if dim is not UNKNOWN or a.n == 1 else UNKNOWN
    out_numel: int | None
    if dim is UNKNOWN:
        out_numel = None
    elif dim is None or dim == []:
        out_numel = 1
    else:
        dims = [dim] if isinstance(dim, int) else dim
        if not (isinstance(dims, list) and all(isinstance(d, int) for d in dims)):
            out_numel = None
        else:
            red = {d % nd for d in dims} if nd else set()
            out_numel = prod(s for i, s in enumerate(xs) if i not in red)
    in_dt = a.dtype(0)
    if rule == "same":
        out_size = a.itemsize(0)
    elif rule == "acc_int64":
        out_size = 8 if DTYPE_CATEGORY.get(in_dt or "", 2) <= 1 and in_dt is not None else a.itemsize(0)
    elif rule == "int64":
        out_size = 8
    elif rule == "bool":
        out_size = 1
    else:  # values + int64 indices (only for the dim overloads)
        size = a.itemsize(0)
        out_size = None if size is None else (size + 8 if isinstance(dim, int) else size)
    nbytes = sum_bytes(a.nbytes(0), None if out_numel is None else mul_bytes(out_numel, out_size))
    return make_cost(k * numel, nbytes, op_dtype(a), "reduction")
