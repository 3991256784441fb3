"""``opgraph collectives``: message size, algorithm and bus bandwidth of every
communication kernel (opgraph/analysis/collectives.py, docs/collectives.md)."""

from __future__ import annotations

import click

from opgraph.cli import _console, emit_result, load_input, main
from opgraph.table_options import TableFiles, table_file_options


@main.command("collectives")
@click.argument("input", type=str)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (schemas/collectives.schema.json).")
@table_file_options
def collectives_cmd(input: str, as_json: bool, csv_dir: TableFiles | None) -> None:
    """Communication kernels by collective, group size, dtype and message size: count,
    time, algorithm bandwidth and bus bandwidth (from the trace's own collective records)."""
    from opgraph.analysis.collectives import collectives

    from opgraph.export.text_collectives import render_collectives

    res = collectives(load_input(input))
    emit_result(input, res.tables(), csv_dir, as_json, res.to_dict, "collectives.schema.json",
                lambda: render_collectives(res.to_frame(), _console()))
