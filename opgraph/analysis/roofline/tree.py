"""Walks up the host ``nest`` tree of :class:`~opgraph.analysis.roofline.columns.TraceColumns`
(``parent`` positions, -1 at roots), vectorised one tree level at a time. Positions only;
no units."""

from __future__ import annotations

import numpy as np


def climb_to_first(start: np.ndarray, parent: np.ndarray, hit: np.ndarray) -> np.ndarray:
    """For each start position (-1 = none): the first of itself and its ancestors where
    ``hit`` is true, else -1."""
    res = np.full(len(start), -1, dtype=np.int64)
    idx = np.flatnonzero(start >= 0)
    cur = start[idx]
    while len(idx):
        h = hit[cur]
        res[idx[h]] = cur[h]
        idx, cur = idx[~h], parent[cur[~h]]
        ok = cur >= 0
        idx, cur = idx[ok], cur[ok]
    return res


def mark_ancestors(start: np.ndarray, parent: np.ndarray, n: int) -> np.ndarray:
    """Boolean mask (length ``n``) of the strict ancestors of the positions ``start``."""
    mark = np.zeros(n, dtype=bool)
    cur = np.unique(parent[start[start >= 0]])
    cur = cur[cur >= 0]
    while len(cur):
        cur = cur[~mark[cur]]
        mark[cur] = True
        cur = np.unique(parent[cur])
        cur = cur[cur >= 0]
    return mark
