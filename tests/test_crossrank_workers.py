"""The cross-rank critical path computed rank by rank (``opgraph critical-path DIR``,
:mod:`opgraph.analysis.crossrank_workers`) equals the one computed on the whole job graph,
on the synthesized jobs and on the 8-rank DLRM traces; and the job graph's ranks are the
ranks' own graphs (hand-off edges renumbered)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from conftest import KINETO_DIR, ROOT, _run_cli, assert_one_line_error
from opgraph.analysis.critical_path.engine import boundary_dag
from opgraph.analysis.crossrank import crossrank_critical_path
from opgraph.analysis.crossrank_workers import (END_CUT, END_EXIT, END_NONE, NO_TIME, crossrank_from_traces,
                                                last_arrivals)
from opgraph.api import load
from opgraph.model.trace_graph import TraceGraph
from opgraph.schemas_util import validation_error

FIX = ROOT / "fixtures" / "multirank"
DLRM = sorted(KINETO_DIR.glob("param_dlrm_8gpu_rank*.pt.trace.json.gz")) if KINETO_DIR.is_dir() else []


def _doc(res) -> str:
    return json.dumps(res.to_dict(), sort_keys=True)


def _files(variant: str) -> list[str]:
    return sorted(str(p) for p in (FIX / variant).glob("rank*.json"))


@pytest.mark.parametrize("variant", ["seq", "noseq"])
@pytest.mark.parametrize("ranks", [None, [0], [0, 2], [1, 2, 3]])
def test_synth_job_equals_job_graph(variant: str, ranks) -> None:
    files = _files(variant)
    job = crossrank_critical_path(load(files), ranks=ranks)
    got = crossrank_from_traces(files, ranks=ranks, workers=2)
    assert _doc(got) == _doc(job)
    assert got.stats["tables"]["tasks"] == 4
    for w in got.steps:
        assert sum(s.dur_ns for s in w.path) == w.span_ns


@pytest.fixture(scope="module")
def dlrm_job():
    if len(DLRM) != 8:
        pytest.skip("the 8-rank DLRM traces are not available")
    return load([str(p) for p in DLRM])


@pytest.mark.parametrize("ranks", [None, [0], [0, 2], [1, 7], [3, 4, 5, 6]])
def test_dlrm_equals_job_graph(dlrm_job, ranks) -> None:
    got = crossrank_from_traces([str(p) for p in DLRM], ranks=ranks, workers=2)
    assert _doc(got) == _doc(crossrank_critical_path(dlrm_job, ranks=ranks))
    (w,) = got.steps
    assert w.length_ns == w.span_ns
    if ranks is None:
        # the path starts on rank 7 and crosses to the slowest rank 1 at a collective
        assert w.window_rank == 1 and w.ranks_on_path == [7, 1]
        assert [c["coll_id"] for c in w.crossings()] == [1]


def test_dlrm_job_ranks_are_the_rank_graphs(dlrm_job) -> None:
    """Every rank's part of the job's boundary DAG picks the same critical predecessors as
    the rank's own graph: the hand-off edges' node-id attributes follow the job's node ids
    (they pointed into rank 0's events before)."""
    from opgraph.multirank.worker import rank_result

    a = dlrm_job.arrays
    d = boundary_dag(dlrm_job, a)
    n_handoff = 0
    for r, path in enumerate(DLRM):
        tg = TraceGraph(rank_result(str(path), True).payload)
        b = tg.arrays
        e = boundary_dag(tg, b)
        m = np.flatnonzero(a.rank == r)
        assert len(m) == b.n and (np.diff(m) == 1).all()
        off = 2 * int(m[0])
        jc = d.cpred[off:off + 2 * b.n]
        assert (np.where(jc >= 0, jc - off, jc) == e.cpred).all(), r
        n_handoff += len(b.out_edges("handoff")[0])
    assert n_handoff > 0


def test_cli_rank_traces_equal_saved_job(tmp_path: Path) -> None:
    job = tmp_path / "job.gpickle"
    r = _run_cli(["build", str(FIX / "seq"), "-o", str(job)])
    assert r.exit_code == 0, r.stderr
    for extra in ([], ["--ranks", "0,2"]):
        a = _run_cli(["critical-path", str(job), "--json", *extra])
        b = _run_cli(["critical-path", str(FIX / "seq"), "--json", "--workers", "2", *extra])
        assert a.exit_code == 0 and b.exit_code == 0, (a.stderr, b.stderr)
        da, db = json.loads(a.stdout), json.loads(b.stdout)
        assert validation_error(db, "critical-path.schema.json") is None
        assert db == da
    t = _run_cli(["critical-path", str(FIX / "seq"), "--workers", "1"])
    assert t.exit_code == 0 and "crosses rank" in t.stdout, t.stdout


def test_cli_errors(tmp_path: Path) -> None:
    r = _run_cli(["critical-path", str(FIX / "seq"), "--ranks", "9"])
    assert_one_line_error(r, FIX / "seq", "--ranks 9", "not in this job")
    r = _run_cli(["critical-path", str(FIX / "seq"), "--window", "all"])
    assert_one_line_error(r, FIX / "seq", "--window")
    one = FIX / "seq" / "rank0.json"
    r = _run_cli(["critical-path", str(one), "--workers", "2"])
    assert_one_line_error(r, one, "--workers")
    # a bad rank trace: one line naming it, exit 2
    d = tmp_path / "ranks"
    d.mkdir()
    for p in _files("seq")[:2]:
        (d / Path(p).name).write_bytes(Path(p).read_bytes())
    bad = d / "rank2.json"
    bad.write_text('{"traceEvents": [{"ph": "X", "name": "x", "ts": 1, "dur": -5, "pid": 1, "tid": 1}]}')
    r = _run_cli(["critical-path", str(bad.parent / "rank*.json"), "--workers", "1"])
    assert_one_line_error(r, bad)


def test_last_arrivals_follows_the_pick() -> None:
    """The model's pick at a collective kernel's end: latest arrival min(start of u, end),
    then priority, then the later source boundary; its own dependency keeps it otherwise."""
    # one collective, three kernels: starts 10, 30, 20; ends 100
    cid = np.zeros(3, np.int64)
    ts = np.array([10, 30, 20], np.int64)
    end = np.full(3, 100, np.int64)
    src = np.array([0, 10, 20], np.int64)
    own_arr, own_pri, own_src = ts.copy(), np.full(3, 3), src.copy()  # their own start (span, priority 3)
    got = last_arrivals(cid, ts, end, src, own_arr, own_pri, own_src)
    assert got.tolist() == [1, -1, 1]  # rank 1 arrived last; it keeps its own start
    # a tie on the arrival: the higher priority (its own span) wins
    ts2 = np.array([30, 30, 20], np.int64)
    got = last_arrivals(cid, ts2, end, src, ts2.copy(), np.full(3, 3), src.copy())
    assert got.tolist() == [-1, -1, 1]  # kernel 2 waits for the later source boundary of the two at 30
    # equal priority: the later source boundary
    got = last_arrivals(cid, ts2, end, src, ts2.copy(), np.full(3, 1), np.array([0, 10, 5]))
    assert got.tolist() == [1, -1, 1]
    # a start after the kernel's own end arrives at that end: the ties go to the later source
    ts3 = np.array([10, 150, 120], np.int64)
    got = last_arrivals(cid, ts3, end, src, np.array([10, 150, 120]), np.full(3, 3), src.copy())
    assert got[0] == 2  # kernels 1 and 2 both arrive at 100; kernel 2's boundary (20) is later
    # no own dependency: the other participant always wins
    got = last_arrivals(np.zeros(2, np.int64), np.array([5, 1]), np.array([9, 9]), np.array([0, 2]),
                        np.array([-1, -1]), np.array([-1, -1]), np.array([-1, -1]))
    assert got.tolist() == [1, 0]


def _chain_alone(d, e: int, bound: int, exits: set[int]) -> tuple[int, int, int]:
    """The end of the chain from ``e``, followed boundary by boundary (the definition)."""
    b, seen = e, []
    while True:
        seen.append(b)
        if b in exits:
            end, x = END_EXIT, b
            break
        if d.cpred[b] < 0:
            end, x = END_NONE, -1
            break
        if d.t[b] <= bound:
            end, x = END_CUT, -1
            break
        b = int(d.cpred[b])
    after = [int(d.t[z]) for z in seen[1:]]
    return end, x, min(after) if after else NO_TIME


def test_rank_chains_ends_and_memo() -> None:
    """Pass 2 on one rank: each entry's end, exit and earliest time after it equal the chain
    followed alone, whatever the other entries and their bounds (walks share boundaries)."""
    from opgraph.analysis.crossrank_workers import rank_chains

    path = _files("seq")[0]
    tg = load(path)
    d = boundary_dag(tg, tg.arrays)
    a = d.arr
    ends = 2 * np.flatnonzero(a.is_activity) + 1
    entries = ends[-40::3]
    exits = ends[-60:-45:2]
    t = d.t
    bounds = np.array([int(t[e]) - k * 50_000 if k % 3 else -(1 << 62) for k, e in enumerate(entries)], np.int64)
    got = rank_chains(path, None, entries, bounds, exits)
    kinds = set()
    for i, (e, bnd) in enumerate(zip(entries.tolist(), bounds.tolist())):
        want = _chain_alone(d, e, bnd, set(exits.tolist()))
        have = (int(got["end"][i]), int(got["x"][i]), int(got["m"][i]))
        kinds.add(want[0])
        if want[0] != END_CUT:
            assert have == want, (i, have, want)
        elif have[0] != END_CUT:
            # the chain met one walked with a lower bound, which went further: its end holds
            assert _chain_alone(d, e, -(1 << 62), set(exits.tolist())) == have
    assert {END_EXIT, END_NONE} & kinds


def test_api_on_rank_traces() -> None:
    """``opgraph.critical_path`` given a job's rank traces (a folder or a list) computes
    the path rank by rank, with the job graph's answer."""
    import opgraph

    files = _files("noseq")
    job = _doc(crossrank_critical_path(load(files), ranks=[1, 2]))
    assert _doc(opgraph.critical_path(files, ranks=[1, 2], workers=1)) == job
    assert _doc(opgraph.critical_path(FIX / "noseq", ranks=[1, 2], workers=2)) == job
    with pytest.raises(ValueError, match="window"):
        opgraph.critical_path(FIX / "noseq", window="all")


def _copy_job(tmp: Path, edit) -> list[str]:
    """The seq fixture's rank traces, each passed through ``edit(rank, doc)``, in ``tmp``."""
    out = []
    for r, p in enumerate(_files("seq")):
        doc = json.loads(Path(p).read_text())
        edit(r, doc)
        q = tmp / f"rank{r}.json"
        q.write_text(json.dumps(doc))
        out.append(str(q))
    return out


def test_rank_without_steps_in_one_round(tmp_path: Path) -> None:
    """A rank without ProfilerSteps has one window over its whole trace, which holds every
    other step's entries: their chains are walked back far enough at once."""
    def drop_steps(r: int, doc: dict) -> None:
        if r == 0:
            doc["traceEvents"] = [e for e in doc["traceEvents"] if not str(e.get("name", "")).startswith("ProfilerStep")]

    files = _copy_job(tmp_path, drop_steps)
    for ranks in (None, [0, 2]):
        got = crossrank_from_traces(files, ranks=ranks, workers=1)
        assert _doc(got) == _doc(crossrank_critical_path(load(files), ranks=ranks))
        assert got.stats["chains"]["rounds"] == 1
    assert -1 in [w.step for w in got.steps]


def test_collectives_in_contradicting_order_are_one_line(tmp_path: Path) -> None:
    """Rank 1 ran two collectives in the other ranks' opposite order, yet they match: the
    critical predecessors run in a circle across ranks. Both computations say so (never a
    path that silently stops short of its window)."""
    from opgraph.analysis.critical_path.engine import CircularPath

    def swap(r: int, doc: dict) -> None:
        if r != 1:
            return
        ev = doc["traceEvents"]
        ks = [e for e in ev if e.get("cat") == "kernel" and e["name"].startswith("nccl")]
        rp = [e for e in ev if e.get("name") == "record_param_comms"]
        for lst in (ks, rp):
            a, b = lst[0], lst[1]
            a["args"], b["args"] = b["args"], a["args"]
            if lst is ks:
                a["name"], b["name"] = b["name"], a["name"]

    files = _copy_job(tmp_path, swap)
    with pytest.raises(CircularPath, match="circle"):
        crossrank_critical_path(load(files))
    with pytest.raises(CircularPath, match="circle"):
        crossrank_from_traces(files, workers=1)
    r = _run_cli(["critical-path", str(tmp_path), "--workers", "1"])
    assert_one_line_error(r, tmp_path, "circle", "contradict")
    job = tmp_path / "job.gpickle"
    assert _run_cli(["build", str(tmp_path), "-o", str(job)]).exit_code == 0
    assert_one_line_error(_run_cli(["critical-path", str(job)]), job, "circle")


def test_one_rank_job_and_no_ranks(tmp_path: Path) -> None:
    """A folder holding only rank 0: lanes are named as in its job graph (no rank prefix).
    An empty ``ranks`` is the job graph's error."""
    (tmp_path / "rank0.json").write_bytes(Path(_files("seq")[0]).read_bytes())
    files = [str(tmp_path / "rank0.json")]
    job = load(str(tmp_path))
    assert isinstance(job.graph.get("job"), dict)
    assert _doc(crossrank_from_traces(files, workers=1)) == _doc(crossrank_critical_path(job))
    for fn in (lambda: crossrank_from_traces(_files("seq"), ranks=[], workers=1),
               lambda: crossrank_critical_path(load(_files("seq")), ranks=[])):
        with pytest.raises(ValueError, match="none of ranks none"):
            fn()
