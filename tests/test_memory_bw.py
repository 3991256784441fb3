"""``opgraph memory-bw`` / ``opgraph.memory_bandwidth``: exact on a hand-written trace
(including the exact durations recovered from the profiler's bandwidth argument), and on
every real trace the recovered durations stay within the 1 µs rounding of ``dur``."""

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
    """Three HtoD pinned copies: 1,006,250 bytes in a recorded 80 µs whose exact duration is
    80.5 µs (the profiler's 12.5 GB/s), 500,000 bytes in 50 µs with no bandwidth argument,
    and one with no bytes at all; one memset of 4,096 bytes, exact 1.28 µs (recorded 1);
    one DtoH copy whose bandwidth argument disagrees with its duration by 9 µs (kept: dur)."""
    acts = [("gpu_memcpy", "Memcpy HtoD (Pinned -> Device)", 100, 80, {"bytes": 1_006_250,
                                                                        "memory bandwidth (GB/s)": 12.5}),
            ("gpu_memcpy", "Memcpy HtoD (Pinned -> Device)", 300, 50, {"bytes": 500_000}),
            ("gpu_memcpy", "Memcpy HtoD (Pinned -> Device)", 400, 10, {}),
            ("gpu_memset", "Memset (Device)", 500, 1, {"bytes": 4096, "memory bandwidth (GB/s)": 3.2}),
            ("gpu_memcpy", "Memcpy DtoH (Device -> Pinned)", 600, 10, {"bytes": 10_000, "memory bandwidth (GB/s)": 0.5})]
    ev = []
    for i, (cat, name, start, dur, extra) in enumerate(acts):
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyAsync", "pid": 1, "tid": 1,
                   "ts": T0 + start - 20, "dur": 5, "args": {"correlation": 10 + i}})
        ev.append({"ph": "X", "cat": cat, "name": name, "pid": 0, "tid": 7, "ts": T0 + start, "dur": dur,
                   "args": {"device": 0, "stream": 7, "correlation": 10 + i, **extra}})
    p = tmp_path / "copies.json"
    p.write_text(json.dumps({"traceEvents": ev}))
    return p


def test_exact_answers(tmp_path: Path) -> None:
    res = opgraph.memory_bandwidth(opgraph.load(_trace(tmp_path)))
    by = res.to_frame().set_index("kind")
    h = by.loc["Memcpy HtoD (Pinned -> Device)"]
    assert (h["count"], h["no_bytes"], h["bytes"]) == (3, 1, 1_506_250)
    assert h["time_us"] == pytest.approx(80.5 + 50 + 10)        # exact 80.5 µs, then the recorded 50 and 10
    assert h["gbps"] == pytest.approx(1_506_250 / 130_500)       # Σ bytes / Σ time of the copies with bytes
    assert h["gbps_max"] == pytest.approx(12.5) and h["gbps_p50"] == pytest.approx((12.5 + 10.0) / 2)
    d = by.loc["Memcpy DtoH (Device -> Pinned)"]                 # 10,000 B / 0.5 GB/s = 20 µs ≠ 10 µs: dur kept
    assert d["time_us"] == pytest.approx(10) and d["gbps"] == pytest.approx(1.0)
    m = by.loc["Memset (Device)"]
    assert m["time_us"] == pytest.approx(1.28) and m["gbps"] == pytest.approx(3.2)
    c = res.copies.set_index("eid")
    assert sorted(c["dur_source"].unique()) == ["timestamps", "trace bandwidth"]


def test_cli(tmp_path: Path) -> None:
    p = _trace(tmp_path)
    r = CliRunner().invoke(main, ["memory-bw", str(p), "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    jsonschema.validate(doc, json.loads((ROOT / "schemas" / "memory-bw.schema.json").read_text()))
    assert doc["copies"] == 5 and doc["bytes"] == 1_506_250 + 4096 + 10_000
    r = CliRunner().invoke(main, ["memory-bw", str(p)])
    assert r.exit_code == 0 and "Memset (Device)" in r.output


@pytest.mark.real_traces
def test_real_traces(kineto_graph) -> None:
    res = opgraph.memory_bandwidth(kineto_graph)
    c = res.copies
    if not len(c):
        pytest.skip("no copies")
    assert ((c["dur_exact_ns"] - c["dur_ns"]).abs() <= 1000.0 + 1e-6).all()
    by = res.to_frame()
    assert int(by["count"].sum()) == len(c)
    assert abs(float(by["time_us"].sum()) * 1e3 - float(c["dur_exact_ns"].sum())) < 1.0
    ok = c["trace_gbps"].notna() & (c["dur_source"] == "trace bandwidth")
    assert (c.loc[ok, "gbps"] - c.loc[ok, "trace_gbps"]).abs().max() < 1e-9 if ok.any() else True
