"""The ``opgraph`` command line: thin click commands over the layers.

Every command that takes a graph accepts a saved graph (``.gpickle``, ``.json.gz``) or a
raw trace. Bad input prints one line and exits with code 2; never a traceback.
"""

from __future__ import annotations

import errno
import functools
import os
import sys
from contextvars import ContextVar
from typing import Any, Callable

import click

from opgraph.version import __version__
from opgraph.emit import emit_json  # noqa: F401  (re-exported: the commands print through it)
from opgraph.errors import OpgraphInputError
from opgraph.json_option import json_flag, output_entry, outputs_doc
from opgraph.table_options import TableFiles, table_file_options, write_frames


def _fail(msg: str, code: int) -> None:
    from opgraph.export.console import clean

    click.echo(f"opgraph: error: {clean(msg)}", err=True)
    sys.exit(code)


#: errno values of a failed write that are the environment's doing (full or read-only disk,
#: quota, I/O error, file too large), reported as one line and exit 2.
_WRITE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EIO, errno.EFBIG})


class _Group(click.Group):
    """Turns every input error into one line + exit 2, and anything unexpected into one
    line + exit 1 (set OPGRAPH_DEBUG=1 for the traceback)."""

    def add_command(self, cmd: click.Command, name: str | None = None) -> None:
        """Every command that analyses one rank gets ``--rank N`` (see :func:`load_input`),
        however it was registered (also when ``python -m opgraph.cli`` imports twice)."""
        super().add_command(cmd, name)
        if (name or cmd.name) not in JOB_COMMANDS and _takes_input(cmd):
            _add_rank_option(cmd)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except OpgraphInputError as e:
            _fail(str(e), 2)
        except (click.exceptions.Exit, click.exceptions.Abort, click.ClickException, SystemExit):
            raise
        except MemoryError:
            _fail("out of memory", 1)
        except KeyboardInterrupt:
            _fail("interrupted", 130)
        except BrokenPipeError:
            sys.exit(0)
        except OSError as e:
            if e.errno in _WRITE_ERRNOS:  # the disk or stdout is full, read-only or failing: not a bug
                _fail(f"cannot write the output: {e.strerror or e}"
                      + (f" ({e.filename})" if getattr(e, "filename", None) else " (standard output or a file)"), 2)
            if os.environ.get("OPGRAPH_DEBUG"):
                raise
            _fail(f"internal error ({type(e).__name__}: {e}); rerun with OPGRAPH_DEBUG=1 for details", 1)
        except Exception as e:  # noqa: BLE001 - the CLI boundary: no traceback reaches users
            if os.environ.get("OPGRAPH_DEBUG"):
                raise
            _fail(f"internal error ({type(e).__name__}: {e}); rerun with OPGRAPH_DEBUG=1 for details", 1)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="opgraph")
def main() -> None:
    """Profiler traces as a typed NetworkX DAG: build, inspect, analyse, export."""


#: The ``--rank`` a single-rank command was given (None: not given).
_RANK: ContextVar[int | None] = ContextVar("opgraph_rank", default=None)

#: Commands that work on a whole multi-rank job graph and get no ``--rank`` option.
JOB_COMMANDS = frozenset({"build", "info", "critical-path", "stragglers"})


