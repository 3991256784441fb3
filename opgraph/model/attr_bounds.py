"""Bounds on the attributes of a loaded graph: no container nested deeper than
:data:`MAX_ATTR_DEPTH`, no reference cycle, only JSON-like values (numbers, strings, lists,
objects), and no more items once written out than the file's size allows (shared
references make a "serialisation bomb": small in memory, huge as JSON).
:func:`check_bounds` walks whole columns level by level in C and names the culprit of a
failure with a per-object walk.
"""

from __future__ import annotations

from itertools import chain, repeat
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from opgraph.errors import OpgraphInputError

if TYPE_CHECKING:
    import networkx as nx

#: Deepest nesting of containers in a node attribute or graph attribute.
MAX_ATTR_DEPTH = 32
_SCALARS = (str, int, float, bool, type(None), np.integer, np.floating, np.bool_)
_CONTAINERS = (dict, list, tuple, set, frozenset)
#: Exact types of scalar attribute values (for the C-level type scans).
_SCALAR_TYPES = frozenset({str, int, float, bool, type(None), np.int64, np.int32, np.float64, np.float32, np.bool_})


def _expanded(obj: Any, memo: dict[int, tuple[int, int]], active: set[int]) -> tuple[int, int]:
    """(items reached walking ``obj`` as JSON would, depth), per distinct object once:
    shared references count each time they are reached (a "bomb" of lists referencing
    each other is small in memory, huge once written out)."""
    k = id(obj)
    got = memo.get(k)
    if got is not None:
        return got
    if k in active:
        raise ValueError("a container contains itself")
    active.add(k)
    vals = obj.values() if isinstance(obj, dict) else obj
    total, depth = 1, 0
    for v in vals:
        if type(v) is list and _SCALAR_TYPES.issuperset(map(type, v)):
            total += len(v) + 1      # a list of scalars (e.g. one of "Input Dims"): no recursion
            depth = max(depth, 1)
            continue
        if isinstance(v, _CONTAINERS):
            t, d = _expanded(v, memo, active)
            total += t
            depth = max(depth, d)
        else:
            total += 1
        if total > 2**62:
            break
    active.discard(k)
    memo[k] = (total, depth + 1)
    return memo[k]


def _check_attrs(path: str, what: str, objs: Any, budget: int, memo: dict, event: Any = None) -> int:
    """Walk ``objs`` (containers); raise when one is deeper than :data:`MAX_ATTR_DEPTH` or
    all of them expand to more than ``budget`` items. Returns the items used."""
    used = 0
    active: set[int] = set()
    for i, o in objs:
        to = type(o)
        if to in _SCALAR_TYPES:
            continue
        if to is dict and _SCALAR_TYPES.issuperset(map(type, o.values())):
            # the usual case (an args dict of scalars): no walk; map/issuperset run in C
            memo[id(o)] = (len(o) + 1, 1)
            used += len(o) + 1
            if used > budget:
                raise OpgraphInputError(path, f"{what} expands to more than {budget:,} values once written "
                                              "out (shared references: a serialisation bomb)", i if event else None)
            continue
        if not isinstance(o, _CONTAINERS):
            if not isinstance(o, _SCALARS) and not isinstance(o, pd.DataFrame):
                raise OpgraphInputError(path, f"{what} holds a {type(o).__name__}, expected numbers, "
                                              "strings, lists or objects", i if event else None)
            continue
        try:
            t, d = _expanded(o, memo, active)
        except (ValueError, RecursionError):
            raise OpgraphInputError(path, f"{what} contains itself (a reference cycle)", i if event else None) from None
        if d > MAX_ATTR_DEPTH:
            raise OpgraphInputError(path, f"{what} nests {d} levels deep (at most {MAX_ATTR_DEPTH})",
                                    i if event else None)
        used += t
        if used > budget:
            raise OpgraphInputError(path, f"{what} expands to more than {budget:,} values once written "
                                          "out (shared references: a serialisation bomb)", i if event else None)
    return used


_CONTAINER_TYPES = frozenset({dict, list, tuple, set, frozenset})
_ALLOWED_TYPES = _SCALAR_TYPES | _CONTAINER_TYPES


