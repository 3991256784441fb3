"""``opgraph sequences``: repeated kernel sequences, candidates for fusion or a CUDA graph
(opgraph/analysis/sequences.py, docs/sequences.md)."""

from __future__ import annotations

import re

import click

from opgraph.commands.base import console
from opgraph.commands.base import emit_result, load_input, rank_option
from opgraph.errors import OpgraphInputError
from opgraph.table_options import TableFiles, table_file_options


@click.command("sequences")
@rank_option
@click.argument("input", type=str)
@click.option("--op", default=None, metavar="REGEX",
              help="Only kernels launched inside ops matching REGEX, one sequence per op call (HTA's view).")
@click.option("--min-length", type=click.IntRange(min=2, max=64), default=3, show_default=True,
              help="Shortest pattern (kernels).")
@click.option("--max-length", type=click.IntRange(min=2, max=64), default=8, show_default=True,
              help="Longest pattern (kernels).")
@click.option("--top", type=click.IntRange(min=1, max=1000), default=10, show_default=True, help="Patterns kept.")
@click.option("--whole-calls", is_flag=True,
              help="With --op: each call's whole kernel sequence is one pattern, identical ones counted (HTA's "
                   "frequent CUDA kernel sequences).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (schemas/sequences.schema.json).")
@table_file_options
def sequences_cmd(input: str, op: str | None, min_length: int, max_length: int, top: int, whole_calls: bool,
                  as_json: bool, csv_dir: TableFiles | None, rank: int | None = None) -> None:
    """Runs of consecutive kernels on a stream that repeat, most GPU time first: where
    fusing kernels or capturing a CUDA graph would pay."""
    from opgraph.analysis.sequences import kernel_sequences
    from opgraph.export.text.sequences import render_sequences

    if whole_calls and op is None:
        raise OpgraphInputError(input, "--whole-calls needs --op (the op whose calls are the patterns)")
    if max_length < min_length:
        raise OpgraphInputError(input, f"--max-length {max_length} is below --min-length {min_length}")
    if op is not None:
        try:
            re.compile(op)
        except re.error as e:
            raise OpgraphInputError(input, f"--op {op!r}: not a regular expression ({e})") from None
    res = kernel_sequences(load_input(input, rank=rank), op, min_length, max_length, top, whole_calls)
    emit_result(input, res.tables, csv_dir, as_json, res.to_dict, "sequences.schema.json",
                lambda: render_sequences(res.to_dict(), console()))
