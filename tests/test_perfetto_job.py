"""``opgraph export job.gpickle --perfetto``: the whole multi-rank job in one Perfetto trace
(docs/multirank.md, "Opening a job in Perfetto").

On the synthesized 4-rank job (answers known by construction, built by the real ingest):
every kept rank's events once, pids disjoint per rank, ts exactly on the aligned clock, one
collective flow per non-last participant of each matched collective, collective args equal
to the modelled waits, path markers tiling each step's cross-rank path; ``--keep 0,1``
lists the others as summarised. On the 8-rank DLRM set: it runs, validates and adds no
structural problem. Formats without a job writer still need ``--rank``.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from conftest import KINETO_DIR, ROOT, _run_cli, assert_one_line_error
from opgraph.analysis.crossrank import crossrank_critical_path
from opgraph.analysis.stragglers import kernel_waits
from opgraph.export.perfetto.check import check_chrome_trace, load_trace_doc
from opgraph.export.perfetto.overlay import ARG_PREFIX, FLOW_CAT
from opgraph.export.perfetto.job import COLL_FLOW_CAT, SEGMENT_CAT, SUMMARISED_CAT, pid_stride
from opgraph.graph.io import load_any
from opgraph.ingest.readers import read_trace
from opgraph.schemas_util import validation_error

FIX = ROOT / "fixtures" / "multirank"
SEQ = FIX / "seq"
DLRM = sorted(KINETO_DIR.glob("param_dlrm_8gpu_rank*.pt.trace.json.gz")) if KINETO_DIR.is_dir() else []


def _build(src: list[str], out: Path, *extra: str) -> Path:
    r = _run_cli(["build", *src, "-o", str(out), "--workers", "1", *extra])
    assert r.exit_code == 0, r.stderr
    return out


def _export(job: Path, out: Path) -> Path:
    r = _run_cli(["export", str(job), "--perfetto", str(out)])
    assert r.exit_code == 0, r.stderr
    assert "ui.perfetto.dev" in r.stderr
    return out


@pytest.fixture(scope="module")
def synth(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The seq job in full and with ``--keep 0,1``, each built and exported by the CLI."""
    d = tmp_path_factory.mktemp("perfetto_job")
    full = _build([str(SEQ)], d / "job.gpickle")
    keep = _build([str(SEQ)], d / "keep01.gpickle", "--keep", "0,1")
    return {"job": full, "out": _export(full, d / "job.json.gz"),
            "keep": keep, "keep_out": _export(keep, d / "keep01.json")}


def _answers() -> dict[str, Any]:
    return json.loads((FIX / "seq.answers.json").read_text())


def _job_doc(doc: dict[str, Any]) -> dict[str, Any]:
    return doc["opgraph"]["job"]


def _rank_of_pid(pid: Any, stride: int) -> int:
    return int(pid) // stride


def _valid(doc: dict[str, Any]) -> None:
    assert validation_error(doc, "perfetto-trace.schema.json") is None
    assert check_chrome_trace(doc) == []


