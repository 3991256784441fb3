"""Multi-rank analyses (issue 9, docs/multirank.md): the cross-rank critical path and the
straggler report, on the synthesized 4-rank job (answers known by construction, built with
the real ingest ``opgraph build DIR``) and on the 8-rank DLRM set."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np
import pandas as pd
import pytest

from conftest import KINETO_DIR, ROOT, _run_cli, assert_one_line_error, requires_traces
from opgraph.model.trace_graph import TraceGraph
from opgraph.analysis.critical_path.path import critical_path
from opgraph.analysis.crossrank import CROSS_CATEGORIES, crossrank_critical_path
from opgraph.commands.critical_path import parse_ranks
from opgraph.analysis.stragglers import HIST_EDGES_US, histogram_us, kernel_waits, per_collective, stragglers
from opgraph.graph.io import load_any
from opgraph.schemas_util import validation_error
from opgraph.testing.synth_multirank import answers_path, synthesize_job, write_fixtures, write_job

FIX = ROOT / "fixtures" / "multirank"
VARIANTS = ("seq", "noseq")
DLRM = sorted(KINETO_DIR.glob("param_dlrm_8gpu_rank*.pt.trace.json.gz")) if KINETO_DIR.is_dir() else []


def _answers(variant: str) -> dict[str, Any]:
    return json.loads(answers_path(FIX / variant).read_text())


def _build(src: list[str] | str, out: Path, *extra: str) -> nx.DiGraph:
    args = ["build", *([src] if isinstance(src, str) else src), "-o", str(out), "--workers", "1", *extra]
    r = _run_cli(args)
    assert r.exit_code == 0, r.stderr
    return load_any(str(out))


@pytest.fixture(scope="module")
def jobs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The synthesized job built by the real ingest: both variants, and the seq variant
    with only ranks 0 and 1 kept in full (the slow rank 2 summarised)."""
    d = tmp_path_factory.mktemp("jobs")
    out = {}
    for v in VARIANTS:
        _build(str(FIX / v), d / f"{v}.gpickle")
        out[v] = d / f"{v}.gpickle"
    _build(str(FIX / "seq"), d / "keep01.gpickle", "--keep", "0,1")
    out["keep01"] = d / "keep01.gpickle"
    return out


def _graph(jobs: dict[str, Path], key: str) -> nx.DiGraph:
    return load_any(str(jobs[key]))


# --------------------------------------------------------------------------- the synthesizer
def test_fixtures_are_current(tmp_path: Path) -> None:
    """The committed fixtures are exactly what the synthesizer writes."""
    write_fixtures(tmp_path)
    for v in VARIANTS:
        for r in range(4):
            assert (tmp_path / v / f"rank{r}.json").read_bytes() == (FIX / v / f"rank{r}.json").read_bytes()
        assert answers_path(tmp_path / v).read_bytes() == answers_path(FIX / v).read_bytes()


def test_synth_answers_by_construction() -> None:
    """The model's own invariants: the slow rank is last everywhere, waits add up, the
    step window is a fast rank's, and the noseq variant differs only in Seq."""
    a = synthesize_job().answers
    b = synthesize_job(seq=False).answers
    slow = a["slow_rank"]
    assert a["num_collectives"] == 9 and a["world_size"] == 4
    assert all(c["last_rank"] == slow and c["lateness_ns"] >= 98_000 for c in a["collectives"])
    assert a["stragglers"]["last_count"][str(slow)] == 9
    for r in range(4):
        assert a["comm_wait_ns"][str(r)] == sum(c["wait_ns"][str(r)] for c in a["collectives"])
        assert a["comm_wait_ns"][str(r)] == sum(s["comm_wait_ns"][str(r)] for s in a["steps"])
    assert a["comm_wait_ns"][str(slow)] == 0
    for s in a["steps"]:
        assert s["window_rank"] != slow and slow in s["path_ranks"]
        assert s["path_length_ns"] == max(w["span_ns"] for w in s["windows"])
    assert b["match"] == "order" and all(c["seq"] == -1 for c in b["collectives"])
    strip = ("scenario", "match", "collectives")
    assert {k: v for k, v in a.items() if k not in strip} == {k: v for k, v in b.items() if k not in strip}
    trace = synthesize_job(seq=False).traces[1]
    kern = [e for e in trace["traceEvents"] if e.get("cat") == "kernel" and e["name"].startswith("nccl")]
    assert kern and all("Seq" not in e["args"] and e["args"]["Process Group Name"] == "0" for e in kern)
    assert trace["distributedInfo"] == {"backend": "nccl", "rank": 1, "world_size": 4}


