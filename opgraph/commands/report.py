"""``opgraph report``: the roofline table per kernel or op, or with ``--html`` the
one-file HTML report (docs/roofline.md, docs/pictures.md)."""

from __future__ import annotations

import click

from opgraph.commands.base import load_input, rank_option, warn_unknown_devices
from opgraph.device_options import device_file_option, device_option, dtype_option
from opgraph.emit import emit_json
from opgraph.errors import OpgraphInputError
from opgraph.commands.base import console
from opgraph.table_options import TableFiles, table_file_options, write_frames


@click.command()
@rank_option
@click.argument("input", type=str)
@click.option("--by", type=click.Choice(["kernel", "op"]), default="kernel", show_default=True,
              help="One row per kernel name or per op name.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (schemas/report.schema.json).")
@table_file_options
@device_option
@device_file_option
@dtype_option
@click.option("--top", default=None, type=click.IntRange(min=1), help="Rows shown (default: 30 in the terminal, all with --json/--csv).")
@click.option("--html", "html", default=None, metavar="PATH", type=click.Path(dir_okay=False),
              help="Write the one-file interactive HTML report (summary, critical path, idle, breakdowns, "
                   "roofline, overheads, trace health; docs/pictures.md). Opens offline.")
@click.option("--batch-size", "batch_size", default=None, type=click.IntRange(min=1),
              help="With --html: samples per step, for the report's QPS card.")
def report(input: str, by: str, as_json: bool, csv_dir: TableFiles | None, device: str | None, dtype: str | None,
           top: int | None, html: str | None = None, batch_size: int | None = None, rank: int | None = None) -> None:
    """Roofline table of INPUT: count, time, FLOPs, bytes, achieved TFLOP/s and GB/s, % of
    peak and the bound (compute/memory) per kernel or op.

    With --html PATH: the one-file HTML report instead (with --json or --csv as well, the
    table is also written as asked)."""
    from opgraph.analysis.roofline import group_table, report_doc, roofline

    if html is None and batch_size is not None:
        raise click.UsageError("--batch-size goes with --html (it sets the report's QPS)")
    if html is not None:
        from opgraph.commands.report_html import write_html

        write_html(input, html, batch_size, device, dtype, rank)
        if not as_json and csv_dir is None:
            return

    G = load_input(input, rank=rank)
    try:
        res = roofline(G, device=device, dtype=dtype)
    except ValueError as e:
        raise OpgraphInputError(input, str(e)) from None
    if as_json or csv_dir is not None:  # the terminal report says it in its devices lines
        warn_unknown_devices(input, [d.to_dict() for d in res.devices.values()])
    if csv_dir is not None:
        tab = group_table(res, by)
        if top is not None:
            tab = tab.head(top)
        write_frames({f"report_{by}": tab}, csv_dir, input)
        if not as_json:
            return
    doc = report_doc(res, by, top if as_json else None)
    if as_json:
        emit_json(doc, "report.schema.json")
        return
    from opgraph.export.text.report import render_roofline_report

    render_roofline_report(doc, console(), top or 30, graph_replays=bool(G.graph.get("graph_replay")))
