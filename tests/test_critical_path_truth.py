"""The critical path is true on every real Kineto trace with device activities
(../shared/traces/A_kineto; skipped when absent): issue "A critical path that is true on
real training traces", "Done means".

Per trace, over every default window:

* a stretch charged to an event lies inside that event's own interval;
* ``other`` is at most 2 % of the path;
* no ``launch_overhead`` stretch is longer than the launch bounds: a call's own part at
  most ``LAUNCH_CALL_MAX_NS`` (50 µs), the latency after it at most 100 µs;
* no stretch of a blocked thread is ``cpu``: not a blocking call's (a Python wait, a lock,
  ``run_backward``, a synchronize), and not a parent's own time (>= 1 ms) while the thread
  records nothing and other threads of its process are busy for most of it;
* the summary's span (the union of the windows) never exceeds the trace span;
* the path length equals the window span (within 0.5 %).
"""

from __future__ import annotations

import numpy as np
import pytest

from opgraph.model.arrays import GraphArrays
from opgraph.analysis.critical_path.engine import LAUNCH_CALL_MAX_NS, LAUNCH_LATENCY_MAX_NS, boundary_dag
from opgraph.analysis.critical_path.boundary_edges import blocking_waits
from opgraph.analysis.critical_path.path import critical_path

from conftest import KINETO_DIR, load_graph

pytestmark = pytest.mark.real_traces

#: Nest tolerance of µs traces (ns): ends may bleed this far.
TOL_NS = 1000


def _cp(G):
    a = G.arrays
    d = boundary_dag(G, a)
    return a, critical_path(G, dag=d)


def _has_activities(G) -> bool:
    return any(d["kind"] in ("kernel", "memcpy", "memset") for _, d in G.nodes(data=True))


def test_critical_path_is_true(kineto_graph) -> None:
    G = kineto_graph
    if not _has_activities(G):
        pytest.skip("no device activities")
    a, res = _cp(G)
    assert res.windows
    span0, span1 = G.graph["span_ns"]
    blocked = blocking_waits(a)
    for w in res.windows:
        if not w.path:
            continue
        assert abs(w.length_ns - w.span_ns) <= 0.005 * max(w.span_ns, 1), w.name
        pct = w.breakdown_pct
        for s in w.path:
            assert s.end_ns > s.start_ns
            if s.eid is not None:
                p = a.pos_of[s.eid]
                assert a.ts[p] - TOL_NS <= s.start_ns and s.end_ns <= a.end[p] + TOL_NS, (w.name, s)
            if s.bound_by == "launch_overhead":
                assert s.dur_ns <= (LAUNCH_CALL_MAX_NS if s.eid is not None else LAUNCH_LATENCY_MAX_NS), (w.name, s)
            if s.bound_by == "cpu" and s.eid is not None:
                # a blocking call's own span is never cpu; a blocking Python frame's own time
                # between its children (the interpreter running that frame) may be, briefly
                p = a.pos_of[s.eid]
                assert not (blocked[p] and (s.edge == "leaf" or s.dur_ns >= 1_000_000)), (w.name, s)
        assert pct["other"] <= 2.0, (w.name, pct)
    summ = res.summary()
    assert summ["span_us"] * 1000 <= (span1 - span0) + TOL_NS
    assert summ["length_us"] <= summ["span_us"] + 1e-6


