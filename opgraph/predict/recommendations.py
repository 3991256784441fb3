"""What to try next: rules over the other analyses' results, each citing its numbers
and priced by the what-if engine (``opgraph advise``; docs/recommendations.md).

Every rule reads one or two results (critical path, idle causes, launch statistics,
overlap, copies, memory, graph replays), fires when a documented threshold is crossed, and
says what it saw, what to try, and which command shows the evidence. A finding about time
carries three numbers (µs, or ticks on an execution trace):

* ``removable_us``: the time the finding accounts for, which fixing it could remove at
  most (the idle it explains, the exposed communication, ...);
* ``whatif`` and ``whatif_gain_us``: the what-if of :mod:`opgraph.predict` that models the
  fix (e.g. ``scale-cpu '.*' x0; launch-overhead 0 us``) and how much it shortens the
  whole timeline (measured makespan − predicted, never below 0);
* ``impact_us`` = min(``whatif_gain_us``, ``removable_us``): never more than the wait it
  removes, never more than the replay says the change gains.

No rule guesses: a rule whose inputs the trace lacks does not fire. Rules know the device
kind (no CUDA-graph advice without CUDA/HIP devices, on a trace whose steps already
replay a captured graph, or on an execution trace) and the time unit.

Rules and thresholds (module constants):

``launch_bound``
    CPU work + launch overhead ≥ :data:`LAUNCH_BOUND_PCT` % of the critical path.
    Removable: that time, at most the makespan − the busiest device's busy time (the GPU
    work stays). What-if: host work and launch calls free (``scale-cpu '.*' x0``,
    ``launch-overhead 0 us``).
``cpu_induced_idle``
    Per GPU, CPU-induced idle ≥ :data:`IDLE_PCT` % of the GPU's span. Removable: that idle.
    What-if: host work free. Cites the CPU op blamed most.
``sync_drain``
    Per GPU, idle while the launching thread sat in a synchronize call ≥ :data:`SYNC_PCT` %
    of the span. Removable: that idle. What-if: the synchronize calls removed.
``stream_wait``
    Device and sync waits (``device_wait`` + ``sync_wait``) ≥ :data:`WAIT_PCT` % of the
    critical path: a stream or the host waited for work elsewhere. Removable: that time.
    What-if: the wait and synchronize calls removed. Cites the longest wait.
``data_loading``
    ``data_loading`` on the critical path (when the path has that category) ≥
    :data:`DATA_PCT` %. Removable: that time. What-if: the data-loading ranges removed.
``exposed_comm``
    Communication not hidden behind compute ≥ :data:`EXPOSED_PCT` % of the span: the
    figure of ``opgraph overlap`` (its whole-trace ``all`` row when it has one, else the sum
    of its rows; never both). What-if: communication kernels free.
``pageable_copies``
    Host↔device copies from or to pageable memory. Removable: half their time (pinned
    copies run at about :data:`PINNED_SPEEDUP` times the bandwidth). What-if: those copies
    x1/:data:`PINNED_SPEEDUP`.
``untraced_time``
    ``untraced`` ≥ :data:`UNTRACED_PCT` % of the critical path: the trace does not show
    what ran then. Not priced (no what-if removes what was not recorded): record Python
    stacks to see it.
``allocator_slack``
    Per device, peak reserved − peak allocated ≥ :data:`SLACK_PCT` % of reserved and ≥
    :data:`SLACK_MIN_BYTES`. Try ``PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True``.
``gemm_alignment``
    GEMMs of 16-bit (8-bit) types whose M, N or K is not a multiple of 8 (16) take ≥
    :data:`UNALIGNED_PCT` % of GEMM time (``opgraph shapes``, ``aligned``). Removable: their
    time; not priced (no what-if models padding). Try padding the dimensions.
``graph_replay_unmapped``
    Graph-replay kernels not tied to the ops that captured them: pass the capture trace.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Mapping

import pandas as pd

from opgraph.model.trace_graph import TraceGraph
from opgraph.analysis.display import TableResult, json_records
from opgraph.graph.windows import WindowError
from opgraph.errors import OpgraphInputError

LAUNCH_BOUND_PCT = 30.0
IDLE_PCT = 10.0
SYNC_PCT = 5.0
WAIT_PCT = 10.0
DATA_PCT = 5.0
EXPOSED_PCT = 5.0
UNTRACED_PCT = 10.0
SLACK_PCT = 20.0
SLACK_MIN_BYTES = 1 << 30
UNALIGNED_PCT = 10.0
#: Pinned host memory copies at about this many times the bandwidth of pageable memory.
PINNED_SPEEDUP = 2.0
#: The synchronize calls the ``sync_drain`` what-if removes.
SYNC_CALLS = r"^(cuda|hip|cu)(Device|Stream|Event|Ctx)Synchronize"
#: The wait calls the ``stream_wait`` what-if removes (synchronize calls and stream waits).
WAIT_CALLS = r"^(cuda|hip|cu)((Device|Stream|Event|Ctx)Synchronize|StreamWaitEvent)"
#: Columns of the ``findings`` table.
COLUMNS: tuple[str, ...] = ("rule", "impact_us", "impact_pct", "removable_us", "whatif", "whatif_gain_us",
                            "finding", "try", "see")


@dataclass
class Finding:
    """One fired rule: its id, the time at stake (µs, None when the finding is not about
    time or is not priced), that time as % of what the rule measures against, what was seen
    (with its numbers), what to try, the command that shows the evidence, and how the
    impact was priced: ``removable_us`` (the most fixing it could remove), ``whatif`` (the
    what-if that models the fix) and ``whatif_gain_us`` (what the replay says it gains)."""

    rule: str
    impact_us: float | None
    impact_pct: float | None
    finding: str
    try_: str
    see: str
    removable_us: float | None = None
    whatif: str | None = None
    whatif_gain_us: float | None = None


@dataclass(repr=False)
class Recommendations(TableResult):
    """Result of :func:`recommendations`: ``findings`` sorted by time at stake (the
    findings about memory last), ``skipped``: rule -> why it could not run, and
    ``time_unit`` ("µs", or "ticks" on an execution trace).

    Examples
    --------
    >>> import opgraph
    >>> r = opgraph.advise(opgraph.example_trace("cpu_bound"))
    >>> r.to_frame()["rule"].tolist()[:2]
    ['cpu_induced_idle', 'launch_bound']
    """

    findings: list[Finding]
    skipped: dict[str, str] = field(default_factory=dict)
    time_unit: str = "µs"
    main_table: ClassVar[str] = "findings"

    def tables(self) -> dict[str, pd.DataFrame]:
        """``findings`` (:data:`COLUMNS`; µs and %)."""
        rows = [{"rule": f.rule, "impact_us": f.impact_us, "impact_pct": f.impact_pct,
                 "removable_us": f.removable_us, "whatif": f.whatif, "whatif_gain_us": f.whatif_gain_us,
                 "finding": f.finding, "try": f.try_, "see": f.see} for f in self.findings]
        return {"findings": pd.DataFrame(rows, columns=list(COLUMNS))}

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (``schemas/advise.schema.json``)."""
        return {"findings": json_records(self.tables()["findings"]), "skipped": dict(self.skipped),
                "time_unit": self.time_unit}


