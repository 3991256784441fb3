"""Terminal tables of ``opgraph nvtx`` (:func:`opgraph.analysis.nvtx.nvtx_summary`) and
``opgraph enqueue-stats`` (:func:`opgraph.analysis.enqueue_stats.enqueue_doc`); µs."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table


def render_nvtx(doc: dict[str, Any], top: int, con: Console) -> None:
    """The first ``top`` range names (count, CPU time, GPU projection, kernels) and the
    iterations, one by one."""
    if not doc["ranges"]:
        con.print("no annotation (NVTX) ranges in this trace")
        return
    t = Table(title=f"NVTX ranges ({doc['instances']} instances)", title_justify="left")
    for c in ("range", "count", "CPU µs", "GPU proj µs", "kernels", "kernel µs"):
        if c == "range":
            t.add_column(c, no_wrap=True, min_width=12, max_width=32, overflow="ellipsis")
        else:
            t.add_column(c, justify="right")
    for r in doc["ranges"][:top]:
        t.add_row(r["name"], f"{r['count']:,}", f"{r['cpu_total_us']:,.1f}",
                  f"{r['gpu_proj_total_us']:,.1f}", f"{r['kernels']:,}", f"{r['kernel_total_us']:,.1f}")
    con.print(t)
    if doc["iterations"]:
        t = Table(title=f"Iterations ({doc['step_regex']})", title_justify="left")
        for c in ("step", "name", "CPU µs", "GPU proj µs", "kernels", "kernel µs"):
            t.add_column(c, justify="left" if c == "name" else "right")
        for r in doc["iterations"]:
            t.add_row(str(r["step"]), r["name"], f"{r['cpu_us']:,.1f}", f"{r['gpu_proj_us']:,.1f}",
                      f"{r['kernels']:,}", f"{r['kernel_us']:,.1f}")
        con.print(t)


def render_enqueue_stats(doc: dict[str, Any], con: Console) -> None:
    """One row per OpenCL kernel name: enqueues, execution time and the stage averages."""
    if not doc["kernels"]:
        con.print("no OpenCL kernel enqueues with device profiling in this trace")
        return
    t = Table(title="OpenCL kernels (device profiling)", title_justify="left")
    for c in ("kernel", "enqueues", "exec µs", "% exec", "queued→submit µs", "submit→start µs", "exec avg µs",
              "overhead µs"):
        if c == "kernel":
            t.add_column(c, no_wrap=True, min_width=12, max_width=28, overflow="ellipsis")
        else:
            t.add_column(c, justify="right")
    for r in doc["kernels"]:
        t.add_row(str(r["name"]), f"{r['enqueues']:,}", f"{r['exec_total_us']:,.1f}",
                  f"{r['exec_pct']:.1f}", f"{r['queue_avg_us']:,.1f}", f"{r['submit_avg_us']:,.1f}",
                  f"{r['exec_avg_us']:,.1f}",
                  "-" if r["host_overhead_avg_us"] is None else f"{r['host_overhead_avg_us']:,.1f}")
    con.print(t)
