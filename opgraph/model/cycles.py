"""Cycles among the edges that must be acyclic (every kind but ``collective``,
docs/model.md): :func:`has_cycle` (a cheap check on int arrays, also run on loaded
graphs) and :func:`break_cycles` (the builder drops the links whose timestamps (ns)
contradict them, with the health warning ``cycle_broken``).
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Callable

import numpy as np

from opgraph.model.edge_kinds import EDGE_KINDS


#: Edge kinds that follow from the order of events on one lane (never dropped to break a cycle).
_STRUCTURAL = frozenset({"nest", "host_seq", "stream_seq"})
#: Cycles broken one edge at a time before the trace is refused.
MAX_CYCLE_BREAKS = 1000


def kahn_order(n: int, src: np.ndarray, dst: np.ndarray, key: np.ndarray | None = None) -> list[int]:
    """Nodes ``0..n-1`` of the edges ``src -> dst`` in a topological order (Kahn's algorithm
    over a CSR view, a plain loop over int lists; a stack, so depth first). The nodes on or
    behind a cycle are left out, so the order is complete exactly when there is none.
    ``key``: the sources are started from in increasing ``key`` (default: node id)."""
    o = np.argsort(src, kind="stable")
    ptr = np.searchsorted(src[o], np.arange(n + 1)).tolist()
    out = dst[o].tolist()
    indeg = np.bincount(dst, minlength=n)
    start = np.flatnonzero(indeg == 0)
    stack = start[::-1].tolist() if key is None else start[np.argsort(-key[start], kind="stable")].tolist()
    deg = indeg.tolist()
    order: list[int] = []
    push, pop, app = stack.append, stack.pop, order.append
    while stack:
        u = pop()
        app(u)
        for k in range(ptr[u], ptr[u + 1]):
            v = out[k]
            deg[v] -= 1
            if deg[v] == 0:
                push(v)
    return order


#: Edge count from which :func:`has_cycle` uses scipy's strongly connected components (C)
#: instead of :func:`kahn_order` (Python); below it the import costs more than it saves.
SCC_MIN_EDGES = 50_000


def cycle_candidates(t_src: np.ndarray, t_dst: np.ndarray) -> np.ndarray:
    """The edges that can lie on a directed cycle, given each edge's source and target time
    (any per-node number). Around a cycle the time differences sum to zero, so a cycle is
    made of same-time edges only, or holds an edge that goes back in time; and every node
    of a cycle lies in the union of the time spans ``[t_dst, t_src]`` of its backward
    edges (the cycle can only come down through a level by such an edge). Returns the mask
    of same-time edges and of edges with both ends in that union."""
    back = t_dst < t_src
    inside = t_dst == t_src
    if back.any():
        lo, hi = t_dst[back], t_src[back]
        o = np.argsort(lo, kind="stable")
        lo, cm = lo[o], np.maximum.accumulate(hi[o])
        start = np.ones(len(lo), dtype=bool)
        start[1:] = lo[1:] > cm[:-1]
        L = lo[start]
        R = cm[np.append(np.flatnonzero(start)[1:] - 1, len(lo) - 1)]

        def within(x: np.ndarray) -> np.ndarray:
            k = np.searchsorted(L, x, side="right") - 1
            return (k >= 0) & (x <= R[np.maximum(k, 0)])
        inside |= within(t_src) & within(t_dst)
    return inside


#: Rounds :func:`ordered_by_raised_times` raises times for before it gives up.
RAISE_ROUNDS = 64


def ordered_by_raised_times(src: np.ndarray, dst: np.ndarray, t: np.ndarray, rounds: int = RAISE_ROUNDS) -> bool:
    """Whether a per-node number that every edge ``src -> dst`` increases was found: proof
    of no cycle. Start from the node times ``t`` (ns, indexed by node id; 1024 steps per
    ns), then, for a few rounds, raise each edge's target above its source where it is not
    (an edge back in time, a wait that started before what it waited for, same-time edges)
    and recheck only the edges out of raised nodes. A cycle never settles; neither may a
    long chain of raises: False then says nothing (the caller searches exactly)."""
    ts, td = t[src], t[dst]
    lo = min(int(ts.min()), int(td.min()))
    hi = max(int(ts.max()), int(td.max()))
    if hi - lo >= 2**52:
        return False
    phi = (np.clip(t, lo, hi) - lo) * 1024
    bad = np.flatnonzero(td <= ts)
    by_src = ss = None
    for _ in range(rounds):
        if not len(bad):
            return True
        raised = dst[bad]
        np.maximum.at(phi, raised, phi[src[bad]] + 1)
        if by_src is None:
            by_src = np.argsort(src, kind="stable")
            ss = src[by_src]
        nodes = np.unique(raised)
        first = np.searchsorted(ss, nodes, "left")
        count = np.searchsorted(ss, nodes, "right") - first
        k = np.repeat(first - np.cumsum(count) + count, count) + np.arange(int(count.sum()))
        out = by_src[k]                      # the edges out of the raised nodes
        bad = out[phi[dst[out]] <= phi[src[out]]]
    return False


def has_cycle(src: np.ndarray, dst: np.ndarray, t: np.ndarray | None = None) -> bool:
    """Whether the edges ``src -> dst`` (node ids, >= 0) contain a directed cycle (no
    networkx graph is built): a self-loop, or a strongly connected component of more than
    one node (``scipy.sparse.csgraph``, linear time in C) for large edge sets, else
    :func:`kahn_order`. With ``t`` (a time per node id), first
    :func:`ordered_by_raised_times` (a recorded trace settles in a few rounds), else only
    the edges :func:`cycle_candidates` keeps are searched."""
    if not len(src):
        return False
    if (src == dst).any():
        return True
    if t is not None and ordered_by_raised_times(src, dst, t):
        return False
    if t is not None:
        keep = cycle_candidates(t[src], t[dst])
        src, dst = src[keep], dst[keep]
        if not len(src):
            return False
    if len(src) >= SCC_MIN_EDGES:
        from scipy.sparse import csr_matrix
        from scipy.sparse.csgraph import connected_components

        hi = int(max(src.max(), dst.max())) + 1
        if hi <= 4 * len(src) + 1024:   # dense ids: no renumbering
            n, s, d = hi, src, dst
        else:
            nodes, inv = np.unique(np.concatenate([src, dst]), return_inverse=True)
            n, s, d = len(nodes), inv[:len(src)], inv[len(src):]
        A = csr_matrix((np.ones(len(s), dtype=np.int8), (s, d)), shape=(n, n))
        k, _ = connected_components(A, directed=True, connection="strong")
        return k < n
    nodes, inv = np.unique(np.concatenate([src, dst]), return_inverse=True)
    return len(kahn_order(len(nodes), inv[:len(src)], inv[len(src):])) < len(nodes)


def break_cycles(ts: np.ndarray, src: np.ndarray, dst: np.ndarray, kcode: np.ndarray,
                 extra: dict[int, dict[str, Any]], warn: Callable[..., None], path: str | None = None
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[int, dict[str, Any]]]:
    """The edges without the links that close a cycle among the kinds that must be acyclic
    (every kind but ``collective``, docs/model.md), with the health warning ``cycle_broken``.

    A cycle needs an edge that goes back in time (or only edges between events with the
    same start), so the check costs one vectorised comparison for an ordinary trace; links
    that contradict the timestamps (a flow pointing back, a runtime call stamped after its
    kernel) are dropped: first every backward link inside a strongly connected component,
    then, for cycles among same-time events, one link per cycle. A cycle made only of
    nesting and lane-order edges (which cannot happen) is refused with one line."""
    from opgraph.errors import OpgraphInputError

    t = ts  # start time by event id: the table's eid is its position
    acyc = kcode != EDGE_KINDS.index("collective")
    back = acyc & (t[dst] < t[src])
    same = acyc & (t[dst] == t[src])
    if not back.any() and not same.any():
        return src, dst, kcode, extra
    if ordered_by_raised_times(src[acyc], dst[acyc], t):   # the usual case: a few raises settle it
        return src, dst, kcode, extra
    import networkx as nx

    structural = np.isin(kcode, [EDGE_KINDS.index(k) for k in _STRUCTURAL])
    inside = np.zeros(len(src), dtype=bool)
    inside[acyc] = cycle_candidates(t[src[acyc]], t[dst[acyc]])
    cand = np.flatnonzero(inside)
    if not has_cycle(src[cand], dst[cand]):
        return src, dst, kcode, extra
    H = nx.DiGraph()
    H.add_edges_from(zip(src[cand].tolist(), dst[cand].tolist(), ({"j": j} for j in cand.tolist())))
    drop: list[int] = []
    for comp in nx.strongly_connected_components(H):
        if len(comp) < 2:
            continue
        sub = H.subgraph(comp)
        drop += [d["j"] for u, v, d in sub.edges(data=True) if back[d["j"]] and not structural[d["j"]]]
    H.remove_edges_from([(int(src[j]), int(dst[j])) for j in drop])
    for _ in range(MAX_CYCLE_BREAKS):
        try:
            cyc = nx.find_cycle(H)
        except nx.NetworkXNoCycle:
            break
        js = [H.edges[u, v]["j"] for u, v, *_ in cyc]
        links = [j for j in js if not structural[j]]
        if not links:
            raise OpgraphInputError(path, f"the nesting and lane-order edges form a cycle through events "
                                          f"{[int(src[j]) for j in js][:8]}")
        j = max(links, key=lambda j: (int(t[src[j]]) - int(t[dst[j]]), EDGE_KINDS[kcode[j]] == "flow"))
        drop.append(j)
        H.remove_edge(int(src[j]), int(dst[j]))
    else:
        raise OpgraphInputError(path, f"the trace's links form more than {MAX_CYCLE_BREAKS} cycles "
                                      "(timestamps that contradict the launch/sync/flow links)")
    kinds = Counter(EDGE_KINDS[kcode[j]] for j in drop)
    warn("cycle_broken", len(drop), int(dst[drop[0]]),
         "links that closed a cycle (their timestamps contradict them) were dropped: "
         + ", ".join(f"{n} {k}" for k, n in sorted(kinds.items())))
    keep = np.ones(len(src), dtype=bool)
    keep[drop] = False
    remap = np.cumsum(keep) - 1
    extra = {int(remap[j]): a for j, a in extra.items() if keep[j]}
    return src[keep], dst[keep], kcode[keep], extra


__all__ = ["MAX_CYCLE_BREAKS", "SCC_MIN_EDGES", "kahn_order", "cycle_candidates", "has_cycle", "break_cycles"]