def _pct(part: float, whole: float) -> float:
    return 100.0 * part / whole if whole > 0 else 0.0


class _Inputs:
    """The analyses the rules read, each computed once on first use, and the what-if
    prices (one replay model for all)."""

    def __init__(self, G: TraceGraph, given: Mapping[str, Any] | None = None) -> None:
        self.G = G
        self._cache: dict[str, Any] = {k: v for k, v in (given or {}).items() if v is not None}
        self.unit = "ticks" if (G.graph.get("trace_metadata") or {}).get("timing") == "ordinal" else None

    def get(self, name: str, fn: Callable[[], Any]) -> Any:
        if name not in self._cache:
            self._cache[name] = fn()
        return self._cache[name]

    def fmt(self, us: float) -> str:
        """A time for a sentence: ms from 10 ms up, else µs; ticks on an execution trace."""
        if self.unit:
            return f"{us:,.0f} {self.unit}"
        return f"{us / 1e3:,.2f} ms" if us >= 1e4 else f"{us:,.1f} µs"

    def cp(self) -> dict[str, Any]:
        from opgraph.analysis.critical_path.path import critical_path
        return self.get("cp", lambda: critical_path(self.G).to_dict(with_path=False))

    def idle(self) -> dict[str, Any]:
        from opgraph.analysis.idle import idle_time
        return self.get("idle", lambda: idle_time(self.G).to_dict(top=5))

    def launch(self) -> dict[str, Any]:
        from opgraph.analysis.launch_stats import launch_stats
        return self.get("launch", lambda: launch_stats(self.G).to_dict(5))

    def overlap(self) -> dict[str, Any]:
        from opgraph.analysis.overlap import comm_overlap
        return self.get("overlap", lambda: comm_overlap(self.G).to_dict())

    def copies(self) -> dict[str, Any]:
        from opgraph.analysis.memory_bw import memory_bandwidth
        return self.get("copies", lambda: memory_bandwidth(self.G).to_dict())

    def shapes(self) -> dict[str, Any]:
        from opgraph.analysis.shapes import shapes
        return self.get("shapes", lambda: shapes(self.G).to_dict(None, ("gemm",)))

    def memory(self) -> dict[str, Any]:
        from opgraph.analysis.memory_timeline import memory_timeline
        return self.get("memory", lambda: memory_timeline(self.G).to_dict(series=False))

    def device_kind(self) -> dict[str, bool]:
        """``gpu_api``: the trace launches through CUDA/HIP; ``graphs``: it replays captured
        CUDA/HIP graphs (or records a capture); ``ordinal``: an execution trace."""
        def kind() -> dict[str, bool]:
            a = self.G.arrays
            rt = a.name[a.is_kind("runtime")]
            names = set(pd.unique(pd.Series(rt, dtype=object).dropna()).tolist())
            gpu = a.is_activity.any() and any(isinstance(n, str) and n.startswith(("cuda", "hip", "cu")) for n in names)
            graphs = bool(self.G.graph.get("graph_replay")) or any(
                isinstance(n, str) and re.match(r"^(cuda|hip|cu)(GraphLaunch|StreamBeginCapture)", n) for n in names)
            return {"gpu_api": bool(gpu), "graphs": graphs, "ordinal": self.unit is not None}
        return self.get("device_kind", kind)

    def price(self, key: str, transforms: list[Any]) -> tuple[str, float]:
        """The what-if ``transforms`` as text and what it gains on the makespan (µs, ≥ 0)."""
        from opgraph.predict.simulation import build_model
        from opgraph.predict.prediction import makespan_change

        model = self.get("model", lambda: build_model(self.G))
        ch = self.get("whatif:" + key, lambda: makespan_change(self.G, transforms, boundary_model=model))
        return "; ".join(_describe(t) for t in transforms), max(0.0, ch.gain_ns / 1e3)

    def busy_us(self) -> float:
        """The busiest device's busy time (µs): work a host-side fix cannot remove."""
        return max((d["busy_us"] for d in self.idle().get("devices", [])), default=0.0)

    def makespan_us(self) -> float:
        def span() -> float:
            a = self.G.arrays
            m = a.is_host | a.is_activity
            return float(a.end[m].max() - a.ts[m].min()) / 1e3 if m.any() else 0.0
        return self.get("makespan", span)


