"""``opgraph overlap``: compute / communication / memory time per step and device, their
overlap and the exposed communication (opgraph/analysis/overlap.py, docs/overlap.md)."""

from __future__ import annotations

import click

from opgraph.commands.base import console
from opgraph.commands.base import emit_result, is_multirank_input, load_input, multirank_options, per_rank_command
from opgraph.commands.base import rank_option
from opgraph.table_options import TableFiles, table_file_options


@click.command("overlap")
@rank_option
@click.argument("input", type=str)
@click.option("--window", default=None,
              help="'all' for the whole trace, or a regex over range names (default: each step, plus 'all').")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (schemas/overlap.schema.json).")
@table_file_options
@multirank_options
def overlap_cmd(input: str, window: str | None, as_json: bool, csv_dir: TableFiles | None, rank: int | None = None,
                scheduler: str | None = None, workers: int | None = None) -> None:
    """GPU time per step and device: compute, communication and memory, how much of the
    communication overlaps computation, and the exposed communication and memory time.
    On a multi-rank job graph without --rank: every rank kept in full, one row per rank,
    window and device. On a job's rank traces (a directory or a glob): each rank in its
    own pool process or Dask task."""
    from opgraph.analysis.overlap import comm_overlap
    from opgraph.commands.window_option import check_window, window_errors
    from opgraph.export.text.results import render_overlap

    if is_multirank_input([input]) or scheduler:  # a job's rank traces: one task per rank
        with window_errors(input, "--window"):
            per_rank_command(input, comm_overlap, {"window": window}, csv_dir, as_json, "overlap.schema.json",
                             lambda res: res.to_dict(), lambda res, con: render_overlap(res.tables()["overlap"], con),
                             workers, scheduler, rank)
        return
    G = load_input(input, whole_job=True, rank=rank)
    if isinstance(G.graph.get("job"), dict):  # a job graph without --rank: every rank kept in full
        from opgraph.analysis.job_tables import each_kept_rank
        from opgraph.multirank import rank_subgraph

        from opgraph.graph.linking import COMM_KERNEL_PATTERN

        def one_rank(H):  # each rank's graph is made once
            check_window(H, input, window)
            return comm_overlap(H, window)
        with window_errors(input, "--window"):
            tables, results = each_kept_rank(G, one_rank, rank_subgraph)
        one = next(iter(results.values()), None)

        def doc() -> dict:
            from opgraph.analysis.display import json_records
            return {"window_mode": one.window_mode if one is not None else "steps",
                    "kernel_pattern_comm": COMM_KERNEL_PATTERN,
                    "rows": json_records(tables["overlap"]) if "overlap" in tables else []}
        emit_result(input, tables, csv_dir, as_json, doc, "overlap.schema.json",
                    lambda: render_overlap(tables["overlap"], console()))
        return
    check_window(G, input, window)
    with window_errors(input, "--window"):
        res = comm_overlap(G, window)
    tables = res.tables()
    emit_result(input, tables, csv_dir, as_json, res.to_dict, "overlap.schema.json",
                lambda: render_overlap(tables["overlap"], console()))
