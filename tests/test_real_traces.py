"""Invariants of the typed DAG (docs/model.md) on every real Kineto trace in
../shared/traces/A_kineto (skipped when absent: the ``kineto_*`` fixtures and the
``real_traces`` marker, see conftest.py). Each trace is built once per session
(conftest's ``kineto_graph``); the checks are vectorised over the graph's arrays.
"""

from __future__ import annotations

import gzip
import json
import re
from collections import Counter
from pathlib import Path

import networkx as nx
import numpy as np
import pytest

from opgraph.analysis.info import trace_info
from opgraph.schemas_util import validate

DOCS_MODEL = Path(__file__).resolve().parents[1] / "docs" / "model.md"
KINETO_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "traces" / "A_kineto"

#: docs/model.md, "Graph": node kinds and edge kinds.
NODE_KINDS = {"annotation", "cpu_op", "python", "runtime", "kernel", "memcpy", "memset", "gpu_annotation"}
HOST_KINDS = {"annotation", "cpu_op", "python", "runtime"}
ACTIVITY_KINDS = {"kernel", "memcpy", "memset"}
EDGE_KINDS = {"nest", "host_seq", "launch", "stream_seq", "sync", "event_wait", "flow", "handoff"}
#: schemas/opgraph-graph.schema.json, edge property sync_kind.
SYNC_KINDS = {"stream", "event", "device", "memcpy"}
#: nesting.NEST_TOLERANCE_NS: ends of µs traces may bleed this far (ns rounding).
NEST_TOLERANCE_NS = 1000

STEP_RE = re.compile(r"^ProfilerStep#\d+$")


def _health(G: nx.DiGraph) -> dict[str, dict]:
    return {h["code"]: h for h in G.graph.get("health", [])}


def _isin(arr: np.ndarray, kinds: set[str]) -> np.ndarray:
    return np.isin(arr, sorted(kinds))


def test_documented_kinds_are_in_docs() -> None:
    """The kinds this file checks against are the ones docs/model.md documents."""
    text = DOCS_MODEL.read_text()
    for k in NODE_KINDS | EDGE_KINDS:
        assert f"`{k}`" in text, k


def test_builds_a_dag_with_every_node_event(kineto_graph, kineto_facts) -> None:
    G = kineto_graph
    assert G.number_of_nodes() > 0
    assert nx.is_directed_acyclic_graph(G.to_networkx())
    ev = G.graph["events"]
    # every event of a node kind (all have a ts and a duration in these traces) is a node
    is_node_kind = ev["kind"].astype(object).isin(NODE_KINDS).to_numpy()
    assert G.number_of_nodes() == int(is_node_kind.sum())
    assert set(G.nodes) == set(ev["eid"].to_numpy()[is_node_kind].tolist())
    # node kind equals the table's kind for that eid
    assert (kineto_facts.kind[kineto_facts.ids] == ev["kind"].astype(object).to_numpy()[kineto_facts.ids]).all()


def test_node_kinds_and_attributes(kineto_graph) -> None:
    kinds = Counter()
    for n, d in kineto_graph.nodes(data=True):
        kinds[d["kind"]] += 1
        assert type(n) is int
        assert type(d["ts"]) is int and type(d["dur"]) is int and d["dur"] >= 0, (n, d)
        for key in ("name", "pid", "tid"):
            assert key in d, (n, key)
        if d["kind"] in ACTIVITY_KINDS:
            assert type(d["device"]) is int and type(d["stream"]) is int
            assert type(d["correlation"]) is int
    assert set(kinds) <= NODE_KINDS, set(kinds) - NODE_KINDS


def test_edge_kinds_documented(kineto_facts) -> None:
    f = kineto_facts
    kinds = set(f.ekind.tolist())
    assert kinds <= EDGE_KINDS, kinds - EDGE_KINDS
    # no self loops
    assert not (f.src == f.dst).any()


