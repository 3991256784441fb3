"""CPU overheads T1-T5: exact values known from the synthesizer's construction parameters
(the timelines in opgraph/testing/synth_scenarios.py, re-derived here by hand), the seed's bugs fixed,
the JSON schema, and the CLI. Times are µs (the unit of the overheads JSON)."""

from __future__ import annotations

import json
from pathlib import Path

import networkx as nx
import pytest
from click.testing import CliRunner

from opgraph.model.trace_graph import TraceGraph
from opgraph.analysis.overheads import OverheadParams, overhead_samples, overheads_doc
from opgraph.graph import build_graph
from opgraph.ingest.readers import read_trace
from opgraph.schemas_util import validation_error
from opgraph.testing import synthesize, write_scenario

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures" / "synth"
LAUNCH = "cudaLaunchKernel"


def _graph(name: str, tmp_path: Path, steps: int = 3) -> nx.DiGraph:
    return build_graph(read_trace(write_scenario(synthesize(name, steps=steps), tmp_path)))


def _st(mean: float, n: int, std: float = 0.0) -> dict:
    return {"mean": pytest.approx(mean), "std": pytest.approx(std, abs=1e-9), "n": n}


# ----------------------------------------------------------------------- synthesized
def test_cpu_bound_exact(tmp_path):
    """cpu_bound: per step 8 forward ops (linear, relu, linear, sigmoid, ...; 40 µs, 100 µs
    apart; launch at +20..+30 µs, inside aten::addmm (+5..+35) for aten::linear) and 4 backward
    ops on tid 101 (same layout)."""
    doc = overheads_doc(_graph("cpu_bound", tmp_path))
    assert validation_error(doc, "overheads.schema.json") is None
    names = {"aten::linear": 12, "aten::relu": 6, "aten::sigmoid": 6, "SigmoidBackward0": 6, "ReluBackward0": 6}
    assert set(doc["ops"]) == set(names)
    for op, n in names.items():
        assert doc["t2"][op] == _st(20, n)
        assert doc["t3"][op] == _st(10, n)
        assert doc["t5"][op] == _st(0, n)  # one launch: one 0 sample
        assert doc["launches"][op] == [LAUNCH]
        assert doc["ops"][op]["whole"] is None and doc["ops"][op]["count"] == n
    assert doc["t4"] == {LAUNCH: _st(10, 36)}
    # T1: 7 gaps of 60 µs per step on the main thread + 3 on the backward thread; the
    # 940 µs gap between steps on the backward thread is cut by the 200 µs threshold
    assert doc["t1"] == _st(60, 30)


def test_sync_every_op_exact(tmp_path):
    """sync_every_op: op (t, t+87): launch (t+10, t+20), kernel (t+25, t+75),
    cudaStreamSynchronize (t+25, t+77); next op 80 µs later."""
    doc = overheads_doc(_graph("sync_every_op", tmp_path))
    op = "aten::nonzero"
    assert doc["t2"][op] == _st(10, 15)
    assert doc["t3"][op] == _st(10, 15)
    assert doc["t5"][op] == _st(5, 15)
    assert doc["launches"][op] == [LAUNCH, "cudaStreamSynchronize"]
    assert doc["t4"] == {LAUNCH: _st(10, 15), "cudaStreamSynchronize": _st(52, 15)}
    assert doc["t1"] == _st(80, 12)


def test_gpu_bound_exact(tmp_path):
    """gpu_bound: 6 aten::mm (30 µs, 35 µs apart, launch at +10..+20) inside a python
    function; cudaDeviceSynchronize hangs off the step, not an op (ignored)."""
    doc = overheads_doc(_graph("gpu_bound", tmp_path))
    assert list(doc["ops"]) == ["aten::mm"]
    assert doc["t2"]["aten::mm"] == _st(10, 18) and doc["t3"]["aten::mm"] == _st(10, 18)
    assert doc["t4"] == {LAUNCH: _st(10, 18)}
    assert doc["t1"] == _st(5, 15)


