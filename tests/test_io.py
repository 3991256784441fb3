"""Saving and loading graphs (opgraph.graph.io): exact .gpickle and node-link .json.gz
round trips, schema-valid node-link output, and a pickle loader that refuses to run code.
"""

from __future__ import annotations

import gzip
import json
import os
import pickle
from pathlib import Path

import networkx as nx
import pandas as pd
import pytest

from opgraph.errors import OpgraphInputError
from opgraph.graph.io import load_any, load_gpickle, save_graph, save_gpickle
from opgraph.model.trace_graph import TraceGraph
from opgraph.schemas_util import validate

ROOT = Path(__file__).resolve().parents[1]
SYNTH = sorted(p for p in (ROOT / "fixtures" / "synth").glob("*.json") if not p.name.endswith(".answers.json"))
KINETO_DIR = ROOT.parent / "shared" / "traces" / "A_kineto"
#: small real traces with every edge kind between them (flow with cat, cuda_sync syncs,
#: inferred syncs, event_wait, gpu_annotation nesting)
REAL = ["hta_amd_mi250_minitoy_rocm6.2.json.gz", "hta_critical_path_alexnet.json.gz"]


def _sources() -> list:
    out = [pytest.param(p, id=f"synth-{p.stem}") for p in SYNTH]
    for name in REAL:
        out.append(pytest.param(KINETO_DIR / name, id=name, marks=pytest.mark.real_traces))
    return out


@pytest.fixture(scope="module")
def built() -> dict[Path, TraceGraph]:
    return {}


def _graph(built: dict, path: Path) -> TraceGraph:
    if path not in built:
        built[path] = load_any(path)
    return built[path]


def assert_same_graph(T: TraceGraph, L: TraceGraph, exact_frame: bool = True) -> None:
    assert isinstance(T, TraceGraph) and isinstance(L, TraceGraph)
    G, H = T.to_networkx(), L.to_networkx()
    assert list(G.nodes) == list(H.nodes)
    for n, d in G.nodes(data=True):
        assert H.nodes[n] == d, n
        assert list(H.nodes[n]) == list(d)
        for k in ("ts", "dur", "device", "stream", "correlation", "external_id"):
            assert type(H.nodes[n][k]) is type(d[k]), (n, k)
    assert G.number_of_edges() == H.number_of_edges()
    eg = {(u, v): d for u, v, d in G.edges(data=True)}
    eh = {(u, v): d for u, v, d in H.edges(data=True)}
    assert eg == eh
    assert set(G.graph) == set(H.graph)
    for k, v in G.graph.items():
        if k == "events":
            continue
        assert H.graph[k] == v, k
        assert type(H.graph[k]) is type(v), k
    if exact_frame:
        pd.testing.assert_frame_equal(G.graph["events"], H.graph["events"])
    else:
        pd.testing.assert_frame_equal(G.graph["events"], H.graph["events"], check_dtype=False,
                                      check_categorical=False)


@pytest.mark.parametrize("src", _sources())
def test_gpickle_round_trip_exact(src: Path, tmp_path: Path, built) -> None:
    G = _graph(built, src)
    out = tmp_path / "g.gpickle"
    save_graph(G, out)
    H = load_any(out)
    assert_same_graph(G, H)
    # node args are the rows of the event table, as in a fresh build
    args = H.graph["events"]["args"].to_numpy(dtype=object)
    assert all(d["args"] is args[n] for n, d in H.nodes(data=True))


@pytest.mark.parametrize("src", _sources())
def test_json_gz_round_trip(src: Path, tmp_path: Path, built) -> None:
    G = _graph(built, src)
    out = tmp_path / "g.json.gz"
    save_graph(G, out)
    assert out.read_bytes()[:2] == b"\x1f\x8b"
    H = load_any(out)
    assert_same_graph(G, H, exact_frame=False)
    # and a second trip changes nothing
    out2 = tmp_path / "g2.json.gz"
    save_graph(H, out2)
    assert gzip.decompress(out2.read_bytes()) == gzip.decompress(out.read_bytes())


@pytest.mark.parametrize("src", [pytest.param(SYNTH[0], id=f"synth-{SYNTH[0].stem}")])
def test_json_gz_events_frame_exact(src: Path, tmp_path: Path, built) -> None:
    G = _graph(built, src)
    out = tmp_path / "g.json.gz"
    save_graph(G, out)
    pd.testing.assert_frame_equal(G.graph["events"], load_any(out).graph["events"])


def test_plain_json_round_trip(tmp_path: Path, built) -> None:
    G = _graph(built, SYNTH[0])
    out = tmp_path / "g.json"
    save_graph(G, out)
    doc = json.loads(out.read_text())
    validate(doc, "opgraph-graph.schema.json")
    assert_same_graph(G, load_any(out), exact_frame=False)


