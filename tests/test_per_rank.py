"""Table commands on a job's rank traces (``opgraph idle DIR``, ``queue``, ``categories``,
``kernels``, ``launch-stats``, ``memory-bw``): each rank is analysed in its own pool process
or Dask task, and each rank's result equals the command run on that rank's file alone."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from conftest import KINETO_DIR, ROOT, _run_cli, assert_one_line_error
from opgraph.catalog.entries import ANALYSES as CATALOG
from opgraph.schemas_util import validation_error

SEQ = ROOT / "fixtures" / "multirank" / "seq"
#: Every catalog analysis that runs rank by rank on a job's rank traces, and its schema.
SCHEMAS = {a.command: a.schema for a in CATALOG if a.per_rank}


def _strip(d: dict) -> dict:
    d = dict(d)
    d.pop("source", None)
    d.pop("input", None)
    return d


@pytest.mark.parametrize("cmd", sorted(SCHEMAS))
def test_each_rank_equals_its_file_alone(cmd: str) -> None:
    r = _run_cli([cmd, str(SEQ), "--json", "--workers", "2"])
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    assert validation_error(doc, "per-rank.schema.json") is None
    assert [e["rank"] for e in doc["ranks"]] == [0, 1, 2, 3]
    for e in doc["ranks"]:
        assert validation_error(e["result"], SCHEMAS[cmd]) is None
        alone = _run_cli([cmd, e["file"], "--json"])
        assert alone.exit_code == 0, alone.stderr
        assert _strip(e["result"]) == _strip(json.loads(alone.stdout)), (cmd, e["rank"])


def test_table_files_carry_the_rank(tmp_path: Path) -> None:
    out, one = tmp_path / "t", tmp_path / "one"
    r = _run_cli(["queue", str(SEQ), "--csv", str(out), "--workers", "1"])
    assert r.exit_code == 0, r.stderr
    df = pd.read_csv(out / "seq.queues.csv")
    assert list(df.columns)[0] == "rank" and sorted(df["rank"].unique()) == [0, 1, 2, 3]
    r = _run_cli(["queue", str(SEQ / "rank2.json"), "--csv", str(one)])
    assert r.exit_code == 0, r.stderr
    alone = pd.read_csv(one / "rank2.queues.csv")
    pd.testing.assert_frame_equal(df[df["rank"] == 2].drop(columns="rank").reset_index(drop=True), alone)


def test_overlap_window_on_rank_traces() -> None:
    """``overlap DIR --window``: each rank's windows; a regex no rank has is one line."""
    r = _run_cli(["overlap", str(SEQ), "--window", "all", "--json", "--workers", "1"])
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    assert all(e["result"]["window_mode"] == "all" for e in doc["ranks"]), doc["ranks"][0]["result"]["window_mode"]
    r = _run_cli(["overlap", str(SEQ), "--window", "no-such-range", "--workers", "1"])
    assert_one_line_error(r, SEQ, "--window", "no-such-range")


def test_rank_option_with_rank_traces_is_one_line_error() -> None:
    r = _run_cli(["idle", str(SEQ), "--rank", "1"])
    assert_one_line_error(r, SEQ, "--rank 1", "every rank is analysed")


def test_terminal_shows_each_rank() -> None:
    r = _run_cli(["categories", str(SEQ), "--workers", "2"])
    assert r.exit_code == 0, r.stderr
    for k in range(4):
        assert f"rank {k}  " in r.stdout and f"rank{k}.json" in r.stdout


distributed = pytest.importorskip("distributed")