def test_synth_other_shapes(tmp_path: Path) -> None:
    """8 ranks, slow rank 5: still last everywhere; write_job puts answers beside the dir."""
    j = synthesize_job(world_size=8, steps=2, slow_rank=5)
    assert j.answers["stragglers"]["last_count"]["5"] == 6
    paths = write_job(j, tmp_path / "job8")
    assert len(paths) == 8 and answers_path(tmp_path / "job8").is_file()
    with pytest.raises(ValueError):
        synthesize_job(slow_rank=0)


# --------------------------------------------------------------------------- stragglers, synth
@pytest.mark.parametrize("variant", VARIANTS)
def test_stragglers_match_answers(jobs: dict[str, Path], variant: str) -> None:
    ans = _answers(variant)
    G = _graph(jobs, variant)
    rep = stragglers(G)
    c = rep.collectives
    assert len(c) == ans["num_collectives"] and rep.unmatched == 0
    assert rep.match == {ans["match"]: ans["num_collectives"]}
    exp = sorted(ans["collectives"], key=lambda x: x["order"])  # chronological, like first_ts
    assert c["last_rank"].tolist() == [x["last_rank"] for x in exp]
    assert c["lateness"].tolist() == [x["lateness_ns"] for x in exp]
    assert c["skew"].tolist() == [x["skew_ns"] for x in exp]
    assert c["coll"].tolist() == [x["coll"] for x in exp]
    assert c["step"].tolist() == [x["step"] for x in exp]
    assert c["first_ts"].tolist() == [min(x["arrival_ns"].values()) for x in exp]
    assert c["seq"].tolist() == [x["seq"] for x in exp]
    # per-kernel waits == the model's, by (collective, rank)
    w = rep.waits
    assert (w["wait"] >= 0).all()
    got = {(int(r.coll_id), int(r.rank)): int(r.wait) for r in w.itertuples()}
    cid = dict(zip(range(len(c)), c["coll_id"].tolist()))
    for i, x in enumerate(exp):
        for r, v in x["wait_ns"].items():
            assert got[(cid[i], int(r))] == v
    br = rep.by_rank.set_index("rank")
    for r, v in ans["comm_wait_ns"].items():
        assert br.loc[int(r), "comm_wait"] == v
        assert br.loc[int(r), "times_last"] == ans["stragglers"]["last_count"][r]
    assert rep.repeated == [ans["slow_rank"]]
    assert rep.steps["last_rank"].tolist() == [ans["slow_rank"]] * len(ans["steps"])
    assert rep.steps["comm_wait"].tolist() == [sum(s["comm_wait_ns"].values()) for s in ans["steps"]]
    d = rep.to_dict()
    assert validation_error(d, "stragglers.schema.json") is None
    h = d["histograms"]
    assert sum(h["skew"]) == sum(h["lateness"]) == len(c) and sum(h["wait"]) == len(w)


def test_stragglers_summarised_ranks(jobs: dict[str, Path]) -> None:
    """With the slow rank kept only as a summary, its collective rows still name it."""
    ans = _answers("seq")
    G = _graph(jobs, "keep01")
    full = {r["rank"]: r["full"] for r in G.graph["job"]["ranks"]}
    assert full == {0: True, 1: True, 2: False, 3: False}
    rep = stragglers(G)
    assert rep.collectives["last_rank"].tolist() == [ans["slow_rank"]] * ans["num_collectives"]
    d = rep.to_dict()
    assert [r["full"] for r in d["by_rank"]] == [True, True, False, False]
    got = {r["rank"]: round(r["comm_wait_us"] * 1000) for r in d["by_rank"]}
    assert got == {int(k): v for k, v in ans["comm_wait_ns"].items()}


# --------------------------------------------------------------------------- cross-rank path, synth
def _tiles(w: Any) -> None:
    """Segments tile [window start, window end] without gaps or overlaps; none negative."""
    assert w.path[0].start_ns == w.start_ns and w.path[-1].end_ns == w.end_ns
    for p, q in zip(w.path, w.path[1:]):
        assert p.end_ns == q.start_ns
    assert all(s.dur_ns > 0 for s in w.path)


