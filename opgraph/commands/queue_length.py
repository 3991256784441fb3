"""``opgraph queue``: queue length per stream over time (opgraph/analysis/queue_length.py,
docs/queue-length.md)."""

from __future__ import annotations

import click

from opgraph.commands.base import console, is_multirank_input, multirank_options, per_rank_command
from opgraph.commands.base import emit_result, load_input, rank_option
from opgraph.table_options import TableFiles, table_file_options


@click.command("queue")
@rank_option
@click.argument("input", type=str)
@click.option("--limit", type=click.IntRange(min=1, max=1 << 30), default=1024, show_default=True,
              help="Queue length at which launches block the host (CUDA's launch queue depth).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (schemas/queue-length.schema.json).")
@table_file_options
@multirank_options
def queue_cmd(input: str, limit: int, as_json: bool, csv_dir: TableFiles | None, rank: int | None = None,
              scheduler: str | None = None, workers: int | None = None) -> None:
    """Per stream: how many launched activities wait or run, over time (max, time-weighted
    mean, p50, p90) and how long the queue sat at its limit."""
    from opgraph.analysis.queue_length import queue_length

    from opgraph.export.text.queue import render_queue_length

    if is_multirank_input([input]) or scheduler:  # a job's rank traces: one task per rank
        per_rank_command(input, queue_length, {"limit": limit}, csv_dir, as_json, "queue-length.schema.json",
                         lambda res: res.to_dict(),
                         lambda res, con: render_queue_length(res.to_frame(), con),
                         workers, scheduler, rank)
        return
    res = queue_length(load_input(input, rank=rank), limit)
    emit_result(input, res.tables, csv_dir, as_json, res.to_dict, "queue-length.schema.json",
                lambda: render_queue_length(res.to_frame(), console()))