def test_old_format_exact(tmp_path):
    """old_format_2021 per step (t = step start + 10 µs): aten::zero_ (t, t+30) launches only a
    memset (not a counted launch: taken whole); aten::copy_ (t+40, t+110) memcpy (t+50, t+60)
    + sync (t+62, t+97); 3 convs (t+120+40j, +30) launch at +10..+20 (100 µs kernels queue to
    t+445); aten::item (t+250, t+460) > _local_scalar_dense: memcpy (t+260, t+270), its 2 µs
    copy waits for the convs, + sync (t+272, t+449)."""
    doc = overheads_doc(_graph("old_format_2021", tmp_path))
    assert validation_error(doc, "overheads.schema.json") is None
    zero = doc["ops"]["aten::zero_"]
    assert zero["whole"] == _st(30, 3) and zero["t2"] is None and zero["t3"] is None and zero["t5"] is None
    assert doc["t5"]["aten::zero_"] == _st(30, 3)  # seed layout: a launch-less op's T5 is its duration
    assert "aten::zero_" not in doc["t2"] and "aten::zero_" not in doc["launches"]
    assert doc["t2"]["aten::copy_"] == _st(10, 3)
    assert doc["t3"]["aten::copy_"] == _st(13, 3)
    assert doc["t5"]["aten::copy_"] == _st(2, 3)
    assert doc["t2"]["aten::cudnn_convolution"] == _st(10, 9)
    assert doc["t3"]["aten::cudnn_convolution"] == _st(10, 9)
    assert doc["t2"]["aten::item"] == _st(10, 3)
    assert doc["t3"]["aten::item"] == _st(11, 3)
    assert doc["t5"]["aten::item"] == _st(2, 3)
    assert doc["launches"]["aten::item"] == ["cudaMemcpyAsync", "cudaStreamSynchronize"]
    assert doc["t4"]["cudaMemcpyAsync"] == _st(10, 6)
    assert doc["t4"]["cudaStreamSynchronize"] == _st((35 + 177) / 2, 6, std=71)
    assert doc["t4"][LAUNCH] == _st(10, 9)
    # gaps per step: 10, 10, 10, 10, 20 -> mean 12, std 4
    assert doc["t1"] == _st(12, 15, std=4)


def test_custom_markers_and_thresholds(tmp_path):
    G = _graph("cpu_bound", tmp_path)
    # aten::relu ranges declared data loading: those ops leave, and T1 gaps spanning them are skipped
    p = OverheadParams(data_markers=("^aten::relu$",))
    doc = overheads_doc(G, p)
    assert "aten::relu" not in doc["ops"]
    assert doc["t1"] == _st(60, 18)
    assert doc["window"]["data_loading_us"] == 6 * 40
    # the gap cut is a parameter
    assert overheads_doc(G, OverheadParams(t1_max_gap_us=50))["t1"] is None
    # ... a 1000 µs cut admits the two 940 µs gaps between steps on the backward thread
    assert overheads_doc(G, OverheadParams(t1_max_gap_us=1000))["t1"]["n"] == 30 + 2
    assert overheads_doc(G, OverheadParams(t1_min_gap_us=61))["t1"] is None
    # launch APIs are a parameter
    doc = overheads_doc(G, OverheadParams(launch_apis=("cudaMemcpyAsync",)))
    assert doc["t4"] == {} and doc["ops"]["aten::relu"]["whole"] == _st(40, 6)
    # module markers are a parameter: declaring aten::linear a module makes aten::addmm the op
    doc = overheads_doc(G, OverheadParams(module_markers=("aten::linear",)))
    assert "aten::linear" not in doc["ops"] and doc["t2"]["aten::addmm"] == _st(15, 12)


