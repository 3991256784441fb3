"""``opgraph shapes`` / ``opgraph.analysis.shapes``: exact answers on the ``gemm_shapes``
synthesized trace, invariants against the roofline kernels table on every real trace."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import numpy as np
import pandas as pd
import pytest

import opgraph
from opgraph.analysis.roofline import roofline
from opgraph.analysis.shapes import FAMILIES, Shapes, shape_columns, shapes
from opgraph.testing.synth import synthesize, write_scenario

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = json.loads((ROOT / "schemas" / "shapes.schema.json").read_text())
STEPS = 3

# gemm_shapes, per step (opgraph/testing/synth_scenarios.py _SHAPED_OPS), on an A100 SXM4 80GB
# (dense bf16/fp16 312, fp32 19.5 TFLOP/s): (op, problem, calls, kernels per call, µs per call, FLOPs per call)
MM_BF16 = 2 * 1024 * 4096 * 4096
MM_FP16 = 2 * 100 * 1000 * 30
ADDMM = 2 * 64 * 1024 * 512
FLASH = 2 * 2 * 16 * 1024 * 1024 * (64 + 64) // 2     # causal: half
CONV = 2 * 32 * 56 * 56 * (64 * 64 * 3 * 3)            # stride 1, pad 1: output 56x56


@pytest.fixture(scope="module")
def synth_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_scenario(synthesize("gemm_shapes", steps=STEPS), tmp_path_factory.mktemp("shapes"))


@pytest.fixture(scope="module")
def synth(synth_path: Path) -> Shapes:
    return shapes(opgraph.load(synth_path))


def test_exact_gemm(synth: Shapes) -> None:
    g = synth.gemm
    assert list(g.columns) == shape_columns("gemm")
    assert g["name"].tolist() == ["aten::mm", "aten::addmm", "aten::mm"]       # by total time
    assert g[["M", "N", "K"]].astype(int).values.tolist() == [[1024, 4096, 4096], [64, 1024, 512], [100, 30, 1000]]
    assert g["B"].astype(int).tolist() == [1, 1, 1]
    assert g["dtype"].tolist() == ["bf16", "fp32", "fp16"]
    assert g["count"].tolist() == [STEPS, STEPS, 2 * STEPS]
    assert g["kernels"].tolist() == [STEPS, 2 * STEPS, 2 * STEPS]                # addmm: sgemm + split-K reduce
    assert g["total_us"].tolist() == [200.0 * STEPS, 35.0 * STEPS, 20.0 * STEPS]
    assert g["mean_us"].tolist() == [200.0, 35.0, 10.0]
    assert g["flops_per_call"].astype(int).tolist() == [MM_BF16, ADDMM, MM_FP16]
    assert g["achieved_tflops"].tolist() == pytest.approx([MM_BF16 / 200e-6 / 1e12, ADDMM / 35e-6 / 1e12,
                                                           MM_FP16 / 10e-6 / 1e12])
    assert g["peak_tflops"].tolist() == pytest.approx([312, 19.5, 312])
    assert g["pct_peak_flops"].tolist() == pytest.approx([100 * MM_BF16 / 200e-6 / 312e12,
                                                          100 * ADDMM / 35e-6 / 19.5e12, 100 * MM_FP16 / 10e-6 / 312e12])
    assert g["aligned"].tolist() == [True, pd.NA, False]                        # fp32: not applicable
    # bytes: perfect reuse, bf16 A + B + C
    assert int(g["bytes_per_call"].iloc[0]) == 2 * (1024 * 4096 + 4096 * 4096 + 1024 * 4096)
    assert g["achieved_tbps"].iloc[0] == pytest.approx(g["bytes_per_call"].iloc[0] / 200e-6 / 1e12)
    assert g["flop_per_byte"].iloc[0] == pytest.approx(MM_BF16 / g["bytes_per_call"].iloc[0])
    assert g["bound"].tolist() == ["compute", "compute", "memory"]              # A100 ridge: 312 / 2.039 = 153
    assert g["family_time_pct"].tolist() == pytest.approx([100 * 600 / 765, 100 * 105 / 765, 100 * 60 / 765])


def test_exact_attention_and_conv(synth: Shapes) -> None:
    a = synth.attention.iloc[0]
    assert len(synth.attention) == 1
    assert (a["name"], a["B"], a["H"], a["Sq"], a["Sk"], a["D"], a["Dv"], bool(a["causal"])) == (
        "aten::_scaled_dot_product_flash_attention", 2, 16, 1024, 1024, 64, 64, True)
    assert (a["count"], a["total_us"], int(a["flops_per_call"])) == (STEPS, 50.0 * STEPS, FLASH)
    assert a["achieved_tflops"] == pytest.approx(FLASH / 50e-6 / 1e12)
    assert a["pct_peak_flops"] == pytest.approx(100 * FLASH / 50e-6 / 312e12)
    c = synth.conv.iloc[0]
    assert len(synth.conv) == 1
    assert [c[k] for k in ("N", "C", "H", "W", "K", "R", "S", "groups")] == [32, 64, 56, 56, 64, 3, 3, 1]
    assert (c["stride"], c["padding"], c["dilation"], bool(c["transposed"])) == ("1x1", "1x1", "1x1", False)
    assert c["D"] is pd.NA and c["T"] is pd.NA
    assert (c["count"], c["total_us"], int(c["flops_per_call"])) == (STEPS, 500.0 * STEPS, CONV)
    assert c["achieved_tflops"] == pytest.approx(CONV / 500e-6 / 1e12)
    assert c["pct_peak_flops"] == pytest.approx(100 * CONV / 500e-6 / 19.5e12)
    assert c["family_time_pct"] == pytest.approx(100.0)
    s = synth.summary.set_index("family")
    assert s["calls"].to_dict() == {"gemm": 4 * STEPS, "attention": STEPS, "conv": STEPS}
    assert s["gpu_time_us"].to_dict() == {"gemm": 765.0, "attention": 150.0, "conv": 1500.0}


def test_to_dict_schema(synth: Shapes) -> None:
    doc = synth.to_dict()
    jsonschema.validate(doc, SCHEMA)
    assert [r["M"] for r in doc["families"]["gemm"]["rows"]] == [1024, 64, 100]
    assert doc["families"]["gemm"]["rows"][1]["aligned"] is None
    top = synth.to_dict(top=1, families=("gemm",))
    jsonschema.validate(top, SCHEMA)
    assert list(top["families"]) == ["gemm"] and len(top["families"]["gemm"]["rows"]) == 1


def test_problem_sizes_from_rules() -> None:
    """The problem sizes are those the FLOP rules read (``OpCost.problem``)."""
    from opgraph.analysis.flops import op_cost

    mm = op_cost("aten::bmm", [[8, 128, 64], [8, 64, 32]], ["c10::Half"] * 2, None)
    assert mm is not None and dict(mm.problem) == {"B": 8, "M": 128, "N": 32, "K": 64}
    lin = op_cost("aten::linear", [[4, 10, 512], [256, 512], [256]], ["float"] * 3, None)
    assert lin is not None and dict(lin.problem) == {"B": 1, "M": 40, "N": 256, "K": 512}
    conv = op_cost("aten::convolution", [[8, 3, 224, 224], [64, 3, 7, 7], [64], [], [], [], [], [], []],
                   ["float", "float", "float", "ScalarList", "ScalarList", "ScalarList", "Bool", "ScalarList", "Int"],
                   ["", "", "", "[2, 2]", "[3, 3]", "[1, 1]", "False", "[0, 0]", "1"])
    assert conv is not None
    p = conv.problem
    assert (p["N"], p["C"], p["H"], p["W"], p["K"], p["R"], p["S"], p["stride"], p["padding"], p["groups"]) == (
        8, 3, 224, 224, 64, 7, 7, (2, 2), (3, 3), 1)
    bwd = op_cost("aten::convolution_backward",
                  [[8, 64, 112, 112], [8, 3, 224, 224], [64, 3, 7, 7], [], [], [], [], [], [], [], []],
                  ["float"] * 3 + ["SymIntList", "ScalarList", "ScalarList", "ScalarList", "Bool", "ScalarList", "Int",
                                   "BoolList"],
                  ["", "", "", "[64]", "[2, 2]", "[3, 3]", "[1, 1]", "False", "[0, 0]", "1", "[False, True, True]"])
    assert bwd is not None and (bwd.problem["C"], bwd.problem["H"], bwd.problem["K"], bwd.problem["stride"]) == (
        3, 224, 64, (2, 2))
    # problem is not part of equality: existing comparisons of costs are unchanged
    assert mm == type(mm)(mm.flops, mm.bytes, mm.dtype, mm.model)


# --------------------------------------------------------------------------- CLI
def test_cli_json_schema(cli, synth_path: Path) -> None:
    r = cli(["shapes", synth_path, "--json"])
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    jsonschema.validate(doc, SCHEMA)
    assert set(doc["families"]) == set(FAMILIES)
    assert doc["families"]["conv"]["rows"][0]["flops_per_call"] == CONV
    r = cli(["shapes", synth_path, "--json", "--family", "attention", "--top", "1"])
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    jsonschema.validate(doc, SCHEMA)
    assert list(doc["families"]) == ["attention"]


def test_cli_csv(cli, synth_path: Path, tmp_path: Path) -> None:
    r = cli(["shapes", synth_path, "--csv", tmp_path / "out", "--top", "2"])
    assert r.exit_code == 0, r.stderr
    files = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert len(files) == 3 and all(f.endswith(".csv") for f in files), files
    g = pd.read_csv(next((tmp_path / "out").glob("*gemm*.csv")), comment="#")
    assert len(g) == 2 and g["flops_per_call"].tolist() == [MM_BF16, ADDMM]


def test_cli_terminal(cli, synth_path: Path) -> None:
    r = cli(["shapes", synth_path, "--family", "gemm"])
    assert r.exit_code == 0, r.stderr
    assert "GEMM shapes: 12 calls, 3 shapes" in r.stdout and "aten::addmm" in r.stdout
    assert "attention" not in r.stdout


def test_cli_no_gemm(cli, tmp_path: Path) -> None:
    path = opgraph.example_trace("sync_every_op", tmp_path)
    for args, line in ((["--family", "gemm"], "no GEMM ops with recorded shapes in this trace"),
                       ([], "no GEMM, attention or convolution ops with recorded shapes in this trace")):
        r = cli(["shapes", path, *args])
        assert r.exit_code == 0, r.stderr
        assert r.stdout.splitlines() == [line]
    r = cli(["shapes", path, "--json"])
    assert r.exit_code == 0
    doc = json.loads(r.stdout)
    jsonschema.validate(doc, SCHEMA)
    assert all(not f["rows"] and f["calls"] == 0 for f in doc["families"].values())


def test_unshaped(tmp_path: Path) -> None:
    """gpu_bound: 6 ``aten::mm`` per step with no recorded shapes, 500 µs kernels."""
    s = shapes(opgraph.load(opgraph.example_trace("gpu_bound", tmp_path)))
    assert not len(s.gemm)
    assert s.summary.set_index("family")["unshaped_us"].to_dict() == {"gemm": 3 * 6 * 500.0, "attention": 0.0,
                                                                      "conv": 0.0}


def test_cli_bad_dtype(cli, synth_path: Path, one_line_error) -> None:
    one_line_error(cli(["shapes", synth_path, "--dtype", "fp7"]), synth_path, "dtype")


# --------------------------------------------------------------------------- real traces
@pytest.mark.real_traces
def test_real_traces(kineto_graph) -> None:
    res = roofline(kineto_graph)
    k = res.kernels
    s = shapes(res)
    if not int(s.summary["calls"].sum()):
        pytest.skip("no GEMM, attention or convolution ops with shapes")
    jsonschema.validate(s.to_dict(), SCHEMA)
    for f in FAMILIES:
        t = getattr(s, f)
        kf = k[(k["family"] == f).to_numpy() & (k["op_eid"] >= 0).to_numpy()]
        # the rows' time is the family's kernel time in the roofline table, to the ns
        assert int(np.round(t["total_us"].to_numpy() * 1e3).astype(np.int64).sum()) == int(kf["dur_ns"].sum())
        # every call counted once; every activity once
        assert int(t["count"].sum()) == kf["op_eid"].nunique()
        assert int(t["kernels"].sum()) == len(kf)
        if not len(t):
            continue
        assert list(t.columns) == shape_columns(f)
        assert (np.diff(t["total_us"].to_numpy()) <= 0).all()                   # by total time
        pos = t["total_us"].to_numpy() > 0
        fl = t["flops_per_call"].to_numpy(dtype=float, na_value=np.nan)
        want = fl * t["count"].to_numpy() / (t["total_us"].to_numpy() * 1e-6) / 1e12
        got = t["achieved_tflops"].to_numpy(dtype=float)
        np.testing.assert_allclose(got[pos], want[pos], rtol=1e-9)
        assert t["family_time_pct"].sum() == pytest.approx(100.0) or kf["dur_ns"].sum() == 0
        pct = t["pct_peak_flops"].to_numpy(dtype=float)
        pk = t["peak_tflops"].to_numpy(dtype=float)
        ok = np.isfinite(pct) & np.isfinite(pk) & pos
        np.testing.assert_allclose(pct[ok], 100 * got[ok] / pk[ok], rtol=1e-6)
        if f == "gemm":
            al = t["aligned"].to_numpy(dtype=object)
            two = t["dtype"].isin(["fp16", "bf16"]).to_numpy() & t[["M", "N", "K"]].notna().all(axis=1).to_numpy()
            mnk = t[["M", "N", "K"]].fillna(1).to_numpy(dtype=np.int64)
            assert [bool(a) for a in al[two]] == (mnk[two] % 8 == 0).all(axis=1).tolist()
