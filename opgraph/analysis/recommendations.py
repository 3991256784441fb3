"""What to try next: rules over the other analyses' results, each citing its numbers
(``opgraph advise``; docs/recommendations.md).

Every rule reads one or two results (critical path, idle causes, launch statistics,
overlap, copies, memory, graph replays), fires when a documented threshold is crossed, and
says what it saw, how much time is at stake (``impact_us``: the time the finding accounts
for, an upper bound on what fixing it saves), what to try, and which command shows the
evidence. No rule guesses: a rule whose inputs the trace lacks does not fire.

Rules and thresholds (module constants):

``launch_bound``
    CPU work + launch overhead ≥ :data:`LAUNCH_BOUND_PCT` % of the critical path.
    Impact: that time. Try CUDA graphs / ``torch.compile(mode="reduce-overhead")``, fusing
    small ops; cites the kernels shorter than their own launch call.
``cpu_induced_idle``
    Per GPU, CPU-induced idle ≥ :data:`IDLE_PCT` % of the GPU's span. Impact: that idle.
    Cites the CPU op blamed most.
``sync_drain``
    Per GPU, idle while the launching thread sat in a synchronize call ≥ :data:`SYNC_PCT` %
    of the span. Try removing host syncs (``.item()``, ``.cpu()``, ``torch.cuda.synchronize``)
    from the step.
``exposed_comm``
    Communication not hidden behind compute ≥ :data:`EXPOSED_PCT` % of the windows' span.
    Try overlapping with backward (DDP ``bucket_cap_mb``, FSDP prefetch), fewer larger
    messages.
``pageable_copies``
    Host↔device copies from or to pageable memory. Impact: their time. Try
    ``pin_memory=True`` and ``non_blocking=True``.
``untraced_time``
    ``untraced`` ≥ :data:`UNTRACED_PCT` % of the critical path: the trace does not show what
    ran then; record more (CUDA runtime, python stacks) before optimising it.
``allocator_slack``
    Per device, peak reserved − peak allocated ≥ :data:`SLACK_PCT` % of reserved and ≥
    :data:`SLACK_MIN_BYTES`. Try ``PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True``.
``gemm_alignment``
    GEMMs of 16-bit (8-bit) types whose M, N or K is not a multiple of 8 (16) take ≥
    :data:`UNALIGNED_PCT` % of GEMM time (``opgraph shapes``, ``aligned``). Impact: their
    time. Try padding the dimensions.
``graph_replay_unmapped``
    Graph-replay kernels not tied to the ops that captured them: pass the capture trace.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Mapping

import pandas as pd

from opgraph.graph.model import AnyGraph
from opgraph.analysis.display import TableResult, json_records
from opgraph.graph.windows import WindowError
from opgraph.errors import OpgraphInputError

LAUNCH_BOUND_PCT = 30.0
IDLE_PCT = 10.0
SYNC_PCT = 5.0
EXPOSED_PCT = 5.0
UNTRACED_PCT = 10.0
SLACK_PCT = 20.0
SLACK_MIN_BYTES = 1 << 30
UNALIGNED_PCT = 10.0
#: Columns of the ``findings`` table.
COLUMNS: tuple[str, ...] = ("rule", "impact_us", "impact_pct", "finding", "try", "see")


@dataclass
class Finding:
    """One fired rule: its id, the time at stake (µs, None when the finding is not about
    time), that time as % of what the rule measures against, what was seen (with its
    numbers), what to try, and the command that shows the evidence."""

    rule: str
    impact_us: float | None
    impact_pct: float | None
    finding: str
    try_: str
    see: str


@dataclass(repr=False)
class Recommendations(TableResult):
    """Result of :func:`recommendations`: ``findings`` sorted by time at stake (the
    findings about memory last), and ``skipped``: rule -> why it could not run.

    Examples
    --------
    >>> import opgraph
    >>> r = opgraph.advise(opgraph.example_trace("cpu_bound"))
    >>> r.to_frame()["rule"].tolist()[:2]
    ['launch_bound', 'cpu_induced_idle']
    """

    findings: list[Finding]
    skipped: dict[str, str] = field(default_factory=dict)
    main_table: ClassVar[str] = "findings"

    def tables(self) -> dict[str, pd.DataFrame]:
        """``findings`` (:data:`COLUMNS`; µs and %)."""
        rows = [{"rule": f.rule, "impact_us": f.impact_us, "impact_pct": f.impact_pct, "finding": f.finding,
                 "try": f.try_, "see": f.see} for f in self.findings]
        return {"findings": pd.DataFrame(rows, columns=list(COLUMNS))}

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (``schemas/advise.schema.json``)."""
        return {"findings": json_records(self.tables()["findings"]), "skipped": dict(self.skipped)}


