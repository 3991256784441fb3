"""The trace model (docs/model.md, "The trace model: TraceGraph"): the builder and every
loader give a :class:`TraceGraph`; its networkx view round-trips (views, saves, node-link
JSON, a graph pickled the ordinary way by an older opgraph); the API takes a DiGraph back
into columns and answers the same; a hostile column payload is refused with one line."""

from __future__ import annotations

import copy
import json
import pickle
from pathlib import Path

import networkx as nx
import numpy as np
import pytest
from click.testing import CliRunner

import opgraph
from opgraph.cli import main
from opgraph.errors import OpgraphInputError
from opgraph.model.arrays import GraphArrays
from opgraph.graph.io import GraphPayload, GraphPickler, load_any, load_gpickle, save_gpickle, save_graph
from opgraph.model.trace_graph import TraceGraph
from opgraph.model.payload import graph_to_payload
from opgraph.model.validate import DIGRAPH_STATE

TRACES = Path(__file__).resolve().parents[2] / "shared" / "traces"


def assert_same_arrays(a: GraphArrays, b: GraphArrays) -> None:
    for f in ("eid", "ts", "end", "device", "stream", "lane", "rank"):
        assert np.array_equal(getattr(a, f), getattr(b, f)), f
    for f in ("kind", "name", "pid", "tid"):
        x, y = getattr(a, f).tolist(), getattr(b, f).tolist()
        assert len(x) == len(y) and all(u == v or (u != u and v != v) for u, v in zip(x, y)), f
    assert a.edges.keys() == b.edges.keys()
    for k in a.edges:
        assert np.array_equal(a.edges[k][0], b.edges[k][0]) and np.array_equal(a.edges[k][1], b.edges[k][1]), k
    ea, eb = a.edge_attrs or {}, b.edge_attrs or {}
    assert {k: sorted(v) for k, v in ea.items()} == {k: sorted(v) for k, v in eb.items()}
    for k in ea:
        for nm in ea[k]:
            assert np.array_equal(ea[k][nm], eb[k][nm]), (k, nm)
    assert a.pos_of == b.pos_of


def _same_nx(A: nx.DiGraph, B: nx.DiGraph) -> None:
    assert list(A.nodes) == list(B.nodes)
    assert dict(A.nodes(data=True)) == dict(B.nodes(data=True))
    assert {(u, v): d for u, v, d in A.edges(data=True)} == {(u, v): d for u, v, d in B.edges(data=True)}
    assert A.graph.keys() == B.graph.keys()


def _plain_pickle(G: nx.DiGraph, path: Path) -> None:
    """``G`` pickled the ordinary way (no column form), as a networkx graph that opgraph's
    pickler could not reduce to columns is written."""
    class Plain(pickle.Pickler):
        def reducer_override(self, obj):
            if type(obj) is nx.DiGraph:
                return nx.DiGraph, (), {k: v for k, v in obj.__dict__.items() if k in DIGRAPH_STATE}
            return GraphPickler.reducer_override(self, obj)
    with open(path, "wb") as fh:
        Plain(fh, protocol=5).dump(G)


def test_builder_and_loaders_give_a_trace_graph(tmp_path: Path) -> None:
    trace = opgraph.example_trace("gpu_bound", tmp_path)
    T = load_any(trace)
    assert isinstance(T, TraceGraph) and T._nx is None
    assert isinstance(opgraph.load(trace), TraceGraph) and isinstance(opgraph.build(trace), TraceGraph)
    for suffix in (".gpickle", ".json.gz", ".json"):
        out = tmp_path / f"g{suffix}"
        save_graph(T, out)
        L = load_any(out)
        assert isinstance(L, TraceGraph), suffix
        assert_same_arrays(T.arrays, L.arrays)
        _same_nx(T.to_networkx(), L.to_networkx())


