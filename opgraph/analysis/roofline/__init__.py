"""Roofline attribution: FLOPs and bytes of operators, given to the GPU activities that do
the work, with achieved rates against the device peaks (docs/roofline.md).

Pure analysis: takes a graph (or :class:`TraceColumns`, or the column payload ``opgraph
build`` makes) and returns DataFrames; nothing is printed or written here. Units: times
in ns in the frames and µs in the report tables, FLOPs and bytes as ints, rates in
TFLOP/s and GB/s, shares of peak in %.

Attribution rule (the invariant is ``Σ activity FLOPs == Σ FLOPs of the counted ops that
own activities``, and the same for bytes):

1. Every ``cpu_op`` with recorded shapes is costed with
   :func:`opgraph.analysis.flops.op_cost_from_args`. An op that has no rule, or whose
   arguments are not enough for it, has **no model**; nothing is guessed.
2. An op is **counted** when it has a cost, unless it is a composite
   (:data:`~opgraph.analysis.flops.COMPOSITE_OPS`, e.g. ``aten::linear``) with a costed
   op somewhere beneath it (``nest`` edges): then the work is counted at the innermost
   costed ops instead. Counted ops never nest inside each other's counts twice: a
   non-composite costed op is counted even when a costed op runs beneath it (the child
   owns its own kernels, see 3).
3. Each device activity (kernel, memcpy, memset) belongs to the **innermost counted op**
   above the runtime call that launched it (``launch`` edge, then ``nest`` parents); when
   the activity has no launch edge, its ``External id`` is matched to a ``cpu_op`` carrying
   the same id (the link Inductor's ``profile_analysis`` uses). The op's FLOPs and bytes
   are split over its **work activities** in proportion to their durations (integer split,
   remainders to the longest one, so sums are exact). For GEMM, convolution and attention
   ops the work activities are the kernels whose names look like matrix/conv/attention
   kernels (not elementwise, fill, copy, layout-transform or split-K reduce helpers); when
   none matches, and for every other family, all the op's activities share the work.
4. A kernel that already carries a nonzero ``kernel_flop`` / ``kernel_num_gb`` in its args
   (Inductor/Triton benchmark builds) keeps those values and takes no share of its op
   (the op's cost goes to its other activities, if any).

dtype of an activity: its op's dtype (largest tensor input, ``Input type``), else the
kernel name (``bf16``, ``c10::Half``, ``sgemm`` ...), else the caller's default, else
unknown. fp32 GEMM/conv kernels whose names show TF32 tensor-core math use the TF32 peak.
Device: the ``deviceProperties`` entry of the activity's device (fuzzy table lookup), or
the caller's override. Peaks are the dense datasheet rates.

Modules, in the order :func:`roofline` (``run``) uses them: ``columns`` (and
``table_links`` for a raw event table), ``op_costs`` (with ``conv_context``),
``attribution`` (with ``tree`` and ``kernel_names``), ``activity_dtypes``, ``devices``,
``rates``, ``frames``, ``result``; report shaping: ``tables``, ``summary``, ``report``,
``trace_args``; ``objects`` holds object-array helpers.
"""

from __future__ import annotations

from opgraph.analysis.roofline.attribution import ATTRIBUTED_KINDS, split_shares
from opgraph.analysis.roofline.columns import TraceColumns
from opgraph.analysis.roofline.conv_context import eval_shape
from opgraph.analysis.roofline.devices import DeviceInfo, resolve_devices
from opgraph.analysis.roofline.kernel_names import kernel_name_dtype, work_kernel_mask
from opgraph.analysis.roofline.objects import isin_obj
from opgraph.analysis.roofline.rates import BOUNDS
from opgraph.analysis.roofline.report import report_doc
from opgraph.analysis.roofline.result import RooflineResult
from opgraph.analysis.roofline.run import roofline
from opgraph.analysis.roofline.summary import summarize
from opgraph.analysis.roofline.tables import group_table, no_model_table
from opgraph.analysis.roofline.trace_args import augment_args

__all__ = [
    "ATTRIBUTED_KINDS", "BOUNDS", "TraceColumns", "RooflineResult", "DeviceInfo", "roofline",
    "resolve_devices", "kernel_name_dtype", "work_kernel_mask", "augment_args", "summarize",
    "group_table", "no_model_table", "report_doc", "isin_obj", "eval_shape", "split_shares",
]

#: The old private name of :func:`split_shares` (tests/test_roofline.py imports it).
_split = split_shares
