"""Multistream analysis: union busy time, per-stream active, overlap, idle, QPS.

Known answers: the seed's worked QPS example, a hand-built three-stream example (where the
seed's sweep is wrong), and the synthesizer's GPU answers. Times are ns unless named µs.
"""

from __future__ import annotations

import json
from pathlib import Path

import networkx as nx
import numpy as np
import pytest
from click.testing import CliRunner

from opgraph.model.trace_graph import TraceGraph
from opgraph.analysis.multistream import device_stats, qps, seed_overlap_sweep, stream_stats
from opgraph.analysis.summary_doc import summary_doc
from opgraph.intervals import overlap_sweep
from opgraph.graph import build_graph
from opgraph.ingest.readers import read_trace
from opgraph.schemas_util import validation_error
from opgraph.testing import synthesize, write_scenario

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures" / "synth"


def _graph_of(name: str, tmp_path: Path, steps: int = 3):
    sc = synthesize(name, steps=steps)
    path = write_scenario(sc, tmp_path)
    return build_graph(read_trace(path)), sc.answers, path


def three_stream_graph() -> TraceGraph:
    """Kernels (µs): stream 1: [0,100) [150,250); stream 2: [50,120); stream 3: [90,200)
    [300,310). Union [0,250) + [300,310) = 260; Σ per-stream active = 200 + 70 + 120 = 390;
    overlap = 130."""
    G = nx.DiGraph()
    kernels = [(1, 0, 100), (1, 150, 250), (2, 50, 120), (3, 90, 200), (3, 300, 310)]
    for i, (s, a, b) in enumerate(kernels):
        G.add_node(i, kind="kernel", name=f"k{i}", ts=a * 1000, dur=(b - a) * 1000, pid=0, tid=s,
                   device=0, stream=s, correlation=-1, external_id=-1, args={})
    return TraceGraph.of(G)


# ----------------------------------------------------------------------- seed examples
def test_qps_seed_worked_example():
    # seed 000: 92,363 µs for 10 iterations at batch 2048 -> 221,733.81
    assert round(qps(10, 2048, 92_363.0), 2) == 221_733.81


def test_qps_needs_positive_runtime():
    with pytest.raises(ValueError):
        qps(1, 1, 0.0)


def test_three_stream_overlap_corrected_formula():
    G = three_stream_graph()
    ds = device_stats(G, (0, 400_000)).iloc[0]
    assert ds["busy_ns"] == 260_000
    assert ds["stream_active_ns"] == 390_000
    assert ds["overlap_ns"] == 130_000
    assert ds["sweep_overlap_ns"] == 130_000
    assert ds["idle_ns"] == 400_000 - 260_000
    ss = stream_stats(G, (0, 400_000)).set_index("stream")
    assert ss.loc[1, "active_ns"] == 200_000 and ss.loc[2, "active_ns"] == 70_000 and ss.loc[3, "active_ns"] == 120_000
    assert (ss["active_ns"] + ss["idle_ns"] == ss["span_ns"]).all()


def test_three_stream_sweep_vs_seed():
    s = np.array([0, 150, 50, 90, 300]) * 1000
    e = np.array([100, 250, 120, 200, 310]) * 1000
    sw = overlap_sweep(s, e)
    assert (sw.busy, sw.overlap, sw.gaps, sw.first, sw.last) == (260_000, 130_000, 50_000, 0, 310_000)
    idle, overlapped = seed_overlap_sweep(s, e)
    # the seed counts the first kernel as overlapping itself and whole kernels on partial overlap
    assert idle == 50_000 and overlapped == 380_000 != sw.overlap


def test_sweep_back_to_back_is_not_overlap():
    sw = overlap_sweep(np.array([0, 10, 20]), np.array([10, 20, 30]))
    assert sw.overlap == 0 and sw.busy == 30 and sw.gaps == 0
    _, seed = seed_overlap_sweep(np.array([0, 10, 20]), np.array([10, 20, 30]))
    assert seed == 30  # the seed's defect: back-to-back kernels counted as overlapped


def test_sweep_empty_and_nested():
    assert overlap_sweep(np.array([], np.int64), np.array([], np.int64)).busy == 0
    sw = overlap_sweep(np.array([0, 10]), np.array([100, 20]))  # nested
    assert (sw.busy, sw.overlap) == (100, 10)


