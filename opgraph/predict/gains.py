"""What each category of the critical path is worth: for each category with a real share
of the run's path, the gain the what-if engine predicts for the change that would shrink
it (docs/critical-path.md, "What each category is worth").

A share is not a promise: 40 % of the path in ``cpu`` does not mean removing CPU work
saves 40 %, because other work fills in. Each lever is one what-if
(:mod:`opgraph.predict.whatif`) on the same boundary model, and its gain is the change of
the trace's makespan (first to last event), in µs and % of the measured makespan:

==================  =============================================  ==========================
category            lever                                          transform
==================  =============================================  ==========================
``cpu``             host work's own time × 0 (ops, runtime calls,  ``--scale-cpu``
                    Python frames; not annotations or waits)
``data_loading``    the DataLoader ranges removed                  ``--remove 'DataLoader'``
``gpu_compute``     compute kernels × 0.5                          ``--scale-kernels``
``gpu_comm``        communication kernels × 0.5                    ``--scale-kernels``
``gpu_memory``      copies and memsets × 0.5                       ``--scale-kernels``
``launch_overhead`` every launch call 0 µs (CUDA graphs' bound)    ``--launch-overhead 0us``
==================  =============================================  ==========================

Waits (``kernel_gap``, ``*_wait``, ``untraced``) have no lever of their own: they move
when what they wait for moves.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from opgraph.graph.linking import COMM_KERNEL_PATTERN
from opgraph.predict.whatif import Transform, WhatIfError

#: Categories of at least this share of the path (%) get a what-if.
MIN_SHARE_PCT = 5.0
_COMM = COMM_KERNEL_PATTERN.removeprefix("(?i)")
_COPY = r"(?i)^(memcpy|memset)|\b(memcpy|memset)\b"

#: category -> (what the lever does, its transforms)
LEVERS: dict[str, tuple[str, list[Transform]]] = {
    "cpu": ("CPU time x0", [Transform("scale_cpu", pattern=".*", factor=0.0)]),
    "data_loading": ("DataLoader removed", [Transform("remove", pattern="DataLoader")]),
    "gpu_compute": ("compute kernels x0.5",
                    [Transform("scale_kernels", pattern=rf"(?i)^(?!.*({_COMM}))(?!(memcpy|memset))", factor=0.5)]),
    "gpu_comm": ("communication kernels x0.5", [Transform("scale_kernels", pattern=f"(?i){_COMM}", factor=0.5)]),
    "gpu_memory": ("copies and memsets x0.5", [Transform("scale_kernels", pattern=_COPY, factor=0.5)]),
    "launch_overhead": ("launch calls 0 µs", [Transform("launch_overhead", value_ns=0)]),
}


@dataclass
class Gain:
    """One lever's predicted gain: ``gain_us`` (> 0: the run gets shorter) and ``gain_pct``
    of the measured makespan; ``lever`` says what changed."""

    category: str
    lever: str
    gain_us: float
    gain_pct: float

    def to_dict(self) -> dict[str, Any]:
        return {"category": self.category, "lever": self.lever, "gain_us": self.gain_us, "gain_pct": self.gain_pct}


def cpu_work_pattern(a: Any) -> str:
    """A name pattern for the host events whose own time is ``cpu`` on the path: every
    name except those of annotations, DataLoader waits and blocking waits (their own
    time is a wait, not work: scaling it would promise a gain no code change gives)."""
    import re

    import numpy as np

    from opgraph.analysis.critical_path.boundary_edges import blocking_waits
    from opgraph.graph.data_loading import data_loading_owners

    waits = a.is_host & (a.annotation_like | data_loading_owners(a) | blocking_waits(a))
    names = sorted({str(x) for x in np.unique(a.name[waits].astype(str))})
    if not names:
        return ".*"
    return "^(?!(?:" + "|".join(re.escape(n) for n in names) + ")$)"


def category_gains(G: Any, shares: Sequence[tuple[str, float]], min_share_pct: float = MIN_SHARE_PCT,
                   skipped: list[str] | None = None) -> list[Gain]:
    """The gain of each lever (module docstring) whose category holds at least
    ``min_share_pct`` % of the path (``shares``: (category, % of the path) pairs, e.g.
    :attr:`opgraph.analysis.critical_path.verdict.RunVerdict.shares`). One boundary model,
    one replay per lever. A lever the what-if engine refuses (e.g. a timeline past the
    int64-ns range) is left out, and why is appended to ``skipped`` when given."""
    from dataclasses import replace

    from opgraph.predict.prediction import makespan_change
    from opgraph.predict.simulation import build_model

    cats = [c for c, p in shares if p >= min_share_pct and c in LEVERS]
    if not cats:
        return []
    m = build_model(G)
    out: list[Gain] = []
    for c in cats:
        what, trs = LEVERS[c]
        if c == "cpu":
            trs = [Transform("scale_cpu", pattern=cpu_work_pattern(m.arr), factor=0.0)]
        try:   # the makespans only: no per-step paths of the replay
            ch = makespan_change(G, [replace(t) for t in trs], boundary_model=m)
        except WhatIfError as e:
            if skipped is not None:
                skipped.append(f"gain of {c!r} ({what}) not computed: {e}")
            continue
        ms_m, ms_p = ch.measured_ns, ch.predicted_ns
        gain = (ms_m - ms_p) / 1e3
        out.append(Gain(c, what, gain, 100.0 * gain / (ms_m / 1e3) if ms_m else 0.0))
    return out


def path_document(G: Any, res: Any, with_path: bool = True, with_gains: bool = True) -> dict[str, Any]:
    """The ``opgraph critical-path --json`` document of ``res`` (a critical-path result of
    ``G``), its run verdict with the gains of :func:`category_gains` when ``with_gains``:
    one document for the CLI, the API and the HTML report."""
    d = res.to_dict(with_path=with_path)
    if with_gains:
        skipped: list[str] = []
        d["run"]["gains"] = [g.to_dict() for g in category_gains(G, res.verdict().shares, skipped=skipped)]
        if skipped:
            d.setdefault("notes", []).extend(skipped)
    return d


__all__ = ["MIN_SHARE_PCT", "LEVERS", "Gain", "category_gains", "path_document"]
