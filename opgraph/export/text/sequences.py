"""Terminal table of ``opgraph sequences``."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from rich.text import Text

from opgraph.export.text.console import clean, print_table

NO_PATTERNS = "no kernel sequence repeats in this trace (with these lengths and this op)"


def render_sequences(doc: dict[str, Any], console: Console) -> None:
    """One row per pattern, most total time first; the kernels one per line."""
    scope = f" launched inside ops matching {doc['op']!r}" if doc["op"] else ""
    t = Table(title=f"Repeated kernel sequences of {doc['min_length']}–{doc['max_length']} kernels{scope} "
                    f"(of {doc['kernels']:,} kernels, {doc['kernel_time_us']:,.1f} µs)", title_justify="left",
              show_lines=True)
    for c in ("#", "len", "times", "total µs", "mean µs", "% kernel time", "op"):
        t.add_column(c, justify="right" if c not in ("op",) else "left", no_wrap=c != "op")
    t.add_column("kernels", overflow="ellipsis", no_wrap=True)
    for r in doc["patterns"]:
        t.add_row(str(r["rank"]), str(r["length"]), f"{r['occurrences']:,}", f"{r['total_us']:,.1f}",
                  f"{r['mean_us']:,.2f}", f"{r['pct_kernel_time']:.1f}", r["op"] or "-", Text("\n".join(clean(k) for k in r["kernels"])))
    print_table(console, t, NO_PATTERNS)
