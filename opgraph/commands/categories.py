"""``opgraph categories``: GPU time by operation category and kernel type
(opgraph/analysis/categories.py, docs/categories.md)."""

from __future__ import annotations

import click

from opgraph.commands.base import console, is_multirank_input, multirank_options, per_rank_command
from opgraph.commands.base import emit_result, load_input, rank_option
from opgraph.table_options import TableFiles, table_file_options


@click.command("categories")
@rank_option
@click.argument("input", type=str)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (schemas/categories.schema.json).")
@table_file_options
@multirank_options
def categories_cmd(input: str, as_json: bool, csv_dir: TableFiles | None, rank: int | None = None,
                   scheduler: str | None = None, workers: int | None = None) -> None:
    """GPU time by operation category (GEMM, conv, attention, norm, reduction, elementwise,
    embedding, copy, communication, memcpy/memset, other) and by kernel type."""
    from opgraph.analysis.categories import gpu_categories

    from opgraph.export.text.categories import render_categories

    if is_multirank_input([input]) or scheduler:  # a job's rank traces: one task per rank
        per_rank_command(input, gpu_categories, {}, csv_dir, as_json, "categories.schema.json",
                         lambda res: res.to_dict(),
                         lambda res, con: render_categories(res.tables(), con),
                         workers, scheduler, rank)
        return
    res = gpu_categories(load_input(input, rank=rank))
    tables = res.tables()
    emit_result(input, tables, csv_dir, as_json, res.to_dict, "categories.schema.json",
                lambda: render_categories(tables, console()))
