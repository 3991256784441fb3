"""Steps: finding them (ProfilerStep#N, --step-regex, GPU annotations, data-loader markers),
their CPU/GPU spans and kernel time, and trimming a trace to some of them.

Known answers come from the synthesizer's ``steps`` (ns). Real traces, when present: the
step count equals the number of distinct ProfilerStep#N the trace holds.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import networkx as nx
import pytest
from click.testing import CliRunner

from opgraph.model.trace_graph import TraceGraph
from opgraph.analysis.window import analysis_window
from opgraph.analysis.steps import find_iterations
from opgraph.analysis.step_times import iteration_table, iterations_doc
from opgraph.analysis.trim import trim_table
from opgraph.intervals import IntervalSet, union_intervals
from opgraph.errors import OpgraphInputError
from opgraph.graph import build_graph, node_kind_counts
from opgraph.ingest.readers import read_trace
from opgraph.schemas_util import validation_error
from opgraph.testing import SCENARIOS, synthesize, write_scenario

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures" / "synth"


def _scenario(name: str, tmp_path: Path, steps: int = 3):
    sc = synthesize(name, steps=steps)
    path = write_scenario(sc, tmp_path)
    table = read_trace(path)
    return table, build_graph(table), sc.answers


# ----------------------------------------------------------------------- intervals
def test_union_and_covered():
    s, e = union_intervals([0, 5, 20, 30], [10, 12, 25, 30])
    assert s.tolist() == [0, 20, 30] and e.tolist() == [12, 25, 30]
    iv = IntervalSet([0, 20], [10, 30])
    assert iv.total == 20
    assert iv.covered([-5, 5, 10, 0, 25], [5, 25, 20, 100, 26]).tolist() == [5, 10, 0, 20, 1]


# ----------------------------------------------------------------------- synthesized
@pytest.mark.parametrize("name", SCENARIOS)
def test_steps_match_synth(name, tmp_path):
    _, G, ans = _scenario(name, tmp_path)
    tab, steps = iteration_table(G)
    assert steps.source == "profiler_step"
    assert len(tab) == len(ans["steps"])
    for row, exp in zip(tab.itertuples(index=False), ans["steps"]):
        assert row.name == exp["name"]
        assert row.cpu_start_ns == exp["cpu_start_ns"] and row.cpu_end_ns == exp["cpu_end_ns"]
        assert row.cpu_dur_ns == exp["cpu_dur_ns"]
        assert row.gpu_start_ns == exp["gpu_start_ns"] and row.gpu_end_ns == exp["gpu_end_ns"]
        assert row.gpu_busy_ns == exp["gpu_busy_ns"]
        assert row.activities == exp["num_device_activities"]
    doc = iterations_doc(G)
    assert validation_error(doc, "iterations.schema.json") is None
    assert doc["count"] == len(ans["steps"])


def test_kernel_time_by_construction(tmp_path):
    # cpu_bound: 12 kernels of 5 µs per step; gpu_bound: 6 of 500 µs
    _, G, _ = _scenario("cpu_bound", tmp_path / "a", steps=2)
    tab, _ = iteration_table(G)
    assert tab["kernels"].tolist() == [12, 12] and tab["kernel_ns"].tolist() == [60_000, 60_000]
    _, G, _ = _scenario("gpu_bound", tmp_path / "b", steps=2)
    tab, _ = iteration_table(G)
    assert tab["kernel_ns"].tolist() == [3_000_000, 3_000_000]
    assert (tab["gpu_busy_ns"] == 3_000_000).all()  # queued back to back


def test_step_regex_and_data_loader_fallback():
    G = nx.DiGraph()

    def add(i, kind, name, ts, dur, tid=1):
        G.add_node(i, kind=kind, name=name, ts=ts, dur=dur, pid=1, tid=tid, device=-1, stream=-1,
                   correlation=-1, external_id=-1, args={})

    for k in range(4):
        add(10 * k, "annotation", f"train_iter {k + 7}", k * 1000, 900)
        add(10 * k + 1, "annotation", "enumerate(DataLoader)#_Iter.__next__", k * 1000 + 5, 50)
    G = TraceGraph.of(G)
    st = find_iterations(G, step_regex=r"^train_iter")
    assert st.source == "regex" and st.table["step"].tolist() == [7, 8, 9, 10]
    st = find_iterations(G)  # no ProfilerStep: DataLoader markers, M markers -> M-1 steps
    assert st.source == "data_loader" and len(st) == 3
    assert st.table["ts"].tolist() == [5, 1005, 2005] and st.table["end"].tolist() == [1005, 2005, 3005]
    st = find_iterations(G, data_markers=["^nothing$"])
    assert st.source == "none" and len(st) == 0
    w = analysis_window(G, step_regex=r"^train_iter")
    assert (w.start, w.end) == (0, 3900)
    assert w.data_loading_ns == 4 * 50 and w.host_runtime_ns == 3900 - 200
    w = analysis_window(G, step_regex=r"^train_iter", data_markers=())
    assert w.data_loading_ns == 0


def test_gpu_annotation_steps():
    G = nx.DiGraph()
    for k in range(2):
        G.add_node(k, kind="gpu_annotation", name=f"ProfilerStep#{k + 3}", ts=k * 100, dur=90, pid=0, tid=7,
                   device=0, stream=7, correlation=-1, external_id=-1, args={})
    st = find_iterations(TraceGraph.of(G))
    assert st.source == "gpu_annotation" and st.table["step"].tolist() == [3, 4]


# ----------------------------------------------------------------------- trimming
def test_trim_table_cpu_bound(tmp_path):
    table, G, ans = _scenario("cpu_bound", tmp_path, steps=3)
    t = trim_table(table, 1, 2)
    assert t.events["eid"].tolist() == list(range(len(t.events)))
    assert t.meta["trimmed"]["steps"] == ["ProfilerStep#2"]
    assert (t.events["source_eid"].diff().dropna() > 0).all()
    G1 = build_graph(t)
    full = node_kind_counts(G)
    one = node_kind_counts(G1)
    assert {k: v * 3 for k, v in one.items()} == dict(full)
    tab, _ = iteration_table(G1)
    exp = ans["steps"][1]
    r = tab.iloc[0]
    assert (r["cpu_start_ns"], r["cpu_end_ns"], r["gpu_busy_ns"], r["activities"]) == (
        exp["cpu_start_ns"], exp["cpu_end_ns"], exp["gpu_busy_ns"], exp["num_device_activities"])
    # every kernel keeps its launch, and the fwdbwd flows of the step survive
    kinds = Counter(d["kind"] for _, _, d in G1.edges(data=True))
    assert kinds["launch"] == one["kernel"] and kinds["flow"] == 4


@pytest.mark.parametrize("name", ["gpu_bound", "two_stream_event_wait", "cuda_graph", "old_format_2021",
                                  "sync_every_op", "ns_float"])
def test_trim_keeps_gpu_work_and_links(name, tmp_path):
    table, G, ans = _scenario(name, tmp_path, steps=3)
    t = trim_table(table, -2, 3)  # the last two steps
    G1 = build_graph(t)
    tab, st = iteration_table(G1)
    assert st.table["name"].tolist() == [s["name"] for s in ans["steps"][1:]]
    for r, exp in zip(tab.itertuples(index=False), ans["steps"][1:]):
        assert (r.gpu_start_ns, r.gpu_end_ns, r.gpu_busy_ns, r.activities) == (
            exp["gpu_start_ns"], exp["gpu_end_ns"], exp["gpu_busy_ns"], exp["num_device_activities"])
    full = Counter(d["kind"] for _, _, d in G.edges(data=True))
    part = Counter(d["kind"] for _, _, d in G1.edges(data=True))
    for k in ("launch", "sync", "event_wait"):
        assert part[k] * 3 == full[k] * 2, k


def test_trim_errors(tmp_path):
    table, _, _ = _scenario("gpu_bound", tmp_path, steps=2)
    with pytest.raises(OpgraphInputError, match="empty selection"):
        trim_table(table, 1, 1)
    with pytest.raises(OpgraphInputError, match="out of range"):
        trim_table(table, 0, 5)
    with pytest.raises(OpgraphInputError, match="no steps"):
        trim_table(table, 0, 1, step_regex="^nope$")


# ----------------------------------------------------------------------- CLI
def test_iterations_cli(tmp_path):
    from opgraph.cli import main

    r = CliRunner().invoke(main, ["iterations", str(FIXTURES / "cpu_bound.json"), "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert validation_error(doc, "iterations.schema.json") is None and doc["count"] == 3
    r = CliRunner().invoke(main, ["iterations", str(FIXTURES / "cpu_bound.json")])
    assert r.exit_code == 0 and "ProfilerStep#1" in r.output
    r = CliRunner().invoke(main, ["iterations", str(FIXTURES / "cpu_bound.json"), "--csv", str(tmp_path)])
    assert r.exit_code == 0 and (tmp_path / "cpu_bound.iterations.csv").exists()
    r = CliRunner().invoke(main, ["iterations", str(FIXTURES / "cpu_bound.json"), "--step-regex", "("])
    assert r.exit_code == 2

# Real traces (step count = distinct ProfilerStep#N) are checked in tests/test_breakdown.py,
# together with the other per-trace contracts, so that each trace is read and built once.


def test_build_iterations_option_trims_steps(tmp_path):
    """`opgraph build --iterations A:B` keeps steps A..B-1 and the GPU work they launched."""
    from click.testing import CliRunner

    from opgraph.analysis.info import find_steps
    from opgraph.cli import main
    from opgraph.graph.io import load_any

    src = Path(__file__).resolve().parents[1] / "fixtures" / "synth" / "gpu_bound.json"
    out = tmp_path / "g.gpickle"
    r = CliRunner().invoke(main, ["build", str(src), "--iterations", "1:3", "-o", str(out)])
    assert r.exit_code == 0, r.output
    G = load_any(out)
    assert find_steps(G)["name"].tolist() == ["ProfilerStep#2", "ProfilerStep#3"]
    kernels = [d for _, d in G.nodes(data=True) if d["kind"] == "kernel"]
    launched = {v for u, v, d in G.edges(data=True) if d["kind"] == "launch"}
    assert kernels and len(launched) == len(kernels)
    r = CliRunner().invoke(main, ["build", str(src), "--iterations", "nope", "-o", str(out)])
    assert r.exit_code == 2 and "--iterations" in r.output


def test_nvtx_iteration_ranges_are_steps():
    """Nsight Systems traces mark iterations with NVTX ranges named ``Iteration N``."""
    from opgraph.analysis.critical_path.path import critical_path
    from opgraph.analysis.info import find_steps
    from opgraph.graph.io import load_any

    G = load_any(Path(__file__).resolve().parents[1] / "fixtures" / "nsys" / "synth.nsys.json")
    assert find_steps(G)["name"].tolist() == ["Iteration 1", "Iteration 2"]
    cp = critical_path(G)
    assert cp.window_mode == "steps" and [w.name for w in cp.windows] == ["Iteration 1", "Iteration 2"]
    assert all(w.length_ns == w.span_ns for w in cp.windows)


def test_union_length_equals_merged_intervals() -> None:
    """opgraph.intervals: the union length (int for ns, float for µs) equals the length of
    the merged intervals, on random interval sets, and the gaps add up to span - busy."""
    import numpy as np

    from opgraph.intervals import union_gaps, union_length, union_length_by

    rng = np.random.default_rng(7)
    for _ in range(200):
        n = int(rng.integers(1, 40))
        s = rng.integers(0, 1000, n).astype(np.int64)
        e = s + rng.integers(0, 200, n)
        ms, me = union_intervals(s, e)
        assert union_length(s, e) == int((me - ms).sum())
        assert union_length(s.astype(float), e.astype(float)) == float((me - ms).sum())
        o = np.argsort(s, kind="stable")
        busy, g0, g1, _ = union_gaps(s[o], e[o])
        assert busy == int((me - ms).sum()) and busy + int((g1 - g0).sum()) == int(e.max() - s.min())
        key = rng.integers(0, 3, n)
        by = union_length_by(key, s, e)
        for k in np.unique(key):
            assert by[k] == union_length(s[key == k], e[key == k])
    assert union_length(np.array([], np.int64), np.array([], np.int64)) == 0
