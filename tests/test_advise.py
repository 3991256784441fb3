"""``opgraph advise`` / ``opgraph.advise``: each rule fires exactly where the synthesized
traces' known answers say it must, with the numbers of those answers; never on a clean
GPU-bound trace; on real traces every finding's time fits inside what it is measured
against, and the output validates against its schema."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import opgraph
from opgraph.analysis.recommendations import IDLE_PCT, RULES, recommendations
from opgraph.schemas_util import validation_error

from conftest import TRACES


def _answers(trace: Path) -> dict:
    return json.loads(Path(str(trace).replace(".json", ".answers.json")).read_text())


def _by_rule(res) -> dict[str, list]:
    out: dict[str, list] = {}
    for f in res.findings:
        out.setdefault(f.rule, []).append(f)
    return out


def test_cpu_bound_exact() -> None:
    p = opgraph.example_trace("cpu_bound")
    a = _answers(p)
    r = _by_rule(opgraph.advise(p))
    # the critical path is host time (970 of each step's 1,230 µs: the rest is the step
    # annotation's and the autograd thread's unrecorded time, and the hand-off to it)
    lb = r["launch_bound"][0]
    steps = sum(s["cpu_end_ns"] - s["cpu_start_ns"] for s in a["steps"]) / 1e3
    b = opgraph.critical_path(opgraph.load(p)).summary()["breakdown_us"]
    assert lb.impact_us == pytest.approx(b["cpu"] + b["launch_overhead"]) == pytest.approx(3 * 970.0)
    assert lb.impact_pct == pytest.approx(100.0 * lb.impact_us / steps)
    assert "36 of 36 kernels ran shorter than their own launch call" in lb.finding
    ci = r["cpu_induced_idle"][0]
    assert ci.impact_us == pytest.approx(a["idle_causes_ns"]["cpu_induced"] / 1e3)
    assert ci.impact_pct == pytest.approx(100.0 * a["idle_causes_ns"]["cpu_induced"] / a["gpu"]["span_ns"])
    assert ci.impact_pct >= IDLE_PCT and "2,970.0 µs" in ci.finding
    # largest time at stake first
    assert [f.rule for f in opgraph.advise(p).findings][:2] == ["cpu_induced_idle", "launch_bound"]


def test_gpu_bound_is_quiet() -> None:
    res = opgraph.advise(opgraph.example_trace("gpu_bound"))
    assert res.findings == [] and res.skipped == {}
    assert len(res.to_frame()) == 0


def test_pageable_copies_exact() -> None:
    """old_format_2021: one pageable HtoD copy of 30 µs per step, 3 steps."""
    r = _by_rule(opgraph.advise(opgraph.example_trace("old_format_2021")))
    f = r["pageable_copies"][0]
    assert f.impact_us == pytest.approx(90.0) and f.finding.startswith("3 copies (90.0 µs)")


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
    """Every real Kineto trace: the schema holds, every finding's time fits inside what it
    is measured against, findings are sorted, and a rule that cannot run says why."""
    G = kineto_graph
    res = recommendations(G)
    doc = res.to_dict()
    assert validation_error(doc, "advise.schema.json") is None
    assert set(_by_rule(res)) <= set(RULES) | {"sync_drain", "data_loading"}
    assert all(isinstance(v, str) and v for v in res.skipped.values())
    if any(f.rule in ("launch_bound", "untraced_time") for f in res.findings):
        cp = opgraph.critical_path(G).to_dict(with_path=False)["summary"]
    idle = {d["device"]: d for d in opgraph.idle(G).to_dict(top=1)["devices"]}
    for f in res.findings:
        assert f.impact_pct is None or 0 <= f.impact_pct <= 100.0 + 1e-9, f
        if f.rule in ("launch_bound", "untraced_time"):
            assert f.impact_us <= cp["length_us"] + 1e-6
        if f.rule in ("cpu_induced_idle", "sync_drain", "data_loading"):
            assert any(f.impact_us <= d["idle_us"] + 1e-6 for d in idle.values())
    impacts = [f.impact_us for f in res.findings if f.impact_us is not None]
    assert impacts == sorted(impacts, reverse=True)


def test_dataloader_advice_on_resnet() -> None:
    """The 2021 ResNet trace: 179.9 ms of the GPU's idle is the main thread waiting in the
    DataLoader's ``__next__``, so the advice is about loading data ahead, and that time is
    not also CPU-induced idle."""
    p = TRACES / "A_kineto" / "kineto_tbplugin_resnet50_w0_2021-06.pt.trace.json.gz"
    if not p.exists():
        pytest.skip("trace not available")
    rules = _by_rule(opgraph.advise(p))
    f = rules["data_loading"][0]
    assert "DataLoader" in f.finding and "num_workers" in f.try_
    assert f.impact_us == pytest.approx(179_893, abs=1)
    assert "DataLoader" not in rules["cpu_induced_idle"][0].finding


def test_gemm_alignment_exact(monkeypatch) -> None:
    """gemm_shapes: per step, bf16 1024x4096x4096 (200 µs, aligned), twice fp16 100x1000x30
    (10 µs each: unaligned) and fp32 64x512x1024 (35 µs: alignment does not apply), 3 steps:
    unaligned = 60 µs = 20/255 of GEMM time (7.8 %), under the default 10 % threshold."""
    import opgraph.analysis.recommendations as rec

    p = opgraph.example_trace("gemm_shapes")
    assert "gemm_alignment" not in _by_rule(opgraph.advise(p))
    monkeypatch.setattr(rec, "UNALIGNED_PCT", 5.0)
    f = _by_rule(opgraph.advise(p))["gemm_alignment"][0]
    assert f.impact_us == pytest.approx(60.0)
    assert f.impact_pct == pytest.approx(100.0 * 20 / 255)
    assert f.finding.startswith("6 GEMM calls in 1 shape(s) (60.0 µs, 7.8 % of GEMM time)")
    assert "aten::mm fp16 M×N×K = 100×30×1000" in f.finding
