"""``opgraph kernels`` / ``opgraph.kernel_stats``: exact on a hand-written trace, invariants
on the real traces."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import opgraph
from opgraph.analysis.kernel_stats import kernel_stats
from opgraph.schemas_util import validation_error


T0 = 1_700_000_000_000_000


def _trace(tmp_path: Path) -> Path:
    """Kernels (µs): two ``elementwise_k`` (10 with 2 blocks/SM and 50 % occupancy, grid
    1×2×3; 30 with 4 and 25 %, grid 1×2×3), one ``sm90_xmma_gemm_bf16`` (40, the plugin's
    list matches it), one ``nvjet_hsh_64x8`` (20, only the newer patterns match it) with no
    occupancy recorded."""
    ks = [("elementwise_k", 0, 10, {"blocks per SM": 2, "est. achieved occupancy %": 50, "grid": [1, 2, 3],
                                    "block": [128, 1, 1], "registers per thread": 16, "shared memory": 0}),
          ("elementwise_k", 20, 30, {"blocks per SM": 4, "est. achieved occupancy %": 25, "grid": [1, 2, 3],
                                     "block": [128, 1, 1], "registers per thread": 32, "shared memory": 1024}),
          ("sm90_xmma_gemm_bf16", 60, 40, {"blocks per SM": 1, "est. achieved occupancy %": 10, "grid": [8, 1, 1],
                                           "block": [256, 1, 1]}),
          ("nvjet_hsh_64x8", 110, 20, {"grid": [4, 1, 1], "block": [384, 1, 1]})]
    ev = []
    for i, (name, t, d, args) in enumerate(ks):
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": T0 + t - 5,
                   "dur": 3, "args": {"correlation": i + 1}})
        ev.append({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": T0 + t, "dur": d,
                   "args": {"device": 0, "stream": 7, "correlation": i + 1, **args}})
    p = tmp_path / "kernels.json"
    p.write_text(json.dumps({"traceEvents": ev}))
    return p


def test_exact(tmp_path: Path) -> None:
    r = kernel_stats(opgraph.load(_trace(tmp_path)))
    k = r.kernels.set_index("name")
    e = k.loc["elementwise_k"]
    assert (e["count"], e["total_us"], e["mean_us"], e["min_us"], e["max_us"]) == (2, 40, 20, 10, 30)
    assert e["blocks_per_sm"] == pytest.approx((2 * 10 + 4 * 30) / 40)
    assert e["occupancy_pct"] == pytest.approx((50 * 10 + 25 * 30) / 40)
    assert (e["grid"], e["block"], e["shapes"], e["registers_per_thread"], e["shared_memory_bytes"]) == (
        "1×2×3", "128×1×1", 1, 32, 1024)
    assert bool(k.loc["sm90_xmma_gemm_bf16", "tensor_cores_tb_plugin"]) and bool(k.loc["nvjet_hsh_64x8", "tensor_cores"])
    assert not bool(k.loc["nvjet_hsh_64x8", "tensor_cores_tb_plugin"]) and not bool(e["tensor_cores"])
    assert k.loc["nvjet_hsh_64x8", "occupancy_pct"] is None
    s = r.summary_
    assert s["kernel_time_us"] == 100 and s["kernels"] == 4 and s["names"] == 3
    assert s["tensor_core_time_pct"] == pytest.approx(100 * 60 / 100)
    assert s["tensor_core_time_pct_tb_plugin"] == pytest.approx(100 * 40 / 100)
    assert s["occupancy_pct"] == pytest.approx((50 * 10 + 25 * 30 + 10 * 40) / 80) and s["with_occupancy"] == 3
    assert list(r.kernels["name"]) == ["elementwise_k", "sm90_xmma_gemm_bf16", "nvjet_hsh_64x8"]


def test_cli(cli, tmp_path: Path) -> None:
    p = _trace(tmp_path)
    r = cli(["kernels", str(p), "--json"])
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    assert validation_error(doc, "kernel-stats.schema.json") is None and len(doc["kernels"]) == 3
    r = cli(["kernels", str(p)])
    assert r.exit_code == 0 and "tensor" in r.stdout and "elementwise_k" in r.stdout
    r = cli(["kernels", str(opgraph.example_trace("cpu_bound", tmp_path / "c")), "--csv", str(tmp_path / "csv")])
    assert r.exit_code == 0 and (tmp_path / "csv" / "cpu_bound.kernels.csv").exists()


def test_no_kernels(cli, tmp_path: Path) -> None:
    p = tmp_path / "none.json"
    p.write_text(json.dumps({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1,
                                              "ts": T0, "dur": 5}]}))
    r = cli(["kernels", str(p)])
    assert r.exit_code == 0 and "no kernels in this trace" in r.stdout


def test_real(kineto_graph) -> None:
    """Every real Kineto trace: counts equal the graph's kernel nodes, shares sum to 100 %,
    occupancy stays in [0, 100], the schema holds."""
    G = kineto_graph
    r = kernel_stats(G)
    doc = json.loads(json.dumps(r.to_dict()))
    assert validation_error(doc, "kernel-stats.schema.json") is None
    k = r.kernels
    n = sum(1 for _u, d in G.nodes(data=True) if d["kind"] == "kernel")
    assert int(k["count"].sum()) == n == r.summary_["kernels"]
    if not n:
        return
    assert k["total_us"].sum() == pytest.approx(r.summary_["kernel_time_us"])
    if r.summary_["kernel_time_us"] > 0:
        assert k["pct"].sum() == pytest.approx(100.0)
    assert r.summary_["tensor_core_time_pct"] >= r.summary_["tensor_core_time_pct_tb_plugin"]
    occ = [v for v in k["occupancy_pct"] if v is not None]
    assert all(0 <= v <= 100 for v in occ)
