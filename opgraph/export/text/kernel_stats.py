"""Terminal tables of ``opgraph kernels``."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from opgraph.export.text.console import print_table

NO_KERNELS = "no kernels in this trace"


def _opt(v: Any, fmt: str) -> str:
    return "-" if v is None else format(v, fmt)


def render_kernel_stats(res: Any, console: Console, top: int = 20) -> None:
    """The summary line, then one row per kernel name (largest total time first)."""
    doc = res.to_dict()
    s = doc["summary"]
    if s["kernels"]:
        occ = "-" if s["occupancy_pct"] is None else f"{s['occupancy_pct']:.1f} %"
        console.print(f"{s['kernels']:,} kernels, {s['names']:,} names, {s['kernel_time_us']:,.1f} µs; on tensor "
                      f"cores (by name): {s['tensor_core_time_pct']:.1f} % of kernel time "
                      f"({s['tensor_core_time_pct_tb_plugin']:.1f} % with the TensorBoard plugin's list); "
                      f"est. achieved occupancy (duration-weighted): {occ}")
    t = Table(title=f"Kernels (top {min(top, len(doc['kernels']))} of {s['names']:,} by time)", title_justify="left")
    t.add_column("kernel", no_wrap=True, overflow="ellipsis", max_width=60)
    for c in ("count", "total µs", "mean µs", "%", "grid", "block", "regs", "smem B", "blocks/SM", "occ %", "TC"):
        t.add_column(c, justify="right", no_wrap=True)
    for r in doc["kernels"][:top]:
        t.add_row(r["name"], f"{r['count']:,}", f"{r['total_us']:,.1f}", f"{r['mean_us']:,.2f}", f"{r['pct']:.1f}",
                  r["grid"] or "-", r["block"] or "-", _opt(r["registers_per_thread"], ",.0f"),
                  _opt(r["shared_memory_bytes"], ",.0f"), _opt(r["blocks_per_sm"], ".2f"),
                  _opt(r["occupancy_pct"], ".1f"), "yes" if r["tensor_cores"] else "no")
    print_table(console, t, NO_KERNELS)