def _op_graph() -> TraceGraph:
    """Hand-built: one thread, ops of one name taken once with launches and twice whole."""
    G = nx.DiGraph()
    n = [0]

    def add(kind, name, ts, dur, parent=None, dims=None):
        i = n[0]
        n[0] += 1
        G.add_node(i, kind=kind, name=name, ts=ts * 1000, dur=dur * 1000, pid=1, tid=1, device=-1, stream=-1,
                   correlation=-1, external_id=-1, args={"Input Dims": dims} if dims is not None else {})
        if parent is not None:
            G.add_edge(parent, i, kind="nest")
        return i

    step = add("annotation", "ProfilerStep#1", 0, 1000)
    a = add("cpu_op", "aten::to", 10, 100, step, [[4, 4], []])
    add("runtime", "cudaLaunchKernel", 20, 10, a)
    add("runtime", "cudaLaunchKernel", 50, 10, a)
    add("runtime", "cudaMemsetAsync", 70, 5, a)  # not a launch API: ignored
    add("cpu_op", "aten::to", 150, 7, step, [[8], []])
    add("cpu_op", "aten::to", 200, 9, step, [[8], []])
    return TraceGraph.of(G)


def test_whole_ops_kept_apart_every_occurrence():
    doc = overheads_doc(_op_graph(), by_shapes=True)
    assert validation_error(doc, "overheads.schema.json") is None
    e = doc["ops"]["aten::to"]
    assert (e["count"], e["launching"], e["whole_count"]) == (3, 1, 2)
    assert e["t2"] == _st(10, 1) and e["t3"] == _st(50, 1)
    assert e["t5"] == _st(20, 1)  # the gap between the two launches, never mixed with whole durations
    assert e["whole"] == _st(8, 2, std=1)  # both whole occurrences (the seed kept the last only)
    assert doc["t5"]["aten::to"] == e["t5"]
    assert e["launches"] == [LAUNCH, LAUNCH]
    shapes = e["shapes"]
    assert set(shapes) == {"[[4,4],[]]", "[[8],[]]"}
    assert shapes["[[8],[]]"]["whole"] == _st(8, 2, std=1) and shapes["[[8],[]]"]["t2"] is None
    assert shapes["[[4,4],[]]"]["t2"] == _st(10, 1)
    assert doc["t1"] == _st((40 + 43) / 2, 2, std=1.5)


def test_samples_frame():
    S, ls, w = overhead_samples(_op_graph(), with_shapes=True)
    assert set(S["type"]) == {"t1", "t2", "t3", "t4", "t5", "whole"}
    assert S.loc[S["type"] == "whole", "shapes"].tolist() == ["[[8],[]]", "[[8],[]]"]
    assert len(ls) == 1 and ls.iloc[0]["seq"] == (LAUNCH, LAUNCH)


def _whole_graph(durs_us: list[int]) -> TraceGraph:
    """Hand-built: one thread, ``aten::relu`` whole (no launch) with the given durations,
    every op 100 µs after the previous one's end, and one launching ``aten::mm``."""
    G = nx.DiGraph()
    n = [0]

    def add(kind, name, ts, dur, parent=None, dims=None):
        i = n[0]
        n[0] += 1
        G.add_node(i, kind=kind, name=name, ts=ts * 1000, dur=dur * 1000, pid=1, tid=1, device=-1, stream=-1,
                   correlation=-1, external_id=-1, args={"Input Dims": dims} if dims is not None else {})
        if parent is not None:
            G.add_edge(parent, i, kind="nest")
        return i

    t = 10
    step = add("annotation", "ProfilerStep#1", 0, 10 + sum(durs_us) + 100 * len(durs_us) + 200)
    for d in durs_us:
        add("cpu_op", "aten::relu", t, d, step, [[4]])
        t += d + 100
    mm = add("cpu_op", "aten::mm", t, 50, step, [[4, 4]])
    add("runtime", "cudaLaunchKernel", t + 10, 10, mm)
    return TraceGraph.of(G)


