"""The result of the roofline analysis (:class:`RooflineResult`): the per-activity and
per-op frames (ns, FLOPs, bytes, TFLOP/s, GB/s), the devices used, and the problem sizes
and args of the counted GEMM / convolution / attention ops; its tables are in µs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Mapping

import pandas as pd

from opgraph.analysis.display import TableResult
from opgraph.analysis.roofline.devices import DeviceInfo
from opgraph.analysis.roofline.summary import summarize
from opgraph.analysis.roofline.tables import group_table


@dataclass(repr=False)
class RooflineResult(TableResult):
    """Per-activity and per-op attribution. ``tables()``: ``by_kernel`` and ``by_op``
    (:func:`group_table`, µs), ``kernels`` and ``ops`` (the frames below).

    ``kernels``: one row per device activity (kernel, memcpy, memset), columns ``eid kind
    name device ts_ns dur_ns op_eid op_name launcher_eid launcher_name model family
    collective flops bytes dtype dtype_source flop_source work peak_tflops peak_gbps
    achieved_tflops achieved_gbps pct_peak_flops pct_peak_bw arithmetic_intensity bound``.
    ``flops`` / ``bytes`` are nullable ``Int64`` (``<NA>`` = no model / unknown); ``model``
    is ``None`` for activities with no model.

    ``ops``: one row per ``cpu_op`` that has a cost or launches activities: ``eid name
    model family composite counted flops bytes dtype kernels owned gpu_ns attributed_flops
    attributed_bytes`` and the achieved columns over ``gpu_ns`` (the op's activities).
    ``kernels`` counts the activities the op owns (else launches, for ops without a
    model); ``owned`` those that took their FLOPs/bytes from the op (not from the trace).

    ``problems``: op ``eid`` -> the problem size its rule read (``OpCost.problem``: GEMM
    ``B M N K``, attention ``B H Sq Sk D Dv causal``, convolution ``N C H W K R S ...``),
    for the counted GEMM / attention / convolution ops that have one; ``op_args``: op
    ``eid`` -> its recorded args, for every counted op of those families (both used by
    :mod:`opgraph.analysis.shapes`).
    """

    kernels: pd.DataFrame
    ops: pd.DataFrame
    devices: dict[int, DeviceInfo]
    default_dtype: str | None = None
    device_override: str | None = None
    source: Mapping[str, Any] = field(default_factory=dict)
    problems: Mapping[int, Mapping[str, Any]] = field(default_factory=dict)
    op_args: Mapping[int, Any] = field(default_factory=dict)
    main_table: ClassVar[str] = "by_kernel"
    display_tables: ClassVar[tuple[str, ...]] = ("by_kernel",)

    def tables(self) -> dict[str, pd.DataFrame]:
        return {"by_kernel": group_table(self, "kernel"), "by_op": group_table(self, "op"),
                "kernels": self.kernels, "ops": self.ops}

    def coverage(self) -> dict[str, Any]:
        """:func:`summarize` of this result."""
        return summarize(self)
