"""``opgraph collectives``: message size, algorithm and bus bandwidth of every
communication kernel (opgraph/analysis/collectives.py, docs/collectives.md)."""

from __future__ import annotations

import click

from opgraph.commands.base import console
from opgraph.commands.base import emit_result, load_input, rank_option
from opgraph.table_options import TableFiles, table_file_options


@click.command("collectives")
@rank_option
@click.argument("input", type=str)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (schemas/collectives.schema.json).")
@table_file_options
def collectives_cmd(input: str, as_json: bool, csv_dir: TableFiles | None, rank: int | None = None) -> None:
    """Communication kernels by collective, group size, dtype and message size: count,
    time, algorithm bandwidth and bus bandwidth (from the trace's own collective records).
    On a multi-rank job graph without --rank: one row per collective matched across ranks,
    its time split into skew (waiting for the last rank) and communication, and the
    bandwidth over the communication time (--json: schemas/job-collectives.schema.json)."""
    from opgraph.analysis.collectives import collectives
    from opgraph.export.text_collectives import render_collectives, render_job_collectives

    G = load_input(input, whole_job=True, rank=rank, model=True)   # columns for one rank (a job: networkx)
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