def test_iqr_outliers_known_answer():
    """relu durations 10, 11, 12, 13, 1000 µs: Q1 11, Q3 13, IQR 2, fences [8, 16]: the
    1,000 µs sample goes; the rest have mean and median 11.5, population std √1.25."""
    from opgraph.analysis.overheads import iqr_keep

    assert iqr_keep([10, 11, 12, 13, 1000]).tolist() == [True, True, True, True, False]
    assert iqr_keep([5.0]).tolist() == [True] and iqr_keep([1, 100]).tolist() == [True, True]
    G = _whole_graph([10, 11, 12, 13, 1000])
    raw = overheads_doc(G, by_shapes=True)
    assert raw["ops"]["aten::relu"]["whole"] == _st((10 + 11 + 12 + 13 + 1000) / 5, 5, std=395.4012645402136)
    assert "drop_outliers" not in raw["params"]   # default output unchanged
    doc = overheads_doc(G, OverheadParams(drop_outliers="iqr"), by_shapes=True)
    assert validation_error(doc, "overheads.schema.json") is None
    assert doc["params"]["drop_outliers"] == "iqr"
    w = doc["ops"]["aten::relu"]["whole"]
    assert (w["mean"], w["n"], w["median"], w["dropped"]) == (pytest.approx(11.5), 4, pytest.approx(11.5), 1)
    assert w["std"] == pytest.approx(1.118034, abs=1e-6)   # population std of 10..13
    assert doc["t5"]["aten::relu"] == w                      # the seed's flat layout follows
    assert doc["ops"]["aten::relu"]["shapes"]["[[4]]"]["whole"] == w
    assert doc["ops"]["aten::relu"]["count"] == 5           # occurrences are still all counted
    # T1: five gaps of 100 µs (the 200 µs cut keeps them): nothing to drop
    assert (doc["t1"]["mean"], doc["t1"]["n"], doc["t1"]["dropped"]) == (pytest.approx(100.0), 5, 0)
    # single-sample lists are kept
    mm = doc["ops"]["aten::mm"]
    assert (mm["t2"]["mean"], mm["t2"]["dropped"]) == (pytest.approx(10.0), 0)
    with pytest.raises(ValueError, match="drop_outliers"):
        OverheadParams(drop_outliers="zscore")


def test_iqr_outliers_cli(tmp_path):
    from opgraph.cli import main

    r = CliRunner().invoke(main, ["overheads", str(FIXTURES / "sync_every_op.json"), "--json", "--drop-outliers", "iqr"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert validation_error(doc, "overheads.schema.json") is None
    assert doc["params"]["drop_outliers"] == "iqr" and "median" in doc["t1"] and "dropped" in doc["t1"]
    r = CliRunner().invoke(main, ["overheads", str(FIXTURES / "sync_every_op.json"), "--drop-outliers", "bad"])
    assert r.exit_code == 2 and "--drop-outliers" in r.output


# ----------------------------------------------------------------------- CLI
def test_overheads_cli(tmp_path):
    from opgraph.cli import main

    out = tmp_path / "overheads.json"
    r = CliRunner().invoke(main, ["overheads", str(FIXTURES / "sync_every_op.json"), "-o", str(out)])
    assert r.exit_code == 0, r.output
    doc = json.loads(out.read_text())
    assert validation_error(doc, "overheads.schema.json") is None
    assert doc["t1"]["mean"] == 80.0
    r = CliRunner().invoke(main, ["overheads", str(FIXTURES / "sync_every_op.json"), "--json", "--by-shapes",
                                  "--t1-max-gap-us", "50"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert doc["t1"] is None and doc["params"]["t1_max_gap_us"] == 50
    r = CliRunner().invoke(main, ["overheads", str(FIXTURES / "old_format_2021.json"), "--csv", str(tmp_path)])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "old_format_2021.overhead_samples.csv").exists()
    r = CliRunner().invoke(main, ["overheads", str(FIXTURES / "cpu_bound.json"), "--launch-api", "cudaMemcpyAsync"])
    assert r.exit_code == 0 and "whole" in r.output