def _describe(t: Any) -> str:
    if t.kind in ("scale_kernels", "scale_cpu"):
        return f"{t.kind.replace('_', '-')} '{t.pattern}' x{t.factor:g}"
    if t.kind == "launch_overhead":
        return f"launch-overhead {t.value_ns / 1000:g} us"
    return f"remove '{t.pattern}'"


def _priced(x: _Inputs, rule: str, removable: float, whole: float, transforms: list[Any], finding: str,
            try_: str, see: str) -> Finding:
    """A finding whose impact is min(what-if gain, removable); % of ``whole``."""
    what, gain = x.price(rule, transforms)
    impact = min(gain, max(0.0, removable))
    return Finding(rule, impact, _pct(impact, whole), finding, try_, see, removable, what, gain)


def _free_host() -> list[Any]:
    from opgraph.predict.whatif import Transform

    return [Transform("scale_cpu", pattern=".*", factor=0.0), Transform("launch_overhead", value_ns=0)]


def _on_path(x: _Inputs, *categories: str) -> tuple[dict[str, Any], float, float]:
    """The critical path's summary, the time of ``categories`` on it (µs) and its share (%)."""
    s = x.cp()["summary"]
    t = sum(s["breakdown_us"].get(c, 0.0) for c in categories)
    return s, t, _pct(t, s["length_us"])


