"""``opgraph iterations``: the steps of a trace with their CPU span, GPU span and kernel time.

Also the option decorators shared by ``breakdown``, ``overheads`` and ``summary``."""

from __future__ import annotations

from typing import Any, Callable

import click

from opgraph.emit import emit_json
from opgraph.commands.base import console
from opgraph.commands.base import load_input, rank_option
from opgraph.table_options import TableFiles, table_file_options, write_frames


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


def check_regex(value: str | None, flag: str = "--step-regex") -> None:
    """An invalid regular expression given to ``flag`` ends the command (exit 2, one line)
    before the input is read."""
    if value:
        import re

        from opgraph.errors import OpgraphInputError

        try:
            re.compile(value)
        except re.error as e:
            raise OpgraphInputError(flag, f"{value!r} is not a valid regex ({e})") from None


@click.command()
@rank_option
@click.argument("input", type=str)
@window_options
@output_options
def iterations(input: str, step_regex: str | None, data_marker: tuple[str, ...], no_data_markers: bool,
               fmt: str | None, as_json: bool, csv_dir: TableFiles | None, rank: int | None = None) -> None:
    """Steps found in INPUT, each with its CPU span, GPU span, GPU busy and kernel time.

    A device activity belongs to the step in which the runtime call that launched it
    started. Step positions (#) are what `build --iterations A:B` selects."""
    from opgraph.analysis.step_times import iterations_doc
    from opgraph.commands.window_option import window_errors

    check_regex(step_regex)
    G = load_input(input, fmt, rank=rank)
    with window_errors(input, "--step-regex"):
        doc = iterations_doc(G, step_regex, markers(data_marker, no_data_markers))
    if csv_dir is not None:
        from opgraph.export.tables.documents import iterations_frames
        write_frames(iterations_frames(doc), csv_dir, input)
    if as_json:
        emit_json(doc, "iterations.schema.json")
    elif csv_dir is None:
        from opgraph.export.tables.documents import render_iterations
        render_iterations(doc, console())
