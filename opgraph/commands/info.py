"""``opgraph info``: counts, devices, streams, threads, iterations, span and trace health."""

from __future__ import annotations

import click

from opgraph.commands.base import load_input
from opgraph.emit import emit_json
from opgraph.commands.base import console
from opgraph.table_options import TableFiles, table_file_options, write_frames


@click.command()
@click.argument("input", type=str)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (schemas/info.schema.json).")
@click.option("--format", "fmt", default=None, help="Force the input format of a raw trace.")
@table_file_options
def info(input: str, as_json: bool, fmt: str | None, csv_dir: TableFiles | None) -> None:
    """Counts, devices, streams, threads, iterations, span and trace health of INPUT."""
    from opgraph.analysis.info import trace_info

    doc = trace_info(load_input(input, fmt, job_ok=True))
    if csv_dir is not None:
        from opgraph.export.tables.documents import info_frames
        write_frames(info_frames(doc), csv_dir, input)
    if as_json:
        emit_json(doc, "info.schema.json")
    elif csv_dir is None:
        from opgraph.export.text.results import render_info
        render_info(doc, console())
