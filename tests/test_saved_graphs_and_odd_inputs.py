"""Saved graphs as a trust boundary and odd inputs (issue "Nothing a user does gets a
traceback…"; docs/reliability.md, "Saved graphs and odd inputs"). Every input is generated
here under tmp_path."""

from __future__ import annotations

import json
import pickle
import re
from pathlib import Path

import networkx as nx
import numpy as np
import pytest
from click.testing import CliRunner

import opgraph
from opgraph.analysis.idle import CAUSES, idle_time
from opgraph.cli import main
from opgraph.errors import OpgraphInputError
from opgraph.graph.io import load_any, load_gpickle, save_gpickle

ROOT = Path(__file__).resolve().parents[1]


def run(*args: str):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def assert_one_line(res, path: Path, *words: str) -> None:
    assert res.exit_code == 2, (res.exit_code, res.output)
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert len(lines) == 1, res.output
    assert str(path) in lines[0] and "internal error" not in lines[0]
    for w in words:
        assert w in lines[0], lines[0]


@pytest.fixture(scope="module")
def trace() -> Path:
    return Path(opgraph.example_trace("gpu_bound"))


@pytest.fixture()
def graph_json(tmp_path: Path, trace: Path) -> dict:
    out = tmp_path / "g.json"
    assert run("build", trace, "-o", out).exit_code == 0
    return json.loads(out.read_text())


# --------------------------------------------------------------------------- 1a
def test_pickle_declaring_a_huge_array_is_refused(tmp_path: Path) -> None:
    class Huge:
        def __reduce__(self):
            return np.ndarray, ((2**40,), np.dtype("u1"))
    p = tmp_path / "huge.gpickle"
    p.write_bytes(pickle.dumps(Huge(), protocol=4))
    assert p.stat().st_size < 1000
    with pytest.raises(OpgraphInputError, match="declares a .*-byte array"):
        load_gpickle(p)
    assert_one_line(run("info", p), p, "refused")


def test_pickle_reconstruct_with_huge_shape_is_refused(tmp_path: Path) -> None:
    from numpy._core.multiarray import _reconstruct

    class Huge:
        def __reduce__(self):
            return _reconstruct, (np.ndarray, (2**37,), b"b")
    p = tmp_path / "huge2.gpickle"
    p.write_bytes(pickle.dumps(Huge(), protocol=4))
    assert_one_line(run("critical-path", p), p, "refused")


# --------------------------------------------------------------------------- 1b
@pytest.mark.parametrize("where", ["trace_metadata", "args"])
def test_shared_reference_bomb_is_refused(tmp_path: Path, trace: Path, where: str) -> None:
    G = load_any(trace)
    x: list = []
    for _ in range(60):
        x = [x, x]
    if where == "trace_metadata":
        G.graph["trace_metadata"]["b"] = x
    else:
        k = next(n for n, d in G.nodes(data=True) if d["kind"] == "kernel")
        G.nodes[k]["args"]["b"] = x
    p = tmp_path / "bomb.gpickle"
    save_gpickle(G, p)
    assert p.stat().st_size < 100_000
    for cmd in (("build", p, "-o", tmp_path / "x.json.gz"), ("export", p, "--perfetto", tmp_path / "o.json")):
        assert_one_line(run(*cmd), p, "deep")
    assert not (tmp_path / "x.json.gz").exists()


def test_shallow_shared_reference_bomb_is_refused(tmp_path: Path, trace: Path) -> None:
    G = load_any(trace)
    x: list = list(range(10))
    for _ in range(30):  # depth 30 (allowed), 10 * 2**30 values once written out
        x = [x, x]
    G.graph["trace_metadata"]["b"] = x
    p = tmp_path / "bomb30.gpickle"
    save_gpickle(G, p)
    assert_one_line(run("build", p, "-o", tmp_path / "x.json"), p, "bomb")


# --------------------------------------------------------------------------- 1c
@pytest.mark.parametrize("shape", ["path", "empty", "cycle"])
def test_foreign_digraph_pickle_is_refused(tmp_path: Path, shape: str) -> None:
    G = {"path": nx.path_graph(5, create_using=nx.DiGraph), "empty": nx.DiGraph(),
         "cycle": nx.cycle_graph(4, create_using=nx.DiGraph)}[shape]
    p = tmp_path / f"{shape}.gpickle"
    p.write_bytes(pickle.dumps(G))
    for cmd in ("info", "critical-path"):
        assert_one_line(run(cmd, p), p, "not an opgraph graph", "'events'")