def test_dask_cluster_equals_the_pool() -> None:
    """``--scheduler tcp://…`` runs the same per-rank analyses on a Dask cluster (here a
    LocalCluster on loopback with 2 worker processes): the same document as the pool."""
    from distributed import LocalCluster

    dlrm = sorted(KINETO_DIR.glob("param_dlrm_8gpu_rank[0-3].pt.trace.json.gz")) if KINETO_DIR.is_dir() else []
    inputs = str(KINETO_DIR / "param_dlrm_8gpu_rank[0-3].pt.trace.json.gz") if len(dlrm) == 4 else str(SEQ)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None) as c:
        d = _run_cli(["idle", inputs, "--json", "--scheduler", c.scheduler_address])
    p = _run_cli(["idle", inputs, "--json", "--workers", "2"])
    assert d.exit_code == 0 and p.exit_code == 0, (d.stderr, p.stderr)
    dd, pp = json.loads(d.stdout), json.loads(p.stdout)
    assert len(dd["ranks"]) == 4 and dd == pp


def _job_inputs() -> list[str]:
    """The synthesized job fixtures (sequential and not) and, when present, the 8-rank DLRM set."""
    out = [str(SEQ), str(ROOT / "fixtures" / "multirank" / "noseq")]
    if KINETO_DIR.is_dir() and len(list(KINETO_DIR.glob("param_dlrm_8gpu_rank*.pt.trace.json.gz"))) == 8:
        out.append(str(KINETO_DIR / "param_dlrm_8gpu_rank*.pt.trace.json.gz"))
    return [p for p in out if any(ch in p for ch in "*?[") or Path(p).is_dir()]


@pytest.mark.parametrize("inputs", _job_inputs(), ids=lambda p: Path(p.replace("*", "")).parent.name + "/" + Path(p).name)
def test_stragglers_from_rank_traces_equal_the_saved_job(tmp_path: Path, inputs: str) -> None:
    """``stragglers DIR`` reads each rank in a worker and keeps none in full (only
    collective kernels and steps travel): the same document as on the job graph built with
    every rank kept, and as on a Dask LocalCluster."""
    from distributed import LocalCluster

    job = tmp_path / "job.gpickle"
    b = _run_cli(["build", inputs, "--keep", "all", "-o", str(job)])
    assert b.exit_code == 0, b.stderr
    saved = _run_cli(["stragglers", str(job), "--json"])
    pool = _run_cli(["stragglers", inputs, "--json", "--workers", "2"])
    assert saved.exit_code == 0 and pool.exit_code == 0, (saved.stderr, pool.stderr)
    def same(doc: dict, full: bool) -> dict:
        # every rank's row says whether the job kept it in full: all of them, or none
        assert [r["full"] for r in doc["by_rank"]] == [full] * len(doc["by_rank"])
        return {**doc, "by_rank": [{k: v for k, v in r.items() if k != "full"} for r in doc["by_rank"]]}

    want = same(json.loads(saved.stdout), True)
    got = json.loads(pool.stdout)
    assert validation_error(got, "stragglers.schema.json") is None
    assert same(got, False) == want and want["by_rank"]
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None) as c:
        d = _run_cli(["stragglers", inputs, "--json", "--scheduler", c.scheduler_address])
    assert d.exit_code == 0, d.stderr
    assert same(json.loads(d.stdout), False) == want


def test_overlap_rank_traces_equal_the_job_table(tmp_path: Path) -> None:
    """``overlap DIR`` writes the rows ``overlap job.gpickle`` writes (one per rank, window
    and device, ``rank`` first): the exposed communication per rank, without the job graph."""
    job = tmp_path / "job.gpickle"
    assert _run_cli(["build", str(SEQ), "-o", str(job)]).exit_code == 0
    r = _run_cli(["overlap", str(job), "--csv", str(tmp_path / "a")])
    assert r.exit_code == 0, r.stderr
    r = _run_cli(["overlap", str(SEQ), "--csv", str(tmp_path / "b"), "--workers", "2"])
    assert r.exit_code == 0, r.stderr
    a, b = pd.read_csv(tmp_path / "a" / "job.overlap.csv"), pd.read_csv(tmp_path / "b" / "seq.overlap.csv")
    assert len(a) == 16
    pd.testing.assert_frame_equal(a, b)
