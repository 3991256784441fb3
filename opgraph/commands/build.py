"""``opgraph build``: a trace (or a folder of rank traces) to a saved graph
(:mod:`opgraph.pipelines`)."""

from __future__ import annotations

import os

import click

from opgraph.commands.base import is_multirank_input, multirank_options
from opgraph.emit import emit_json
from opgraph.errors import OpgraphInputError
from opgraph.json_option import json_flag, output_entry, outputs_doc


def parse_iterations(path: str, spec: str) -> tuple[int, int]:
    """``--iterations A:B`` -> ``(A, B)`` (A defaults to 0, B to every step after A)."""
    try:
        a, b = spec.split(":")
        start = int(a) if a.strip() else 0
        stop = int(b) if b.strip() else 10**9
    except ValueError:
        raise OpgraphInputError(path, f"--iterations {spec!r}: expected A:B, e.g. 10:20") from None
    return start, stop


@click.command()
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
    from opgraph.outfiles import check_output_path
    from opgraph.pipelines import build_file, build_job_file
    from opgraph.progress import phase_progress, rank_progress

    check_output_path(output, inputs=tuple(traces) + ((et_path,) if et_path else ()) + captures)  # never over an input
    if is_multirank_input(traces) or scheduler or keep:
        if fmt or et_path or iterations or captures:
            raise OpgraphInputError(traces[0], "--format, --et, --capture and --iterations apply to a single trace, "
                                    "not to a multi-rank job")
        with rank_progress("reading ranks") as progress:
            res = build_job_file(list(traces), output, keep=keep, workers=workers, scheduler=scheduler,
                                 budget=None if memory_budget is None else int(memory_budget * 2**30),
                                 progress=progress)
        kind, inputs = "job graph", tuple(traces)
    else:
        trace = traces[0]
        span = parse_iterations(trace, iterations) if iterations is not None else None
        with phase_progress(f"building {os.path.basename(trace)}") as step:
            res = build_file(trace, output, fmt=fmt, et_path=et_path, captures=captures, iterations=span,
                             step_regex=step_regex, step=step, note=lambda line: click.echo(line, err=True))
        kind = "gpickle" if output.endswith(".gpickle") else "node-link json"
        inputs = (trace,) + ((et_path,) if et_path else ()) + captures
    click.echo(res.message, err=True)
    for line in res.notes:
        click.echo(line, err=True)
    if as_json:
        emit_json(outputs_doc("build", inputs, [output_entry(output, kind, res.message)], res.counts),
                  "outputs.schema.json")
