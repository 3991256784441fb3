"""The same multi-rank job from the embedded process pool and from a Dask LocalCluster
(loopback, 2 worker processes): identical collectives, offsets and graph sizes."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from conftest import KINETO_DIR
from opgraph.multirank import build_job

distributed = pytest.importorskip("distributed")

DLRM = sorted(KINETO_DIR.glob("param_dlrm_8gpu_rank*.pt.trace.json.gz")) if KINETO_DIR.is_dir() else []


@pytest.fixture(scope="module")
def cluster():
    from distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None) as c:
        yield c


def _same(a, b) -> None:
    ca, cb = a.job["collectives"], b.job["collectives"]
    pd.testing.assert_frame_equal(ca, cb)
    assert a.job["alignment"] == b.job["alignment"]
    assert [r["node_offset"] for r in a.job["ranks"]] == [r["node_offset"] for r in b.job["ranks"]]
    assert len(a.payload["nodes"]) == len(b.payload["nodes"])
    assert len(a.payload["src"]) == len(b.payload["src"])
    pd.testing.assert_frame_equal(a.job["steps"], b.job["steps"])


def test_pool_and_dask_agree_on_dlrm(cluster) -> None:
    if len(DLRM) != 8:
        pytest.skip("the 8-rank DLRM traces are not available")
    files = [str(p) for p in DLRM]
    pool = build_job(files, workers=2)
    dask = build_job(files, scheduler=cluster.scheduler_address)
    _same(pool, dask)
    assert dask.job["unmatched"] == 0 and dask.job["collectives"]["coll_id"].nunique() == 8
    Gp, Gd = pool.graph(), dask.graph()
    assert (Gp.number_of_nodes(), Gp.number_of_edges()) == (Gd.number_of_nodes(), Gd.number_of_edges())


def test_pool_and_dask_agree_on_synthetic_job(cluster, tmp_path: Path) -> None:
    from test_multirank_ingest import mini_trace, write

    for r, (skew, late) in enumerate([(0, 0), (3000, 15), (-700, 40), (12, 5)]):
        write(tmp_path / f"rank{r}.json", mini_trace(r, n_coll=5, skew_us=skew, late_us=late, world_size=4))
    pool = build_job(str(tmp_path), workers=2, keep="0,2")
    dask = build_job(str(tmp_path), scheduler=cluster.scheduler_address, keep="0,2")
    _same(pool, dask)
    assert dask.job["alignment"]["offsets_ns"] == {0: 0, 1: -3_000_000, 2: 700_000, 3: -12_000}
    assert [r["full"] for r in dask.job["ranks"]] == [True, False, True, False]


def test_cli_with_scheduler(cluster, tmp_path: Path, cli) -> None:
    from test_multirank_ingest import mini_trace, write

    for r in range(2):
        write(tmp_path / f"rank{r}.json", mini_trace(r, skew_us=100 * r))
    out = tmp_path / "job.gpickle"
    r = cli(["build", str(tmp_path), "-o", str(out), "--scheduler", cluster.scheduler_address])
    assert r.exit_code == 0, r.stderr
    assert "2 ranks" in r.stderr and "4 collectives matched" in r.stderr
    r = cli(["summary", str(tmp_path), "--json", "--scheduler", cluster.scheduler_address])
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    assert [x["rank"] for x in doc["ranks"]] == [0, 1] and doc["ranks"][1]["clock_offset_us"] == -100.0
    # a bad trace on a Dask worker is still one line, exit 2
    bad = tmp_path / "rank2.json"
    bad.write_text("{")
    r = cli(["build", str(tmp_path / "rank0.json"), str(bad), "-o", str(out), "--scheduler",
             cluster.scheduler_address])
    assert r.exit_code == 2 and len(r.stderr.splitlines()) == 1 and str(bad) in r.stderr, r.stderr


def test_unreachable_scheduler(tmp_path: Path, cli) -> None:
    from test_multirank_ingest import mini_trace, write

    write(tmp_path / "rank0.json", mini_trace(0))
    r = cli(["summary", str(tmp_path), "--scheduler", "tcp://127.0.0.1:1"])
    assert r.exit_code == 2 and "tcp://127.0.0.1:1" in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_crossrank_path_on_dask_equals_the_pool(cluster, cli) -> None:
    """``critical-path DIR --scheduler``: every pass runs on the cluster's workers (which
    build each rank again from its trace, nothing kept between passes) and gives the pool's
    answer, which is the saved job graph's (tests/test_crossrank_workers.py)."""
    from opgraph.analysis.crossrank_workers import crossrank_from_traces

    seq = Path(__file__).resolve().parents[1] / "fixtures" / "multirank" / "seq"
    files = sorted(str(p) for p in seq.glob("rank*.json"))
    pool = crossrank_from_traces(files, workers=2).to_dict()
    dask = crossrank_from_traces(files, scheduler=cluster.scheduler_address)
    assert dask.to_dict() == pool
    assert dask.stats["tables"]["tasks"] == 4 and dask.stats["segments"]["tasks"] >= 1
    r = cli(["critical-path", str(seq), "--json", "--ranks", "0", "--scheduler", cluster.scheduler_address])
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout) == crossrank_from_traces(files, ranks=[0], workers=1).to_dict()
