"""``opgraph diff``: name normalisation, call paths, exact deltas on hand-built traces, and
the issue's acceptance checks on real traces."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from opgraph.analysis.diff import call_paths, diff_graphs
from opgraph.names import normalize_kernel_name
from opgraph.analysis.roofline import TraceColumns
from opgraph.cli import main
from opgraph.graph.io import load_any
from opgraph.schemas_util import validate

TRACES = Path(__file__).resolve().parents[1].parent / "shared" / "traces"
KDIR = TRACES / "A_kineto"
needs_traces = pytest.mark.skipif(not KDIR.is_dir(), reason=f"real traces not available: {KDIR} does not exist")

H100 = {"id": 0, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85018279936, "computeMajor": 9,
        "computeMinor": 0, "warpSize": 32, "numSms": 132}
A100 = {"id": 0, "name": "NVIDIA A100-SXM4-80GB", "totalGlobalMem": 85097971712, "computeMajor": 8,
        "computeMinor": 0, "warpSize": 32, "numSms": 108}
BF = "c10::BFloat16"
GEMM = "void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_bf16_64x64_64x6_tn_align8>(Params)"
ADD = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul>)"


def make_trace(path: Path, steps: list[list[tuple]], props: dict = H100) -> Path:
    """One ProfilerStep per entry of ``steps``; each step is a list of
    (op name, dims, kernel name, kernel µs) run one after the other."""
    ev: list[dict] = []
    t = 0
    ext = corr = 0
    for s, ops in enumerate(steps):
        t0 = t
        t += 1
        for name, dims, kname, kdur in ops:
            ext += 1
            corr += 1
            ev.append({"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": t, "dur": 10,
                       "args": {"External id": ext, "Input Dims": dims, "Input type": [BF] * len(dims)}})
            ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": t + 2,
                       "dur": 3, "args": {"correlation": corr, "External id": ext}})
            ev.append({"ph": "X", "cat": "kernel", "name": kname, "pid": 0, "tid": "stream 7", "ts": t + 8,
                       "dur": kdur, "args": {"device": 0, "stream": 7, "correlation": corr, "External id": ext}})
            t += 12 + kdur
        ev.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{s + 7}", "pid": 1, "tid": 1,
                   "ts": t0, "dur": t - t0 + 5, "args": {}})
        t += 10
    path.write_text(json.dumps({"deviceProperties": [props], "traceEvents": ev}))
    return path


MM = ("aten::mm", [[64, 128], [128, 256]], GEMM, 20)
MM2 = ("aten::mm", [[128, 128], [128, 256]], GEMM, 35)
ADDOP = ("aten::add", [[64, 256], [64, 256]], ADD, 3)


def test_normalize_kernel_name():
    assert normalize_kernel_name(GEMM) == "cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_bf16_64x64_64x6_tn_align8>"
    assert normalize_kernel_name(ADD) == ("at::native::vectorized_elementwise_kernel<4, "
                                          "at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul> >")
    assert normalize_kernel_name(ADD, "base") == "at::native::vectorized_elementwise_kernel"
    assert normalize_kernel_name("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)") == \
        normalize_kernel_name("ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)") == "ncclKernel_AllReduce_RING_LL_Sum_float"
    anon = "void at::native::(anonymous namespace)::indexSelectLargeIndex<float, long>(at::TensorInfo<float>, int)"
    assert normalize_kernel_name(anon) == "at::native::(anonymous namespace)::indexSelectLargeIndex<float, long>"
    assert normalize_kernel_name(anon, "base") == "at::native::(anonymous namespace)::indexSelectLargeIndex"
    assert normalize_kernel_name("k<0x7f3a12>(void*)") == normalize_kernel_name("k<0x55aa00>(void*)") == "k<0x?>"
    assert normalize_kernel_name("sm90_xmma_gemm_bf16bf16_bf16f32") == "sm90_xmma_gemm_bf16bf16_bf16f32"
    assert normalize_kernel_name("a  b\n c", "exact") == "a b c"
    with pytest.raises(ValueError):
        normalize_kernel_name("x", "fuzzy")


def test_call_paths(tmp_path):
    G = load_any(make_trace(tmp_path / "a.json", [[MM, ADDOP], [MM]]))
    c = TraceColumns.from_trace_graph(G)
    paths = {(c.name[i], p) for i, p in enumerate(call_paths(c)) if c.kind[i] == "cpu_op"}
    assert paths == {("aten::mm", "ProfilerStep#N"), ("aten::add", "ProfilerStep#N")}


def test_self_diff_is_empty(tmp_path):
    G = load_any(make_trace(tmp_path / "a.json", [[MM, ADDOP], [MM, ADDOP]]))
    d = diff_graphs(G, G)
    validate(d, "diff.schema.json")
    assert d["identical"] and d["kernels"]["rows"] == [] and d["ops"]["rows"] == []
    assert d["kernels"]["counts"] == {"changed": 0, "new": 0, "missing": 0, "same": 2}
    d = diff_graphs(G, G, include_same=True)
    assert {r["status"] for r in d["kernels"]["rows"]} == {"same"} and len(d["kernels"]["rows"]) == 2


def test_diff_exact(tmp_path):
    a = load_any(make_trace(tmp_path / "a.json", [[MM, ADDOP], [MM, ADDOP]]))
    # b: one more add per step, a new mm shape, the old mm shape gone, and a slower GEMM
    b = load_any(make_trace(tmp_path / "b.json", [[MM2, ADDOP, ADDOP], [MM2, ADDOP, ADDOP]], props=A100))
    d = diff_graphs(a, b)
    validate(d, "diff.schema.json")
    assert not d["identical"]
    k = {r["name"]: r for r in d["kernels"]["rows"]}
    g = k[normalize_kernel_name(GEMM)]
    assert (g["count_a"], g["count_b"], g["delta_count"]) == (2, 2, 0)
    assert (g["time_us_a"], g["time_us_b"], g["delta_time_us"]) == (40.0, 70.0, 30.0)
    assert g["flops_a"] == 2 * 2 * 64 * 128 * 256 and g["flops_b"] == 2 * 2 * 128 * 128 * 256
    assert g["delta_flops"] == g["flops_b"] - g["flops_a"] and g["status"] == "changed"
    ad = k[normalize_kernel_name(ADD)]
    assert (ad["count_a"], ad["count_b"], ad["delta_count"], ad["delta_time_us"]) == (2, 4, 2, 6.0)
    assert d["kernels"]["rows"][0]["name"] == normalize_kernel_name(GEMM)  # largest |Δ time| first
    ops = {(r["name"], r["shapes"]): r for r in d["ops"]["rows"]}
    assert ops[("aten::mm", "[[64,128],[128,256]]")]["status"] == "missing"
    new = ops[("aten::mm", "[[128,128],[128,256]]")]
    assert new["status"] == "new" and new["count_a"] == 0 and new["count_b"] == 2 and new["gpu_us_b"] == 70.0
    assert new["path"] == "ProfilerStep#N"
    add = ops[("aten::add", "[[64,256],[64,256]]")]
    assert (add["status"], add["delta_count"], add["delta_gpu_us"], add["delta_cpu_us"]) == ("changed", 2, 6.0, 20.0)
    assert d["ops"]["counts"] == {"changed": 1, "new": 1, "missing": 1, "same": 0}
    # steps and critical path are compared when both traces have steps
    st = d["steps"]
    assert st["a"]["count"] == st["b"]["count"] == 2 and st["delta_mean_us"] > 0
    assert set(d["critical_path"]["delta_pct"]) >= {"cpu", "gpu_compute"}
    # different devices: both peak tables reported
    assert d["a"]["devices"][0]["table_name"] == "H100 SXM" and d["b"]["devices"][0]["table_name"] == "A100 SXM4 80GB"
    assert d["a"]["kernels"] == 4 and d["b"]["kernels"] == 6


def test_diff_without_steps(tmp_path):
    a = load_any(make_trace(tmp_path / "a.json", [[MM]]))
    ev = json.loads((tmp_path / "a.json").read_text())
    ev["traceEvents"] = [e for e in ev["traceEvents"] if not e["name"].startswith("ProfilerStep")]
    (tmp_path / "b.json").write_text(json.dumps(ev))
    d = diff_graphs(a, load_any(tmp_path / "b.json"))
    validate(d, "diff.schema.json")
    assert d["steps"] is None and d["critical_path"] is None
    # the ops lost their enclosing step: same name and shapes, different call path
    st = {r["status"] for r in d["ops"]["rows"]}
    assert st == {"new", "missing"}


def test_diff_cli(tmp_path):
    a = make_trace(tmp_path / "a.json", [[MM, ADDOP]])
    b = make_trace(tmp_path / "b.json", [[MM, ADDOP, ADDOP]])
    r = CliRunner().invoke(main, ["diff", str(a), str(b), "--json"])
    assert r.exit_code == 0, r.output
    validate(json.loads(r.stdout), "diff.schema.json")
    r = CliRunner().invoke(main, ["diff", str(a), str(b)])
    assert r.exit_code == 0 and "Kernels by |Δ time|" in r.stdout and "CUDAFunctor_add" in r.stdout
    r = CliRunner().invoke(main, ["diff", str(a), str(a)])
    assert r.exit_code == 0 and "no differences" in r.stdout
    r = CliRunner().invoke(main, ["diff", str(a), str(tmp_path / "nope.json")])
    assert r.exit_code == 2 and "Traceback" not in r.output


# --------------------------------------------------------------------------- real traces
@needs_traces
@pytest.mark.real_traces
def test_control_trace_against_itself_is_empty():
    p = KDIR / "hta_trace_diff_control.json.gz"
    r = CliRunner().invoke(main, ["diff", str(p), str(p), "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    validate(d, "diff.schema.json")
    assert d["identical"]
    assert d["kernels"]["rows"] == [] and d["ops"]["rows"] == []
    assert d["kernels"]["counts"]["same"] > 100 and d["ops"]["counts"]["same"] > 1000
    assert d["steps"]["delta_mean_us"] == 0
    assert all(v == 0 for v in d["critical_path"]["delta_per_step_us"].values())


@needs_traces
@pytest.mark.real_traces
def test_dlrm_rank0_vs_rank1_kernel_counts():
    a = load_any(KDIR / "param_dlrm_8gpu_rank0.pt.trace.json.gz")
    b = load_any(KDIR / "param_dlrm_8gpu_rank1.pt.trace.json.gz")
    d = diff_graphs(a, b)
    validate(d, "diff.schema.json")
    assert not d["identical"]
    assert (d["a"]["kernels"], d["b"]["kernels"]) == (245, 310)
    rows = d["kernels"]["rows"]
    counted = [r for r in rows if r["delta_count"]]
    assert counted, "the differing kernel counts must be reported"
    assert sum(r["delta_count"] for r in rows if r["kind"] == "kernel") == 310 - 245
    sqrt = [r for r in rows if "sqrt_kernel_cuda" in r["name"]]
    assert sqrt and (sqrt[0]["count_a"], sqrt[0]["count_b"]) == (16, 32)
    assert d["steps"] is not None and d["critical_path"] is not None


@needs_traces
@pytest.mark.real_traces
def test_different_devices_and_old_format():
    """H100 vs MI300X, and a 2021 trace against a 2021-06 one: nothing crashes, both
    devices are reported, kernels with the same normalised name are matched."""
    a = load_any(KDIR / "tracelens_h100_bert_small.json.gz")
    b = load_any(KDIR / "tracelens_mi300_bert_small.json.gz")
    d = diff_graphs(a, b)
    validate(d, "diff.schema.json")
    assert {x["table_name"] for x in d["a"]["devices"]} == {"H100 SXM"}
    assert {x["table_name"] for x in d["b"]["devices"]} == {"MI300X"}
    # the same model: the op tables largely match even though every kernel differs
    assert d["ops"]["counts"]["changed"] + d["ops"]["counts"]["same"] > 50
    a = load_any(KDIR / "kineto_tbplugin_resnet50_w0_2021-01.pt.trace.json.gz")
    b = load_any(KDIR / "kineto_tbplugin_resnet50_w0_2021-06.pt.trace.json.gz")
    d = diff_graphs(a, b, with_critical_path=False)
    validate(d, "diff.schema.json")
    assert d["kernels"]["counts"]["changed"] + d["kernels"]["counts"]["same"] > 30


@needs_traces
def test_diff_on_columns_equals_diff_on_networkx() -> None:
    """Two graphs in column form diff exactly as their networkx graphs, without making a
    networkx view."""
    from opgraph.model.trace_graph import TraceGraph

    a, b = KDIR / "hta_trace_diff_control.json.gz", KDIR / "hta_ns_resolution_rank0.pt.trace.json.gz"
    Ta, Tb = load_any(a), load_any(b)
    assert isinstance(Ta, TraceGraph) and isinstance(Tb, TraceGraph)
    got = diff_graphs(Ta, Tb)
    assert Ta._nx is None and Tb._nx is None
    want = diff_graphs(load_any(a), load_any(b))
    assert json.dumps(got, sort_keys=True, default=str) == json.dumps(want, sort_keys=True, default=str)
