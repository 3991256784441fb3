"""Sets of time intervals ``[start, end)`` (ns, int64): the one home of union, busy time,
overlap and gaps, written once and used by every layer (idle, overlap, iterations,
multistream, the multi-rank worker, predict).

Intervals may come in any order; touching intervals merge; an interval with
``end < start`` counts as empty where noted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

import numpy as np
import pandas as pd


def union_intervals(start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Merge [start, end) intervals (ns) into sorted disjoint ones (touching ones merge).

    Returns (starts, ends)."""
    start = np.asarray(start, dtype=np.int64)
    end = np.asarray(end, dtype=np.int64)
    if not len(start):
        return np.empty(0, np.int64), np.empty(0, np.int64)
    o = np.argsort(start, kind="stable")
    s, e = start[o], end[o]
    run = np.maximum.accumulate(e)
    new = np.empty(len(s), dtype=bool)
    new[0] = True
    new[1:] = s[1:] > run[:-1]
    grp = np.cumsum(new) - 1
    us = s[new]
    ue = np.zeros(len(us), dtype=np.int64)
    np.maximum.at(ue, grp, e)
    return us, ue


def union_length_by(key: np.ndarray, a: np.ndarray, b: np.ndarray) -> pd.Series:
    """Length of the union of the intervals [a, b) of each key (ns), as a Series by key."""
    key = np.asarray(key)
    if not len(key):
        return pd.Series(dtype=np.int64)
    o = np.lexsort((-b, a, key))
    k, s, e = key[o], np.asarray(a, np.int64)[o], np.asarray(b, np.int64)[o]
    run = pd.Series(e).groupby(k, sort=False).cummax().to_numpy(np.int64)
    prev = np.empty_like(run)
    prev[0] = s[0]
    prev[1:] = run[:-1]
    first = np.empty(len(k), dtype=bool)
    first[0] = True
    first[1:] = k[1:] != k[:-1]
    prev[first] = s[first]
    inc = np.maximum(0, e - np.maximum(s, prev))
    return pd.Series(inc).groupby(k).sum()


