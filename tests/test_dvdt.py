"""OpenCL: dv/dt profiler logs (bare list and CK wrapper; synthetic, no public sample) and
Intel CLIntercept Chrome JSON (synthetic, written the way the tool writes it)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import networkx as nx
import pytest

from opgraph.graph.build import build_graph
from opgraph.ingest.readers import read_trace
from opgraph.analysis.enqueue_stats import enqueue_stats
from opgraph.ingest.dvdt import decode_arg
from opgraph.testing import synth_dvdt

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT / "fixtures" / "dvdt"


@pytest.fixture(scope="module")
def answers() -> dict:
    return json.loads((FIX / "synth.answers.json").read_text())


def test_fixtures_are_current(tmp_path: Path) -> None:
    paths = synth_dvdt.write_fixtures(tmp_path)
    for k, name in (("list", "synth.dvdt.json"), ("ck", "synth_ck.dvdt.json"), ("answers", "synth.answers.json")):
        assert json.loads(paths[k].read_text()) == json.loads((FIX / name).read_text())
    assert synth_dvdt.clintercept_text()[0] == (FIX / "clintercept_trace.json").read_bytes()
    assert synth_dvdt.clintercept_text(True)[0] == (FIX / "clintercept_stages_trace.json").read_bytes()


def test_decode_arg_little_endian() -> None:
    assert decode_arg("e0000000", 4)["int"] == 224
    assert decode_arg("0000803f", 4)["float"] == 1.0
    assert "int" not in decode_arg(None, 8)


@pytest.mark.parametrize("name,reps", [("synth.dvdt.json", 1), ("synth_ck.dvdt.json", 2)])
def test_dvdt_graph(name: str, reps: int, answers: dict) -> None:
    t = read_trace(FIX / name)
    assert t.meta["format"] == "dvdt"
    kinds = t.events["kind"].value_counts()
    assert kinds["runtime"] == answers["records"] * reps
    assert kinds["kernel"] == answers["kernels"] * reps
    assert kinds["memcpy"] == answers["memcpy"] * reps
    assert kinds["cuda_sync"] == answers["syncs"] * reps
    G = build_graph(t)
    ek = Counter(d["kind"] for _, d in [((u, v), d) for u, v, d in G.edges(data=True)])
    assert ek["launch"] == (answers["kernels"] + answers["memcpy"]) * reps
    assert ek["sync"] == answers["syncs"] * reps
    assert nx.is_directed_acyclic_graph(G.to_networkx())
    # the profiler returns from each enqueue only after its command ran (host_ns spans
    # queue + submit + exec): every launch is synchronous, and the only health note says so
    sync = [h for h in G.graph["health"] if h["code"] == "synchronous_launch_inferred"]
    assert [h["code"] for h in G.graph["health"]] == ["synchronous_launch_inferred"]
    assert sync[0]["count"] == len(answers["enqueues"]) * reps
    assert all(e["host_ns"] >= e["queue_ns"] + e["submit_ns"] + e["exec_ns"] for e in answers["enqueues"])
    # device clock aligned: every command starts after its enqueue call started
    for u, v, d in G.edges(data=True):
        if d["kind"] == "launch":
            assert G.nodes[v]["ts"] >= G.nodes[u]["ts"]
    # queues are streams, one per repetition
    assert len({(d["device"], d["stream"]) for _, d in G.nodes(data=True) if d["kind"] == "kernel"}) == reps


def test_sticky_gemm_args(answers: dict) -> None:
    ev = read_trace(FIX / "synth.dvdt.json").events
    gemm = [a["gemm"] for n, a in zip(ev["name"].astype(str), ev["args"]) if n == "XgemmDirectTN" and "gemm" in a]
    assert [[g["M"], g["N"], g["K"]] for g in gemm] == answers["gemm_mnk"]


def test_enqueue_stats(answers: dict) -> None:
    per, cum = enqueue_stats(read_trace(FIX / "synth.dvdt.json"))
    exp = [e for e in answers["enqueues"] if not e["name"].startswith("clEnqueue")]
    assert per["name"].tolist() == [e["name"] for e in exp]
    for col in ("queue", "submit", "exec", "host", "overhead"):
        assert per[f"{col}_us"].tolist() == pytest.approx([e[f"{col}_ns"] / 1e3 for e in exp])
    assert cum["name"].tolist()[0] == "XgemmDirectTN"
    assert dict(zip(cum["name"], cum["exec_total_us"])) == pytest.approx(
        {k: v / 1e3 for k, v in answers["exec_by_kernel_ns"].items()})
    assert cum["exec_pct"].sum() == pytest.approx(100.0)


def test_enqueue_stats_cli(cli) -> None:
    from opgraph.schemas_util import validate

    r = cli(["enqueue-stats", str(FIX / "synth_ck.dvdt.json"), "--json"])
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    validate(doc, "enqueue-stats.schema.json")
    assert doc["kernels"][0]["enqueues"] == 4
    r = cli(["enqueue-stats", str(FIX / "synth.dvdt.json")])
    assert r.exit_code == 0 and "Xgemm" in r.stdout


def test_missing_profiling(tmp_path: Path, cli, one_line_error) -> None:
    recs = json.loads((FIX / "synth.dvdt.json").read_text())
    i = [k for k, r in enumerate(recs) if r["call"] == "clEnqueueNDRangeKernel"][1]
    del recs[i]["profiling"]
    p = tmp_path / "noprof.json"
    p.write_text(json.dumps(recs))
    line = one_line_error(cli(["build", str(p), "-o", str(tmp_path / "g.gpickle")]), p, "profiling", "required")
    assert f"event {i}:" in line


def test_bad_timestamp(tmp_path: Path, cli, one_line_error) -> None:
    recs = json.loads((FIX / "synth.dvdt.json").read_text())
    recs[3]["timestamp"]["start"] = "yesterday"
    p = tmp_path / "ts.json"
    p.write_text(json.dumps(recs))
    one_line_error(cli(["info", str(p)]), p, "timestamp")


def test_ck_without_dvdt(tmp_path: Path, cli, one_line_error) -> None:
    p = tmp_path / "ck.json"
    p.write_text(json.dumps({"characteristics_list": [{"run": {"time_fw_ms": 1.0}}]}))
    one_line_error(cli(["info", str(p)]), p, "dvdt_prof")


# --------------------------------------------------------------------------- CLIntercept
@pytest.mark.parametrize("name", ["clintercept_trace.json", "clintercept_stages_trace.json"])
def test_clintercept(name: str) -> None:
    _, ans = synth_dvdt.clintercept_text("stages" in name)
    t = read_trace(FIX / name)
    assert t.meta["format"] == "clintercept"
    kinds = t.events["kind"].value_counts()
    for k in ("runtime", "kernel", "memcpy", "memset"):
        assert kinds[k] == ans[k], k
    G = build_graph(t)
    ek = Counter(d["kind"] for _, _, d in G.edges(data=True))
    assert ek["launch"] == ans["launch_edges"]
    assert ek["sync"] == 1            # clFinish waits for the last command
    assert nx.is_directed_acyclic_graph(G.to_networkx())
    names = {d["name"] for _, d in G.nodes(data=True) if d["kind"] == "kernel"}
    assert names == {"sgemm_kernel", "relu_kernel"}


def test_clintercept_critical_path_and_idle(cli) -> None:
    for cmd in ("critical-path", "idle"):
        r = cli([cmd, str(FIX / "clintercept_trace.json"), "--json"])
        assert r.exit_code == 0, r.stderr
