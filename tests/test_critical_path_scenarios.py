"""Each critical-path mechanism on a synthesized trace with the exact expected path
(opgraph/testing/synth_paths.py: segments, owners, breakdown, inferred share), through the
library and through ``opgraph critical-path --json`` (validated by its schema)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import prose, table_headers

from opgraph.analysis.critical_path.boundary_edges import CATEGORIES
from opgraph.analysis.critical_path.path import critical_path
from opgraph.graph.io import load_any
from opgraph.schemas_util import validate
from opgraph.testing.synth_paths import (
    BASE_US, IDLE_SCENARIOS, PATH_SCENARIOS, idle_scenario, path_scenario, write_path_scenario,
)

BASE_NS = BASE_US * 1000


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("paths")
    return {n: write_path_scenario(path_scenario(n), d) for n in PATH_SCENARIOS}


def _rel(ns: int) -> float:
    return (ns - BASE_NS) / 1000.0


@pytest.mark.parametrize("name", PATH_SCENARIOS)
def test_path_is_exact(name: str, written: dict[str, Path]) -> None:
    sc = path_scenario(name)
    G = load_any(str(written[name]))
    res = critical_path(G)
    assert [w.name for w in res.windows] == [w["name"] for w in sc.windows]
    for w, exp in zip(res.windows, sc.windows):
        assert (_rel(w.start_ns), _rel(w.end_ns)) == (exp["start_us"], exp["end_us"])
        got = [(_rel(s.start_ns), _rel(s.end_ns), s.bound_by, s.name if s.eid is not None else None) for s in w.path]
        want = [(s["start_us"], s["end_us"], s["bound_by"], s["owner"]) for s in exp["path"]]
        assert got == want
        assert w.length_ns == w.span_ns
        b = {c: v / 1000.0 for c, v in w.breakdown_ns.items() if v}
        assert b == exp["breakdown_us"]
        assert w.inferred_ns / 1000.0 == exp["inferred_us"]
        # an event is charged only time inside its own interval
        for s in w.path:
            if s.eid is not None:
                d = G.nodes[s.eid]
                assert d["ts"] <= s.start_ns and s.end_ns <= d["ts"] + d["dur"]
    if sc.summary:
        s = res.summary()
        for k in ("span_us", "sum_span_us", "overlap_us", "length_us"):
            assert s[k] == sc.summary[k], k
        assert {c: v for c, v in s["breakdown_us"].items() if v} == sc.summary["breakdown_us"]


def test_handoff_edges_carry_their_evidence(written: dict[str, Path]) -> None:
    G = load_any(str(written["autograd_handoff"]))
    ho = [(u, v, d) for u, v, d in G.edges(data=True) if d["kind"] == "handoff"]
    assert len(ho) == 1
    u, v, d = ho[0]
    N = G.nodes
    assert (N[u]["name"], N[v]["name"]) == ("MmBackward", "Optimizer.step")
    assert d["inferred"] is True and d["evidence"] == "burst"
    assert N[d["first"]]["name"] == "MmBackward" and N[d["wait_from"]]["name"] == "aten::ones_like"
    assert (d["wait_from_at"], d["resume_at"]) == ("end", "start")
    codes = {h["code"] for h in G.graph["health"]}
    assert "handoff_inferred" in codes
    G2 = load_any(str(written["sequence_number"]))
    fb = [(u, v, d) for u, v, d in G2.edges(data=True) if d["kind"] == "flow" and d.get("cat") == "fwdbwd"]
    assert [(G2.nodes[u]["name"], G2.nodes[v]["name"], d["inferred"], d["evidence"]) for u, v, d in fb] == \
           [("aten::mm", "MmBackward", True, "sequence_number")]
    G3 = load_any(str(written["fwdbwd_flow"]))
    fb = [d for *_, d in G3.edges(data=True) if d["kind"] == "flow" and d.get("cat") == "fwdbwd"]
    assert len(fb) == 1 and not fb[0].get("inferred")


def test_untraced_names_its_thread_and_events(written: dict[str, Path]) -> None:
    G = load_any(str(written["untraced_gap"]))
    w = critical_path(G).windows[0]
    (s,) = [s for s in w.path if s.bound_by == "untraced"]
    assert s.eid is None and s.lane == "thread 1/1" and s.edge == "top"
    assert (G.nodes[s.from_eid]["name"], G.nodes[s.to_eid]["name"]) == ("op1", "op2")
    lw = w.longest_wait
    assert lw is s


@pytest.mark.parametrize("name", PATH_SCENARIOS)
def test_cli_json_matches_and_validates(name: str, written: dict[str, Path], cli) -> None:
    r = cli(["critical-path", str(written[name]), "--json"])
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    validate(doc, "critical-path.schema.json")
    sc = path_scenario(name)
    for w, exp in zip(doc["windows"], sc.windows):
        assert {c: v for c, v in w["breakdown_us"].items() if v} == {c: float(v) for c, v in exp["breakdown_us"].items()}
        assert w["inferred_us"] == exp["inferred_us"]
        assert set(w["breakdown_us"]) == set(CATEGORIES)
    assert doc["summary"]["span_us"] <= doc["summary"]["sum_span_us"]


def test_cli_table_says_how_sure(written: dict[str, Path], cli) -> None:
    r = cli(["critical-path", str(written["overlapping_windows"])])
    assert r.exit_code == 0, r.stderr
    out = prose(r.stdout)
    assert "windows overlap by 130 µs" in out
    r = cli(["critical-path", str(written["autograd_handoff"])])
    out = prose(r.stdout)
    assert "inferred dependencies carry 50 µs (5.2 %) of the path" in out
    assert "longest wait: thread_wait 20 µs on thread 1/2 (aten::ones_like -> MmBackward) [inferred]" in out


# ------------------------------------------------------------------ idle split by cause
@pytest.mark.parametrize("name", IDLE_SCENARIOS)
def test_idle_causes_exact(name: str, tmp_path: Path, cli) -> None:
    from opgraph.analysis.idle import idle_time

    sc = idle_scenario(name)
    p = write_path_scenario(sc, tmp_path)
    G = load_any(str(p))
    res = idle_time(G)
    (d,) = res.devices
    assert {k: v / 1000 for k, v in d.causes_ns.items()} == sc.idle["device"]
    assert sum(d.causes_ns.values()) == d.idle_ns
    assert {k: v / 1000 for k, v in d.device_wait_by_ns.items()} == sc.idle.get("device_wait_by", {})
    assert {k: v / 1000 for k, v in d.launch_unknown_by_ns.items()} == sc.idle.get("launch_unknown_by", {})
    for s in res.streams:
        assert sum(s.causes_ns.values()) == s.idle_ns
        if s.stream in sc.idle.get("streams", {}):
            assert {k: v / 1000 for k, v in s.causes_ns.items()} == sc.idle["streams"][s.stream]
    top = res.blame("top")
    assert {n: b / 1000 for n, b in zip(top["name"], top["blame_ns"])} == sc.idle["blame_top"]
    assert int(top["blame_ns"].sum()) == d.cpu_induced_idle_ns
    r = cli(["idle", str(p), "--json"])
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    validate(doc, "idle.schema.json")
    assert doc["devices"][0]["causes_us"] == {k: float(v) for k, v in sc.idle["device"].items()}


# ------------------------------------------------------------------ waits the trace shows (issue 30)
def test_synchronous_launch_is_a_wait_and_moves_with_its_kernel(written: dict[str, Path]) -> None:
    """The launch call that returned after its own kernel ended carries the evidence, the
    health lists it, and halving the kernel shortens the step by half the kernel (315 µs):
    the call's end waited for it."""
    from opgraph.predict.whatif import parse_transforms
    from opgraph.predict.prediction import predict

    G = load_any(str(written["synchronous_launch"]))
    ev = [d.get("evidence") for *_, d in G.edges(data=True) if d["kind"] == "launch"]
    assert ev == ["synchronous_launch"]
    assert "synchronous_launch_inferred" in {h["code"] for h in G.graph["health"]}
    res = predict(G, parse_transforms(scale_kernels=[".*=0.5"])).to_dict()
    (st,) = res["steps"]
    assert st["measured_us"] == 1000 and st["predicted_us"] == 685
    res = predict(G, parse_transforms(scale_kernels=[".*=2"])).to_dict()
    assert res["steps"][0]["predicted_us"] == 1630


