"""``opgraph counters`` / ``cupti_counters``: exact answers on hand-written CUPTI
range-profiler traces (order, correlation and External id pairing, ``(no op)``, unequal
counts), and the real HTA range-profiler trace."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import numpy as np
import pytest
from click.testing import CliRunner

import opgraph
from opgraph.analysis.counters import NO_OP, cupti_counters
from opgraph.cli import main

ROOT = Path(__file__).resolve().parent.parent
REAL = ROOT.parent / "shared" / "traces" / "A_kineto" / "hta_cupti_profiler_range.json.gz"
SCHEMA = json.loads((ROOT / "schemas" / "counters.schema.json").read_text())
T0 = 1_700_000_000_000_000
SM = "sm__throughput.avg.pct_of_peak_sustained_elapsed"
DRAM = "dram__bytes_read.sum"
FFMA = "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"
FADD = "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum"


def _op(name: str, ts: int, dur: int, ext: int) -> dict:
    return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": T0 + ts, "dur": dur,
            "args": {"External id": ext}}


def _call(name: str, ts: int, corr: int) -> dict:
    return {"ph": "X", "cat": "cuda_runtime", "name": name, "pid": 1, "tid": 1, "ts": T0 + ts, "dur": 2,
            "args": {"correlation": corr}}


def _range(name: str, i: int, counters: dict, **link) -> dict:
    # Kineto spaces the ranges evenly; their times are not kernel times
    return {"ph": "X", "cat": "cuda_profiler_range", "name": name, "pid": 0, "tid": 0, "ts": T0 + 1000 * i,
            "dur": 1000, "args": {**counters, **link}}


def _host() -> list[dict]:
    """aten::linear > aten::mm launches k0 (corr 11); aten::relu launches k1 (corr 12), k2
    (corr 13); a launch under no op (corr 14); a memset (not a kernel launch)."""
    return [_op("aten::linear", 0, 40, 1), _op("aten::mm", 5, 30, 2), _call("cudaLaunchKernel", 10, 11),
            _op("aten::relu", 50, 40, 3), _call("cudaLaunchKernel", 55, 12), _call("cuLaunchKernel", 70, 13),
            _call("cudaMemsetAsync", 95, 15), _call("cudaLaunchKernel", 100, 14)]


VALUES = [  # (kernel, sm %, dram bytes, ffma, fadd)
    ("gemm_k0", 80.0, 4096, 1000, 10),
    ("relu_k1", 20.0, 1024, 0, 50),
    ("relu_k2", 30.0, 2048, 0, 70),
    ("__missing__", 5.0, 0, 3, 0),
]


def _write(tmp_path: Path, events: list[dict], name: str = "cupti.json") -> Path:
    p = tmp_path / name
    p.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    return p


def _ranges(links: list[dict] | None = None, rows=VALUES) -> list[dict]:
    links = links or [{}] * len(rows)
    return [_range(k, i, {SM: sm, DRAM: dr, FFMA: ff, FADD: fa}, **lk)
            for i, ((k, sm, dr, ff, fa), lk) in enumerate(zip(rows, links))]


def test_order_pairing_exact(tmp_path: Path) -> None:
    res = cupti_counters(opgraph.load(_write(tmp_path, _host() + _ranges())))
    r = res.ranges
    assert r["match"].tolist() == ["order"] * 4 and res.launch_calls == 4 and res.note is None
    assert r["kernel"].tolist() == [v[0] for v in VALUES]
    assert r["op"].tolist() == ["aten::mm", "aten::relu", "aten::relu", NO_OP]
    assert r["launch"].tolist() == ["cudaLaunchKernel", "cudaLaunchKernel", "cuLaunchKernel", "cudaLaunchKernel"]
    assert r["top_op"].tolist() == ["aten::linear", "aten::relu", "aten::relu", None]
    assert [tuple(s) for s in r["op_stack"]] == [("aten::linear", "aten::mm"), ("aten::relu",), ("aten::relu",), ()]
    assert r[DRAM].tolist() == [4096, 1024, 2048, 0] and r[SM].tolist() == [80, 20, 30, 5]
    assert r["sass_flops"].tolist() == [2 * 1000 + 10, 50, 70, 6]   # 2 x ffma + fadd
    assert res.no_op == 1 and res.counters == (SM, DRAM, FFMA, FADD)
    b = res.by_op.set_index("op")
    assert b.loc["aten::relu", "ranges"] == 2 and b.loc["aten::relu", SM] == pytest.approx(25.0)
    assert b.loc["aten::relu", DRAM] == pytest.approx(1536) and b.loc["aten::mm", DRAM] == 4096
    assert b.loc[NO_OP, "ranges"] == 1 and b["ranges"].sum() == 4
    assert res.tables()["ranges"]["op_stack"].tolist() == ["aten::linear > aten::mm", "aten::relu", "aten::relu", ""]


def test_correlation_and_external_id(tmp_path: Path) -> None:
    """Range 1 names its launch (correlation 13: the second relu launch), range 0 its op
    (External id 2: aten::mm); the other two are paired in order with the two launches
    left (corr 11 and 12, then 14 is one too many: counts differ -> none)."""
    links = [{"External id": 2}, {"correlation": 13}, {}, {}]
    res = cupti_counters(opgraph.load(_write(tmp_path, _host() + _ranges(links))))
    r = res.ranges
    assert r["match"].tolist() == ["external_id", "correlation", "none", "none"]
    assert r["op"].tolist() == ["aten::mm", "aten::relu", NO_OP, NO_OP]
    assert r["launch"].iloc[1] == "cuLaunchKernel" and r["launch"].iloc[0] is None
    assert r["launch_eid"].iloc[0] == -1 and res.no_op == 2
    assert "counts differ" in res.note and "2 ranges" in res.note and "3 kernel-launch" in res.note
    # with the extra launch gone, the two remaining ranges pair in order with corr 11, 12
    host = [e for e in _host() if e["args"].get("correlation") != 14]
    res = cupti_counters(opgraph.load(_write(tmp_path, host + _ranges(links), "b.json")))
    assert res.ranges["match"].tolist() == ["external_id", "correlation", "order", "order"]
    assert res.ranges["op"].tolist() == ["aten::mm", "aten::relu", "aten::mm", "aten::relu"]


def test_unequal_counts_pair_nothing(tmp_path: Path) -> None:
    res = cupti_counters(opgraph.load(_write(tmp_path, _host() + _ranges(rows=VALUES[:3]))))
    assert (res.ranges["match"] == "none").all() and res.no_op == 3
    assert res.by_op["op"].tolist() == [NO_OP] and res.by_op[SM].iloc[0] == pytest.approx(130 / 3)
    assert res.note.startswith("3 ranges")


def test_no_ranges_and_missing_counters(tmp_path: Path) -> None:
    res = cupti_counters(opgraph.load(_write(tmp_path, _host())))
    assert len(res.ranges) == 0 and res.counters == () and res.to_dict()["rows"] == []
    jsonschema.validate(res.to_dict(), SCHEMA)
    # ranges with different counter sets: NaN where absent, means over the ranges that have it
    ev = _host() + [_range("a", 0, {SM: 10.0}), _range("b", 1, {DRAM: 7}), _range("c", 2, {SM: 30.0, "note": "x"}),
                    _range("d", 3, {})]
    res = cupti_counters(opgraph.load(_write(tmp_path, ev, "mixed.json")))
    assert res.counters == (SM, DRAM) and not res.has_sass_flops
    assert np.isnan(res.ranges[SM].iloc[1]) and res.ranges[DRAM].iloc[1] == 7
    b = res.by_op.set_index("op")
    assert b.loc["aten::relu", SM] == pytest.approx(30.0)  # ranges 1, 2 -> relu; only range 2 has SM
    doc = res.to_dict()
    jsonschema.validate(doc, SCHEMA)
    assert doc["rows"][1]["counters"][SM] is None and doc["rows"][0]["sass_flops"] is None


def test_cli(tmp_path: Path) -> None:
    trace = _write(tmp_path, _host() + _ranges())
    r = CliRunner().invoke(main, ["counters", str(trace), "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    jsonschema.validate(doc, SCHEMA)
    assert (doc["ranges"], doc["with_op"], doc["no_op"], doc["match"]["order"]) == (4, 3, 1, 4)
    assert doc["rows"][0]["op_stack"] == ["aten::linear", "aten::mm"] and doc["rows"][0]["counters"][DRAM] == 4096
    r = CliRunner().invoke(main, ["counters", str(trace)])
    assert r.exit_code == 0 and "aten::relu" in r.stdout and "(no op)" in r.stdout and "4 by order" in r.stdout
    r = CliRunner().invoke(main, ["counters", str(trace), "--csv", str(tmp_path / "out")])
    assert r.exit_code == 0, r.output
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["cupti.by_op.csv", "cupti.ranges.csv"]
    # a name with markup and control characters prints literally, on one line
    ev = [dict(e, name="[bold]x\x1b[31m") if e.get("name") == "aten::relu" else e for e in _host()] + _ranges()
    r = CliRunner().invoke(main, ["counters", str(_write(tmp_path, ev, "odd.json"))])
    assert r.exit_code == 0 and "[bold]x\\x1b[31m" in r.stdout
    r = CliRunner().invoke(main, ["counters", str(tmp_path / "missing.json")])
    assert r.exit_code == 2 and len(r.stderr.strip().splitlines()) == 1


@pytest.mark.real_traces
@pytest.mark.skipif(not REAL.is_file(), reason=f"real traces not available: {REAL} does not exist")
def test_real_range_profiler_trace() -> None:
    res = cupti_counters(opgraph.load(REAL))
    r = res.ranges
    assert len(r) == 77 == res.launch_calls and (r["match"] == "order").all() and res.no_op == 0
    assert len(res.counters) == 9 and res.has_sass_flops
    # the pairing by order agrees with what the kernel names say
    for pat, op in (("max_pool", "aten::max_pool2d_with_indices"), ("clamp", "aten::clamp_min_"),
                    ("CUDAFunctor_add", "aten::add_"), ("fused_dropout", "aten::native_dropout"),
                    ("adaptive_average_pool", "aten::_adaptive_avg_pool2d"), ("uniform", "aten::uniform_"),
                    ("sgemm_32x32", "aten::addmm"), ("fft2d", "aten::cudnn_convolution")):
        ops = set(r.loc[r["kernel"].str.contains(pat, regex=False), "op"])
        assert ops == {op}, (pat, ops)
    assert res.by_op["ranges"].sum() == 77
    doc = res.to_dict()
    jsonschema.validate(doc, SCHEMA)
    assert doc["by_op"][0]["op"] == "aten::cudnn_convolution" and doc["by_op"][0]["ranges"] == 28
