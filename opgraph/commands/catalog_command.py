"""The command of a catalog entry that has no hand-written one (docs/architecture.md, "The
analysis catalog"): ``opgraph <command> INPUT [options] [--json] [--csv|--parquet|--xlsx]``,
with ``--rank`` on a job graph and, for ``per_rank`` entries, a job's rank traces analysed
rank by rank. Options, defaults, help and schema come from the entry.
"""

from __future__ import annotations

from typing import Any, Callable

import click

from opgraph.catalog.spec import Analysis, Option, resolve
from opgraph.commands.base import console, emit_result, is_multirank_input, load_input, multirank_options
from opgraph.commands.base import per_rank_command, rank_option
from opgraph.commands.iterations import check_regex
from opgraph.table_options import TableFiles, table_file_options


def _click_type(o: Option) -> Any:
    if o.kind == "int":
        return click.IntRange(min=None if o.minimum is None else int(o.minimum),
                              max=None if o.maximum is None else int(o.maximum))
    if o.kind == "float":
        return click.FloatRange(min=o.minimum, max=o.maximum)
    return str


def _option(o: Option) -> Callable[[Callable], Callable]:
    if o.kind == "flag":
        return click.option(o.flag, o.name, is_flag=True, help=o.help)
    metavar = "REGEX" if o.kind == "regex" else None
    return click.option(o.flag, o.name, type=_click_type(o), default=o.default, metavar=metavar,
                        show_default=o.default is not None, help=o.help)


def _renderer(entry: Analysis) -> Callable[..., None]:
    """``render(result, console, **options)``: the entry's own, else its declared tables."""
    if entry.render:
        return resolve(entry.render)
    from opgraph.export.text.declared import render_declared

    return lambda res, con, **_: render_declared(res.to_dict(), entry, con)


def analysis_command(entry: Analysis) -> click.Command:
    """The click command of ``entry`` (an entry without ``command_impl``)."""
    if entry.command_impl:
        raise ValueError(f"{entry.command}: has its own command ({entry.command_impl})")

    def run(input: str, as_json: bool, csv_dir: TableFiles | None, rank: int | None = None,
            scheduler: str | None = None, workers: int | None = None, **values: Any) -> None:
        for o in entry.options:
            if o.kind == "regex":
                check_regex(values[o.name], o.flag)
        fn = resolve(entry.function)
        kwargs = {o.name: values[o.name] for o in entry.options_for("analysis")}
        out = {o.name: values[o.name] for o in entry.options_for("output")}
        view = {o.name: values[o.name] for o in entry.options_for("view")}
        render = _renderer(entry)
        if entry.per_rank and (is_multirank_input([input]) or scheduler):  # a job's rank traces
            per_rank_command(input, fn, kwargs, csv_dir, as_json, entry.schema, lambda res: res.to_dict(**out),
                             lambda res, con: render(res, con, **out, **view), workers, scheduler, rank)
            return
        res = fn(load_input(input, rank=rank), **kwargs)
        emit_result(input, res.tables, csv_dir, as_json, lambda: res.to_dict(**out), entry.schema,
                    lambda: render(res, console(), **out, **view))

    f: Callable = run
    if entry.per_rank:
        f = multirank_options(f)
    f = table_file_options(f)
    f = click.option("--json", "as_json", is_flag=True,
                     help=f"Machine-readable output (schemas/{entry.schema}).")(f)
    for o in reversed(entry.options):
        f = _option(o)(f)
    f = click.argument("input", type=str)(f)
    f = rank_option(f)
    return click.command(entry.command, help=entry.help)(f)
