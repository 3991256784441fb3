"""The columnar trace model (docs/model.md, "The column form: TraceGraph"): a saved graph
loaded as columns gives exactly the arrays and the answers the networkx graph gives, on
every synthesized scenario and every real trace; a hostile column payload is refused with
one line; a TraceGraph saves to the same file a DiGraph does."""

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
from opgraph.analysis.collectives import collectives
from opgraph.analysis.critical_path.path import critical_path
from opgraph.analysis.idle import idle_time
from opgraph.analysis.launch_stats import launch_stats
from opgraph.analysis.overlap import comm_overlap
from opgraph.analysis.queue_length import queue_length
from opgraph.cli import main
from opgraph.errors import OpgraphInputError
from opgraph.graph.arrays import GraphArrays
from opgraph.graph.io import GraphPayload, GraphPickler, load_any, load_gpickle, save_gpickle
from opgraph.graph.model import TraceGraph, arrays_of, as_networkx
from opgraph.graph.payload import graph_to_payload
from opgraph.testing.synth import SCENARIOS, synthesize, write_scenario

TRACES = Path(__file__).resolve().parents[2] / "shared" / "traces"
def _breakdown(G, device: bool) -> dict:
    from opgraph.analysis.device_breakdown import device_breakdown, device_breakdown_doc
    from opgraph.analysis.host_breakdown import host_breakdown, host_breakdown_doc
    from opgraph.analysis.window import analysis_window
    from opgraph.analysis.data_markers import data_markers_of
    from opgraph.analysis.graph_frame import graph_frame

    f = graph_frame(G)
    w = analysis_window(f, None, data_markers_of(None), use_steps=True)
    return device_breakdown_doc(device_breakdown(f, w), 3, 10) if device else host_breakdown_doc(host_breakdown(f, w), 3, 5)


def _frame_docs(G) -> dict:
    """The frame-based analyses' documents (breakdown, iterations, summary, overheads, kernel
    stats, sequences, memory timeline), as their commands make them."""
    from opgraph.analysis.categories import gpu_categories
    from opgraph.analysis.counters import cupti_counters
    from opgraph.analysis.info import trace_info
    from opgraph.analysis.data_markers import data_markers_of
    from opgraph.analysis.graph_frame import graph_frame
    from opgraph.analysis.step_times import iterations_doc
    from opgraph.analysis.kernel_stats import kernel_stats
    from opgraph.analysis.memory_bw import memory_bandwidth
    from opgraph.predict.recommendations import recommendations
    from opgraph.analysis.shapes import shapes
    from opgraph.analysis.memory_timeline import memory_timeline
    from opgraph.analysis.summary_doc import summary_doc
    from opgraph.analysis.nvtx import nvtx_summary
    from opgraph.predict.whatif import parse_transforms
    from opgraph.predict.prediction import predict
    from opgraph.predict.model_build import build_calibration, build_lookup
    from opgraph.analysis.overheads import OverheadParams, overhead_samples, overheads_doc
    from opgraph.analysis.roofline import report_doc, roofline
    from opgraph.analysis.sequences import kernel_sequences

    f, p = graph_frame(G), OverheadParams()
    return {"host": lambda: _breakdown(G, False), "device": lambda: _breakdown(G, True),
            "iterations": lambda: iterations_doc(G, None, data_markers_of(None)),
            "summary": lambda: summary_doc(G, None, None, data_markers_of(None)),
            "overheads": lambda: overheads_doc(f, p, True, overhead_samples(f, p, with_shapes=True)),
            "kernel_stats": lambda: kernel_stats(G).to_dict(), "sequences": lambda: kernel_sequences(G).to_dict(),
            "memory_timeline": lambda: memory_timeline(G).to_dict(),
            "report": lambda: report_doc(roofline(G), "kernel", None),
            "categories": lambda: gpu_categories(G).to_dict(), "shapes": lambda: shapes(G).to_dict(),
            "counters": lambda: cupti_counters(G).to_dict(),
            "memory_bw": lambda: memory_bandwidth(G).to_dict(), "advise": lambda: recommendations(G).to_dict(),
            "info": lambda: trace_info(G), "nvtx": lambda: nvtx_summary(G),
            "kernel_lookup": lambda: build_lookup(G).to_dict(), "calibration": lambda: build_calibration(G).to_dict(),
            "predict": lambda: {k: v for k, v in predict(G, parse_transforms(("gemm=0.5",), ("aten::add=2",), "2us"))
                                .to_dict().items() if k != "timings_s"}}


ANALYSES = (idle_time, critical_path, launch_stats, queue_length, comm_overlap, collectives)


def _real_traces() -> list[Path]:
    if not TRACES.is_dir():
        return []
    return sorted(p for p in TRACES.glob("*/*") if p.is_file() and p.suffix != ".md")


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


