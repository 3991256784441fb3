"""``opgraph nvtx``: per NVTX range name, count, CPU time and GPU projection (like nsys's
``nvtx_gpu_proj_sum``; :mod:`opgraph.analysis.nvtx`); ``opgraph enqueue-stats``:
per-kernel OpenCL enqueue stages (:mod:`opgraph.analysis.enqueue_stats`)."""

from __future__ import annotations

import click
import pandas as pd

from opgraph.commands.base import emit_result, load_input, rank_option
from opgraph.emit import emit_json
from opgraph.commands.base import console
from opgraph.table_options import TableFiles, table_file_options, write_frames


@click.command("nvtx")
@rank_option
@click.argument("input", type=click.Path(dir_okay=False))
@click.option("--step-regex", default=None, metavar="REGEX",
              help="Ranges listed as iterations (default: the steps, ProfilerStep#N else NVTX 'Iteration N'); "
                   "one that matches nothing exits 2.")
@click.option("--top", type=click.IntRange(min=1), default=30, show_default=True, help="Range names shown.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (schemas/nvtx.schema.json).")
@click.option("--format", "fmt", default=None, help="Force the input format of a raw trace.")
@table_file_options
def nvtx_cmd(input: str, step_regex: str | None, top: int, as_json: bool, fmt: str | None,
             csv_dir: TableFiles | None, rank: int | None = None) -> None:
    """Per NVTX range name: count, CPU time and GPU projection (nvtx_gpu_proj_sum).

    A kernel belongs to a range when its launching API call lies inside the range on the
    same thread (never by GPU time)."""
    from opgraph.analysis.nvtx import nvtx_summary
    from opgraph.commands.iterations import check_regex
    from opgraph.commands.window_option import window_errors

    check_regex(step_regex)
    G = load_input(input, fmt, rank=rank)
    with window_errors(input, "--step-regex"):
        doc = nvtx_summary(G, step_regex)
    if csv_dir is not None:
        write_frames({"nvtx_ranges": pd.DataFrame(doc["ranges"]), "nvtx_iterations": pd.DataFrame(doc["iterations"])},
                     csv_dir, input)
    if as_json:
        emit_json(doc, "nvtx.schema.json")
    elif csv_dir is None:
        from opgraph.export.text.nvtx import render_nvtx
        render_nvtx(doc, top, console())


@click.command("enqueue-stats")
@rank_option
@click.argument("input", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (schemas/enqueue-stats.schema.json).")
@click.option("--format", "fmt", default=None, help="Force the input format of a raw trace.")
@table_file_options
def enqueue_stats_cmd(input: str, as_json: bool, fmt: str | None, csv_dir: TableFiles | None,
                      rank: int | None = None) -> None:
    """OpenCL (dv/dt) per-kernel enqueue stages: queued→submit, submit→start, execution
    and host overhead, per enqueue and per kernel name."""
    from opgraph.analysis.enqueue_stats import enqueue_report
    from opgraph.export.text.nvtx import render_enqueue_stats

    res = enqueue_report(load_input(input, fmt, rank=rank))
    emit_result(input, res.tables, csv_dir, as_json, res.to_dict, "enqueue-stats.schema.json",
                lambda: render_enqueue_stats(res.to_dict(), console()))