@pytest.mark.parametrize("variant", VARIANTS)
def test_crossrank_path_synth(jobs: dict[str, Path], variant: str) -> None:
    ans = _answers(variant)
    G = _graph(jobs, variant)
    res = crossrank_critical_path(G)
    assert res.ranks == [0, 1, 2, 3] and res.summarised == [] and res.notes == []
    assert len(res.steps) == len(ans["steps"])
    for w, s in zip(res.steps, ans["steps"]):
        assert w.step == s["step"] and w.name == s["name"]
        assert w.window_rank == s["window_rank"]
        assert w.length_ns == w.span_ns == s["path_length_ns"]
        spans = {x["rank"]: x["end_ns"] - x["start_ns"] for x in w.rank_windows}
        assert spans == {x["rank"]: x["span_ns"] for x in s["windows"]}
        assert w.span_ns == max(spans.values())
        assert sorted(w.ranks_on_path) == s["path_ranks"]
        assert w.ranks_on_path[-1] == s["window_rank"]  # ends on the window's rank ...
        cr = w.crossings()
        assert cr and cr[-1]["from_rank"] == ans["slow_rank"] and cr[-1]["to_rank"] == s["window_rank"]
        slow_time = sum(x.dur_ns for x in w.path if x.rank == ans["slow_rank"])
        assert slow_time > w.span_ns / 2  # ... but most of it is the slow rank's
        assert w.breakdown_ns["gpu_comm_wait"] == 0  # every participant analysed: no wait on the path
        assert {r: v["wait_ns"] for r, v in w.comm_wait.items()} == {int(k): v for k, v in s["comm_wait_ns"].items()}
        for r, v in w.comm_wait.items():
            assert v["for_rank_ns"] == {int(k): x for k, x in s["comm_wait_by_rank_ns"][str(r)].items()}
        _tiles(w)
        assert sum(w.breakdown_ns.values()) == w.length_ns


@pytest.mark.parametrize("variant", VARIANTS)
def test_crossrank_restricted_to_one_rank(jobs: dict[str, Path], variant: str) -> None:
    """--ranks 0: the path stays on rank 0 and its waits in the collectives become
    gpu_comm_wait naming the slow rank, equal to the model's comm wait of rank 0."""
    ans = _answers(variant)
    G = _graph(jobs, variant)
    res = crossrank_critical_path(G, ranks=[0])
    assert res.ranks == [0] and any("restricted" in n for n in res.notes)
    for w, s in zip(res.steps, ans["steps"]):
        assert w.window_rank == 0 and w.ranks_on_path == [0] and w.crossings() == []
        assert w.length_ns == w.span_ns == next(x["span_ns"] for x in s["windows"] if x["rank"] == 0)
        assert w.breakdown_ns["gpu_comm_wait"] == s["comm_wait_ns"]["0"]
        waits = [x for x in w.path if x.bound_by == "gpu_comm_wait"]
        assert len(waits) == 3 and {x.wait_for_rank for x in waits} == {ans["slow_rank"]}
        assert all(x.coll_id is not None for x in waits)
        _tiles(w)


def test_crossrank_summarised_slow_rank(jobs: dict[str, Path]) -> None:
    """Ranks not kept in full appear only through their collective rows: the path cannot
    enter the slow rank, so its lateness is gpu_comm_wait on the ranks kept in full."""
    ans = _answers("seq")
    G = _graph(jobs, "keep01")
    res = crossrank_critical_path(G)
    assert res.ranks == [0, 1] and res.summarised == [2, 3]
    assert any("not kept in full" in n for n in res.notes)
    for w, s in zip(res.steps, ans["steps"]):
        assert set(w.ranks_on_path) <= {0, 1}
        assert w.length_ns == w.span_ns
        assert w.breakdown_ns["gpu_comm_wait"] > 0
        assert {x.wait_for_rank for x in w.path if x.bound_by == "gpu_comm_wait"} == {ans["slow_rank"]}
        assert {r: v["wait_ns"] for r, v in w.comm_wait.items()} == {int(k): v for k, v in s["comm_wait_ns"].items()}
    with pytest.raises(ValueError, match="kept in full"):
        crossrank_critical_path(G, ranks=[2])
    with pytest.raises(ValueError, match="not in this job"):
        crossrank_critical_path(G, ranks=[9])


