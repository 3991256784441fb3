"""Terminal table of ``opgraph collectives``."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from opgraph.export.text.numbers import num
from opgraph.export.text.console import cell, print_table

NO_COMM = "no communication kernels (NCCL / RCCL) in this trace"


def render_collectives(df: Any, console: Console) -> None:
    """One row per collective, group size, dtype and message size."""
    t = Table(title="Collectives (nccl-tests algbw / busbw, GB/s)", title_justify="left")
    for c in ("collective", "ranks", "dtype", "message bytes", "count", "time µs", "algbw", "busbw"):
        t.add_column(c, justify="left" if c in ("collective", "dtype") else "right")

    for r in df.to_dict("records"):
        gs = r["group_size"]
        t.add_row(cell(r["collective"]), "-" if gs is None or gs != gs else str(int(gs)), cell(r["dtype"]),
                  "-" if r["message_bytes"] is None or r["message_bytes"] != r["message_bytes"]
                  else f"{int(r['message_bytes']):,}",
                  f"{r['count']:,}", f"{r['time_us']:,.1f}", num(r["algbw_gbps"], ",.2f"), num(r["busbw_gbps"], ",.2f"))
    print_table(console, t, NO_COMM)


def render_job_collectives(df: Any, console: Console) -> None:
    """One row per collective matched across the ranks of a job (docs/multirank.md)."""
    t = Table(title="Collectives across ranks (µs): skew = last arrival − first arrival, comm = last end − last "
                    "arrival; algbw / busbw (GB/s) over comm", title_justify="left")
    for c in ("id", "collective", "ranks", "message bytes", "skew", "comm", "last rank", "algbw", "busbw"):
        t.add_column(c, justify="left" if c == "collective" else "right")

    for r in df.to_dict("records"):
        t.add_row(str(r["coll_id"]), cell(r["collective"]), str(r["ranks"]),
                  "-" if r["message_bytes"] is None else f"{int(r['message_bytes']):,}",
                  f"{r['skew_us']:,.1f}", f"{r['comm_us']:,.1f}", str(r["last_rank"]), num(r["algbw_gbps"], ",.2f"),
                  num(r["busbw_gbps"], ",.2f") + (" (sizes differ)" if r["size_mismatch"] else ""))
    print_table(console, t, "no collective matched across the ranks of this job")