def test_networkx_view_round_trips(tmp_path: Path) -> None:
    trace = opgraph.example_trace("gpu_bound", tmp_path)
    T = load_any(trace)
    H = T.to_networkx()
    assert T.to_networkx() is H and {"cpu_op", "runtime", "kernel"} <= {d["kind"] for _, d in H.nodes(data=True)}
    # the view back into columns: the same arrays, and the view kept
    R = TraceGraph.of(H)
    assert TraceGraph.of(T) is T and R.to_networkx() is H
    assert_same_arrays(T.arrays, R.arrays)
    assert R.number_of_nodes() == T.number_of_nodes() and R.number_of_edges() == T.number_of_edges()
    # a TraceGraph pickles as the DiGraph it stands for (a plain unpickler gives the DiGraph)
    a, b = tmp_path / "a.gpickle", tmp_path / "b.gpickle"
    save_gpickle(T, a)
    save_gpickle(H, b)
    A, B = load_gpickle(a), load_gpickle(b)
    assert_same_arrays(A.arrays, B.arrays)
    _same_nx(A.to_networkx(), B.to_networkx())
    assert type(pickle.loads(a.read_bytes())) is nx.DiGraph
    assert pickle.loads(pickle.dumps(T)).number_of_edges() == T.number_of_edges()  # plain pickle too
    f = T.node_frame()
    assert len(f) == T.number_of_nodes() and {"eid", "kind", "ts", "dur"} <= set(f.columns)
    e = T.edge_frame()
    assert len(e) == T.number_of_edges() and set(e["kind"]) == {d["kind"] for *_, d in H.edges(data=True)}
    with pytest.raises(ValueError):
        TraceGraph.from_networkx(nx.path_graph(3, create_using=nx.DiGraph))
    with pytest.raises(TypeError):
        TraceGraph.of({"nodes": []})


@pytest.mark.parametrize("scenario", ["gpu_bound", "cpu_bound", "two_stream_event_wait"])
def test_api_takes_a_networkx_graph_into_columns(tmp_path: Path, scenario: str) -> None:
    """A ``DiGraph`` given to the API is taken back into columns: the same answers."""
    T = opgraph.load(opgraph.example_trace(scenario, tmp_path))
    H = T.to_networkx()
    for fn in (opgraph.idle, opgraph.critical_path, opgraph.launch_stats, opgraph.queue_length,
               opgraph.kernel_stats, opgraph.summary):
        a = json.dumps(fn(T).to_dict(), sort_keys=True, default=str)
        b = json.dumps(fn(H).to_dict(), sort_keys=True, default=str)
        assert a == b, (scenario, fn.__name__)
    bad = H.copy()
    next(iter(bad.nodes.values()))["extra"] = 1
    with pytest.raises(ValueError, match="not in the shape opgraph builds"):
        opgraph.idle(bad)


def test_graph_pickled_the_ordinary_way_loads_as_columns(tmp_path: Path) -> None:
    """A ``.gpickle`` holding a plain ``DiGraph`` (no column form) loads as a TraceGraph
    with the same answers; one that does not have opgraph's shape is one line."""
    T = load_any(opgraph.example_trace("sync_every_op", tmp_path))
    old = tmp_path / "old.gpickle"
    _plain_pickle(T.to_networkx(), old)
    L = load_gpickle(old)
    assert isinstance(L, TraceGraph)
    assert_same_arrays(T.arrays, L.arrays)
    assert opgraph.critical_path(L).to_dict() == opgraph.critical_path(T).to_dict()
    odd = T.to_networkx().copy()
    next(iter(odd.nodes.values()))["extra"] = 1
    _plain_pickle(odd, old)
    res = CliRunner().invoke(main, ["idle", str(old)])
    assert res.exit_code == 2 and len(res.output.strip().splitlines()) == 1 and str(old) in res.output
    assert "not in the shape opgraph builds" in res.output


# --------------------------------------------------------------------------- hostile payloads
@pytest.fixture(scope="module")
def payload(tmp_path_factory: pytest.TempPathFactory) -> dict:
    d = tmp_path_factory.mktemp("payload")
    G = load_any(opgraph.example_trace("gpu_bound", d)).to_networkx()
    p = graph_to_payload(G)
    assert p is not None
    return p


def _edit_kind_code(p: dict) -> None:
    u, c = p["node_cols"]["kind"]
    c = c.copy()
    c[3] = len(u) + 5
    p["node_cols"]["kind"] = (u, c)


def _edit_unknown_kind(p: dict) -> None:
    u, c = p["node_cols"]["kind"]
    p["node_cols"]["kind"] = (np.array(["bogus"] + u.tolist()[1:], dtype=object), c)


def _edit_float_ts(p: dict) -> None:
    p["node_cols"]["ts"] = p["node_cols"]["ts"].astype(float)


def _edit_short_dur(p: dict) -> None:
    p["node_cols"]["dur"] = p["node_cols"]["dur"][:-1]


def _edit_huge_dur(p: dict) -> None:
    d = p["node_cols"]["dur"].copy()
    d[0] = np.iinfo(np.int64).max
    p["node_cols"]["dur"] = d


def _edit_dangling_edge(p: dict) -> None:
    s = p["dst"].copy()
    s[0] = 10**9
    p["dst"] = s