def test_digraph_with_metadata_but_bad_nodes_is_refused(tmp_path: Path, trace: Path) -> None:
    G = load_any(trace).to_networkx()
    n = next(iter(G._node))  # (G.nodes would cache a view, which pickles as a refused global)
    del G._node[n]["kind"]
    p = tmp_path / "nokind.gpickle"
    save_gpickle(G, p)
    assert_one_line(run("info", p), p, f"node {n}", "'kind' missing")


# --------------------------------------------------------------------------- 1d
def test_node_link_cycle_is_refused(tmp_path: Path, graph_json: dict) -> None:
    e = next(e for e in graph_json["edges"] if e["kind"] == "nest")
    graph_json["edges"].append({"source": e["target"], "target": e["source"], "kind": "nest"})
    p = tmp_path / "cyc.json"
    p.write_text(json.dumps(graph_json))
    assert_one_line(run("report", p), p, "cycle")


# --------------------------------------------------------------------------- 1e
def test_node_link_bad_ts_is_refused(tmp_path: Path, graph_json: dict) -> None:
    graph_json["nodes"][-1]["ts"] = "abc"
    p = tmp_path / "badts.json"
    p.write_text(json.dumps(graph_json))
    res = run("critical-path", p)
    assert res.exit_code == 2 and len(res.output.strip().splitlines()) == 1, res.output
    assert str(p) in res.output and "internal error" not in res.output


def test_node_link_bad_ts_after_the_schema_sample_is_refused(tmp_path: Path, graph_json: dict) -> None:
    nodes = graph_json["nodes"]
    base = max(n["id"] for n in nodes) + 1
    for i in range(2100):  # push one node past the 2000 the schema check samples
        nodes.append({**nodes[0], "id": base + i, "ts": nodes[0]["ts"] + i})
    nodes[-1]["ts"] = "abc"
    p = tmp_path / "badts2.json"
    p.write_text(json.dumps(graph_json))
    assert_one_line(run("idle", p), p, "'ts'", "expected an integer")


def test_node_link_job_without_coll_id_is_refused(tmp_path: Path, graph_json: dict) -> None:
    rank0 = {"rank": 0, "file": "r0.json", "sha256": None, "rank_source": "filename", "world_size": 1,
             "node_offset": 0, "n_nodes": len(graph_json["nodes"]), "full": True, "clock_offset_ns": 0,
             "summary": {}}
    graph_json["graph"]["job"] = {
        "ranks": [rank0], "steps": {"columns": {}, "dtypes": {}}, "unmatched": 0,
        "alignment": {"method": "collective_end_median", "reference_rank": 0, "offsets_ns": {"0": 0},
                      "residual_ns": {"0": 0}, "matched": 0},
        "collectives": {"columns": {"rank": [0]}, "dtypes": {"rank": "int64"}}}
    p = tmp_path / "job.json"
    p.write_text(json.dumps(graph_json))
    assert_one_line(run("critical-path", p), p, "coll_id")


def test_node_link_graph_events_list_is_refused(tmp_path: Path, graph_json: dict) -> None:
    graph_json["graph"]["events"] = []
    p = tmp_path / "evlist.json"
    p.write_text(json.dumps(graph_json))
    assert_one_line(run("info", p), p, "events")


def test_node_link_without_events_is_refused(tmp_path: Path, graph_json: dict) -> None:
    del graph_json["events"]
    p = tmp_path / "noev.json"
    p.write_text(json.dumps(graph_json))
    assert_one_line(run("info", p), p, "'events'")


def test_saved_graphs_still_load(tmp_path: Path, trace: Path) -> None:
    for name in ("g.gpickle", "g.json.gz", "g.json"):
        assert run("build", trace, "-o", tmp_path / name).exit_code == 0
        G = load_any(tmp_path / name)
        assert G.number_of_nodes() == 66


# --------------------------------------------------------------------------- 2
def _mutated(trace: Path, tmp_path: Path, name: str, edit) -> Path:
    d = json.loads(trace.read_text())
    k = [e for e in d["traceEvents"] if e.get("cat") == "kernel"][2]
    edit(k)
    p = tmp_path / name
    p.write_text(json.dumps(d))
    return p


def test_deeply_nested_args_are_cut_with_a_warning(tmp_path: Path, trace: Path) -> None:
    def deep(k):
        x: dict = {}
        for _ in range(400):
            x = {"a": x}
        k["args"]["deep"] = x
    p = _mutated(trace, tmp_path, "deep.json", deep)
    for out in ("x.json", "x.json.gz", "x.gpickle"):
        res = run("build", p, "-o", tmp_path / out)
        assert res.exit_code == 0, res.output
    assert run("export", p, "--perfetto", tmp_path / "p.json").exit_code == 0
    res = run("info", p)
    assert "args_too_deep" in res.output


