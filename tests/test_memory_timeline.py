"""``opgraph memory`` / ``memory_timeline``: exact on the synthesized ``memory`` scenario
(peak, per-op bytes, live at peak, per step), odd [memory] events never crash, the CLI
(schema, table files, a trace without memory events), the Perfetto counter, and invariants
on every real trace that has [memory] events."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import jsonschema
import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

import opgraph
from opgraph.analysis.memory_timeline import NO_MEMORY, OUTSIDE_OPS, device_type_name, memory_timeline
from opgraph.cli import main
from opgraph.testing.synth import synthesize, write_scenario

from conftest import KINETO_FILES, kineto_params, load_graph

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = json.loads((ROOT / "schemas" / "memory-timeline.schema.json").read_text())
MIB = 1 << 20
T0 = 1_700_000_000_000_000


@pytest.fixture(scope="module")
def synth(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    sc = synthesize("memory")
    return write_scenario(sc, tmp_path_factory.mktemp("mem")), sc.answers


@pytest.fixture(scope="module")
def synth_result(synth):
    path, _ = synth
    G = opgraph.load(path)
    return G, memory_timeline(G)


def _key(r) -> tuple[str, int]:
    return r["device_type"], int(r["device"])


# ----------------------------------------------------------------------- exact answers
def test_memory_events_are_not_nodes(synth, synth_result) -> None:
    _, ans = synth
    G, _ = synth_result
    kinds = {}
    for _, d in G.nodes(data=True):
        kinds[d["kind"]] = kinds.get(d["kind"], 0) + 1
    assert {k: v for k, v in ans["nodes_by_kind"].items() if v} == kinds
    ev = G.graph["events"]
    assert int((ev["name"] == "[memory]").sum()) == sum(d["events"] for d in ans["memory"]["devices"])


def test_exact_answers(synth, synth_result) -> None:
    _, ans = synth
    _, m = synth_result
    dev = {_key(r): r for r in m.devices.to_dict("records")}
    for a in ans["memory"]["devices"]:
        r = dev[(device_type_name(a["device_type"]), a["device"])]
        for k in ("events", "allocations", "alloc_bytes", "start_allocated_bytes", "end_allocated_bytes",
                  "peak_allocated_bytes", "peak_reserved_bytes", "live_at_peak_bytes"):
            assert int(r[k]) == a[k], k
        assert r["peak_allocated_us"] == a["peak_ts_ns"] / 1e3
        assert r["total_mismatch_events"] == 0 and r["has_totals"]
        key = r["device_type"], r["device"]
        al = m.allocators[(m.allocators["device_type"] == key[0]) & (m.allocators["device"] == key[1])]
        got = sorted((x["op"], x["inner_op"], x["allocations"], x["alloc_bytes"]) for x in al.to_dict("records"))
        assert got == sorted((x["op"], x["inner_op"], x["allocations"], x["alloc_bytes"]) for x in a["allocators"])
        lv = m.live_at_peak[(m.live_at_peak["device_type"] == key[0]) & (m.live_at_peak["device"] == key[1])]
        got = sorted((x["op"], x["inner_op"], x["allocations"], x["live_bytes"]) for x in lv.to_dict("records"))
        assert got == sorted((x["op"], x["inner_op"], x["allocations"], x["live_bytes"]) for x in a["live_at_peak"])
        st = m.steps[(m.steps["device_type"] == key[0]) & (m.steps["device"] == key[1])]
        assert [(s["name"], s["peak_allocated_bytes"], s["start_allocated_bytes"], s["end_allocated_bytes"])
                for s in st.to_dict("records")] == [
            (s["name"], s["peak_allocated_bytes"], s["start_allocated_bytes"], s["end_allocated_bytes"])
            for s in a["steps"]]
    # the figures stated by construction (docstring of the scenario)
    gpu = dev[("CUDA", 0)]
    assert (gpu["peak_allocated_bytes"], gpu["live_at_peak_bytes"], gpu["pre_trace_at_peak_bytes"]) == (
        102 * MIB, 38 * MIB, 64 * MIB)
    assert (gpu["peak_reserved_bytes"], gpu["live_at_end_bytes"]) == (160 * MIB, 16 * MIB)
    assert dev[("CPU", -1)]["peak_allocated_bytes"] == MIB
    assert OUTSIDE_OPS in set(m.allocators["op"])
    assert m.warnings == [] and m.window_source == "profiler_step"


def test_window_all_has_no_steps(synth) -> None:
    m = memory_timeline(opgraph.load(synth[0]), window="all")
    assert m.steps.empty and m.window_source == "all" and len(m.devices) == 2


# ----------------------------------------------------------------------- odd input
def _mem(ts: int, args, tid: int = 1) -> dict:
    return {"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 1, "tid": tid,
            "ts": T0 + ts, "args": args}


def _odd_trace(tmp_path: Path) -> Path:
    ok = {"Device Type": 1, "Device Id": 0}
    ev = [
        {"ph": "X", "cat": "cpu_op", "name": "aten::empty", "pid": 1, "tid": 1, "ts": T0, "dur": 100, "args": {}},
        _mem(10, {**ok, "Bytes": 100, "Addr": 1, "Total Allocated": 1100, "Total Reserved": 2048}),
        _mem(11, {**ok, "Bytes": "100", "Addr": 2}),                       # string bytes
        _mem(12, {**ok, "Bytes": True, "Addr": 3}),                        # bool bytes
        _mem(13, {**ok, "Addr": 4}),                                       # missing bytes
        _mem(14, None),                                                    # no args
        _mem(15, {"Bytes": 8, "Addr": 5}),                                 # no device
        _mem(16, {**ok, "Bytes": 1.5, "Addr": 6}),                         # fractional bytes
        _mem(17, {**ok, "Bytes": 50, "Addr": [1], "Total Allocated": "x"}),  # bad addr and total
        _mem(18, {**ok, "Bytes": 60.0, "Addr": 7, "Total Allocated": 1210, "Total Reserved": 4096}),
        _mem(200, {**ok, "Bytes": -100, "Addr": 1, "Total Allocated": 1110}),
        _mem(201, {"Device Type": 0, "Device Id": -1, "Bytes": 16, "Addr": 9}, tid=2),
    ]
    p = tmp_path / "odd.json"
    p.write_text(json.dumps({"traceEvents": ev}))
    return p


def test_odd_events_skipped_and_counted(tmp_path: Path) -> None:
    m = memory_timeline(opgraph.load(_odd_trace(tmp_path)))
    codes = {w.code: w.count for w in m.warnings}
    assert codes["memory_bad_args"] == 1
    assert codes["memory_bytes_missing"] == 1
    assert codes["memory_bytes_bad"] == 3                    # "100", True, 1.5
    assert codes["memory_device_bad"] == 1
    assert codes["memory_total_bad"] == 1 and codes["memory_no_addr"] == 1
    dev = {_key(r): r for r in m.devices.to_dict("records")}
    gpu = dev[("CUDA", 0)]
    assert gpu["events"] == 4 and gpu["allocations"] == 3 and gpu["alloc_bytes"] == 210
    assert gpu["start_allocated_bytes"] == 1000 and gpu["peak_allocated_bytes"] == 1210
    assert gpu["peak_reserved_bytes"] == 4096 and gpu["total_mismatch_events"] == 0
    assert pd.isna(gpu["live_at_peak_bytes"])  # one of its events has no usable Addr
    cpu = dev[("CPU", -1)]
    assert cpu["peak_allocated_bytes"] == 16 and not cpu["has_totals"]
    assert set(m.allocators["inner_op"]) == {"aten::empty", OUTSIDE_OPS}
    doc = m.to_dict(series=True)
    jsonschema.validate(doc, SCHEMA)


def test_total_mismatch_is_reported(tmp_path: Path) -> None:
    ok = {"Device Type": 1, "Device Id": 0}
    ev = [_mem(1, {**ok, "Bytes": 10, "Addr": 1, "Total Allocated": 10}),
          _mem(2, {**ok, "Bytes": 10, "Addr": 2, "Total Allocated": 25})]   # a 5-byte event is missing
    p = tmp_path / "mismatch.json"
    p.write_text(json.dumps({"traceEvents": ev}))
    m = memory_timeline(opgraph.load(p))
    r = m.devices.iloc[0]
    assert (r["total_mismatch_events"], r["max_total_mismatch_bytes"]) == (1, 5)
    assert "memory_total_mismatch" in {w.code for w in m.warnings}


# ----------------------------------------------------------------------- CLI
def test_cli_json_validates(synth) -> None:
    r = CliRunner().invoke(main, ["memory", str(synth[0]), "--json", "--series"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    jsonschema.validate(doc, SCHEMA)
    assert doc["memory_events"] == 26 and len(doc["series"]) == 26
    gpu = next(d for d in doc["devices"] if d["device_type"] == "CUDA")
    assert gpu["peak_allocated_bytes"] == 102 * MIB


def test_cli_text_and_csv(synth, tmp_path: Path) -> None:
    r = CliRunner().invoke(main, ["memory", str(synth[0]), "--top", "2"])
    assert r.exit_code == 0, r.output
    assert "aten::linear" in r.output and "102.000" in r.output
    out = tmp_path / "csv"
    r = CliRunner().invoke(main, ["memory", str(synth[0]), "--csv", str(out)])
    assert r.exit_code == 0, r.output
    names = sorted(p.name for p in out.iterdir())
    assert len(names) == 5 and all(n.endswith(".csv") for n in names)
    assert any("allocators" in n for n in names) and any("series" in n for n in names)


def test_cli_without_memory_events(tmp_path: Path) -> None:
    trace = write_scenario(synthesize("gpu_bound"), tmp_path)
    r = CliRunner().invoke(main, ["memory", str(trace)])
    assert r.exit_code == 0, r.output
    assert r.output.strip() == NO_MEMORY
    r = CliRunner().invoke(main, ["memory", str(trace), "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    jsonschema.validate(doc, SCHEMA)
    assert doc["memory_events"] == 0 and doc["devices"] == [] and doc["allocators"] == []


def test_cli_bad_window(synth) -> None:
    r = CliRunner().invoke(main, ["memory", str(synth[0]), "--window", "nope"])
    assert r.exit_code == 2 and "--window 'nope'" in r.output


# ----------------------------------------------------------------------- Perfetto counter
def test_perfetto_memory_counter(synth_result) -> None:
    from opgraph.export.perfetto.overlay import build_overlay

    G, _ = synth_result
    ov = build_overlay(G)
    mem = [c for c in ov.counters if c["name"] == "CUDA 0 memory"]
    assert max(c["args"]["allocated"] for c in mem) == 102 * MIB
    assert max(c["args"]["reserved"] for c in mem) == 160 * MIB
    assert mem[0]["pid"] == 0  # the GPU's process (its kernels' pid)
    assert any(c["name"] == "CPU -1 memory" for c in ov.counters)


# ----------------------------------------------------------------------- real traces
def _has_memory(path: Path) -> bool:
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rb") as f:
        tail = b""
        while chunk := f.read(1 << 22):
            if b'"[memory]"' in tail + chunk:
                return True
            tail = chunk[-16:]
    return False


@pytest.mark.real_traces
@pytest.mark.parametrize("path", kineto_params())
def test_real_trace_invariants(path: Path) -> None:
    if not _has_memory(path):
        pytest.skip("no [memory] events")
    m = memory_timeline(load_graph(path))
    assert m.memory_events > 0 and len(m.devices)
    s, d = m.series, m.devices.set_index(["device_type", "device"])
    for key, grp in s.groupby(["device_type", "device"]):
        r = d.loc[key]
        # the time series against the trace's own Total Allocated: equal, or the difference reported
        has = grp["trace_allocated_bytes"].notna().to_numpy()
        diff = np.abs(grp["allocated_bytes"].to_numpy()[has] - grp["trace_allocated_bytes"].to_numpy()[has].astype(np.int64))
        assert int((diff != 0).sum()) == r["total_mismatch_events"]
        assert int(diff.max(initial=0)) == r["max_total_mismatch_bytes"]
        # the peaks bound every sample and are reached
        assert r["peak_allocated_bytes"] == grp["allocated_bytes"].max()
        if grp["reserved_bytes"].notna().any():
            assert r["peak_reserved_bytes"] == grp["reserved_bytes"].max()
        assert r["end_allocated_bytes"] == grp["allocated_bytes"].iloc[-1]
        assert (np.diff(grp["ts_us"].to_numpy()) >= 0).all()
        # per-op bytes and counts add up to the device's allocations
        al = m.allocators[(m.allocators["device_type"] == key[0]) & (m.allocators["device"] == key[1])]
        assert al["alloc_bytes"].sum() == r["alloc_bytes"] == grp["bytes"].clip(lower=0).sum()
        assert al["allocations"].sum() == r["allocations"]
        lv = m.live_at_peak[(m.live_at_peak["device_type"] == key[0]) & (m.live_at_peak["device"] == key[1])]
        if not pd.isna(r["live_at_peak_bytes"]):
            assert lv["live_bytes"].sum() == r["live_at_peak_bytes"] <= r["peak_allocated_bytes"] - min(
                0, int(r["start_allocated_bytes"]))
            if r["has_totals"] and r["total_mismatch_events"] == 0:
                assert r["pre_trace_at_peak_bytes"] >= 0
        st = m.steps[(m.steps["device_type"] == key[0]) & (m.steps["device"] == key[1])]
        assert (st["peak_allocated_bytes"] <= r["peak_allocated_bytes"]).all()
        assert (st["peak_allocated_bytes"] >= st[["start_allocated_bytes", "end_allocated_bytes"]].max(axis=1)).all()
    jsonschema.validate(m.to_dict(), SCHEMA)


KNOWN = ("tracelens_h100_bert_small.json.gz", "tracelens_mi300_qwen1.5_0.5b.json.gz",
         "kineto_tbplugin_resnet50_w0_2021-06.pt.trace.json.gz", "hta_df_index_resolver.json.gz",
         "tracelens_normalization_layer.json.gz")


@pytest.mark.real_traces
def test_known_real_traces_self_consistent() -> None:
    """The traces named in the catalog as having [memory] events: every Total Allocated
    equals the running sum (no mismatch), and the expected device types."""
    paths = {p.name: p for p in KINETO_FILES}
    if not all(n in paths for n in KNOWN):
        pytest.skip("reference traces not all present")
    for name in KNOWN:
        m = memory_timeline(load_graph(paths[name]))
        assert (m.devices["total_mismatch_events"] == 0).all(), name
        assert "CPU" in set(m.devices["device_type"]), name
    m = memory_timeline(load_graph(paths["tracelens_h100_bert_small.json.gz"]))
    gpu = m.devices.set_index("device_type").loc["CUDA"]
    assert (gpu["peak_allocated_bytes"], gpu["peak_reserved_bytes"]) == (101305344, 121634816)
