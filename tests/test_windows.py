"""The one step/window selector (opgraph.graph.windows): exact windows on tiny Kineto
traces built through the normal reader, the thread a window follows, overlap reporting, the
one-line error of a regex that matches nothing on every command that takes one, and, on
the real traces (skipped when ../shared/traces is absent), the same steps from every
command. Times in the traces are µs; every expected value below is ns.
"""

from __future__ import annotations

import json
import pickle
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np
import pytest

from opgraph.model.arrays import GraphArrays
from opgraph.graph.windows import (
    Window, WindowColumns, WindowError, WindowNotFound, launch_thread, main_thread, select_windows,
    thread_stats,
)
from opgraph.intervals import union_overlap_ns
from opgraph.graph.io import load_any

from conftest import KINETO_FILES, SYNTH_TRACES, assert_one_line_error, load_graph

PID = 10
US = 1000


# --------------------------------------------------------------------------- tiny traces
def X(cat: str, name: str, ts: int, dur: int, pid: int = PID, tid: int = 1, **args: Any) -> dict[str, Any]:
    """One Kineto complete event (µs)."""
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args}


def launch(ts: int, corr: int, kts: int, kdur: int, tid: int = 1, stream: int = 7) -> list[dict[str, Any]]:
    """A ``cudaLaunchKernel`` at ``ts`` on thread ``tid`` and its kernel at ``kts``."""
    return [X("cuda_runtime", "cudaLaunchKernel", ts, 5, tid=tid, correlation=corr),
            X("kernel", f"gemm_{corr}", kts, kdur, pid=0, tid=stream, device=0, stream=stream, correlation=corr)]


def step_body(t: int, corr: int, tid: int = 1) -> list[dict[str, Any]]:
    """What every synthetic step holds: ``## forward ##`` > ``aten::mm`` > a launch."""
    return [X("user_annotation", "## forward ##", t + 10, 50, tid=tid), X("cpu_op", "aten::mm", t + 20, 20, tid=tid),
            *launch(t + 25, corr, t + 40, 30, tid=tid)]


def write(tmp_path: Path, events: list[dict[str, Any]], name: str = "t.json") -> Path:
    p = tmp_path / name
    p.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    return p


def host_steps(tmp_path: Path) -> Path:
    """ProfilerStep#1..3 on the main thread, 100 µs apart from 1000 µs."""
    ev: list[dict[str, Any]] = []
    for k in range(3):
        t = 1000 + 100 * k
        ev += [X("user_annotation", f"ProfilerStep#{k + 1}", t, 100), *step_body(t, 100 + k)]
    return write(tmp_path, ev, "host_steps.json")


def graph_and_arrays(path: Path) -> tuple[nx.DiGraph, GraphArrays]:
    G = load_any(path)
    return G, G.arrays


def lane_of(a: GraphArrays, name: str) -> int:
    """The lane of the (first) node named ``name``."""
    return int(a.lane[int(np.flatnonzero(a.name == name)[0])])


def spans(w) -> list[tuple[str, int, int, int]]:
    return [(x.name, x.step, x.start_ns, x.end_ns) for x in w]


# --------------------------------------------------------------------------- selection
def test_profiler_step_host_ranges(tmp_path):
    G, a = graph_and_arrays(host_steps(tmp_path))
    w = select_windows(a)
    assert (w.mode, w.source) == ("steps", "profiler_step")
    assert spans(w) == [("ProfilerStep#1", 1, 1_000_000, 1_100_000), ("ProfilerStep#2", 2, 1_100_000, 1_200_000),
                        ("ProfilerStep#3", 3, 1_200_000, 1_300_000)]
    main = lane_of(a, "aten::mm")
    assert all(x.lane == main and x.kind == "annotation" for x in w)
    assert [x.eid for x in w] == [int(a.eid[np.flatnonzero(a.name == f"ProfilerStep#{k}")[0]]) for k in (1, 2, 3)]
    assert w.total_ns() == w.union_ns() == 300_000 and w.overlap_ns() == 0
    # the same windows from the graph, its frame and its columns
    from opgraph.analysis.graph_frame import graph_frame

    for src in (G, graph_frame(G), WindowColumns.from_arrays(G.arrays)):
        assert spans(select_windows(src)) == spans(w)
    # "all": one window over every node, following the launching thread
    whole = select_windows(a, "all")
    assert (whole.mode, whole.source) == ("all", "all")
    assert [(x.name, x.eid, x.start_ns, x.end_ns, x.lane, x.kind) for x in whole] == [
        ("all", None, 1_000_000, 1_300_000, main, "all")]