def load_input(path: str, fmt: str | None = None, label: str = "loading", job_ok: bool = False,
               whole_job: bool = False):
    """Load a saved graph or build one from a raw trace, with a progress bar on a TTY.

    A multi-rank job graph is returned whole only when ``job_ok``; otherwise the command's
    ``--rank N`` selects that rank (:func:`opgraph.multirank.rank_subgraph`, the rank's own
    clock), and without it the command stops with one line: a single-rank analysis over
    several ranks' events at once would mix their steps, devices and threads. With
    ``whole_job`` a job graph without ``--rank`` is returned whole (commands that then run
    per rank or across ranks: ``overlap``, ``collectives``)."""
    from opgraph.graph.io import load_any
    from opgraph.progress import phase_progress

    with phase_progress(f"{label} {os.path.basename(path)}") as step:
        G = load_any(path, format=fmt, step=step)
    if (G.graph.get("trace_metadata") or {}).get("timing") == "ordinal":
        # an execution trace records no timestamps: say so once, on stderr (JSON stays clean)
        click.echo(f"note: {path}: an execution trace records no timestamps; every time below is an ordinal "
                   "position (1 unit = 1 op in program order), printed where µs would be", err=True)
    rank = _RANK.get()
    job = G.graph.get("job")
    if not isinstance(job, dict):
        if rank is not None and not job_ok:
            raise OpgraphInputError(path, f"--rank {rank}: this graph has one rank (--rank selects a rank of a "
                                          "multi-rank job graph built by opgraph build DIR)")
        return G
    if job_ok or (whole_job and rank is None):
        return G
    ranks = [int(r["rank"]) for r in job.get("ranks", [])]
    full = [int(r["rank"]) for r in job.get("ranks", []) if r.get("full")]
    if rank is None:
        raise OpgraphInputError(path, f"is a multi-rank job graph (ranks {_fmt_ranks(ranks)}): pass --rank N "
                                      f"(kept in full: {_fmt_ranks(full)}), or use critical-path / stragglers / "
                                      "info / overlap / collectives / export --perfetto for the whole job")
    from opgraph.multirank import rank_subgraph

    try:
        return rank_subgraph(G, rank)
    except KeyError as e:
        raise OpgraphInputError(path, f"--rank {rank}: {e.args[0]} (kept in full: {_fmt_ranks(full)})") from None


def _fmt_ranks(ranks: list[int]) -> str:
    """``[0, 1, 2, 5]`` -> ``"0-2,5"``."""
    out: list[str] = []
    for r in sorted(set(ranks)):
        if out and out[-1].split("-")[-1] == str(r - 1):
            out[-1] = f"{out[-1].split('-')[0]}-{r}"
        else:
            out.append(str(r))
    return ",".join(out) or "none"


def _takes_input(cmd: click.Command) -> bool:
    """Whether ``cmd`` reads a graph or trace (has a positional argument): ``--rank`` means
    nothing to a command without one (e.g. ``devices``)."""
    return any(isinstance(p, click.Argument) for p in cmd.params)


def _add_rank_option(cmd: click.Command) -> None:
    """Give a single-rank command ``--rank N`` (see :func:`load_input`)."""
    if any(p.name == "rank" for p in cmd.params):
        return
    cmd.params.append(click.Option(["--rank", "rank"], type=click.IntRange(min=0), default=None,
                                   help="On a multi-rank job graph: analyse this rank (its own clock)."))
    inner = cmd.callback

    @functools.wraps(inner)
    def callback(*args: Any, rank: int | None = None, **kwargs: Any) -> Any:
        token = _RANK.set(rank)
        try:
            return inner(*args, **kwargs)
        finally:
            _RANK.reset(token)

    cmd.callback = callback


def emit_result(input: str, tables: dict[str, Any], files: TableFiles | None, as_json: bool,
                doc: Callable[[], Any], schema: str, render: Callable[[], None]) -> None:
    """The output of a table command: its table files when asked (``files``), then its
    JSON (``doc()``, validated against ``schema``) or, when neither was asked, ``render()``."""
    if files is not None:
        write_frames(tables, files, input)
    if as_json:
        emit_json(doc(), schema)
    elif files is None:
        render()


def _console():
    """The console commands print through: names literal and clean, full width when piped
    (:mod:`opgraph.export.console`)."""
    from opgraph.export.console import make_console
    return make_console()


# --------------------------------------------------------------------------- build
def multirank_options(f: Callable) -> Callable:
    """``--scheduler``, ``--workers`` (multi-rank input: docs/multirank.md)."""
    f = click.option("--workers", type=click.IntRange(min=1), default=None,
                     help="Multi-rank input: processes of the embedded pool (default: all cores).")(f)
    f = click.option("--scheduler", default=None, metavar="ADDRESS",
                     help="Multi-rank input: run the per-rank work on this Dask scheduler "
                          "(e.g. tcp://host:8786) instead of the embedded process pool.")(f)
    return f