def _fmt(us: float) -> str:
    return f"{us / 1e3:,.2f} ms" if us >= 1e4 else f"{us:,.1f} µs"


def _pct(part: float, whole: float) -> float:
    return 100.0 * part / whole if whole > 0 else 0.0


class _Inputs:
    """The analyses the rules read, each computed once on first use."""

    def __init__(self, G: AnyGraph, given: Mapping[str, Any] | None = None) -> None:
        self.G = G
        self._cache: dict[str, Any] = {k: v for k, v in (given or {}).items() if v is not None}

    def get(self, name: str, fn: Callable[[], Any]) -> Any:
        if name not in self._cache:
            self._cache[name] = fn()
        return self._cache[name]

    def cp(self) -> dict[str, Any]:
        from opgraph.analysis.critical_path import critical_path
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


def _launch_bound(x: _Inputs) -> list[Finding]:
    s = x.cp()["summary"]
    b = s["breakdown_us"]
    host = b.get("cpu", 0.0) + b.get("launch_overhead", 0.0)
    pct = _pct(host, s["length_us"])
    if pct < LAUNCH_BOUND_PCT:
        return []
    ls = x.launch()["summary"]
    short = ls.get("short_kernels", 0)
    tail = (f"; {short:,} of {ls.get('kernels', 0):,} kernels ran shorter than their own launch call "
            f"(median call {ls.get('call_p50_us') or 0:,.1f} µs)") if short else ""
    return [Finding("launch_bound", host, pct,
                    f"{pct:.1f} % of the critical path ({_fmt(host)} over {s['windows']} window(s)) is CPU work or "
                    f"launch overhead{tail}",
                    "capture the step in a CUDA graph or torch.compile(mode='reduce-overhead'); fuse small ops; "
                    "move Python work out of the step", "opgraph critical-path, opgraph launch-stats")]


def _idle_rules(x: _Inputs) -> list[Finding]:
    doc = x.idle()
    out = []
    blamed = [r for r in doc.get("blame_top", []) if r.get("kind") != "untraced"]
    top = next((r for r in blamed if r.get("kind") != "annotation"), blamed[0] if blamed else None)
    for d in doc.get("devices", []):
        span = d["span_us"]
        ci = d.get("causes_us", {}).get("cpu_induced", d.get("cpu_induced_idle_us", 0.0))
        if _pct(ci, span) >= IDLE_PCT:
            cite = (f"; the CPU op blamed most is {top['name']!r} ({_fmt(top['blame_us'])}, "
                    f"{top['share_pct']:.1f} % of the blame)") if top else ""
            out.append(Finding("cpu_induced_idle", ci, _pct(ci, span),
                               f"GPU {d['device']} sat idle {_fmt(ci)} ({_pct(ci, span):.1f} % of its span) waiting "
                               f"for the CPU to launch work{cite}",
                               "make the blamed ops cheaper or launch ahead (avoid per-step Python bookkeeping, "
                               "batch small ops)", "opgraph idle"))
        dl = d.get("causes_us", {}).get("data_loading", 0.0)
        if _pct(dl, span) >= IDLE_PCT:
            out.append(Finding("data_loading", dl, _pct(dl, span),
                               f"GPU {d['device']} sat idle {_fmt(dl)} ({_pct(dl, span):.1f} % of its span) while the "
                               "launching thread waited for the DataLoader's next batch",
                               "load data ahead of the GPU: DataLoader(num_workers>0, pin_memory=True, "
                               "prefetch_factor, persistent_workers=True), keep decoding and augmentation off the "
                               "training thread", "opgraph idle, opgraph critical-path"))
        sd = d.get("causes_us", {}).get("sync_drain", 0.0)
        if _pct(sd, span) >= SYNC_PCT:
            out.append(Finding("sync_drain", sd, _pct(sd, span),
                               f"GPU {d['device']} sat idle {_fmt(sd)} ({_pct(sd, span):.1f} % of its span) while the "
                               "launching thread waited in a synchronize call: the queue drained",
                               "remove host syncs from the step (.item(), .cpu(), .tolist(), printing CUDA tensors, "
                               "torch.cuda.synchronize); read values back once per N steps",
                               "opgraph idle, opgraph critical-path"))
    return out


