"""One meaning of busy and idle (issue 31, item 3): ``idle`` measures over the GPU span,
``summary`` over the steps' window; the reconciling table (steps' window = GPU span +
lead-in + tail) holds exactly on the synthesized traces' known answers and on every real
trace, and its figures are the ones ``idle``, ``summary`` and the report print."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import prose

import opgraph
from opgraph.analysis.busy_windows import busy_windows
from opgraph.analysis.idle import idle_time
from opgraph.analysis.summary_doc import summary_doc
from opgraph.schemas_util import validation_error


def _answers(trace: Path) -> dict:
    return json.loads(Path(str(trace).replace(".json", ".answers.json")).read_text())


def _check_identities(d: dict) -> None:
    assert d["steps_span_us"] == pytest.approx(d["gpu_span_us"] + d["lead_in_us"] + d["tail_us"], abs=1e-6)
    assert d["idle_steps_us"] == pytest.approx(
        d["idle_gpu_span_us"] + d["lead_in_us"] + d["tail_us"] + d["busy_outside_steps_us"], abs=1e-6)
    assert d["busy_gpu_span_us"] == pytest.approx(d["busy_steps_us"] + d["busy_outside_steps_us"], abs=1e-6)
    assert 0 <= d["busy_outside_steps_us"] <= d["busy_gpu_span_us"] + 1e-6


@pytest.mark.parametrize("scenario", ["cpu_bound", "gpu_bound", "two_stream_event_wait"])
def test_known_answers(scenario: str) -> None:
    p = opgraph.example_trace(scenario)
    a = _answers(p)
    (d,) = busy_windows(opgraph.load(p)).to_dict()["devices"]
    steps0 = min(s["cpu_start_ns"] for s in a["steps"])
    steps1 = max(s["cpu_end_ns"] for s in a["steps"])
    assert d["gpu_span_us"] == pytest.approx(a["gpu"]["span_ns"] / 1e3)
    assert d["busy_gpu_span_us"] == pytest.approx(a["gpu"]["busy_ns"] / 1e3)
    assert d["steps_span_us"] == pytest.approx((steps1 - steps0) / 1e3)
    assert d["lead_in_us"] == pytest.approx((a["gpu"]["start_ns"] - steps0) / 1e3)
    assert d["tail_us"] == pytest.approx((steps1 - a["gpu"]["end_ns"]) / 1e3)
    _check_identities(d)


def test_real_traces_agree(kineto_graph) -> None:
    """Every real trace: the identities hold exactly, the GPU-span figures are idle's and
    the steps' window figures are summary's, device by device."""
    G = kineto_graph
    doc = busy_windows(G).to_dict()
    idle = {d["device"]: d for d in idle_time(G).to_dict(top=1)["devices"]}
    summ = summary_doc(G)
    assert validation_error(summ, "summary.schema.json") is None
    assert summ["windows"] == doc
    steps = {d["device"]: d for d in summ["devices"]}
    for d in doc["devices"]:
        _check_identities(d)
        i = idle[d["device"]]
        assert d["gpu_span_us"] == pytest.approx(i["span_us"]) and d["busy_gpu_span_us"] == pytest.approx(i["busy_us"])
        assert d["busy_pct_gpu_span"] == pytest.approx(i["busy_pct"])
        if d["device"] in steps:
            s = steps[d["device"]]
            assert d["steps_span_us"] == pytest.approx(s["span_us"]) and d["busy_steps_us"] == pytest.approx(s["busy_us"])
            assert d["busy_pct_steps"] == pytest.approx(s["busy_pct"])


def test_commands_print_and_carry_the_windows(cli, tmp_path: Path) -> None:
    p = opgraph.example_trace("cpu_bound", tmp_path)
    for cmd, schema in (("idle", "idle.schema.json"), ("summary", "summary.schema.json")):
        r = cli([cmd, str(p), "--json"])
        assert r.exit_code == 0, r.stderr
        doc = json.loads(r.stdout)
        assert validation_error(doc, schema) is None
        _check_identities(doc["windows"]["devices"][0])
        r = cli([cmd, str(p)])
        assert r.exit_code == 0 and "steps' window = GPU span + lead-in + tail" in prose(r.stdout)
    r = cli(["overlap", str(p)])
    assert "Window: per step" in prose(r.stdout)


def test_report_cards_come_from_the_windows(tmp_path: Path) -> None:
    p = opgraph.example_trace("cpu_bound", tmp_path)
    out = tmp_path / "r.html"
    opgraph.report_html(p, out)
    html = out.read_text()
    assert 'data-path="windows/devices/0/busy_pct_steps"' in html
    assert 'data-path="windows/devices/0/busy_pct_gpu_span"' in html and "lead-in" in html