class IntervalSet:
    """Disjoint sorted intervals with O(log n) "covered length in [a, b]" queries."""

    def __init__(self, start: np.ndarray, end: np.ndarray):
        self.start, self.end = union_intervals(np.asarray(start, np.int64), np.asarray(end, np.int64))
        self._cum = np.concatenate([[0], np.cumsum(self.end - self.start)])

    def __len__(self) -> int:
        return len(self.start)

    @property
    def total(self) -> int:
        return int(self._cum[-1])

    def _upto(self, x: np.ndarray) -> np.ndarray:
        """Covered length in (-inf, x]."""
        k = np.searchsorted(self.start, x, side="right")  # intervals starting at or before x
        full = self._cum[np.maximum(k - 1, 0)]
        last_s = self.start[np.maximum(k - 1, 0)] if len(self.start) else np.zeros_like(x)
        last_e = self.end[np.maximum(k - 1, 0)] if len(self.start) else np.zeros_like(x)
        part = np.clip(np.minimum(x, last_e) - last_s, 0, None)
        return np.where(k > 0, full + part, 0)

    def covered(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Length of the set inside each [a, b] (ns; 0 where b <= a)."""
        a = np.asarray(a, np.int64)
        b = np.asarray(b, np.int64)
        if not len(self.start):
            return np.zeros(len(a), dtype=np.int64)
        return np.maximum(self._upto(b) - self._upto(a), 0)


def union_overlap_ns(starts: Iterable[int] | np.ndarray, ends: Iterable[int] | np.ndarray) -> tuple[int, int]:
    """(length of the union, time counted more than once) of intervals ``[start, end)`` (ns).

    For windows whose extents overlap (nested ranges, or step windows that run on to the
    last end of their GPU work), a total over windows is at most the union; the rest is the
    overlap to report."""
    s = np.asarray(list(starts) if not isinstance(starts, np.ndarray) else starts, dtype=np.int64)
    e = np.asarray(list(ends) if not isinstance(ends, np.ndarray) else ends, dtype=np.int64)
    if not len(s):
        return 0, 0
    e = np.maximum(e, s)
    union = int(union_length(s, e))
    return union, int((e - s).sum()) - union


@dataclass
class SweepResult:
    """Result of :func:`overlap_sweep` (ns)."""

    busy: int
    overlap: int
    gaps: int
    first: int
    last: int


def overlap_sweep(start: np.ndarray, end: np.ndarray) -> SweepResult:
    """The corrected multistream sweep over intervals ``[start, end)`` (ns), vectorised.

    Parameters
    ----------
    start, end : int64 arrays
        Activity intervals, any order.

    Returns
    -------
    SweepResult
        ``busy`` (union length), ``overlap`` (Σ durations − union), ``gaps`` (idle time
        between the first start and the last end), ``first``/``last``.
    """
    start = np.asarray(start, np.int64)
    end = np.maximum(np.asarray(end, np.int64), start)
    if not len(start):
        return SweepResult(0, 0, 0, 0, 0)
    o = np.lexsort((-end, start))
    s, e = start[o], end[o]
    front = np.maximum.accumulate(e)
    prev = np.empty_like(front)
    prev[0] = s[0]
    prev[1:] = front[:-1]
    gaps = int(np.maximum(0, s - prev).sum())
    overlap = int(np.maximum(0, np.minimum(prev, e) - s).sum())
    busy = int(np.maximum(0, e - np.maximum(s, prev)).sum())
    return SweepResult(busy, overlap, gaps, int(s[0]), int(front[-1]))


def union_length(start: np.ndarray, end: np.ndarray) -> int | float:
    """Length of the union of intervals ``[start, end)``: an int for integer input (ns),
    a float for float input (e.g. µs)."""
    s = np.asarray(start)
    e = np.asarray(end)
    if not len(s):
        return 0 if s.dtype.kind in "iu" else 0.0
    o = np.argsort(s, kind="stable")
    s, e = s[o], e[o]
    reach = np.maximum.accumulate(e)
    prev = np.empty_like(reach)
    prev[0] = s[0]
    prev[1:] = reach[:-1]
    total = np.maximum(0, e - np.maximum(s, prev)).sum()
    return int(total) if s.dtype.kind in "iu" else float(total)


def union_gaps(starts: np.ndarray, ends: np.ndarray) -> tuple[int, np.ndarray, np.ndarray, np.ndarray]:
    """Busy time (union) and the gaps between merged intervals: (busy, gap_start, gap_end,
    index of the interval that ends each gap), for intervals given sorted by start (ns)."""
    run_end = np.maximum.accumulate(ends)
    gap = starts[1:] > run_end[:-1]
    g0 = run_end[:-1][gap]
    g1 = starts[1:][gap]
    nxt = np.flatnonzero(gap) + 1
    busy = int(run_end[-1] - starts[0]) - int((g1 - g0).sum())
    return busy, g0, g1, nxt


def innermost_segments(start: np.ndarray, end: np.ndarray, lo: int = -(2**62), hi: int = 2**62
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Partition ``[lo, hi)`` by the innermost interval active at each instant (ns).

    ``start``/``end``: one thread's events (any order, ``lo <= start <= end <= hi``).
    Returns ``(seg_start, seg_end, owner)``, contiguous segments in time order; ``owner``
    is an index into the input, -1 where no interval is active. Intervals are taken
    in order of start, longer first, then input order; one that outlives the interval it
    starts in is cut at that interval's end (a partial overlap on one thread is clock
    skew, not a new nesting). Segments of equal owner may be split (e.g. at an empty
    interval): a consumer sums over them. Nested input (the usual case) is partitioned in
    numpy; input with a partial overlap falls back to a stack sweep. docs/idle.md.
    """
    start = np.asarray(start, np.int64)
    end = np.asarray(end, np.int64)
    order = np.lexsort((-(end - start), start))
    order = order[end[order] > start[order]]   # an empty interval never owns an instant
    nested = _nested_segments(start[order], end[order], lo, hi)
    if nested is None:
        s, e, o = _swept_segments(start[order], end[order], lo, hi)
    else:
        s, e, o = nested
    return s, e, (np.where(o >= 0, order[np.maximum(o, 0)], -1) if len(order) else o)


def _nested_segments(s: np.ndarray, e: np.ndarray, lo: int, hi: int
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """:func:`innermost_segments` for intervals sorted by (start, longer first), none
    empty, when they nest (every two disjoint or one inside the other); None when two
    overlap partially. Opens and closes in time order (closes first at one instant,
    inner ones first) are a balanced sequence; it nests exactly when, at every depth, the
    tokens alternate open, close of the same interval."""
    m = len(s)
    if not m:
        return (np.array([lo], np.int64), np.array([hi], np.int64), np.array([-1], np.int64))
    idx = np.arange(m, dtype=np.int64)
    # tokens: closes (inner first: later index first), then opens (earlier index first),
    # stably sorted by time: at one instant every close comes before any open
    t_time = np.concatenate([e[::-1], s])
    t_iid = np.concatenate([idx[::-1], idx])
    t_open = np.concatenate([np.zeros(m, bool), np.ones(m, bool)])
    o = np.argsort(t_time, kind="stable")
    t_time, t_iid, t_open = t_time[o], t_iid[o], t_open[o]
    depth = np.cumsum(np.where(t_open, 1, -1))            # depth after each token
    level = np.where(t_open, depth, depth + 1)            # the depth the token opens or closes
    small = level.astype(np.int16) if level.max() < 2**15 else level
    by_level = np.argsort(small, kind="stable")          # per level, in time order
    pair_open = t_open[by_level].reshape(-1, 2)
    pair_level = level[by_level].reshape(-1, 2)
    pair_iid = t_iid[by_level].reshape(-1, 2)
    if not (pair_open[:, 0].all() and not pair_open[:, 1].any()
            and (pair_level[:, 0] == pair_level[:, 1]).all() and (pair_iid[:, 0] == pair_iid[:, 1]).all()):
        return None
    # the owner after each token: the last open at the depth after it, at or before it.
    # Grouped by that depth (in time order), every token of a group d > 0 follows such an
    # open (an interval closing to depth d lies in the one open at d): a forward fill.
    by_depth = np.argsort(depth.astype(np.int16) if level.max() < 2**15 else depth, kind="stable")
    g_open = t_open[by_depth]
    fill = np.maximum.accumulate(np.where(g_open, np.arange(2 * m), -1))
    owner = np.empty(2 * m, dtype=np.int64)
    owner[by_depth] = np.where(depth[by_depth] > 0, t_iid[by_depth][np.maximum(fill, 0)], -1)
    # one segment per distinct instant, owned by what is active after its last token
    last = np.flatnonzero(np.r_[t_time[1:] != t_time[:-1], True])
    cut = t_time[last]
    seg_s = np.concatenate([[lo], cut])
    seg_e = np.concatenate([cut, [hi]])
    seg_o = np.concatenate([[-1], owner[last]])
    keep = seg_e > seg_s
    return seg_s[keep], seg_e[keep], seg_o[keep]


def _swept_segments(s: np.ndarray, e: np.ndarray, lo: int, hi: int
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`innermost_segments` by a stack sweep, for intervals sorted by (start,
    longer first) that may overlap partially (an interval is cut at the end of the one it
    starts in)."""
    ts, en = s.tolist(), e.tolist()
    s_l: list[int] = []
    e_l: list[int] = []
    o_l: list[int] = []
    add_s, add_e, add_o = s_l.append, e_l.append, o_l.append   # (inlined: 500k+ segments per thread)
    stack: list[tuple[int, int]] = []
    pop, push = stack.pop, stack.append
    cur = lo
    last = max(hi, max(en, default=hi))   # a last start at or after every end closes the stack
    for b, f, p in zip(ts + [last], en + [last], list(range(len(ts))) + [-1]):
        while stack and stack[-1][0] <= b:
            te, tp = pop()
            if te > cur:
                add_s(cur)
                add_e(te)
                add_o(tp)
                cur = te
        if b > cur:
            add_s(cur)
            add_e(b)
            add_o(stack[-1][1] if stack else -1)
            cur = b
        if stack and f > stack[-1][0]:
            f = stack[-1][0]
        push((f, p))
    return np.array(s_l, dtype=np.int64), np.array(e_l, dtype=np.int64), np.array(o_l, dtype=np.int64)
