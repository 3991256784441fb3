"""``opgraph iterations``: the steps of a trace with their CPU span, GPU span and kernel time.

Also the option decorators shared by ``breakdown``, ``overheads`` and ``summary``."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Callable

import click

from opgraph.cli import emit_json, load_input, main


def window_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """--step-regex, --data-marker, --no-data-markers, --format."""
    f = click.option("--format", "fmt", default=None, help="Force the input format of a raw trace.")(f)
    f = click.option("--no-data-markers", is_flag=True,
                     help="Do not treat any range as data loading.")(f)
    f = click.option("--data-marker", "data_marker", multiple=True, metavar="REGEX",
                     help="Data-loading marker (regex searched in host range names; repeatable). "
                          "Default: DataLoader.")(f)
    f = click.option("--step-regex", default=None, metavar="REGEX",
                     help="Ranges (NVTX / record_function labels; GPU annotations when no host range matches) "
                          "that delimit steps; one that matches nothing exits 2. Default: ProfilerStep#N, else GPU "
                          "ProfilerStep annotations, else NVTX 'Iteration N', else data-loader markers.")(f)
    return f


@dataclass(frozen=True)
class TableFiles:
    """Where a command writes its tables: ``--csv DIR``, ``--parquet DIR``, ``--xlsx FILE``."""

    csv: str | None = None
    parquet: str | None = None
    xlsx: str | None = None


_META = "opgraph.table_files"


def _remember(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    if value is not None:
        ctx.meta.setdefault(_META, {})[param.name] = value


def _table_files(ctx: click.Context, param: click.Parameter, value: str | None) -> TableFiles | None:
    got = dict(ctx.meta.get(_META, {}))
    if value is not None:
        got["csv"] = value
    return TableFiles(**got) if got else None


def table_file_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """The table files: --csv [DIR], --parquet DIR, --xlsx FILE. The command receives them
    as one ``csv_dir`` value, a :class:`TableFiles` (None when none was given)."""
    f = click.option("--csv", "csv_dir", is_flag=False, flag_value=".", default=None, metavar="[DIR]",
                     type=click.Path(file_okay=False), callback=_table_files,
                     help="Write pandas-friendly CSV files to DIR (default: the current directory).")(f)
    f = click.option("--xlsx", "xlsx", default=None, metavar="FILE", expose_value=False, is_eager=True,
                     callback=_remember, help="Write the tables to one Excel workbook, a sheet per table.")(f)
    f = click.option("--parquet", "parquet", default=None, metavar="DIR", expose_value=False, is_eager=True,
                     callback=_remember, type=click.Path(file_okay=False),
                     help="Write the tables as Parquet files to DIR (needs pyarrow).")(f)
    return f


def output_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """--json and the table files (:func:`table_file_options`)."""
    f = table_file_options(f)
    f = click.option("--json", "as_json", is_flag=True, help="Machine-readable output (validated by its schema).")(f)
    return f


def markers(data_marker: tuple[str, ...], no_data_markers: bool) -> tuple[str, ...] | None:
    """The data-marker option value for the analyses (None = default)."""
    if no_data_markers:
        return ()
    if data_marker:
        import re

        for m in data_marker:
            try:
                re.compile(m)
            except re.error as e:
                raise click.BadParameter(f"{m!r}: {e}", param_hint="--data-marker") from None
        return tuple(data_marker)
    return None


def check_regex(step_regex: str | None) -> None:
    """An invalid ``--step-regex`` ends the command (exit 2, one line) before the input is read."""
    if step_regex:
        import re

        from opgraph.errors import OpgraphInputError

        try:
            re.compile(step_regex)
        except re.error as e:
            raise OpgraphInputError("--step-regex", f"{step_regex!r} is not a valid regex ({e})") from None


def stem(path: str) -> str:
    name = os.path.basename(path)
    for suffix in (".gz", ".json", ".gpickle", ".trace", ".pt"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    return name or "opgraph"


def write_frames(frames: dict, out: TableFiles | str, input_path: str) -> None:
    """Write ``frames`` where ``out`` says (a :class:`TableFiles`, or a CSV folder), each file
    named after the input; print each path on stderr."""
    from opgraph.export.tables import write_csv, write_parquet, write_xlsx

    if isinstance(out, str):
        out = TableFiles(csv=out)
    inputs = (input_path,)
    paths = []
    if out.csv is not None:
        paths += write_csv(frames, out.csv, stem(input_path), inputs=inputs)
    if out.parquet is not None:
        paths += write_parquet(frames, out.parquet, stem(input_path), inputs=inputs)
    if out.xlsx is not None:
        paths.append(write_xlsx(frames, out.xlsx, inputs=inputs))
    for p in paths:
        click.echo(f"wrote {p}", err=True)


def console():
    """The console of the table commands (:func:`opgraph.cli._console`)."""
    from opgraph.cli import _console

    return _console()


@main.command()
@click.argument("input", type=str)
@window_options
@output_options
def iterations(input: str, step_regex: str | None, data_marker: tuple[str, ...], no_data_markers: bool,
               fmt: str | None, as_json: bool, csv_dir: TableFiles | None) -> None:
    """Steps found in INPUT, each with its CPU span, GPU span, GPU busy and kernel time.

    A device activity belongs to the step in which the runtime call that launched it
    started. Step positions (#) are what `build --iterations A:B` selects."""
    from opgraph.analysis.iterations import iterations_doc
    from opgraph.commands.window_option import window_errors

    check_regex(step_regex)
    G = load_input(input, fmt)
    with window_errors(input, "--step-regex"):
        doc = iterations_doc(G, step_regex, markers(data_marker, no_data_markers))
    if csv_dir is not None:
        from opgraph.export.tables import iterations_frames
        write_frames(iterations_frames(doc), csv_dir, input)
    if as_json:
        emit_json(doc, "iterations.schema.json")
    elif csv_dir is None:
        from opgraph.export.tables import render_iterations
        render_iterations(doc, console())
