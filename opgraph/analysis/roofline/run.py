"""``roofline()``: the analysis as named steps, in order (see the package docstring for the
attribution rule). Takes a graph, a build payload or :class:`TraceColumns`; returns a
:class:`RooflineResult` (ns, FLOPs, bytes, TFLOP/s, GB/s)."""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from opgraph.analysis.roofline.activity_dtypes import activity_dtypes, canonical_dtype
from opgraph.analysis.roofline.attribution import link_activities, share_op_costs, trace_values
from opgraph.analysis.roofline.columns import TraceColumns, columns_of
from opgraph.analysis.roofline.devices import DeviceInfo, resolve_devices
from opgraph.analysis.roofline.frames import kernel_frame, op_frame, problem_sizes
from opgraph.analysis.roofline.op_costs import cost_ops, counted_ops, world_size
from opgraph.analysis.roofline.result import RooflineResult
from opgraph.model.trace_graph import TraceGraph


def roofline(source: "TraceGraph | TraceColumns | Mapping[str, Any]", *, device: str | None = None,
             dtype: str | None = None) -> RooflineResult:
    """Attribute op FLOPs/bytes to device activities and compute achieved rates.

    Parameters
    ----------
    source : TraceGraph, TraceColumns, or a build payload
        A graph from :func:`opgraph.graph.build_graph` or a load, or its column form.
    device : str, optional
        Table name or runtime name of the device to use for every activity (overrides
        ``deviceProperties``). Raises ``ValueError`` if unknown.
    dtype : str, optional
        dtype for activities whose op and name show none (``bf16``, ``fp32`` ...).
    """
    c = columns_of(source)
    dtype = canonical_dtype(dtype)
    # 1. cost the ops; choose the counted ones
    oc = cost_ops(c, world_size(c.graph))
    composite, counted = counted_ops(c, oc)
    # 2. each activity's launching op and owning counted op
    links = link_activities(c, counted)
    # 3. activities' own values, then each owner's cost split over its work activities
    tv = trace_values(c.args[links.act])
    shares = share_op_costs(c, links, oc, tv)
    # 4. dtype and device of each activity (they choose the peaks)
    op_dtype = np.where(shares.has_owner, oc.dtype[np.maximum(links.owner, 0)], None)
    dts = activity_dtypes(c.name[links.act], op_dtype, dtype)
    devices = activity_devices(c, links.act, device)
    # 5. the frames
    kernels = kernel_frame(c, links, shares, dts, devices)
    ops = op_frame(c, oc, composite, counted, links, shares, dts, devices, dtype)
    problems, op_args = problem_sizes(c, oc, counted)
    return RooflineResult(kernels, ops, devices, dtype, device, dict(c.graph.get("source") or {}), problems, op_args)


def activity_devices(c: TraceColumns, act: np.ndarray, override: str | None) -> dict[int, DeviceInfo]:
    """:func:`resolve_devices` for the device indices the activities ``act`` ran on."""
    devs = sorted(set(int(x) for x in np.unique(c.device[act]) if x >= 0))
    return resolve_devices(c.graph.get("device_properties"), devs, override)