def test_parse_ranks() -> None:
    assert parse_ranks(None) is None and parse_ranks("all") is None and parse_ranks(" ALL ") is None
    assert parse_ranks("3,0") == [0, 3] and parse_ranks("0-2,5") == [0, 1, 2, 5]
    with pytest.raises(ValueError):
        parse_ranks("x")


# --------------------------------------------------------------------------- stragglers, hand-made table
def test_waits_ties_and_clamps() -> None:
    """Ties go to the lowest rank; a wait never exceeds the kernel's duration; unmatched
    rows are ignored; lateness = last - second-latest arrival."""
    t = pd.DataFrame({
        "rank": [0, 1, 2, 0, 1, 2, 0],
        "node": [1, 2, 3, 4, 5, 6, 7],
        "pg": ["0"] * 7, "seq": [1, 1, 1, 2, 2, 2, 3], "coll": ["all_reduce"] * 7, "nelems": [8] * 7,
        "ts": [100, 150, 150, 1000, 1010, 1500, 5000],
        "end": [200, 200, 200, 1100, 1600, 1600, 5100],
        "step": [1, 1, 1, 1, 2, 2, 2], "launch_ts": [90, 95, 140, 990, 1000, -1, 4990],
        "coll_id": [0, 0, 0, 1, 1, 1, -1],
    })
    w = kernel_waits(t)
    assert len(w) == 6
    assert w["last_rank"].tolist() == [1, 1, 1, 2, 2, 2]  # ranks 1 and 2 tie at 150 -> rank 1
    assert w["wait"].tolist() == [50, 0, 0, 100, 490, 0]  # rank 0 in coll 1: 500 clamped to dur 100
    c = per_collective(t, w)
    assert c["lateness"].tolist() == [0, 490] and c["skew"].tolist() == [50, 500]
    assert c["step"].tolist() == [1, 2] and c["launch_skew"].tolist() == [50, -1]
    assert histogram_us(np.array([0, 999, 1000, 2500, 10**12])) == [2, 1, 1] + [0] * (len(HIST_EDGES_US) - 4) + [1]


# --------------------------------------------------------------------------- CLI
def test_cli_crossrank_and_stragglers(jobs: dict[str, Path], tmp_path: Path) -> None:
    job = str(jobs["seq"])
    r = _run_cli(["critical-path", job, "--ranks", "all", "--json"])
    assert r.exit_code == 0, r.stderr
    d = json.loads(r.stdout)
    assert validation_error(d, "critical-path.schema.json") is None
    assert d["window_mode"] == "steps:cross-rank" and d["ranks"] == [0, 1, 2, 3]
    assert set(d["summary"]["breakdown_us"]) == set(CROSS_CATEGORIES)
    for w in d["windows"]:
        assert w["length_us"] == w["span_us"] and all("rank" in s for s in w["path"])
    r = _run_cli(["critical-path", job, "--ranks", "0,3", "--json", "--no-path"])
    assert r.exit_code == 0, r.stderr
    d = json.loads(r.stdout)
    assert validation_error(d, "critical-path.schema.json") is None and d["ranks"] == [0, 3]
    assert d["summary"]["breakdown_us"]["gpu_comm_wait"] > 0 and "path" not in d["windows"][0]
    r = _run_cli(["critical-path", job])
    assert r.exit_code == 0 and "crosses rank 2 → 0" in r.stdout and "gpu_comm_wait" in r.stdout
    r = _run_cli(["stragglers", job, "--json"])
    assert r.exit_code == 0, r.stderr
    assert validation_error(json.loads(r.stdout), "stragglers.schema.json") is None
    r = _run_cli(["stragglers", job])
    assert r.exit_code == 0 and "repeatedly last: rank(s) 2" in r.stdout
    # errors: one line, exit 2
    assert_one_line_error(_run_cli(["critical-path", job, "--ranks", "9"]), job, "not in this job")
    assert_one_line_error(_run_cli(["critical-path", job, "--ranks", "a,b"]), job, "--ranks")
    assert_one_line_error(_run_cli(["critical-path", job, "--window", "all"]), job, "--window")
    single = str(FIX / "seq" / "rank0.json")
    assert_one_line_error(_run_cli(["critical-path", single, "--ranks", "all"]), single, "multi-rank")
    assert_one_line_error(_run_cli(["stragglers", single]), single, "multi-rank")


