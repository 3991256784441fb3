"""One output format of ``opgraph export``: the option naming its output path and the
function writing it (:mod:`opgraph.commands.export` lists the formats it offers)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import click

from opgraph.model.trace_graph import TraceGraph

#: ``run(G, path, opts) -> message``; ``opts`` holds every option value of the command.
ExportFn = Callable[[TraceGraph, str, dict[str, Any]], "str | None"]


@dataclass
class Exporter:
    """One output format of ``opgraph export``: the option naming its output path and
    the function writing it."""

    name: str
    option: click.Option
    run: ExportFn
    suffixes: tuple[str, ...] = ()
    #: Writes a whole multi-rank job graph (``G.graph["job"]``); formats without one need
    #: ``--rank N`` on a job.
    run_job: ExportFn | None = None


def exporter(name: str, *param_decls: str, run: ExportFn, help: str, suffixes: tuple[str, ...] = (),
             metavar: str = "PATH", run_job: ExportFn | None = None,
             callback: Callable[[click.Context, click.Parameter, Any], Any] | None = None) -> Exporter:
    """An output format: an option (``param_decls``, e.g. ``"--dot"``) taking the output
    path, stored under ``name``, and ``run`` writing it. ``run_job`` writes a whole
    multi-rank job graph (without it, a job needs ``--rank``). A format with ``suffixes``
    writes one file: its path is checked before the input is loaded
    (:func:`opgraph.outfiles.check_output_path`); ``run`` writes it with
    :mod:`opgraph.outfiles`, passing ``opts["input"]`` as the input not to overwrite."""
    opt = click.Option([*(param_decls or (f"--{name}",)), name], default=None, metavar=metavar,
                       type=str, help=help, callback=callback)
    return Exporter(name, opt, run, tuple(suffixes), run_job)


def input_files(opts: dict[str, Any]) -> tuple[str, ...]:
    """The files an exporter must not overwrite: the command's input."""
    return (str(opts["input"]),) if opts.get("input") else ()
