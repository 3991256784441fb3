"""``opgraph export``: write a graph (or a raw trace) out in other formats.

    opgraph export g.gpickle --perfetto out.json [--window REGEX|all]

One command, one option per output format. Formats register themselves with
:func:`register_exporter`, so another module of :mod:`opgraph.commands` (imported after
this one, e.g. ``export_dot.py``) can add ``--dot`` / ``--svg`` / ``--png`` without touching
this file::

    from opgraph.commands.export import register_exporter

    def _write_dot(G, path, opts):            # opts: every option value of the command
        ...
        return f"{path}: ... nodes"           # one line printed to stderr

    register_exporter("dot", "--dot", help="Graphviz DOT file.", run=_write_dot)

Shared options (used by several formats) are added with :func:`register_option`. The input
is loaded once and every requested format is written from it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import click
import networkx as nx

from opgraph.cli import load_input, main
from opgraph.errors import OpgraphInputError
from opgraph.json_option import json_flag, output_entry, outputs_doc

#: ``run(G, path, opts) -> message``; ``opts`` holds every option value of the command.
ExportFn = Callable[[nx.DiGraph, str, dict[str, Any]], "str | None"]


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


EXPORTERS: dict[str, Exporter] = {}


@main.command("export")
@click.argument("input", type=str)
@click.option("--format", "fmt", default=None, help="Force the input format of a raw trace.")
@json_flag
@click.pass_context
def export_cmd(ctx: click.Context, input: str, fmt: str | None, as_json: bool = False, **opts: Any) -> None:
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
    from opgraph.cli import _RANK

    # a whole job only when no --rank was given and every requested format can write one
    G = load_input(input, fmt, job_ok=_RANK.get() is None and all(ex.run_job for ex in wanted))
    is_job = isinstance(G.graph.get("job"), dict)
    written = []
    for ex in wanted:
        run = ex.run_job if is_job and ex.run_job else ex.run
        msg = run(G, str(opts[ex.name]), dict(opts, input=input))
        if msg:
            click.echo(msg, err=True)
        written.append(output_entry(str(opts[ex.name]), ex.name, msg or None))
    if as_json:
        from opgraph.cli import emit_json
        emit_json(outputs_doc("export", (input,), written, {"job": is_job}), "outputs.schema.json")


def register_option(option: click.Option) -> None:
    """Add a shared option to ``opgraph export`` (its value reaches every exporter in
    ``opts``). Options already present under the same name are left as they are."""
    if any(p.name == option.name for p in export_cmd.params):
        return
    export_cmd.params.append(option)


def register_exporter(name: str, *param_decls: str, run: ExportFn, help: str,
                      suffixes: tuple[str, ...] = (), metavar: str = "PATH",
                      run_job: ExportFn | None = None) -> Exporter:
    """Add an output format to ``opgraph export``: an option (``param_decls``, e.g.
    ``"--dot"``) taking the output path, stored under ``name``, and ``run`` writing it.
    ``run_job`` writes a whole multi-rank job graph (without it, a job needs ``--rank``).
    A format with ``suffixes`` writes one file: its path is checked before the input is
    loaded (:func:`opgraph.outfiles.check_output_path`); ``run`` writes it with
    :mod:`opgraph.outfiles`, passing ``opts["input"]`` as the input not to overwrite."""
    opt = click.Option([*(param_decls or (f"--{name}",)), name], default=None, metavar=metavar,
                       type=str, help=help)
    ex = Exporter(name, opt, run, tuple(suffixes), run_job)
    export_cmd.params[:] = [p for p in export_cmd.params if p.name != name]
    export_cmd.params.append(opt)
    EXPORTERS[name] = ex
    return ex


def _inputs(opts: dict[str, Any]) -> tuple[str, ...]:
    """The files an exporter must not overwrite: the command's input."""
    return (str(opts["input"]),) if opts.get("input") else ()


# --------------------------------------------------------------------------- perfetto
def _write_perfetto(G: nx.DiGraph, path: str, opts: dict[str, Any]) -> str:
    from opgraph.commands.window_option import check_window, window_errors
    from opgraph.export.perfetto import export_perfetto

    check_window(G, opts.get("input"), opts.get("window"))
    with window_errors(opts.get("input"), "--window"):
        s = export_perfetto(G, path, window=opts.get("window"), inputs=_inputs(opts))
    return (f"{path}: {s['events']:,} original events + {s['flows']:,} critical-path flows, "
            f"{s['counter_events']:,} counter samples, {s['metadata_events']:,} names; "
            f"{s['critical_events']:,} critical events in {s['windows']} window(s) "
            f"— open it in https://ui.perfetto.dev")


def _write_perfetto_job(G: nx.DiGraph, path: str, opts: dict[str, Any]) -> str:
    from opgraph.export.perfetto_job import export_perfetto_job

    if opts.get("window"):
        raise OpgraphInputError(str(opts.get("input")), "--window applies to one rank: a job's critical path is "
                                "one cross-rank path per step (pass --rank N for a single-rank overlay)")
    s = export_perfetto_job(G, path, inputs=_inputs(opts))
    summ = s["summarised_ranks"]
    return (f"{path}: {s['kept']} rank(s) in full, {s['events']:,} original events on the aligned clock + "
            f"{s['collective_flows']:,} collective flows, {s['critical_flows']:,} critical-path flows, "
            f"{s['counter_events']:,} counter samples; cross-rank critical path of {s['steps']} step(s)"
            + (f"; summarised (collectives only): ranks {','.join(map(str, summ))}" if summ else "")
            + " — open it in https://ui.perfetto.dev")


register_option(click.Option(
    ["--window"], default=None,
    help="Critical-path windows: 'all' for the whole trace, or a regex matched against "
         "annotation/op names (default: each step, ProfilerStep#N or NVTX 'Iteration N', else the "
         "whole trace). A regex that matches nothing exits 2."))
register_exporter("perfetto", "--perfetto", run=_write_perfetto, run_job=_write_perfetto_job,
                  suffixes=(".json", ".json.gz"),
                  help="Chrome/Perfetto trace JSON (.json or .json.gz): the original events plus the "
                       "critical path, idle blame, launch delays, GPU counters (docs/perfetto.md). On a "
                       "multi-rank job graph without --rank: the whole job, one process group per rank "
                       "(docs/multirank.md).")