def test_single_rank_output_unchanged() -> None:
    """On a single-rank graph critical-path is the single-rank analysis (no rank fields)."""
    single = str(FIX / "seq" / "rank0.json")
    r = _run_cli(["critical-path", single, "--json"])
    assert r.exit_code == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["window_mode"] == "steps" and "ranks" not in d
    assert "gpu_comm_wait" not in d["summary"]["breakdown_us"]
    assert all("rank" not in s for w in d["windows"] for s in w["path"])
    res = critical_path(load_any(single))
    assert [w.to_dict() for w in res.windows] == d["windows"]


# --------------------------------------------------------------------------- real: 8-rank DLRM
@pytest.fixture(scope="module")
def dlrm(tmp_path_factory: pytest.TempPathFactory) -> nx.DiGraph:
    if len(DLRM) != 8:
        pytest.skip(f"the 8-rank DLRM set is not in {KINETO_DIR}")
    out = tmp_path_factory.mktemp("dlrm") / "dlrm.gpickle"
    return _build([str(p) for p in DLRM], out)


@requires_traces
@pytest.mark.real_traces
def test_dlrm_crossrank_path(dlrm: nx.DiGraph) -> None:
    from opgraph.multirank import rank_subgraph

    res = crossrank_critical_path(dlrm)
    assert res.ranks == list(range(8)) and len(res.steps) == 1
    w = res.steps[0]
    assert w.name == "ProfilerStep#10"
    # invariant: path length == the slowest rank's step span, that span computed independently
    # by the single-rank analysis of every rank (aligned clock)
    single = {}
    for r in range(8):
        sw = critical_path(rank_subgraph(dlrm, r, aligned=True)).windows
        assert len(sw) == 1
        single[r] = sw[0].span_ns
    assert w.length_ns == w.span_ns == max(single.values())
    assert w.window_rank == max(single, key=lambda r: (single[r], -r))
    assert {x["rank"]: x["end_ns"] - x["start_ns"] for x in w.rank_windows} == single
    _tiles(w)
    # the stream joins on the NCCL stream make the path cross ranks at a collective
    assert len(w.ranks_on_path) >= 2 and w.crossings()
    joins = [(u, v) for u, v, d in dlrm.edges(data=True) if d.get("kind") == "event_wait" and d.get("inferred")]
    assert len(joins) == 18  # the builder's inferred stream joins (no cuda_sync events in these traces)
    assert all(v["wait_ns"] >= 0 for v in w.comm_wait.values())
    no_join = dlrm.to_networkx().copy()
    no_join.remove_edges_from(joins)
    nj = crossrank_critical_path(TraceGraph.of(no_join)).steps[0]
    assert nj.length_ns == nj.span_ns == w.span_ns
    assert nj.ranks_on_path == [1]  # without the joins the path never reaches the collective
    # every rank alone: same invariant against its own span; waits named
    for r in range(8):
        one = crossrank_critical_path(dlrm, ranks=[r]).steps[0]
        assert one.window_rank == r and one.length_ns == one.span_ns == single[r]
        assert all(x.wait_for_rank is not None and x.wait_for_rank != r
                   for x in one.path if x.bound_by == "gpu_comm_wait")


@requires_traces
@pytest.mark.real_traces
def test_dlrm_stragglers(dlrm: nx.DiGraph) -> None:
    rep = stragglers(dlrm)
    c = rep.collectives
    assert len(c) == 8 and rep.unmatched == 0 and rep.match == {"order": 8}
    assert (c["ranks"] == 8).all()
    assert (rep.waits["wait"] >= 0).all() and len(rep.waits) == 64
    assert (c["lateness"] >= 0).all() and (c["skew"] >= c["lateness"]).all()
    dur = rep.waits["end"] - rep.waits["ts"]
    assert (rep.waits["wait"] <= dur).all()
    br = rep.by_rank.set_index("rank")
    assert br["times_last"].sum() == 8
    assert br["times_last"].idxmax() == 7 and 7 in rep.repeated
    assert br.loc[7, "wait_caused"] == rep.waits.loc[rep.waits["last_rank"] == 7, "wait"].sum()
    d = rep.to_dict()
    assert validation_error(d, "stragglers.schema.json") is None
    assert sum(d["histograms"]["wait"]) == 64