# --------------------------------------------------------------------------- events
def test_every_kept_rank_once_distinct_pids_aligned(synth: dict[str, Path]) -> None:
    """Each rank's events, in file order, exactly once; its pids only its own; ts = the
    rank's own ts + its clock offset, exact to the ns; args unchanged but for opgraph's."""
    G = load_any(str(synth["job"]))
    doc = load_trace_doc(synth["out"])
    _valid(doc)
    jd = _job_doc(doc)
    stride = jd["pid_stride"]
    assert stride == pid_stride([0, 1, 2, 3], 4) == 10**7
    assert jd["kept_ranks"] == [0, 1, 2, 3] and jd["summarised_ranks"] == []
    after = read_trace(synth["out"]).events  # exact ns, through opgraph's own reader
    offsets = {int(r["rank"]): int(r["clock_offset_ns"]) for r in G.graph["job"]["ranks"]}
    assert offsets[1] != 0 and offsets[2] != 0  # the skews are real
    lo = 0
    pid_sets = []
    for lay in jd["ranks"]:
        r = lay["rank"]
        own = read_trace(SEQ / f"rank{r}.json").events
        hi = lo + len(own)
        blk = after.iloc[lo:hi]
        assert blk["name"].astype(str).tolist() == own["name"].astype(str).tolist()
        assert blk["ph"].astype(str).tolist() == own["ph"].astype(str).tolist()
        has = own["has_ts"].to_numpy()
        assert np.array_equal(blk["ts_ns"].to_numpy()[has], own["ts_ns"].to_numpy()[has] + offsets[r])
        assert np.array_equal(blk["dur_ns"].to_numpy(), own["dur_ns"].to_numpy())
        # pids: inside the rank's block, mapped back to the originals by the job key
        new = blk["pid"].astype(object).to_numpy()
        assert all(_rank_of_pid(p, stride) == r and int(p) % stride >= 1 for p in new.tolist())
        back = [lay["pids"][str(int(p))] for p in new.tolist()]
        assert back == own["pid"].astype(object).tolist()
        pid_sets.append(set(int(p) for p in new.tolist()))
        # args: the original ones once opgraph's keys are set aside (process names prefixed)
        for a, b, nm in zip(blk["args"].tolist(), own["args"].tolist(), own["name"].astype(str).tolist()):
            got = {k: v for k, v in (a or {}).items() if not k.startswith(ARG_PREFIX)} if a is not None else None
            if nm == "process_name":
                assert got["name"] == f"rank {r} \u2014 {b['name']}"
                assert a[ARG_PREFIX + "rank"] == r
            else:
                assert got == b
        lo = hi
    assert lo == len(G.graph["events"])
    for i, s in enumerate(pid_sets):
        for t in pid_sets[i + 1:]:
            assert not s & t
    # every process of the trace is named once, "rank r — ..." for ranks' processes
    names = [e for e in doc["traceEvents"] if e.get("ph") == "M" and e.get("name") == "process_name"]
    assert len({e["pid"] for e in names}) == len(names)
    for e in names:
        if e["pid"] != jd["path_pid"]:
            assert e["args"]["name"].startswith(f"rank {_rank_of_pid(e['pid'], stride)} \u2014 ")


# --------------------------------------------------------------------------- collectives
def test_collective_flows_and_args(synth: dict[str, Path]) -> None:
    """One flow per non-last participant per matched collective, from the last rank's
    kernel to the participant's; the kernels' args are the modelled waits and lateness."""
    ans = _answers()
    doc = load_trace_doc(synth["out"])
    stride = _job_doc(doc)["pid_stride"]
    events = doc["traceEvents"]
    flows = [e for e in events if e.get("cat") == COLL_FLOW_CAT]
    s = {e["id"]: e for e in flows if e["ph"] == "s"}
    f = {e["id"]: e for e in flows if e["ph"] == "f"}
    assert set(s) == set(f)
    expected = sum(len(c["wait_ns"]) - 1 for c in ans["collectives"])
    assert len(s) == expected == 27
    per_coll = Counter()
    for i, a in s.items():
        b = f[i]
        assert a["args"] == b["args"]
        assert _rank_of_pid(a["pid"], stride) == a["args"]["last_rank"] == ans["slow_rank"]
        assert _rank_of_pid(b["pid"], stride) == b["args"]["to_rank"] != a["args"]["last_rank"]
        assert a["ts"] == b["ts"] and b["bp"] == "e"
        per_coll[a["args"]["coll_id"]] += 1
    assert sorted(per_coll.values()) == [3] * 9
    # args on the collective kernels (job event ids = rows of the exported original events)
    G = load_any(str(synth["job"]))
    w = kernel_waits(G.graph["job"]["collectives"])
    want_wait = {}  # (coll_id order by first arrival, rank) -> ns from the model
    order = w.groupby("coll_id")["ts"].min().sort_values().index.tolist()
    for k, c in zip(order, sorted(ans["collectives"], key=lambda c: min(c["arrival_ns"].values()))):
        for r, v in c["wait_ns"].items():
            want_wait[(k, int(r))] = (v, c["lateness_ns"], c["last_rank"])
    assert len(want_wait) == len(w) == 36
    for node, cid, r in zip(w["node"].tolist(), w["coll_id"].tolist(), w["rank"].tolist()):
        a = events[node]["args"]
        v, lat, last = want_wait[(cid, r)]
        assert a[ARG_PREFIX + "coll_id"] == cid and a[ARG_PREFIX + "last_rank"] == last
        assert round(a[ARG_PREFIX + "wait_us"] * 1000) == v
        assert round(a[ARG_PREFIX + "lateness_us"] * 1000) == lat


