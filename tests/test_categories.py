"""``opgraph categories`` / ``opgraph.gpu_categories``: exact on a hand-written trace (op
model, kernel-name rule, communication, memcpy, other), shares sum to 100 % on every real
trace."""

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
    """Kernels: a GEMM under aten::mm (op model), a flash-attention kernel (name rule), an
    NCCL all-reduce (communication), a kernel nothing names (other); and a memcpy."""
    acts = [("aten::mm", "kernel", "sm80_xmma_gemm_f16f16_f16f32", 100),
            (None, "kernel", "flash_fwd_kernel<Flash_fwd_kernel_traits>", 200),
            (None, "kernel", "ncclDevKernel_AllReduce_Sum_f32_RING_LL", 300),
            (None, "kernel", "my_custom_kernel", 50),
            (None, "gpu_memcpy", "Memcpy HtoD (Pinned -> Device)", 350)]
    ev, t = [], 0
    for i, (op, cat, name, dur) in enumerate(acts):
        if op:
            ev.append({"ph": "X", "cat": "cpu_op", "name": op, "pid": 1, "tid": 1, "ts": T0 + t, "dur": 20,
                       "args": {"Input Dims": [[64, 128], [128, 256]], "Input type": ["c10::Half", "c10::Half"]}})
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": T0 + t + 5,
                   "dur": 5, "args": {"correlation": i + 1}})
        ev.append({"ph": "X", "cat": cat, "name": name, "pid": 0, "tid": 7, "ts": T0 + 1000 + t * 10, "dur": dur,
                   "args": {"device": 0, "stream": 7, "correlation": i + 1}})
        t += 30
    p = tmp_path / "cats.json"
    p.write_text(json.dumps({"traceEvents": ev}))
    return p


def test_exact_answers(tmp_path: Path) -> None:
    res = opgraph.gpu_categories(opgraph.load(_trace(tmp_path)))
    a = res.activities.set_index("name")
    assert a.loc["sm80_xmma_gemm_f16f16_f16f32", ["category", "source"]].tolist() == ["GEMM", "op model"]
    assert a.loc["flash_fwd_kernel<Flash_fwd_kernel_traits>", ["category", "source"]].tolist() == ["attention",
                                                                                                  "kernel name"]
    assert a.loc["ncclDevKernel_AllReduce_Sum_f32_RING_LL", ["category", "type"]].tolist() == ["communication",
                                                                                              "communication"]
    assert a.loc["my_custom_kernel", ["category", "source"]].tolist() == ["other", "none"]
    assert a.loc["Memcpy HtoD (Pinned -> Device)", ["category", "type"]].tolist() == ["memcpy/memset", "memory"]
    c = res.to_frame().set_index("category")
    assert c.loc["GEMM", "gpu_us"] == 100 and c.loc["attention", "gpu_us"] == 200
    assert c.loc["memcpy/memset", "pct"] == pytest.approx(100 * 350 / 1000)
    ty = res.to_frame("by_type").set_index("type")
    assert ty.loc["computation", "gpu_us"] == 350 and ty.loc["communication", "gpu_us"] == 300


def test_cli_schema(tmp_path: Path) -> None:
    r = CliRunner().invoke(main, ["categories", str(_trace(tmp_path)), "--json"])
    assert r.exit_code == 0, r.output
    jsonschema.validate(json.loads(r.output), json.loads((ROOT / "schemas" / "categories.schema.json").read_text()))


@pytest.mark.real_traces
def test_real_traces(kineto_graph) -> None:
    res = opgraph.gpu_categories(kineto_graph)
    if not len(res.activities):
        pytest.skip("no device activities")
    for key in ("by_category", "by_type"):
        t = res.to_frame(key)
        assert t["pct"].sum() == pytest.approx(100.0)
        assert int(t["activities"].sum()) == len(res.activities)
