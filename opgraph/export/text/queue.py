"""Terminal table of ``opgraph queue``."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from opgraph.export.text.console import print_table

NO_QUEUE = "no launched device activities in this trace"


def render_queue_length(res: Any, console: Console) -> None:
    """One row per stream: max and time-weighted mean / p50 / p90 queue length."""
    df = res.to_frame()
    t = Table(title="Stream queue length (launched, not yet ended; time-weighted)", title_justify="left")
    for c in ("dev", "stream", "activities", "span µs", "max", "mean", "p50", "p90", "time at limit µs"):
        t.add_column(c, justify="right")
    for r in df.to_dict("records"):
        t.add_row(str(r["device"]), str(r["stream"]), f"{r['activities']:,}", f"{r['span_us']:,.1f}", str(r["max"]),
                  f"{r['mean']:,.1f}", f"{r['p50']:,.0f}", f"{r['p90']:,.0f}",
                  f"{r['time_full_us']:,.1f} (≥ {r['limit']})")
    print_table(console, t, NO_QUEUE)
