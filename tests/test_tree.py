"""The nesting forest is computed once (``GraphArrays.parent`` / ``host_parent``) and walked
by one module (``opgraph.model.tree``): docs/model.md, "Graph"."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest


from opgraph.model.tree import climb_to_first, climb_to_last, mark_ancestors, tree_depths, within
from opgraph.model.table import HOST_KINDS
from conftest import KINETO_DIR, ROOT, load_graph, requires_traces

SYNTH = ROOT / "fixtures" / "synth" / "gpu_bound.json"
REAL = ("hta_critical_path_alexnet.json.gz", "hta_mtia_inference_rank0.json.gz",
        "tracelens_h100_bert_small.json.gz")


def _walk_parent(G: nx.DiGraph, a, host_only: bool) -> np.ndarray:
    """Each node's nest parent by asking networkx, one node at a time."""
    out = np.full(a.n, -1, dtype=np.int64)
    for i, e in enumerate(a.eid.tolist()):
        ps = [u for u in G.predecessors(e) if G.edges[u, e].get("kind") == "nest"]
        assert len(ps) <= 1
        if ps and (not host_only or (G.nodes[e]["kind"] in HOST_KINDS and G.nodes[ps[0]]["kind"] in HOST_KINDS)):
            out[i] = a.pos_of[ps[0]]
    return out


def _check(G: nx.DiGraph) -> None:
    a = G.arrays
    assert a.parent is a.parent  # stored once
    assert np.array_equal(a.parent, _walk_parent(G, a, False))
    assert np.array_equal(a.host_parent, _walk_parent(G, a, True))
    with pytest.raises(ValueError):
        a.parent[0] = 0  # read-only: no analysis changes it for the others
    depth = tree_depths(np.asarray(a.parent))
    for i in range(0, a.n, max(1, a.n // 200)):
        d, p = 0, a.parent[i]
        while p >= 0:
            d, p = d + 1, a.parent[p]
        assert depth[i] == d


@pytest.mark.parametrize("name", REAL)
@requires_traces
@pytest.mark.real_traces
def test_parent_on_real_traces(name: str) -> None:
    p = KINETO_DIR / name
    if not p.is_file():
        pytest.skip(f"{p} not available")
    _check(load_graph(p))


def test_parent_on_a_synthesized_trace() -> None:
    _check(load_graph(SYNTH))


def test_walks_on_a_known_forest() -> None:
    #      0        5
    #     / \\      |
    #    1   4     6
    #   / \\
    #  2   3
    parent = np.array([-1, 0, 1, 1, 0, -1, 5])
    assert tree_depths(parent).tolist() == [0, 1, 2, 2, 1, 0, 1]
    hit = np.array([True, False, False, False, False, False, True])
    assert climb_to_first(np.array([3, 4, 6, 5, -1]), parent, hit).tolist() == [0, 0, 6, -1, -1]
    # the outermost hit of itself and its ancestors: 1 is below 0, both hit
    hit2 = np.array([True, True, False, False, False, False, True])
    assert climb_to_first(np.array([3, 1, 6]), parent, hit2).tolist() == [1, 1, 6]
    assert climb_to_last(np.array([3, 1, 6, 5, -1]), parent, hit2).tolist() == [0, 0, 6, -1, -1]
    assert np.flatnonzero(mark_ancestors(np.array([2, 6]), parent, 7)).tolist() == [0, 1, 5]
    mark = np.array([False, True, False, False, False, False, False])
    assert np.flatnonzero(within(parent, mark)).tolist() == [1, 2, 3]