def test_gpu_annotation_only_steps(tmp_path):
    ev: list[dict[str, Any]] = []
    for k in range(3):
        t = 1000 + 100 * k
        ev += [X("gpu_user_annotation", f"ProfilerStep#{k + 3}", t + 30, 60, pid=0, tid=7, device=0, stream=7),
               X("cpu_op", "aten::mm", t + 20, 20), *launch(t + 25, 100 + k, t + 40, 30)]
    _, a = graph_and_arrays(write(tmp_path, ev))
    w = select_windows(a)
    assert (w.mode, w.source) == ("steps", "gpu_annotation")
    assert spans(w) == [("ProfilerStep#3", 3, 1_030_000, 1_090_000), ("ProfilerStep#4", 4, 1_130_000, 1_190_000),
                        ("ProfilerStep#5", 5, 1_230_000, 1_290_000)]
    # a GPU annotation has no host thread: the window follows the launching thread
    assert {x.lane for x in w} == {lane_of(a, "aten::mm")} and {x.kind for x in w} == {"gpu_annotation"}


def test_nvtx_iteration_steps(tmp_path):
    ev: list[dict[str, Any]] = []
    for k in range(2):
        t = 500 + 200 * k
        ev += [X("user_annotation", f"Iteration {k + 1}", t, 150), *step_body(t, 10 + k)]
    _, a = graph_and_arrays(write(tmp_path, ev))
    w = select_windows(a)
    assert (w.mode, w.source) == ("steps", "nvtx_iteration")
    assert spans(w) == [("Iteration 1", 1, 500_000, 650_000), ("Iteration 2", 2, 700_000, 850_000)]


def test_regex_windows(tmp_path):
    _, a = graph_and_arrays(host_steps(tmp_path))
    w = select_windows(a, "forward")
    assert (w.mode, w.source) == ("regex:forward", "regex")
    # no trailing numbers: steps are positions; nested / repeated ranges are not merged
    assert spans(w) == [("## forward ##", 0, 1_010_000, 1_060_000), ("## forward ##", 1, 1_110_000, 1_160_000),
                        ("## forward ##", 2, 1_210_000, 1_260_000)]
    assert select_windows(a, step_regex="forward").items == w.items  # step_regex: the same thing
    # ops and python frames are host ranges too; GPU annotations only when no host range matches
    assert len(select_windows(a, r"^aten::mm$")) == 3
    assert spans(select_windows(a, r"Step#2$")) == [("ProfilerStep#2", 2, 1_100_000, 1_200_000)]


def test_regex_falls_back_to_gpu_annotations(tmp_path):
    ev = [X("user_annotation", "ProfilerStep#1", 1000, 100), *step_body(1000, 5),
          X("gpu_user_annotation", "gpu_phase_7", 1040, 30, pid=0, tid=7, device=0, stream=7)]
    _, a = graph_and_arrays(write(tmp_path, ev))
    w = select_windows(a, "phase")
    assert [(x.name, x.step, x.kind, x.start_ns) for x in w] == [("gpu_phase_7", 7, "gpu_annotation", 1_040_000)]


def test_no_match_lists_what_exists(tmp_path):
    _, a = graph_and_arrays(host_steps(tmp_path))
    with pytest.raises(WindowNotFound) as ei:
        select_windows(a, "nomatch")
    e = ei.value
    assert isinstance(e, ValueError)
    assert str(e) == "window 'nomatch' matches no range; ranges that exist: ProfilerStep#1..#3, ## forward ##"
    assert e.for_option("--window") == ("--window 'nomatch' matches no range; ranges that exist: "
                                        "ProfilerStep#1..#3, ## forward ##")
    assert "\n" not in str(e)
    e2 = pickle.loads(pickle.dumps(e))
    assert type(e2) is WindowNotFound and str(e2) == str(e)
    with pytest.raises(WindowError, match="not a valid regex"):
        select_windows(a, "(")


def test_no_match_listing_is_truncated(tmp_path):
    ev = [X("user_annotation", f"region_{chr(97 + k)}", 100 * k, 50) for k in range(20)]
    ev += [X("user_annotation", "region_a", 3000, 10), X("cpu_op", "aten::add", 10, 5)]
    _, a = graph_and_arrays(write(tmp_path, ev))
    with pytest.raises(WindowNotFound) as ei:
        select_windows(a, "nomatch")
    msg = str(ei.value)
    # the most frequent annotation first, then by name; at most 8 entries; ops not listed
    assert msg == ("window 'nomatch' matches no range; ranges that exist: region_a, region_b, region_c, region_d, "
                   "region_e, region_f, region_g, region_h (and 12 more)")


