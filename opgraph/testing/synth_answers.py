"""The synthesizer's answers: ground truth computed from the timeline model, never from JSON.

:func:`builder_answers` checks a :class:`~opgraph.testing.synth_builder.TraceBuilder`'s
construction obeys the rules the answers rely on, then derives node and edge counts, GPU
busy / idle time and its causes, and per-step ranges (the definitions are in
:mod:`opgraph.testing.synth`'s docstring); :func:`memory_answers` the ``[memory]``
ground truth and :func:`exact_ns_answers` the exact ns of ``ns_float`` events. These are
deliberately independent of the code under test (its own interval union, its own nesting
sweep): nothing here imports opgraph's analyses. Every time is integer **ns**; memory in
bytes.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from opgraph.testing.synth_builder import TraceBuilder
from opgraph.testing.synth_model import (
    DEVICE, EDGE_KINDS, EVENT_KINDS, NODE_KINDS, US, SyncCall, SynthEvent,
)


def _union(intervals: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Merge [start, end) intervals (ns); touching intervals merge."""
    merged: list[tuple[int, int]] = []
    for s, e in sorted(intervals):
        if merged and s <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], e))
        else:
            merged.append((s, e))
    return merged


def _length(intervals: list[tuple[int, int]]) -> int:
    return sum(e - s for s, e in intervals)


def _sweep_parents(evs: list[SynthEvent]) -> dict[int, SynthEvent | None]:
    """Direct parent of every range on one thread by a sorted sweep; raises on partial overlap."""
    parents: dict[int, SynthEvent | None] = {}
    stack: list[SynthEvent] = []
    for ev in sorted(evs, key=lambda e: (e.ts, -(e.dur or 0))):
        while stack and stack[-1].end <= ev.ts:
            stack.pop()
        if stack and ev.end > stack[-1].end:
            raise AssertionError(f"{ev.name}@{ev.ts} partially overlaps {stack[-1].name}")
        parents[id(ev)] = stack[-1] if stack else None
        stack.append(ev)
    return parents


def _verify(b: TraceBuilder) -> None:
    """Check the construction obeys the rules the answers rely on (raises AssertionError)."""
    host_nodes = b.host + b.runtimes
    by_thread: dict[Any, list[SynthEvent]] = defaultdict(list)
    for ev in host_nodes:
        by_thread[(ev.pid, ev.tid)].append(ev)
    for evs in by_thread.values():
        swept = _sweep_parents(evs)
        for ev in evs:
            assert swept[id(ev)] is ev.parent, f"{ev.name}@{ev.ts}: nest parent differs from sweep"
            if ev.parent is not None:  # strict containment: no ties for a sweep to break
                assert ev.parent.ts < ev.ts and ev.end < ev.parent.end, f"{ev.name}: touches parent"
    by_tid: dict[Any, list[SynthEvent]] = defaultdict(list)
    for ev in b.activities + b.gpu_annotations:
        by_tid[(ev.pid, ev.tid)].append(ev)
    for evs in by_tid.values():
        swept = _sweep_parents(evs)
        for ev in evs:
            assert swept[id(ev)] is ev.parent, f"{ev.name}@{ev.ts}: device nest parent differs"
    corrs = {rt.args["correlation"] for rt in b.runtimes}
    assert all(a.args["correlation"] in corrs for a in b.activities)
    for sy in b.syncs:
        for act in _sync_sources(b, sy):
            assert sy.call.ts < act.end < sy.call.end, f"{sy.call.name}@{sy.call.ts} does not wait"
    for w in b.event_waits:
        assert any(a.args["stream"] == w.src_stream and b.launcher[id(a)].ts < w.record.ts
                   and a.ts < w.record.ts for a in b.activities), "nothing recorded before event"
        assert any(a.args["stream"] == w.dst_stream and b.launcher[id(a)].ts > w.wait.end
                   for a in b.activities), "nothing enqueued after the wait"


def _sync_sources(b: TraceBuilder, sy: SyncCall) -> list[SynthEvent]:
    """The activities a synchronising call gets a ``sync`` edge from (docs/model.md)."""
    streams = sorted({a.args["stream"] for a in b.activities}) if sy.stream is None else [sy.stream]
    out = []
    for s in streams:
        done = [a for a in b.activities if a.args["stream"] == s and a.end <= sy.call.end]
        if done:
            out.append(max(done, key=lambda a: (a.end, a.ts)))
    return out


def _edges_by_kind(b: TraceBuilder) -> dict[str, int]:
    edges: Counter[str] = Counter()
    host_nodes = b.host + b.runtimes
    edges["nest"] = sum(ev.parent is not None for ev in host_nodes + b.activities)
    groups: Counter[Any] = Counter((ev.pid, ev.tid, id(ev.parent)) for ev in host_nodes)
    edges["host_seq"] = sum(n - 1 for n in groups.values())
    edges["launch"] = len(b.activities)  # every activity has a runtime call (checked)
    per_stream = Counter((DEVICE, a.args["stream"]) for a in b.activities)
    edges["stream_seq"] = sum(n - 1 for n in per_stream.values())
    edges["sync"] = sum(len(_sync_sources(b, sy)) for sy in b.syncs)
    edges["event_wait"] = len(b.event_waits)
    edges["flow"] = len(b.fwdbwd)
    edges["handoff"] = len(b.handoffs)
    return {k: int(edges[k]) for k in EDGE_KINDS}


