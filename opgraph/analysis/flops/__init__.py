"""FLOP and byte models for PyTorch operators recorded in Kineto traces.

Pure functions, no graph code. The entry point is :func:`op_cost`, which takes what a
Kineto ``cpu_op`` event records in its args (``Input Dims``, ``Input type``,
``Concrete Inputs``, ``Input Strides``) and returns an :class:`OpCost`, or ``None`` when
the operator has no model or the recorded arguments are not enough to apply one. Unknown
operators are never guessed.

Units and conventions (all rules):

* ``flops`` is an integer count of floating-point operations; one fused multiply-add is
  **2** FLOPs. Divide by a duration in seconds to get FLOP/s.
* ``bytes`` is an integer count of bytes moved to or from device memory under the
  *perfect-reuse* assumption: every distinct input element is read once and every output
  element is written once (caches are ignored, so real traffic is higher for kernels that
  re-read operands, and lower for inputs that are already cache-resident). Inputs with a
  zero stride (``expand``-ed views, visible in ``Input Strides``) count only their distinct
  elements. Element sizes come from the recorded dtype (bf16/fp16 = 2, fp32 = 4,
  fp64/int64 = 8, fp8 = 1, ...); when any tensor that contributes has an unknown dtype
  string, ``bytes`` is ``None`` (never a silent 1 byte/element).
* ``dtype`` is the canonical dtype name (``fp32``, ``bf16``, ``fp16``, ``fp8_e4m3fn``,
  ``int64``, ...) of the op's largest tensor input by element count, or ``None`` if that
  input's dtype string is unknown.

Operators that usually just call other costed operators (``aten::linear`` ->
``aten::addmm``, ``aten::conv2d`` -> ... -> ``aten::cudnn_convolution``, ``aten::clone`` ->
``aten::copy_``, ``c10d::allreduce_`` -> ``nccl:all_reduce`` ...) are still modelled so that a
top-level view works, but they are listed in :data:`COMPOSITE_OPS`: when summing costs over
a call tree, count only the innermost costed operator.

Defects of Inductor's ``profile_analysis.py`` (seed-algorithms §8 item 10) avoided here:
conv bytes are bytes (not elements); the conv output honours padding, dilation, groups and
transposition; bmm bytes do not count the left operand twice; unknown dtype strings make
bytes unknown instead of 1 byte; the op dtype is chosen by element count (product of
dims), not by the sum of dims, and list-valued dims do not crash.

The modules of this package:

* :mod:`~opgraph.analysis.flops.cost` -- :class:`OpCost` and the byte arithmetic;
* :mod:`~opgraph.analysis.flops.args` -- reading the recorded arguments (shapes, strides,
  dtypes, ``Concrete Inputs``);
* :mod:`~opgraph.analysis.flops.rule` -- the rule interface and a family's rule table;
* :mod:`~opgraph.analysis.flops.registry` -- the explicit list of families, the lookup,
  :func:`op_cost`, :func:`op_family`, :data:`COMPOSITE_OPS`;
* one module per family: :mod:`~opgraph.analysis.flops.gemm`,
  :mod:`~opgraph.analysis.flops.conv`, :mod:`~opgraph.analysis.flops.attention`,
  :mod:`~opgraph.analysis.flops.norm`, :mod:`~opgraph.analysis.flops.softmax`,
  :mod:`~opgraph.analysis.flops.reduction`, :mod:`~opgraph.analysis.flops.elementwise`,
  :mod:`~opgraph.analysis.flops.copies`, :mod:`~opgraph.analysis.flops.embedding`,
  :mod:`~opgraph.analysis.flops.collectives`.
"""

from __future__ import annotations

from opgraph.analysis.flops.args import parse_concrete
from opgraph.analysis.flops.attention import SDPA_BACKWARD_FACTOR
from opgraph.analysis.flops.collectives import collective_bandwidth_gbps, collective_cost
from opgraph.analysis.flops.cost import OpCost
from opgraph.analysis.flops.registry import COMPOSITE_OPS, op_cost, op_cost_from_args, op_family
from opgraph.dtypes import dtype_info, scalar_type_info

__all__ = [
    "OpCost",
    "op_cost",
    "op_cost_from_args",
    "op_family",
    "collective_cost",
    "collective_bandwidth_gbps",
    "dtype_info",
    "scalar_type_info",
    "parse_concrete",
    "COMPOSITE_OPS",
    "SDPA_BACKWARD_FACTOR",
]
