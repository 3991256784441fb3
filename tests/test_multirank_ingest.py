"""Multi-rank ingest (issue 9, docs/multirank.md): discovery, rank identity, per-rank
worker, collective matching, clock alignment, the merged job graph, save/load, CLI."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from conftest import KINETO_DIR, requires_traces
from opgraph.errors import OpgraphInputError
from opgraph.graph.io import GraphPayload, load_any, load_gpickle, save_gpickle, save_graph
from opgraph.multirank import build_job, rank_from_filename, rank_subgraph
from opgraph.multirank.job import parse_keep, parse_rank_set
from opgraph.multirank.match import align_clocks, match_collectives
from opgraph.multirank.worker import rank_result
from opgraph.names import normalise_collective
from opgraph.schemas_util import validation_error

DLRM = sorted(KINETO_DIR.glob("param_dlrm_8gpu_rank*.pt.trace.json.gz")) if KINETO_DIR.is_dir() else []


# --------------------------------------------------------------------------- a tiny generator
def mini_trace(rank: int | None, n_coll: int = 4, skew_us: int = 0, late_us: int = 0, seq: bool = True,
               pg: str = "0", coll_name: str = "allreduce", nelems: int = 1024, world_size: int = 2) -> dict:
    """A Kineto trace of one rank: one ProfilerStep holding ``n_coll`` collectives, each a
    ``record_param_comms`` range -> ``cudaLaunchKernel`` -> NCCL kernel. The k-th kernel
    ends at true time 300k + 250 µs on every rank; the rank's clock reads true + ``skew_us``;
    it enters each collective ``late_us`` later than the others."""
    ev: list[dict[str, Any]] = []
    pid, tid = 100 + (rank or 0), 1
    ev.append({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#7", "pid": pid, "tid": tid,
               "ts": skew_us + 0, "dur": 300 * n_coll + 100, "args": {}})
    for k in range(n_coll):
        t = 300 * k + 50 + late_us
        corr = 1000 + k
        a: dict[str, Any] = {"Collective name": coll_name, "Process Group Name": pg, "In msg nelems": nelems}
        if seq:
            a["Seq"] = k + 1
        ev.append({"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": pid, "tid": tid,
                   "ts": skew_us + t, "dur": 40, "args": a})
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": pid, "tid": tid,
                   "ts": skew_us + t + 10, "dur": 10, "args": {"correlation": corr}})
        start = t + 25
        end = 300 * k + 250
        ev.append({"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*)",
                   "pid": 0, "tid": 7, "ts": skew_us + start, "dur": end - start,
                   "args": {"device": 0, "stream": 7, "correlation": corr}})
        # an ordinary kernel too
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": pid, "tid": tid,
                   "ts": skew_us + t + 30, "dur": 5, "args": {"correlation": corr + 500}})
        ev.append({"ph": "X", "cat": "kernel", "name": "gemm_kernel", "pid": 0, "tid": 8,
                   "ts": skew_us + t + 40, "dur": 20, "args": {"device": 0, "stream": 8, "correlation": corr + 500}})
    doc: dict[str, Any] = {"schemaVersion": 1, "traceEvents": ev}
    if rank is not None:
        doc["distributedInfo"] = {"rank": rank, "world_size": world_size, "backend": "nccl"}
    return doc


def write(path: Path, doc: dict) -> Path:
    path.write_text(json.dumps(doc))
    return path


# --------------------------------------------------------------------------- units
@pytest.mark.parametrize("name,rank", [
    ("rank-3.json", 3), ("trace_rank3.pt.trace.json", 3), ("rank_12.json.gz", 12), ("worker3.json", 3),
    ("worker-5_step_12.json", 5), ("job_3.json", 3), ("param_dlrm_8gpu_rank7.pt.trace.json.gz", 7),
    ("trace.json", None), ("ranking.json", None),
])
def test_rank_from_filename(name: str, rank: int | None) -> None:
    assert rank_from_filename(f"/some/dir_9/{name}") == rank


@pytest.mark.parametrize("raw,norm", [
    ("allreduce", "all_reduce"), ("nccl:all_reduce", "all_reduce"), ("_allgather_base", "all_gather"),
    ("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*)", "all_reduce"), ("all_to_all", "all_to_all"),
    ("alltoall_base", "all_to_all"), ("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t", "send_recv"),
    ("_reduce_scatter_base", "reduce_scatter"), ("broadcast", "broadcast"), (None, "unknown"),
])
def test_normalise_collective(raw: str | None, norm: str) -> None:
    assert normalise_collective(raw) == norm


def test_parse_rank_set_and_keep(tmp_path: Path) -> None:
    assert parse_rank_set("0,3,5-7") == {0, 3, 5, 6, 7}
    for bad in ("", "a", "5-3"):
        with pytest.raises(ValueError):
            parse_rank_set(bad)
    f = [str(write(tmp_path / f"rank{r}.json", mini_trace(r))) for r in range(3)]
    assert parse_keep("all", f)[0] == [True] * 3
    assert parse_keep("none", f)[0] == [False] * 3
    assert parse_keep("auto", f)[0] == [True] * 3
    keep, note = parse_keep("auto", f, budget=1)  # nothing fits: the first rank is still kept
    assert keep == [True, False, False] and "1 of 3" in note


def test_worker_tables(tmp_path: Path) -> None:
    p = write(tmp_path / "a.json", mini_trace(1, n_coll=3))
    r = rank_result(str(p), keep_full=False)
    assert (r.rank, r.rank_source, r.world_size, r.payload) == (1, "distributedInfo", 2, None)
    c = r.collectives
    assert len(c) == 3 and list(c["seq"]) == [1, 2, 3] and set(c["coll"]) == {"all_reduce"}
    assert set(c["pg"]) == {"0"} and set(c["nelems"]) == {1024} and set(c["step"]) == {7}
    assert (c["launch_ts"] < c["ts"]).all() and (c["end"] > c["ts"]).all()
    assert c["end"].tolist() == [250_000, 550_000, 850_000]
    assert r.steps[["step", "ts"]].values.tolist() == [[7, 0]]
    assert r.steps["gpu_end"].iloc[0] == 850_000
    s = r.summary
    assert s["collectives"] == 3 and s["kernels"] == 6 and s["gpu_busy_ns"] >= s["comm_busy_ns"] > 0


def test_match_seq_order_and_prefix() -> None:
    def rows(rank: int, n: int, seq: bool, pg: str = "0", coll: str = "all_reduce") -> pd.DataFrame:
        return pd.DataFrame({"rank": rank, "node": np.arange(n), "pg": pg,
                             "seq": np.arange(n) + 1 if seq else -1, "coll": coll, "nelems": 8,
                             "ts": np.arange(n) * 100, "end": np.arange(n) * 100 + 50})
    # Seq on every rank: a rank that lacks seq 3 leaves seq 3 unmatched only
    t = pd.concat([rows(0, 4, True), rows(1, 4, True).iloc[[0, 1, 3]]])
    m = match_collectives(t).table
    assert set(m["match"]) == {"seq"}
    assert m.loc[m["key"] < 0, "seq"].tolist() == [3]
    # no Seq: per-group order, the common prefix matches, the extra kernel does not
    m = match_collectives(pd.concat([rows(0, 5, False), rows(1, 4, False)])).table
    assert set(m["match"]) == {"order"} and (m["key"] >= 0).sum() == 8
    assert m.loc[m["key"] < 0, ["rank", "node"]].values.tolist() == [[0, 4]]
    # disagreeing collective names are left unmatched, with a warning
    r = match_collectives(pd.concat([rows(0, 2, False), rows(1, 2, False, coll="all_gather")]))
    assert (r.table["key"] < 0).all() and any(w["code"] == "collective_mismatch" for w in r.warnings)


def test_alignment_recovers_skew() -> None:
    n = 6
    ends = np.arange(n) * 1000 + 500
    t = pd.concat([pd.DataFrame({"rank": r, "key": np.arange(n), "end": ends - sk + np.array([0, 3, -3, 0, 1, 0])})
                   for r, sk in ((0, 0), (1, 7000), (2, -2500))])
    al = align_clocks(t, [0, 1, 2])
    assert al.reference_rank == 0 and al.offsets_ns == {0: 0, 1: 7000, 2: -2500}
    assert al.residual_ns[0] == 0 and all(0 <= v <= 3 for v in al.residual_ns.values())


# --------------------------------------------------------------------------- synthetic jobs
def test_job_from_mini_traces(tmp_path: Path) -> None:
    skew = {0: 0, 1: 5000, 2: -1200}
    for r, s in skew.items():
        write(tmp_path / f"rank{r}.json", mini_trace(r, skew_us=s, late_us=20 * r, world_size=3))
    (tmp_path / "notes.txt").write_text("not a trace")
    (tmp_path / "meta.json").write_text(json.dumps({"a": 1}))
    jb = build_job(str(tmp_path), workers=2)
    job = jb.job
    assert sorted(Path(s).name for s in jb.skipped) == ["meta.json", "notes.txt"]
    assert job["alignment"]["offsets_ns"] == {0: 0, 1: -5_000_000, 2: 1_200_000}
    assert job["alignment"]["residual_ns"] == {0: 0, 1: 0, 2: 0}
    c = job["collectives"]
    assert job["unmatched"] == 0 and set(c["match"]) == {"seq"} and c["coll_id"].nunique() == 4
    # aligned: kernels of one collective end together
    assert (c.groupby("coll_id")["end"].nunique() == 1).all()
    G = jb.graph()
    coll_edges = [(u, v, d) for u, v, d in G.edges(data=True) if d["kind"] == "collective"]
    assert len(coll_edges) == 4 * 3 * 2
    assert all(G.nodes[u]["rank"] != G.nodes[v]["rank"] for u, v, _ in coll_edges)
    assert all(G.nodes[u]["kind"] == "kernel" for u, v, _ in coll_edges)
    assert {d["coll_id"] for *_, d in coll_edges} == {0, 1, 2, 3}
    # every node has a rank; ts are aligned
    assert Counter(d["rank"] for _, d in G.nodes(data=True)) == Counter({0: 21, 1: 21, 2: 21})
    k = c[c["coll_id"] == 0].set_index("rank")["node"]
    assert len({G.nodes[n]["ts"] + G.nodes[n]["dur"] for n in k}) == 1


def test_filename_fallback_warns(tmp_path: Path) -> None:
    for r in range(2):
        write(tmp_path / f"worker{r}.json", mini_trace(None))
    jb = build_job(str(tmp_path), workers=1)
    rows = jb.job["ranks"]
    assert [(x["rank"], x["rank_source"]) for x in rows] == [(0, "filename"), (1, "filename")]
    codes = [w["code"] for w in jb.job["warnings"]]
    assert codes.count("rank_from_filename") == 2


def test_duplicate_and_missing_ranks(tmp_path: Path) -> None:
    a = write(tmp_path / "a.json", mini_trace(1))
    b = write(tmp_path / "b.json", mini_trace(1))
    with pytest.raises(OpgraphInputError, match=r"duplicate rank 1") as e:
        build_job([str(a), str(b)], workers=1)
    assert "a.json" in str(e.value) and "b.json" in str(e.value)
    c = write(tmp_path / "c.json", mini_trace(None))
    with pytest.raises(OpgraphInputError, match=r"c\.json: rank unknown"):
        build_job([str(a), str(c)], workers=1)


def test_order_fallback_and_unmatched(tmp_path: Path) -> None:
    write(tmp_path / "rank0.json", mini_trace(0, n_coll=4, seq=False))
    write(tmp_path / "rank1.json", mini_trace(1, n_coll=3, seq=False))
    job = build_job(str(tmp_path), workers=1).job
    c = job["collectives"]
    assert set(c["match"]) == {"order"} and job["unmatched"] == 1
    assert c.loc[c["coll_id"] < 0, "rank"].tolist() == [0]
    assert any(w["code"] == "collective_unmatched" for w in job["warnings"])


def test_keep_subset(tmp_path: Path) -> None:
    for r in range(3):
        write(tmp_path / f"rank{r}.json", mini_trace(r, world_size=3))
    jb = build_job(str(tmp_path), keep="0,2", workers=1)
    rows = {x["rank"]: x for x in jb.job["ranks"]}
    assert [rows[r]["full"] for r in range(3)] == [True, False, True]
    assert rows[1]["node_offset"] == -1 and rows[1]["n_nodes"] == 0 and rows[1]["summary"]["collectives"] == 4
    c = jb.job["collectives"]
    assert (c.loc[c["rank"] == 1, "node"] == -1).all() and (c.loc[c["rank"] != 1, "node"] >= 0).all()
    assert job_ok(jb.job) and jb.job["unmatched"] == 0  # rank 1's kernels still take part in matching
    G = jb.graph()
    assert {d["rank"] for _, d in G.nodes(data=True)} == {0, 2}
    assert sum(d["kind"] == "collective" for *_, d in G.edges(data=True)) == 4 * 2
    with pytest.raises(KeyError, match="not kept"):
        rank_subgraph(G, 1)


def job_ok(job: dict) -> bool:
    return set(job) >= {"ranks", "collectives", "steps", "alignment", "unmatched"}


# --------------------------------------------------------------------------- the DLRM set
@pytest.fixture(scope="module")
def dlrm_job():
    if len(DLRM) != 8:
        pytest.skip("the 8-rank DLRM traces are not available")
    return build_job([str(p) for p in DLRM], workers=2)


@requires_traces
@pytest.mark.real_traces
def test_dlrm_collectives_match_on_all_ranks(dlrm_job) -> None:
    job = dlrm_job.job
    c = job["collectives"]
    per_rank = c.groupby("rank").size()
    assert list(per_rank.index) == list(range(8))
    assert per_rank.nunique() == 1 and per_rank.iloc[0] == 8
    assert job["unmatched"] == 0 and (c["coll_id"] >= 0).all()
    assert (c.groupby("coll_id")["rank"].nunique() == 8).all()
    # DLRM records no Seq / process group: per-group order, and names agree per collective
    assert set(c["match"]) == {"order"}
    assert (c.groupby("coll_id")["coll"].nunique() == 1).all()
    assert Counter(c.drop_duplicates("coll_id")["coll"]) == Counter({"all_to_all": 5, "all_reduce": 3})


@requires_traces
@pytest.mark.real_traces
def test_dlrm_offsets_and_residuals(dlrm_job) -> None:
    al = dlrm_job.job["alignment"]
    assert al["reference_rank"] == 0 and al["matched"] == 8
    assert sorted(al["offsets_ns"]) == list(range(8)) and al["offsets_ns"][0] == 0
    # these ranks share one host clock: offsets and residuals are a few µs at most
    assert all(abs(v) < 10_000 for v in al["offsets_ns"].values())
    assert all(0 <= v < 5_000 for v in al["residual_ns"].values())
    rows = dlrm_job.job["ranks"]
    assert [r["clock_offset_ns"] for r in rows] == [al["offsets_ns"][r] for r in range(8)]
    # offsets are applied: each collective's aligned kernel ends agree within a few µs
    c = dlrm_job.job["collectives"]
    spread = c.groupby("coll_id")["end"].agg(lambda s: s.max() - s.min())
    assert (spread <= 10_000).all()  # measured: 1.0 to 6.5 µs


@requires_traces
@pytest.mark.real_traces
def test_dlrm_graph_and_rank_subgraphs(dlrm_job) -> None:
    G = dlrm_job.graph()
    job = G.graph["job"]
    ec = Counter(d["kind"] for *_, d in G.edges(data=True))
    assert ec["collective"] == 8 * 8 * 7
    offsets = [r["node_offset"] for r in job["ranks"]]
    assert offsets == sorted(offsets) and offsets[0] == 0
    arr = G.arrays
    assert sorted(set(arr.rank.tolist())) == list(range(8))
    lane_rank = pd.Series(arr.rank).groupby(arr.lane).nunique()
    assert (lane_rank == 1).all()  # no lane shared by two ranks
    for p in DLRM:
        r = int(p.name.split("rank")[1].split(".")[0])
        H = rank_subgraph(G, r)
        S = load_any(p)
        assert (H.number_of_nodes(), H.number_of_edges()) == (S.number_of_nodes(), S.number_of_edges())
        assert Counter(d["kind"] for *_, d in H.edges(data=True)) == Counter(d["kind"] for *_, d in S.edges(data=True))
        assert Counter(d["kind"] for _, d in H.nodes(data=True)) == Counter(d["kind"] for _, d in S.nodes(data=True))
        assert set(H.edges) == set(S.edges)
        assert all(H.nodes[n] == S.nodes[n] for n in S)  # raw clock, local ids, same attributes
        assert H.graph["source"] == S.graph["source"]
        assert len(H.graph["events"]) == len(S.graph["events"])
        # aligned view: the job's clock
        Ha = rank_subgraph(G, r, aligned=True)
        n0 = next(iter(S))
        assert Ha.nodes[n0]["ts"] == S.nodes[n0]["ts"] + job["alignment"]["offsets_ns"][r]


@requires_traces
@pytest.mark.real_traces
def test_dlrm_round_trips(dlrm_job, tmp_path: Path) -> None:
    p = tmp_path / "job.gpickle"
    save_gpickle(GraphPayload(dlrm_job.payload), p)
    G = load_gpickle(p)
    job = G.graph["job"]
    assert [r["rank"] for r in job["ranks"]] == list(range(8))
    pd.testing.assert_frame_equal(job["collectives"], dlrm_job.job["collectives"])
    assert all("rank" in d for _, d in G.nodes(data=True))
    # a loaded job graph saves and loads again (column form, with its rank column)
    p2 = tmp_path / "job2.gpickle"
    save_gpickle(G, p2)
    G2 = load_gpickle(p2)
    assert G2.number_of_edges() == G.number_of_edges() and G2.nodes[100] == G.nodes[100]
    # node-link JSON validates and keeps the job
    pj = tmp_path / "job.json.gz"
    save_graph(G, pj)
    doc = json.loads(gzip.decompress(pj.read_bytes()))
    doc["nodes"], doc["edges"] = doc["nodes"][:500], doc["edges"][:500] + [
        e for e in doc["edges"] if e["kind"] == "collective"][:5]
    doc.pop("events")
    assert validation_error(doc, "opgraph-graph.schema.json") is None
    G3 = load_any(pj)
    assert G3.graph["job"]["alignment"]["offsets_ns"] == job["alignment"]["offsets_ns"]
    pd.testing.assert_frame_equal(G3.graph["job"]["collectives"].astype({"match": object, "pg": object, "coll": object}),
                                  job["collectives"].astype({"match": object, "pg": object, "coll": object}),
                                  check_dtype=False)
    assert rank_subgraph(G3, 3).number_of_nodes() == rank_subgraph(G, 3).number_of_nodes()


def test_single_rank_graph_unchanged(tmp_path: Path) -> None:
    G = load_any(write(tmp_path / "rank0.json", mini_trace(0)))
    assert all("rank" not in d for _, d in G.nodes(data=True))
    arr = G.arrays
    assert arr.rank.dtype == np.int64 and not arr.rank.any() and len(arr.rank) == arr.n


# --------------------------------------------------------------------------- CLI
def test_cli_build_info_summary(tmp_path: Path, cli) -> None:
    d = tmp_path / "traces"
    d.mkdir()
    for r in range(2):
        write(d / f"rank{r}.json", mini_trace(r, skew_us=1000 * r, late_us=10 * r))
    out = tmp_path / "job.gpickle"
    r = cli(["build", str(d), "-o", str(out), "--workers", "2"])
    assert r.exit_code == 0, r.stderr
    assert "2 ranks" in r.stderr and "4 collectives matched" in r.stderr and "0 kernels unmatched" in r.stderr
    r = cli(["info", str(out), "--json"])
    assert r.exit_code == 0, r.stderr
    info = json.loads(r.stdout)
    assert validation_error(info, "info.schema.json") is None
    j = info["job"]
    assert [x["rank"] for x in j["ranks"]] == [0, 1] and j["ranks"][1]["clock_offset_us"] == -1000.0
    assert j["collectives"]["matched"] == 4 and j["unmatched"] == 0
    r = cli(["info", str(out)])
    assert r.exit_code == 0 and "Ranks" in r.stdout and "4 matched" in r.stdout
    # glob and explicit list give the same job
    out2 = tmp_path / "job2.gpickle"
    r = cli(["build", str(d / "rank0.json"), str(d / "rank1.json"), "-o", str(out2), "--workers", "1"])
    assert r.exit_code == 0, r.stderr
    assert load_gpickle(out2).number_of_edges() == load_gpickle(out).number_of_edges()
    r = cli(["summary", str(d / "rank*.json"), "--json", "--workers", "1"])
    assert r.exit_code == 0, r.stderr
    s = json.loads(r.stdout)
    assert validation_error(s, "multirank-summary.schema.json") is None
    assert [x["rank"] for x in s["ranks"]] == [0, 1] and s["collectives"]["matched"] == 4
    assert s["ranks"][1]["clock_offset_us"] == -1000.0 and s["ranks"][0]["steps"] == 1
    r = cli(["summary", str(d)])
    assert r.exit_code == 0 and "2 ranks" in r.stdout


def test_cli_errors(tmp_path: Path, cli, one_line_error) -> None:
    a = write(tmp_path / "a.json", mini_trace(2))
    b = write(tmp_path / "b.json", mini_trace(2))
    out = tmp_path / "job.gpickle"
    r = cli(["build", str(a), str(b), "-o", str(out)])
    one_line_error(r, a, "duplicate rank 2", "b.json")
    r = cli(["build", str(tmp_path / "nothing*.json"), "-o", str(out)])
    one_line_error(r, tmp_path / "nothing*.json", "no file")
    bad = tmp_path / "rank5.json"
    bad.write_text('{"traceEvents": [1, 2')
    r = cli(["build", str(a), str(bad), "-o", str(out)])
    one_line_error(r, bad)
    r = cli(["build", str(a), str(tmp_path / "rank5.json"), "-o", str(out), "--keep", "x"])
    assert r.exit_code == 2 and "--keep" in r.stderr and "Traceback" not in r.stderr
    r = cli(["build", str(a), str(b), "-o", str(tmp_path / "job.txt")])
    one_line_error(r, tmp_path / "job.txt", "unknown output type")