# --------------------------------------------------------------------------- the path
def test_critical_path_markers(synth: dict[str, Path]) -> None:
    """Per step, the path-segment slices sum to the cross-rank path length (= the slowest
    rank's span, from the model); the args on events sum to the same in total; the path's
    crossing between ranks is a critical-path flow from one rank's pids to the other's."""
    ans = _answers()
    G = load_any(str(synth["job"]))
    cr = crossrank_critical_path(G)
    out = read_trace(synth["out"]).events
    seg = out[out["cat"].astype(str) == SEGMENT_CAT]
    step_of = np.array([a[ARG_PREFIX + "step"] for a in seg["args"].tolist()])
    per_step = pd.Series(seg["dur_ns"].to_numpy()).groupby(step_of).sum().to_dict()
    assert per_step == {w.step: w.length_ns for w in cr.steps}
    assert per_step == {s["step"]: s["path_length_ns"] for s in ans["steps"]}
    # segments tile each step's window: contiguous, from its start to its end
    for w in cr.steps:
        m = step_of == w.step
        ts, dur = seg["ts_ns"].to_numpy()[m], seg["dur_ns"].to_numpy()[m]
        assert ts[0] == w.start_ns and ts[-1] + dur[-1] == w.end_ns
        assert np.array_equal(ts[1:], ts[:-1] + dur[:-1])
        assert {a[ARG_PREFIX + "rank"] for a in seg["args"].to_numpy()[m].tolist()} == set(w.ranks_on_path)
    doc = load_trace_doc(synth["out"])
    jd = _job_doc(doc)
    n = len(G.graph["events"])
    crit = [e for e in doc["traceEvents"][:n] if (e.get("args") or {}).get(ARG_PREFIX + "critical")]
    # time on events + time between events (on the event it leads to) = the path length
    total = sum((e.get("args") or {}).get(ARG_PREFIX + "critical_us", 0)
                + (e.get("args") or {}).get(ARG_PREFIX + "waited_before_us", 0) for e in doc["traceEvents"][:n])
    assert round(total * 1000) == sum(w.length_ns for w in cr.steps)
    assert {_rank_of_pid(e["pid"], jd["pid_stride"]) for e in crit} == {0, 2}
    # the crossing edge: a critical-path flow from the late rank's kernel to the waiting one's
    fl = [e for e in doc["traceEvents"] if e.get("cat") == FLOW_CAT]
    s = {e["id"]: e for e in fl if e["ph"] == "s"}
    f = {e["id"]: e for e in fl if e["ph"] == "f"}
    pairs = [(_rank_of_pid(s[i]["pid"], jd["pid_stride"]), _rank_of_pid(f[i]["pid"], jd["pid_stride"])) for i in s]
    crossing = [(a, b) for a, b in pairs if a != b]
    want = [(c["from_rank"], c["to_rank"]) for w in cr.steps for c in w.crossings()]
    assert len(want) == 3 and sorted(crossing) == sorted(want)
    assert [round(p["length_us"] * 1000) for p in jd["critical_path"]] == [w.length_ns for w in cr.steps]


# --------------------------------------------------------------------------- summarised ranks
def test_keep_lists_the_others_as_summarised(synth: dict[str, Path]) -> None:
    """``--keep 0,1``: ranks 2 and 3 are listed as summarised, none of their original
    events is written, their collectives are drawn from the collective table (aligned)
    and the collective flows from the (summarised) last rank still reach every rank."""
    doc = load_trace_doc(synth["keep_out"])
    _valid(doc)
    jd = _job_doc(doc)
    assert jd["kept_ranks"] == [0, 1] and jd["summarised_ranks"] == [2, 3]
    assert [r["full"] for r in jd["ranks"]] == [True, True, False, False]
    stride = jd["pid_stride"]
    G = load_any(str(synth["keep"]))
    n = len(G.graph["events"])
    assert {_rank_of_pid(e["pid"], stride) for e in doc["traceEvents"][:n]} == {0, 1}
    summ = [e for e in doc["traceEvents"] if e.get("cat") == SUMMARISED_CAT]
    coll = G.graph["job"]["collectives"]
    c23 = coll[coll["rank"].isin([2, 3])]
    assert len(summ) == len(c23) == 18
    assert sorted(round(e["ts"] * 1000) % 10**9 for e in summ) == sorted(x % 10**9 for x in c23["ts"].tolist())
    assert {e["pid"] for e in summ} == {2 * stride, 3 * stride}
    flows = [e for e in doc["traceEvents"] if e.get("cat") == COLL_FLOW_CAT and e["ph"] == "s"]
    assert len(flows) == 27 and {_rank_of_pid(e["pid"], stride) for e in flows} == {2}
    names = {e["pid"]: e["args"]["name"] for e in doc["traceEvents"]
             if e.get("ph") == "M" and e.get("name") == "process_name"}
    assert "summarised" in names[2 * stride] and "summarised" in names[3 * stride]
    # the path stays on the kept ranks; waits for rank 2 show as gpu_comm_wait
    seg = [e for e in doc["traceEvents"] if e.get("cat") == SEGMENT_CAT]
    assert {e["args"][ARG_PREFIX + "rank"] for e in seg} <= {0, 1}
    assert any(e["name"] == "gpu_comm_wait" and e["args"][ARG_PREFIX + "wait_for_rank"] == 2 for e in seg)


