"""Sync linking: per-call inference of blocking calls without a record (audit D9), device
work launched before the trace (D4), MTIA device records and copies (D7), and CUDA/HIP
graph launches (D8).

Synthesized traces (opgraph.testing.synth_syncs) are built through the normal reader and
builder and must give exactly the edges known by construction; the real-trace checks use
../shared/traces (skipped when absent, see conftest.py). Times are ns unless named µs.
"""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np
import pytest

from opgraph.graph.build import SYNC_TOLERANCE_NS
from opgraph.graph.io import load_any
from opgraph.testing.synth_syncs import (
    CASES, SyncCase, graph_launch, mtia_stream_events, per_call_syncs, pre_trace_kernels,
)

KINETO_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "traces" / "A_kineto"
#: Health codes of sync linking; a case lists the ones it expects, the others must be absent.
SYNC_HEALTH = ("cuda_sync_absent", "sync_inferred", "sync_unresolved")
GRAPH_LAUNCH_RE = re.compile(r"^(cuda|hip)GraphLaunch")


def _build(case: SyncCase, tmp_path: Path) -> nx.DiGraph:
    path = tmp_path / f"{case.name}.json"
    path.write_text(json.dumps(case.trace))
    return load_any(path)


def _edges(G: nx.DiGraph, kind: str) -> list[tuple[int, int, dict[str, Any]]]:
    return [(u, v, d) for u, v, d in G.edges(data=True) if d["kind"] == kind]


def _sync_set(G: nx.DiGraph) -> set[tuple[int, int, str, bool]]:
    return {(u, v, d["sync_kind"], d["inferred"]) for u, v, d in _edges(G, "sync")}


def _health(G: nx.DiGraph) -> dict[str, dict[str, Any]]:
    return {h["code"]: h for h in G.graph["health"]}


def _named(case: SyncCase, edges: set) -> list[tuple]:
    """Edges with event labels, for readable failure messages."""
    lbl = {e: n for n, e in case.eids.items()}
    return sorted(tuple(lbl.get(x, x) for x in e) for e in edges)


# ----------------------------------------------------------------------- synthesized
@pytest.mark.parametrize("name", sorted(CASES))
def test_synth_case_edges(name: str, tmp_path: Path) -> None:
    """Every synthesized case gives exactly its sync and event_wait edges, its launches,
    kinds and sync health counts."""
    case = CASES[name]()
    G = _build(case, tmp_path)
    got = _sync_set(G)
    assert got == case.sync, f"missing {_named(case, case.sync - got)}, extra {_named(case, got - case.sync)}"
    waits = {(u, v) for u, v, _ in _edges(G, "event_wait")}
    assert waits == case.event_wait, (_named(case, waits), _named(case, case.event_wait))
    launches = {(u, v) for u, v, _ in _edges(G, "launch")}
    assert case.launch <= launches, _named(case, case.launch - launches)
    for e, k in case.kinds.items():
        assert G.nodes[e]["kind"] == k if k else e not in G, (case.eids, e, k)
    h = _health(G)
    for code in SYNC_HEALTH:
        assert h.get(code, {}).get("count", 0) == case.health.get(code, 0), (code, h.get(code))
        if code in case.health:
            ex = h[code]["example_eid"]
            assert ex in {v for _, v, _, inf in case.sync if inf}, (code, ex)
    assert nx.is_directed_acyclic_graph(G.to_networkx())


def test_per_call_inference_beside_records(tmp_path: Path) -> None:
    """D9: in a trace with cuda_sync records, a cudaDeviceSynchronize without its own
    record still waits for every stream (inferred), and the recorded one is not inferred."""
    case = per_call_syncs()
    G = _build(case, tmp_path)
    e = case.eids
    into = {c: {(u, d["inferred"]) for u, _, d in G.in_edges(c, data=True) if d["kind"] == "sync"}
            for c in (e["S1"], e["S2"])}
    assert into[e["S1"]] == {(e["K1"], False), (e["K2"], False)}
    assert into[e["S2"]] == {(e["K3"], True), (e["K4"], True)}
    msg = _health(G)["sync_inferred"]["message"]
    assert "1 device" in msg and "1 stream" in msg and "1 memcpy" in msg


def test_pre_trace_kernels_are_awaited(tmp_path: Path) -> None:
    """D4: kernels launched before the trace that run while a device sync is in progress
    are waited for: the edge comes from the one that ends last inside the call, never from
    the one that ended before the call started."""
    case = pre_trace_kernels()
    G = _build(case, tmp_path)
    e = case.eids
    src = {u for u, _, d in G.in_edges(e["D1"], data=True) if d["kind"] == "sync"}
    assert e["P3"] in src and e["P1"] not in src
    assert _health(G)["kernel_without_launch"]["count"] == 3