def test_overlapping_and_repeated_steps(tmp_path):
    ev = [X("user_annotation", "ProfilerStep#1", 1000, 100, tid=1),
          X("user_annotation", "ProfilerStep#2", 1080, 120, tid=2),
          # the same N on two threads is one step: first start to last end
          X("user_annotation", "ProfilerStep#3", 1300, 50, tid=1),
          X("user_annotation", "ProfilerStep#3", 1310, 60, tid=2)]
    _, a = graph_and_arrays(write(tmp_path, ev))
    w = select_windows(a)
    assert spans(w) == [("ProfilerStep#1", 1, 1_000_000, 1_100_000), ("ProfilerStep#2", 2, 1_080_000, 1_200_000),
                        ("ProfilerStep#3", 3, 1_300_000, 1_370_000)]
    assert w[2].lane == int(a.lane[int(w[2].eid)])  # named after its earliest range
    assert w.total_ns() == 290_000
    assert w.union_ns() == 270_000 and w.overlap_ns() == 20_000
    assert union_overlap_ns([0, 5, 20, 30], [10, 12, 25, 30]) == (17, 5)
    assert union_overlap_ns([], []) == (0, 0)


def test_sleeping_thread_is_never_the_window_thread(tmp_path):
    """No step marker; a background thread sleeps in a ``threading`` wait for the whole
    trace (longer than anything the main thread does) while the main thread launches the
    kernels: the whole-trace window follows the main thread."""
    ev: list[dict[str, Any]] = []
    for k in range(3):
        ev += [X("cpu_op", "aten::mm", 1000 + 100 * k, 20), *launch(1005 + 100 * k, 7 + k, 1040 + 100 * k, 30)]
    ev += [X("python_function", "threading.py(1032): _bootstrap", 900, 600, tid=2),
           X("python_function", "threading.py(359): wait", 905, 590, tid=2)]
    _, a = graph_and_arrays(write(tmp_path, ev))
    main, sleeper = lane_of(a, "aten::mm"), lane_of(a, "threading.py(359): wait")
    st = thread_stats(a)
    assert st.loc[sleeper].tolist() == [0, 600_000, 590_000, True]
    assert st.loc[main].tolist() == [3, 60_000, 0, False]
    assert launch_thread(a) == main and main_thread(a) == main
    w = select_windows(a)
    assert [(x.name, x.start_ns, x.end_ns, x.lane) for x in w] == [("all", 900_000, 1_500_000, main)]
    assert w.mode == "all"


def test_launch_thread_rules(tmp_path):
    # a sleeper that launches more than a working thread is not chosen while the other launches
    ev = [X("cpu_op", "aten::mm", 1000, 20, tid=1), *launch(1005, 1, 1040, 30, tid=1),
          X("python_function", "threading.py(359): wait", 900, 600, tid=2),
          *launch(950, 2, 1100, 10, tid=2), *launch(960, 3, 1120, 10, tid=2)]
    _, a = graph_and_arrays(write(tmp_path, ev, "a.json"))
    assert launch_thread(a) == lane_of(a, "aten::mm")
    # ties on launches: the busier thread
    ev = [X("cpu_op", "aten::mm", 1000, 20, tid=1), *launch(1005, 1, 1040, 30, tid=1),
          X("cpu_op", "aten::add", 2000, 80, tid=2), *launch(2005, 2, 2040, 30, tid=2)]
    _, a = graph_and_arrays(write(tmp_path, ev, "b.json"))
    assert launch_thread(a) == lane_of(a, "aten::add")
    # no GPU work: no launch thread; the busiest thread that does not sleep
    ev = [X("cpu_op", "aten::mm", 1000, 300, tid=1), X("python_function", "threading.py(359): wait", 900, 600, tid=2)]
    G, a = graph_and_arrays(write(tmp_path, ev, "c.json"))
    assert launch_thread(a) is None and main_thread(a) == lane_of(a, "aten::mm")
    assert main_thread(G) is not None  # from the graph itself (its own lane codes)
    assert main_thread(WindowColumns(np.array([], object), np.array([], object), np.array([], np.int64),
                                     np.array([], np.int64), np.array([], np.int64), np.array([], np.int64))) is None


