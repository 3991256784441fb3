"""Graphviz pictures: ``opgraph export --dot / --svg / --png`` (issue #6, docs/pictures.md).

Synthesized traces check the DOT without Graphviz (every event drawn once, edge kinds and
the critical path); the alexnet trace (real, no ProfilerStep) is rendered to SVG and the
SVG is parsed back: nodes of each kind are exactly the window's members, the --max-nodes
cut is reported and adds up, the critical path is highlighted and connected. Without the
`dot` program, --svg/--png fail in one line with exit code 2 and --dot still works.
"""

from __future__ import annotations

import html
import re
import shutil
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

import pytest

from conftest import KINETO_DIR, SYNTH_DIR, _run_cli, assert_one_line_error, load_graph, requires_traces
from opgraph.analysis.critical_path.path import critical_path
from opgraph.export.dot import GraphvizMissing, dot_source, graph_view, render

ALEXNET = KINETO_DIR / "hta_critical_path_alexnet.json.gz"
BERT = KINETO_DIR / "tracelens_h100_bert_small.json.gz"
#: The alexnet trace has no ProfilerStep: its measured forward passes are the windows.
ALEX_WINDOW = r"measure\|forward"
HOST = ("annotation", "cpu_op", "python", "runtime")
ACT = ("kernel", "memcpy", "memset")
needs_dot = pytest.mark.skipif(shutil.which("dot") is None or shutil.which("neato") is None,
                               reason="Graphviz (dot, neato) is not installed: apt-get install graphviz")
SVG_NS = "{http://www.w3.org/2000/svg}"


def run(*args: object):
    """``opgraph <args>`` in-process (stdout and stderr apart; exit code, no traceback)."""
    r = _run_cli([str(a) for a in args])
    assert r.exception is None, r.exception
    return r


def svg_nodes(path: Path) -> dict[int, set[str]]:
    """eid -> classes of every node ``<g>`` of a Graphviz SVG (parsed as XML)."""
    root = ET.parse(path).getroot()
    out = {}
    for g in root.iter(f"{SVG_NS}g"):
        cls = set((g.get("class") or "").split())
        if "node" in cls:
            m = re.fullmatch(r"n(\d+)", g.get("id") or "")
            assert m, g.get("id")
            out[int(m.group(1))] = cls
    return out


def svg_edges(path: Path) -> list[tuple[int, int, set[str]]]:
    root = ET.parse(path).getroot()
    out = []
    for g in root.iter(f"{SVG_NS}g"):
        cls = set((g.get("class") or "").split())
        if "edge" in cls:
            title = g.find(f"{SVG_NS}title").text  # "n1->n2"
            u, v = re.fullmatch(r"n(\d+)->n(\d+)", title.replace("&#45;", "-")).groups()
            out.append((int(u), int(v), cls))
    return out


def kinds_of(nodes: dict[int, set[str]]) -> Counter:
    c: Counter = Counter()
    for cls in nodes.values():
        ks = [x[5:] for x in cls if x.startswith("kind-")]
        assert len(ks) == 1, cls
        c[ks[0]] += 1
    return c


def window_members(G, regex: str | None) -> dict[int, str]:
    """Independent of opgraph.export.dot: host events starting in a matching host range,
    device activities whose launch call starts in one (eid -> kind)."""
    nodes = G.nodes
    if regex is None:
        data = [d for _, d in G.nodes(data=True)]
        wins = [(min(d["ts"] for d in data), max(d["ts"] + d["dur"] for d in data) + 1)]
    else:
        rx = re.compile(regex)
        wins = [(d["ts"], d["ts"] + d["dur"]) for _, d in G.nodes(data=True)
                if d["kind"] in ("annotation", "cpu_op", "python") and rx.search(d["name"] or "")]
    assert wins
    launch_ts = {v: nodes[u]["ts"] for u, v, k in G.edges(data="kind") if k == "launch"}
    out = {}
    for n, d in G.nodes(data=True):
        if d["kind"] in HOST:
            key = d["ts"]
        elif d["kind"] in ACT:
            key = launch_ts.get(n, d["ts"])
        else:
            continue
        if any(a <= key < b for a, b in wins):
            out[n] = d["kind"]
    return out


