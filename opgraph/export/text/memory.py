"""Terminal table of ``opgraph memory-bw``."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from opgraph.export.text.numbers import num
from opgraph.export.text.console import cell, print_table

NO_COPIES = "no memory copies or sets in this trace"


def render_memory_bw(res: Any, console: Console) -> None:
    """One row per device and copy kind (bytes, µs, GB/s)."""
    df = res.to_frame()
    t = Table(title="Memory copies and sets (time from the profiler's exact durations)", title_justify="left")
    for c in ("dev", "kind", "count", "MB", "time µs", "GB/s", "p50 GB/s", "max GB/s", "note"):
        t.add_column(c, justify="left" if c in ("kind", "note") else "right")

    for r in df.to_dict("records"):
        note = "pageable host memory: staged, blocks the host" if r["pageable"] else ""
        if r["no_bytes"]:
            note = (note + "; " if note else "") + f"{r['no_bytes']} without bytes"
        t.add_row(str(r["device"]), cell(r["kind"]), f"{r['count']:,}", f"{r['bytes'] / 1e6:,.3f}",
                  f"{r['time_us']:,.1f}", num(r["gbps"], ",.2f"), num(r["gbps_p50"], ",.2f"), num(r["gbps_max"], ",.2f"),
                  note)
    print_table(console, t, NO_COPIES)