def test_mtia_records_are_not_compute(tmp_path: Path) -> None:
    """D7 on the synthesized MTIA trace: copies are memcpy, event records/waits and the
    device-side synchronize are not nodes; a host-side synchronize stays a runtime call."""
    case = mtia_stream_events()
    G = _build(case, tmp_path)
    names = {d["name"] for _, d in G.nodes(data=True) if d["kind"] == "kernel"}
    assert names == {"remote", "merge", "pe_exe"}
    ev = G.graph["events"]
    kinds = dict(zip(ev["name"].astype(object), ev["kind"].astype(object)))
    assert kinds["event_record"] == kinds["event_wait"] == "cuda_sync"
    # the device-side synchronize mirrors SS: no correlation collision with its host call
    assert "correlation_collision" not in _health(G)


def test_graph_launch_links_every_kernel(tmp_path: Path) -> None:
    """D8: one cudaGraphLaunch whose correlation is carried by N kernels has a launch edge
    to each of them (and to nothing else)."""
    for n in (1, 7):
        case = graph_launch(n)
        G = _build(case, tmp_path)
        g = case.eids["G"]
        out = {v for _, v, d in G.out_edges(g, data=True) if d["kind"] == "launch"}
        assert out == {case.eids[f"GK{j}"] for j in range(n)}
        assert "launch_without_kernel" not in _health(G)


# ------------------------------------------------------------------------ real traces
def _real(name: str) -> Path:
    p = KINETO_DIR / name
    if not p.exists():
        pytest.skip(f"{p} absent")
    return p


def _load_events(path: Path) -> dict[str, Any]:
    raw = path.read_bytes()
    return json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)


@pytest.mark.real_traces
def test_alexnet_round_trip_without_one_context_sync(tmp_path: Path) -> None:
    """D9 round trip: drop the Context Sync record (and its flow end) of one
    cudaDeviceSynchronize from a trace with records; the call keeps sync edges to the same
    activities, now inferred, and the health says so."""
    path = _real("hta_critical_path_alexnet.json.gz")
    G0 = load_any(path)
    doc = _load_events(path)
    ev = doc["traceEvents"]
    rt_corr = {e["args"]["correlation"]: e for e in ev
               if e.get("cat") == "cuda_runtime" and e.get("name") == "cudaDeviceSynchronize"}
    rec = next(e for e in ev if e.get("cat") == "cuda_sync" and e.get("name") == "Context Sync"
               and e["args"]["correlation"] in rt_corr and rt_corr[e["args"]["correlation"]]["dur"] > 100)
    corr = rec["args"]["correlation"]
    call = next(n for n, d in G0.nodes(data=True) if d["kind"] == "runtime" and d.get("correlation") == corr)
    before = {u for u, _, d in G0.in_edges(call, data=True) if d["kind"] == "sync"}
    assert before and all(not G0.edges[u, call]["inferred"] for u in before)
    n_before = sum(1 for _, _, d in G0.edges(data=True) if d["kind"] == "sync")

    def is_flow_end(e: dict[str, Any]) -> bool:
        return (e.get("ph") == "f" and e.get("id") == corr and e.get("pid") == rec["pid"]
                and e.get("tid") == rec["tid"] and e.get("ts") == rec["ts"])

    drop = {i for i, e in enumerate(ev) if e is rec or is_flow_end(e)}
    assert len(drop) == 2
    # eids are positions: keep the ids of the events before each dropped one comparable
    old_of_new = [i for i in range(len(ev)) if i not in drop]
    doc["traceEvents"] = [ev[i] for i in old_of_new]
    mod = tmp_path / "alexnet_minus_one_context_sync.json"
    mod.write_text(json.dumps(doc))
    G1 = load_any(mod)
    new_call = next(n for n, d in G1.nodes(data=True) if d["kind"] == "runtime" and d.get("correlation") == corr)
    after = {(old_of_new[u], d["inferred"]) for u, _, d in G1.in_edges(new_call, data=True) if d["kind"] == "sync"}
    assert after == {(u, True) for u in before}
    assert sum(1 for _, _, d in G1.edges(data=True) if d["kind"] == "sync") == n_before
    h = _health(G1)["sync_inferred"]
    assert h["count"] == 1 and old_of_new[h["example_eid"]] == call
    assert "sync_inferred" not in _health(G0)


@pytest.mark.real_traces
def test_mi300_qwen_device_sync_waits_for_pre_trace_kernels() -> None:
    """D4 on tracelens_mi300_qwen1.5_0.5b: the hipDeviceSynchronize of ProfilerStep#6
    waits for the pre-trace kernel that ends ~9 µs before it returns, not for one that
    ended 13 ms earlier."""
    G = load_any(_real("tracelens_mi300_qwen1.5_0.5b.json.gz"))
    step = next(n for n, d in G.nodes(data=True) if d["name"] == "ProfilerStep#6")
    s0, s1 = G.nodes[step]["ts"], G.nodes[step]["ts"] + G.nodes[step]["dur"]
    call = min((n for n, d in G.nodes(data=True) if d["name"] == "hipDeviceSynchronize" and s0 <= d["ts"] < s1),
               key=lambda n: G.nodes[n]["ts"])
    c = G.nodes[call]
    c_end = c["ts"] + c["dur"]
    src = [u for u, _, d in G.in_edges(call, data=True) if d["kind"] == "sync"]
    assert len(src) == 1
    a = G.nodes[src[0]]
    a_end = a["ts"] + a["dur"]
    assert c["ts"] < a_end <= c_end and c_end - a_end < 20_000, (a_end - c_end) / 1000
    # it was launched before the trace: no launch edge into it
    assert not any(d["kind"] == "launch" for _, _, d in G.in_edges(src[0], data=True))


