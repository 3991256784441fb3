"""``opgraph memory-bw``: bytes, time and bandwidth of memory copies and sets
(opgraph/analysis/memory_bw.py, docs/memory-bw.md)."""

from __future__ import annotations

import click

from opgraph.commands.base import console, is_multirank_input, multirank_options, per_rank_command
from opgraph.commands.base import emit_result, load_input, rank_option
from opgraph.table_options import TableFiles, table_file_options


@click.command("memory-bw")
@rank_option
@click.argument("input", type=str)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (schemas/memory-bw.schema.json).")
@table_file_options
@multirank_options
def memory_bw_cmd(input: str, as_json: bool, csv_dir: TableFiles | None, rank: int | None = None,
                  scheduler: str | None = None, workers: int | None = None) -> None:
    """Memory copies and sets per device and kind: count, bytes, time and GB/s (from the
    exact durations the profiler's own bandwidth argument gives, not the µs-rounded ones)."""
    from opgraph.analysis.memory_bw import memory_bandwidth

    from opgraph.export.text.memory import render_memory_bw

    if is_multirank_input([input]) or scheduler:  # a job's rank traces: one task per rank
        per_rank_command(input, memory_bandwidth, {}, csv_dir, as_json, "memory-bw.schema.json",
                         lambda res: res.to_dict(),
                         lambda res, con: render_memory_bw(res.to_frame(), con), workers, scheduler, rank)
        return
    res = memory_bandwidth(load_input(input, rank=rank))
    emit_result(input, res.tables, csv_dir, as_json, res.to_dict, "memory-bw.schema.json",
                lambda: render_memory_bw(res.to_frame(), console()))
