"""``opgraph collectives``: message size, algorithm and bus bandwidth of every
communication kernel (opgraph/analysis/collectives.py, docs/collectives.md)."""

from __future__ import annotations

import click

from opgraph.commands.base import console
from opgraph.commands.base import emit_result, is_multirank_input, load_input, multirank_options, rank_option
from opgraph.table_options import TableFiles, table_file_options


@click.command("collectives")
@rank_option
@click.argument("input", type=str)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (schemas/collectives.schema.json).")
@table_file_options
@multirank_options
def collectives_cmd(input: str, as_json: bool, csv_dir: TableFiles | None, rank: int | None = None,
                    scheduler: str | None = None, workers: int | None = None) -> None:
    """Communication kernels by collective, group size, dtype and message size: count,
    time, algorithm bandwidth and bus bandwidth (from the trace's own collective records).
    On a multi-rank job graph without --rank: one row per collective matched across ranks,
    its time split into skew (waiting for the last rank) and communication, and the
    bandwidth over the communication time (--json: schemas/job-collectives.schema.json).
    The same from a job's rank traces (a directory or a glob), each rank read in its own
    pool process or Dask task."""
    from opgraph.analysis.collectives import collectives
    from opgraph.errors import OpgraphInputError
    from opgraph.export.text.collectives import render_collectives, render_job_collectives

    if is_multirank_input([input]):
        from opgraph.analysis.job_tables import job_collectives_from_traces
        from opgraph.progress import rank_progress

        if rank is not None:
            raise OpgraphInputError(input, f"--rank {rank}: selects a rank of a saved job graph; with rank traces "
                                           "give that rank's file")
        with rank_progress("reading ranks") as step:
            jres = job_collectives_from_traces([input], workers=workers, scheduler=scheduler, progress=step)
        emit_result(input, jres.tables(), csv_dir, as_json, jres.to_dict, "job-collectives.schema.json",
                    lambda: render_job_collectives(jres.collectives, console()))
        return
    if workers is not None or scheduler is not None:
        raise OpgraphInputError(input, "--workers/--scheduler apply to rank traces (a directory or a glob)")
    G = load_input(input, whole_job=True, rank=rank)
    if isinstance(G.graph.get("job"), dict):  # a job graph without --rank: matched across ranks
        from opgraph.analysis.job_tables import job_collectives
        from opgraph.multirank import rank_subgraph

        jres = job_collectives(G, rank_subgraph)
        emit_result(input, jres.tables(), csv_dir, as_json, jres.to_dict, "job-collectives.schema.json",
                    lambda: render_job_collectives(jres.collectives, console()))
        return
    res = collectives(G)
    emit_result(input, res.tables, csv_dir, as_json, res.to_dict, "collectives.schema.json",
                lambda: render_collectives(res.to_frame(), console()))
