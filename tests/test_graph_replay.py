"""CUDA/HIP-graph replays attributed to the ops that captured them (opgraph/graph/graph_replay.py,
docs/graph-replay.md): exact on synthesized capture/replay pairs, and on the real vLLM
capture and replay traces in ../shared/traces."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest

import opgraph
from opgraph.analysis.device_breakdown import OUTSIDE_OPS, device_breakdown, device_breakdown_doc
from opgraph.graph.graph_replay import attach_capture_files, captured_graphs
from opgraph.ingest.readers import read_trace
from opgraph.schemas_util import validation_error
from opgraph.testing.synth_graph_replay import EXPECTED_OPS, LAYERS, write_pair

from conftest import TRACES, prose

A = TRACES / "A_kineto"
VLLM_EXEC = A / "tracelens_vllm_decode_full_graph_execution.json.gz"
VLLM_CAPTURE = A / "tracelens_vllm_decode_full_graph_capture_rank0.pt.trace.json.gz"
PIECEWISE_CAPTURE = A / "tracelens_vllm_prefilldecode_piecewise_graph_capture_rank0.pt.trace.json.gz"
STEPS = 2


def _ops(G) -> dict[str, dict]:
    doc = device_breakdown_doc(device_breakdown(G))
    assert validation_error(doc, "breakdown.schema.json") is None
    return {o["op"]: o for o in doc["ops"]}


def _build(cli, tmp_path: Path, replay: Path, *capture: Path, out: str = "g.gpickle"):
    args = ["build", str(replay), "-o", str(tmp_path / out)]
    for c in capture:
        args += ["--capture", str(c)]
    r = cli(args)
    assert r.exit_code == 0, r.stderr
    return opgraph.load(tmp_path / out), r.stderr


# --------------------------------------------------------------------------- synthesized
@pytest.mark.parametrize("names", [True, False], ids=["names", "no_names"])
def test_mapped_exactly(cli, tmp_path: Path, names: bool) -> None:
    rp, cp = write_pair(tmp_path, names=names, steps=STEPS)
    G, err = _build(cli, tmp_path, rp, cp)
    assert f"{STEPS * (3 * LAYERS + 1)}/{STEPS * (3 * LAYERS + 1)} replayed activities" in err
    gr = G.graph["graph_replay"]
    assert gr["mapped"] == gr["activities"] == STEPS * (3 * LAYERS + 1) and gr["unmapped"] == 0
    assert gr["mapped_by"]["name_order" if names else "position"] == gr["mapped"]
    ops = _ops(G)
    assert OUTSIDE_OPS not in ops
    for op, (k, us) in EXPECTED_OPS.items():
        assert ops[op]["kernels"] == ops[op]["graph_kernels"] == STEPS * k, op
        assert ops[op]["device_us"] == pytest.approx(STEPS * us, abs=1e-9), op
        assert ops[op]["count"] == 0  # never ran eagerly in the replay trace
    assert sum(o["device_us"] for o in ops.values()) == pytest.approx(STEPS * sum(us for _k, us in EXPECTED_OPS.values()))


def test_two_streams_with_names(cli, tmp_path: Path) -> None:
    """The replay order differs from the capture order: names still map every kernel right."""
    rp, cp = write_pair(tmp_path, names=True, two_streams=True, steps=STEPS)
    G, _ = _build(cli, tmp_path, rp, cp)
    ops = _ops(G)
    for op, (k, us) in EXPECTED_OPS.items():
        assert (ops[op]["kernels"], ops[op]["device_us"]) == (STEPS * k, pytest.approx(STEPS * us)), op


def test_two_streams_without_names_are_not_guessed(cli, tmp_path: Path) -> None:
    """No names and several streams: position would be a guess, so nothing is mapped; every
    replayed activity is named by its category, and info says why."""
    rp, cp = write_pair(tmp_path, names=False, two_streams=True, steps=STEPS)
    G, _ = _build(cli, tmp_path, rp, cp)
    gr = G.graph["graph_replay"]
    assert gr["mapped"] == 0 and gr["unmapped"] == STEPS * (3 * LAYERS + 1)
    ops = _ops(G)
    assert ops["(graph replay) GEMM"]["kernels"] == STEPS * LAYERS
    assert ops["(graph replay) attention"]["device_us"] == pytest.approx(STEPS * LAYERS * 30)
    assert ops["(graph replay) other"]["kernels"] == STEPS * LAYERS  # add_kernel: no rule fits its name
    assert ops["(graph replay) memcpy/memset"]["kernels"] == STEPS
    assert not any(op in ops for op in EXPECTED_OPS)
    codes = {h["code"] for h in G.graph["health"]}
    assert "graph_replay_unmapped" in codes


def test_without_capture_falls_back_to_categories(cli, tmp_path: Path) -> None:
    rp, _cp = write_pair(tmp_path, names=True, steps=STEPS)
    G, _ = _build(cli, tmp_path, rp)
    gr = G.graph["graph_replay"]
    assert (gr["replays"], gr["mapped"], gr["captures"]) == (STEPS, 0, [])
    ops = _ops(G)
    assert OUTSIDE_OPS not in ops
    assert sum(o["graph_kernels"] for o in ops.values()) == STEPS * (3 * LAYERS + 1)
    r = cli(["info", str(tmp_path / "g.gpickle")])
    out = prose(r.stdout)
    assert "no capture in the trace" in out and "graph_replay_unmapped" in out


def test_capture_in_the_same_trace(tmp_path: Path) -> None:
    """A trace holding both the capture and its replays needs no --capture."""
    from opgraph.testing.synth_graph_replay import capture_trace, replay_trace

    cap, rep = capture_trace(True), replay_trace(STEPS)
    p = tmp_path / "both.json"
    p.write_text(json.dumps({**cap, "traceEvents": cap["traceEvents"] + rep["traceEvents"]}))
    G = opgraph.load(p)
    assert G.graph["graph_replay"]["mapped"] == STEPS * (3 * LAYERS + 1)
    assert _ops(G)["aten::mm"]["graph_kernels"] == STEPS * LAYERS


def test_outputs_carry_the_mapping(cli, tmp_path: Path) -> None:
    rp, cp = write_pair(tmp_path, names=True, steps=STEPS)
    _build(cli, tmp_path, rp, cp)
    g = tmp_path / "g.gpickle"
    # info --json
    r = cli(["info", str(g), "--json"])
    doc = json.loads(r.stdout)
    assert validation_error(doc, "info.schema.json") is None
    assert doc["graph_replay"]["mapped"] == STEPS * (3 * LAYERS + 1)
    # Perfetto args
    out = tmp_path / "p.json"
    assert cli(["export", str(g), "--perfetto", str(out)]).exit_code == 0
    pdoc = json.loads(out.read_text())
    assert validation_error(pdoc, "perfetto-trace.schema.json") is None
    caps = [e for e in pdoc["traceEvents"] if "opgraph.captured_op" in e.get("args", {})]
    assert len(caps) == STEPS * (3 * LAYERS + 1)
    flash = [e for e in caps if e["name"] == "flash_fwd_kernel"]
    assert {e["args"]["opgraph.captured_op"] for e in flash} == {"vllm::attention > aten::_flash_attention_forward"}
    assert {e["args"]["opgraph.capture_annotation"] for e in flash} == {"## layer ##"}
    # the table shows the graph-replay column
    r = cli(["breakdown", str(g), "--device"])
    assert r.exit_code == 0 and "graph replay" in r.stdout
    # node-link JSON keeps the mapping
    G2, _ = _build(cli, tmp_path, rp, cp, out="g.json.gz")
    assert _ops(G2) == _ops(opgraph.load(g))


def test_bad_capture_inputs(cli, tmp_path: Path, one_line_error) -> None:
    rp, cp = write_pair(tmp_path, names=True, steps=STEPS)
    # a trace without any capture
    r = cli(["build", str(rp), "-o", str(tmp_path / "x.gpickle"), "--capture", str(rp)])
    one_line_error(r, rp, "no graph capture")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    one_line_error(cli(["build", str(rp), "-o", str(tmp_path / "x.gpickle"), "--capture", str(bad)]), bad)
    assert cli(["build", str(rp), "-o", str(tmp_path / "g.gpickle")]).exit_code == 0
    one_line_error(cli(["build", str(tmp_path / "g.gpickle"), "-o", str(tmp_path / "y.gpickle"), "--capture", str(cp)]),
                   tmp_path / "g.gpickle", "--capture")
    assert not (tmp_path / "x.gpickle").exists()


# --------------------------------------------------------------------------- real traces
def _raw_capture_launches(path: Path) -> list[list[tuple[str | None, int]]]:
    """Independent recount from the raw JSON: per capture window (begin/end on one thread),
    the launch calls inside it whose correlation ran no activity, as (kernel arg, ts)."""
    doc = json.load(gzip.open(path))
    ev = [e for e in doc["traceEvents"] if e.get("ph") == "X"]
    ran = {e["args"].get("correlation") for e in ev if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")}
    rt = [e for e in ev if e.get("cat") == "cuda_runtime"]
    rx = re.compile(r"^hip(LaunchKernel|ExtModuleLaunchKernel|ModuleLaunchKernel|Memcpy\w*|Memset\w*)$")
    begins = sorted((e for e in rt if "BeginCapture" in e["name"]), key=lambda e: e["ts"])
    ends = sorted((e for e in rt if "EndCapture" in e["name"]), key=lambda e: e["ts"])
    out = []
    for b in begins:
        e = next(x for x in ends if x["tid"] == b["tid"] and x["ts"] >= b["ts"] + b["dur"])
        calls = [x for x in rt if rx.match(x["name"]) and x["tid"] == b["tid"] and x["ts"] >= b["ts"] + b["dur"]
                 and x["ts"] + x["dur"] <= e["ts"] and x["args"].get("correlation") not in ran]
        out.append([(x["args"].get("kernel"), x["ts"]) for x in sorted(calls, key=lambda x: x["ts"])])
    return out


@pytest.mark.skipif(not VLLM_EXEC.exists() or not VLLM_CAPTURE.exists(), reason="vLLM traces not available")
def test_vllm_full_graph_replay(cli, tmp_path: Path) -> None:
    """The vLLM decode step replays one full graph of 421 kernels under one hipGraphLaunch:
    with the capture trace, at most 5 % of kernel time may stay outside any op (0 here)."""
    G, err = _build(cli, tmp_path, VLLM_EXEC, VLLM_CAPTURE)
    gr = G.graph["graph_replay"]
    assert (gr["replays"], gr["activities"], gr["mapped"]) == (1, 421, 421)
    assert gr["mapped_by"]["name_order"] == 421
    # each mapped kernel is the capture-time node with the same name
    raw = _raw_capture_launches(VLLM_CAPTURE)
    assert len(raw) == 1 and len(raw[0]) == 421
    names = [n for n, _t in raw[0]]
    for eid, node in zip(gr["map"]["eid"], gr["map"]["node"]):
        assert G.nodes[eid]["name"].strip() == names[node].strip()
    ops = _ops(G)
    total = sum(o["device_us"] for o in ops.values())
    outside = ops.get(OUTSIDE_OPS, {"device_us": 0.0})["device_us"]
    assert outside <= 0.05 * total
    assert sum(o["graph_kernels"] for o in ops.values()) == 421
    assert ops["vllm::moe_forward"]["graph_kernels"] == ops["vllm::moe_forward"]["kernels"] > 0
    # without the capture: nothing outside any op either, but only categories
    G0, _ = _build(cli, tmp_path, VLLM_EXEC, out="g0.gpickle")
    ops0 = _ops(G0)
    assert sum(o["graph_kernels"] for n, o in ops0.items() if n.startswith("(graph replay)")) == 421
    assert sum(o["device_us"] for o in ops0.values()) == pytest.approx(total)


@pytest.mark.skipif(not PIECEWISE_CAPTURE.exists(), reason="piecewise capture trace not available")
def test_piecewise_captures_parsed() -> None:
    """25 piecewise captures: each graph's nodes equal an independent recount from the raw
    JSON, with every kernel name recorded and every node inside some op."""
    graphs = captured_graphs(read_trace(PIECEWISE_CAPTURE))
    raw = _raw_capture_launches(PIECEWISE_CAPTURE)
    assert len(graphs) == len(raw) == 25
    for g, r in zip(graphs, raw):
        assert [n for n, _t in r] == g.names
        assert g.names_recorded and all(g.chains)
        assert g.label and g.label.startswith("capture_")


@pytest.mark.skipif(not VLLM_EXEC.exists() or not PIECEWISE_CAPTURE.exists(), reason="vLLM traces not available")
def test_wrong_capture_does_not_map() -> None:
    """The piecewise capture does not hold the full graph: at most the pieces whose kernel
    names match are mapped, never by position, and the rest are counted as unmapped."""
    t = read_trace(VLLM_EXEC)
    doc = attach_capture_files(t, [str(PIECEWISE_CAPTURE)])
    assert doc is not None and doc["mapped_by"]["position"] == 0
    assert doc["mapped"] + doc["unmapped"] == 421


@pytest.mark.parametrize("name", ["hta_negative_queue_length_rank0.json.gz", "tracelens_sglang_qwen3_8b_decode.json.gz"])
def test_real_replays_without_capture(name: str) -> None:
    """Graph replays with no capture available: every replayed activity is counted and
    named (its enclosing op, else its category); per-op device time still sums to the
    activities' time."""
    p = A / name
    if not p.exists():
        pytest.skip(f"{name} not available")
    G = opgraph.load(p)
    gr = G.graph["graph_replay"]
    assert gr["replays"] >= 1 and gr["mapped"] == 0 and gr["unmapped"] == gr["activities"] > 0
    db = device_breakdown(G)
    ops = db.ops
    assert int(ops["graph_kernels"].sum()) == gr["activities"] - _outside_window(G, db)
    assert int(ops["device_ns"].sum()) == int(db.items[db.items["kind"] != "op"]["time_ns"].sum())


def _outside_window(G, db) -> int:
    """Replayed activities that do not overlap the analysis window (not counted there)."""
    w = db.window
    ev = G.graph["events"]
    launches = {int(e) for e, n in zip(ev["eid"], ev["name"]) if isinstance(n, str) and n.endswith("GraphLaunch")}
    corr = {int(ev["correlation"].iat[e]) for e in launches}
    n = 0
    for _u, d in G.nodes(data=True):
        if d["kind"] in ("kernel", "memcpy", "memset") and d["correlation"] in corr:
            if not (d["ts"] + d["dur"] > w.start and d["ts"] < w.end):
                n += 1
    return n


def test_report_names_graph_replays(cli, tmp_path: Path) -> None:
    """`report` says replayed kernels have no launching CPU op and points to the capture,
    and that the achieved rate is over the modelled kernels only."""
    rp, _cp = write_pair(tmp_path, names=True, steps=STEPS)
    r = cli(["report", str(rp)])
    assert r.exit_code == 0, r.stderr
    out = prose(r.stdout)
    assert "with no launching CPU op in the trace (CUDA/HIP-graph replays among them" in out
