"""The rule registry: every family's :class:`~opgraph.analysis.flops.rule.RuleTable`,
listed explicitly in :data:`FAMILY_TABLES`, the lookup of an operator's rule
(:func:`lookup_rule`, :func:`op_family`), the entry points :func:`op_cost` and
:func:`op_cost_from_args`, and :data:`COMPOSITE_OPS`.

Units: :func:`op_cost` returns an :class:`~opgraph.analysis.flops.cost.OpCost` (integer
FLOPs, FMA = 2; bytes under perfect reuse, ``None`` when a dtype is unknown).
"""

from __future__ import annotations

import re
from typing import Any, Mapping

from opgraph.analysis.flops import (
    attention,
    collectives,
    conv,
    copies,
    elementwise,
    embedding,
    gemm,
    norm,
    reduction,
    softmax,
)
from opgraph.analysis.flops.args import Args
from opgraph.analysis.flops.cost import OpCost
from opgraph.analysis.flops.rule import Ctx, Rule, RuleTable

__all__ = ["FAMILY_TABLES", "COMPOSITE_OPS", "lookup_rule", "op_family", "op_cost", "op_cost_from_args"]

#: The rule tables of all families. An operator name is looked up among the exact names of
#: all tables first (a name listed by two tables goes to the later one), then among the
#: name patterns in this order.
FAMILY_TABLES: tuple[RuleTable, ...] = (
    gemm.RULES,
    conv.RULES,
    attention.RULES,
    norm.RULES,
    softmax.RULES,
    reduction.RULES,
    elementwise.RULES,
    copies.RULES,
    embedding.RULES,
    collectives.RULES,
)


def _merge(tables: tuple[RuleTable, ...]) -> tuple[dict[str, tuple[str, Rule]],
                                                   list[tuple[re.Pattern[str], str, Rule]]]:
    exact: dict[str, tuple[str, Rule]] = {}
    patterns: list[tuple[re.Pattern[str], str, Rule]] = []
    for table in tables:
        for name, fn in table.exact.items():
            exact[name] = (table.family, fn)
        patterns.extend((pat, table.family, fn) for pat, fn in table.patterns)
    return exact, patterns


_RULES, _PATTERN_RULES = _merge(FAMILY_TABLES)


def lookup_rule(name: str) -> tuple[str, Rule] | None:
    """``(family, rule)`` of the operator *name*: its exact name first, else the first
    matching name pattern; ``None`` if the operator has no model."""
    hit = _RULES.get(name)
    if hit is not None:
        return hit
    for pat, fam, fn in _PATTERN_RULES:
        if pat.match(name):
            return fam, fn
    return None


def op_family(name: str) -> str | None:
    """Family of the rule that models *name* (``gemm``, ``conv``, ``attention``, ``norm``,
    ``softmax``, ``reduction``, ``elementwise``, ``copy``, ``embedding``,
    ``collective``), or ``None`` if the operator has no model."""
    hit = lookup_rule(name)
    return hit[0] if hit else None


def op_cost(
    name: str,
    input_dims: list,
    input_types: list,
    concrete_inputs: list | None,
    input_strides: list | None = None,
    *,
    world_size: int | None = None,
    output_dims: list | None = None,
) -> OpCost | None:
    """FLOPs and bytes of one operator call, from the args of a Kineto ``cpu_op`` event.

    Args:
        name: the event name, e.g. ``"aten::addmm"``, ``"nccl:all_reduce"``.
        input_dims: ``args["Input Dims"]`` (``"Input dims"`` in old traces): one shape per
            argument, ``[]`` for non-tensors, a list of shapes for TensorList arguments.
        input_types: ``args["Input type"]``: dtype strings (``"float"``,
            ``"c10::BFloat16"``, ``"long int"``, ...) or markers (``"Scalar"``,
            ``"ScalarList"``, ``""``). May be empty (old traces): bytes are then unknown.
        concrete_inputs: ``args["Concrete Inputs"]`` (strings such as ``"[2, 2]"``,
            ``"False"``) or ``None`` when the trace did not record them. Rules that need a
            hyper-parameter (conv stride, ...) return ``None`` without it.
        input_strides: ``args["Input Strides"]``; used to count broadcast (stride-0)
            inputs once.
        world_size: size of the process group, for collectives (a group size recorded in
            the op's own arguments takes precedence).
        output_dims: output shapes when known from elsewhere (e.g. old traces'
            ``Output Dims``, or the grad-output shape of the matching backward op). Used
            only by rules that cannot derive the output from the inputs (conv without
            stride/padding, FBGEMM lookups without ``total_D``).

    Returns:
        An :class:`OpCost`, or ``None`` when there is no model for *name* or the recorded
        arguments are insufficient. Never raises on malformed arguments.
    """
    hit = lookup_rule(name)
    if hit is None:
        return None
    try:
        ctx = Ctx(name, Args(input_dims, input_types, concrete_inputs, input_strides),
                  world_size, output_dims)
        return hit[1](ctx)
    except (TypeError, ValueError, IndexError, ZeroDivisionError, KeyError):
        return None


def op_cost_from_args(name: str, args: Mapping[str, Any], *, world_size: int | None = None) -> OpCost | None:
    """:func:`op_cost` on a raw Kineto ``args`` dict (handles the ``Input dims`` spelling)."""
    dims = args.get("Input Dims", args.get("Input dims"))
    if dims is None:
        return None
    out = args.get("Output Dims", args.get("Output dims")) or None
    return op_cost(name, dims, args.get("Input type") or [], args.get("Concrete Inputs"),
                   args.get("Input Strides"), world_size=world_size, output_dims=out)


#: Operators whose work is normally done by costed child operators recorded beneath them
#: (same thread, nested range). When summing costs over a call tree, count only the
#: innermost costed operator.
COMPOSITE_OPS: frozenset[str] = frozenset(
    {
        "aten::linear", "aten::matmul", "vllm::rocm_unquantized_gemm",
        "aten::conv1d", "aten::conv2d", "aten::conv3d", "aten::conv_transpose1d",
        "aten::conv_transpose2d", "aten::conv_transpose3d", "aten::convolution",
        "aten::_convolution", "aten::cudnn_convolution_backward",
        "aten::scaled_dot_product_attention", "aten::_scaled_dot_product_flash_attention",
        "aten::_scaled_dot_product_efficient_attention",
        "aten::layer_norm", "aten::rms_norm", "aten::group_norm", "aten::batch_norm",
        "aten::_batch_norm_impl_index", "aten::softmax", "aten::log_softmax",
        "aten::_to_copy", "aten::clone", "aten::embedding", "aten::embedding_backward",
        "aten::embedding_bag",
        "c10d::allreduce_", "c10d::allreduce_coalesced_", "c10d::_allgather_base_",
        "c10d::allgather_", "c10d::allgather_into_tensor_coalesced_",
        "c10d::_reduce_scatter_base_", "c10d::reduce_scatter_",
        "c10d::reduce_scatter_tensor_coalesced_", "c10d::alltoall_base_", "c10d::alltoall_",
        "c10d::broadcast_", "c10d::reduce_", "c10d::send", "c10d::recv_",
    }
)
