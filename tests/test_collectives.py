"""``opgraph collectives`` / ``opgraph.collectives``: message size, algbw and busbw exact on
a hand-written trace (records on the kernel, on the launching op, and none), invariants on
every real trace."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pandas as pd
import pytest
from click.testing import CliRunner

import opgraph
from opgraph.analysis.collectives import BUSBW_FACTOR, DTYPE_BYTES
from opgraph.cli import main

ROOT = Path(__file__).resolve().parent.parent
T0 = 1_700_000_000_000_000


def _trace(tmp_path: Path) -> Path:
    """An all-reduce of 1,000,000 floats over 4 ranks in 2,000 µs (record on the kernel); an
    all-gather of 262,144 bf16 elements out over 8 ranks in 100 µs (record on the launching
    record_param_comms op); a NCCL kernel with no record."""
    ev = [
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": T0 + 10, "dur": 5,
         "args": {"correlation": 1}},
        {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "pid": 0, "tid": 20,
         "ts": T0 + 100, "dur": 2000, "args": {"device": 0, "stream": 20, "correlation": 1,
                                               "Collective name": "allreduce", "In msg nelems": 1_000_000,
                                               "Out msg nelems": 1_000_000, "Group size": 4, "dtype": "Float"}},
        {"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 1, "tid": 1, "ts": T0 + 3000, "dur": 50,
         "args": {"Collective name": "_allgather_base", "In msg nelems": 32_768, "Out msg nelems": 262_144,
                  "Group size": 8, "dtype": "BFloat16"}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": T0 + 3010, "dur": 5,
         "args": {"correlation": 2}},
        {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllGather_RING_LL", "pid": 0, "tid": 20,
         "ts": T0 + 3100, "dur": 100, "args": {"device": 0, "stream": 20, "correlation": 2}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": T0 + 4000, "dur": 5,
         "args": {"correlation": 3}},
        {"ph": "X", "cat": "kernel", "name": "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t", "pid": 0, "tid": 20,
         "ts": T0 + 4100, "dur": 30, "args": {"device": 0, "stream": 20, "correlation": 3}},
    ]
    p = tmp_path / "coll.json"
    p.write_text(json.dumps({"traceEvents": ev}))
    return p


def test_exact_answers(tmp_path: Path) -> None:
    res = opgraph.collectives(opgraph.load(_trace(tmp_path)))
    k = res.kernels
    assert k["source"].tolist() == ["kernel", "op", "none"]
    ar, ag, none = k.iloc[0], k.iloc[1], k.iloc[2]
    assert ar["collective"] == "all_reduce" and ar["message_bytes"] == 4_000_000
    assert ar["algbw_gbps"] == pytest.approx(4_000_000 / 2_000_000)          # bytes per ns = GB/s
    assert ar["busbw_gbps"] == pytest.approx(2.0 * 2 * 3 / 4)
    assert ag["collective"] == "all_gather" and ag["message_bytes"] == 262_144 * 2
    assert ag["busbw_gbps"] == pytest.approx(524_288 / 100_000 * 7 / 8)
    assert pd.isna(none["message_bytes"]) and pd.isna(none["collective"])
    s = res.to_frame()
    assert s["collective"].tolist() == ["all_gather", "all_reduce", "(no collective record)"]
    assert s["time_us"].sum() == pytest.approx(2000 + 100 + 30)


def test_cli_schema(tmp_path: Path) -> None:
    r = CliRunner().invoke(main, ["collectives", str(_trace(tmp_path)), "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    jsonschema.validate(doc, json.loads((ROOT / "schemas" / "collectives.schema.json").read_text()))
    assert [x["source"] for x in doc["kernels"]] == ["kernel", "op", "none"]


def test_tables_are_complete() -> None:
    assert set(BUSBW_FACTOR) >= {"all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast"}
    assert DTYPE_BYTES["bfloat16"] == 2 and DTYPE_BYTES["float"] == 4


@pytest.mark.real_traces
def test_real_traces(kineto_graph) -> None:
    res = opgraph.collectives(kineto_graph)
    k = res.kernels
    if not len(k):
        pytest.skip("no communication kernels")
    s = res.to_frame()
    assert int(s["count"].sum()) == len(k)
    assert s["time_us"].sum() == pytest.approx(k["dur_us"].sum())
    known = k[k["message_bytes"].notna()]
    assert (known["algbw_gbps"] > 0).all()
    assert ((known["busbw_gbps"] / known["algbw_gbps"]) <= 2.0 + 1e-9).all()
    assert set(k["source"]) <= {"kernel", "op", "none"}