@pytest.mark.parametrize("cat", [["kernel"], {"a": 1}])
def test_cat_that_is_a_list_or_object_is_one_line(tmp_path: Path, trace: Path, cat) -> None:
    p = _mutated(trace, tmp_path, "cat.json", lambda k: k.__setitem__("cat", cat))
    assert_one_line(run("build", p, "-o", tmp_path / "x.gpickle"), p, "event", "'cat'")


@pytest.mark.parametrize("which", [0, 3, 17])
def test_idle_causes_are_never_negative(trace: Path, which: int) -> None:
    G = load_any(trace)
    ks = [n for n, d in G.nodes(data=True) if d["kind"] == "kernel"]
    G.nodes[ks[which]]["dur"] = 2**63 - 1 - 1000  # ts + dur wraps int64
    r = idle_time(G)
    for x in list(r.devices) + list(r.streams):
        assert all(v >= 0 for v in x.causes_ns.values()), x.causes_ns
        assert sum(x.causes_ns[c] for c in CAUSES) == x.idle_ns
        assert x.idle_ns >= 0
    assert r.cpu_induced_idle_ns >= 0


def test_idle_causes_sum_on_an_ordinary_trace(trace: Path) -> None:
    r = idle_time(load_any(trace))
    for x in list(r.devices) + list(r.streams):
        assert all(v >= 0 for v in x.causes_ns.values())
        assert sum(x.causes_ns.values()) == x.idle_ns


# --------------------------------------------------------------------------- 3
def test_rank_option_only_on_commands_with_an_input() -> None:
    assert "--rank" not in run("devices", "--help").output
    assert "--rank" in run("idle", "--help").output


# --------------------------------------------------------------------------- 5
def _written_counters(trace: Path, out: Path) -> set[tuple[str, str]]:
    opgraph.export_perfetto(trace, out)
    doc = json.loads(out.read_text())
    evs = doc["traceEvents"] if isinstance(doc, dict) else doc
    written = set()
    for e in evs:
        if e.get("ph") == "C":
            name = re.sub(r"\d+", "<n>", e["name"])
            for series in e.get("args", {}):
                written.add((name, series))
    return written


def test_perfetto_doc_lists_exactly_the_counters_written(tmp_path: Path, trace: Path) -> None:
    """Every counter the export writes (here, and on a trace with [memory] events) is a row
    of docs/perfetto.md's counter table, and every row is written by one of them."""
    written = _written_counters(trace, tmp_path / "p.json")
    written |= _written_counters(opgraph.example_trace("memory", tmp_path / "mem"), tmp_path / "m.json")
    text = (ROOT / "docs" / "perfetto.md").read_text()
    section = text.split("### Counter tracks", 1)[1].split("\n#", 1)[0]
    listed = set()
    for row in section.splitlines():
        m = re.match(r"\|\s*`([^`]+)`\s*/\s*([^|→(]+)", row)
        if not m:
            continue
        name = re.sub(r"<[a-z]+>", "<n>", m.group(1))
        for series in re.findall(r"`([^`]+)`", m.group(2)):
            listed.add((name, series))
    # the device-type word of a memory counter ("CUDA 0 memory") is written as <type> in the doc
    written = {(re.sub(r"^[A-Za-z]+ -?<n> memory$", "<n> <n> memory", n), sr) for n, sr in written}
    assert listed and listed == written, (listed - written, written - listed)


def test_readme_has_exit_codes_and_outputs() -> None:
    text = (ROOT / "README.md").read_text()
    for w in ("130", "--svg", "--dot", "--png", "report g.gpickle --html", "Exit codes"):
        assert w in text, w


def test_execution_trace_times_are_called_ordinal(tmp_path: Path) -> None:
    """An ET-only graph has ordinal times: the CLI says so and never calls its span µs."""
    from click.testing import CliRunner

    from opgraph.cli import main
    from conftest import TRACES

    p = TRACES / "B_et" / "hta_simple_add_et.json.gz"
    if not p.exists():
        pytest.skip("trace absent")
    r = CliRunner().invoke(main, ["info", str(p)])
    assert r.exit_code == 0
    assert "ordinal units" in r.output and "note:" in r.output
    span_line = next(ln for ln in r.output.splitlines() if ln.startswith("events "))
    assert "µs" not in span_line