def _gpu_answers(b: TraceBuilder) -> tuple[dict[str, Any], dict[str, int]]:
    """GPU totals plus the idle causes (ns, docs/idle.md): every gap between merged device
    intervals, ended by activity ``x`` launched by call ``c``, is split in time order into
    host-late time (gap start to ``c``'s start) — ``sync_drain`` where the launching thread
    is inside a synchronize call, ``cpu_induced`` elsewhere —, ``launch_latency`` (until
    ``c``'s end + 100 µs), ``device_wait`` when ``x`` is the first activity after a
    cudaStreamWaitEvent on its stream (until the awaited activity ended), ``kernel_gap``
    (``x`` queued or held: up to 100 µs after the gap start, or after the awaited end) and
    the rest ``untraced``."""
    ivs = [(a.ts, a.end) for a in b.activities]
    merged = _union(ivs)
    start, end = merged[0][0], merged[-1][1]
    busy = _length(merged)
    by_stream = {str(s): _length(_union([(a.ts, a.end) for a in b.activities if a.args["stream"] == s]))
                 for s in sorted({a.args["stream"] for a in b.activities})}
    held: dict[int, int] = {}  # id(held activity) -> end of the activity it waited for
    for ew in b.event_waits:
        after = [a for a in b.activities if a.args["stream"] == ew.dst_stream and b.launcher[id(a)].ts >= ew.wait.ts]
        before = [a for a in b.activities if a.args["stream"] == ew.src_stream and b.launcher[id(a)].ts <= ew.record.ts]
        if after and before:
            x = min(after, key=lambda a: (b.launcher[id(a)].ts, a.ts))
            held[id(x)] = max(before, key=lambda a: (b.launcher[id(a)].ts, a.ts)).end
    # (no scenario of the synthesizer waits in a DataLoader, and every activity has its launch
    # call: data_loading and launch_unknown stay 0)
    causes = {"cpu_induced": 0, "data_loading": 0, "sync_drain": 0, "launch_latency": 0, "kernel_gap": 0,
              "device_wait": 0, "launch_unknown": 0, "untraced": 0}
    for (_, g0), (g1, _) in zip(merged, merged[1:]):
        enders = [a for a in b.activities if a.ts == g1]
        assert len(enders) == 1, f"{b.name}: gap ending at {g1} has {len(enders)} activities"
        x = enders[0]
        c = b.launcher[id(x)]
        host_end = min(max(c.ts, g0), g1)
        lat_end = min(max(c.end + 100 * US, host_end), g1)
        drain = sum(max(0, min(sy.call.end, host_end) - max(sy.call.ts, g0)) for sy in b.syncs
                    if sy.call.tid == c.tid)
        wait_end = min(max(held[id(x)], lat_end), g1) if id(x) in held else lat_end
        if id(x) in held or c.ts < g0:
            base = wait_end if id(x) in held else g0
            gap_end = min(max(base + 100 * US, wait_end), g1)
        else:
            gap_end = wait_end
        causes["sync_drain"] += drain
        causes["cpu_induced"] += host_end - g0 - drain
        causes["launch_latency"] += lat_end - host_end
        causes["device_wait"] += wait_end - lat_end
        causes["kernel_gap"] += gap_end - wait_end
        causes["untraced"] += g1 - gap_end
    gpu = {"start_ns": start, "end_ns": end, "span_ns": end - start, "busy_ns": busy,
           "idle_ns": end - start - busy, "utilization": round(busy / (end - start), 6),
           "busy_by_stream_ns": by_stream}
    return gpu, causes


def _step_answers(b: TraceBuilder) -> list[dict[str, Any]]:
    out = []
    for st in b.steps:
        acts = [a for a in b.activities if st.ts <= b.launcher[id(a)].ts < st.end]
        merged = _union([(a.ts, a.end) for a in acts])
        out.append({
            "name": st.name, "cpu_start_ns": st.ts, "cpu_end_ns": st.end, "cpu_dur_ns": st.end - st.ts,
            "gpu_start_ns": merged[0][0] if merged else None,
            "gpu_end_ns": merged[-1][1] if merged else None,
            "gpu_busy_ns": _length(merged), "num_device_activities": len(acts),
        })
    return out