def _edit_cycle(p: dict) -> None:
    ku, kc = p["edge_kind"]
    j = int(np.flatnonzero(ku[kc] == "nest")[0])
    p["src"] = np.append(p["src"], p["dst"][j])
    p["dst"] = np.append(p["dst"], p["src"][j])
    p["edge_kind"] = (ku, np.append(kc, kc[j]))


def _edit_duplicate_pair(p: dict) -> None:
    ku, kc = p["edge_kind"]
    p["src"] = np.append(p["src"], p["src"][0])
    p["dst"] = np.append(p["dst"], p["dst"][0])
    p["edge_kind"] = (ku, np.append(kc, kc[0]))


def _edit_id_without_event(p: dict) -> None:
    n = p["nodes"].copy()
    n[-1] = 10**9
    p["nodes"] = n


def _edit_duplicate_id(p: dict) -> None:
    n = p["nodes"].copy()
    n[1] = n[0]
    p["nodes"] = n


def _edit_missing_column(p: dict) -> None:
    del p["node_cols"]["stream"]


def _edit_extra_bomb(p: dict) -> None:
    x: list = []
    for _ in range(40):
        x = [x, x]
    p["edge_extra"] = {0: {"b": x}}


def _edit_extra_index(p: dict) -> None:
    p["edge_extra"] = {10**9: {"inferred": True}}


def _edit_graph_not_dict(p: dict) -> None:
    p["graph"] = ["events"]


def _edit_name_object(p: dict) -> None:
    u, c = p["node_cols"]["name"]
    u = u.copy()
    u[int(c[0])] = {"a": 1}
    p["node_cols"]["name"] = (u, c)


