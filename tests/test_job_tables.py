"""Multi-rank versions of the table analyses (opgraph/analysis/job_tables.py):
``opgraph overlap JOB`` per rank and ``opgraph collectives JOB`` across ranks, exact on the
synthesized job whose answers are known by construction, and on the 8 DLRM ranks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import KINETO_DIR, _run_cli
from opgraph.analysis.collectives import BUSBW_FACTOR
from opgraph.graph.io import load_any
from opgraph.schemas_util import validation_error
from opgraph.testing.synth_multirank import COLLECTIVES, answers_path

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "fixtures" / "multirank" / "seq"
DLRM = sorted(KINETO_DIR.glob("param_dlrm_8gpu_rank*.pt.trace.json.gz")) if KINETO_DIR.is_dir() else []


def _run(*args: object):
    r = _run_cli([str(a) for a in args])
    assert r.exception is None, r.exception
    assert r.exit_code == 0, r.stderr
    return r


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("job") / "job.gpickle"
    _run("build", FIX, "-o", out, "--workers", "1")
    return out


def test_collectives_across_ranks_exact(job: Path) -> None:
    a = json.loads(answers_path(FIX).read_text())
    doc = json.loads(_run("collectives", job, "--json").stdout)
    assert validation_error(doc, "job-collectives.schema.json") is None
    rows = doc["collectives"]
    assert len(rows) == a["num_collectives"]
    ws = a["world_size"]
    by_order = sorted(a["collectives"], key=lambda c: c["order"])
    for row, c in zip(rows, by_order):
        arr = [c["arrival_ns"][str(r)] for r in range(ws)]
        end = [c["end_ns"][str(r)] for r in range(ws)]
        assert row["collective"] == c["coll"] and row["ranks"] == ws == row["group_size"]
        assert row["skew_us"] * 1e3 == pytest.approx(c["skew_ns"], abs=1e-6)
        comm = max(end) - max(arr)
        assert row["comm_us"] * 1e3 == pytest.approx(comm, abs=1e-6)
        assert row["last_rank"] == c["last_rank"]
        nbytes = c["nelems"] * 4  # dtype Float
        assert row["message_bytes"] == nbytes and not row["size_mismatch"]
        assert row["algbw_gbps"] == pytest.approx(nbytes / comm)
        assert row["busbw_gbps"] == pytest.approx(nbytes / comm * BUSBW_FACTOR[c["coll"]](ws))
        waits = {x["rank"]: x["wait_us"] for x in doc["ranks"] if x["coll_id"] == row["coll_id"]}
        assert waits == {r: pytest.approx((max(arr) - arr[r]) / 1e3) for r in range(ws)}
    assert {c[2] for c in COLLECTIVES} >= {r["collective"] for r in rows}


def test_overlap_per_rank(job: Path) -> None:
    doc = json.loads(_run("overlap", job, "--json").stdout)
    assert validation_error(doc, "overlap.schema.json") is None
    G = load_any(str(job))
    ranks = [int(r["rank"]) for r in G.graph["job"]["ranks"] if r["full"]]
    assert sorted({r["rank"] for r in doc["rows"]}) == ranks
    for r in ranks:
        one = json.loads(_run("overlap", job, "--json", "--rank", r).stdout)["rows"]
        mine = [{k: v for k, v in x.items() if k != "rank"} for x in doc["rows"] if x["rank"] == r]
        assert mine == one
    text = _run("overlap", job).stdout
    assert "rank" in text


@pytest.mark.skipif(len(DLRM) != 8, reason="DLRM ranks not available")
def test_dlrm_job(tmp_path: Path) -> None:
    if len(DLRM) != 8:
        pytest.skip("the 8-rank DLRM traces are not available")
    out = tmp_path / "dlrm.gpickle"
    _run("build", *DLRM, "-o", out, "--workers", "1")
    doc = json.loads(_run("collectives", out, "--json").stdout)
    assert validation_error(doc, "job-collectives.schema.json") is None
    assert len(doc["collectives"]) == 8 and all(c["ranks"] == 8 for c in doc["collectives"])
    # the trace records no message sizes: no bandwidth, never a guess
    assert all(c["message_bytes"] is None and c["busbw_gbps"] is None for c in doc["collectives"])
    for c in doc["collectives"]:
        assert c["total_us"] == pytest.approx(c["skew_us"] + c["comm_us"])
    ov = json.loads(_run("overlap", out, "--json").stdout)
    assert sorted({r["rank"] for r in ov["rows"]}) == list(range(8))
    # the same collective table from the rank traces, rank by rank (no job graph)
    d = tmp_path / "ranks"
    d.mkdir()
    for p in DLRM:
        (d / p.name).symlink_to(p)
    assert json.loads(_run("collectives", d, "--json", "--workers", "2").stdout) == doc


def test_collectives_from_rank_traces_equal_the_job(job: Path, tmp_path: Path) -> None:
    """``collectives DIR``: each rank read in its own task, the same tables as on the saved
    job (sizes, skews, bandwidths); ``--rank`` and a lone file with ``--workers`` are one
    line."""
    from conftest import assert_one_line_error

    want = json.loads(_run("collectives", job, "--json").stdout)
    got = json.loads(_run("collectives", FIX, "--json", "--workers", "2").stdout)
    assert validation_error(got, "job-collectives.schema.json") is None
    assert got == want and any(c["busbw_gbps"] for c in got["collectives"])
    _run("collectives", FIX, "--csv", tmp_path / "t", "--workers", "1")
    assert (tmp_path / "t" / "seq.collectives.csv").exists() and (tmp_path / "t" / "seq.ranks.csv").exists()
    assert_one_line_error(_run_cli(["collectives", str(FIX), "--rank", "1"]), FIX, "--rank 1")
    one = FIX / "rank0.json"
    assert_one_line_error(_run_cli(["collectives", str(one), "--workers", "2"]), one, "--workers")
