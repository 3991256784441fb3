"""``--collapse op|module`` of the Graphviz pictures (:mod:`opgraph.export.dot`): which
event each event is drawn as.

``op``: every host event inside a top-level CPU op is drawn as that op (its kernels stay);
``module``: as its innermost module range (``nn.Module: …``, ``## … ##``, python
``…: forward`` frames, the other module markers of :mod:`opgraph.analysis.op_hierarchy`),
else its top-level op. Python frames outside any op or module are not drawn.
"""

from __future__ import annotations

import re
from typing import Iterable

import numpy as np

from opgraph.analysis.op_hierarchy import DEFAULT_MODULE_MARKERS, module_mask
from opgraph.export.dot.view import HOST_KINDS
from opgraph.model.arrays import GraphArrays

COLLAPSE_MODES = ("op", "module")
#: Python frames that are a module's forward (``torch/nn/modules/linear.py(124): forward``).
_PY_FORWARD_RE = re.compile(r"\.py\(\d+\): forward$")


def _is_module(names: np.ndarray, kinds: np.ndarray, markers: Iterable[str]) -> np.ndarray:
    m = module_mask(names, markers)
    py = np.fromiter((k == "python" and isinstance(x, str) and bool(_PY_FORWARD_RE.search(x))
                      for k, x in zip(kinds, names)), dtype=bool, count=len(names))
    return (m & np.isin(kinds, HOST_KINDS)) | py


def representatives(a: GraphArrays, parent: np.ndarray, collapse: str | None,
                    markers: Iterable[str] = DEFAULT_MODULE_MARKERS) -> np.ndarray:
    """Position each node is drawn as: itself, its top-level op (``op``) or its innermost
    module range, else top-level op (``module``); -1 for python frames outside any op or
    module when collapsing (they are not drawn). ``parent``: :attr:`GraphArrays.host_parent <opgraph.model.arrays.GraphArrays.host_parent>`."""
    n = a.n
    rep = np.arange(n, dtype=np.int64)
    if collapse is None or not n:
        return rep
    if collapse not in COLLAPSE_MODES:
        raise ValueError(f"unknown collapse mode {collapse!r}; use one of {', '.join(COLLAPSE_MODES)}")
    kind = a.kind
    is_mod = _is_module(a.name, kind, markers)
    is_op = (kind == "cpu_op") & ~is_mod
    host = a.is_host
    outer = np.full(n, -2, dtype=np.int64)   # outermost op among ancestors-or-self (-1 none)
    inner = np.full(n, -2, dtype=np.int64)   # innermost module among ancestors-or-self
    par = parent.tolist()
    op_l, mod_l = is_op.tolist(), is_mod.tolist()
    for p in np.flatnonzero(host).tolist():
        if outer[p] != -2:
            continue
        stack = []
        q = p
        while q >= 0 and outer[q] == -2:
            stack.append(q)
            q = par[q]
        o, m = (int(outer[q]), int(inner[q])) if q >= 0 else (-1, -1)
        for x in reversed(stack):
            if o < 0 and op_l[x]:
                o = x
            if mod_l[x]:
                m = x
            outer[x] = o
            inner[x] = m
    hp = np.flatnonzero(host)
    o, m = outer[hp], inner[hp]
    if collapse == "op":
        r = np.where(o >= 0, o, hp)
    else:
        r = np.where(m >= 0, m, np.where(o >= 0, o, hp))
    elide = (kind[hp] == "python") & (r == hp) & ~is_mod[hp]
    rep[hp] = np.where(elide, -1, r)
    return rep