def test_launch_edges(kineto_graph, kineto_facts) -> None:
    f = kineto_facts
    s, d = f.edges_of("launch")
    # runtime call -> device activity, same correlation id, the activity after the call
    assert (f.kind[s] == "runtime").all(), Counter(f.kind[s].tolist())
    assert _isin(f.kind[d], ACTIVITY_KINDS).all(), Counter(f.kind[d].tolist())
    assert (f.corr[s] == f.corr[d]).all()
    assert (f.ts[d] >= f.ts[s]).all()
    # at most one launch per activity
    cnt = np.bincount(d, minlength=len(f.kind))
    assert cnt.max(initial=0) <= 1
    # an activity with a correlation has exactly one launch unless counted as unlaunched
    acts = f.ids[_isin(f.kind[f.ids], ACTIVITY_KINDS)]
    with_corr = acts[f.corr[acts] >= 0]
    unlaunched = with_corr[cnt[with_corr] == 0]
    h = _health(kineto_graph).get("kernel_without_launch")
    assert len(unlaunched) == (h["count"] if h else 0)
    if h:
        assert h["example_eid"] in set(unlaunched.tolist())


def test_nest_edges(kineto_facts) -> None:
    f = kineto_facts
    s, d = f.edges_of("nest")
    # a node has at most one nest parent
    assert np.bincount(d, minlength=len(f.kind)).max(initial=0) <= 1
    # a child starts within its parent
    assert (f.ts[d] >= f.ts[s]).all()
    host = _isin(f.kind[s], HOST_KINDS)
    # host nesting: host ranges on the same (pid, tid)
    assert _isin(f.kind[d[host]], HOST_KINDS).all()
    assert all(a == b for a, b in zip(f.pid[s[host]], f.pid[d[host]]))
    assert all(a == b for a, b in zip(f.tid[s[host]], f.tid[d[host]]))
    # device nesting: a gpu_annotation contains activities of its own (device, stream)
    dev = ~host
    assert (f.kind[s[dev]] == "gpu_annotation").all()
    assert (f.device[s[dev]] == f.device[d[dev]]).all()
    assert (f.stream[s[dev]] == f.stream[d[dev]]).all()


def test_host_seq_goes_forward_on_one_thread(kineto_facts) -> None:
    f = kineto_facts
    s, d = f.edges_of("host_seq")
    assert _isin(f.kind[s], HOST_KINDS).all() and _isin(f.kind[d], HOST_KINDS).all()
    assert (f.ts[d] >= f.ts[s]).all()
    assert all(a == b for a, b in zip(f.pid[s], f.pid[d]))
    assert all(a == b for a, b in zip(f.tid[s], f.tid[d]))
    # siblings in program order do not overlap (beyond the µs rounding tolerance), except
    # where a crossover range was moved out of a range it did not fit in (counted in health)
    overlapping = int((f.end[s] > f.ts[d] + NEST_TOLERANCE_NS).sum())
    crossovers = {h["code"]: h["count"] for h in f.G.graph["health"]}.get("nesting_crossover", 0)
    assert overlapping <= crossovers
    # one successor and one predecessor at most
    assert np.bincount(s, minlength=len(f.kind)).max(initial=0) <= 1
    assert np.bincount(d, minlength=len(f.kind)).max(initial=0) <= 1


def test_stream_seq_goes_forward_on_one_stream(kineto_facts) -> None:
    f = kineto_facts
    s, d = f.edges_of("stream_seq")
    assert _isin(f.kind[s], ACTIVITY_KINDS).all() and _isin(f.kind[d], ACTIVITY_KINDS).all()
    assert (f.ts[d] >= f.ts[s]).all()
    assert (f.device[s] == f.device[d]).all() and (f.stream[s] == f.stream[d]).all()
    # a chain per (device, stream): activities minus number of streams
    acts = f.ids[_isin(f.kind[f.ids], ACTIVITY_KINDS)]
    lanes = set(zip(f.device[acts].tolist(), f.stream[acts].tolist()))
    assert len(s) == len(acts) - len(lanes)


