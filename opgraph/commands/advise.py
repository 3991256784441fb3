"""``opgraph advise``: what to try next, each finding citing its numbers
(opgraph/predict/recommendations.py, docs/recommendations.md)."""

from __future__ import annotations

import click

from opgraph.commands.base import console
from opgraph.commands.base import emit_result, load_input, rank_option
from opgraph.table_options import TableFiles, table_file_options


@click.command("advise")
@rank_option
@click.argument("input", type=str)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (schemas/advise.schema.json).")
@table_file_options
def advise_cmd(input: str, as_json: bool, csv_dir: TableFiles | None, rank: int | None = None) -> None:
    """Rules over the critical path, idle causes, launches, overlap, copies and memory that
    say what to try next, each with the time at stake and the numbers behind it."""
    from opgraph.predict.recommendations import recommendations
    from opgraph.export.text.advise import render_advise

    res = recommendations(load_input(input, rank=rank))
    emit_result(input, res.tables, csv_dir, as_json, res.to_dict, "advise.schema.json",
                lambda: render_advise(res.to_dict(), console()))
