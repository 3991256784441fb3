"""PyTorch execution traces: every schema reads, data edges follow tensor producers, and
linking an ET to the Kineto trace of the same run (``opgraph build --et``)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import networkx as nx
import pytest

from opgraph.graph.build import build_graph
from opgraph.graph.et_link import attach_et, match_et
from opgraph.ingest.readers import read_trace

TRACES = Path(__file__).resolve().parents[1].parent / "shared" / "traces"
ET_FILES = (sorted((TRACES / "B_et").iterdir()) + sorted((TRACES / "E_dlrm_study").iterdir())
            if (TRACES / "B_et").is_dir() else [])
needs_traces = pytest.mark.skipif(not (TRACES / "B_et").is_dir(), reason=f"real traces not available: {TRACES}")
PAIRS = ([("hta_simple_add_et.json.gz", "hta_simple_add_kineto.json.gz"),
          ("param_linear_et.json.gz", "param_linear_kineto.json.gz")]
         + [(f"param_dlrm_8gpu_rank{i}_et.json.gz", f"param_dlrm_8gpu_rank{i}.pt.trace.json.gz") for i in range(8)])


def _t(tid: int, sid: int, shape: list, numel: int = 4) -> tuple[list, list, str]:
    return [tid, sid, 0, numel, 4, "cuda:0"], shape, "Tensor(float)"


def _node(i: int, name: str, parent: int, ins: list = (), outs: list = (), scope: int = 0, rf: int | None = None) -> dict:
    return {"id": i, "name": name, "parent": parent, "rf_id": rf if rf is not None else i, "tid": 1, "scope": scope,
            "inputs": [v for v, _, _ in ins], "input_shapes": [s for _, s, _ in ins],
            "input_types": [t for _, _, t in ins], "outputs": [v for v, _, _ in outs],
            "output_shapes": [s for _, s, _ in outs], "output_types": [t for _, _, t in outs]}


X, W, WT, Y, Z, S = (_t(10, 11, [8, 4]), _t(12, 13, [4, 4]), _t(14, 13, [4, 4]), _t(20, 21, [8, 4]),
                     _t(22, 23, [8, 4]), _t(24, 25, []))
TINY = {"schema": "1.0.1", "pid": 7, "nodes": [
    _node(1, "[pytorch|profiler|execution_graph|process]", 0, scope=7),
    _node(2, "[pytorch|profiler|execution_graph|thread]", 1, scope=7),
    _node(3, "## forward ##", 2, scope=7),
    _node(4, "aten::linear", 3, [X, W], [Y]),
    _node(5, "aten::t", 4, [W], [WT]),
    _node(6, "aten::addmm", 4, [X, WT], [Y]),
    _node(7, "aten::relu", 3, [Y], [Z]),
    _node(8, "aten::add_", 3, [Z, Y], [Z]),
    _node(9, "aten::sum", 3, [Z], [S]),
]}


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    p = tmp_path / "tiny_et.json"
    p.write_text(json.dumps(TINY))
    return p


def test_tiny_data_edges(tiny: Path) -> None:
    t = read_trace(tiny)
    assert t.meta["format"] == "pytorch-et"
    G = build_graph(t)
    name = {n: d["name"] for n, d in G.nodes(data=True)}
    data = {(name[u], name[v]) for u, v, d in G.edges(data=True) if "tensors" in d}
    assert data == {("aten::t", "aten::addmm"), ("aten::linear", "aten::relu"), ("aten::linear", "aten::add_"),
                    ("aten::relu", "aten::add_"), ("aten::add_", "aten::sum")}
    kinds = {name[n]: d["kind"] for n, d in G.nodes(data=True)}
    assert kinds["## forward ##"] == "annotation" and kinds["aten::addmm"] == "cpu_op"
    assert "[pytorch|profiler|execution_graph|process]" not in kinds.values()
    nest = {(name[u], name[v]) for u, v, d in G.edges(data=True) if d["kind"] == "nest"}
    assert ("aten::linear", "aten::addmm") in nest and ("## forward ##", "aten::sum") in nest
    assert nx.is_directed_acyclic_graph(G.to_networkx())
    add = next(d for d in G.nodes.values() if d["name"] == "aten::addmm")
    assert add["args"]["Input Dims"] == [[8, 4], [4, 4]] and add["args"]["Input type"] == ["float", "float"]
    assert any(h["code"] == "et_ordinal_time" for h in G.graph["health"])


def test_record_function_id_link(tiny: Path, tmp_path: Path) -> None:
    """With ``Record function id`` in the Kineto args the join is exact, whatever the
    External ids say."""
    ops = [n for n in TINY["nodes"] if n["id"] >= 3]
    ev = []
    for k, n in enumerate(ops):
        depth = {3: 0, 4: 1, 5: 2, 6: 2, 7: 1, 8: 1, 9: 1}[n["id"]]
        ts = {3: 0, 4: 10, 5: 11, 6: 20, 7: 40, 8: 50, 9: 60}[n["id"]]
        dur = {3: 100, 4: 25, 5: 5, 6: 10, 7: 5, 8: 5, 9: 5}[n["id"]]
        ev.append({"ph": "X", "cat": "user_annotation" if depth == 0 else "cpu_op", "name": n["name"], "pid": 1,
                   "tid": 1, "ts": 1000 + ts, "dur": dur,
                   "args": {"External id": 500 + k * 3, "Record function id": n["rf_id"]}})
    kp = tmp_path / "k.json"
    kp.write_text(json.dumps({"traceEvents": ev}))
    kt, et = read_trace(kp), read_trace(tiny)
    rep = attach_et(kt, et)
    assert rep["method"] == "record_function_id"
    assert rep["matched"] == rep["et_ops"] == 7
    G = build_graph(kt)
    name = {n: d["name"] for n, d in G.nodes(data=True)}
    data = {(name[u], name[v]) for u, v, d in G.edges(data=True) if "tensors" in d}
    assert ("aten::relu", "aten::add_") in data and ("aten::t", "aten::addmm") in data
    assert nx.is_directed_acyclic_graph(G.to_networkx())


def test_bad_et(tmp_path: Path, cli, one_line_error) -> None:
    doc = json.loads(json.dumps(TINY))
    del doc["nodes"][4]["id"]
    p = tmp_path / "bad_et.json"
    p.write_text(json.dumps(doc))
    line = one_line_error(cli(["build", str(p), "-o", str(tmp_path / "g.gpickle")]), p, "id")
    assert "event 4:" in line


def test_et_needs_raw_trace_and_et(cli, tiny: Path, tmp_path: Path, one_line_error) -> None:
    k = tmp_path / "k.json"
    k.write_text(json.dumps({"traceEvents": []}))
    r = cli(["build", str(k), "--et", str(k), "-o", str(tmp_path / "g.gpickle")])
    one_line_error(r, k, "execution trace")


# --------------------------------------------------------------------------- real ETs
@needs_traces
@pytest.mark.real_traces
@pytest.mark.parametrize("path", ET_FILES, ids=[p.name for p in ET_FILES])
def test_every_et_schema(path: Path) -> None:
    t = read_trace(path)
    assert t.meta["format"] == "pytorch-et"
    kinds = t.events["kind"].value_counts()
    assert kinds["cpu_op"] > 0 and kinds["annotation"] > 0
    d = t.meta["extra_edges"]["data"]
    assert len(d["src"]) > 0
    ts = t.events["ts_ns"].to_numpy()
    end = ts + t.events["dur_ns"].to_numpy()
    assert (end[d["src"]] <= ts[d["dst"]]).all(), "producers end before consumers start"


@needs_traces
@pytest.mark.real_traces
@pytest.mark.parametrize("et_name,k_name", PAIRS, ids=[p[0] for p in PAIRS])
def test_same_run_pairs_match(et_name: str, k_name: str) -> None:
    kt = read_trace(TRACES / "A_kineto" / k_name)
    et = read_trace(TRACES / "B_et" / et_name)
    mapping, rep = match_et(kt, et)
    assert rep["operators_matched_of_covered_pct"] >= 95.0, rep
    assert rep["matched_of_covered_pct"] >= 95.0, rep
    ev = kt.events
    names = ev["name"].astype(str).to_numpy()
    enames = et.events["name"].astype(str).to_numpy()
    assert all(names[k] == enames[e] for e, k in mapping.items())


@needs_traces
@pytest.mark.real_traces
def test_build_with_et_cli(cli, tmp_path: Path) -> None:
    from opgraph.graph.io import load_gpickle

    out = tmp_path / "g.gpickle"
    r = cli(["build", str(TRACES / "A_kineto" / "param_dlrm_8gpu_rank0.pt.trace.json.gz"),
             "--et", str(TRACES / "B_et" / "param_dlrm_8gpu_rank0_et.json.gz"), "-o", str(out)])
    assert r.exit_code == 0, r.stderr
    assert "ET ops matched" in r.stderr
    G = load_gpickle(out)
    rep = G.graph["trace_metadata"]["et_link"]
    assert rep["data_edges"] > 1000 and rep["data_edges_backward_in_time"] == 0
    ek = Counter(d["kind"] for _, _, d in G.edges(data=True))
    assert ek["data"] > 0
    assert nx.is_directed_acyclic_graph(G.to_networkx())
    shaped = [d for d in G.nodes.values() if d["kind"] == "cpu_op" and "et_input_shapes" in (d["args"] or {})]
    assert len(shaped) > 1000


@needs_traces
@pytest.mark.real_traces
def test_build_with_mismatched_et_is_one_line_error(cli, tmp_path: Path) -> None:
    """An ET of another run: exit 2 with one line naming both files and the match count, and
    no graph written (it used to build the graph and only warn)."""
    k = TRACES / "A_kineto" / "param_dlrm_8gpu_rank0.pt.trace.json.gz"
    et = TRACES / "B_et" / "param_resnet_2gpu_et_1.1.0.json.gz"
    out = tmp_path / "g.gpickle"
    r = cli(["build", str(k), "--et", str(et), "-o", str(out)])
    assert r.exit_code == 2, r.stderr
    line = r.stderr.strip()
    assert "\n" not in line and "Traceback" not in line
    assert str(et) in line and str(k) in line and "ET ops matched" in line and "same run" in line
    assert not out.exists()


@needs_traces
@pytest.mark.real_traces
def test_attach_et_refuses_a_mismatched_et_before_changing_the_trace() -> None:
    """The refusal belongs to :func:`attach_et` itself (API callers get it too), and the
    Kineto table is untouched when it is raised."""
    from opgraph.errors import OpgraphInputError
    from opgraph.ingest.readers import read_trace

    kt = read_trace(TRACES / "A_kineto" / "param_dlrm_8gpu_rank0.pt.trace.json.gz")
    et = read_trace(TRACES / "B_et" / "param_resnet_2gpu_et_1.1.0.json.gz")
    before = kt.events["args"].copy()
    with pytest.raises(OpgraphInputError, match="ET ops matched"):
        attach_et(kt, et)
    assert kt.events["args"].equals(before) and "extra_edges" not in kt.meta
    assert "et_link" not in (kt.meta.get("trace_metadata") or {})


@pytest.mark.parametrize("cmd", [["critical-path"], ["breakdown", "--host"], ["idle"], ["iterations"], ["summary"]])
def test_et_only_tables_are_headed_in_ticks(cli, tiny: Path, cmd: list[str]) -> None:
    """An execution trace records no times: tables and lines print its ordinal positions as
    "ticks" (1 tick = 1 op in program order), never under a "µs" heading; the note on
    stderr says so once."""
    r = cli([*cmd, str(tiny)])
    assert r.exit_code == 0, r.stderr
    assert "µs" not in r.stdout
    assert "ticks" in r.stderr and "program order" in r.stderr
