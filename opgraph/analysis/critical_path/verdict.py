"""The run verdict: one answer for the whole run, read from its steps' critical paths
(docs/critical-path.md, "The run verdict").

* **Steady state.** The steps that agree: every window except the outliers, and its
  step time is the median span of those.
* **Outliers**, each with its reason, in this order: a ``profiler_stop_tail`` (the step
  ran on after the trace fell silent, :mod:`~opgraph.analysis.critical_path.stop_tail`);
  ``warm_up`` (the first of three or more steps, longer than :data:`LONG_STEP` times the
  median of the others); ``data_loading_stall`` (a step that spent at least half its path
  in ``data_loading`` while the median step spent less than a quarter); ``long_step``
  (longer than :data:`LONG_STEP` times the median of the steady steps).
* **Bound.** Over the steady steps (each instant counted once, their profiler-stop tails
  left out), "bound by X" only when X
  holds more than half the path (:data:`MAJORITY_PCT`); otherwise "mixed", naming the
  categories of at least :data:`MIXED_MIN_PCT` each.
* **Longest wait**: the longest wait segment of the steady steps.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from statistics import median
from typing import Any, Sequence

from opgraph.analysis.critical_path.result import summarize_windows
from opgraph.time_categories import PATH_CATEGORIES

#: A step longer than this times the median of the others is an outlier.
LONG_STEP = 1.5
#: A category holding more than this share of the steady path bounds the run (%).
MAJORITY_PCT = 50.0
#: A mixed verdict names the categories holding at least this share (%).
MIXED_MIN_PCT = 10.0
#: A data-loading stall: this share of a step's path (%), while the median step has less than
#: :data:`DATA_STALL_MEDIAN_PCT`.
DATA_STALL_PCT = 50.0
DATA_STALL_MEDIAN_PCT = 25.0


@dataclass
class Outlier:
    """A step left out of the steady state: its window, span (µs) and why."""

    name: str
    start_us: float
    span_us: float
    reason: str
    detail: str

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "start_us": self.start_us, "span_us": self.span_us, "reason": self.reason,
                "detail": self.detail}


@dataclass
class RunVerdict:
    """The run's answer (module docstring). ``bound`` is a category or ``"mixed"``;
    ``shares`` the categories of the steady path by share (% of it, largest first);
    times in µs."""

    windows: int
    steady: int
    step_us: float
    bound: str
    shares: list[tuple[str, float]]
    outliers: list[Outlier] = field(default_factory=list)
    longest_wait: dict[str, Any] | None = None
    breakdown_us: dict[str, float] = field(default_factory=dict)

    @property
    def headline(self) -> str:
        """"bound by X (p %)" or "mixed: X p %, Y q %"."""
        if self.bound == "mixed":
            named = [f"{c} {p:.0f} %" for c, p in self.shares if p >= MIXED_MIN_PCT] or \
                [f"{c} {p:.0f} %" for c, p in self.shares[:2]]
            return "mixed: " + ", ".join(named)
        pct = dict(self.shares).get(self.bound, 0.0)
        return f"bound by {self.bound} ({pct:.0f} %)"

    def to_dict(self) -> dict[str, Any]:
        return {"windows": self.windows, "steady_windows": self.steady, "step_us": self.step_us,
                "bound": self.bound, "headline": self.headline,
                "shares_pct": {c: p for c, p in self.shares}, "breakdown_us": dict(self.breakdown_us),
                "outliers": [o.to_dict() for o in self.outliers], "longest_wait": self.longest_wait}


def _pct(w: Any, cat: str) -> float:
    total = w.length_ns
    return 100.0 * w.breakdown_ns.get(cat, 0) / total if total else 0.0


def run_verdict(windows: Sequence[Any], categories: Sequence[str] = tuple(PATH_CATEGORIES)) -> RunVerdict:
    """The verdict of a run from its windows' paths (:class:`WindowPath` objects; the
    module docstring gives the rules)."""
    ws = [w for w in windows if w.path]
    if not ws:
        return RunVerdict(len(windows), 0, 0.0, "other", [])
    out: list[Outlier] = []
    flagged: set[int] = set()

    def flag(i: int, reason: str, detail: str) -> None:
        w = ws[i]
        flagged.add(i)
        out.append(Outlier(w.name, w.start_ns / 1e3, w.span_ns / 1e3, reason, detail))

    for i, w in enumerate(ws):
        tail = getattr(w, "profiler_stop_tail_ns", 0)
        if tail:
            flag(i, "profiler_stop_tail", f"{tail / 1e3:,.0f} µs after the trace fell silent (profiler stopped late)")
    spans = [w.span_ns for w in ws]
    if len(ws) >= 3 and 0 not in flagged:
        rest = median(spans[1:])
        if rest and spans[0] > LONG_STEP * rest:
            flag(0, "warm_up", f"first step, {spans[0] / rest:.1f}x the median of the others")
    if len(ws) >= 3:
        dl_med = median(_pct(w, "data_loading") for w in ws)
        for i, w in enumerate(ws):
            if i not in flagged and _pct(w, "data_loading") >= DATA_STALL_PCT and dl_med < DATA_STALL_MEDIAN_PCT:
                flag(i, "data_loading_stall", f"{_pct(w, 'data_loading'):.0f} % of its path waiting for data")
    keep = [i for i in range(len(ws)) if i not in flagged]
    if len(keep) >= 2:
        med = median(spans[i] for i in keep)
        for i in list(keep):
            if med and spans[i] > LONG_STEP * med:
                flag(i, "long_step", f"{spans[i] / med:.1f}x the median step")
        keep = [i for i in range(len(ws)) if i not in flagged]
    if not keep:   # every step is an outlier: the run is what they are
        keep = list(range(len(ws)))
    steady = [ws[i] for i in keep]
    s = summarize_windows(steady, categories)
    # the stop tail records nothing of the run: left out of the shares (it is in the outliers)
    tail_us = sum(getattr(w, "profiler_stop_tail_ns", 0) for w in steady) / 1e3
    b = dict(s["breakdown_us"])
    b["untraced"] = max(b.get("untraced", 0.0) - tail_us, 0.0)
    total = sum(b.values())
    shares = sorted(((c, 100.0 * v / total) for c, v in b.items() if v > 0 and total), key=lambda kv: -kv[1])
    bound = shares[0][0] if shares and shares[0][1] > MAJORITY_PCT else ("mixed" if shares else "other")
    out.sort(key=lambda o: o.start_us)
    return RunVerdict(len(windows), len(steady), float(median(w.span_ns for w in steady)) / 1e3, bound, shares,
                      out, s["longest_wait"], b)


__all__ = ["LONG_STEP", "MAJORITY_PCT", "MIXED_MIN_PCT", "DATA_STALL_PCT", "DATA_STALL_MEDIAN_PCT", "Outlier",
           "RunVerdict", "run_verdict"]
