"""``opgraph kernels``: per-kernel launch statistics, occupancy and tensor-core use
(opgraph/analysis/kernel_stats.py, docs/kernel-stats.md)."""

from __future__ import annotations

import click

from opgraph.commands.base import console, is_multirank_input, multirank_options, per_rank_command
from opgraph.commands.base import emit_result, load_input, rank_option
from opgraph.table_options import TableFiles, table_file_options


@click.command("kernels")
@rank_option
@click.argument("input", type=str)
@click.option("--top", type=click.IntRange(min=1), default=20, show_default=True,
              help="Kernel names shown in the terminal (--json/--csv: all).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (schemas/kernel-stats.schema.json).")
@table_file_options
@multirank_options
def kernels_cmd(input: str, top: int, as_json: bool, csv_dir: TableFiles | None, rank: int | None = None,
                scheduler: str | None = None, workers: int | None = None) -> None:
    """Per kernel name: count, time, launch shape, registers, shared memory, blocks per SM,
    estimated achieved occupancy and tensor-core use (the TensorBoard plugin's kernel view)."""
    from opgraph.analysis.kernel_stats import kernel_stats
    from opgraph.export.text.kernel_stats import render_kernel_stats

    if is_multirank_input([input]) or scheduler:  # a job's rank traces: one task per rank
        per_rank_command(input, kernel_stats, {}, csv_dir, as_json, "kernel-stats.schema.json",
                         lambda res: res.to_dict(),
                         lambda res, con: render_kernel_stats(res.to_dict(), con, top),
                         workers, scheduler, rank)
        return
    res = kernel_stats(load_input(input, rank=rank))
    emit_result(input, res.tables, csv_dir, as_json, res.to_dict, "kernel-stats.schema.json",
                lambda: render_kernel_stats(res.to_dict(), console(), top))
