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
