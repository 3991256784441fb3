"""Terminal output of ``opgraph counters``: one line on the attribution, then the mean of
each counter per op (names through the project's console: literal, cleaned)."""

from __future__ import annotations

import os
from typing import Any

from rich.console import Console
from rich.table import Table

from opgraph.export.text.numbers import significant
from opgraph.export.text.console import cell, print_table

NO_RANGES = ("no CUPTI range-profiler events (cat cuda_profiler_range) in this trace: record with "
             "torch.profiler's experimental_config=_ExperimentalConfig(profiler_metrics=[...])")


def _prefix(names: list[str]) -> str:
    """The common prefix of the counter names, cut after a ``_`` or ``.`` (shown once)."""
    if len(names) < 2:
        return ""
    p = os.path.commonprefix(names)
    cut = max(p.rfind("_"), p.rfind("."))
    return p[: cut + 1] if cut > 0 else ""


def render_counters(res: Any, console: Console, top: int = 30) -> None:
    """Attribution summary and the per-op table (``top`` rows)."""
    if not len(res.ranges):
        console.print(NO_RANGES if res.note is None else f"{NO_RANGES} ({res.note})")
        return
    m = res.match_counts()
    how = ", ".join(f"{v:,} by {k.replace('_', ' ')}" for k, v in m.items() if v and k != "none")
    console.print(f"CUPTI counters: {len(res.ranges):,} ranges, {len(res.counters)} counters; launch found for "
                  f"{len(res.ranges) - m['none']:,} ({how or 'none'}; {res.launch_calls:,} kernel-launch calls); "
                  f"{res.no_op:,} with {cell('(no op)')}")
    if res.note:
        console.print(f"  {res.note}")
    names = list(res.counters)
    pre = _prefix(names)
    title = "Mean counter value per op (innermost cpu_op around the launch)"
    t = Table(title=title + (f"; counters {pre}…" if pre else ""), title_justify="left")
    t.add_column("op")  # a name: elided on a terminal, whole when piped
    t.add_column("ranges", justify="right")
    if res.has_sass_flops:
        t.add_column("SASS FLOPs", justify="right")
    for c in names:
        t.add_column("…" + c[len(pre):] if pre else c, justify="right", overflow="fold")
    for r in res.by_op.head(top).to_dict("records"):
        t.add_row(cell(r["op"]), f"{r['ranges']:,}", *([significant(r["sass_flops"])] if res.has_sass_flops else []),
                  *[significant(r[c]) for c in names])
    print_table(console, t, "no ranges")
    if len(res.by_op) > top:
        console.print(f"  ... {len(res.by_op) - top} more ops (--top N, --json or --csv for all)")