def is_multirank_input(inputs: tuple[str, ...] | list[str]) -> bool:
    """Several files, a directory or a glob pattern: a multi-rank job."""
    if len(inputs) != 1:
        return True
    p = inputs[0]
    return os.path.isdir(p) or (any(ch in p for ch in "*?[") and not os.path.exists(p))


@main.command()
@click.argument("traces", type=str, nargs=-1, required=True)
@click.option("-o", "--output", required=True, type=str,
              help="Where to save the graph: .gpickle (fast) or .json.gz / .json (node-link).")
@click.option("--format", "fmt", default=None, help="Force the input format (default: detect by content).")
@click.option("--et", "et_path", default=None, type=click.Path(dir_okay=False),
              help="PyTorch execution trace of the same run: adds data edges and exact shapes.")
@click.option("--capture", "captures", multiple=True, type=click.Path(dir_okay=False), metavar="FILE",
              help="A trace that recorded the CUDA/HIP-graph capture(s) this trace replays: replayed kernels are "
                   "attributed to the ops that captured them (repeatable; docs/graph-replay.md).")
@click.option("--iterations", default=None, metavar="A:B",
              help="Keep only steps A..B-1 (0-based positions, Python slice rules) and the GPU work they launched.")
@click.option("--step-regex", default=None, help="With --iterations: what a step is (default ProfilerStep#N).")
@multirank_options
@click.option("--keep", default=None, metavar="RANKS",
              help="Multi-rank input: ranks kept with their full graph: all, none, auto (default: all "
                   "ranks while their estimated size fits --memory-budget) or a list like 0,3,5-7; the "
                   "others contribute summaries and collective tables only.")
@click.option("--memory-budget", type=click.FloatRange(min=0.01), default=None, metavar="GIB",
              help="Multi-rank input with --keep auto: memory (GiB) the kept graphs may take (default 8).")
