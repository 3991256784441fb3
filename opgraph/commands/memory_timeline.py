"""``opgraph memory``: allocated / reserved memory over time per device, peaks per step,
and the ops that allocate (opgraph/analysis/memory_timeline.py, docs/memory-timeline.md)."""

from __future__ import annotations

import click

from opgraph.commands.base import console
from opgraph.commands.base import emit_result, load_input, rank_option
from opgraph.table_options import TableFiles, table_file_options


@click.command("memory")
@rank_option
@click.argument("input", type=str)
@click.option("--window", default=None, metavar="REGEX|all",
              help="Steps for the per-step peaks: default the ProfilerStep windows; 'all' for none; or a regex "
                   "naming ranges.")
@click.option("--top", type=click.IntRange(min=1), default=10, show_default=True,
              help="Rows of the allocator and live-at-peak tables per device (terminal output only).")
@click.option("--series", "with_series", is_flag=True,
              help="With --json: include the per-event series (allocated and reserved after each event).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (schemas/memory-timeline.schema.json).")
@table_file_options
def memory_cmd(input: str, window: str | None, top: int, with_series: bool, as_json: bool,
               csv_dir: TableFiles | None, rank: int | None = None) -> None:
    """Per device: allocated and reserved memory over time from the profiler's [memory]
    events, the peaks per step and over the trace, the ops that allocate most, and what is
    live at the peak."""
    from opgraph.analysis.memory_timeline import memory_timeline
    from opgraph.commands.window_option import check_window, window_errors
    from opgraph.export.text.memory_timeline import render_memory_timeline

    G = load_input(input, rank=rank)
    check_window(G, input, window)
    with window_errors(input, "--window"):
        res = memory_timeline(G, window)
    emit_result(input, res.tables, csv_dir, as_json, lambda: res.to_dict(series=with_series),
                "memory-timeline.schema.json", lambda: render_memory_timeline(res, console(), top))
