"""Terminal output of ``opgraph advise``."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from opgraph.export.text.console import print_table
from opgraph.export.text.numbers import us

NO_FINDINGS = "no rule fired: nothing in this trace crosses a threshold of docs/recommendations.md"


def render_advise(doc: dict[str, Any], console: Console) -> None:
    """One row per finding, largest time at stake first, each with how it was priced (the
    what-if and what it gains); then the rules that could not run."""
    t = Table(title="What to try next (largest time at stake first; at stake = min(what-if gain, time it could "
                    "remove); docs/recommendations.md)", title_justify="left", show_lines=True)
    t.add_column("rule", no_wrap=True)
    t.add_column("at stake µs", justify="right")
    t.add_column("%", justify="right")
    t.add_column("finding", ratio=3)
    t.add_column("try", ratio=2)
    t.add_column("see", ratio=1)
    for f in doc["findings"]:
        finding = f["finding"]
        if f.get("whatif"):
            finding += (f" [priced: what-if {f['whatif']} gains {us(f['whatif_gain_us'])} µs; "
                        f"it could remove at most {us(f['removable_us'])} µs]")
        t.add_row(f["rule"], us(f["impact_us"]), "" if f["impact_pct"] is None else f"{f['impact_pct']:.1f}",
                  finding, f["try"], f["see"])
    print_table(console, t, NO_FINDINGS)
    for rule, why in doc.get("skipped", {}).items():
        console.print(f"rule {rule} could not run on this trace: {why}")
