"""Host and device breakdowns: exact values from the synthesizer's construction, data
loading reported apart, Others/Unaccounted, schemas, CLI; and, when ../shared/traces is
present, the per-trace contracts of issue #4 on every real Kineto trace (each trace is
read and built once here: host percentages sum to 100 at every level, device active + idle
= span per stream, the overheads/breakdown/summary/iterations JSON validate, and the step
count equals the number of distinct ProfilerStep#N). Times in µs unless named ns."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import networkx as nx
import pytest
from click.testing import CliRunner

from opgraph.model.trace_graph import TraceGraph
from opgraph.names import short_kernel_name
from opgraph.analysis.device_breakdown import device_breakdown, device_breakdown_doc
from opgraph.analysis.host_breakdown import host_breakdown, host_breakdown_doc
from opgraph.analysis.window import analysis_window
from opgraph.analysis.graph_frame import graph_frame
from opgraph.analysis.step_times import iterations_doc
from opgraph.analysis.multistream import stream_stats
from opgraph.analysis.summary_doc import summary_doc
from opgraph.analysis.overheads import overheads_doc
from opgraph.graph import build_graph
from opgraph.ingest.readers import read_trace
from opgraph.schemas_util import validation_error
from opgraph.testing import synthesize, write_scenario

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures" / "synth"
TRACES = Path(__file__).resolve().parents[1].parent / "shared" / "traces"
KINETO = TRACES / "A_kineto"
STEP_RE = re.compile(r"^ProfilerStep#\d+$")


def _graph(name: str, tmp_path: Path, steps: int = 3) -> nx.DiGraph:
    return build_graph(read_trace(write_scenario(synthesize(name, steps=steps), tmp_path)))


def _by_name(entries: list[dict]) -> dict[str, dict]:
    return {e["name"]: e for e in entries}


def check_levels(entries: list[dict], parent_us: float, where: str = "") -> int:
    """Every level sums to 100 % of its parent (and to the parent's time); returns the
    number of levels checked."""
    n = 0
    if parent_us > 0:
        assert sum(e["percent"] for e in entries) == pytest.approx(100.0, abs=1e-6), where
        assert sum(e["time_us"] for e in entries) == pytest.approx(parent_us, rel=1e-9, abs=1e-6), where
        n += 1
    for e in entries:
        assert e["time_us"] >= 0 and e["percent"] >= 0, (where, e["name"])
        if e.get("children"):
            n += check_levels(e["children"], e["time_us"], where + " > " + e["name"])
    return n


# ----------------------------------------------------------------------- host, synthesized
def test_host_cpu_bound_exact(tmp_path):
    """cpu_bound, 3 steps of 1230 µs, 50 µs apart (window 3790 µs). Per step on the main
    thread: aten::linear ×4 (40 µs; aten::addmm 30 µs inside; launch 10 µs), aten::relu ×2,
    aten::sigmoid ×2; on tid 101: SigmoidBackward0 ×2 and ReluBackward0 ×2 (40 µs)."""
    G = _graph("cpu_bound", tmp_path)
    doc = host_breakdown_doc(host_breakdown(G), depth=4, top=5)
    assert validation_error(doc, "breakdown.schema.json") is None
    assert doc["window"]["duration_us"] == 3790 and doc["window"]["host_runtime_us"] == 3790
    th = {t["tid"]: t for t in doc["threads"]}
    main, bwd = th[100], th[101]
    assert main["time_us"] == 3790 and main["busy_us"] == 3690
    top = _by_name(main["entries"])
    assert top["ProfilerStep#*"]["time_us"] == 3690 and top["ProfilerStep#*"]["count"] == 3
    assert top["Unaccounted"]["time_us"] == 100
    step = _by_name(top["ProfilerStep#*"]["children"])
    assert {k: (v["time_us"], v["count"]) for k, v in step.items()} == {
        "aten::linear": (480, 12), "aten::relu": (240, 6), "aten::sigmoid": (240, 6), "Unaccounted": (2730, 0)}
    assert step["aten::linear"]["percent"] == pytest.approx(100 * 480 / 3690)
    lin = _by_name(step["aten::linear"]["children"])
    assert lin["aten::addmm"]["time_us"] == 360 and lin["aten::addmm"]["percent"] == 75.0
    addmm = _by_name(lin["aten::addmm"]["children"])
    assert addmm["cudaLaunchKernel"]["time_us"] == 120 and addmm["Unaccounted"]["time_us"] == 240
    b = _by_name(bwd["entries"])
    assert (b["SigmoidBackward0"]["time_us"], b["ReluBackward0"]["time_us"], b["Unaccounted"]["time_us"]) == (
        240, 240, 3310)
    for t in doc["threads"]:
        check_levels(t["entries"], t["time_us"])


def test_host_top_and_others(tmp_path):
    G = _graph("cpu_bound", tmp_path)
    doc = host_breakdown_doc(host_breakdown(G), depth=2, top=2)
    step = [t for t in doc["threads"] if t["tid"] == 100][0]["entries"][0]
    names = [e["name"] for e in step["children"]]
    assert names == ["aten::linear", "aten::relu", "Others", "Unaccounted"]
    others = step["children"][2]
    assert (others["time_us"], others["count"], others["entries"]) == (240, 6, 1)
    assert "children" not in step["children"][0]  # depth limit
    check_levels(step["children"], step["time_us"])


def test_host_python_frames_optional(tmp_path):
    """gpu_bound: 6 aten::mm (30 µs) inside a python_function (220 µs) inside each step."""
    G = _graph("gpu_bound", tmp_path)
    f = graph_frame(G)
    without = host_breakdown_doc(host_breakdown(f), depth=3)
    step = without["threads"][0]["entries"][0]
    assert [e["name"] for e in step["children"]][:2] == ["cudaDeviceSynchronize", "aten::mm"]
    assert _by_name(step["children"])["aten::mm"]["time_us"] == 3 * 6 * 30
    with_py = host_breakdown_doc(host_breakdown(f, include_python=True), depth=3)
    kids = _by_name(with_py["threads"][0]["entries"][0]["children"])
    py = kids["nn/modules/module.py(1527): _call_impl"]
    assert py["time_us"] == 3 * 220 and _by_name(py["children"])["aten::mm"]["time_us"] == 3 * 6 * 30
    for doc in (without, with_py):
        for t in doc["threads"]:
            check_levels(t["entries"], t["time_us"])


def _hand_graph() -> TraceGraph:
    G = nx.DiGraph()

    def add(i, kind, name, ts, dur, tid=1, parent=None):
        G.add_node(i, kind=kind, name=name, ts=ts * 1000, dur=dur * 1000, pid=1, tid=tid, device=-1, stream=-1,
                   correlation=-1, external_id=-1, args={})
        if parent is not None:
            G.add_edge(parent, i, kind="nest")

    add(0, "annotation", "ProfilerStep#4", 0, 1000)
    add(1, "annotation", "enumerate(DataLoader)#_Iter.__next__", 100, 200, parent=0)
    add(2, "cpu_op", "aten::copy_", 150, 100, parent=1)  # inside data loading: not counted
    add(3, "cpu_op", "aten::mm", 400, 200, parent=0)
    add(4, "runtime", "cudaLaunchKernel", 450, 10, parent=3)
    add(5, "cpu_op", "MmBackward0", 200, 300, tid=2)  # other thread, half inside data loading
    # rounding bleed: B starts 1 µs before A ends and ends 1 µs after its parent
    add(6, "cpu_op", "aten::linear", 700, 100, parent=0)
    add(7, "cpu_op", "aten::t", 700, 60, parent=6)
    add(8, "cpu_op", "aten::addmm", 759, 42, parent=6)
    return TraceGraph.of(G)


def test_host_data_loading_apart_and_bleed():
    doc = host_breakdown_doc(host_breakdown(_hand_graph()), depth=3, top=5)
    assert validation_error(doc, "breakdown.schema.json") is None
    assert doc["window"]["host_runtime_us"] == 800 and doc["data_loading"]["time_us"] == 200
    assert doc["data_loading"]["by_name"] == [{"name": "enumerate(DataLoader)#_Iter.__next__", "count": 1,
                                               "time_us": 200.0}]
    th = {t["tid"]: t for t in doc["threads"]}
    step = th[1]["entries"][0]
    assert step["name"] == "ProfilerStep#*" and step["time_us"] == 800 and step["percent"] == 100.0
    kids = _by_name(step["children"])
    assert "enumerate(DataLoader)#_Iter.__next__" not in kids and "aten::copy_" not in kids
    assert kids["aten::mm"]["time_us"] == 200 and kids["aten::mm"]["percent"] == 25.0
    lin = _by_name(kids["aten::linear"]["children"])
    assert lin["aten::t"]["time_us"] == 60 and lin["aten::addmm"]["time_us"] == 40  # clipped, exclusive
    assert "Unaccounted" not in lin
    assert _by_name(th[2]["entries"])["MmBackward0"]["time_us"] == 200
    for t in doc["threads"]:
        check_levels(t["entries"], t["time_us"])
    # markers are configurable; none -> data loading counted as host time
    w = analysis_window(_hand_graph(), data_markers=())
    doc = host_breakdown_doc(host_breakdown(_hand_graph(), w))
    assert doc["window"]["host_runtime_us"] == 1000 and doc["data_loading"]["by_name"] == []


def test_short_kernel_names():
    assert short_kernel_name("void at::native::vectorized_elementwise_kernel<4, float>(int, float)") == \
        "vectorized_elementwise_kernel"
    assert short_kernel_name("void fwd_kernel_0<float>(float*, int)") == "fwd_kernel_0"
    assert short_kernel_name("ampere_sgemm_128x64_nn") == "ampere_sgemm_128x64_nn"


# ----------------------------------------------------------------------- device, synthesized
def test_device_cpu_bound_exact(tmp_path):
    """36 kernels of 5 µs on stream 7: fwd_kernel_{i%4} from the 8 forward ops per step,
    bwd_kernel_j from the backward ops."""
    G = _graph("cpu_bound", tmp_path)
    doc = device_breakdown_doc(device_breakdown(G), depth=5, top=10)
    assert validation_error(doc, "breakdown.schema.json") is None
    (st,) = doc["streams"]
    assert (st["stream"], st["span_us"], st["active_us"], st["idle_us"], st["device_us"]) == (7, 3790, 180, 3610, 180)
    top = _by_name(st["entries"])
    assert {k: (v["time_us"], v["count"]) for k, v in top.items()} == {
        "ProfilerStep#*": (120, 24), "SigmoidBackward0": (30, 6), "ReluBackward0": (30, 6)}
    step = _by_name(top["ProfilerStep#*"]["children"])
    assert {k: v["time_us"] for k, v in step.items()} == {"aten::linear": 60, "aten::relu": 30, "aten::sigmoid": 30}
    addmm = _by_name(_by_name(step["aten::linear"]["children"])["aten::addmm"]["children"])
    assert {k: (v["time_us"], v["kind"]) for k, v in addmm.items()} == {
        "fwd_kernel_0": (30, "kernel"), "fwd_kernel_2": (30, "kernel")}
    check_levels(st["entries"], st["device_us"])
    ops = {o["op"]: o for o in doc["ops"]}
    assert ops["aten::linear"] == {"op": "aten::linear", "count": 12, "kernels": 12, "graph_kernels": 0, "device_us": 60.0,
                                   "host_us": 480.0, "ratio": 0.125}
    assert ops["SigmoidBackward0"]["device_us"] == 30 and ops["SigmoidBackward0"]["count"] == 6


def test_device_two_streams_exact(tmp_path):
    G = _graph("two_stream_event_wait", tmp_path)
    doc = device_breakdown_doc(device_breakdown(G), depth=4)
    st = {s["stream"]: s for s in doc["streams"]}
    assert st[7]["device_us"] == 3 * 250 and st[20]["device_us"] == 3 * 100
    for s in st.values():
        assert s["active_us"] + s["idle_us"] == pytest.approx(s["span_us"])
    add = _by_name(_by_name(st[20]["entries"])["ProfilerStep#*"]["children"])["aten::add"]
    assert add["time_us"] == 300 and add["children"][0]["name"] == "add_kernel"


def test_device_graph_launch_and_copies(tmp_path):
    G = _graph("cuda_graph", tmp_path)
    doc = device_breakdown_doc(device_breakdown(G), depth=4)
    (st,) = doc["streams"]
    step = _by_name(st["entries"])["ProfilerStep#*"]
    kids = _by_name(step["children"])
    assert kids["CUDAGraph::replay"]["time_us"] == 3 * 6 * 40 and kids["CUDAGraph::replay"]["count"] == 18
    copy = kids["aten::copy_"]["children"][0]
    assert copy["name"] == "Memcpy HtoD (Pinned -> Device)" and copy["time_us"] == 60  # not shortened


def test_empty_and_host_only_graphs():
    H = nx.DiGraph()
    for _ in range(2):
        G = TraceGraph.of(H)
        assert validation_error(host_breakdown_doc(host_breakdown(G)), "breakdown.schema.json") is None
        assert validation_error(device_breakdown_doc(device_breakdown(G)), "breakdown.schema.json") is None
        assert validation_error(overheads_doc(G), "overheads.schema.json") is None
        assert validation_error(summary_doc(G, 4), "summary.schema.json") is None
        assert validation_error(iterations_doc(G), "iterations.schema.json") is None
        H.add_node(0, kind="cpu_op", name="aten::x", ts=0, dur=10_000, pid=1, tid=1)  # minimal attributes


# ----------------------------------------------------------------------- CLI
def test_breakdown_cli(tmp_path):
    from opgraph.cli import main

    f = str(FIXTURES / "cpu_bound.json")
    for args in (["--host"], ["--device"], ["--device", "--depth", "1", "--top", "1"]):
        r = CliRunner().invoke(main, ["breakdown", f, "--json", *args])
        assert r.exit_code == 0, r.output
        assert validation_error(json.loads(r.output), "breakdown.schema.json") is None
    r = CliRunner().invoke(main, ["breakdown", f])
    assert r.exit_code == 0 and "ProfilerStep#*" in r.output and "Unaccounted" in r.output
    r = CliRunner().invoke(main, ["breakdown", f, "--device", "--top-ops", "3"])
    assert r.exit_code == 0 and "device/host" in r.output
    r = CliRunner().invoke(main, ["breakdown", f, "--device", "--csv", str(tmp_path)])
    assert r.exit_code == 0, r.output
    for name in ("device_tree", "device_streams", "device_ops"):
        assert (tmp_path / f"cpu_bound.{name}.csv").exists()
    r = CliRunner().invoke(main, ["breakdown", f, "--csv", str(tmp_path), "--whole-trace"])
    assert r.exit_code == 0 and (tmp_path / "cpu_bound.host.csv").exists()
    r = CliRunner().invoke(main, ["breakdown", f, "--depth", "0"])
    assert r.exit_code == 2


# ----------------------------------------------------------------------- real traces
def _real_traces() -> list[Path]:
    if not KINETO.is_dir():
        return []
    paths = sorted(p for p in KINETO.iterdir() if p.name.endswith((".json", ".json.gz")))
    cap = os.environ.get("OPGRAPH_TEST_TRACE_MAX_MB")  # optional: skip big traces for a quick run
    if cap:
        paths = [p for p in paths if p.stat().st_size <= float(cap) * 1e6]
    return paths


@pytest.mark.skipif(not KINETO.is_dir(), reason="../shared/traces not present")
@pytest.mark.parametrize("path", _real_traces(), ids=lambda p: p.name.split(".")[0])
def test_real_trace_contracts(path):
    table = read_trace(path)
    ev = table.events
    host_ev = ev[ev["kind"].isin(["annotation", "cpu_op", "python"])]
    names = host_ev["name"].dropna().astype(str)
    n_profiler_steps = names[names.str.match(STEP_RE.pattern)].nunique()
    f = graph_frame(build_graph(table))
    w = analysis_window(f)
    # iterations: the ProfilerStep count the trace holds
    it = iterations_doc(f)
    assert validation_error(it, "iterations.schema.json") is None
    if n_profiler_steps:
        assert it["step_source"] == "profiler_step" and it["count"] == n_profiler_steps
    else:
        assert it["step_source"] != "profiler_step"
    # host: percentages sum to 100 at every level
    hdoc = host_breakdown_doc(host_breakdown(f, w), depth=4, top=5)
    assert validation_error(hdoc, "breakdown.schema.json") is None
    for t in hdoc["threads"]:
        check_levels(t["entries"], t["time_us"], f"{path.name} thread {t['tid']}")
    # device: active + idle = span per stream (exactly, in ns), trees sum to 100
    ss = stream_stats(f, w)
    assert (ss["active_ns"] + ss["idle_ns"] == ss["span_ns"]).all()
    assert (ss["active_ns"] <= ss["device_ns"]).all() and (ss["idle_ns"] >= 0).all()
    ddoc = device_breakdown_doc(device_breakdown(f, w), depth=3, top=10)
    assert validation_error(ddoc, "breakdown.schema.json") is None
    for s in ddoc["streams"]:
        assert s["active_us"] + s["idle_us"] == pytest.approx(s["span_us"], abs=1e-6)
        check_levels(s["entries"], s["device_us"], f"{path.name} stream {s['stream']}")
    # overheads JSON validates (with and without shapes)
    assert validation_error(overheads_doc(f), "overheads.schema.json") is None
    assert validation_error(overheads_doc(f, by_shapes=True), "overheads.schema.json") is None
    sdoc = summary_doc(f, batch_size=8)
    assert validation_error(sdoc, "summary.schema.json") is None
    for d in sdoc["devices"]:
        assert d["busy_us"] + d["idle_us"] == pytest.approx(d["span_us"], abs=1e-6)
        assert d["overlap_us"] >= 0