def _launch_bound(x: _Inputs) -> list[Finding]:
    s, host, pct = _on_path(x, "cpu", "launch_overhead")
    if pct < LAUNCH_BOUND_PCT:
        return []
    ls = x.launch()["summary"] if x.device_kind()["gpu_api"] else {}
    short = ls.get("short_kernels", 0)
    tail = (f"; {short:,} of {ls.get('kernels', 0):,} kernels ran shorter than their own launch call "
            f"(median call {ls.get('call_p50_us') or 0:,.1f} µs)") if short else ""
    removable = host
    busy = x.busy_us()
    if busy > 0:
        removable = min(host, max(0.0, x.makespan_us() - busy))
    k = x.device_kind()
    if k["gpu_api"] and not k["graphs"] and not k["ordinal"]:
        try_ = ("capture the step in a CUDA graph (HIP graph on AMD) or torch.compile(mode='reduce-overhead'); fuse "
                "small ops; move Python work out of the step")
    elif k["graphs"]:
        try_ = ("the step already replays a captured graph: the host time is outside it; move that work out of the "
                "step or into the graph, fuse small ops")
    else:
        try_ = "fuse small ops, batch work per launch, move Python work out of the step"
    return [_priced(x, "launch_bound", removable, s["length_us"], _free_host(),
                    f"{pct:.1f} % of the critical path ({x.fmt(host)} over {s['windows']} window(s)) is CPU work or "
                    f"launch overhead{tail}", try_, "opgraph critical-path, opgraph launch-stats")]


def _idle_rules(x: _Inputs) -> list[Finding]:
    from opgraph.predict.whatif import Transform

    doc = x.idle()
    out = []
    blamed = [r for r in doc.get("blame_top", []) if r.get("kind") != "untraced"]
    top = next((r for r in blamed if r.get("kind") != "annotation"), blamed[0] if blamed else None)
    for d in doc.get("devices", []):
        span = d["span_us"]
        ci = d.get("causes_us", {}).get("cpu_induced", d.get("cpu_induced_idle_us", 0.0))
        if _pct(ci, span) >= IDLE_PCT:
            cite = (f"; the CPU op blamed most is {top['name']!r} ({x.fmt(top['blame_us'])}, "
                    f"{top['share_pct']:.1f} % of the blame)") if top else ""
            data = top is not None and "DataLoader" in str(top["name"])
            f = _priced(x, "cpu_induced_idle", ci, span, [Transform("scale_cpu", pattern=".*", factor=0.0)],
                        f"GPU {d['device']} sat idle {x.fmt(ci)} ({_pct(ci, span):.1f} % of its span) waiting "
                        f"for the CPU to launch work{cite}",
                        "load data ahead of the GPU: DataLoader(num_workers>0, pin_memory=True, "
                        "prefetch_factor), keep decoding and augmentation off the training thread" if data else
                        "make the blamed ops cheaper or launch ahead (avoid per-step Python bookkeeping, "
                        "batch small ops)", "opgraph idle")
            out.append(f)
        sd = d.get("causes_us", {}).get("sync_drain", 0.0)
        if _pct(sd, span) >= SYNC_PCT:
            out.append(_priced(x, "sync_drain", sd, span, [Transform("remove", pattern=SYNC_CALLS)],
                               f"GPU {d['device']} sat idle {x.fmt(sd)} ({_pct(sd, span):.1f} % of its span) while "
                               "the launching thread waited in a synchronize call: the queue drained",
                               "remove host syncs from the step (.item(), .cpu(), .tolist(), printing device "
                               "tensors, torch.cuda.synchronize); read values back once per N steps",
                               "opgraph idle, opgraph critical-path"))
    return out


def _stream_wait(x: _Inputs) -> list[Finding]:
    from opgraph.predict.whatif import Transform

    s, wait, pct = _on_path(x, "device_wait", "sync_wait")
    b = s["breakdown_us"]
    if pct < WAIT_PCT:
        return []
    lw = s.get("longest_wait") or {}
    cite = (f"; the longest: {lw['bound_by']} {x.fmt(lw['dur_us'])} on {lw['lane']} ({lw['name']})"
            if lw.get("dur_us") else "")
    return [_priced(x, "stream_wait", wait, s["length_us"], [Transform("remove", pattern=WAIT_CALLS)],
                    f"{pct:.1f} % of the critical path ({x.fmt(wait)}) is a stream or the host waiting for work "
                    f"elsewhere (device_wait {x.fmt(b.get('device_wait', 0.0))}, sync_wait "
                    f"{x.fmt(b.get('sync_wait', 0.0))}){cite}",
                    "overlap the awaited work (another stream, a copy, a collective) with the waiting one; "
                    "wait on events rather than whole-device synchronizes; drop syncs the step does not need",
                    "opgraph critical-path, opgraph idle")]


