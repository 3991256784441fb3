"""``opgraph overlap`` / ``opgraph.comm_overlap``: compute, communication and memory time,
their overlap and the exposed communication, exact on a hand-written trace, invariant on
every real trace, and equal to HTA's comp_comm_overlap_pctg on the 8 DLRM ranks."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner

import opgraph
from opgraph.cli import main
from conftest import KINETO_DIR

ROOT = Path(__file__).resolve().parent.parent
T0 = 1_700_000_000_000_000  # µs


def _trace(tmp_path: Path) -> Path:
    """Two steps on one GPU. Step 1 (launches at +10..+40): compute [100, 300) on stream 7,
    all-reduce [200, 500) on stream 20, a memcpy [450, 520) on stream 7. Step 2 (launches at
    +1000..): compute [1100, 1200), all-reduce [1300, 1400): no overlap; a memset
    [1150, 1160) under the compute."""
    ev = [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": T0, "dur": 900},
          {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#2", "pid": 1, "tid": 1, "ts": T0 + 1000,
           "dur": 900}]
    acts = [  # (launch at, cat, name, stream, start, dur)
        (10, "kernel", "ampere_sgemm_128x64_nn", 7, 100, 200),
        (20, "kernel", "ncclKernel_AllReduce_RING_LL_Sum_float", 20, 200, 300),
        (30, "gpu_memcpy", "Memcpy DtoH (Device -> Pinned)", 7, 450, 70),
        (1010, "kernel", "ampere_sgemm_128x64_nn", 7, 1100, 100),
        (1020, "gpu_memset", "Memset (Device)", 7, 1150, 10),
        (1030, "kernel", "ncclKernel_AllReduce_RING_LL_Sum_float", 20, 1300, 100),
    ]
    for i, (at, cat, name, stream, start, dur) in enumerate(acts):
        corr = 100 + i
        api = {"kernel": "cudaLaunchKernel", "gpu_memcpy": "cudaMemcpyAsync", "gpu_memset": "cudaMemsetAsync"}[cat]
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": api, "pid": 1, "tid": 1, "ts": T0 + at, "dur": 5,
                   "args": {"correlation": corr}})
        ev.append({"ph": "X", "cat": cat, "name": name, "pid": 0, "tid": stream, "ts": T0 + start, "dur": dur,
                   "args": {"device": 0, "stream": stream, "correlation": corr}})
    p = tmp_path / "overlap.json"
    p.write_text(json.dumps({"traceEvents": ev}))
    return p


#: The answers by construction (µs).
WANT = {
    "ProfilerStep#1": dict(span=420, busy=420, idle=0, compute=200, comm=300, memory=70, overlap=100,
                           exposed_comm=200, exposed_memory=20),
    "ProfilerStep#2": dict(span=300, busy=200, idle=100, compute=100, comm=100, memory=10, overlap=0,
                           exposed_comm=100, exposed_memory=0),
    "all": dict(span=1300, busy=620, idle=680, compute=300, comm=400, memory=80, overlap=100, exposed_comm=300,
                exposed_memory=20),
}


def test_exact_answers(tmp_path: Path) -> None:
    df = opgraph.comm_overlap(opgraph.load(_trace(tmp_path))).to_frame()
    assert df["window"].tolist() == list(WANT)
    for row in df.to_dict("records"):
        for k, v in WANT[row["window"]].items():
            assert row[f"{k}_us"] == v, (row["window"], k)
    step1 = df.iloc[0]
    assert step1["comm_overlap_pct"] == pytest.approx(100 * 100 / 300)


def test_cli_json_schema_and_tables(tmp_path: Path) -> None:
    p = _trace(tmp_path)
    r = CliRunner().invoke(main, ["overlap", str(p), "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    jsonschema.validate(doc, json.loads((ROOT / "schemas" / "overlap.schema.json").read_text()))
    assert [x["exposed_comm_us"] for x in doc["rows"]] == [200, 100, 300]
    r = CliRunner().invoke(main, ["overlap", str(p)])
    assert r.exit_code == 0 and "exposed comm" in r.output
    r = CliRunner().invoke(main, ["overlap", str(p), "--window", "nothing-like-this"])
    assert r.exit_code == 2


@pytest.mark.real_traces
def test_invariants_on_real_traces(kineto_graph) -> None:
    df = opgraph.comm_overlap(kineto_graph).to_frame()
    if not len(df):
        pytest.skip("no device activities")
    parts = df["compute_us"] + df["exposed_comm_us"] + df["exposed_memory_us"] + df["idle_us"]
    assert (parts - df["span_us"]).abs().max() < 1e-6
    assert (df["overlap_us"] <= df[["compute_us", "comm_us"]].min(axis=1) + 1e-9).all()
    assert (df["exposed_comm_us"] + df["overlap_us"] - df["comm_us"]).abs().max() < 1e-6
    assert (df["busy_us"] <= df["span_us"]).all() and (df[[c for c in df if c.endswith("_us")]] >= 0).all().all()


@pytest.mark.real_traces
def test_dlrm_equals_hta() -> None:
    """HTA 0.5.0's comp_comm_overlap_pctg on the 8 DLRM ranks (docs/peers/hta/comm_comp_overlap.json)."""
    hta = json.loads((ROOT / "docs" / "peers" / "hta" / "comm_comp_overlap.json").read_text())
    want = hta["param_dlrm_8gpu (8 ranks, one folder)"]
    for r in range(8):
        p = KINETO_DIR / f"param_dlrm_8gpu_rank{r}.pt.trace.json.gz"
        if not p.exists():
            pytest.skip("trace absent")
        df = opgraph.comm_overlap(opgraph.load(p)).to_frame()
        whole = df[df["window"] == "all"].iloc[0]
        assert round(whole["comm_overlap_pct"], 2) == want[str(r)]
