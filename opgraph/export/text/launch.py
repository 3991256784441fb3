"""Terminal tables of ``opgraph launch-stats``."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from opgraph.export.text.console import cell, print_table

NO_LAUNCHES = "no launched device activities in this trace"


def render_launch_stats(res: Any, console: Console, top: int = 10) -> None:
    """Summary, latency outliers, kernel-duration histogram and the ops launching short kernels."""
    t = res.tables()
    s = t["summary"].to_dict("records")[0] if len(t["summary"]) else None
    if not s or not s["launches"]:
        console.print(NO_LAUNCHES)
        return

    def f(v: Any) -> str:
        return "-" if v is None or v != v else f"{v:,.1f}"
    console.print(f"{s['launches']:,} launches ({s['kernels']:,} kernels). Launch call p50/p99 {f(s['call_p50_us'])}/"
                  f"{f(s['call_p99_us'])} µs. Delay after the call p50/p99 {f(s['delay_p50_us'])}/{f(s['delay_p99_us'])} µs, "
                  f"of which latency (stream free, activity not started) p50/p99 {f(s['latency_p50_us'])}/"
                  f"{f(s['latency_p99_us'])} µs; the rest is queueing behind earlier work.")
    console.print(f"Outliers: {s['call_outliers']} calls > {s['call_cutoff_us']:g} µs, {s['latency_outliers']} "
                  f"latencies > {s['latency_cutoff_us']:g} µs. Short kernels (shorter than their own launch call): "
                  f"{s['short_kernels']:,}, {f(s['short_kernels_gpu_us'])} µs; kernels under 10 µs hold "
                  f"{s['short_time_pct']:.1f} % of kernel time.")
    lo = t["latency_outliers"].head(top)
    if len(lo):
        tab = Table(title=f"Latency outliers (> {s['latency_cutoff_us']:g} µs, stream free)", title_justify="left")
        for c in ("activity", "op", "call µs", "latency µs", "queued µs"):
            tab.add_column(c, justify="left" if c in ("activity", "op") else "right")
        for r in lo.to_dict("records"):
            tab.add_row(cell(r["name"]), cell(r["op"]), f(r["call_us"]), f(r["latency_us"]), f(r["queued_us"]))
        print_table(console, tab, NO_LAUNCHES)
    h = Table(title="Kernel durations", title_justify="left")
    for c in ("µs", "kernels", "time µs"):
        h.add_column(c, justify="right")
    for r in t["histogram"].to_dict("records"):
        hi = "∞" if r["to_us"] == float("inf") else f"{r['to_us']:g}"
        h.add_row(f"{r['from_us']:g}–{hi}", f"{r['kernels']:,}", f(r["time_us"]))
    print_table(console, h, NO_LAUNCHES)
    so = t["short_by_op"].head(top)
    if len(so):
        tab = Table(title="Ops launching kernels shorter than their launch call", title_justify="left")
        for c in ("op", "kernels", "GPU µs", "launch call µs"):
            tab.add_column(c, justify="left" if c == "op" else "right")
        for r in so.to_dict("records"):
            tab.add_row(cell(r["op"]), f"{r['kernels']:,}", f(r["gpu_us"]), f(r["call_us"]))
        print_table(console, tab, NO_LAUNCHES)
