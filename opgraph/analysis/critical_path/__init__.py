"""Critical path of each step on the event-boundary DAG (docs/critical-path.md).

Public names only (docs/architecture.md, "Packages"); the code is in
:mod:`opgraph.analysis.critical_path.path`."""

from opgraph.analysis.critical_path.boundary_edges import (  # noqa: F401 - the package's public names
    CATEGORIES,
    WAIT_CATEGORIES,
    ROLES,
    R,
    CAT,
    PRIORITY,
    ROLE_CATEGORY,
    BoundaryEdges,
    boundary_edges,
    blocking_waits,
    edge_categories,
)
from opgraph.analysis.critical_path.engine import (  # noqa: F401 - the package's public names
    KERNEL_GAP_MAX_NS,
    LAUNCH_CALL_MAX_NS,
    LAUNCH_LATENCY_MAX_NS,
    BoundaryDAG,
    CircularPath,
    EXIT_EDGE,
    ExtraEdges,
    RawSegment,
    boundary_dag,
    boundary_times,
    dag_from_edges,
    pick_critical,
    segments,
    segment_columns,
    SEGMENT_FIELDS,
    walk_back,
)
from opgraph.analysis.critical_path.stop_tail import (  # noqa: F401 - the package's public names
    PROFILER_TAIL_MIN_NS,
    TAIL_EDGE,
)
from opgraph.analysis.critical_path.result import PathSegment, SegmentTable, WindowPath, summarize_windows, path_frame, breakdown_frame
from opgraph.analysis.critical_path.run_result import CriticalPathResult
from opgraph.analysis.critical_path.path import (  # noqa: F401 - the package's public names
    segment_table,
    critical_path,
    window_sinks,
    path_segments,
    lane_label,
)

__all__ = [
    "CATEGORIES",
    "WAIT_CATEGORIES",
    "ROLES",
    "R",
    "CAT",
    "PRIORITY",
    "ROLE_CATEGORY",
    "KERNEL_GAP_MAX_NS",
    "LAUNCH_CALL_MAX_NS",
    "LAUNCH_LATENCY_MAX_NS",
    "PROFILER_TAIL_MIN_NS",
    "TAIL_EDGE",
    "BoundaryDAG",
    "BoundaryEdges",
    "CircularPath",
    "EXIT_EDGE",
    "ExtraEdges",
    "RawSegment",
    "PathSegment",
    "SegmentTable",
    "WindowPath",
    "CriticalPathResult",
    "segment_table",
    "boundary_dag",
    "boundary_edges",
    "boundary_times",
    "blocking_waits",
    "dag_from_edges",
    "edge_categories",
    "pick_critical",
    "segments",
    "segment_columns",
    "SEGMENT_FIELDS",
    "walk_back",
    "summarize_windows",
    "critical_path",
    "window_sinks",
    "path_segments",
    "lane_label",
    "path_frame",
    "breakdown_frame",
]