@json_flag
def build(traces: tuple[str, ...], output: str, fmt: str | None, et_path: str | None,
          captures: tuple[str, ...], iterations: str | None, step_regex: str | None, scheduler: str | None,
          workers: int | None, keep: str | None, memory_budget: float | None, as_json: bool = False) -> None:
    """Build the typed DAG of TRACE and save it.

    Several traces, a directory or a glob (one trace per rank) build one multi-rank job
    graph: ranks are read in parallel (a process pool, or a Dask cluster with --scheduler),
    collectives matched across ranks and clocks aligned (docs/multirank.md)."""
    import gc

    from opgraph.outfiles import check_output_path

    check_output_path(output, inputs=tuple(traces) + ((et_path,) if et_path else ()) + captures)  # never over an input
    if is_multirank_input(traces) or scheduler or keep:
        if fmt or et_path or iterations or captures:
            raise OpgraphInputError(traces[0], "--format, --et, --capture and --iterations apply to a single trace, "
                                    "not to a multi-rank job")
        from opgraph.multirank.commands import build_job_command
        counts = build_job_command(list(traces), output, keep, workers, scheduler,
                                   None if memory_budget is None else int(memory_budget * 2**30))
        if as_json:
            msg = counts.pop("message")
            emit_json(outputs_doc("build", traces, [output_entry(output, "job graph", msg)], counts),
                      "outputs.schema.json")
        return
    trace = traces[0]

    import networkx as nx

    from opgraph.graph.build import build_payload
    from opgraph.graph.io import GraphPayload, graph_from_payload, read_input, save_gpickle, save_graph
    from opgraph.progress import phase_progress

    if not (output.endswith(".gpickle") or output.endswith(".json.gz") or output.endswith(".json")):
        raise OpgraphInputError(output, "unknown output type: use .gpickle, .json.gz or .json")
    gc.disable()  # millions of long-lived, acyclic objects: the cyclic GC only costs time here
    with phase_progress(f"building {os.path.basename(trace)}") as step:
        got = read_input(trace, format=fmt, step=step)
        if iterations is not None:
            if isinstance(got, nx.DiGraph):
                raise OpgraphInputError(trace, "--iterations needs a raw trace, not a saved graph")
            got = _trim(trace, got, iterations, step_regex)
        if isinstance(got, nx.DiGraph):
            if et_path is not None or captures:
                raise OpgraphInputError(trace, ("--et" if et_path is not None else "--capture")
                                        + " needs a raw trace, not a saved graph")
            n_nodes, n_edges, health = got.number_of_nodes(), got.number_of_edges(), got.graph.get("health", [])
            step("save")
            save_graph(got, output, inputs=(trace,))
        else:
            if et_path is not None:  # [issue #7] link an execution trace (opgraph/graph/et_link.py)
                from opgraph.graph.et_link import attach_et_file, report_line
                click.echo(report_line(attach_et_file(got, et_path)), err=True)
            if captures:  # graph replays -> the ops that captured them (opgraph/graph/replay.py)
                from opgraph.graph.replay import attach_capture_files
                from opgraph.graph.replay import report_line as replay_line
                step("captures")
                click.echo(replay_line(attach_capture_files(got, list(captures))), err=True)
            payload = build_payload(got, step)
            del got
            n_nodes, n_edges = len(payload["nodes"]), len(payload["src"])
            health = payload["graph"].get("health", [])
            step("save")
            if output.endswith(".gpickle"):
                save_gpickle(GraphPayload(payload), output, inputs=(trace,))
            else:
                save_graph(graph_from_payload(payload), output, inputs=(trace,))
    msg = (f"{output}: {n_nodes} nodes, {n_edges} edges"
           + (f", {len(health)} trace-health warnings (see `opgraph info`)" if health else ""))
    click.echo(msg, err=True)
    if as_json:
        emit_json(outputs_doc("build", (trace,) + ((et_path,) if et_path else ()) + captures,
                              [output_entry(output, "gpickle" if output.endswith(".gpickle") else "node-link json",
                                            msg)],
                              {"nodes": int(n_nodes), "edges": int(n_edges), "health_warnings": len(health)}),
                  "outputs.schema.json")


def _trim(path: str, table, spec: str, step_regex: str | None):
    """Apply ``--iterations A:B`` to an event table."""
    from opgraph.analysis.iterations import trim_table

    try:
        a, b = spec.split(":")
        start = int(a) if a.strip() else 0
        stop = int(b) if b.strip() else None
    except ValueError:
        raise OpgraphInputError(path, f"--iterations {spec!r}: expected A:B, e.g. 10:20") from None
    try:
        return trim_table(table, start, stop if stop is not None else 10**9, step_regex)
    except ValueError as e:
        raise OpgraphInputError(path, f"--iterations {spec}: {e}") from None


# --------------------------------------------------------------------------- info
@main.command()
@click.argument("input", type=str)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (schemas/info.schema.json).")
@click.option("--format", "fmt", default=None, help="Force the input format of a raw trace.")
@table_file_options
def info(input: str, as_json: bool, fmt: str | None, csv_dir: TableFiles | None) -> None:
    """Counts, devices, streams, threads, iterations, span and trace health of INPUT."""
    from opgraph.analysis.info import trace_info

    G = load_input(input, fmt, job_ok=True)
    doc = trace_info(G)
    if csv_dir is not None:
        from opgraph.export.tables import info_frames
        write_frames(info_frames(doc), csv_dir, input)
    if as_json:
        emit_json(doc, "info.schema.json")
        return
    if csv_dir is not None:
        return
    from opgraph.export.text import render_info
    render_info(doc, _console())


def _register_optional() -> None:
    """Commands living in their own modules register themselves on import."""
    import importlib

    for mod in ("opgraph.commands",):
        try:
            importlib.import_module(mod)
        except ModuleNotFoundError as e:
            if e.name != mod:
                raise


_register_optional()

if __name__ == "__main__":  # pragma: no cover
    # Run the module's importable twin, on which opgraph.commands registered its commands.
    from opgraph.cli import main as _main

    _main()