def assert_same_answers(G: nx.DiGraph, T: TraceGraph, what: str) -> None:
    for fn in ANALYSES:
        def doc(g):
            try:
                return json.dumps(fn(g).to_dict(), sort_keys=True, default=str)
            except Exception as e:  # the same refusal either way counts as the same answer
                return f"{type(e).__name__}: {e}"
        assert doc(G) == doc(T), (what, fn.__name__)
    # the frame analyses, on columns only (no networkx view behind the TraceGraph)
    C = TraceGraph(T.payload)
    a, b = _frame_docs(G), _frame_docs(C)
    for k in a:
        def run(f):
            try:
                return json.dumps(f(), sort_keys=True, default=str)
            except Exception as e:
                return f"{type(e).__name__}: {e}"
        assert run(a[k]) == run(b[k]), (what, k)
    assert C._nx is None, "a frame analysis fell back to networkx"


def _saved_pair(src: Path, tmp: Path) -> tuple[nx.DiGraph, TraceGraph]:
    """The graph of ``src`` loaded both ways from one saved ``.gpickle``."""
    out = tmp / "g.gpickle"
    save_gpickle(load_any(src), out)
    G = load_gpickle(out, require_opgraph=True)
    T = load_gpickle(out, require_opgraph=True, model=True)
    assert isinstance(T, TraceGraph) and type(G) is nx.DiGraph
    return G, T


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_columns_give_the_same_arrays_and_answers_on_every_scenario(tmp_path: Path, scenario: str) -> None:
    trace = write_scenario(synthesize(scenario, steps=3), tmp_path)
    G, T = _saved_pair(trace, tmp_path)
    assert_same_arrays(GraphArrays.from_graph(G), T.arrays)
    assert_same_answers(G, T, scenario)
    # built straight from the raw trace in column form: the same again
    R = load_any(trace, model=True)
    assert isinstance(R, TraceGraph)
    assert_same_arrays(GraphArrays.from_graph(G), R.arrays)


@pytest.mark.skipif(not TRACES.is_dir(), reason="../shared/traces is absent")
@pytest.mark.parametrize("trace", _real_traces(), ids=lambda p: p.name)
def test_columns_give_the_same_arrays_and_answers_on_real_traces(tmp_path: Path, trace: Path) -> None:
    try:
        G0 = load_any(trace)
    except OpgraphInputError:
        pytest.skip("not a trace opgraph builds alone (an ET that pairs with a Kineto trace)")
    G, T = _saved_pair(trace, tmp_path)
    assert G.number_of_nodes() == G0.number_of_nodes() == T.number_of_nodes()
    assert G.number_of_edges() == T.number_of_edges()
    assert_same_arrays(GraphArrays.from_graph(G), T.arrays)
    assert_same_answers(G, T, trace.name)


def test_networkx_view_and_save_round_trip(tmp_path: Path) -> None:
    trace = opgraph.example_trace("gpu_bound", tmp_path)
    T = load_any(trace, model=True)
    G = load_any(trace)
    H = T.to_networkx()
    assert T.to_networkx() is H and as_networkx(T) is H and as_networkx(G) is G
    assert dict(H.nodes(data=True)).keys() == dict(G.nodes(data=True)).keys()
    assert all(H.nodes[n] == d for n, d in G.nodes(data=True))
    assert {(u, v): d for u, v, d in H.edges(data=True)} == {(u, v): d for u, v, d in G.edges(data=True)}
    # a TraceGraph pickles as the DiGraph it stands for (a plain unpickler gives the DiGraph)
    a, b = tmp_path / "a.gpickle", tmp_path / "b.gpickle"
    save_gpickle(T, a)
    save_gpickle(G, b)
    A, B = load_gpickle(a, require_opgraph=True), load_gpickle(b, require_opgraph=True)
    assert type(pickle.loads(a.read_bytes())) is nx.DiGraph
    assert pickle.loads(pickle.dumps(T)).number_of_edges() == G.number_of_edges()  # plain pickle too
    assert dict(A.nodes(data=True)) == dict(B.nodes(data=True))
    assert {(u, v): d for u, v, d in A.edges(data=True)} == {(u, v): d for u, v, d in B.edges(data=True)}
    assert A.graph.keys() == B.graph.keys()
    assert arrays_of(T) is T.arrays
    f = T.node_frame()
    assert len(f) == G.number_of_nodes() and {"eid", "kind", "ts", "dur"} <= set(f.columns)
    e = T.edge_frame()
    assert len(e) == G.number_of_edges() and set(e["kind"]) == {d["kind"] for *_, d in G.edges(data=True)}
    R = TraceGraph.from_networkx(G)
    assert R.to_networkx() is G and R.number_of_edges() == G.number_of_edges()
    with pytest.raises(ValueError):
        TraceGraph.from_networkx(nx.path_graph(3, create_using=nx.DiGraph))


