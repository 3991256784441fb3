"""The host nesting tree of a graph's columns: each host event's parent, and the events
that lie inside a range of interest (docs/model.md, "Nesting")."""

from __future__ import annotations

import numpy as np

from opgraph.graph.arrays import GraphArrays
from opgraph.graph.threads import BLOCKING_WAIT_RE
from opgraph.names import DATALOADER_RE, annotation_like

#: Nesting deeper than this is not climbed (no real trace nests past a few hundred levels).
MAX_DEPTH = 4096


def host_parent(a: GraphArrays) -> np.ndarray:
    """Per node position: the position of its host nest parent (-1: none or not host)."""
    ns, nd = a.out_edges("nest")
    host = a.is_host
    m = host[ns] & host[nd]
    parent = np.full(a.n, -1, dtype=np.int64)
    parent[nd[m]] = ns[m]
    return parent


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


def data_loading_owners(a: GraphArrays, parent: np.ndarray | None = None) -> np.ndarray:
    """Per node: a host event whose own time is a data-loading wait: a DataLoader's
    ``__next__`` range (:data:`~opgraph.names.DATALOADER_RE`) and, inside one, the
    annotations, Python frames and blocking waits (the worker queue's ``get``). Ops and
    runtime calls inside it stay CPU work (a single-process loader's collate)."""
    host = a.is_host
    dl = host & a.names_match(DATALOADER_RE)
    if not dl.any():
        return dl
    par = host_parent(a) if parent is None else parent
    inside = within(par, dl)
    waiting = annotation_like(a.kind, a.name) | (a.kind == "python") | a.names_match(BLOCKING_WAIT_RE)
    return host & inside & (dl | waiting)


__all__ = ["MAX_DEPTH", "host_parent", "within", "data_loading_owners"]