def _data_loading(x: _Inputs) -> list[Finding]:
    from opgraph.analysis.data_markers import DEFAULT_DATA_MARKERS
    from opgraph.predict.whatif import Transform

    s = x.cp()["summary"]
    t = s["breakdown_us"].get("data_loading")
    if t is None or _pct(t, s["length_us"]) < DATA_PCT:
        return []
    pat = "|".join(DEFAULT_DATA_MARKERS)
    return [_priced(x, "data_loading", t, s["length_us"], [Transform("remove", pattern=pat)],
                    f"{_pct(t, s['length_us']):.1f} % of the critical path ({x.fmt(t)}) is data loading: "
                    "the step waits for its next batch",
                    "load data ahead of the step: DataLoader(num_workers>0, pin_memory=True, prefetch_factor, "
                    "persistent_workers=True); keep decoding and augmentation off the training thread",
                    "opgraph critical-path, opgraph breakdown")]


def _exposed_comm(x: _Inputs) -> list[Finding]:
    from opgraph.graph.linking import COMM_KERNEL_PATTERN
    from opgraph.predict.whatif import Transform

    all_rows = x.overlap().get("rows", [])
    whole = [r for r in all_rows if r["window"] == "all"]
    rows = whole or all_rows  # the whole-trace row when there is one, never with the per-step rows
    span = sum(r["span_us"] for r in rows)
    exposed = sum(r["exposed_comm_us"] for r in rows)
    comm = sum(r["comm_us"] for r in rows)
    if not rows or _pct(exposed, span) < EXPOSED_PCT:
        return []
    n = len({r["window"] for r in rows})
    return [_priced(x, "exposed_comm", exposed, span,
                    [Transform("scale_kernels", pattern=COMM_KERNEL_PATTERN, factor=0.0)],
                    f"{x.fmt(exposed)} of communication ({_pct(exposed, comm):.1f} % of {x.fmt(comm)}) ran with no "
                    f"compute beside it: {_pct(exposed, span):.1f} % of the span of "
                    + ("the whole trace" if whole else f"{n} window(s)"),
                    "overlap communication with backward (DDP bucket_cap_mb, FSDP backward prefetch), send fewer "
                    "larger messages, check for stragglers", "opgraph overlap, opgraph collectives")]


def _pageable(x: _Inputs) -> list[Finding]:
    from opgraph.predict.whatif import Transform

    rows = [r for r in x.copies().get("by_kind", []) if r.get("pageable")]
    if not rows:
        return []
    n = sum(r["count"] for r in rows)
    t = sum(r["time_us"] for r in rows)
    return [_priced(x, "pageable_copies", t * (1 - 1 / PINNED_SPEEDUP), t,
                    [Transform("scale_kernels", pattern="Pageable", factor=1 / PINNED_SPEEDUP)],
                    f"{n:,} copies ({x.fmt(t)}) moved data from or to pageable host memory, which blocks the host "
                    "and runs at a fraction of the link's bandwidth",
                    "allocate host buffers pinned (DataLoader(pin_memory=True), tensor.pin_memory()) and copy with "
                    "non_blocking=True", "opgraph memory-bw")]


def _untraced(x: _Inputs) -> list[Finding]:
    _, u, pct = _on_path(x, "untraced")
    if pct < UNTRACED_PCT:
        return []
    return [Finding("untraced_time", None, pct,
                    f"{pct:.1f} % of the critical path ({x.fmt(u)}) is host time nothing in the trace explains "
                    "(not priced: no what-if removes what was not recorded)",
                    "record Python stacks to see it (torch.profiler with_stack=True, or record Python functions), "
                    "and NVTX ranges around data loading and custom C++ work", "opgraph critical-path", u)]


def _slack(x: _Inputs) -> list[Finding]:
    out = []
    for d in x.memory().get("devices", []):
        res, alloc = d.get("peak_reserved_bytes"), d.get("peak_allocated_bytes")
        if not isinstance(res, int) or not isinstance(alloc, int) or res <= 0:
            continue
        slack = res - alloc
        if slack >= SLACK_MIN_BYTES and _pct(slack, res) >= SLACK_PCT:
            out.append(Finding("allocator_slack", None, _pct(slack, res),
                               f"{d['device_type']} {d['device']}: the allocator reserved {res / 2**30:,.2f} GiB at "
                               f"peak but at most {alloc / 2**30:,.2f} GiB were allocated ({slack / 2**30:,.2f} GiB, "
                               f"{_pct(slack, res):.1f} % unused: fragmentation or cached blocks)",
                               "set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True; avoid tensors whose size "
                               "changes every step", "opgraph memory"))
    return out