def test_commands_read_the_columns_and_print_the_same(tmp_path: Path) -> None:
    """idle / critical-path / launch-stats / queue-length / overlap on a saved graph
    print what the networkx graph's analyses give."""
    from opgraph.predict.gains import path_document

    trace = opgraph.example_trace("cpu_bound", tmp_path)
    g = tmp_path / "g.gpickle"
    runner = CliRunner()
    assert runner.invoke(main, ["build", str(trace), "-o", str(g)]).exit_code == 0
    G = load_gpickle(g, require_opgraph=True)
    for cmd, fn in (("idle", idle_time), ("critical-path", critical_path), ("launch-stats", launch_stats),
                    ("queue", queue_length), ("overlap", comm_overlap)):
        res = runner.invoke(main, [cmd, str(g), "--json"], catch_exceptions=False)
        assert res.exit_code == 0, res.output
        got = json.loads(res.output)
        # critical-path prints the path document: the result's dict plus the run's gains
        doc = path_document(G, fn(G)) if cmd == "critical-path" else fn(G).to_dict()
        want = json.loads(json.dumps(doc, default=str))
        if cmd == "idle":
            got.pop("blame", None), want.pop("blame", None)  # --top trims the CLI's blame list
        for k in want:
            if k in got:
                assert got[k] == want[k], (cmd, k)


# --------------------------------------------------------------------------- hostile payloads
@pytest.fixture(scope="module")
def payload(tmp_path_factory: pytest.TempPathFactory) -> dict:
    d = tmp_path_factory.mktemp("payload")
    G = load_any(opgraph.example_trace("gpu_bound", d))
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
        load_gpickle(path, require_opgraph=True, model=True)
    for cmd in ("idle", "critical-path", "launch-stats"):
        res = CliRunner().invoke(main, [cmd, str(path)], catch_exceptions=False)
        lines = [ln for ln in res.output.splitlines() if ln.strip()]
        assert res.exit_code == 2 and len(lines) == 1, (case, cmd, res.output)
        assert str(path) in lines[0] and "internal error" not in lines[0] and words in lines[0], lines[0]


def test_cycle_check_agrees_with_kahn_on_random_graphs(monkeypatch: pytest.MonkeyPatch) -> None:
    """The C strongly-connected-components check (large edge sets) and Kahn's algorithm
    agree on random graphs with and without cycles (self-loops included)."""
    import opgraph.graph.cycles as cycles

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


def test_job_graph_columns_give_the_same_cross_rank_path_and_stragglers(tmp_path: Path) -> None:
    """A job graph loaded as columns: the cross-rank critical path (every rank and a subset)
    and the stragglers equal the networkx graph's, and nothing falls back to networkx."""
    from opgraph.analysis.crossrank import crossrank_critical_path
    from opgraph.analysis.stragglers import stragglers

    for files in _job_dirs(tmp_path):
        G = opgraph.load(files)
        out = tmp_path / "job.gpickle"
        save_gpickle(G, out)
        T = load_gpickle(out, require_opgraph=True, model=True)
        assert isinstance(T, TraceGraph) and isinstance(T.graph.get("job"), dict)
        assert_same_arrays(GraphArrays.from_graph(G), T.arrays)
        ranks = sorted(int(r["rank"]) for r in G.graph["job"]["ranks"])
        for sel in (None, ranks[:2]):
            a = json.dumps(crossrank_critical_path(G, sel).to_dict(), sort_keys=True, default=str)
            b = json.dumps(crossrank_critical_path(T, sel).to_dict(), sort_keys=True, default=str)
            assert a == b, (files[0].parent.name, sel)
        assert stragglers(G).to_dict() == stragglers(T).to_dict()
        from opgraph.analysis.info import trace_info
        assert json.dumps(trace_info(G), sort_keys=True, default=str) == json.dumps(trace_info(T), sort_keys=True,
                                                                                   default=str)
        assert T._nx is None
        # and the commands that read the job as columns print the same
        for cmd in (["critical-path", str(out), "--json"], ["stragglers", str(out), "--json"]):
            res = CliRunner().invoke(main, cmd, catch_exceptions=False)
            assert res.exit_code == 0, res.output
        got = json.loads(CliRunner().invoke(main, ["critical-path", str(out), "--json"]).output)
        assert got == json.loads(json.dumps(crossrank_critical_path(G).to_dict(), default=str))


def test_key_positions_dense_and_sparse_ids() -> None:
    """Node keys -> positions, by lookup table (dense ids) or sorted search (sparse ids);
    -1 for keys that are not nodes."""
    from opgraph.graph.arrays import key_positions

    rng = np.random.default_rng(3)
    for ids in (rng.permutation(1000), rng.choice(10**12, 500, replace=False)):
        ids = ids.astype(np.int64)
        keys = np.concatenate([rng.choice(ids, 300), np.array([-5, 10**13, int(ids.max()) + 1])])
        want = np.array([dict(zip(ids.tolist(), range(len(ids)))).get(k, -1) for k in keys.tolist()])
        assert np.array_equal(key_positions(ids, keys), want)
    assert key_positions(np.empty(0, np.int64), np.array([1])).tolist() == [-1]
