"""Terminal tables of ``opgraph memory``."""

from __future__ import annotations

from typing import Any

import pandas as pd
from rich.console import Console
from rich.table import Table

from opgraph.analysis.memory_timeline import NO_MEMORY
from opgraph.export.text.console import cell, print_table

_MIB = float(1 << 20)


def _mib(v: Any) -> str:
    """Bytes as MiB with 3 decimals; ``-`` when unknown."""
    if v is None or v is pd.NA or (isinstance(v, float) and v != v):
        return "-"
    return f"{int(v) / _MIB:,.3f}"


def _ops_table(df: pd.DataFrame, title: str, value: str, share: str, top: int) -> Table:
    t = Table(title=title, title_justify="left")
    for c in ("device", "op (outermost)", "inner op", "allocations", "MiB", "share"):
        t.add_column(c, justify="left" if c in ("device", "op (outermost)", "inner op") else "right")
    for _, grp in df.groupby(["device_type", "device"], sort=False):
        for r in grp.head(top).to_dict("records"):
            t.add_row(cell(f"{r['device_type']} {r['device']}"), cell(r["op"]), cell(r["inner_op"]),
                      f"{r['allocations']:,}", _mib(r[value]), f"{100 * r[share]:.1f} %")
    return t


def render_memory_timeline(res: Any, console: Console, top: int = 10) -> None:
    """Devices (peaks, live at peak), steps, top allocators and what is live at each peak;
    one line when the trace has no ``[memory]`` events."""
    if res.empty:
        console.print(NO_MEMORY if not res.memory_events else
                      f"{res.memory_events:,} [memory] events, none usable (see the notes below)")
    else:
        t = Table(title="Memory per device (from the profiler's [memory] events; MiB = 2^20 bytes)",
                  title_justify="left")
        for c in ("device", "events", "allocations", "allocated MiB", "at start MiB", "peak MiB", "peak reserved MiB",
                  "live at peak MiB", "from before trace MiB", "at end MiB", "note"):
            t.add_column(c, justify="left" if c in ("device", "note") else "right")
        for r in res.devices.to_dict("records"):
            notes = []
            if not r["has_totals"]:
                notes.append("no Total Allocated: levels relative to the trace start")
            if r["total_mismatch_events"]:
                notes.append(f"{r['total_mismatch_events']:,} events differ from Total Allocated "
                             f"(max {_mib(r['max_total_mismatch_bytes'])} MiB)")
            t.add_row(cell(f"{r['device_type']} {r['device']}"), f"{r['events']:,}", f"{r['allocations']:,}",
                      _mib(r["alloc_bytes"]), _mib(r["start_allocated_bytes"]), _mib(r["peak_allocated_bytes"]),
                      _mib(r["peak_reserved_bytes"]), _mib(r["live_at_peak_bytes"]),
                      _mib(r["pre_trace_at_peak_bytes"]), _mib(r["end_allocated_bytes"]), cell("; ".join(notes)))
        console.print(t)
        if len(res.steps):
            s = Table(title="Peak per step", title_justify="left")
            for c in ("step", "device", "at start MiB", "peak MiB", "peak reserved MiB", "at end MiB", "allocations",
                      "allocated MiB"):
                s.add_column(c, justify="left" if c in ("step", "device") else "right")
            for r in res.steps.to_dict("records"):
                s.add_row(cell(r["name"]), cell(f"{r['device_type']} {r['device']}"), _mib(r["start_allocated_bytes"]),
                          _mib(r["peak_allocated_bytes"]), _mib(r["peak_reserved_bytes"]),
                          _mib(r["end_allocated_bytes"]), f"{r['allocations']:,}", _mib(r["alloc_bytes"]))
            console.print(s)
        print_table(console, _ops_table(res.allocators, f"Top allocators (per device, first {top})", "alloc_bytes",
                                        "share", top), "no allocation")
        print_table(console, _ops_table(res.live_at_peak, f"Live at each device's peak (first {top})", "live_bytes",
                                        "share_of_peak", top),
                    "not known (no allocation live, or no 'Addr' to pair frees with allocations)")
    for w in res.warnings:
        console.print(f"note: {w.count:,} {w.message} (e.g. event {w.example_eid})")
