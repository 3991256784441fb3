"""``opgraph shapes``: GEMM, attention and convolution calls grouped by problem size, with
their achieved TFLOP/s and % of peak (opgraph/analysis/shapes.py, docs/shapes.md)."""

from __future__ import annotations

import click

from opgraph.commands.base import console
from opgraph.commands.base import emit_result, load_input, rank_option, warn_unknown_devices
from opgraph.device_options import device_file_option, device_option, dtype_option
from opgraph.table_options import TableFiles, table_file_options

_FAMILIES = ("gemm", "attention", "conv")


@click.command("shapes")
@rank_option
@click.argument("input", type=str)
@click.option("--family", "families", type=click.Choice(_FAMILIES), multiple=True,
              help="Only this family (repeatable; default: gemm, attention and conv).")
@click.option("--top", type=click.IntRange(min=1), default=None,
              help="Rows per family (default: 20 in the terminal, all with --json/--csv).")
@device_option
@device_file_option
@dtype_option
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (schemas/shapes.schema.json).")
@table_file_options
def shapes_cmd(input: str, families: tuple[str, ...], top: int | None, device: str | None, dtype: str | None,
               as_json: bool, csv_dir: TableFiles | None, rank: int | None = None) -> None:
    """Shape tables: one row per GEMM / attention / convolution problem size (op, input
    shapes, dtype, M N K or B H Sq Sk D or N C H W K R S) with count, kernel time, FLOPs per
    call, achieved TFLOP/s and % of peak, TB/s, arithmetic intensity, bound and the share of
    the family's GPU time."""
    from opgraph.analysis.shapes import shapes
    from opgraph.errors import OpgraphInputError
    from opgraph.export.text.shapes import render_shapes

    fams = tuple(f for f in _FAMILIES if f in families) if families else _FAMILIES
    try:
        res = shapes(load_input(input, rank=rank), device=device, dtype=dtype)
    except ValueError as e:
        raise OpgraphInputError(input, str(e)) from None
    warn_unknown_devices(input, res.devices)
    tables = {f: (t.head(top) if top is not None else t) for f, t in res.tables().items() if f in fams}
    emit_result(input, tables, csv_dir, as_json, lambda: res.to_dict(top, fams), "shapes.schema.json",
                lambda: render_shapes(res, console(), fams, top or 20))
