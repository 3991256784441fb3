"""``opgraph launch-stats``: launch call time, launch delay split into queueing and
latency, outliers and the short-kernel study (opgraph/analysis/launch_stats.py)."""

from __future__ import annotations

import click

from opgraph.commands.base import console, is_multirank_input, multirank_options, per_rank_command
from opgraph.commands.base import emit_result, load_input, rank_option
from opgraph.table_options import TableFiles, table_file_options


@click.command("launch-stats")
@rank_option
@click.argument("input", type=str)
@click.option("--call-cutoff-us", type=click.FloatRange(min=0, max=1e9), default=50.0, show_default=True,
              help="Launch calls longer than this are outliers.")
@click.option("--latency-cutoff-us", type=click.FloatRange(min=0, max=1e9), default=100.0, show_default=True,
              help="Launch latencies (stream free, activity not started) longer than this are outliers.")
@click.option("--top", type=click.IntRange(min=1), default=10, show_default=True, help="Rows per table.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (schemas/launch-stats.schema.json).")
@table_file_options
@multirank_options
def launch_stats_cmd(input: str, call_cutoff_us: float, latency_cutoff_us: float, top: int, as_json: bool,
                     csv_dir: TableFiles | None, rank: int | None = None,
                     scheduler: str | None = None, workers: int | None = None) -> None:
    """Kernel launches: call time, delay after the call (queueing behind earlier work vs
    launch latency), outliers, and kernels shorter than their own launch call."""
    from opgraph.analysis.launch_stats import launch_stats

    from opgraph.export.text.launch import render_launch_stats

    if is_multirank_input([input]) or scheduler:  # a job's rank traces: one task per rank
        per_rank_command(input, launch_stats, {"call_cutoff_us": call_cutoff_us, "latency_cutoff_us": latency_cutoff_us}, csv_dir, as_json, "launch-stats.schema.json",
                         lambda res: res.to_dict(top),
                         lambda res, con: render_launch_stats(res.tables(), con, top),
                         workers, scheduler, rank)
        return
    res = launch_stats(load_input(input, rank=rank), call_cutoff_us, latency_cutoff_us)
    tables = res.tables()
    emit_result(input, tables, csv_dir, as_json, lambda: res.to_dict(top), "launch-stats.schema.json",
                lambda: render_launch_stats(tables, console(), top))