def _exposed_comm(x: _Inputs) -> list[Finding]:
    rows = x.overlap().get("rows", [])
    span = sum(r["span_us"] for r in rows)
    exposed = sum(r["exposed_comm_us"] for r in rows)
    comm = sum(r["comm_us"] for r in rows)
    if not rows or _pct(exposed, span) < EXPOSED_PCT:
        return []
    n = len({r["window"] for r in rows})
    return [Finding("exposed_comm", exposed, _pct(exposed, span),
                    f"{_fmt(exposed)} of communication ({_pct(exposed, comm):.1f} % of {_fmt(comm)}) ran with no "
                    f"compute beside it: {_pct(exposed, span):.1f} % of the span of {n} window(s)",
                    "overlap communication with backward (DDP bucket_cap_mb, FSDP backward prefetch), send fewer "
                    "larger messages, check for stragglers", "opgraph overlap, opgraph collectives")]


def _pageable(x: _Inputs) -> list[Finding]:
    rows = [r for r in x.copies().get("by_kind", []) if r.get("pageable")]
    if not rows:
        return []
    n = sum(r["count"] for r in rows)
    t = sum(r["time_us"] for r in rows)
    return [Finding("pageable_copies", t, None,
                    f"{n:,} copies ({_fmt(t)}) moved data from or to pageable host memory, which blocks the host "
                    "and runs at a fraction of the link's bandwidth",
                    "allocate host buffers pinned (DataLoader(pin_memory=True), tensor.pin_memory()) and copy with "
                    "non_blocking=True", "opgraph memory-bw")]


def _untraced(x: _Inputs) -> list[Finding]:
    s = x.cp()["summary"]
    u = s["breakdown_us"].get("untraced", 0.0)
    pct = _pct(u, s["length_us"])
    if pct < UNTRACED_PCT:
        return []
    return [Finding("untraced_time", u, pct,
                    f"{pct:.1f} % of the critical path ({_fmt(u)}) is time nothing in the trace explains",
                    "record more before optimising it: CUDA runtime activities, with_stack=True, NVTX ranges "
                    "around data loading and custom C++ work", "opgraph critical-path")]


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
    return [Finding("gemm_alignment", t, _pct(t, total),
                    f"{sum(r['count'] for r in bad):,} GEMM calls in {len(bad)} shape(s) ({_fmt(t)}, "
                    f"{_pct(t, total):.1f} % of GEMM time) have M, N or K not a multiple of 8 (16 for 8-bit "
                    f"types); the largest: {worst['name']} {worst.get('dtype')} M×N×K = {dims}, "
                    f"{worst['pct_peak_flops'] or 0:.1f} % of peak",
                    "pad the dimensions (batch × sequence, hidden, vocabulary) to multiples of 8 / 16 / 64 so "
                    "tensor-core kernels apply", "opgraph shapes --family gemm")]


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
    "launch_bound": _launch_bound, "cpu_induced_idle": _idle_rules, "exposed_comm": _exposed_comm,
    "pageable_copies": _pageable, "untraced_time": _untraced, "gemm_alignment": _gemm_alignment,
    "allocator_slack": _slack,
    "graph_replay_unmapped": _graph_replay,
}


def recommendations(G: AnyGraph, given: Mapping[str, Any] | None = None) -> Recommendations:
    """Run every rule of the module docstring over ``G``.

    Parameters
    ----------
    G : networkx.DiGraph or TraceGraph
        A single-rank trace graph.
    given : mapping, optional
        Documents already computed with the default options, reused instead of computed
        again: ``cp`` (``critical_path(G).to_dict(with_path=False)``), ``launch``
        (``launch_stats(G).to_dict()``), ``overlap``, ``copies`` (``memory_bandwidth``),
        ``memory`` (``memory_timeline(G).to_dict(series=False)``), ``shapes``.

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
    return Recommendations(found, skipped)