def builder_answers(b: TraceBuilder, events: list[SynthEvent], description: str) -> dict[str, Any]:
    """The answers of the timeline in ``b`` (``events``: its rendered events, file order;
    ``description``: the scenario's sentence), after checking the construction obeys the
    rules they rely on. Raises AssertionError when it does not, or when the utilization is
    too close to the 50 % line for ``bound`` to be unambiguous."""
    _verify(b)
    events_by_kind = Counter(e.kind for e in events)
    nodes = {k: int(events_by_kind[k]) for k in NODE_KINDS}
    edges = _edges_by_kind(b)
    gpu, causes = _gpu_answers(b)
    if 0.4 < gpu["utilization"] < 0.6:
        raise AssertionError(f"{b.name}: utilization {gpu['utilization']} too close to the 50 % line")
    return {
        "scenario": b.name,
        "description": description,
        "format": "kineto-2021-list" if b.old else "kineto",
        "time_unit": "ns",
        "rank": None if b.old else 0,
        "num_events": len(events),
        "events_by_kind": {k: int(events_by_kind[k]) for k in EVENT_KINDS},
        "num_nodes": sum(nodes.values()),
        "nodes_by_kind": nodes,
        "num_edges": sum(edges.values()),
        "edges_by_kind": edges,
        "steps": _step_answers(b),
        "gpu": gpu,
        "cpu_induced_idle_ns": causes["cpu_induced"],
        "launch_latency_ns": causes["launch_latency"],
        "idle_causes_ns": causes,
        "bound": "gpu" if gpu["busy_ns"] >= gpu["idle_ns"] else "cpu",
    }


def _ops_of(ev: SynthEvent) -> tuple[str, str]:
    """(outermost, innermost) CPU op around a memory event; ``(outside any op)`` for none."""
    ops = []
    p = ev.parent
    while p is not None:
        if p.kind == "cpu_op":
            ops.append(p.name)
        p = p.parent
    return (ops[-1], ops[0]) if ops else ("(outside any op)", "(outside any op)")


def memory_answers(b: TraceBuilder) -> dict[str, Any]:
    """Ground truth of the ``[memory]`` events (bytes; times in ns), per device
    (``device_type``, ``device``): the allocated level starts at the trace's pre-trace total
    and moves by ``Bytes`` at each event (time order); ``peak`` = its first maximum,
    ``live_at_peak`` = allocations made up to the peak event and not freed by then,
    grouped by (outermost op, innermost op); ``steps`` = per ProfilerStep the highest
    level in ``[start, end)`` counting the level carried into it."""
    out: list[dict[str, Any]] = []
    for key in sorted({(e.args["Device Type"], e.args["Device Id"]) for e in b.memory}):
        evs = [e for e in b.memory if (e.args["Device Type"], e.args["Device Id"]) == key]
        level = evs[0].args["Total Allocated"] - evs[0].args["Bytes"]
        start = level
        levels = []
        for e in evs:
            level += e.args["Bytes"]
            levels.append(level)
        peak = max(levels)
        ip = levels.index(peak)
        allocs = [e for e in evs if e.args["Bytes"] > 0]
        by_op: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
        live: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
        for e in allocs:
            by_op[_ops_of(e)][0] += 1
            by_op[_ops_of(e)][1] += e.args["Bytes"]
            f = b.mem_free_of.get(id(e))
            if evs.index(e) <= ip and (f is None or evs.index(f) > ip):
                live[_ops_of(e)][0] += 1
                live[_ops_of(e)][1] += e.args["Bytes"]
        step_peaks = []
        for st in b.steps:
            before = [lv for e, lv in zip(evs, levels) if e.ts < st.ts]
            inside = [lv for e, lv in zip(evs, levels) if st.ts <= e.ts < st.end]
            carried = before[-1] if before else start
            step_peaks.append({"name": st.name, "peak_allocated_bytes": max([carried] + inside),
                               "start_allocated_bytes": carried,
                               "end_allocated_bytes": (before + inside)[-1] if before + inside else start})
        out.append({
            "device_type": key[0], "device": key[1], "events": len(evs), "allocations": len(allocs),
            "alloc_bytes": sum(e.args["Bytes"] for e in allocs), "start_allocated_bytes": start,
            "end_allocated_bytes": levels[-1], "peak_allocated_bytes": peak, "peak_ts_ns": evs[ip].ts,
            "peak_reserved_bytes": max(e.args["Total Reserved"] for e in evs),
            "live_at_peak_bytes": sum(v[1] for v in live.values()),
            "allocators": [{"op": o, "inner_op": i, "allocations": v[0], "alloc_bytes": v[1]}
                           for (o, i), v in sorted(by_op.items())],
            "live_at_peak": [{"op": o, "inner_op": i, "allocations": v[0], "live_bytes": v[1]}
                             for (o, i), v in sorted(live.items())],
            "steps": step_peaks,
        })
    return {"devices": out}


def exact_ns_answers(events: list[SynthEvent], dicts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A few ns_float events with their exact ns and the decimal text written for them."""
    kernels = [e for e in events if e.kind == "kernel"]
    picks = [
        next(e for e in events if e.kind == "annotation"),
        next(e for e in events if e.kind == "runtime"),
        kernels[0],
        kernels[-1],
        [e for e in events if e.kind == "runtime"][-1],
    ]
    return [{"eid": e.eid, "kind": e.kind, "name": e.name, "ts_ns": e.ts, "dur_ns": e.dur,
             "ts_text": str(dicts[e.eid]["ts"]), "dur_text": str(dicts[e.eid]["dur"])}
            for e in picks]