# --------------------------------------------------------------------------- CLI
def test_job_other_formats_need_rank(synth: dict[str, Path], tmp_path: Path) -> None:
    job = synth["job"]
    r = _run_cli(["export", str(job), "--dot", str(tmp_path / "j.dot")])
    assert_one_line_error(r, job, "multi-rank job graph", "--rank")
    assert not (tmp_path / "j.dot").exists()
    r = _run_cli(["export", str(job), "--perfetto", str(tmp_path / "j.json"), "--dot", str(tmp_path / "j.dot")])
    assert_one_line_error(r, job, "--rank")
    r = _run_cli(["export", str(job), "--perfetto", str(tmp_path / "j.json"), "--window", "all"])
    assert_one_line_error(r, job, "--window", "--rank")


def test_job_rank_option_still_single_rank(synth: dict[str, Path], tmp_path: Path) -> None:
    """``--rank 1`` writes rank 1 alone, on its own clock, like its file's overlay."""
    out = tmp_path / "r1.json"
    r = _run_cli(["export", str(synth["job"]), "--perfetto", str(out), "--rank", "1"])
    assert r.exit_code == 0, r.stderr
    doc = load_trace_doc(out)
    assert "opgraph" not in doc and validation_error(doc, "perfetto-trace.schema.json") is None
    got = read_trace(out).events
    own = read_trace(SEQ / "rank1.json").events
    n = len(own)
    assert np.array_equal(got["ts_ns"].to_numpy()[:n], own["ts_ns"].to_numpy())
    assert got["pid"].astype(object).tolist()[:n] == own["pid"].astype(object).tolist()


# --------------------------------------------------------------------------- real: DLRM
def _problem_kinds(problems: list[str]) -> Counter:
    """Problems without the event index and pid (which the job export renumbers)."""
    def norm(p: str) -> str:
        p = re.sub(r"id=\d+", "id=N", re.sub(r"\(events \[[\d, ]+\]\)", "(events)", p))
        return re.sub(r"^#\d+ (\S+) (.*?) pid=\S+ ", r"\1 \2 ", p)
    return Counter(norm(p) for p in problems)


@pytest.mark.skipif(len(DLRM) != 8, reason=f"the 8-rank DLRM set is not in {KINETO_DIR}")
def test_dlrm_job_export(tmp_path: Path) -> None:
    job = _build([str(p) for p in DLRM], tmp_path / "dlrm.gpickle")
    out = _export(job, tmp_path / "dlrm.json.gz")
    doc = load_trace_doc(out)
    assert validation_error(doc, "perfetto-trace.schema.json") is None
    jd = _job_doc(doc)
    assert jd["kept_ranks"] == list(range(8)) and jd["summarised_ranks"] == []
    G = load_any(str(job))
    n = len(G.graph["events"])
    assert n == sum(r["n_events"] for r in jd["ranks"])
    # no problem on opgraph's additions; on the originals, only those the inputs had
    probs = check_chrome_trace(doc)
    assert [p for p in probs if int(p[1:p.index(" ")]) >= n] == []
    ref = Counter()
    for p in DLRM:
        ref += _problem_kinds(check_chrome_trace(p))
    assert not (_problem_kinds(probs) - ref)
    cr = crossrank_critical_path(G)
    flows = [e for e in doc["traceEvents"] if e.get("cat") == COLL_FLOW_CAT and e["ph"] == "s"]
    w = kernel_waits(G.graph["job"]["collectives"])
    assert len(flows) == int((~w["is_last"]).sum()) == 8 * 7
    seg = [e for e in doc["traceEvents"] if e.get("cat") == SEGMENT_CAT]
    assert round(sum(e["dur"] for e in seg) * 1000) == sum(x.length_ns for x in cr.steps) == 19_901_000