def _gemm_alignment(x: _Inputs) -> list[Finding]:
    fam = x.shapes()["families"].get("gemm") or {}
    rows = fam.get("rows", [])
    total = sum(r["total_us"] for r in rows)
    bad = [r for r in rows if r.get("aligned") is False]
    t = sum(r["total_us"] for r in bad)
    if not bad or _pct(t, total) < UNALIGNED_PCT:
        return []
    worst = max(bad, key=lambda r: r["total_us"])
    dims = "×".join(str(worst.get(k)) for k in ("M", "N", "K"))
    return [Finding("gemm_alignment", None, _pct(t, total),
                    f"{sum(r['count'] for r in bad):,} GEMM calls in {len(bad)} shape(s) ({x.fmt(t)}, "
                    f"{_pct(t, total):.1f} % of GEMM time) have M, N or K not a multiple of 8 (16 for 8-bit "
                    f"types); the largest: {worst['name']} {worst.get('dtype')} M×N×K = {dims}, "
                    f"{worst['pct_peak_flops'] or 0:.1f} % of peak (not priced: no what-if models padding)",
                    "pad the dimensions (batch × sequence, hidden, vocabulary) to multiples of 8 / 16 / 64 so "
                    "tensor-core kernels apply", "opgraph shapes --family gemm", t)]


def _graph_replay(x: _Inputs) -> list[Finding]:
    doc = x.G.graph.get("graph_replay")
    if not isinstance(doc, dict) or not doc.get("unmapped"):
        return []
    return [Finding("graph_replay_unmapped", None, _pct(doc["unmapped"], doc["activities"]),
                    f"{doc['unmapped']:,} of {doc['activities']:,} CUDA/HIP-graph replay kernels are not tied to the "
                    "ops that captured them (per-op tables name them by category)",
                    "build with the trace that recorded the capture: opgraph build TRACE --capture CAPTURE_TRACE",
                    "opgraph info, docs/graph-replay.md")]


#: Every rule, in the order the document lists them.
RULES: dict[str, Callable[[_Inputs], list[Finding]]] = {
    "launch_bound": _launch_bound, "cpu_induced_idle": _idle_rules, "stream_wait": _stream_wait,
    "data_loading": _data_loading, "exposed_comm": _exposed_comm, "pageable_copies": _pageable,
    "untraced_time": _untraced, "gemm_alignment": _gemm_alignment, "allocator_slack": _slack,
    "graph_replay_unmapped": _graph_replay,
}


def recommendations(G: TraceGraph, given: Mapping[str, Any] | None = None) -> Recommendations:
    """Run every rule of the module docstring over ``G``.

    Parameters
    ----------
    G : TraceGraph
        A single-rank trace graph.
    given : mapping, optional
        Documents already computed with the default options, reused instead of computed
        again: ``cp`` (``critical_path(G).to_dict(with_path=False)``), ``idle``
        (``idle_time(G).to_dict(top=5)``), ``launch`` (``launch_stats(G).to_dict()``),
        ``overlap``, ``copies`` (``memory_bandwidth``), ``memory``
        (``memory_timeline(G).to_dict(series=False)``), ``shapes``, ``model`` (a
        :func:`opgraph.predict.build_model` of ``G``).

    Returns
    -------
    Recommendations
        Findings sorted by ``impact_us`` (largest first; findings without a time last). A
        rule whose analysis cannot run on this trace is listed in ``skipped`` with the
        reason, never guessed.
    """
    x = _Inputs(G, given)
    found: list[Finding] = []
    skipped: dict[str, str] = {}
    for name, rule in RULES.items():
        try:
            found.extend(rule(x))
        except (OpgraphInputError, WindowError, ValueError) as e:  # an analysis that does not apply here
            skipped[name] = f"{type(e).__name__}: {e}"
    found.sort(key=lambda f: (f.impact_us is None, -(f.impact_us or 0.0), f.rule))
    return Recommendations(found, skipped, x.unit or "µs")