@pytest.mark.real_traces
def test_mtia_inference_trace() -> None:
    """D7 on hta_mtia_inference_rank0: no kernel named dma_request/event_record/event_wait;
    the dma requests are memcpy; every synchronizeStream gets its (recorded) stream sync
    edge and the device event waits become event_wait edges."""
    G = load_any(_real("hta_mtia_inference_rank0.json.gz"))
    kernels = {d["name"] for _, d in G.nodes(data=True) if d["kind"] == "kernel"}
    assert not kernels & {"dma_request", "event_record", "event_wait"}
    assert kernels
    assert {d["name"] for _, d in G.nodes(data=True) if d["kind"] == "memcpy"} == {"dma_request"}
    syncs = _edges(G, "sync")
    assert syncs
    calls = [n for n, d in G.nodes(data=True) if d["name"] == "synchronizeStream"]
    synced = {v for _, v, _ in syncs}
    assert set(calls) <= synced
    assert all(d["sync_kind"] == "stream" and not d["inferred"] for u, v, d in syncs if v in set(calls))
    # the 48 recorded device event waits; the stream waits opgraph infers on top carry their evidence
    waits = [e for e in _edges(G, "event_wait") if not e[2].get("inferred")]
    assert len(waits) == 48
    inferred = [e for e in _edges(G, "event_wait") if e[2].get("inferred")]
    assert all(d.get("evidence") in {"stream_join", "stream_end", "stream_wait_call", "stream_wait_work"}
               for _, _, d in inferred)
    for u, v, _ in waits:
        a, b = G.nodes[u], G.nodes[v]
        assert a["stream"] != b["stream"] and a["ts"] + a["dur"] <= b["ts"] + SYNC_TOLERANCE_NS


def _launch_ts(f) -> np.ndarray:
    """Launch call start (ns) per eid; very negative where no launch edge (pre-trace)."""
    out = np.full(len(f.kind), np.iinfo(np.int64).min // 4, dtype=np.int64)
    s, d = f.edges_of("launch")
    out[d] = f.ts[s]
    return out


@pytest.mark.real_traces
def test_sync_never_skips_a_later_activity(kineto_facts) -> None:
    """On every real trace: a sync edge (not an event sync) from an activity that ended
    before the call started is only allowed when no activity of the same stream, launched
    before the call started (or before the trace) and not by the call itself, ended inside
    the call."""
    f = kineto_facts
    s, d = f.edges_of("sync")
    kinds = np.array([dd.get("sync_kind") for dd, k in zip(f.edata, f.ekind) if k == "sync"], dtype=object)
    early = (f.end[s] < f.ts[d]) & (kinds != "event")
    if not early.any():
        return
    acts = f.ids[np.isin(f.kind[f.ids], ["kernel", "memcpy", "memset"])]
    lts = _launch_ts(f)
    ls, ld = f.edges_of("launch")
    launcher = np.full(len(f.kind), -1, dtype=np.int64)
    launcher[ld] = ls
    for a, c in zip(s[early].tolist(), d[early].tolist()):
        same = acts[(f.device[acts] == f.device[a]) & (f.stream[acts] == f.stream[a])]
        bad = same[(lts[same] <= f.ts[c]) & (launcher[same] != c) & (f.end[same] > f.ts[c])
                   & (f.end[same] <= f.end[c] + SYNC_TOLERANCE_NS)]
        assert not len(bad), (f.G.nodes[c]["name"], a, bad[:5].tolist())


@pytest.mark.real_traces
def test_graph_launches_reach_every_graph_kernel(kineto_facts) -> None:
    """D8 on every real trace with CUDA/HIP graph launches: every device activity carrying a
    graph launch's correlation (in the launch's process) has that launch edge."""
    f = kineto_facts
    rts = f.ids[f.kind[f.ids] == "runtime"]
    names = [f.G.nodes[n]["name"] for n in rts.tolist()]
    graphs = rts[np.fromiter((bool(GRAPH_LAUNCH_RE.match(n or "")) for n in names), dtype=bool, count=len(rts))]
    if not len(graphs):
        return
    acts = f.ids[np.isin(f.kind[f.ids], ["kernel", "memcpy", "memset"])]
    ls, ld = f.edges_of("launch")
    have = set(zip(ls.tolist(), ld.tolist()))
    rt_corr = f.corr[rts]
    for g in graphs.tolist():
        # a correlation carried by calls of several processes: the collision rule applies
        if (rt_corr == f.corr[g]).sum() > 1:
            continue
        carried = acts[f.corr[acts] == f.corr[g]]
        assert len(carried)
        missing = [a for a in carried.tolist() if (g, a) not in have]
        assert not missing, (g, missing[:5])
