"""Terminal tables of ``opgraph categories``."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from opgraph.export.text.console import NO_GPU, print_table


def render_categories(res: Any, console: Console) -> None:
    """GPU time by category and by kernel type (sums of durations)."""
    tables = res.tables()
    for key, title in (("by_category", "GPU time by operation category"), ("by_type", "GPU time by kernel type")):
        t = Table(title=f"{title} (µs, sum of durations)", title_justify="left")
        col = "category" if key == "by_category" else "type"
        for c in (col, "activities", "GPU µs", "%"):
            t.add_column(c, justify="left" if c == col else "right")
        for r in tables[key].to_dict("records"):
            t.add_row(str(r[col]), f"{r['activities']:,}", f"{r['gpu_us']:,.1f}", f"{r['pct']:.1f}")
        print_table(console, t, NO_GPU)