# --------------------------------------------------------------------------- synthesized, no Graphviz needed
@pytest.mark.parametrize("name", ["two_stream_event_wait", "sync_every_op", "gpu_bound"])
def test_dot_text_on_synth(tmp_path, name):
    """--dot needs no Graphviz: every event of the trace is one node (with --window all and
    no limit), each edge kind of the graph that joins drawn nodes appears, and the DOT
    parses (pydot)."""
    import pydot

    src = SYNTH_DIR / f"{name}.json"
    out = tmp_path / "g.dot"
    r = run("export", src, "--dot", out, "--window", "all", "--max-nodes", 0)
    assert r.exit_code == 0, r.stderr
    assert r.stderr.startswith(f"{out}: ") and "critical path" in r.stderr
    G = load_graph(src)
    (g,) = pydot.graph_from_dot_data(out.read_text())
    names = {n.get_name() for n in g.get_nodes()} | {n.get_name() for s in g.get_subgraphs() for n in s.get_nodes()}
    expect = window_members(G, None)
    assert {f"n{e}" for e in expect} <= names
    drawn = {int(x[1:]) for x in names if re.fullmatch(r"n\d+", x)}
    assert drawn == set(expect)
    text = out.read_text()
    for k in ("launch", "stream_seq", "sync") + (("event_wait",) if name == "two_stream_event_wait" else ()):
        assert f"edge-{k}" in text, k
    assert "critical" in text and "pos=" in text


def test_view_options_on_synth():
    G = load_graph(SYNTH_DIR / "two_stream_event_wait.json")
    full = graph_view(G, window="all", max_nodes=0)
    crit = graph_view(G, window="all", critical_only=True, max_nodes=0)
    col = graph_view(G, window="all", collapse="op", max_nodes=0)
    assert set(crit.nodes) <= set(full.nodes) and crit.critical_nodes == full.critical_nodes > 0
    assert len(col.nodes) < len(full.nodes)
    assert all(n.kind not in ("runtime",) or n.parent is None or col.nodes[n.parent].kind != "cpu_op"
               for n in col.nodes.values()), "runtime calls inside an op are merged into it"
    assert sum(n.merged for n in col.nodes.values()) == len(full.nodes) - len(col.nodes)
    cut = graph_view(G, window="all", max_nodes=5)
    assert len(cut.nodes) == 5 and sum(cut.cut.values()) == len(full.nodes) - 5
    assert "max-nodes 5: cut" in cut.summary()
    with pytest.raises(ValueError, match="matches no"):
        graph_view(G, window="no-such-range-xyz")


def test_bad_options(tmp_path):
    src = SYNTH_DIR / "gpu_bound.json"
    r = run("export", src, "--dot", tmp_path / "g.dot", "--window", "no-such-range-xyz")
    assert_one_line_error(r, src, "matches no")
    r = run("export", src, "--dot", tmp_path / "g.dot", "--window", "(")
    assert_one_line_error(r, src, "regex")
    r = run("export", src, "--dot", tmp_path / "g.txt")
    assert_one_line_error(r, tmp_path / "g.txt", ".dot")
    r = run("export", src, "--dot", tmp_path / "g.dot", "--collapse", "everything")
    assert r.exit_code == 2


def test_missing_graphviz(tmp_path, monkeypatch):
    """Without `dot` on PATH: --svg / --png say so in one line (exit 2), before loading
    the input; --dot alone still works."""
    src = SYNTH_DIR / "gpu_bound.json"
    monkeypatch.setenv("PATH", str(tmp_path))
    for flag, name in (("--svg", "g.svg"), ("--png", "g.png")):
        r = run("export", src, flag, tmp_path / name)
        assert_one_line_error(r, tmp_path / name, "graphviz", "not installed")
        assert not (tmp_path / name).exists()
    r = run("export", src, "--dot", tmp_path / "g.dot")
    assert r.exit_code == 0 and (tmp_path / "g.dot").stat().st_size > 0
    with pytest.raises(GraphvizMissing):
        render(dot_source(graph_view(load_graph(src))), "svg")


