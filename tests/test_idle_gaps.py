"""``opgraph idle-gaps`` / ``opgraph.idle_gaps``: exact on synthesized traces whose gaps are
known by construction, invariants (bins sum to the idle time ``opgraph idle`` reports) on
every real trace."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import opgraph
from conftest import _run_cli
from opgraph.schemas_util import validation_error

T0 = 1_700_000_000_000_000


def _two_streams(tmp_path: Path) -> Path:
    """Device 0: stream 7 kernels [0, 10), [12, 20), [520, 530); stream 8 kernel [15, 40)
    (overlapping stream 7's second). Union: [0, 10), [12, 40), [520, 530): gaps 2 µs and
    480 µs. Device 1: one kernel, no gap."""
    ev = [{"ph": "X", "cat": "kernel", "name": f"k{i}", "pid": dev, "tid": st, "ts": T0 + t, "dur": d,
           "args": {"device": dev, "stream": st}}
          for i, (dev, st, t, d) in enumerate([(0, 7, 0, 10), (0, 7, 12, 8), (0, 7, 520, 10), (0, 8, 15, 25),
                                               (1, 7, 100, 50)])]
    p = tmp_path / "gaps.json"
    p.write_text(json.dumps({"traceEvents": ev}))
    return p


def test_two_streams_exact(tmp_path: Path) -> None:
    res = opgraph.idle_gaps(_two_streams(tmp_path), short_us=5.0)
    d = res.to_frame().set_index("device")
    assert d.loc[0, ["span_us", "busy_us", "idle_us", "gaps", "short_gaps", "short_idle_us"]].tolist() == [
        530.0, 48.0, 482.0, 2, 1, 2.0]
    assert d.loc[0, "max_us"] == 480.0 and d.loc[0, "short_idle_pct"] == pytest.approx(100 * 2 / 482)
    assert d.loc[1, "gaps"] == 0 and d.loc[1, "idle_us"] == 0.0 and d.loc[1, "p50_us"] != d.loc[1, "p50_us"]
    b = res.to_frame("bins")
    b0 = b[b["device"] == 0].set_index("from_us")
    assert b0.loc[1.0, "gaps"] == 1 and b0.loc[1.0, "idle_us"] == 2.0      # [1, 10) µs
    assert b0.loc[100.0, "gaps"] == 1 and b0.loc[100.0, "idle_us"] == 480.0  # [100, 1000) µs
    assert b0["gaps"].sum() == 2 and b["to_us"].isna().sum() == 2            # one open bin per device
    doc = json.loads(json.dumps(res.to_dict()))
    assert validation_error(doc, "idle-gaps.schema.json") is None
    assert doc["devices"][1]["short_idle_pct"] is None and doc["devices"][1]["p50_us"] is None


def test_cpu_bound_scenario(tmp_path: Path) -> None:
    """The cpu_bound scenario (opgraph/testing/synth_scenarios.py), 3 steps: per step 8
    forward kernels 100 µs apart and 4 backward ones 100 µs apart, 5 µs each, so 10 gaps of
    95 µs and one of 105 µs (forward to backward); 165 µs between steps (the last backward
    kernel ends at +1160 µs, the next step's first kernel starts at +1230 + 50 + 45 µs)."""
    trace = opgraph.example_trace("cpu_bound", tmp_path, steps=3)
    res = opgraph.idle_gaps(trace, short_us=100.0)
    d = res.to_frame().iloc[0]
    assert d["gaps"] == 3 * 11 + 2
    assert d["idle_us"] == 3 * (10 * 95 + 105) + 2 * 165
    assert d["short_gaps"] == 30 and d["short_idle_us"] == 30 * 95
    assert (d["p50_us"], d["max_us"]) == (95.0, 165.0)
    bins = res.to_frame("bins").set_index("from_us")
    assert bins.loc[10.0, "gaps"] == 30 and bins.loc[100.0, "gaps"] == 5
    assert bins.loc[100.0, "idle_us"] == 3 * 105 + 2 * 165
    assert d["idle_us"] == opgraph.idle(trace).to_frame()["idle_us"].iloc[0]


def test_cli_and_per_rank(tmp_path: Path) -> None:
    p = _two_streams(tmp_path)
    r = _run_cli(["idle-gaps", str(p), "--short-us", "5", "--json"])
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout) == json.loads(json.dumps(opgraph.idle_gaps(p, short_us=5.0).to_dict()))
    r = _run_cli(["idle-gaps", str(p)])
    assert r.exit_code == 0 and "Gaps by length" in r.stdout and "480.0" in r.stdout
    r = _run_cli(["idle-gaps", str(p), "--short-us", "-1"])
    assert r.exit_code == 2
    with pytest.raises(ValueError, match="short_us"):
        opgraph.idle_gaps(p, short_us=-1)


def test_real(kineto_graph) -> None:
    """Every real Kineto trace: per device the bins sum to the idle time and gap count, span
    = busy + idle, and the idle time equals ``opgraph idle``'s over the same window."""
    res = opgraph.idle_gaps(kineto_graph)
    devs = res.to_frame()
    bins = res.to_frame("bins")
    idle_frame = opgraph.idle(kineto_graph).to_frame()
    if devs.empty:  # no device activity (a CPU-only trace)
        assert bins.empty and idle_frame.empty
        return
    idle = idle_frame.set_index("device")
    for r in devs.to_dict("records"):
        b = bins[bins["device"] == r["device"]]
        assert b["gaps"].sum() == r["gaps"]
        assert b["idle_us"].sum() == pytest.approx(r["idle_us"], abs=1e-6)
        assert r["span_us"] == pytest.approx(r["busy_us"] + r["idle_us"], abs=1e-6)
        assert r["idle_us"] == pytest.approx(idle.loc[r["device"], "idle_us"], abs=1e-3)
        assert r["short_gaps"] <= r["gaps"]
    assert validation_error(json.loads(json.dumps(res.to_dict())), "idle-gaps.schema.json") is None
