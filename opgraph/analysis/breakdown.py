"""Host and device time breakdowns (seed-algorithms.md §1.4, §1.5): the names other code
imports from here, now held by one module per concept (this module only re-exports them):

- :mod:`opgraph.analysis.host_breakdown`: the host breakdown, the CPU op hierarchy
  aggregated by name path per thread (:func:`host_breakdown`, :func:`host_breakdown_doc`);
- :mod:`opgraph.analysis.device_breakdown`: the device breakdown, device time per stream
  attributed to the ops that launched it, and the per-op table (:func:`device_breakdown`,
  :func:`device_breakdown_doc`);
- :mod:`opgraph.analysis.op_hierarchy`: the host op forest and the outermost ops
  (:func:`host_hierarchy`, :func:`outermost_ops`,
  :data:`DEFAULT_MODULE_MARKERS`, :func:`module_mask`, :func:`input_dims`);
- :mod:`opgraph.analysis.breakdown_tree`: the document tree both share (:data:`OTHERS`,
  :data:`UNACCOUNTED`, :func:`flatten_tree`).

All times are ns inside; the documents returned for users are in µs.
"""

from __future__ import annotations

from opgraph.analysis.breakdown_tree import OTHERS, UNACCOUNTED, flatten_tree
from opgraph.analysis.device_breakdown import (
    NO_LAUNCH, OUTSIDE_OPS, DeviceBreakdown, device_breakdown, device_breakdown_doc,
)
from opgraph.analysis.host_breakdown import HostBreakdown, host_breakdown, host_breakdown_doc
from opgraph.analysis.op_hierarchy import (
    DEFAULT_MODULE_MARKERS, HostHierarchy, host_hierarchy, input_dims, module_mask, outermost_ops,
)

__all__ = [
    "OTHERS", "UNACCOUNTED", "flatten_tree",
    "NO_LAUNCH", "OUTSIDE_OPS", "DeviceBreakdown", "device_breakdown", "device_breakdown_doc",
    "HostBreakdown", "host_breakdown", "host_breakdown_doc",
    "DEFAULT_MODULE_MARKERS", "HostHierarchy", "host_hierarchy", "input_dims", "module_mask", "outermost_ops",
]
