"""``opgraph advise`` / ``opgraph.advise``: each rule fires exactly where the synthesized
traces' known answers say it must, with the numbers of those answers; every impact is the
what-if gain bounded by the time the finding could remove (issue 31, item 4); never on a
clean GPU-bound trace; on real traces every impact is at most its what-if gain and the
time it could remove, ``exposed_comm`` equals ``overlap``'s figure, no CUDA-graph advice
where it cannot apply, and the output validates against its schema."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import opgraph
from opgraph.predict.whatif import Transform
from opgraph.predict.prediction import predict
from opgraph.predict.recommendations import IDLE_PCT, RULES, SYNC_CALLS, WAIT_CALLS, recommendations
from opgraph.schemas_util import validation_error

from conftest import TRACES


def _answers(trace: Path) -> dict:
    return json.loads(Path(str(trace).replace(".json", ".answers.json")).read_text())


def _by_rule(res) -> dict[str, list]:
    out: dict[str, list] = {}
    for f in res.findings:
        out.setdefault(f.rule, []).append(f)
    return out


def _gain_us(trace, transforms) -> float:
    """What ``opgraph predict`` says the transforms gain on the makespan (µs), not below 0."""
    from opgraph.graph.io import load_any

    s = predict(load_any(str(trace)), transforms).to_dict()["summary"]
    return max(0.0, s["makespan_measured_us"] - s["makespan_predicted_us"])


def _free_host() -> list:
    return [Transform("scale_cpu", pattern=".*", factor=0.0), Transform("launch_overhead", value_ns=0)]


def test_cpu_bound_exact() -> None:
    p = opgraph.example_trace("cpu_bound")
    a = _answers(p)
    r = _by_rule(opgraph.advise(p))
    # launch_bound: the host time on the path (970 of each step's 1,230 µs: the rest is the
    # step annotation's and the autograd thread's unrecorded time, and the hand-off to it),
    # under makespan - GPU busy (3,610 µs: the GPU work stays)
    lb = r["launch_bound"][0]
    makespan = (a["steps"][-1]["cpu_end_ns"] - a["steps"][0]["cpu_start_ns"]) / 1e3
    b = opgraph.critical_path(opgraph.load(p)).summary()["breakdown_us"]
    assert makespan - a["gpu"]["busy_ns"] / 1e3 == pytest.approx(3610.0)
    assert lb.removable_us == pytest.approx(b["cpu"] + b["launch_overhead"]) == pytest.approx(3 * 970.0)
    assert lb.whatif == "scale-cpu '.*' x0; launch-overhead 0 us"
    assert lb.whatif_gain_us == pytest.approx(_gain_us(p, _free_host()))
    assert lb.impact_us == pytest.approx(min(lb.whatif_gain_us, lb.removable_us)) == pytest.approx(2910.0)
    assert "36 of 36 kernels ran shorter than their own launch call" in lb.finding
    assert "CUDA graph" in lb.try_
    # cpu_induced_idle: bounded by the idle the CPU caused (the what-if gains more)
    ci = r["cpu_induced_idle"][0]
    assert ci.removable_us == pytest.approx(a["idle_causes_ns"]["cpu_induced"] / 1e3)
    assert ci.whatif_gain_us == pytest.approx(_gain_us(p, [Transform("scale_cpu", pattern=".*", factor=0.0)]))
    assert ci.whatif_gain_us > ci.removable_us
    assert ci.impact_us == pytest.approx(a["idle_causes_ns"]["cpu_induced"] / 1e3) == pytest.approx(2970.0)
    assert ci.impact_pct == pytest.approx(100.0 * a["idle_causes_ns"]["cpu_induced"] / a["gpu"]["span_ns"])
    assert ci.impact_pct >= IDLE_PCT and "2,970.0 µs" in ci.finding
    # largest time at stake first
    assert [f.rule for f in opgraph.advise(p).findings][:2] == ["cpu_induced_idle", "launch_bound"]


def test_sync_drain_exact(monkeypatch) -> None:
    """sync_every_op: 28 µs of idle while the thread sat in cudaStreamSynchronize (the
    answers' sync_drain), under the default 5 % of the span: fires at 1 %, priced by
    removing the synchronize calls."""
    import opgraph.predict.recommendations as rec

    p = opgraph.example_trace("sync_every_op")
    a = _answers(p)
    assert "sync_drain" not in _by_rule(opgraph.advise(p))
    monkeypatch.setattr(rec, "SYNC_PCT", 1.0)
    f = _by_rule(opgraph.advise(p))["sync_drain"][0]
    assert f.removable_us == pytest.approx(a["idle_causes_ns"]["sync_drain"] / 1e3) == pytest.approx(28.0)
    assert f.whatif == f"remove '{SYNC_CALLS}'"
    assert f.whatif_gain_us == pytest.approx(_gain_us(p, [Transform("remove", pattern=SYNC_CALLS)]))
    assert f.impact_us == pytest.approx(min(f.whatif_gain_us, 28.0))


def test_stream_wait_exact(monkeypatch) -> None:
    """sync_every_op: the path's sync_wait (30 µs) fires the stream_wait rule at 1 %; its
    impact is the gain of removing the wait calls, at most those 30 µs."""
    import opgraph.predict.recommendations as rec

    p = opgraph.example_trace("sync_every_op")
    monkeypatch.setattr(rec, "WAIT_PCT", 1.0)
    cp = opgraph.critical_path(p).to_dict(with_path=False)["summary"]
    wait = cp["breakdown_us"]["device_wait"] + cp["breakdown_us"]["sync_wait"]
    f = _by_rule(opgraph.advise(p))["stream_wait"][0]
    assert f.removable_us == pytest.approx(wait) == pytest.approx(30.0)
    assert f.whatif_gain_us == pytest.approx(_gain_us(p, [Transform("remove", pattern=WAIT_CALLS)]))
    assert f.impact_us == pytest.approx(min(f.whatif_gain_us, 30.0))
    assert "longest" in f.finding


def test_data_loading_rule_keys_on_the_path_category() -> None:
    """A path with a ``data_loading`` category (the critical path names it when the trace
    marks data loading): the rule fires with that time as what it could remove, priced by
    removing the DataLoader ranges; without the category it stays quiet."""
    from opgraph.graph.io import load_any

    p = TRACES / "A_kineto" / "kineto_tbplugin_resnet50_w0_2021-06.pt.trace.json.gz"
    if not p.exists():
        pytest.skip("trace not available")
    G = load_any(str(p))
    cp = opgraph.critical_path(G).to_dict(with_path=False)
    base = _by_rule(recommendations(G, {"cp": cp}))
    if "data_loading" not in cp["summary"]["breakdown_us"]:
        assert "data_loading" not in base
        cp["summary"]["breakdown_us"]["data_loading"] = 0.25 * cp["summary"]["length_us"]
    f = _by_rule(recommendations(G, {"cp": cp}))["data_loading"][0]
    t = cp["summary"]["breakdown_us"]["data_loading"]
    assert f.removable_us == pytest.approx(t)
    assert f.whatif == "remove 'DataLoader'"
    assert f.whatif_gain_us == pytest.approx(_gain_us(p, [Transform("remove", pattern="DataLoader")]))
    assert 0 < f.impact_us == pytest.approx(min(f.whatif_gain_us, t))
    assert "num_workers" in f.try_


def test_exposed_comm_counts_the_all_row_alone() -> None:
    """An overlap document with per-step rows and the whole-trace ``all`` row: the rule
    takes the ``all`` row's exposed communication, never the sum with the steps."""
    p = opgraph.example_trace("cpu_bound")
    row = {"device": 0, "compute_us": 0.0, "overlap_us": 0.0, "comm_overlap_pct": 0.0, "memory_us": 0.0,
           "exposed_memory_us": 0.0, "busy_us": 40.0, "idle_us": 60.0}
    rows = [dict(row, window="ProfilerStep#1", span_us=100.0, comm_us=40.0, exposed_comm_us=40.0),
            dict(row, window="ProfilerStep#2", span_us=100.0, comm_us=40.0, exposed_comm_us=40.0),
            dict(row, window="all", span_us=250.0, comm_us=80.0, exposed_comm_us=80.0)]
    from opgraph.graph.io import load_any

    f = _by_rule(recommendations(load_any(str(p)), {"overlap": {"rows": rows}}))["exposed_comm"][0]
    assert f.removable_us == pytest.approx(80.0)
    assert f.impact_us <= 80.0 and f.impact_us <= f.whatif_gain_us + 1e-9
    assert "whole trace" in f.finding


def test_gpu_bound_is_quiet() -> None:
    res = opgraph.advise(opgraph.example_trace("gpu_bound"))
    assert res.findings == [] and res.skipped == {}
    assert len(res.to_frame()) == 0


def test_pageable_copies_exact() -> None:
    """old_format_2021: one pageable HtoD copy of 30 µs per step, 3 steps: pinned copies at
    twice the bandwidth remove at most half, 45 µs; the copies are on the path, so the
    what-if gains all of it."""
    p = opgraph.example_trace("old_format_2021")
    f = _by_rule(opgraph.advise(p))["pageable_copies"][0]
    assert f.finding.startswith("3 copies (90.0 µs)")
    assert f.removable_us == pytest.approx(45.0)
    assert f.whatif_gain_us == pytest.approx(_gain_us(p, [Transform("scale_kernels", pattern="Pageable", factor=0.5)]))
    assert f.impact_us == pytest.approx(45.0)


def test_graph_replay_unmapped() -> None:
    """cuda_graph: 6 replayed kernels per step, 3 steps, no capture."""
    f = _by_rule(opgraph.advise(opgraph.example_trace("cuda_graph")))["graph_replay_unmapped"][0]
    assert f.impact_us is None and f.impact_pct == 100.0 and f.finding.startswith("18 of 18")
    assert "--capture" in f.try_


def test_cli_outputs(cli, tmp_path: Path) -> None:
    p = opgraph.example_trace("cpu_bound", tmp_path)
    r = cli(["advise", str(p), "--json"])
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    assert validation_error(doc, "advise.schema.json") is None
    assert [f["rule"] for f in doc["findings"]] == ["cpu_induced_idle", "launch_bound", "untraced_time"]
    r = cli(["advise", str(p)])
    assert r.exit_code == 0 and "launch_bound" in r.stdout and "CUDA graph" in r.stdout
    r = cli(["advise", str(opgraph.example_trace("gpu_bound", tmp_path / "g")), "--csv", str(tmp_path / "csv")])
    assert r.exit_code == 0 and (tmp_path / "csv" / "gpu_bound.findings.csv").exists()
    r = cli(["advise", str(opgraph.example_trace("gpu_bound", tmp_path / "g2"))])
    assert "no rule fired" in r.stdout


def test_real_traces(kineto_graph) -> None:
    """Every real Kineto trace: the schema holds, every impact is at most its what-if gain
    and the time it could remove, exposed_comm is overlap's figure, no CUDA-graph advice
    without CUDA/HIP launches or on a trace that replays captured graphs, findings are
    sorted, and a rule that cannot run says why."""
    G = kineto_graph
    res = recommendations(G)
    doc = res.to_dict()
    assert validation_error(doc, "advise.schema.json") is None
    assert set(_by_rule(res)) <= set(RULES) | {"sync_drain", "data_loading"}
    assert all(isinstance(v, str) and v for v in res.skipped.values())
    cp = opgraph.critical_path(G).to_dict(with_path=False)["summary"]
    idle = {d["device"]: d for d in opgraph.idle(G).to_dict(top=1)["devices"]}
    names = {n for _, n in G.nodes(data="name") if isinstance(n, str)} if hasattr(G, "nodes") else set()
    cuda = any(n.startswith(("cuda", "hip", "cu")) for n in names)
    graphs = bool(G.graph.get("graph_replay")) or any("GraphLaunch" in n or "BeginCapture" in n for n in names)
    for f in res.findings:
        assert f.impact_pct is None or 0 <= f.impact_pct <= 100.0 + 1e-9, f
        if f.impact_us is not None:
            assert f.whatif and f.whatif_gain_us is not None and f.removable_us is not None, f
            assert f.impact_us <= f.whatif_gain_us + 1e-6 and f.impact_us <= f.removable_us + 1e-6, f
        if f.rule in ("launch_bound", "untraced_time", "stream_wait", "data_loading"):
            assert f.removable_us <= cp["length_us"] + 1e-6
        if f.rule in ("cpu_induced_idle", "sync_drain"):
            assert any(f.removable_us <= d["idle_us"] + 1e-6 for d in idle.values())
        if "CUDA graph" in f.try_:
            assert cuda and not graphs, f
        if f.rule == "exposed_comm":
            rows = opgraph.comm_overlap(G).to_dict()["rows"]
            whole = [r for r in rows if r["window"] == "all"] or rows
            assert f.removable_us == pytest.approx(sum(r["exposed_comm_us"] for r in whole))
    impacts = [f.impact_us for f in res.findings if f.impact_us is not None]
    assert impacts == sorted(impacts, reverse=True)


def test_execution_trace_in_ticks(cli) -> None:
    """An execution trace: times are ticks (never ms), no CUDA-graph advice."""
    p = TRACES / "B_et" / "param_linear_et.json.gz"
    if not p.exists():
        pytest.skip("trace not available")
    r = cli(["advise", str(p), "--json"])
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["time_unit"] == "ticks"
    for f in doc["findings"]:
        assert " ms" not in f["finding"] and " µs" not in f["finding"] and "CUDA graph" not in f["try"]


def test_dataloader_advice_on_resnet() -> None:
    """The 2021 ResNet trace: the main thread waits in the DataLoader's ``__next__`` while
    the GPU starves; the path names that time ``data_loading``, so the advice is about loading
    data ahead, and that time is not also filed as CPU-induced idle."""
    p = TRACES / "A_kineto" / "kineto_tbplugin_resnet50_w0_2021-06.pt.trace.json.gz"
    if not p.exists():
        pytest.skip("trace not available")
    rules = _by_rule(opgraph.advise(p))
    f = rules["data_loading"][0]
    cp = opgraph.critical_path(p).to_dict(with_path=False)["summary"]
    assert f.removable_us == pytest.approx(cp["breakdown_us"]["data_loading"]) and f.removable_us > 100_000
    assert "num_workers" in f.try_ and 0 < f.impact_us <= f.removable_us + 1e-6
    assert all("DataLoader" not in c.finding for c in rules.get("cpu_induced_idle", []))


def test_gemm_alignment_exact(monkeypatch) -> None:
    """gemm_shapes: per step, bf16 1024x4096x4096 (200 µs, aligned), twice fp16 100x1000x30
    (10 µs each: unaligned) and fp32 64x512x1024 (35 µs: alignment does not apply), 3 steps:
    unaligned = 60 µs = 20/255 of GEMM time (7.8 %), under the default 10 % threshold."""
    import opgraph.predict.recommendations as rec

    p = opgraph.example_trace("gemm_shapes")
    assert "gemm_alignment" not in _by_rule(opgraph.advise(p))
    monkeypatch.setattr(rec, "UNALIGNED_PCT", 5.0)
    f = _by_rule(opgraph.advise(p))["gemm_alignment"][0]
    assert f.impact_us is None and f.removable_us == pytest.approx(60.0)
    assert f.impact_pct == pytest.approx(100.0 * 20 / 255)
    assert f.finding.startswith("6 GEMM calls in 1 shape(s) (60.0 µs, 7.8 % of GEMM time)")
    assert "aten::mm fp16 M×N×K = 100×30×1000" in f.finding
