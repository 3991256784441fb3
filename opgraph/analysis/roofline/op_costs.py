"""The cost of every ``cpu_op`` (FLOPs, bytes, rule, family, dtype, problem size) from its
recorded shapes, and which costed ops are **counted** (own the work of their activities).

Costs come from :func:`opgraph.analysis.flops.op_cost_from_args`, computed once per
distinct (name, shapes, types, concrete inputs, strides, output shapes); convolutions
the arguments cannot cost alone get a second chance in
:mod:`~opgraph.analysis.roofline.conv_context`. Units: FLOPs and bytes (ints)."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np
import orjson

from opgraph.exact_json import exact_default
from opgraph.analysis.flops import COMPOSITE_OPS, OpCost, op_cost_from_args, op_family
from opgraph.analysis.roofline.columns import TraceColumns
from opgraph.analysis.roofline.conv_context import conv_context
from opgraph.analysis.roofline.objects import isin_obj, map_distinct
from opgraph.model.tree import mark_ancestors


@dataclass
class OpCosts:
    """Per node position of a :class:`TraceColumns` (values only at costed ``cpu_op`` s)."""

    flops: np.ndarray      # int64 per position (0 where no cost)
    bytes: np.ndarray      # int64 per position (-1 where unknown / no cost)
    costed: np.ndarray     # bool
    model: np.ndarray      # object: rule name or None
    family: np.ndarray     # object
    dtype: np.ndarray      # object
    collective: np.ndarray  # bool
    problem: np.ndarray    # object: OpCost.problem (GEMM/conv/attention problem size) or None


def world_size(graph: Mapping[str, Any]) -> int | None:
    """The job's world size from the trace's ``distributed_info`` (costs collectives), or None."""
    di = graph.get("distributed_info") or {}
    return di.get("world_size") if isinstance(di.get("world_size"), int) else None


def cost_ops(c: TraceColumns, world_size: int | None) -> OpCosts:
    """Cost every ``cpu_op`` of ``c`` that has a family and recorded ``Input Dims``; an op
    whose rule cannot use its arguments stays uncosted (no model)."""
    n = c.n
    flops = np.zeros(n, dtype=np.int64)
    nbytes = np.full(n, -1, dtype=np.int64)
    costed = np.zeros(n, dtype=bool)
    model = np.full(n, None, dtype=object)
    family = np.full(n, None, dtype=object)
    dtype = np.full(n, None, dtype=object)
    coll = np.zeros(n, dtype=bool)
    problem = np.full(n, None, dtype=object)
    cpu = np.flatnonzero(c.is_cpu_op)
    if not len(cpu):
        return OpCosts(flops, nbytes, costed, model, family, dtype, coll, problem)
    fam = map_distinct(c.name[cpu], lambda nm: op_family(nm) if isinstance(nm, str) else None)
    family[cpu] = fam
    cand = cpu[fam != None]  # noqa: E711
    res = _costs_from_args(c.name[cand].tolist(), c.args[cand].tolist(), world_size)
    res = conv_context(c, cand, res, world_size)
    for p, oc in zip(cand.tolist(), res):
        if oc is None:
            continue
        costed[p] = True
        flops[p] = oc.flops
        nbytes[p] = -1 if oc.bytes is None else oc.bytes
        model[p] = oc.model
        dtype[p] = oc.dtype
        coll[p] = oc.collective is not None
        problem[p] = oc.problem
    return OpCosts(flops, nbytes, costed, model, family, dtype, coll, problem)


def _costs_from_args(names: list[Any], argl: list[Any], world_size: int | None) -> list[OpCost | None]:
    """:func:`op_cost_from_args` per op, once per distinct name and shape arguments."""
    cache: dict[tuple[str, bytes], OpCost | None] = {}
    res: list[OpCost | None] = []
    dumps = functools.partial(orjson.dumps, default=exact_default)
    for nm, a in zip(names, argl):
        if not a:
            res.append(None)
            continue
        dims = a.get("Input Dims", a.get("Input dims"))
        if dims is None:
            res.append(None)
            continue
        try:
            key = (nm, dumps((dims, a.get("Input type"), a.get("Concrete Inputs"), a.get("Input Strides"),
                              a.get("Output Dims", a.get("Output dims")))))
        except TypeError:
            key = None
        if key is not None and key in cache:
            res.append(cache[key])
            continue
        oc = op_cost_from_args(nm, a, world_size=world_size)
        if key is not None:
            cache[key] = oc
        res.append(oc)
    return res


def counted_ops(c: TraceColumns, oc: OpCosts) -> tuple[np.ndarray, np.ndarray]:
    """(composite, counted) per position: ``composite`` marks the ``cpu_op`` s in
    :data:`~opgraph.analysis.flops.COMPOSITE_OPS`; an op is counted when it is costed,
    unless it is a composite with a costed op somewhere beneath it."""
    composite = np.zeros(c.n, dtype=bool)
    cpu_idx = np.flatnonzero(c.is_cpu_op)
    composite[cpu_idx] = isin_obj(c.name[cpu_idx], COMPOSITE_OPS)
    has_costed_below = mark_ancestors(np.flatnonzero(oc.costed), c.parent, c.n)
    counted = oc.costed & ~(composite & has_costed_below)
    return composite, counted