HOSTILE = {
    "kind code out of range": (_edit_kind_code, "codes out of range"),
    "unknown kind": (_edit_unknown_kind, "expected one of the event kinds"),
    "float times": (_edit_float_ts, "int64 array"),
    "short column": (_edit_short_dur, "int64 array"),
    "duration past int64": (_edit_huge_dur, "must fit int64"),
    "dangling edge": (_edit_dangling_edge, "not a node of the graph"),
    "cycle": (_edit_cycle, "cycle"),
    "pair linked twice": (_edit_duplicate_pair, "linked twice"),
    "id without event row": (_edit_id_without_event, "no row in the event table"),
    "id listed twice": (_edit_duplicate_id, "listed twice"),
    "missing column": (_edit_missing_column, "node columns"),
    "bomb in edge attributes": (_edit_extra_bomb, "deep"),
    "edge attributes of no edge": (_edit_extra_index, "does not exist"),
    "graph attributes not a dict": (_edit_graph_not_dict, "not a dict"),
    "name that is an object": (_edit_name_object, "expected a string"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_column_payload_is_one_line(tmp_path: Path, payload: dict, case: str) -> None:
    edit, words = HOSTILE[case]
    p = copy.deepcopy(payload)
    edit(p)
    path = tmp_path / "bad.gpickle"
    with open(path, "wb") as fh:
        GraphPickler(fh, protocol=5).dump(GraphPayload(p))
    with pytest.raises(OpgraphInputError, match=words):
        load_gpickle(path)
    for cmd in ("idle", "critical-path", "launch-stats"):
        res = CliRunner().invoke(main, [cmd, str(path)], catch_exceptions=False)
        lines = [ln for ln in res.output.splitlines() if ln.strip()]
        assert res.exit_code == 2 and len(lines) == 1, (case, cmd, res.output)
        assert str(path) in lines[0] and "internal error" not in lines[0] and words in lines[0], lines[0]


def test_cycle_check_agrees_with_kahn_on_random_graphs(monkeypatch: pytest.MonkeyPatch) -> None:
    """The C strongly-connected-components check (large edge sets), Kahn's algorithm and the
    check restricted by node times (the load's) agree on random graphs with and without
    cycles (self-loops included)."""
    import opgraph.model.cycles as cycles

    rng = np.random.default_rng(7)
    seen = set()
    for trial in range(150):
        n = int(rng.integers(2, 3000))
        m = int(rng.integers(1, 4000))
        s, d = rng.integers(0, n, m), rng.integers(0, n, m)
        if trial % 2 == 0:  # oriented by id: a DAG
            lo, hi = np.minimum(s, d), np.maximum(s, d)
            keep = lo != hi
            s, d = lo[keep], hi[keep]
        nodes, inv = np.unique(np.concatenate([s, d]), return_inverse=True)
        want = len(cycles.kahn_order(len(nodes), inv[:len(s)], inv[len(s):])) < len(nodes)
        monkeypatch.setattr(cycles, "SCC_MIN_EDGES", 0)
        assert cycles.has_cycle(s, d) == want, trial
        monkeypatch.setattr(cycles, "SCC_MIN_EDGES", 10**9)
        assert cycles.has_cycle(s, d) == want, trial
        # with node times (few distinct values, so same-time cycles occur): the edges
        # cycle_candidates keeps hold every cycle
        t = rng.integers(0, 1 + trial % 7, n).astype(np.int64) * int(rng.integers(1, 1000))
        assert cycles.has_cycle(s, d, t) == want, trial
        # raised times order every edge only where there is no cycle; with times that
        # mostly follow the edges (a recorded trace's), they settle
        if len(s):
            assert not (want and cycles.ordered_by_raised_times(s, d, t)), trial
            if not want:
                assert cycles.ordered_by_raised_times(s, d, np.arange(n, dtype=np.int64) * 10), trial
        seen.add(want)
    assert seen == {True, False}
    # sparse ids (renumbered before the SCC pass) and a lone self-loop
    monkeypatch.setattr(cycles, "SCC_MIN_EDGES", 0)
    assert cycles.has_cycle(np.array([10**12, 5]), np.array([5, 10**12]))
    assert not cycles.has_cycle(np.array([10**12, 5]), np.array([5, 7]))
    assert cycles.has_cycle(np.array([3]), np.array([3]))


def _job_dirs(tmp_path: Path) -> list[list[Path]]:
    from opgraph.testing.synth_multirank import synthesize_job, write_job

    jobs = [write_job(synthesize_job(world_size=4, seq=seq), tmp_path / f"job_{seq}") for seq in (True, False)]
    dlrm = sorted(TRACES.glob("A_kineto/param_dlrm_8gpu_rank*.pt.trace.json.gz")) if TRACES.is_dir() else []
    return jobs + ([dlrm] if dlrm else [])


def test_saved_job_graph_gives_the_built_one_answers(tmp_path: Path) -> None:
    """A job graph saved and loaded again: the same columns, the same cross-rank critical
    path (every rank and a subset), stragglers and info, with no networkx view made; the
    commands print the same."""
    from opgraph.analysis.crossrank import crossrank_critical_path
    from opgraph.analysis.info import trace_info
    from opgraph.analysis.stragglers import stragglers

    for files in _job_dirs(tmp_path):
        G = opgraph.load(files)
        out = tmp_path / "job.gpickle"
        save_gpickle(G, out)
        T = load_gpickle(out)
        assert isinstance(T, TraceGraph) and isinstance(T.graph.get("job"), dict)
        assert_same_arrays(G.arrays, T.arrays)
        ranks = sorted(int(r["rank"]) for r in G.graph["job"]["ranks"])
        for sel in (None, ranks[:2]):
            a = json.dumps(crossrank_critical_path(G, sel).to_dict(), sort_keys=True, default=str)
            b = json.dumps(crossrank_critical_path(T, sel).to_dict(), sort_keys=True, default=str)
            assert a == b, (files[0].parent.name, sel)
        assert stragglers(G).to_dict() == stragglers(T).to_dict()
        assert json.dumps(trace_info(G), sort_keys=True, default=str) == json.dumps(trace_info(T), sort_keys=True,
                                                                                   default=str)
        assert T._nx is None and G._nx is None
        for cmd in (["critical-path", str(out), "--json"], ["stragglers", str(out), "--json"]):
            res = CliRunner().invoke(main, cmd, catch_exceptions=False)
            assert res.exit_code == 0, res.output
        got = json.loads(CliRunner().invoke(main, ["critical-path", str(out), "--json"]).output)
        assert got == json.loads(json.dumps(crossrank_critical_path(G).to_dict(), default=str))


def test_key_positions_dense_and_sparse_ids() -> None:
    """Node keys -> positions, by lookup table (dense ids) or sorted search (sparse ids);
    -1 for keys that are not nodes."""
    from opgraph.model.arrays import key_positions

    rng = np.random.default_rng(3)
    for ids in (rng.permutation(1000), rng.choice(10**12, 500, replace=False)):
        ids = ids.astype(np.int64)
        keys = np.concatenate([rng.choice(ids, 300), np.array([-5, 10**13, int(ids.max()) + 1])])
        want = np.array([dict(zip(ids.tolist(), range(len(ids)))).get(k, -1) for k in keys.tolist()])
        assert np.array_equal(key_positions(ids, keys), want)
    assert key_positions(np.empty(0, np.int64), np.array([1])).tolist() == [-1]
