"""Terminal tables of ``opgraph shapes`` (one per family)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from rich.console import Console
from rich.table import Table

from opgraph.analysis.shapes import FAMILY_LABELS as _LABEL
from opgraph.export.text.console import cell, print_table

#: Problem-size columns shown per family: (header, column).
_SHOWN: dict[str, tuple[tuple[str, str], ...]] = {
    "gemm": (("B", "B"), ("M", "M"), ("N", "N"), ("K", "K"), ("aligned", "aligned")),
    "attention": (("B", "B"), ("H", "H"), ("Sq", "Sq"), ("Sk", "Sk"), ("D", "D"), ("causal", "causal")),
    "conv": (("N", "N"), ("C", "C"), ("H", "H"), ("W", "W"), ("K", "K"), ("R", "R"), ("S", "S"), ("stride", "stride"),
             ("pad", "padding"), ("groups", "groups")),
}


def no_shapes_line(families: tuple[str, ...]) -> str:
    """The one line printed when none of ``families`` has a call with recorded shapes."""
    names = [_LABEL[f] for f in families]
    what = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]
    return f"no {what} ops with recorded shapes in this trace"


def _v(v: Any, fmt: str = "{:,.1f}") -> str:
    """A number (``fmt``), a yes/no, or text (``fmt`` empty); ``-`` when missing."""
    if v is None or v is pd.NA or (isinstance(v, float) and v != v):
        return "-"
    if isinstance(v, (bool, np.bool_)):
        return "yes" if v else "no"
    return fmt.format(v) if fmt else cell(v)


def render_shapes(res: Any, console: Console, families: tuple[str, ...], top: int = 20) -> None:
    """Per family: its GPU time and one row per shape (slowest first, the first ``top``)."""
    summ = res.summary.set_index("family")
    if not any(int(summ.loc[f, "calls"]) for f in families):
        console.print(no_shapes_line(families))
        return
    for f in families:
        s = summ.loc[f]
        df = getattr(res, f)
        un = float(s["unshaped_us"])
        note = f"; {un:,.1f} µs more in {_LABEL[f]} ops without recorded shapes" if un > 0 else ""
        t = Table(title=f"{_LABEL[f]} shapes: {int(s['calls']):,} calls, {int(s['shapes']):,} shapes, "
                        f"{float(s['gpu_time_us']):,.1f} µs GPU{note}", title_justify="left")
        t.add_column("op", overflow="fold", min_width=14)
        t.add_column("dtype")
        shown = _SHOWN[f]
        for h, _ in shown:
            t.add_column(h, justify="right", no_wrap=True)
        for h in ("count", "total µs", "mean µs", "GFLOP/call", "TFLOP/s", "% peak", "TB/s", "FLOP/B", "bound",
                  "% of family"):
            t.add_column(h, justify="left" if h == "bound" else "right", no_wrap=True)
        t.add_column("input dims", overflow="fold", min_width=12)
        for r in df.head(top).to_dict("records"):
            fl = r["flops_per_call"]
            t.add_row(cell(r["name"]), cell(r["dtype"]),
                      *[_v(r[c], "" if c in ("stride", "padding") else "{:d}" if c not in ("aligned", "causal")
                           else "") for _, c in shown],
                      f"{int(r['count']):,}", _v(r["total_us"]), _v(r["mean_us"], "{:,.2f}"),
                      _v(None if fl is None or fl is pd.NA else int(fl) / 1e9, "{:,.3f}"),
                      _v(r["achieved_tflops"], "{:,.2f}"), _v(r["pct_peak_flops"]), _v(r["achieved_tbps"], "{:,.3f}"),
                      _v(r["flop_per_byte"], "{:,.0f}"), cell(r["bound"]), _v(r["family_time_pct"]),
                      cell(r["input_dims"]))
        print_table(console, t, no_shapes_line((f,)))
        if len(df) > top:
            console.print(f"  ... {len(df) - top} more shapes (--top N, --json or --csv for all)")
