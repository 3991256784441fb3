"""``opgraph stragglers``: which rank arrived last at each collective, and by how much."""

from __future__ import annotations

import click

from opgraph.commands.base import console, is_multirank_input, multirank_options
from opgraph.commands.base import emit_result, load_input
from opgraph.table_options import TableFiles, table_file_options
from opgraph.errors import OpgraphInputError


@click.command("stragglers")
@click.argument("input", type=str)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (schemas/stragglers.schema.json).")
@click.option("--top", type=click.IntRange(min=1), default=15, show_default=True,
              help="Collectives listed by lateness in the table (--json lists every collective).")
@table_file_options
@multirank_options
def stragglers_cmd(input: str, as_json: bool, top: int, csv_dir: TableFiles | None, workers: int | None = None,
                   scheduler: str | None = None) -> None:
    """Per collective and per step of a multi-rank job: the last-arriving rank and its
    lateness; ranks that are repeatedly last; skew histograms (--json).

    INPUT is a saved job graph, or the job's rank traces (a directory or a glob): then each
    rank is read in its own worker (or on the Dask cluster at --scheduler) and only its
    collective kernels and steps reach this process (docs/multirank.md)."""
    from opgraph.analysis.stragglers import stragglers

    if is_multirank_input([input]) or scheduler:
        from opgraph.pipelines import job_stragglers
        from opgraph.progress import rank_progress

        with rank_progress("reading ranks") as progress:
            rep = job_stragglers([input], workers=workers, scheduler=scheduler, progress=progress)
    else:
        G = load_input(input, job_ok=True)
        if not isinstance(G.graph.get("job"), dict):
            raise OpgraphInputError(input, "stragglers needs a multi-rank job graph (opgraph build DIR -o "
                                           "job.gpickle) or the job's rank traces; this graph has one rank")
        rep = stragglers(G)
    from opgraph.export.text.crossrank import render_stragglers
    emit_result(input, rep.tables(), csv_dir, as_json, rep.to_dict, "stragglers.schema.json",
                lambda: render_stragglers(rep, console(), top=top))