def test_profiler_stop_tail_is_flagged(written: dict[str, Path], cli) -> None:
    G = load_any(str(written["profiler_stop_tail"]))
    (w,) = critical_path(G).windows
    assert w.profiler_stop_tail_ns == 2_600_000
    (s,) = [s for s in w.path if s.edge == "profiler_stop_tail"]
    assert (s.bound_by, s.name, _rel(s.start_ns), _rel(s.end_ns)) == ("untraced", "ProfilerStep#1", 400, 3000)
    doc = json.loads(cli(["critical-path", str(written["profiler_stop_tail"]), "--json"]).stdout)
    assert doc["windows"][0]["profiler_stop_tail_us"] == 2600.0
    # a silence shorter than PROFILER_TAIL_MIN_NS is no stop tail
    G2 = load_any(str(written["synchronous_launch"]))
    assert critical_path(G2).windows[0].profiler_stop_tail_ns == 0


def test_late_resume_carries_its_evidence(written: dict[str, Path]) -> None:
    G = load_any(str(written["late_resume"]))
    ho = [(G.nodes[u]["name"], G.nodes[v]["name"], d["evidence"]) for u, v, d in G.edges(data=True)
          if d["kind"] == "handoff"]
    assert ho == [("MmBackward", "## backward ##", "late_resume")]
    (w,) = critical_path(G).windows
    late = [s for s in w.path if s.edge == "late_resume"]
    assert [(s.bound_by, _rel(s.start_ns), _rel(s.end_ns), s.inferred) for s in late] == \
        [("untraced", 10000, 15000, True)]


