"""The table files of every command that prints tables: ``--csv [DIR]``, ``--parquet DIR``
and ``--xlsx FILE`` (one option set, one writer; no import of :mod:`opgraph.cli`, so the
core commands there can use it too)."""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from typing import Any, Callable

import click

#: The command parameters that name input files (checked against the table outputs).
INPUT_PARAMS = ("input", "inputs", "a", "b")


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


def _command_inputs(kwargs: dict[str, Any]) -> tuple[str, ...]:
    """The input files among a command's parameters (:data:`INPUT_PARAMS`)."""
    got: list[str] = []
    for k in INPUT_PARAMS:
        v = kwargs.get(k)
        if isinstance(v, (str, os.PathLike)):
            got.append(os.fspath(v))
        elif isinstance(v, (list, tuple)):
            got += [os.fspath(x) for x in v if isinstance(x, (str, os.PathLike))]
    return tuple(got)


def check_table_files(out: TableFiles, as_json: bool, inputs: tuple[str, ...]) -> None:
    """Before any work: stdout carries one document (``--csv -`` and ``--json`` together
    are refused), and ``--xlsx`` is a possible output (not an input or a device file in
    force, not a folder or FIFO). One :class:`~opgraph.errors.OpgraphInputError` line."""
    from opgraph.errors import OpgraphInputError
    from opgraph.outfiles import check_output_path

    if out.csv == "-" and as_json:
        raise OpgraphInputError("--csv -", "--json also writes to standard output, which carries one document: "
                                           "give --csv a folder, or drop --json")
    if out.xlsx is not None:
        check_output_path(out.xlsx, inputs)
    # the CSV and Parquet files are <stem>.<table>.<ext>; the table names come with the
    # results, so an input of that form in the folder is refused now (write_frames checks
    # every name again before the first write)
    from opgraph.outfiles import protected_inputs

    name = stem(inputs[-1]) if inputs else ""
    for folder, ext in ((out.csv, "csv"), (out.parquet, "parquet")):
        if not name or folder is None or folder == "-" or not os.path.isdir(folder):
            continue
        for q in protected_inputs(inputs):
            base = os.path.basename(q)
            if base.startswith(f"{name}.") and base.endswith(f".{ext}") and os.path.exists(q) and \
                    os.path.samefile(os.path.dirname(os.path.abspath(q)), folder):
                check_output_path(q, inputs)


def table_file_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """The table files: --csv [DIR], --parquet DIR, --xlsx FILE. The command receives them
    as one ``csv_dir`` value, a :class:`TableFiles` (None when none was given), checked by
    :func:`check_table_files` before the command runs."""
    command = f

    @functools.wraps(command)
    def checked(*args: Any, **kwargs: Any) -> Any:
        out = kwargs.get("csv_dir")
        if isinstance(out, TableFiles):
            check_table_files(out, bool(kwargs.get("as_json")), _command_inputs(kwargs))
        return command(*args, **kwargs)

    f = checked
    f = click.option("--csv", "csv_dir", is_flag=False, flag_value=".", default=None, metavar="[DIR]",
                     type=click.Path(file_okay=False), callback=_table_files,
                     help="Write pandas-friendly CSV files to DIR (default: the current directory).")(f)
    f = click.option("--xlsx", "xlsx", default=None, metavar="FILE", expose_value=False, is_eager=True,
                     callback=_remember, help="Write the tables to one Excel workbook, a sheet per table.")(f)
    f = click.option("--parquet", "parquet", default=None, metavar="DIR", expose_value=False, is_eager=True,
                     callback=_remember, type=click.Path(file_okay=False),
                     help="Write the tables as Parquet files to DIR (needs pyarrow).")(f)
    return f


def stem(path: str) -> str:
    """The input's file name without its trace/graph suffixes (names the table files)."""
    name = os.path.basename(path)
    for suffix in (".gz", ".json", ".gpickle", ".trace", ".pt"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    return name or "opgraph"


def write_frames(frames: dict, out: TableFiles | str, input_path: str, inputs: tuple[str, ...] = ()) -> None:
    """Write ``frames`` where ``out`` says (a :class:`TableFiles`, or a CSV folder), each file
    named after the input; print each path on stderr. ``--csv -`` prints a command's one
    table as CSV on stdout (a command with several tables needs a folder). Every target is
    checked before the first is written (never over ``input_path``, ``inputs`` or a device
    file in force: :func:`opgraph.outfiles.check_output_path`), so a refusal leaves nothing."""
    from opgraph.export.tables.documents import csv_text, table_file_paths, write_csv, write_parquet, write_xlsx
    from opgraph.outfiles import check_output_path

    if isinstance(out, str):
        out = TableFiles(csv=out)
    inputs = (input_path, *inputs)
    for d, ext in ((out.csv, "csv"), (out.parquet, "parquet")):
        if d is not None and d != "-":
            for p in table_file_paths(frames, d, stem(input_path), ext):
                check_output_path(p, inputs)
    if out.xlsx is not None:
        check_output_path(out.xlsx, inputs)
    paths = []
    if out.csv == "-":  # standard output: one table only (several would not be one CSV)
        from opgraph.errors import OpgraphInputError

        if len(frames) != 1:
            raise OpgraphInputError("--csv -", f"this command writes {len(frames)} tables "
                                               f"({', '.join(frames)}); give a folder instead of -")
        click.echo(csv_text(next(iter(frames.values()))), nl=False)
    elif out.csv is not None:
        paths += write_csv(frames, out.csv, stem(input_path), inputs=inputs)
    if out.parquet is not None:
        paths += write_parquet(frames, out.parquet, stem(input_path), inputs=inputs)
    if out.xlsx is not None:
        paths.append(write_xlsx(frames, out.xlsx, inputs=inputs))
    for p in paths:
        click.echo(f"wrote {p}", err=True)
