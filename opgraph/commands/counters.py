"""``opgraph counters``: CUPTI range-profiler counters per kernel with the op that launched
it (opgraph/analysis/counters.py, docs/counters.md)."""

from __future__ import annotations

import click

from opgraph.commands.base import console
from opgraph.commands.base import emit_result, load_input, rank_option
from opgraph.table_options import TableFiles, table_file_options


@click.command("counters")
@rank_option
@click.argument("input", type=str)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (schemas/counters.schema.json).")
@click.option("--top", type=click.IntRange(min=1), default=30, show_default=True, help="Ops shown in the terminal.")
@table_file_options
def counters_cmd(input: str, as_json: bool, top: int, csv_dir: TableFiles | None, rank: int | None = None) -> None:
    """CUPTI counters (cuda_profiler_range events) per kernel range, tied to the CPU op that
    launched it (correlation id, External id, else launch order when the counts agree),
    and the mean of each counter per op; ranges tied to no op show as (no op)."""
    from opgraph.analysis.counters import cupti_counters
    from opgraph.export.text.counters import render_counters

    res = cupti_counters(load_input(input, rank=rank))
    emit_result(input, res.tables, csv_dir, as_json, res.to_dict, "counters.schema.json",
                lambda: render_counters(res, console(), top))
