"""``opgraph launch-stats`` / ``opgraph.launch_stats``: the delay after a launch call split
into queueing and latency, exact on a hand-written trace; invariants on every real trace."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner

import opgraph
from opgraph.cli import main

ROOT = Path(__file__).resolve().parent.parent
T0 = 1_700_000_000_000_000


def _trace(tmp_path: Path) -> Path:
    """One stream. k1: call [10, 15), runs [20, 520) (delay 5, all latency). k2: call
    [30, 90) (a 60 µs call: an outlier), runs [520, 525) (delay 430 = 430 queued behind k1).
    k3: call [600, 605), runs [800, 803) (stream free since 525: 195 latency, an outlier),
    and shorter than its call."""
    acts = [(10, 5, 20, 500, "gemm"), (30, 60, 520, 5, "relu"), (600, 5, 800, 3, "tiny")]
    ev = [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": T0 + 5, "dur": 700}]
    for i, (c0, cd, k0, kd, name) in enumerate(acts):
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": T0 + c0,
                   "dur": cd, "args": {"correlation": i + 1}})
        ev.append({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": T0 + k0, "dur": kd,
                   "args": {"device": 0, "stream": 7, "correlation": i + 1}})
    p = tmp_path / "launch.json"
    p.write_text(json.dumps({"traceEvents": ev}))
    return p


def test_exact_answers(tmp_path: Path) -> None:
    res = opgraph.launch_stats(opgraph.load(_trace(tmp_path)))
    t = res.tables()
    lz = t["launches"].set_index("name")
    assert lz.loc["gemm", ["delay_us", "queued_us", "latency_us"]].tolist() == [5, 0, 5]
    assert lz.loc["relu", ["delay_us", "queued_us", "latency_us"]].tolist() == [430, 430, 0]
    assert lz.loc["tiny", ["delay_us", "queued_us", "latency_us"]].tolist() == [195, 0, 195]
    assert set(lz["op"]) == {"aten::mm"}
    s = t["summary"].iloc[0]
    assert (s["call_outliers"], s["latency_outliers"], s["short_kernels"]) == (1, 1, 2)   # relu and tiny are short
    assert t["latency_outliers"]["name"].tolist() == ["tiny"]
    h = t["histogram"].set_index("from_us")
    assert (h.loc[2, "kernels"], h.loc[5, "kernels"], h.loc[100, "kernels"]) == (1, 1, 1)
    assert s["short_time_pct"] == pytest.approx(100 * 8 / 508)


def test_cli_schema(tmp_path: Path) -> None:
    r = CliRunner().invoke(main, ["launch-stats", str(_trace(tmp_path)), "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    jsonschema.validate(doc, json.loads((ROOT / "schemas" / "launch-stats.schema.json").read_text()))
    assert doc["summary"]["latency_outliers"] == 1
    r = CliRunner().invoke(main, ["launch-stats", str(_trace(tmp_path))])
    assert r.exit_code == 0 and "queueing" in r.output


@pytest.mark.real_traces
def test_real_traces(kineto_graph) -> None:
    t = opgraph.launch_stats(kineto_graph).tables()
    lz = t["launches"]
    if not len(lz):
        pytest.skip("no launches")
    assert ((lz["queued_us"] + lz["latency_us"] - lz["delay_us"]).abs() < 1e-6).all()
    assert (lz[["call_us", "gpu_us", "delay_us", "queued_us", "latency_us"]] >= 0).all().all()
    k = lz[lz["kind"] == "kernel"]
    assert int(t["histogram"]["kernels"].sum()) == len(k)
    assert t["histogram"]["time_us"].sum() == pytest.approx(k["gpu_us"].sum())
