"""The run verdict (issue "One answer a user can act on", items 1 and 2): synthesized runs
with a known verdict (opgraph/testing/synth_paths.py, VERDICT_SCENARIOS), what each
category is worth, the CLI's first screen and JSON; and on every real trace, a verdict
that agrees in kind with ``idle``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from opgraph.analysis.critical_path.path import critical_path
from opgraph.graph.io import load_any
from opgraph.schemas_util import validate
from opgraph.testing.synth_paths import VERDICT_SCENARIOS, verdict_scenario, write_path_scenario


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("verdict")
    return {n: write_path_scenario(verdict_scenario(n), d) for n in VERDICT_SCENARIOS}


@pytest.mark.parametrize("name", VERDICT_SCENARIOS)
def test_verdict_exact(name: str, runs: dict[str, Path]) -> None:
    ans = verdict_scenario(name).summary
    v = critical_path(load_any(str(runs[name]))).verdict()
    assert v.bound == ans["bound"] and v.headline == ans["headline"]
    assert (v.steady, v.step_us) == (ans["steady"], ans["step_us"])
    assert [(o.name, o.reason) for o in v.outliers] == ans["outliers"]
    assert {c: round(p, 6) for c, p in v.shares} == ans["shares"]


def test_gains_exact(runs: dict[str, Path]) -> None:
    """Halving the kernels of the GPU-bound run shortens each step by 450 µs: 2,250 µs."""
    from opgraph.predict.gains import category_gains

    G = load_any(str(runs["verdict_gpu_bound_stop_tail"]))
    v = critical_path(G).verdict()
    gains = {g.category: g for g in category_gains(G, v.shares)}
    assert set(gains) == {"gpu_compute"}   # untraced (7.5 %) has no lever
    assert gains["gpu_compute"].gain_us == pytest.approx(2250.0)


def test_cli_first_screen_and_json(runs: dict[str, Path], cli) -> None:
    p = str(runs["verdict_gpu_bound_stop_tail"])
    r = cli(["critical-path", p, "--summary"])
    assert r.exit_code == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("Run: bound by gpu_compute (90 %); steady-state step 1,000 µs (4 of 5 step(s) steady)")
    assert "outlier ProfilerStep#5: profiler stop tail" in r.stdout
    assert "ProfilerStep#1: span" not in r.stdout          # --summary: no per-step tables
    r = cli(["critical-path", p])
    assert r.stdout.startswith("Run: ") and "ProfilerStep#1: span" in r.stdout
    doc = json.loads(cli(["critical-path", p, "--json"]).stdout)
    validate(doc, "critical-path.schema.json")
    assert doc["run"]["bound"] == "gpu_compute" and doc["run"]["outliers"][0]["reason"] == "profiler_stop_tail"
    assert doc["run"]["gains"][0]["gain_us"] == pytest.approx(2250.0)
    doc = json.loads(cli(["critical-path", p, "--json", "--no-gains"]).stdout)
    assert "gains" not in doc["run"]


# ------------------------------------------------------------------ real traces


@pytest.mark.real_traces
def test_verdict_agrees_with_idle(kineto_graph) -> None:
    """A run bound by ``cpu`` has CPU-induced idle that supports it (the device idles at
    least 10 % of its span waiting for launches or data); a run bound by device work does
    not have half of its device span idle for the CPU."""
    from opgraph.analysis.idle import idle_time

    G = kineto_graph
    if not any(d["kind"] in ("kernel", "memcpy", "memset") for _, d in G.nodes(data=True)):
        pytest.skip("no device activities")
    v = critical_path(G).verdict()
    res = idle_time(G)
    span = sum(d.span_ns for d in res.devices)
    host = sum(d.causes_ns["cpu_induced"] + d.causes_ns["data_loading"] for d in res.devices)
    share = 100.0 * host / span if span else 0.0
    path_us = sum(v.breakdown_us.values())
    if v.bound == "cpu" and span / 1e3 >= 0.5 * path_us:
        # (when the device ran for less than half the path, e.g. one kernel in a 1 µs trace,
        # its idle, first activity to last, cannot speak for the run)
        assert share >= 10.0, (v.headline, share)
    if v.bound in ("gpu_compute", "gpu_comm", "gpu_memory"):
        assert share < 50.0, (v.headline, share)
    assert v.headline.startswith("mixed: " if v.bound == "mixed" else "bound by ")
