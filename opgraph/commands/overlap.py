"""``opgraph overlap``: compute / communication / memory time per step and device, their
overlap and the exposed communication (opgraph/analysis/overlap.py, docs/overlap.md)."""

from __future__ import annotations

import click

from opgraph.cli import _console, emit_result, load_input, main
from opgraph.table_options import TableFiles, table_file_options


@main.command("overlap")
@click.argument("input", type=str)
@click.option("--window", default=None,
              help="'all' for the whole trace, or a regex over range names (default: each step, plus 'all').")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (schemas/overlap.schema.json).")
@table_file_options
def overlap_cmd(input: str, window: str | None, as_json: bool, csv_dir: TableFiles | None) -> None:
    """GPU time per step and device: compute, communication and memory, how much of the
    communication overlaps computation, and the exposed communication and memory time."""
    from opgraph.analysis.overlap import comm_overlap
    from opgraph.commands.window_option import check_window, window_errors

    G = load_input(input)
    check_window(G, input, window)
    with window_errors(input, "--window"):
        res = comm_overlap(G, window)
    from opgraph.export.text import render_overlap

    tables = res.tables()
    emit_result(input, tables, csv_dir, as_json, res.to_dict, "overlap.schema.json",
                lambda: render_overlap(tables["overlap"], _console()))