def test_window_clipping():
    G = three_stream_graph()
    ds = device_stats(G, (100_000, 200_000)).iloc[0]
    # inside [100,200): s1 [150,200) 50; s2 [100,120) 20; s3 [100,200) 100; union [100,200) 100
    assert ds["busy_ns"] == 100_000 and ds["stream_active_ns"] == 170_000 and ds["overlap_ns"] == 70_000
    assert ds["idle_ns"] == 0


# ----------------------------------------------------------------------- synthesized
@pytest.mark.parametrize("name", ["two_stream_event_wait", "gpu_bound", "cpu_bound", "cuda_graph", "ns_float",
                                  "sync_every_op", "old_format_2021"])
def test_synth_gpu_answers(name, tmp_path):
    G, ans, _ = _graph_of(name, tmp_path)
    gpu = ans["gpu"]
    ds = device_stats(G, (gpu["start_ns"], gpu["end_ns"])).iloc[0]
    assert ds["busy_ns"] == gpu["busy_ns"]
    assert ds["idle_ns"] == gpu["idle_ns"]
    by_stream = {str(k): int(v) for k, v in stream_stats(G, (gpu["start_ns"], gpu["end_ns"]))
                 .set_index("stream")["active_ns"].items()}
    assert by_stream == gpu["busy_by_stream_ns"]
    assert ds["overlap_ns"] == sum(gpu["busy_by_stream_ns"].values()) - gpu["busy_ns"]


def test_two_stream_overlap_by_construction(tmp_path):
    # per step: A 200 µs on stream 7, then B 100 µs on stream 20 beside C 50 µs on stream 7
    G, ans, _ = _graph_of("two_stream_event_wait", tmp_path)
    steps = ans["steps"]
    w = (steps[0]["cpu_start_ns"], steps[-1]["cpu_end_ns"])
    ds = device_stats(G, w).iloc[0]
    assert ds["overlap_ns"] == 3 * 50_000
    assert ds["busy_ns"] == 3 * 300_000
    assert ds["idle_ns"] == (w[1] - w[0]) - 3 * 300_000
    doc = summary_doc(G, batch_size=64)
    assert validation_error(doc, "summary.schema.json") is None
    d0 = doc["devices"][0]
    assert d0["overlap_us"] == 150.0 and d0["busy_us"] == 900.0
    assert d0["busy_us"] + d0["idle_us"] == pytest.approx(d0["span_us"])


def test_summary_step_time_and_qps(tmp_path):
    G, ans, _ = _graph_of("cpu_bound", tmp_path, steps=4)
    doc = summary_doc(G, batch_size=2048)
    steps = ans["steps"]
    span_ns = steps[-1]["cpu_end_ns"] - steps[0]["cpu_start_ns"]
    assert doc["steps"] == 4
    assert doc["window"]["host_runtime_us"] == span_ns / 1e3
    assert doc["step_time_us"] == pytest.approx(span_ns / 1e3 / 4)
    assert doc["qps"] == pytest.approx(4 * 2048 * 1e6 / (span_ns / 1e3))
    assert summary_doc(G)["qps"] is None  # never a hard-coded batch size


def test_summary_cli(tmp_path):
    from opgraph.cli import main

    r = CliRunner().invoke(main, ["summary", str(FIXTURES / "two_stream_event_wait.json"), "--batch-size", "32",
                                  "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert validation_error(doc, "summary.schema.json") is None
    assert doc["qps"] == pytest.approx(3 * 32 * 1e6 / doc["window"]["host_runtime_us"])
    r = CliRunner().invoke(main, ["summary", str(FIXTURES / "two_stream_event_wait.json")])
    assert r.exit_code == 0 and "overlap" in r.output
    r = CliRunner().invoke(main, ["summary", str(FIXTURES / "gpu_bound.json"), "--csv", str(tmp_path)])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "gpu_bound.summary_streams.csv").exists()
    r = CliRunner().invoke(main, ["summary", str(FIXTURES / "gpu_bound.json"), "--batch-size", "0"])
    assert r.exit_code == 2