def test_data_loader_windows_only_when_asked(tmp_path):
    ev = [X("user_annotation", "enumerate(DataLoader)#_Iter.__next__", 100 * k, 10) for k in range(4)]
    _, a = graph_and_arrays(write(tmp_path, ev))
    assert select_windows(a).mode == "all"
    w = select_windows(a, data_markers=("DataLoader",))
    assert (w.mode, w.source) == ("steps", "data_loader")
    assert spans(w) == [("iteration 0", 0, 0, 100_000), ("iteration 1", 1, 100_000, 200_000),
                        ("iteration 2", 2, 200_000, 300_000)]


def test_empty_graph():
    e = np.empty(0, dtype=np.int64)
    G = WindowColumns(np.empty(0, dtype=object), np.empty(0, dtype=object), e, e, e, e, e)
    assert select_windows(G).items == [] and select_windows(G, "all").items == []
    assert select_windows(G).mode == "all"


def test_window_to_dict():
    w = Window("ProfilerStep#1", 3, 1_000, 3_500, 0, "annotation", 1)
    assert w.to_dict() == {"name": "ProfilerStep#1", "eid": 3, "step": 1, "kind": "annotation",
                           "start_us": 1.0, "end_us": 3.5, "span_us": 2.5}


# --------------------------------------------------------------------------- every command, the same steps
def steps_by_command(G: nx.DiGraph, path: Path | None = None) -> dict[str, list[tuple[str, int, int]]]:
    """(name, start ns, end ns) of each step, as each command's analysis sees them."""
    from opgraph.analysis.info import find_steps
    from opgraph.analysis.steps import find_iterations
    from opgraph.analysis.graph_frame import graph_frame
    from opgraph.analysis.step_times import iteration_table
    from opgraph.analysis.nvtx import nvtx_summary

    out: dict[str, list[tuple[str, int, int]]] = {}
    s = find_steps(G)
    out["info/diff (find_steps)"] = list(zip(s["name"], s["ts"].tolist(), s["end"].tolist()))
    t = find_iterations(graph_frame(G)).table
    out["iterations/breakdown/overheads/summary"] = list(zip(t["name"], t["ts"].tolist(), t["end"].tolist()))
    tab, _ = iteration_table(G)
    out["iterations table"] = list(zip(tab["name"], tab["cpu_start_ns"].tolist(), tab["cpu_end_ns"].tolist()))
    w = select_windows(G.arrays)
    out["critical-path/predict/export (select_windows)"] = ([(x.name, x.start_ns, x.end_ns) for x in w]
                                                           if w.is_steps else [])
    nv = nvtx_summary(G)["iterations"]
    if nv:  # the steps that are annotation ranges (µs there: compare names and lengths)
        ref = {x[0]: x for x in out["info/diff (find_steps)"]}
        out["nvtx"] = [(r["name"], *ref[r["name"]][1:]) if r["name"] in ref
                       and round(r["cpu_us"] * 1000) == ref[r["name"]][2] - ref[r["name"]][1] else (r["name"], -1, -1)
                       for r in nv]
    if path is not None:
        from opgraph.multirank.worker import rank_result

        st = rank_result(str(path), False).steps
        names = {x[1]: x[0] for x in out["info/diff (find_steps)"]}
        out["multirank worker"] = [(names.get(a, "?"), a, b) for a, b in zip(st["ts"].tolist(), st["end"].tolist())]
    return out


def assert_same_steps(got: dict[str, list[tuple[str, int, int]]]) -> None:
    ref_name, ref = next(iter(got.items()))
    for k, v in got.items():
        assert v == ref, f"{k} sees {v[:3]}... but {ref_name} sees {ref[:3]}..."


NSYS_FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "nsys" / "synth.nsys.json"


@pytest.mark.parametrize("path", SYNTH_TRACES + [NSYS_FIXTURE], ids=lambda p: p.name)
def test_every_command_same_steps_synth(path):
    G = load_any(path)
    got = steps_by_command(G, path)
    assert got["info/diff (find_steps)"], "every fixture has steps"
    assert_same_steps(got)


def test_critical_path_uses_the_selector(tmp_path):
    from opgraph.analysis.critical_path.path import critical_path

    G, a = graph_and_arrays(host_steps(tmp_path))
    res = critical_path(G)
    assert res.window_mode == "steps"
    assert [(w.name, w.start_ns) for w in res.windows] == [(x.name, x.start_ns) for x in select_windows(a)]
    with pytest.raises(WindowNotFound):
        critical_path(G, window="nomatch")


# --------------------------------------------------------------------------- the CLI: one line, exit 2
LISTING = "ranges that exist: ProfilerStep#1..#3, ## forward ##"