def test_sync_and_event_wait_edges(kineto_facts) -> None:
    f = kineto_facts
    s, d = f.edges_of("sync")
    assert _isin(f.kind[s], ACTIVITY_KINDS).all(), Counter(f.kind[s].tolist())
    assert (f.kind[d] == "runtime").all(), Counter(f.kind[d].tolist())
    # the awaited activity started before the call returned
    assert (f.ts[s] <= f.end[d]).all()
    for data, k in zip(f.edata, f.ekind):
        if k == "sync":
            assert type(data["inferred"]) is bool
            assert data["sync_kind"] in SYNC_KINDS
        elif k == "flow":
            assert isinstance(data.get("cat"), str)
    s, d = f.edges_of("event_wait")
    ev = np.array([data.get("evidence") for data, k in zip(f.edata, f.ekind) if k == "event_wait"], dtype=object)
    call = ev == "stream_wait_call"
    # a host-side wait: the cudaStreamWaitEvent call holds the activity launched right after it
    assert (f.kind[s[call]] == "runtime").all() and _isin(f.kind[d], ACTIVITY_KINDS).all()
    assert (f.end[s[call]] <= f.ts[d[call]]).all()
    act = ~call
    assert _isin(f.kind[s[act]], ACTIVITY_KINDS).all()
    assert ((f.device[s[act]] != f.device[d[act]]) | (f.stream[s[act]] != f.stream[d[act]])).all()


def test_span_and_graph_attributes(kineto_path, kineto_graph, kineto_facts) -> None:
    G, f = kineto_graph, kineto_facts
    ids = f.ids
    assert G.graph["span_ns"] == (int(f.ts[ids].min()), int(f.end[ids].max()))
    src = G.graph["source"]
    assert src["format"] == "kineto"
    assert Path(src["file"]).name == kineto_path.name
    assert len(src["sha256"]) == 64
    assert isinstance(G.graph["schema_version"], int)
    for h in G.graph["health"]:
        assert set(h) == {"code", "count", "example_eid", "message"} and h["count"] >= 1


def test_info_validates(kineto_graph) -> None:
    doc = trace_info(kineto_graph)
    validate(doc, "info.schema.json")
    assert doc["nodes"] == kineto_graph.number_of_nodes()
    assert doc["edges"] == kineto_graph.number_of_edges() == sum(doc["edges_by_kind"].values())
    assert sum(doc["nodes_by_kind"].values()) == doc["nodes"]
    assert doc["events"] == len(kineto_graph.graph["events"])
    span = kineto_graph.graph["span_ns"]
    assert doc["span"]["duration_us"] == pytest.approx((span[1] - span[0]) / 1000)
    acts = sum(doc["nodes_by_kind"].get(k, 0) for k in ACTIVITY_KINDS)
    assert sum(s["activities"] for s in doc["streams"]) == acts


# ------------------------------------------------------------------ `opgraph info --json`
INFO_TRACES = [
    "kineto_tbplugin_test_gpu_metrics_input.json",  # 2021 Operator category, plain JSON
    "hta_amd_mi250_minitoy_rocm6.2.json.gz",        # host and GPU ProfilerStep annotations
    "hta_old_format_inference_rank1.json.gz",       # old format, no steps
    "param_dlrm_8gpu_rank0.pt.trace.json.gz",
    "hta_nccl_data.json.gz",
]


def _raw_step_count(path: Path) -> int:
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    doc = json.loads(raw)
    events = doc if isinstance(doc, list) else doc["traceEvents"]
    names = {e["name"] for e in events
             if e.get("ph") == "X" and e.get("cat") in ("user_annotation", "Operator")
             and isinstance(e.get("name"), str) and STEP_RE.match(e["name"])}
    return len(names)


@pytest.mark.real_traces
@pytest.mark.parametrize("name", INFO_TRACES)
def test_info_json_cli(name: str, cli) -> None:
    path = KINETO_DIR / name
    if not path.exists():
        pytest.skip(f"{path} absent")
    r = cli(["info", str(path), "--json"])
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    validate(doc, "info.schema.json")
    n_steps = _raw_step_count(path)
    assert doc["iterations"]["count"] == n_steps
    assert len(doc["iterations"]["names"]) == n_steps
    assert all(STEP_RE.match(n) for n in doc["iterations"]["names"])
    assert doc["source"]["format"] == "kineto"
    assert doc["source"]["file"] == str(path)
