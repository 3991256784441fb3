"""Perfetto overlay export (``opgraph export --perfetto``) and the Chrome-trace checker.

Exact answers on synthesized traces (critical args, flows across lanes, counters whose
integrals are the known busy time and launch delays), invariants on real traces: the
original events come back unchanged through opgraph's own reader, the checker finds no
problem the input did not have, every flow end binds to the slice it was meant for.
"""

from __future__ import annotations

import gzip
import json
from collections import defaultdict
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from opgraph.analysis.critical_path.boundary_edges import CATEGORIES
from opgraph.analysis.critical_path.path import critical_path
from opgraph.analysis.idle import idle_time
from opgraph.cli import main
from opgraph.export.perfetto.check import check_chrome_trace, load_trace_doc, new_problems
from opgraph.export.perfetto.overlay import (
    ARG_PREFIX, FLOW_CAT, FLOW_NAME, build_overlay, critical_crossings, export_perfetto, next_flow_id,
)
from opgraph.graph.io import load_any, save_graph
from opgraph.ingest.readers import read_trace
from opgraph.schemas_util import validation_error

ROOT = Path(__file__).resolve().parents[1]
SYNTH = ROOT / "fixtures" / "synth"
TRACES = Path(__file__).resolve().parents[1].parent / "shared" / "traces" / "A_kineto"
needs_traces = pytest.mark.skipif(not TRACES.is_dir(), reason="../shared/traces is absent")
SYNTH_NAMES = sorted(p.stem for p in SYNTH.glob("*.json") if not p.name.endswith(".answers.json"))
REAL = [
    "hta_critical_path_alexnet.json.gz",
    "hta_cuda_event_sync_multi_stream.json.gz",
    "param_dlrm_8gpu_rank0.pt.trace.json.gz",
    "tracelens_vllm_decode_full_graph_execution.json.gz",  # CUDA/HIP-graph replay
    "kineto_tbplugin_test_gpu_metrics_input.json",  # old format: Kernel/Runtime cats, tid "stream 7"
]


@lru_cache(maxsize=None)
def graph(path: str):
    return load_any(path)


def answers(name: str) -> dict:
    return json.loads((SYNTH / f"{name}.answers.json").read_text())


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """``exported(path)`` -> (output path, summary): each trace exported once per module."""
    cache: dict[str, tuple[Path, dict]] = {}
    outdir = tmp_path_factory.mktemp("perfetto")

    def get(path: str) -> tuple[Path, dict]:
        if path not in cache:
            out = outdir / (Path(path).name.split(".")[0] + ".json.gz")
            cache[path] = (out, export_perfetto(graph(path), out))
        return cache[path]
    return get


def _events(path: Path) -> list[dict]:
    doc = load_trace_doc(path)
    return doc["traceEvents"] if isinstance(doc, dict) else doc


def _strip(args: dict | None) -> dict | None:
    if args is None:
        return None
    return {k: v for k, v in args.items() if not k.startswith(ARG_PREFIX)}


# ------------------------------------------------------------------ shared invariants
def assert_valid_overlay(src: Path, out: Path, G) -> None:
    """Everything an overlay must satisfy, whatever the trace."""
    # 1. no problem the input did not have (flows paired and bound, slices nested, ...)
    assert new_problems(out, src) == []
    # 2. the light schema
    doc = load_trace_doc(out)
    assert validation_error(doc, "perfetto-trace.schema.json") is None
    # 3. the original events come back through opgraph's reader unchanged
    before = G.graph["events"]
    after = read_trace(out).events
    n = len(before)
    assert len(after) >= n
    for col in ("eid", "ts_ns", "dur_ns", "device", "stream", "correlation", "external_id", "flow_id"):
        assert np.array_equal(after[col].to_numpy()[:n], before[col].to_numpy()), col
    for col in ("name", "ph", "cat", "pid", "tid", "kind"):
        assert after[col].astype(object).to_numpy()[:n].tolist() == before[col].astype(object).to_numpy().tolist(), col
    a_args = after["args"].to_numpy(dtype=object)[:n].tolist()
    b_args = before["args"].to_numpy(dtype=object).tolist()
    assert [_strip(a) for a in a_args] == b_args
    # only opgraph's additions follow the original events
    extra = after.iloc[n:]
    assert set(extra["ph"].astype(str)) <= {"s", "f", "C", "M"}
    # 4. top-level keys kept
    src_doc = load_trace_doc(src)
    if isinstance(src_doc, dict):
        assert set(src_doc) <= set(doc)
        assert {k: v for k, v in doc.items() if k != "traceEvents"} == \
               {k: v for k, v in src_doc.items() if k != "traceEvents"}
    # 5. flows: pairs with the same cat/name/id, fresh ids, bound to the intended slices
    assert_flows_bind(out, G)


