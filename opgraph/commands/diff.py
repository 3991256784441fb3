"""``opgraph diff`` (docs/diff.md)."""

from __future__ import annotations


import click

from opgraph.emit import emit_json
from opgraph.commands.base import load_input, rank_option
from opgraph.device_options import device_file_option, dtype_option
from opgraph.table_options import TableFiles, table_file_options, write_frames
from opgraph.errors import OpgraphInputError


@click.command()
@rank_option
@click.argument("a", type=str)
@click.argument("b", type=str)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (schemas/diff.schema.json).")
@click.option("--names", "name_level", type=click.Choice(["exact", "default", "base"]), default="default",
              show_default=True, help="How kernel names are normalised before matching (see docs/diff.md).")
@click.option("--all", "include_same", is_flag=True, help="Also list the rows that did not change.")
@click.option("--no-critical-path", is_flag=True, help="Skip the critical-path composition (faster).")
@dtype_option
@device_file_option
@click.option("--top", type=click.IntRange(min=1), default=20, show_default=True, help="Rows per table in the terminal.")
@table_file_options
def diff(a: str, b: str, as_json: bool, name_level: str, include_same: bool, no_critical_path: bool,
         dtype: str | None, top: int, csv_dir: TableFiles | None, rank: int | None = None) -> None:
    """Compare trace B with trace A: kernels side by side, ops, step time and critical path.

    Deltas are B − A. Kernels are matched by normalised name, ops by name + input shapes +
    call path. Traces from different devices are fine (both peak tables are shown)."""
    from opgraph.analysis.diff import diff_graphs

    Ga = load_input(a, label="loading a:", rank=rank)
    Gb = load_input(b, label="loading b:", rank=rank)
    try:
        doc = diff_graphs(Ga, Gb, name_level=name_level, include_same=include_same, dtype=dtype,
                          with_critical_path=not no_critical_path)
    except ValueError as e:
        raise OpgraphInputError(a, str(e)) from None
    if csv_dir is not None:
        from opgraph.export.tables.documents import diff_frames
        write_frames(diff_frames(doc), csv_dir, b, (a,))
    if as_json:
        emit_json(doc, "diff.schema.json")
        return
    if csv_dir is not None:
        return
    from opgraph.commands.base import console
    from opgraph.export.text.diff import render_diff

    render_diff(doc, console(), top)
