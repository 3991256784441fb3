"""``opgraph breakdown``: host (CPU op hierarchy) or device (per stream) time breakdown."""

from __future__ import annotations

import click

from opgraph.emit import emit_json
from opgraph.commands.base import load_input, rank_option
from opgraph.commands.base import console
from opgraph.commands.iterations import (
    check_regex, markers, output_options, window_options,
)
from opgraph.table_options import TableFiles, write_frames


@click.command()
@rank_option
@click.argument("input", type=str)
@click.option("--host", "mode", flag_value="host", default=True, help="CPU op hierarchy per thread (default).")
@click.option("--device", "mode", flag_value="device", help="Per device and stream: active/idle, CPU op → kernel tree.")
@click.option("--depth", type=click.IntRange(min=1), default=3, show_default=True, help="Levels shown.")
@click.option("--top", type=click.IntRange(min=1), default=None,
              help="Entries shown per parent, the rest lumped as Others (default 5 host, 10 device).")
@click.option("--shapes", type=click.IntRange(min=0), default=3, show_default=True,
              help="Distinct input shapes listed per host entry (all are counted).")
@click.option("--top-ops", type=click.IntRange(min=1), default=20, show_default=True,
              help="Rows of the per-op device table printed (JSON/CSV hold all).")
@click.option("--python", "with_python", is_flag=True,
              help="Keep python_function frames in the hierarchy (default: CPU ops, annotations and "
                   "runtime calls, re-nested among themselves).")
@click.option("--whole-trace", is_flag=True, help="Analyse the whole trace, not just the steps' span.")
@window_options
@output_options
def breakdown(input: str, mode: str, depth: int, top: int | None, shapes: int, top_ops: int, with_python: bool,
              whole_trace: bool,
              step_regex: str | None, data_marker: tuple[str, ...], no_data_markers: bool, fmt: str | None,
              as_json: bool, csv_dir: TableFiles | None, rank: int | None = None) -> None:
    """Where the time goes in INPUT, on the host (--host) or the device (--device).

    Entries are aggregated by name path over all occurrences; at every level the children,
    Others and Unaccounted sum to 100 % of their parent. Data loading (DataLoader markers)
    is reported apart and excluded from the host step time."""
    from opgraph.analysis.device_breakdown import device_breakdown, device_breakdown_doc
    from opgraph.analysis.host_breakdown import host_breakdown, host_breakdown_doc
    from opgraph.analysis.window import analysis_window
    from opgraph.analysis.graph_frame import graph_frame
    from opgraph.commands.window_option import window_errors

    check_regex(step_regex)
    G = load_input(input, fmt, rank=rank)
    f = graph_frame(G)
    with window_errors(input, "--step-regex"):
        w = analysis_window(f, step_regex, markers(data_marker, no_data_markers), use_steps=not whole_trace)
    if mode == "device":
        doc = device_breakdown_doc(device_breakdown(f, w, include_python=with_python), depth, top or 10)
    else:
        doc = host_breakdown_doc(host_breakdown(f, w, include_python=with_python), depth, top or 5, shapes)
    if csv_dir is not None:
        from opgraph.export.tables.documents import breakdown_frames
        write_frames(breakdown_frames(doc), csv_dir, input)
    if as_json:
        emit_json(doc, "breakdown.schema.json")
    elif csv_dir is None:
        from opgraph.export.tables.documents import render_device_breakdown, render_host_breakdown
        if mode == "device":
            render_device_breakdown(doc, console(), top_ops)
        else:
            render_host_breakdown(doc, console())