def _level_walk(objs: list[Any], budget: int) -> int | None:
    """Items reached walking ``objs`` as JSON would, level by level with C-level scans
    (``map``/``chain``/``set``): shared references count each time (a bomb grows level by
    level and is stopped by ``budget`` before it is materialised). None when a level holds a
    type that is not JSON-like, is deeper than :data:`MAX_ATTR_DEPTH`, or the count passes
    ``budget``: the caller then finds the culprit with the per-object walk."""
    total = len(objs)
    types = set(map(type, objs))
    items: list[Any] = objs
    depth = 0
    while True:
        if not _ALLOWED_TYPES.issuperset(types):
            return None
        ctypes = types & _CONTAINER_TYPES
        if not ctypes:
            return total
        # the containers of this level (the whole list when it holds nothing else)
        level = items if types == ctypes else [o for o in items if type(o) in _CONTAINER_TYPES]
        depth += 1
        if depth > MAX_ATTR_DEPTH:
            return None
        total += sum(map(len, level))
        if total > budget:
            return None
        if ctypes == {dict}:
            items = list(chain.from_iterable(map(dict.values, level)))
        else:
            dicts = [o for o in level if type(o) is dict]
            seqs = [o for o in level if type(o) is not dict]
            items = list(chain(chain.from_iterable(map(dict.values, dicts)), chain.from_iterable(seqs)))
        types = set(map(type, items))


class BoundsBudget:
    """What a bounds check has used of its budget (items once written out), and the
    objects it has walked when ``track`` (shared by the checks of one loaded graph)."""

    def __init__(self, file_size: int, track: bool = True):
        self.track = track
        self.budget = 64 * int(file_size) + 2**22
        self.used = 0
        self.memo: dict[int, tuple[int, int]] = {}
        self.seen: set[int] = set()

    def column(self, path: str, what: str, ids: list[Any], vals: list[Any]) -> None:
        """Check one column of values (``ids`` name them in a refusal)."""
        got = _level_walk(vals, self.budget - self.used)
        if got is None:
            self.used += _check_attrs(path, what, zip(ids, vals), self.budget - self.used, self.memo, event=True)
        else:
            self.used += got
        if self.track:
            self.seen.update(map(id, vals))


def check_table_bounds(gr: dict, path: str, file_size: int, track: bool = True) -> BoundsBudget:
    """Bounds of the graph attributes ``gr`` and of the event table's ``args``/``extra``
    columns; returns the budget for the checks that follow (node or edge attributes).
    ``track``: remember the objects walked (to skip them when node attributes share them)."""
    b = BoundsBudget(file_size, track)
    b.used = _check_attrs(path, "graph attributes", ((k, v) for k, v in gr.items() if k != "events"),
                          b.budget, b.memo)
    ev = gr.get("events")
    if not isinstance(ev, pd.DataFrame):
        ev = pd.DataFrame()
    for col in ("args", "extra"):
        if col in ev:
            arr = ev[col].to_numpy(dtype=object)
            some = np.flatnonzero(arr != None)  # noqa: E711 (elementwise: the rows with a value)
            if len(some) < len(arr):   # a missing value is one item, as the walk counts it (each
                b.used += len(arr) - len(some)   # costs a byte of the file: never past the budget)
                if b.track:
                    b.seen.add(id(None))
            b.column(path, f"event {col}", some.tolist(), arr[some].tolist())
    return b


def check_bounds(G: nx.DiGraph, path: str, file_size: int) -> None:
    """Attributes bounded relative to the file (no serialisation bombs) and in depth. Whole
    columns are walked level by level in C (:func:`_level_walk`); the per-object walk
    (:func:`_check_attrs`) runs only to name the culprit of a failure."""
    b = check_table_bounds(G.graph, path, file_size)
    nodes = G._node
    keys = set(chain.from_iterable(nodes.values()))   # every attribute name, in C
    ids = np.array(list(nodes), dtype=object)
    for k in sorted(keys, key=str):
        vals = list(map(dict.get, nodes.values(), repeat(k)))
        if _SCALAR_TYPES.issuperset(map(type, vals)):
            continue
        # skip the objects already walked (node args are the event table's args dicts)
        new = ~np.fromiter(map(b.seen.__contains__, map(id, vals)), dtype=bool, count=len(vals))
        arr = np.empty(len(vals), dtype=object)
        arr[:] = vals
        b.column(path, f"node attribute {k!r}", ids[new].tolist(), arr[new].tolist())


__all__ = ["MAX_ATTR_DEPTH", "BoundsBudget", "check_table_bounds", "check_bounds"]
