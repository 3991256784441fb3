"""``opgraph export``: write a graph (or a raw trace) out in other formats.

    opgraph export g.gpickle --perfetto out.json [--window REGEX|all]

One command, one option per output format (:data:`EXPORTERS`: Perfetto in
:mod:`~opgraph.commands.export_perfetto`, Graphviz in :mod:`~opgraph.commands.export_dot`,
Parquet tables in :mod:`~opgraph.commands.export_parquet`). The input is loaded once and
every requested format is written from it. Code outside the package may add a format at
run time with :func:`register_exporter`.
"""

from __future__ import annotations

from typing import Any, Callable

import click

from opgraph.commands.base import load_input, rank_option
from opgraph.commands.export_dot import DOT_EXPORTERS, DOT_OPTIONS
from opgraph.commands.export_parquet import PARQUET_EXPORTER
from opgraph.commands.export_perfetto import PERFETTO_EXPORTER, WINDOW_OPTION
from opgraph.commands.exporters import Exporter, ExportFn, exporter
from opgraph.emit import emit_json
from opgraph.errors import OpgraphInputError
from opgraph.json_option import json_flag, output_entry, outputs_doc

#: The formats ``opgraph export`` writes, by option name.
EXPORTERS: dict[str, Exporter] = {ex.name: ex for ex in (PERFETTO_EXPORTER, *DOT_EXPORTERS, PARQUET_EXPORTER)}


def _with_params(params: list[click.Parameter]) -> Callable[[click.Command], click.Command]:
    def add(cmd: click.Command) -> click.Command:
        cmd.params.extend(params)
        return cmd
    return add


@_with_params([ex.option for ex in EXPORTERS.values()] + [WINDOW_OPTION, *DOT_OPTIONS])
@click.command("export")
@rank_option
@click.argument("input", type=str)
@click.option("--format", "fmt", default=None, help="Force the input format of a raw trace.")
@json_flag
@click.pass_context
def export_cmd(ctx: click.Context, input: str, fmt: str | None, as_json: bool = False, rank: int | None = None,
               **opts: Any) -> None:
    """Write INPUT (a saved graph or a raw trace) in other formats: one option per format."""
    wanted = [ex for ex in EXPORTERS.values() if opts.get(ex.name)]
    if not wanted:
        flags = ", ".join(ex.option.opts[0] for ex in EXPORTERS.values())
        raise click.UsageError(f"nothing to write: give at least one of {flags}", ctx)
    from opgraph.outfiles import check_output_path

    for ex in wanted:
        path = str(opts[ex.name])
        if ex.suffixes and not path.endswith(ex.suffixes):
            raise OpgraphInputError(path, f"{ex.option.opts[0]} writes {' or '.join(ex.suffixes)} files")
        if ex.suffixes:  # a file format: before any work, not the input, not a folder or FIFO
            check_output_path(path, (input,))
    # a whole job only when no --rank was given and every requested format can write one
    G = load_input(input, fmt, job_ok=rank is None and all(ex.run_job for ex in wanted), rank=rank)
    is_job = isinstance(G.graph.get("job"), dict)
    written = []
    for ex in wanted:
        run = ex.run_job if is_job and ex.run_job else ex.run
        msg = run(G, str(opts[ex.name]), dict(opts, input=input))
        if msg:
            click.echo(msg, err=True)
        written.append(output_entry(str(opts[ex.name]), ex.name, msg or None))
    if as_json:
        emit_json(outputs_doc("export", (input,), written, {"job": is_job}), "outputs.schema.json")


def register_exporter(name: str, *param_decls: str, run: ExportFn, help: str,
                      suffixes: tuple[str, ...] = (), metavar: str = "PATH",
                      run_job: ExportFn | None = None) -> Exporter:
    """Add an output format to ``opgraph export`` at run time (for code outside the
    package; the package's own formats are listed in :data:`EXPORTERS`). Arguments as
    :func:`opgraph.commands.exporters.exporter`."""
    ex = exporter(name, *param_decls, run=run, help=help, suffixes=suffixes, metavar=metavar, run_job=run_job)
    export_cmd.params[:] = [p for p in export_cmd.params if p.name != name]
    export_cmd.params.append(ex.option)
    EXPORTERS[name] = ex
    return ex
