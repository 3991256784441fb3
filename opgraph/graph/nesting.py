"""Time-containment nesting per thread: one sorted sweep with a stack (O(n log n))."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: Ends may overshoot their parent's end by less than this (ns rounding of µs traces).
NEST_TOLERANCE_NS = 1000


@dataclass
class NestResult:
    """Parents found by :func:`nest_sweep`, positions refer to the input arrays.

    ``parent[i]`` is the position of i's innermost enclosing range, or -1 for a root.
    ``order`` is the sweep order (lane, start, longest first, input position).
    ``crossovers`` lists positions of ranges that started inside a range and ended after it
    (by more than the tolerance); they were nested under an enclosing range instead.
    """

    parent: np.ndarray
    order: np.ndarray
    crossovers: np.ndarray


def nest_sweep(lane: np.ndarray, start: np.ndarray, end: np.ndarray,
               can_parent: np.ndarray | None = None,
               tolerance_ns: int = NEST_TOLERANCE_NS) -> NestResult:
    """Nest ranges by time containment within each lane.

    ``lane`` (int codes), ``start``/``end`` (int64 ns). ``can_parent`` (bool) restricts
    which ranges may contain others (all by default).

    Rules: an event starting at or after the top of the stack's end closes it. An event
    that starts less than ``tolerance_ns`` before the top's end *and* ends beyond it is a
    successor with rounding bleed, not a child. An event whose end overshoots the top's end
    by less than the tolerance is a child (bleed, clipped for the sweep). An event that
    starts inside the top but ends later than that is a crossover: the top cannot contain
    it, so the event is nested under the innermost range that does contain it (or becomes a
    root), and it is counted.
    """
    n = len(lane)
    order = np.lexsort((np.arange(n), -(end - start), start, lane))
    parent = np.full(n, -1, dtype=np.int64)
    if n == 0:
        return NestResult(parent, order, np.empty(0, dtype=np.int64))
    lane_l = lane[order].tolist()
    s_l = start[order].tolist()
    e_l = end[order].tolist()
    cp_l = can_parent[order].tolist() if can_parent is not None else None
    par = [-1] * n
    cross: list[int] = []
    tol = tolerance_ns
    stack_pos: list[int] = []
    stack_end: list[int] = []
    cur_lane = None
    for k in range(n):
        ln = lane_l[k]
        s = s_l[k]
        e = e_l[k]
        if ln != cur_lane:
            cur_lane = ln
            stack_pos.clear()
            stack_end.clear()
        crossed = False
        while stack_end:
            te = stack_end[-1]
            if te <= s or (te - s < tol and e - te >= tol):
                stack_end.pop()  # ended, or a successor starting inside the rounding bleed
                stack_pos.pop()
            elif e - te >= tol:
                crossed = True  # starts inside the top but ends well after it: not its child
                stack_end.pop()
                stack_pos.pop()
            else:
                break
        if crossed:
            cross.append(k)
        if stack_end:
            te = stack_end[-1]
            par[k] = stack_pos[-1]
            if e > te:
                e = te  # bleed shorter than the tolerance: clip for the sweep
        if cp_l is None or cp_l[k]:
            stack_pos.append(k)
            stack_end.append(e)
    par_arr = np.array(par, dtype=np.int64)
    has = par_arr >= 0
    parent[order[has]] = order[par_arr[has]]
    return NestResult(parent, order, order[np.array(cross, dtype=np.int64)])


def sibling_pairs(lane: np.ndarray, parent: np.ndarray, order: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Consecutive siblings (same lane, same parent; roots of a lane are siblings) in sweep
    order. Returns (from_positions, to_positions)."""
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    o = np.lexsort((rank, parent, lane))
    same = (lane[o][1:] == lane[o][:-1]) & (parent[o][1:] == parent[o][:-1])
    return o[:-1][same], o[1:][same]
