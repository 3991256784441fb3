"""The host op hierarchy: the ``nest`` forest of host ranges (:func:`host_hierarchy`), the
outermost CPU ops on it (:func:`outermost_ops`, the seed's ``get_operators``), the name
prefixes that mark module/label ranges rather than ops (:data:`DEFAULT_MODULE_MARKERS`,
:func:`module_mask`), and an op's input shapes (:func:`input_dims`).

Shared by the host and device breakdowns, the overheads, the kernel sequences and the
memory timeline. Positions index a :class:`~opgraph.analysis.graph_frame.GraphFrame`;
no times are computed here (the frame's times are ns).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

import numpy as np
import pandas as pd

from opgraph.analysis.graph_frame import GraphFrame
from opgraph.analysis.kind_codes import K_CPU_OP, K_PYTHON
from opgraph.model.tree import tree_depths

__all__ = ["DEFAULT_MODULE_MARKERS", "input_dims", "module_mask", "HostHierarchy", "host_hierarchy",
           "outermost_ops"]

#: Names (prefixes) that mark module/label ranges rather than operators, as the seed's
#: ``is_module`` (old traces record ``record_function`` labels as operators).
DEFAULT_MODULE_MARKERS: tuple[str, ...] = ("## ", "##", "__", "module::", "nn.Module: ", "DLRM ",
                                           "DistributedDataParallel")


def input_dims(args: dict[str, Any]) -> str:
    """The input shapes of an op as a string (``Input Dims``/``Input dims``; ``-`` when
    absent), empty entries kept so arity shows."""
    v = args.get("Input Dims", args.get("Input dims"))
    if v is None:
        return "-"
    return str(v).replace(" ", "")


def module_mask(names: np.ndarray, markers: Iterable[str]) -> np.ndarray:
    """True where a name starts with one of ``markers``."""
    ms = tuple(m for m in markers if m)
    if not ms or not len(names):
        return np.zeros(len(names), dtype=bool)
    codes, uniq = pd.factorize(names)
    hit = np.fromiter((isinstance(u, str) and u.startswith(ms) for u in uniq), dtype=bool, count=len(uniq))
    return hit[codes]


@dataclass
class HostHierarchy:
    """The host forest an analysis walks: ``host`` (mask of the ranges in it), ``parent``
    (position of each range's parent in it, -1 for roots) and ``levels`` (positions grouped
    by depth, roots first)."""

    host: np.ndarray
    parent: np.ndarray
    levels: list[np.ndarray]


def host_hierarchy(f: GraphFrame, include_python: bool = False) -> HostHierarchy:
    """The host ``nest`` forest, with or without ``python_function`` ranges.

    Without them, the other host ranges are re-nested by time containment among
    themselves (the graph's own sweep, :func:`opgraph.graph.nesting.nest_sweep`): python
    frames often cross the ``ProfilerStep`` range, so re-parenting through them would lose
    containment. Cached on the frame.
    """
    key = ("host_hierarchy", include_python)
    if key in f.cache:
        return f.cache[key]
    n = len(f)
    host = f.is_host.copy()
    parent = f.parent.copy()
    py = f.kind == K_PYTHON
    if not include_python and (py & host).any():
        from opgraph.graph.nesting import nest_sweep

        host &= ~py
        idx = np.flatnonzero(host)
        nr = nest_sweep(f.lane[idx], f.ts[idx], f.end[idx])
        parent = np.full(n, -1, dtype=np.int64)
        has = nr.parent >= 0
        parent[idx[has]] = idx[nr.parent[has]]
    parent[~host] = -1
    depth = tree_depths(parent)
    hp = np.flatnonzero(host)
    o = hp[np.argsort(depth[hp], kind="stable")]
    levels = np.split(o, np.flatnonzero(np.diff(depth[o])) + 1) if len(hp) else []
    h = HostHierarchy(host, parent, levels)
    f.cache[key] = h
    return h


def outermost_ops(f: GraphFrame, module_markers: Iterable[str] = DEFAULT_MODULE_MARKERS,
                  include_python: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """The seed's ``get_operators``: the first non-module CPU op on every nesting path.

    Returns
    -------
    (is_op, top_op)
        ``is_op[i]``: position i is such an op; ``top_op[i]``: position of the op at or
        above host event i (-1 if none).
    """
    hh = host_hierarchy(f, include_python)
    cand = (f.kind == K_CPU_OP) & ~module_mask(f.name, module_markers)
    top = np.full(len(f), -1, dtype=np.int64)
    for lvl in hh.levels:
        p = hh.parent[lvl]
        inherited = np.where(p >= 0, top[np.maximum(p, 0)], -1)
        top[lvl] = np.where(inherited >= 0, inherited, np.where(cand[lvl], lvl, -1))
    is_op = cand & (top == np.arange(len(f)))
    return is_op, top