def assert_flows_bind(out: Path, G) -> None:
    """Each opgraph flow end lies where the innermost open slice of its pid/tid is the event
    the critical path hands over from (s) or to (f)."""
    ev = G.graph["events"]
    cp = critical_path(G)
    cross = critical_crossings(ev, cp)
    first = next_flow_id(ev)
    events = _events(out)
    flows = [e for e in events if e.get("cat") == FLOW_CAT]
    assert len(flows) == 2 * len(cross)
    ids_before = {e.get("id") for e in events[:len(ev)] if e.get("ph") in ("s", "t", "f")}
    by_id: dict[int, dict[str, dict]] = defaultdict(dict)
    for e in flows:
        assert e["name"] == FLOW_NAME and isinstance(e["id"], int) and e["id"] not in ids_before
        by_id[e["id"]][e["ph"]] = e
    assert all(set(v) == {"s", "f"} and v["f"].get("bp") == "e" for v in by_id.values())
    table = read_trace(out).events
    x = table[(table["ph"] == "X") & (table["dur_ns"] >= 0)]
    lanes: dict[tuple, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = {}
    for (p, t), grp in x.groupby([x["pid"].astype(str), x["tid"].astype(str)], sort=False):
        lanes[(p, t)] = (grp["ts_ns"].to_numpy(), (grp["ts_ns"] + grp["dur_ns"]).to_numpy(),
                         grp["dur_ns"].to_numpy(), grp["eid"].to_numpy())

    def innermost(pid, tid, t_ns: int) -> int:
        st, en, du, eid = lanes[(str(pid), str(tid))]
        m = np.flatnonzero((st <= t_ns) & ((en > t_ns) | ((du == 0) & (st == t_ns))))
        assert len(m), (pid, tid, t_ns)
        best = m[np.lexsort((du[m], -st[m]))[0]]  # latest start, then shortest
        return int(eid[best])

    flow_rows = table[table["cat"] == FLOW_CAT]
    ts_of = {(int(r.flow_id), str(r.ph)): int(r.ts_ns) for r in flow_rows.itertuples()}
    for i, (s, d) in enumerate(zip(cross["src"].tolist(), cross["dst"].tolist())):
        pair = by_id[first + i]
        assert innermost(pair["s"]["pid"], pair["s"]["tid"], ts_of[(first + i, "s")]) == s
        assert innermost(pair["f"]["pid"], pair["f"]["tid"], ts_of[(first + i, "f")]) == d
        assert pair["f"]["args"]["bound_by"] in CATEGORIES


def counter_series(out: Path, name: str, key: str) -> tuple[np.ndarray, np.ndarray]:
    table = read_trace(out).events
    c = table[(table["ph"] == "C") & (table["name"] == name)]
    vals = np.array([a[key] for a in c["args"].tolist()], dtype=np.int64)
    return c["ts_ns"].to_numpy(), vals


def integral_positive(t: np.ndarray, v: np.ndarray) -> int:
    """Time during which the step counter is > 0."""
    o = np.argsort(t, kind="stable")
    t, v = t[o], v[o]
    return int((np.diff(t) * (v[:-1] > 0)).sum())


def integral(t: np.ndarray, v: np.ndarray) -> int:
    o = np.argsort(t, kind="stable")
    t, v = t[o], v[o]
    return int((np.diff(t) * v[:-1]).sum())


def added_args(out: Path) -> dict[int, dict]:
    return {i: {k: v for k, v in (e.get("args") or {}).items() if k.startswith(ARG_PREFIX)}
            for i, e in enumerate(_events(out)) if any(k.startswith(ARG_PREFIX) for k in (e.get("args") or {}))}


# ------------------------------------------------------------------ synthesized traces
@pytest.mark.parametrize("name", SYNTH_NAMES)
def test_synth_overlay_valid(name, exported):
    src = SYNTH / f"{name}.json"
    out, summary = exported(str(src))
    G = graph(str(src))
    assert_valid_overlay(src, out, G)
    assert summary["events"] == len(G.graph["events"])


@pytest.mark.parametrize("name", SYNTH_NAMES)
def test_synth_args_exact(name, exported):
    src = SYNTH / f"{name}.json"
    G = graph(str(src))
    out, _ = exported(str(src))
    got = added_args(out)
    cp = critical_path(G)
    # opgraph.critical: exactly the owners of critical segments; bound_by the category of
    # the event's largest segment
    per: dict[int, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    largest: dict[int, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    between: dict[int, int] = defaultdict(int)
    for w in cp.windows:
        for s in w.path:
            if s.eid is None:  # a stretch between events: on the event it leads to
                between[s.to_eid] += s.dur_ns
                continue
            per[s.eid][s.bound_by] += s.dur_ns
            largest[s.eid][s.bound_by] = max(largest[s.eid][s.bound_by], s.dur_ns)
    crit = {e for e, a in got.items() if a.get(ARG_PREFIX + "critical")}
    assert crit == set(per)
    for e, cats in per.items():
        a = got[e]
        top = max(largest[e].values())
        assert largest[e][a[ARG_PREFIX + "bound_by"]] == top
        assert a[ARG_PREFIX + "critical_us"] * 1000 == pytest.approx(sum(cats.values()))
    for e, ns in between.items():
        assert got[e][ARG_PREFIX + "waited_before_us"] * 1000 == pytest.approx(ns)
    # critical time on events + time between events = total path length
    assert sum(a.get(ARG_PREFIX + "critical_us", 0) + a.get(ARG_PREFIX + "waited_before_us", 0)
               for a in got.values()) * 1000 == pytest.approx(sum(w.length_ns for w in cp.windows))
    # idle blame: the traced part of the CPU-induced idle, per event
    idle = idle_time(G)
    blame = sum(a.get(ARG_PREFIX + "idle_blame_us", 0) for a in got.values())
    traced = int(idle.blame_events.loc[idle.blame_events["eid"] >= 0, "blame_ns"].sum())
    assert round(blame * 1000) == traced <= answers(name)["cpu_induced_idle_ns"]
    # launch delays: activity start - launching call start, on every launched activity
    n_launch = 0
    for u, v, d in G.edges(data=True):
        if d["kind"] == "launch":
            n_launch += 1
            delay = got[v][ARG_PREFIX + "launch_delay_us"]
            assert round(delay * 1000) == G.nodes[v]["ts"] - G.nodes[u]["ts"]
            q = got[v].get(ARG_PREFIX + "queue_wait_us", 0)
            assert 0 <= q <= delay
    assert n_launch == sum(1 for a in got.values() if ARG_PREFIX + "launch_delay_us" in a)


@pytest.mark.parametrize("name", SYNTH_NAMES)
def test_synth_counters_exact(name, exported):
    src = SYNTH / f"{name}.json"
    G = graph(str(src))
    out, _ = exported(str(src))
    ans = answers(name)
    t, v = counter_series(out, "GPU 0 busy", "streams")
    assert (v >= 0).all() and v[-1] == 0
    assert integral_positive(t, v) == ans["gpu"]["busy_ns"]
    assert v.max() <= len(ans["gpu"]["busy_by_stream_ns"])
    # queued: its integral is the sum of the (positive) launch delays, per stream
    delays: dict[int, int] = defaultdict(int)
    for u, w, d in G.edges(data=True):
        if d["kind"] == "launch":
            delays[G.nodes[w]["stream"]] += max(0, G.nodes[w]["ts"] - G.nodes[u]["ts"])
    for stream, total in delays.items():
        if total:
            t, v = counter_series(out, f"GPU 0 stream {stream}", "queued")
            assert (v >= 0).all() and v[-1] == 0
            assert integral(t, v) == total


def test_two_stream_flows_cross_streams(exported):
    src = SYNTH / "two_stream_event_wait.json"
    out, summary = exported(str(src))
    flows = [e for e in _events(out) if e.get("cat") == FLOW_CAT]
    pairs = {(s["tid"], f["tid"]) for s, f in zip(flows[::2], flows[1::2])}
    # stream 7 -> stream 20 (the event wait), CPU -> GPU (launch), GPU -> CPU (sync)
    assert (7, 20) in pairs and (100, 7) in pairs and (20, 100) in pairs
    assert summary["flows"] == len(flows) // 2 == 9  # 3 per step
    # the flow into stream 20 leads into kernel time
    f_20 = [f for f in flows[1::2] if f["tid"] == 20]
    assert {f["args"]["bound_by"] for f in f_20} == {"gpu_compute"}


def test_cpu_bound_overlay(exported):
    src = SYNTH / "cpu_bound.json"
    G = graph(str(src))
    out, summary = exported(str(src))
    got = added_args(out)
    # most critical time is on CPU events, bound by cpu
    by_cat: dict[str, float] = defaultdict(float)
    for a in got.values():
        if a.get(ARG_PREFIX + "critical"):
            by_cat[a[ARG_PREFIX + "bound_by"]] += a[ARG_PREFIX + "critical_us"]
    assert by_cat["cpu"] >= 0.75 * sum(by_cat.values())   # the rest: the annotation's own time, untraced
    # the GPU waits for the CPU: the host events to blame carry it, the largest one first
    idle = idle_time(G)
    leaf = idle.blame_events[idle.blame_events["eid"] >= 0].sort_values("blame_ns", ascending=False)
    top = int(leaf["eid"].iloc[0])
    assert round(got[top][ARG_PREFIX + "idle_blame_us"] * 1000) == int(leaf["blame_ns"].iloc[0]) > 0
    # the GPU is mostly idle: the busy counter is 0 most of the span
    t, v = counter_series(out, "GPU 0 busy", "streams")
    assert integral_positive(t, v) < 0.5 * (t.max() - t.min())


def test_cuda_graph_queue(exported):
    """One cudaGraphLaunch queues every kernel of the graph at once."""
    src = SYNTH / "cuda_graph.json"
    G = graph(str(src))
    out, _ = exported(str(src))
    fanout = max(sum(1 for _, _, d in G.out_edges(u, data=True) if d["kind"] == "launch")
                 for u, d in G.nodes(data=True) if d["name"] == "cudaGraphLaunch")
    assert fanout > 1
    t, v = counter_series(out, "GPU 0 stream 7", "queued")
    assert v.max() >= fanout
    got = added_args(out)
    assert any(a.get(ARG_PREFIX + "queue_wait_us", 0) > 0 for a in got.values())


def test_metadata_only_where_missing(exported):
    src = SYNTH / "two_stream_event_wait.json"
    out, _ = exported(str(src))
    events = _events(out)
    n = len(graph(str(src)).graph["events"])
    src_events = _events(src)
    assert len(events[:n]) == len(src_events)
    named = {(e["pid"], e.get("tid")) for e in src_events if e.get("name") == "thread_name"}
    added = [e for e in events[n:] if e["ph"] == "M"]
    assert added and all((e["pid"], e.get("tid")) not in named for e in added if e["name"] == "thread_name")
    # existing M events unchanged, in place
    assert [e for e in events[:n] if e["ph"] == "M"] == [e for e in src_events if e["ph"] == "M"]


def test_window_all_and_regex(tmp_path):
    src = SYNTH / "gpu_bound.json"
    G = graph(str(src))
    s_all = export_perfetto(G, tmp_path / "all.json", window="all")
    s_one = export_perfetto(G, tmp_path / "one.json", window=r"ProfilerStep#2$")
    assert s_all["windows"] == 1 and s_one["windows"] == 1
    assert s_one["critical_events"] < s_all["critical_events"]
    for p in ("all.json", "one.json"):
        assert new_problems(tmp_path / p, src) == []
    # a window that matches nothing is an error that lists what exists (not an empty overlay)
    from opgraph.graph.windows import WindowNotFound
    with pytest.raises(WindowNotFound, match="ProfilerStep"):
        export_perfetto(G, tmp_path / "none.json", window="no such range")


# ------------------------------------------------------------------ CLI
def test_cli_export_from_gpickle_and_trace(tmp_path):
    src = SYNTH / "two_stream_event_wait.json"
    gp = tmp_path / "g.gpickle"
    save_graph(graph(str(src)), gp)
    out = tmp_path / "out.json.gz"
    r = CliRunner().invoke(main, ["export", str(gp), "--perfetto", str(out)])
    assert r.exit_code == 0, r.output
    assert "ui.perfetto.dev" in r.output
    assert gzip.decompress(out.read_bytes())[:1] == b"{"
    assert new_problems(out, src) == []
    out2 = tmp_path / "out.json"
    r = CliRunner().invoke(main, ["export", str(src), "--perfetto", str(out2), "--window", "all"])
    assert r.exit_code == 0, r.output
    assert validation_error(load_trace_doc(out2), "perfetto-trace.schema.json") is None


def test_cli_export_errors(tmp_path):
    src = SYNTH / "cpu_bound.json"
    r = CliRunner().invoke(main, ["export", str(src)])
    assert r.exit_code == 2 and "--perfetto" in r.output
    r = CliRunner().invoke(main, ["export", str(src), "--perfetto", str(tmp_path / "x.txt")])
    assert r.exit_code == 2 and "json" in r.output
    r = CliRunner().invoke(main, ["export", str(tmp_path / "missing.json"), "--perfetto", str(tmp_path / "x.json")])
    assert r.exit_code == 2 and "Traceback" not in r.output


def test_cli_export_extension_point(tmp_path):
    """Another module can add an output format to ``opgraph export``."""
    from opgraph.commands import export as ex

    seen = {}

    def run(G, path, opts):
        Path(path).write_text(str(G.number_of_nodes()))
        seen.update(opts)
        return f"{path}: dummy"

    ex.register_exporter("dummy_fmt", "--dummy-fmt", run=run, help="test only", suffixes=(".txt",))
    try:
        out = tmp_path / "d.txt"
        r = CliRunner().invoke(main, ["export", str(SYNTH / "cpu_bound.json"), "--dummy-fmt", str(out),
                                      "--window", "all"])
        assert r.exit_code == 0, r.output
        assert out.read_text() == str(graph(str(SYNTH / "cpu_bound.json")).number_of_nodes())
        assert seen["window"] == "all" and seen["perfetto"] is None
    finally:
        ex.EXPORTERS.pop("dummy_fmt", None)
        ex.export_cmd.params[:] = [p for p in ex.export_cmd.params if p.name != "dummy_fmt"]


# ------------------------------------------------------------------ the checker
def _doc(*events):
    return {"traceEvents": list(events)}


def test_checker_clean_and_problems():
    ok = _doc({"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 0, "dur": 10},
              {"ph": "X", "name": "b", "pid": 1, "tid": 1, "ts": 2, "dur": 3},
              {"ph": "X", "name": "k", "pid": 0, "tid": 7, "ts": 20, "dur": 5},
              {"ph": "s", "cat": "c", "name": "n", "id": 1, "pid": 1, "tid": 1, "ts": 1},
              {"ph": "f", "cat": "c", "name": "n", "id": 1, "pid": 0, "tid": 7, "ts": 20, "bp": "e"},
              {"ph": "C", "name": "ctr", "pid": 0, "ts": 1, "args": {"v": 1, "w": 2.5}},
              {"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "main"}})
    assert check_chrome_trace(ok) == []
    bad = _doc({"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 0, "dur": 10},
               {"ph": "X", "name": "cross", "pid": 1, "tid": 1, "ts": 5, "dur": 10},   # partial overlap
               {"ph": "X", "name": "neg", "pid": 1, "tid": 2, "ts": 5, "dur": -1},     # negative dur
               {"name": "noph", "pid": 1, "tid": 1, "ts": 5},                           # no ph
               {"ph": "i", "name": "nots", "pid": 1, "tid": 1},                          # no ts
               {"ph": "s", "cat": "c", "name": "n", "id": 9, "pid": 1, "tid": 1, "ts": 1},  # s without f
               {"ph": "f", "cat": "c", "name": "n", "id": 8, "pid": 1, "tid": 1, "ts": 2, "bp": "e"},  # f w/o s
               {"ph": "s", "cat": "c", "name": "n", "id": 7, "pid": 1, "tid": 1, "ts": 50},  # binds nothing
               {"ph": "f", "cat": "c", "name": "n", "id": 7, "pid": 1, "tid": 1, "ts": 1, "bp": "e"},
               {"ph": "C", "name": "ctr", "pid": 0, "ts": 1, "args": {"v": "high"}},   # non-numeric counter
               {"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "a"}},
               {"ph": "M", "name": "thread_name", "pid": 1, "tid": "1", "args": {"name": "b"}})  # duplicate
    probs = check_chrome_trace(bad)
    text = "\n".join(probs)
    for needle in ("partially overlaps", "negative dur", "missing 'ph'", "missing or non-numeric 'ts'",
                   "id=9) without an end", "id=8) without a start", "inside no slice",
                   "non-numeric values", "2 thread_name metadata events"):
        assert needle in text, (needle, probs)
    # only new problems count when comparing with a reference
    assert new_problems(bad, bad) == []
    worse = _doc(*bad["traceEvents"], {"ph": "X", "name": "x2", "pid": 1, "tid": 1, "ts": 8, "dur": 10})
    assert len(new_problems(worse, bad)) == 1


def test_checker_reads_files(tmp_path):
    p = tmp_path / "t.json.gz"
    p.write_bytes(gzip.compress(json.dumps(_doc({"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 0,
                                                  "dur": -2})).encode()))
    assert any("negative dur" in x for x in check_chrome_trace(p))
    assert check_chrome_trace(json.dumps([{"ph": "i", "ts": 1, "pid": 1, "tid": 1}]).encode()) == []
    (tmp_path / "bad.json").write_text("{not json")
    assert check_chrome_trace(tmp_path / "bad.json")[0].startswith("cannot read")
    assert check_chrome_trace({"events": []}) == ["top level: no 'traceEvents'"]


def test_checker_epoch_float_resolution():
    """At epoch-scale µs a float64 holds 0.25 µs steps; sub-resolution bleed is not a
    problem, a real overlap is."""
    base = 1712195495519689.0
    bleed = _doc({"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": base, "dur": 10.0},
                 {"ph": "X", "name": "b", "pid": 1, "tid": 1, "ts": base + 9.75, "dur": 0.5})
    assert check_chrome_trace(bleed) == []  # 0.25 µs: one float step
    real = _doc({"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": base, "dur": 10.0},
                {"ph": "X", "name": "b", "pid": 1, "tid": 1, "ts": base + 9.5, "dur": 1.0})
    assert len(check_chrome_trace(real)) == 1  # 0.5 µs
    small = _doc({"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 100, "dur": 10.0},
                 {"ph": "X", "name": "b", "pid": 1, "tid": 1, "ts": 109.999, "dur": 0.5})
    assert len(check_chrome_trace(small)) == 1  # 1 ns is visible at small timestamps
    assert check_chrome_trace(small, tolerance_ns=1000) == []


# ------------------------------------------------------------------ real traces
@needs_traces
@pytest.mark.parametrize("fname", REAL)
def test_real_overlay(fname, exported):
    src = TRACES / fname
    G = graph(str(src))
    out, summary = exported(str(src))
    assert_valid_overlay(src, out, G)
    # busy counter: the time > 0 is the device busy time of opgraph idle
    idle = idle_time(G)
    table = read_trace(out).events
    c = table[(table["ph"] == "C") & table["name"].astype(str).str.endswith(" busy")]
    assert len(idle.devices) == c["name"].nunique()
    for d in idle.devices:
        t, v = counter_series(out, f"GPU {d.device} busy", "streams")
        assert integral_positive(t, v) == d.busy_ns
    # critical args cover the path, bound_by from the known categories
    got = added_args(out)
    cats = {a[ARG_PREFIX + "bound_by"] for a in got.values() if ARG_PREFIX + "bound_by" in a}
    assert cats and cats <= set(CATEGORIES)
    assert summary["critical_events"] == len({s.eid for w in critical_path(G).windows for s in w.path if s.eid is not None})


@needs_traces
def test_real_flows_cross_lanes(exported):
    # alexnet: the path goes CPU -> stream 7 -> CPU, and once through stream 20
    out, summary = exported(str(TRACES / "hta_critical_path_alexnet.json.gz"))
    flows = [e for e in _events(out) if e.get("cat") == FLOW_CAT]
    pairs = {(s["tid"], f["tid"]) for s, f in zip(flows[::2], flows[1::2])}
    assert (20, 7) in pairs and (7, 2869224) in pairs and (2869224, 7) in pairs
    # multi-stream event sync: CPU -> GPU and back
    out, summary = exported(str(TRACES / "hta_cuda_event_sync_multi_stream.json.gz"))
    assert summary["flows"] >= 2


@needs_traces
def test_real_old_format_names_stream_lanes(exported):
    src = TRACES / "kineto_tbplugin_test_gpu_metrics_input.json"
    out, _ = exported(str(src))
    n = len(graph(str(src)).graph["events"])
    added = [e for e in _events(out)[n:] if e["ph"] == "M"]
    assert {"ph": "M", "name": "thread_name", "pid": 0, "tid": "stream 7",
            "args": {"name": "GPU 0 stream 7"}} in added
    # the CPU threads already have names: none added for them
    assert not [e for e in added if e["name"] == "thread_name" and e["pid"] == 24572]


@needs_traces
def test_real_cuda_graph_launch_delay(exported):
    src = TRACES / "tracelens_vllm_decode_full_graph_execution.json.gz"
    G = graph(str(src))
    out, _ = exported(str(src))
    got = added_args(out)
    launched = [v for u, v, d in G.edges(data=True) if d["kind"] == "launch"]
    assert launched and all(ARG_PREFIX + "launch_delay_us" in got[v] for v in launched)
    # kernels replayed from one graph launch wait behind each other
    assert sum(1 for v in launched if got[v].get(ARG_PREFIX + "queue_wait_us", 0) > 0) > len(launched) // 2
    stream_counters = sorted({e["name"] for e in _events(out) if e["ph"] == "C" and "stream" in e["name"]})
    assert len(stream_counters) == 1
    t, v = counter_series(out, stream_counters[0], "queued")
    assert v.max() > 100


def test_overlay_without_gpu(tmp_path):
    """A CPU-only trace: no counters, no flows, still a valid overlay."""
    doc = _doc({"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 0, "dur": 10,
                "args": {"External id": 1}},
               {"ph": "X", "cat": "cpu_op", "name": "aten::mul", "pid": 1, "tid": 1, "ts": 12, "dur": 5})
    src = tmp_path / "cpu.json"
    src.write_text(json.dumps(doc))
    G = load_any(src)
    ov = build_overlay(G)
    assert ov.counters == [] and ov.flows == []
    out = tmp_path / "out.json"
    export_perfetto(G, out)
    assert new_problems(out, src) == []
    names = [e for e in _events(out) if e["ph"] == "M"]
    assert {e["name"] for e in names} == {"process_name", "thread_name"}
