"""What every command shares: loading its input (with ``--rank`` on a job graph), the
multi-rank options, and the output of a table command.

A command module reads: click decorators, then parse, one call into the layers below,
present. ``--rank`` is declared on each command that analyses one rank
(:func:`rank_option`) and handed to :func:`load_input` as a plain argument.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Callable

import click

from opgraph.emit import emit_json
from opgraph.errors import OpgraphInputError
from opgraph.table_options import TableFiles, write_frames

if TYPE_CHECKING:
    from opgraph.model.trace_graph import TraceGraph


#: Where :func:`load_input` leaves the unit of the loaded graph's times for :func:`console`
#: (``click.Context.meta`` of the invocation).
TIME_UNIT_KEY = "opgraph.time_unit"
#: The unit of an execution trace's ordinal times (1 tick = 1 op in program order).
ORDINAL_UNIT = "ticks"


#: Where ``opgraph --full-names`` is left for :func:`console`.
FULL_NAMES_KEY = "opgraph.full_names"


def console():
    """The console a command prints through (:func:`opgraph.export.text.console.make_console`),
    with "µs" printed as the loaded graph's own unit when its times are not µs, and kernel
    names whole with ``opgraph --full-names``."""
    from opgraph.export.text.console import make_console

    ctx = click.get_current_context(silent=True)
    meta = ctx.find_root().meta if ctx is not None else {}
    return make_console(time_unit=meta.get(TIME_UNIT_KEY), full_names=bool(meta.get(FULL_NAMES_KEY)))


def rank_option(f: Callable) -> Callable:
    """``--rank N``: on a multi-rank job graph, analyse rank N on its own clock (the
    command passes it to :func:`load_input` as ``rank=``)."""
    return click.option("--rank", "rank", type=click.IntRange(min=0), default=None,
                        help="On a multi-rank job graph: analyse this rank (its own clock).")(f)


def load_input(path: str, fmt: str | None = None, label: str = "loading", job_ok: bool = False,
               whole_job: bool = False, *, rank: int | None = None) -> "TraceGraph":
    """Load a saved graph or build one from a raw trace (a
    :class:`~opgraph.model.trace_graph.TraceGraph`), with a progress bar on a TTY.

    A multi-rank job graph is returned whole only when ``job_ok``; otherwise ``rank``
    (the command's ``--rank N``) selects that rank (:func:`opgraph.multirank.rank_subgraph`,
    the rank's own clock), and without it the command stops with one line: a single-rank
    analysis over several ranks' events at once would mix their steps, devices and
    threads. With ``whole_job`` a job graph without ``--rank`` is returned whole (commands
    that then run per rank or across ranks: ``overlap``, ``collectives``). The rank
    ``--rank`` cuts out of a job is cut in columns (:func:`opgraph.multirank.rank_subgraph`)."""
    from opgraph.graph.io import load_any
    from opgraph.progress import phase_progress

    with phase_progress(f"{label} {os.path.basename(path)}") as step:
        G = load_any(path, format=fmt, step=step)
    if (G.graph.get("trace_metadata") or {}).get("timing") == "ordinal":
        # an execution trace records no timestamps: say so once, on stderr (JSON stays clean:
        # its *_us keys hold the positions), and head the tables with "ticks", not "µs"
        click.echo(f"note: {path}: an execution trace records no timestamps; every time below is an ordinal "
                   f"position in {ORDINAL_UNIT} (1 tick = 1 op in program order; in JSON, under the *_us keys)",
                   err=True)
        ctx = click.get_current_context(silent=True)
        if ctx is not None:
            ctx.find_root().meta[TIME_UNIT_KEY] = ORDINAL_UNIT
    job = G.graph.get("job")
    if not isinstance(job, dict):
        if rank is not None and not job_ok:
            raise OpgraphInputError(path, f"--rank {rank}: this graph has one rank (--rank selects a rank of a "
                                          "multi-rank job graph built by opgraph build DIR)")
        return G
    if job_ok or (whole_job and rank is None):
        return G
    from opgraph.multirank.job import format_rank_set

    ranks = [int(r["rank"]) for r in job.get("ranks", [])]
    full = [int(r["rank"]) for r in job.get("ranks", []) if r.get("full")]
    if rank is None:
        raise OpgraphInputError(path, f"is a multi-rank job graph (ranks {format_rank_set(ranks)}): pass --rank N "
                                      f"(kept in full: {format_rank_set(full)}), or use critical-path / stragglers / "
                                      "info / overlap / collectives / export --perfetto for the whole job")
    from opgraph.multirank import rank_subgraph

    try:
        return rank_subgraph(G, rank)
    except KeyError as e:
        raise OpgraphInputError(path, f"--rank {rank}: {e.args[0]} (kept in full: {format_rank_set(full)})") from None


def warn_unknown_devices(path: str, devices: list[dict[str, Any]]) -> None:
    """One ``warning:`` line on stderr per device of a roofline result (``runtime_name``,
    ``table_name``) that the peak table does not resolve, so "% of peak" is never silently
    empty (stdout keeps the one document or table)."""
    from opgraph.analysis.roofline.devices import unknown_device_lines
    from opgraph.export.text.console import clean

    for line in unknown_device_lines(devices):
        click.echo(clean(f"warning: {path}: {line}"), err=True)


def emit_result(input: str, tables: "dict[str, Any] | Callable[[], dict[str, Any]]", files: TableFiles | None,
                as_json: bool, doc: Callable[[], Any], schema: str, render: Callable[[], None]) -> None:
    """The output of a table command: its table files when asked (``files``), then its
    JSON (``doc()``, validated against ``schema``) or, when neither was asked, ``render()``.
    ``tables`` may be a function giving them: it is called only when files are asked."""
    if files is not None:
        write_frames(tables() if callable(tables) else tables, files, input)
    if as_json:
        emit_json(doc(), schema)
    elif files is None:
        render()


def multirank_options(f: Callable) -> Callable:
    """``--scheduler``, ``--workers`` (multi-rank input: docs/multirank.md)."""
    f = click.option("--workers", type=click.IntRange(min=1), default=None,
                     help="Multi-rank input: processes of the embedded pool (default: all cores).")(f)
    f = click.option("--scheduler", default=None, metavar="ADDRESS",
                     help="Multi-rank input: run the per-rank work on this Dask scheduler "
                          "(e.g. tcp://host:8786) instead of the embedded process pool.")(f)
    return f


def is_multirank_input(inputs: tuple[str, ...] | list[str]) -> bool:
    """Several files, a directory or a glob pattern: a multi-rank job
    (:func:`opgraph.multirank.identity.is_job_input`)."""
    from opgraph.multirank.identity import is_job_input

    return is_job_input(list(inputs))


def per_rank_command(input: str, fn: Callable[..., Any], kwargs: dict[str, Any], files: TableFiles | None,
                     as_json: bool, schema: str, doc: Callable[[Any], Any], render: Callable[[Any, Any], None],
                     workers: int | None = None, scheduler: str | None = None, rank: int | None = None) -> None:
    """A table command on a job's rank traces (a directory, a glob, or several files): the
    analysis ``fn(G, **kwargs)`` runs once per rank in the pool or on the Dask cluster
    (:func:`opgraph.pipelines.per_rank`). Table files hold every rank's rows with a ``rank``
    column first; ``--json`` is ``{"ranks": [{"rank", "file", "result"}]}``
    (schemas/per-rank.schema.json; each ``result`` is the command's own document,
    ``schema``); the terminal shows each rank's tables under its name. ``fn`` takes a
    :class:`~opgraph.model.trace_graph.TraceGraph`."""
    import pandas as pd

    from opgraph.pipelines import per_rank, per_rank_warnings
    from opgraph.progress import rank_progress
    from opgraph.schemas_util import check_output

    if rank is not None:
        raise OpgraphInputError(input, f"--rank {rank}: selects a rank of a saved job graph; with rank traces "
                                       "every rank is analysed (or give that rank's file)")
    with rank_progress("analysing ranks") as progress:
        results = per_rank([input], fn, kwargs, workers=workers, scheduler=scheduler, progress=progress)
    for line in per_rank_warnings(results):
        click.echo(f"warning: {input}: {line}", err=True)
    per = [(ra.rank, ra.result.tables()) for ra in results]
    merged: dict[str, pd.DataFrame] = {}
    for name in dict.fromkeys(n for _, t in per for n in t):  # every table name, first-seen order
        df = pd.concat([t[name].assign(rank=r) for r, t in per if name in t], ignore_index=True)
        merged[name] = df[["rank", *[c for c in df.columns if c != "rank"]]]

    def document() -> dict[str, Any]:
        ranks = []
        for ra in results:
            d = doc(ra.result)
            check_output(d, schema)
            ranks.append({"rank": ra.rank, "file": ra.file, "result": d})
        return {"ranks": ranks}

    def show() -> None:
        from opgraph.export.text.console import styled

        con = console()
        for ra in results:
            con.print(styled(("rank " + ("?" if ra.rank is None else str(ra.rank)), "bold"), f"  {ra.file}"))
            render(ra.result, con)

    emit_result(input, merged, files, as_json, document, "per-rank.schema.json", show)