@pytest.mark.parametrize("args", [
    ["critical-path", "{p}", "--window", "nomatch"],
    ["critical-path", "{p}", "--window", "nomatch", "--json"],
    ["predict", "{p}", "--window", "nomatch"],
    ["export", "{p}", "--perfetto", "{d}/o.json", "--window", "nomatch"],
    ["export", "{p}", "--dot", "{d}/o.dot", "--window", "nomatch"],
], ids=["critical-path", "critical-path-json", "predict", "export-perfetto", "export-dot"])
def test_cli_window_matches_nothing(cli, tmp_path, args):
    p = host_steps(tmp_path)
    r = cli([a.format(p=p, d=tmp_path) for a in args])
    line = assert_one_line_error(r, p, "--window 'nomatch' matches no range", LISTING)
    assert line == f"opgraph: error: {p}: --window 'nomatch' matches no range; {LISTING}"
    assert not (tmp_path / "o.json").exists() and not (tmp_path / "o.dot").exists()


@pytest.mark.parametrize("args", [
    ["iterations", "{p}"], ["iterations", "{p}", "--json"], ["breakdown", "{p}"], ["breakdown", "{p}", "--device"],
    ["overheads", "{p}"], ["summary", "{p}"], ["nvtx", "{p}"], ["kernel-models", "{p}", "--lookup", "{d}/l.json"],
    ["build", "{p}", "--iterations", "0:1", "-o", "{d}/g.gpickle"],
], ids=["iterations", "iterations-json", "breakdown", "breakdown-device", "overheads", "summary", "nvtx",
        "kernel-models", "build-iterations"])
def test_cli_step_regex_matches_nothing(cli, tmp_path, args):
    p = host_steps(tmp_path)
    r = cli([a.format(p=p, d=tmp_path) for a in args] + ["--step-regex", "nomatch"])
    assert_one_line_error(r, p, "--step-regex 'nomatch' matches no range", LISTING)


@pytest.mark.parametrize("cmd", [["critical-path", "--window", "("], ["iterations", "--step-regex", "("],
                                 ["export", "--dot", "o.dot", "--window", "("]])
def test_cli_invalid_regex_one_line(cli, tmp_path, cmd):
    p = host_steps(tmp_path)
    r = cli([cmd[0], str(p), *[str(tmp_path / c) if c.endswith(".dot") else c for c in cmd[1:]]])
    assert r.exit_code == 2 and r.stdout == "" and len(r.stderr.splitlines()) == 1
    assert "not a valid regex" in r.stderr


def test_cli_window_that_matches_works(cli, tmp_path):
    p = host_steps(tmp_path)
    r = cli(["iterations", str(p), "--step-regex", "forward", "--json"])
    assert r.exit_code == 0, r.stderr
    assert [s["name"] for s in json.loads(r.stdout)["steps"]] == ["## forward ##"] * 3


# --------------------------------------------------------------------------- real traces
#: Files whose multi-rank worker run (a second read of the trace) stays cheap.
WORKER_MAX_BYTES = 1_500_000


@pytest.mark.real_traces
@pytest.mark.parametrize("path", KINETO_FILES or [None], ids=lambda p: p.name if p else "no-traces")
def test_real_every_command_same_steps(path):
    if path is None:
        pytest.skip("real traces not available")
    G = load_graph(path)
    w = select_windows(G, lanes=False)
    if w.source not in ("profiler_step", "gpu_annotation"):
        pytest.skip("no ProfilerStep in this trace")
    got = steps_by_command(G, path if path.stat().st_size <= WORKER_MAX_BYTES else None)
    assert_same_steps(got)
    assert [x[0] for x in got["info/diff (find_steps)"]] == [x.name for x in w]


@pytest.mark.real_traces
def test_real_owlv2_launch_thread_is_not_the_waiting_thread():
    path = next((p for p in KINETO_FILES if p.name.startswith("tracelens_h100_owlv2_large")), None)
    if path is None:
        pytest.skip("tracelens_h100_owlv2_large not available")
    a = (load_graph(path)).arrays
    waiting = {int(x) for x in a.lane[a.name == "threading.py(359): wait"]}
    assert waiting, "the trace has a thread waiting in threading.py(359): wait"
    lt = launch_thread(a)
    assert lt is not None and lt not in waiting
    st = thread_stats(a)
    assert all(bool(st.loc[x, "sleeper"]) for x in waiting)
    # the thread that launches the kernels: the one whose runtime calls launch them
    ls, _ = a.out_edges("launch")
    assert lt == int(np.bincount(a.lane[ls]).argmax())
    assert select_windows(a, "all")[0].lane == lt