# --------------------------------------------------------------------------- the alexnet trace, rendered
@requires_traces
@needs_dot
def test_alexnet_window_svg_node_kinds(tmp_path):
    """The measured forward passes of alexnet, every event drawn: the SVG parses and holds
    exactly the window's members, per kind, with the critical path highlighted."""
    out = tmp_path / "alex.svg"
    r = run("export", ALEXNET, "--svg", out, "--window", ALEX_WINDOW, "--max-nodes", 0)
    assert r.exit_code == 0, r.stderr
    G = load_graph(ALEXNET)
    expect = window_members(G, ALEX_WINDOW)
    nodes = svg_nodes(out)
    assert set(nodes) == set(expect)
    assert kinds_of(nodes) == Counter(expect.values())
    assert Counter(expect.values()) == Counter({"runtime": 118, "cpu_op": 98, "kernel": 39, "annotation": 3,
                                               "memset": 1})
    # every event owning time on the CLI's critical path is drawn as critical
    cp = critical_path(G, window=ALEX_WINDOW)
    owners = {s.eid for w in cp.windows for s in w.path if s.eid is not None}
    assert owners <= {e for e, cls in nodes.items() if "critical" in cls}
    edges = svg_edges(out)
    kinds = Counter(c for _, _, cls in edges for c in cls if c.startswith("edge-"))
    for k in ("edge-nest", "edge-host_seq", "edge-launch", "edge-stream_seq", "edge-sync", "edge-event_wait"):
        assert kinds[k] > 0, k
    assert sum(1 for *_, cls in edges if "critical" in cls) >= len(owners) // 2
    text = out.read_text()
    text = html.unescape(text)
    assert "critical path" in text and "GPU 0 · stream 7" in text and "CPU · thread 2869224" in text


@requires_traces
@needs_dot
def test_alexnet_whole_trace_max_nodes(tmp_path):
    """--window all --max-nodes 150: 150 nodes drawn, the message says what was cut, and
    drawn + cut is every node of the trace, per kind."""
    out = tmp_path / "all.svg"
    r = run("export", ALEXNET, "--svg", out, "--window", "all", "--max-nodes", 150)
    assert r.exit_code == 0, r.stderr
    nodes = svg_nodes(out)
    assert len(nodes) == 150
    msg = r.stderr
    m = re.search(r"--max-nodes 150: cut ([\d,]+) of ([\d,]+) nodes, the shortest events \(([^)]*)\)", msg)
    assert m, msg
    cut, total = int(m.group(1).replace(",", "")), int(m.group(2).replace(",", ""))
    G = load_graph(ALEXNET)
    allk = Counter(d["kind"] for _, d in G.nodes(data=True) if d["kind"] != "gpu_annotation")
    assert total == sum(allk.values()) and cut == total - 150
    cutk = Counter({k: int(v.replace(",", "")) for v, k in re.findall(r"(\d[\d,]*) (\w+)", m.group(3))})
    assert kinds_of(nodes) + cutk == allk
    assert "narrow it with --window, --critical-only or --collapse op" in msg
    assert "max-nodes 150: cut" in html.unescape(out.read_text())  # the picture says it too


@requires_traces
@needs_dot
def test_alexnet_critical_only_collapsed_png(tmp_path):
    """The docs picture: critical path + one-hop neighbours, ops collapsed, as SVG and PNG."""
    svg, png = tmp_path / "cp.svg", tmp_path / "cp.png"
    r = run("export", ALEXNET, "--svg", svg, "--png", png, "--window", ALEX_WINDOW, "--critical-only",
            "--collapse", "op")
    assert r.exit_code == 0, r.stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 20_000
    nodes = svg_nodes(svg)
    G = load_graph(ALEXNET)
    k = kinds_of(nodes)
    assert k["kernel"] == 39 and k["runtime"] < 10 and k["cpu_op"] < 40  # launches merged into their ops
    cp = critical_path(G, window=ALEX_WINDOW)
    acts = {s.eid for w in cp.windows for s in w.path if s.kind in ACT}
    assert acts and acts <= {e for e, cls in nodes.items() if "critical" in cls}
    # the highlighted edges form one connected path through the critical nodes
    import networkx as nx
    H = nx.Graph([(u, v) for u, v, cls in svg_edges(svg) if "critical" in cls])
    assert nx.number_connected_components(H) == 1
    assert {e for e, cls in nodes.items() if "critical" in cls} <= set(H)


@requires_traces
@needs_dot
def test_bert_collapse_module(tmp_path):
    """Python-stack trace: --collapse module draws module ranges (nn.Module, forward frames)."""
    out = tmp_path / "bert.svg"
    r = run("export", BERT, "--svg", out, "--collapse", "module", "--critical-only")
    assert r.exit_code == 0, r.stderr
    text = out.read_text()
    assert "nn.Module: BertModel_0" in text and "modeling_bert.py(" in text
    G = load_graph(BERT)
    v_full = graph_view(G, critical_only=True, max_nodes=0)
    v_mod = graph_view(G, critical_only=True, collapse="module", max_nodes=0)
    assert len(v_mod.nodes) < len(v_full.nodes)
    assert len(svg_nodes(out)) == min(400, len(v_mod.nodes))