@pytest.mark.parametrize("src", _sources())
def test_json_gz_validates_against_schema(src: Path, tmp_path: Path, built) -> None:
    G = _graph(built, src)
    out = tmp_path / "g.json.gz"
    save_graph(G, out)
    doc = json.loads(gzip.decompress(out.read_bytes()))
    validate(doc, "opgraph-graph.schema.json")
    assert len(doc["nodes"]) == G.number_of_nodes()
    assert len(doc["edges"]) == G.number_of_edges()
    assert doc["graph"]["span_ns"] == list(G.graph["span_ns"])
    assert len(doc["events"]["eid"]) == len(G.graph["events"])


def test_non_opgraph_digraph_pickles_but_does_not_load(tmp_path: Path) -> None:
    """Any DiGraph saves; loading one that opgraph did not build is one line."""
    G = nx.DiGraph(name="plain")
    G.add_edge("a", "b", kind="nest", weight=2.5)
    G.add_node("c", kind="kernel")
    out = tmp_path / "plain.gpickle"
    save_gpickle(G, out)
    assert pickle.loads(out.read_bytes()).graph == {"name": "plain"}
    with pytest.raises(OpgraphInputError, match="not an opgraph graph"):
        load_gpickle(out)


# ------------------------------------------------------------------ hostile / broken pickles
class _SystemCall:
    def __init__(self, cmd: str):
        self.cmd = cmd

    def __reduce__(self):
        return (os.system, (self.cmd,))


class _EvalCall:
    def __init__(self, code: str):
        self.code = code

    def __reduce__(self):
        return (eval, (self.code,))


def _evil(kind: str, marker: Path) -> bytes:
    if kind == "os.system":
        return pickle.dumps(_SystemCall(f"echo pwned > {marker}"))
    if kind == "eval":
        return pickle.dumps(_EvalCall(f"open({str(marker)!r}, 'w').write('pwned')"))
    # a hostile object hidden inside an otherwise ordinary graph
    G = nx.DiGraph()
    G.add_node(0, payload=_SystemCall(f"echo pwned > {marker}"))
    return pickle.dumps(G, protocol=5)


@pytest.mark.parametrize("kind", ["os.system", "eval", "inside_graph"])
def test_hostile_pickle_refused(kind: str, tmp_path: Path, cli, one_line_error) -> None:
    marker = tmp_path / "marker"
    evil = tmp_path / "evil.gpickle"
    evil.write_bytes(_evil(kind, marker))
    r = cli(["info", str(evil)])
    one_line_error(r, evil, "refused")
    assert not marker.exists()
    with pytest.raises(OpgraphInputError, match="refused"):
        load_gpickle(evil)
    assert not marker.exists()


def test_hostile_pickle_refused_subprocess(tmp_path: Path, cli_subprocess, one_line_error) -> None:
    marker = tmp_path / "marker"
    evil = tmp_path / "evil.gpickle"
    evil.write_bytes(_evil("os.system", marker))
    r = cli_subprocess(["info", str(evil), "--json"])
    one_line_error(r, evil, "refused")
    assert "pwned" not in r.stdout + r.stderr
    assert not marker.exists()


def test_hostile_pickle_with_another_extension_refused(tmp_path: Path, cli, one_line_error) -> None:
    marker = tmp_path / "marker"
    evil = tmp_path / "trace.json"
    evil.write_bytes(_evil("os.system", marker))
    one_line_error(cli(["info", str(evil)]), evil)
    one_line_error(cli(["build", str(evil), "-o", str(tmp_path / "g.gpickle")]), evil)
    assert not marker.exists()


@pytest.mark.parametrize("frac", [0.0001, 0.1, 0.5, 0.9, 0.999])
def test_truncated_gpickle(frac: float, tmp_path: Path, built, cli, one_line_error) -> None:
    good = tmp_path / "good.gpickle"
    save_gpickle(_graph(built, SYNTH[0]), good)
    data = good.read_bytes()
    bad = tmp_path / "cut.gpickle"
    bad.write_bytes(data[:max(1, int(len(data) * frac))])
    one_line_error(cli(["info", str(bad)]), bad, "pickle")


def test_empty_and_non_graph_pickles(tmp_path: Path, cli, one_line_error) -> None:
    empty = tmp_path / "empty.gpickle"
    empty.write_bytes(b"")
    one_line_error(cli(["info", str(empty)]), empty, "empty")
    lst = tmp_path / "list.gpickle"
    lst.write_bytes(pickle.dumps([1, 2, 3]))
    one_line_error(cli(["info", str(lst)]), lst, "list", "DiGraph")
    junk = tmp_path / "junk.gpickle"
    junk.write_bytes(b"this is not a pickle at all")
    one_line_error(cli(["info", str(junk)]), junk, "pickle")


def test_invalid_graph_document_refused(tmp_path: Path, built, cli, one_line_error) -> None:
    good = tmp_path / "g.json"
    save_graph(_graph(built, SYNTH[0]), good)
    doc = json.loads(good.read_text())
    doc["edges"][0]["kind"] = "teleport"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    one_line_error(cli(["info", str(bad)]), bad, "not a valid opgraph graph")
    doc = json.loads(good.read_text())
    doc["nodes"][0].pop("id")
    bad2 = tmp_path / "bad2.json.gz"
    bad2.write_bytes(gzip.compress(json.dumps(doc).encode()))
    one_line_error(cli(["info", str(bad2)]), bad2)
