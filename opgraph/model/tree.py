"""Walks over a nesting forest given as a ``parent`` array (positions, -1 at roots; a
graph's is :attr:`GraphArrays.parent <opgraph.model.arrays.GraphArrays.parent>`, stored
once): climbing to the first or last marked ancestor, marking ancestors, depths, and the events
that lie inside a range of interest. Vectorised one tree level at a time (depths: by
pointer jumping). Positions only, no units (docs/model.md, "Nesting")."""

from __future__ import annotations

import numpy as np


#: Nesting deeper than this is not climbed (no real trace nests past a few hundred levels).
MAX_DEPTH = 4096


def climb_to_first(start: np.ndarray, parent: np.ndarray, hit: np.ndarray) -> np.ndarray:
    """For each start position (-1 = none): the first of itself and its ancestors where
    ``hit`` is true, else -1."""
    return _climb(start, parent, hit, outermost=False)


def climb_to_last(start: np.ndarray, parent: np.ndarray, hit: np.ndarray) -> np.ndarray:
    """For each start position (-1 = none): the last (outermost) of itself and its
    ancestors where ``hit`` is true, else -1."""
    return _climb(start, parent, hit, outermost=True)


def _climb(start: np.ndarray, parent: np.ndarray, hit: np.ndarray, outermost: bool) -> np.ndarray:
    res = np.full(len(start), -1, dtype=np.int64)
    idx = np.flatnonzero(start >= 0)
    cur = start[idx]
    while len(idx):
        h = hit[cur]
        res[idx[h]] = cur[h]
        if not outermost:   # found: stop climbing
            idx, cur = idx[~h], cur[~h]
        cur = parent[cur]
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


def tree_depths(parent: np.ndarray) -> np.ndarray:
    """Depth of every node of a forest given by ``parent`` (-1 for roots), by pointer
    jumping: O(n log depth), also for one n-deep chain (identical nested events)."""
    depth = (parent >= 0).astype(np.int64)
    jump = parent.copy()
    live = np.flatnonzero(jump >= 0)
    while len(live):
        j = jump[live]
        depth[live] += depth[j]  # synchronous: reads the old depths
        jump[live] = jump[j]
        live = live[jump[live] >= 0]
    return depth


def within(parent: np.ndarray, mark: np.ndarray) -> np.ndarray:
    """Per node: it or one of its ancestors (by ``parent``) is marked."""
    out = mark.copy()
    cur = parent.copy()
    live = np.flatnonzero((cur >= 0) & ~out)
    for _ in range(MAX_DEPTH):
        if not len(live):
            break
        c = cur[live]
        out[live] = mark[c]
        nxt = parent[c]
        cur[live] = nxt
        live = live[(nxt >= 0) & ~out[live]]
    return out


__all__ = ["MAX_DEPTH", "climb_to_first", "climb_to_last", "mark_ancestors", "tree_depths", "within"]
