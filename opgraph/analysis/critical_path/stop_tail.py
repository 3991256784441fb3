"""The profiler-stop tail: the end of the last step after every thread and device of the
trace fell silent (docs/critical-path.md, "Waits the trace shows").

When the profiler stops late, the last ``ProfilerStep#N`` (and the Python frames around
it) are closed at the stop, long after the last op, runtime call and device activity
ended. Nothing was recorded in that time: it is not CPU work of the step. Path segments
there that are an annotation's or a frame's empty time are ``untraced`` with the edge
``profiler_stop_tail``.
"""

from __future__ import annotations

import numpy as np

from opgraph.model.arrays import GraphArrays
from opgraph.graph.threads import BLOCKING_WAIT_RE

#: The silence before the window's end must last at least this long (ns) to be a stop tail.
PROFILER_TAIL_MIN_NS = 1_000_000
#: The edge name of a stop-tail segment.
TAIL_EDGE = "profiler_stop_tail"


def silent_from(a: GraphArrays) -> dict[int, int]:
    """Per rank: when the trace fell silent (ns): the last end of a device activity, an op
    or a runtime call that is not a blocking wait. Annotations and Python frames are left
    out: the profiler closes them at its stop."""
    real = (a.is_activity | a.is_kind("runtime", "cpu_op")) & ~a.annotation_like
    real &= ~a.names_match(BLOCKING_WAIT_RE)
    out: dict[int, int] = {}
    idx = np.flatnonzero(real)
    if not len(idx):
        return out
    rk = a.rank[idx]
    for r in np.unique(rk).tolist():
        out[int(r)] = int(a.end[idx[rk == r]].max())
    return out


def mark_stop_tail(cols: dict[str, np.ndarray], silent: int | None) -> dict[str, np.ndarray]:
    """The segment columns ``cols`` (:data:`~opgraph.analysis.critical_path.result.SEGMENT_COLUMNS`)
    with the stretch after ``silent`` (ns) marked as a stop tail: ``untraced`` segments and
    a frame's or annotation's own time after its last child (``cpu`` on a ``last`` edge) are
    cut at ``silent`` and their later part becomes ``untraced`` / :data:`TAIL_EDGE`. Nothing
    changes when the path's end is less than :data:`PROFILER_TAIL_MIN_NS` after ``silent``."""
    t0, t1 = cols["start_ns"], cols["end_ns"]
    if silent is None or not len(t1) or int(t1.max()) - silent < PROFILER_TAIL_MIN_NS:
        return cols
    bb, edge = cols["bound_by"], cols["edge"]
    tail = (t1 > silent) & ((bb == "untraced") | ((bb == "cpu") & (edge == "last")))
    if not tail.any():
        return cols
    cut = tail & (t0 < silent)
    rep = np.where(cut, 2, 1)
    out = {k: np.repeat(v, rep) for k, v in cols.items()}
    # the rows after each cut row's first copy hold the part after ``silent``
    first = np.cumsum(rep) - rep
    after = np.zeros(len(out["start_ns"]), dtype=bool)
    after[first[cut] + 1] = True
    out["end_ns"][first[cut]] = silent
    out["start_ns"][after] = silent
    is_tail = np.repeat(tail, rep)
    is_tail[first[cut]] = False
    out["bound_by"] = out["bound_by"].copy()
    out["edge"] = out["edge"].copy()
    out["bound_by"][is_tail] = "untraced"
    out["edge"][is_tail] = TAIL_EDGE
    return out


__all__ = ["PROFILER_TAIL_MIN_NS", "TAIL_EDGE", "silent_from", "mark_stop_tail"]