def _busy_elsewhere(a: GraphArrays, work: np.ndarray, lane: int, pid, t0: int, t1: int) -> int:
    """Time (ns) in [t0, t1) covered by ``work`` events (leaf host events that are not
    waits) of other threads of process ``pid`` that woke up as this thread went quiet: idle
    for 200 µs before the stretch, first event within the wake-up tolerance after it began
    (10 % of it, at most 5 ms). That is work handed over; a worker that was already busy,
    or that starts later, as in a server's request pipeline (hta_mtia_inference), is no
    evidence that this thread waited for it."""
    tol = min(5_000_000, (t1 - t0) // 10)
    m = work & (a.pid == pid) & (a.lane != lane) & (a.ts < t1) & (a.ts >= t0)
    if not m.any():
        return 0
    lanes = np.unique(a.lane[m])
    first = {int(ln): int(a.ts[m & (a.lane == ln)].min()) for ln in lanes}
    # a thread that woke up: idle for 200 µs before the stretch, first work within the tolerance
    host = a.is_host
    woke = [ln for ln, f in first.items() if f <= t0 + tol and
            not (host & (a.lane == ln) & (a.end > t0 - 200_000) & (a.ts < t0)).any()]
    m &= np.isin(a.lane, woke)
    if not m.any():
        return 0
    s = np.clip(a.ts[m], t0, t1)
    e = np.clip(a.end[m], t0, t1)
    o = np.argsort(s)
    s, e = s[o], e[o]
    covered, cur_s, cur_e = 0, int(s[0]), int(e[0])
    for x, y in zip(s[1:].tolist(), e[1:].tolist()):
        if x > cur_e:
            covered += cur_e - cur_s
            cur_s, cur_e = x, y
        else:
            cur_e = max(cur_e, y)
    return covered + cur_e - cur_s


def test_no_cpu_while_the_thread_waits_for_another(kineto_graph) -> None:
    """A parent's own time (>= 1 ms, no event of its thread inside) during which other
    threads of its process start leaf work (not waits) that covers more than half of it
    is a wait for that work (audit D1, form b), not ``cpu``."""
    G = kineto_graph
    if not _has_activities(G):
        pytest.skip("no device activities")
    a, res = _cp(G)
    host_idx = np.flatnonzero(a.is_host)
    ns_, nd_ = a.out_edges("nest")
    has_child = np.zeros(a.n, dtype=bool)
    has_child[ns_[a.is_host[nd_]]] = True
    work = a.is_host & ~has_child & ~blocking_waits(a)
    for w in res.windows:
        for s in w.path:
            if s.bound_by != "cpu" or s.eid is None or s.dur_ns < 1_000_000 or s.edge not in ("first", "gap", "last"):
                continue
            p = a.pos_of[s.eid]
            ln = a.lane[p]
            own = host_idx[(a.lane[host_idx] == ln) & (a.ts[host_idx] < s.end_ns) & (a.end[host_idx] > s.start_ns)
                           & (host_idx != p)]
            if len(own):
                continue
            busy = _busy_elsewhere(a, work, int(ln), a.pid[p], s.start_ns, s.end_ns)
            assert busy <= 0.5 * s.dur_ns, (w.name, s, busy)


# ------------------------------------------------------------------ waits the trace shows (issue 30)
def test_no_wait_is_called_cpu(kineto_graph) -> None:
    """Issue "The waits that are still called CPU", "Done means", on every Kineto trace."""
    if not _has_activities(kineto_graph):
        pytest.skip("no device activities")
    _no_wait_is_cpu(kineto_graph)


NSYS = sorted((KINETO_DIR.parent / "C_nsys").glob("*.sqlite")) if KINETO_DIR.is_dir() else []


@pytest.mark.parametrize("path", NSYS or [pytest.param(None, marks=pytest.mark.skip(reason="no traces"))],
                         ids=lambda p: p.name if p else "none")
def test_no_wait_is_called_cpu_nsys(path) -> None:
    """The same on every Nsight Systems export (NVTX ranges are annotations)."""
    G = load_graph(path)
    if not _has_activities(G):
        pytest.skip("no device activities")
    _no_wait_is_cpu(G)


def _no_wait_is_cpu(G) -> None:
    """No ``cpu`` stretch of 1 ms or more is an annotation's own time or a launch call whose
    own device work runs inside it; the time after the trace fell silent is never ``cpu``;
    a DataLoader's own time is ``data_loading``; and the path's invariants hold."""
    from opgraph.analysis.critical_path.stop_tail import silent_from
    from opgraph.graph.syncs import SYNC_LAUNCH_MIN_NS
    from opgraph.graph.data_loading import data_loading_owners
    from opgraph.names import annotation_like

    a, res = _cp(G)
    annot = annotation_like(a.kind, a.name)
    dl = data_loading_owners(a)
    ls, ld = a.out_edges("launch")
    inside = (a.ts[ld] >= a.ts[ls]) & (a.end[ld] <= a.end[ls]) & (a.end[ld] - a.ts[ld] >= SYNC_LAUNCH_MIN_NS)
    waited_call = np.zeros(a.n, dtype=bool)
    waited_call[ls[inside]] = True
    silent = silent_from(a).get(0)
    for w in res.windows:
        for s in w.path:
            if s.eid is None:
                continue
            p = a.pos_of[s.eid]
            if s.bound_by == "cpu" and s.dur_ns >= 1_000_000:
                assert not annot[p], (w.name, s)
                assert not (waited_call[p] and s.edge == "leaf"), (w.name, s)
            if s.bound_by == "cpu" and silent is not None:
                assert s.start_ns < silent + 1_000_000 or s.edge == "leaf", (w.name, s)
            if dl[p] and s.edge in ("leaf", "first", "gap", "last") and s.bound_by in ("cpu", "untraced"):
                raise AssertionError((w.name, s, "a DataLoader's own time is data_loading"))
        assert abs(w.length_ns - w.span_ns) <= 0.005 * max(w.span_ns, 1), w.name
        assert w.breakdown_ns["other"] <= 0.02 * max(w.length_ns, 1), w.name


# ------------------------------------------------------------------ idle causes (issue: idle blame that is true)
def test_idle_causes_are_true(kineto_graph) -> None:
    """Per device and stream the causes sum to the measured idle; the CPU-induced part of a
    gap (all that is blamed) lies before the launch call of the activity that ends it, so no
    op is blamed for a gap whose ending activity was launched before that op began."""
    from opgraph.analysis.idle import CAUSES, idle_time

    G = kineto_graph
    if not _has_activities(G):
        pytest.skip("no device activities")
    a = G.arrays
    res = idle_time(G)
    for d in res.devices:
        assert sum(d.causes_ns.values()) == d.idle_ns and min(d.causes_ns.values()) >= 0
    for s in res.streams:
        assert sum(s.causes_ns.values()) == s.idle_ns and min(s.causes_ns.values()) >= 0
    g = res.gaps
    if not len(g):
        return
    ls, ld = a.out_edges("launch")
    launch = dict(zip(a.eid[ld].tolist(), a.ts[ls].tolist()))
    lt = np.array([launch.get(e, np.iinfo(np.int64).min) for e in g["ender"].tolist()], dtype=np.int64)
    host_late = np.clip(lt, g["start_ns"].to_numpy(), g["end_ns"].to_numpy()) - g["start_ns"].to_numpy()
    assert ((g["cpu_induced"] + g["sync_drain"] + g["data_loading"]).to_numpy() == host_late).all()
    assert int(res.blame("top")["blame_ns"].sum()) == res.cpu_induced_idle_ns
    assert (g[list(CAUSES)].sum(axis=1).to_numpy() == (g["end_ns"] - g["start_ns"]).to_numpy()).all()


def test_stream_waits_reach_the_awaited_work(kineto_graph) -> None:
    """Every ``stream_wait_work`` edge (a host-side ``cudaStreamWaitEvent``'s awaited work)
    runs from an activity on another stream of the held activity's device, launched by the
    thread that made the wait call, before that call, and ending at or before the held
    activity starts; the held activity also has its ``stream_wait_call`` edge."""
    G = kineto_graph
    work = [(u, v) for u, v, d in G.edges(data=True) if d.get("evidence") == "stream_wait_work"]
    if not work:
        pytest.skip("no stream wait on earlier work")
    N = G.nodes
    launcher = {v: u for u, v, d in G.edges(data=True) if d["kind"] == "launch"}
    calls = {v: u for u, v, d in G.edges(data=True) if d.get("evidence") == "stream_wait_call"}
    for u, v in work:
        a, b = N[u], N[v]
        assert a["device"] == b["device"] and a["stream"] != b["stream"]
        assert a["ts"] + a["dur"] <= b["ts"]
        w = N[calls[v]]
        c = N[launcher[u]]
        assert (c["pid"], c["tid"]) == (w["pid"], w["tid"]) and c["ts"] < w["ts"]


def test_negative_queue_length_waits_on_the_awaited_work() -> None:
    """hta_negative_queue_length_rank0: the NCCL SendRecv kernels held by a
    cudaStreamWaitEvent are linked to the copies and concatenations the thread launched on
    stream 27 before each wait (20 edges); ProfilerStep#551's path reaches that work instead
    of a 30.5 ms device wait on the wait call, and no device wait on it exceeds 10 ms."""
    from conftest import KINETO_DIR, load_graph

    p = KINETO_DIR / "hta_negative_queue_length_rank0.json.gz"
    if not p.exists():
        pytest.skip("trace absent")
    G = load_graph(p)
    work = [(u, v) for u, v, d in G.edges(data=True) if d.get("evidence") == "stream_wait_work"]
    assert len(work) == 20
    res = critical_path(G)
    (w,) = [w for w in res.windows if w.name == "ProfilerStep#551"]
    assert w.length_ns == w.span_ns
    dw = [s for s in w.path if s.bound_by == "device_wait"]
    assert max(s.dur_ns for s in dw) < 10_000_000
    assert any(s.edge == "evwait" and (s.from_eid, s.to_eid) in set(work) for s in dw)


def test_sglang_decode_wait_is_a_device_wait() -> None:
    """tracelens_sglang_qwen3_8b_decode: the 463 ms before resolve_future_token_ids_kernel is
    the stream held by a hipStreamWaitEvent (a device wait), not CPU-induced idle, and the
    blocking hipMemcpyWithStream that runs meanwhile carries no blame; the critical path
    calls it device_wait too, never launch_overhead."""
    from opgraph.analysis.idle import idle_time
    from conftest import KINETO_DIR, load_graph

    p = KINETO_DIR / "tracelens_sglang_qwen3_8b_decode.json.gz"
    if not p.exists():
        pytest.skip("trace absent")
    G = load_graph(p)
    res = idle_time(G)
    (d,) = res.devices
    assert d.causes_ns["device_wait"] > 463_000_000
    assert d.cpu_induced_idle_ns < 1_000_000
    assert list(d.device_wait_by_ns)[0].endswith("(hipStreamWaitEvent)")
    b = res.blame("leaf")
    assert not b["name"].astype(str).str.contains("hipMemcpyWithStream").any()
    assert not res.blame("top")["name"].astype(str).str.contains("aten::copy_").any() or \
        res.blame("top").set_index("name").loc["aten::copy_", "blame_ns"] < 1_000_000
    w = critical_path(G).windows[0]
    assert w.breakdown_ns["device_wait"] > 463_000_000 and w.breakdown_ns["launch_overhead"] < 1_000_000


@pytest.mark.parametrize("stem", ["kineto_tbplugin_resnet50_w0_2021-06", "kineto_tbplugin_resnet50_w0_2021-01"])
def test_resnet50_steps_walk_forward_then_backward(stem: str) -> None:
    """The resnet50 training steps: the forward ops run on the main thread (the step's
    thread), the path crosses to the autograd thread through an inferred hand-off, and the
    backward ops are on it. Where the GPU fell behind the host (2021-06), the backward
    kernels bound the step's second half; where it caught up before the step ended (2021-01:
    the backward kernels queue up to 25 ms behind, but the optimizer's 28 ms of dispatch on
    the main thread lets the GPU catch up, so the last kernel starts right after its
    launch), no kernel is on the path, and that is true."""
    from conftest import KINETO_DIR, load_graph

    p = KINETO_DIR / f"{stem}.pt.trace.json.gz"
    if not p.exists():
        pytest.skip("trace absent")
    G = load_graph(p)
    a, res = _cp(G)

    def name_of(eid: int) -> str:
        return str(G.nodes[eid]["name"])

    assert len(res.windows) >= 2
    for w in res.windows:
        steps = [n for n, d in G.nodes(data=True) if d["name"] == w.name]
        main = G.nodes[steps[0]]["tid"]
        segs = [s for s in w.path if s.eid is not None]
        on_main = [s for s in segs if s.bound_by == "cpu" and G.nodes[s.eid]["tid"] == main]
        fwd = sum(s.dur_ns for s in on_main if name_of(s.eid) in ("aten::cudnn_convolution", "aten::conv2d",
                                                                     "aten::convolution", "aten::_convolution",
                                                                     "aten::batch_norm", "aten::relu_",
                                                                     "aten::max_pool2d", "aten::linear"))
        assert fwd > 1_000_000, (w.name, fwd)
        hand = [s for s in w.path if s.bound_by == "thread_wait" and s.inferred]
        assert hand, w.name
        bwd = sum(s.dur_ns for s in segs if G.nodes[s.eid]["tid"] != main and "Backward" in name_of(s.eid))
        assert bwd > 0, w.name
        # the hand-off comes after the forward part and before the backward part
        t_hand = min(s.start_ns for s in hand)
        assert min(s.start_ns for s in on_main) < t_hand
        gpu = w.breakdown_pct["gpu_compute"]
        if stem.endswith("2021-06"):
            assert gpu > 25.0, (w.name, gpu)
        else:
            assert gpu == 0.0
        if stem.endswith("2021-01"):
            # the GPU had caught up: the last activity launched in the step started within
            # 100 µs of its launch call's return, so the host's dispatch bounds the end
            ls, ld = a.out_edges("launch")
            t0, t1 = w.path[0].start_ns, w.path[-1].end_ns
            m = (a.ts[ls] >= t0) & (a.ts[ls] < t1)
            last = np.argmax(a.end[ld[m]])
            assert a.ts[ld[m][last]] - a.end[ls[m][last]] <= 100_000, w.name
