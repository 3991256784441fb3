"""The terminal table of ``opgraph summary DIR``: one row per rank
(:func:`opgraph.multirank.report.job_summary_doc`)."""

from __future__ import annotations

import os
from typing import Any

from rich.console import Console
from rich.table import Table


def render_multirank_summary(doc: dict[str, Any], console: Console) -> None:
    """Print the per-rank summary table, the collective counts and the job's warnings."""
    t = Table(title=f"{len(doc['ranks'])} ranks (clock offsets relative to rank {doc['reference_rank']})",
              title_justify="left")
    cols = ("rank", "events", "steps", "step µs", "GPU busy µs", "busy %", "GPU idle µs", "comm µs",
            "collectives", "offset µs", "residual µs", "file")
    for c in cols:
        t.add_column(c, justify="left" if c == "file" else "right")
    for r in doc["ranks"]:
        t.add_row(str(r["rank"]) + ("*" if r["rank_source"] == "filename" else ""), f"{r['events']:,}",
                  str(r["steps"]), "-" if r["step_time_us"] is None else f"{r['step_time_us']:,.1f}",
                  f"{r['gpu_busy_us']:,.1f}", f"{r['gpu_busy_pct']:.1f}", f"{r['gpu_idle_us']:,.1f}",
                  f"{r['comm_busy_us']:,.1f}", str(r["collectives"]), f"{r['clock_offset_us']:,.3f}",
                  f"{r['residual_us']:,.3f}", os.path.basename(str(r["file"])))
    console.print(t)
    c = doc["collectives"]
    console.print(f"collectives: {c['matched']} matched across ranks, {c['unmatched_kernels']} kernels unmatched"
                  + ("   (* rank taken from the file name)" if any(r["rank_source"] == "filename"
                                                                  for r in doc["ranks"]) else ""))
    for w in doc["warnings"]:
        console.print(f"warning: {w['code']}: {w['message']}")
