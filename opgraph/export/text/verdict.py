"""The run verdict as text: the first lines ``opgraph critical-path`` prints
(docs/critical-path.md, "The run verdict")."""

from __future__ import annotations

from typing import Any, Sequence

from rich.console import Console
from rich.table import Table


def _us(v: float) -> str:
    """µs as people read them: ms with one decimal from 10 ms, else whole µs."""
    return f"{v / 1e3:,.1f} ms" if abs(v) >= 10_000 else f"{v:,.0f} µs"


def render_run_verdict(v: Any, gains: Sequence[Any] | None, console: Console) -> None:
    """Print the verdict ``v`` (:class:`~opgraph.analysis.critical_path.verdict.RunVerdict`),
    then per category its share of the steady path and, where a lever exists, the gain the
    what-if engine predicts (``gains``: :class:`~opgraph.predict.gains.Gain` objects)."""
    steady = f"{v.steady} of {v.windows} step(s) steady" if v.windows > 1 else "1 window"
    console.print(f"Run: {v.headline}; steady-state step {_us(v.step_us)} ({steady})")
    for o in v.outliers:
        console.print(f"  outlier {o.name}: {o.reason.replace('_', ' ')} ({o.detail}); span {_us(o.span_us)}")
    lw = v.longest_wait
    if lw:
        console.print(f"  longest wait: {lw['bound_by']} {_us(lw['dur_us'])} on {lw['lane']} ({lw['name']})"
                      + (" [inferred]" if lw.get("inferred") else ""))
    by = {g.category: g for g in gains or ()}
    t = Table(title="What each category is worth (steady steps; gain: what-if on the whole trace)",
              title_justify="left")
    for c, j in (("category", "left"), ("share of path", "right"), ("time", "right"), ("what-if", "left"),
                 ("gain", "right")):
        t.add_column(c, justify=j)  # type: ignore[arg-type]
    for c, p in v.shares:
        if p < 0.5:
            continue
        g = by.get(c)
        t.add_row(c, f"{p:.1f} %", _us(v.breakdown_us.get(c, 0.0)), g.lever if g else "–",
                  f"{-g.gain_pct:+.1f} %" if g else "–")
    console.print(t)


__all__ = ["render_run_verdict"]