def test_dataloader_wait_in_path_and_idle(tmp_path: Path, cli) -> None:
    """The DataLoader's wait is ``data_loading`` on the path (the step is "bound by" it) and
    in the device's idle, where it is not blamed on any op; causes sum to the idle."""
    from opgraph.analysis.idle import idle_time

    sc = path_scenario("dataloader_wait")
    p = write_path_scenario(sc, tmp_path)
    G = load_any(str(p))
    assert critical_path(G).windows[0].bound == "data_loading"
    res = idle_time(G)
    (d,) = res.devices
    assert {k: v / 1000 for k, v in d.causes_ns.items()} == sc.idle["device"]
    top = res.blame("top")
    assert {n: b / 1000 for n, b in zip(top["name"], top["blame_ns"])} == sc.idle["blame_top"]
    doc = json.loads(cli(["idle", str(p), "--json"]).stdout)
    validate(doc, "idle.schema.json")
    assert doc["devices"][0]["causes_us"]["data_loading"] == 1990.0
# ------------------------------------------------------------------ what-ifs on the scenarios
def _scenario(name: str):
    return path_scenario(name) if name in PATH_SCENARIOS else idle_scenario(name)


WHATIF_CASES = [(n, i) for n in PATH_SCENARIOS + IDLE_SCENARIOS for i in range(len(_scenario(n).whatifs))]


@pytest.mark.parametrize("name,i", WHATIF_CASES)
def test_whatifs_move_as_constructed(name: str, i: int, written: dict[str, Path], tmp_path: Path) -> None:
    from opgraph.predict.whatif import parse_transforms
    from opgraph.predict.prediction import predict

    sc = _scenario(name)
    wi = sc.whatifs[i]
    G = load_any(str(written[name] if name in written else write_path_scenario(sc, tmp_path)))
    res = predict(G, parse_transforms(**wi["transforms"]))
    got = {r["name"]: r["predicted"].span_ns / 1000.0 for r in res.steps()}
    assert got == wi["predicted_us"]


def test_stream_wait_reaches_the_awaited_work(written: dict[str, Path], tmp_path: Path) -> None:
    """The held kernel depends on the GEMM the thread launched on another stream before its
    cudaStreamWaitEvent (evidence ``stream_wait_work``) and on the call; the evidence is
    decoded into the analyses' columns and survives a save as node-link JSON."""
    from opgraph.graph.io import save_graph

    G = load_any(str(written["stream_wait_work"]))
    N = G.nodes
    waits = sorted((N[u]["name"], N[v]["name"], d["evidence"], d["inferred"])
                   for u, v, d in G.edges(data=True) if d["kind"] == "event_wait")
    assert waits == [("cudaStreamWaitEvent", "k_after_wait", "stream_wait_call", True),
                     ("sgemm_128x64_nn", "k_after_wait", "stream_wait_work", True)]
    assert "stream_wait_work_inferred" in {h["code"] for h in G.graph["health"]}
    a = G.arrays
    ws, _ = a.out_edges("event_wait")
    ev = dict(zip(a.name[ws].tolist(), a.edge_attr("event_wait", "evidence", None).tolist()))
    assert ev == {"cudaStreamWaitEvent": "stream_wait_call", "sgemm_128x64_nn": "stream_wait_work"}
    out = tmp_path / "g.json.gz"
    save_graph(G, out)
    G2 = load_any(str(out))
    assert sorted(d["evidence"] for *_, d in G2.edges(data=True) if d["kind"] == "event_wait") == \
        ["stream_wait_call", "stream_wait_work"]
    # the saved model's columns decode it too
    G3 = load_any(str(written["stream_wait_work"]))
    a3 = G3.arrays
    assert sorted(a3.edge_attr("event_wait", "evidence", None).tolist()) == ["stream_wait_call", "stream_wait_work"]


def test_launch_unknown_in_the_tables(tmp_path: Path, cli) -> None:
    """The text output has the launch_unknown column and names the busy thread; the gaps
    table carries the cause per gap."""
    from opgraph.analysis.idle import idle_time

    p = write_path_scenario(idle_scenario("idle_launch_unknown"), tmp_path)
    r = cli(["idle", str(p)])
    assert r.exit_code == 0, r.stderr
    out = prose(r.stdout)
    assert "launch unknown" in table_headers(r.stdout)
    assert "GPU 0 launch_unknown 550 µs: activities with no launch record while thread 1/1" in out
    g = idle_time(load_any(str(p))).tables()["gaps"]
    assert g["launch_unknown"].tolist() == [300.0, 250.0, 0.0]
