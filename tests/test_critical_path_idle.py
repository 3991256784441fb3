"""Critical path and idle: exact answers on synthesized traces, invariants on real ones."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from opgraph.analysis.critical_path.boundary_edges import CATEGORIES
from opgraph.analysis.critical_path.path import critical_path
from opgraph.analysis.idle import CAUSES, idle_time
from opgraph.cli import main
from opgraph.schemas_util import validate

ROOT = Path(__file__).resolve().parents[1]
SYNTH = ROOT / "fixtures" / "synth"
TRACES = ROOT.parent / "shared" / "traces" / "A_kineto"
SCENARIOS = sorted(p.stem for p in SYNTH.glob("*.json") if not p.name.endswith(".answers.json"))
REAL = sorted(p.name for p in TRACES.glob("*")) if TRACES.is_dir() else []
needs_traces = pytest.mark.skipif(not TRACES.is_dir(), reason="../shared/traces is absent")


def graph(path: str):
    from conftest import load_graph  # the session-wide cache shared by the test modules

    return load_graph(path)


def answers(name: str) -> dict:
    return json.loads((SYNTH / f"{name}.answers.json").read_text())


@pytest.mark.parametrize("name", SCENARIOS)
def test_idle_exact_on_synth(name):
    G = graph(str(SYNTH / f"{name}.json"))
    ans = answers(name)
    res = idle_time(G)
    assert len(res.devices) == 1
    d = res.devices[0]
    assert d.span_ns == ans["gpu"]["span_ns"]
    assert d.busy_ns == ans["gpu"]["busy_ns"]
    assert d.idle_ns == ans["gpu"]["idle_ns"]
    assert d.cpu_induced_idle_ns == ans["cpu_induced_idle_ns"]
    assert d.launch_latency_ns == ans["launch_latency_ns"]
    # the idle split by cause, exactly as the synthesizer's model gives it, summing to the idle
    assert d.causes_ns == ans["idle_causes_ns"]
    assert sum(d.causes_ns.values()) == d.idle_ns
    assert {c: int(res.gaps[c].sum()) for c in CAUSES} == ans["idle_causes_ns"]
    # blame is exclusive and sums to the CPU-induced idle, at both levels
    assert int(res.blame_events["blame_ns"].sum()) == ans["cpu_induced_idle_ns"]
    assert int(res.blame("top")["blame_ns"].sum()) == ans["cpu_induced_idle_ns"]
    for s in res.streams:
        assert s.host_wait_ns + s.kernel_wait_ns + s.other_ns == s.idle_ns
        assert sum(s.causes_ns.values()) == s.idle_ns


@pytest.mark.parametrize("name", SCENARIOS)
def test_critical_path_on_synth(name):
    G = graph(str(SYNTH / f"{name}.json"))
    ans = answers(name)
    res = critical_path(G)
    assert [w.name for w in res.windows] == [s["name"] for s in ans["steps"]]
    for w, step in zip(res.windows, ans["steps"]):
        assert w.start_ns == step["cpu_start_ns"]
        assert w.end_ns == max(step["cpu_end_ns"], step["gpu_end_ns"])
        assert w.length_ns == w.span_ns
        assert abs(sum(w.breakdown_pct.values()) - 100.0) < 1e-9
        segs = w.path
        assert all(a.end_ns <= b.start_ns for a, b in zip(segs, segs[1:]))
        pct = w.breakdown_pct
        if ans["bound"] == "cpu" and name == "cpu_bound":
            # the rest is the step annotation's and the autograd engine's unrecorded time (untraced)
            # and the hand-off to the autograd thread (thread_wait)
            assert pct["cpu"] >= 75.0 and w.bound == "cpu", pct
        if name == "gpu_bound":
            assert pct["gpu_compute"] >= 85.0, pct


def test_two_stream_path_crosses_streams():
    G = graph(str(SYNTH / "two_stream_event_wait.json"))
    for w in critical_path(G).windows:
        streams = {G.nodes[s.eid]["stream"] for s in w.path if s.kind == "kernel"}
        assert {7, 20} <= streams, streams


def test_blocking_call_waiting_is_not_cpu():
    """sync_every_op: each cudaStreamSynchronize waits for its kernel; that time must be
    on the GPU kernel, not on the CPU call."""
    G = graph(str(SYNTH / "sync_every_op.json"))
    for w in critical_path(G).windows:
        sync_cpu = sum(s.dur_ns for s in w.path if s.name == "cudaStreamSynchronize" and s.bound_by == "cpu")
        kernel = sum(s.dur_ns for s in w.path if s.kind == "kernel")
        assert kernel > 0
        assert sync_cpu < 0.05 * w.length_ns


def test_window_all_and_regex():
    G = graph(str(SYNTH / "gpu_bound.json"))
    allw = critical_path(G, window="all")
    assert len(allw.windows) == 1 and allw.windows[0].length_ns == allw.windows[0].span_ns
    one = critical_path(G, window=r"ProfilerStep#2$")
    assert [w.name for w in one.windows] == ["ProfilerStep#2"]


def test_cli_json_validates():
    r = CliRunner().invoke(main, ["critical-path", str(SYNTH / "cuda_graph.json"), "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    validate(doc, "critical-path.schema.json")
    r = CliRunner().invoke(main, ["idle", str(SYNTH / "cpu_bound.json"), "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    validate(doc, "idle.schema.json")
    assert doc["cpu_induced_idle_us"] == answers("cpu_bound")["cpu_induced_idle_ns"] / 1000
    r = CliRunner().invoke(main, ["critical-path", str(SYNTH / "cpu_bound.json")])
    assert r.exit_code == 0 and "ProfilerStep#1" in r.output and "bound by cpu" in r.output


@needs_traces
@pytest.mark.parametrize("fname", REAL)
def test_real_trace_invariants(fname):
    G = graph(str(TRACES / fname))
    cp = critical_path(G)
    for w in cp.windows:
        if w.span_ns:
            assert abs(w.length_ns - w.span_ns) <= 0.005 * w.span_ns
            assert abs(sum(w.breakdown_pct.values()) - 100.0) < 1e-6
            assert set(w.breakdown_ns) == set(CATEGORIES)
    doc = cp.to_dict(with_path=False)
    validate(doc, "critical-path.schema.json")
    idle = idle_time(G)
    total = idle.cpu_induced_idle_ns
    assert int(idle.blame_events["blame_ns"].sum()) == total if len(idle.blame_events) else total == 0
    for d in idle.devices:
        assert d.busy_ns + d.idle_ns == d.span_ns
        assert 0 <= d.cpu_induced_idle_ns <= d.idle_ns
        # causes are exclusive, non-negative and sum to the measured idle, per device and stream
        assert all(v >= 0 for v in d.causes_ns.values()) and sum(d.causes_ns.values()) == d.idle_ns
    for s in idle.streams:
        assert all(v >= 0 for v in s.causes_ns.values()) and sum(s.causes_ns.values()) == s.idle_ns
    # no op is blamed for a gap whose ending activity was launched before that op began:
    # blame falls only in [gap start, launch call start) of the launching thread
    g = idle.gaps
    if len(g):
        assert (g[list(CAUSES)].to_numpy() >= 0).all()
        assert ((g["end_ns"] - g["start_ns"]).to_numpy() == g[list(CAUSES)].sum(axis=1).to_numpy()).all()
    validate(idle.to_dict(), "idle.schema.json")
