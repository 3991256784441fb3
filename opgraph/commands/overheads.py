"""``opgraph overheads``: CPU overheads T1-T5 (schemas/overheads.schema.json)."""

from __future__ import annotations

import click
import orjson

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
@click.option("-o", "--output", type=str, default=None,
              help="Write the overheads JSON here (validated by schemas/overheads.schema.json).")
@click.option("--by-shapes", is_flag=True, help="Also split every op's statistics by input shapes.")
@click.option("--t1-max-gap-us", type=float, default=200.0, show_default=True,
              help="T1 counts gaps between consecutive ops shorter than this (µs).")
@click.option("--t1-min-gap-us", type=float, default=None, help="Optional lower bound for T1 gaps (µs).")
@click.option("--launch-api", "launch_api", multiple=True, metavar="NAME",
              help="Runtime calls counted as launches (repeatable). Default: cudaLaunchKernel, "
                   "cudaMemcpyAsync, cudaStreamSynchronize and their HIP twins.")
@click.option("--module-marker", "module_marker", multiple=True, metavar="PREFIX",
              help="Name prefixes of label ranges that are not ops (repeatable). Default: '## ', '__', "
                   "'module::', 'nn.Module: ', 'DLRM ', 'DistributedDataParallel'.")
@click.option("--drop-outliers", "drop_outliers", type=click.Choice(["none", "iqr"]), default="none", show_default=True,
              help="Drop outliers from every sample list before its statistics: iqr = outside 1.5 x IQR "
                   "(the seed's HEAD); the statistics then also give median and dropped.")
@click.option("--top", type=click.IntRange(min=1), default=20, show_default=True, help="Ops shown in the table.")
@click.option("--whole-trace", is_flag=True, help="Analyse the whole trace, not just the steps' span.")
@window_options
@output_options
def overheads(input: str, output: str | None, by_shapes: bool, t1_max_gap_us: float, t1_min_gap_us: float | None,
              launch_api: tuple[str, ...], module_marker: tuple[str, ...], drop_outliers: str, top: int, whole_trace: bool,
              step_regex: str | None, data_marker: tuple[str, ...], no_data_markers: bool, fmt: str | None,
              as_json: bool, csv_dir: TableFiles | None, rank: int | None = None) -> None:
    """CPU overheads of INPUT: T1 (between ops), T2 (op start → first launch), T3 (last
    launch → op end), T4 (launch call, per API), T5 (between launches), and the durations
    of ops that launch nothing (taken whole). Mean, std and n in µs."""
    from opgraph.analysis.op_hierarchy import DEFAULT_MODULE_MARKERS
    from opgraph.analysis.window import analysis_window
    from opgraph.analysis.graph_frame import graph_frame
    from opgraph.analysis.overheads import DEFAULT_LAUNCH_APIS, OverheadParams, overhead_samples, overheads_doc
    from opgraph.commands.window_option import window_errors

    check_regex(step_regex)
    if output:
        from opgraph.outfiles import check_output_path
        check_output_path(output, (input,))  # before any work
    p = OverheadParams(t1_max_gap_us=t1_max_gap_us, t1_min_gap_us=t1_min_gap_us,
                       launch_apis=tuple(launch_api) or DEFAULT_LAUNCH_APIS,
                       module_markers=tuple(module_marker) or DEFAULT_MODULE_MARKERS,
                       data_markers=markers(data_marker, no_data_markers), step_regex=step_regex,
                       drop_outliers=None if drop_outliers == "none" else drop_outliers)
    G = load_input(input, fmt, rank=rank)
    f = graph_frame(G)
    with window_errors(input, "--step-regex"):
        w = analysis_window(f, step_regex, p.data_markers, use_steps=not whole_trace)
    samples = overhead_samples(f, p, w, with_shapes=by_shapes or csv_dir is not None)
    doc = overheads_doc(f, p, by_shapes, samples)
    if output:
        from opgraph.schemas_util import check_output
        check_output(doc, "overheads.schema.json")
        from opgraph.outfiles import write_atomic
        write_atomic(output, orjson.dumps(doc, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS), (input,))
        click.echo(f"wrote {output}: {len(doc['ops'])} ops, T1 n={doc['t1']['n'] if doc['t1'] else 0}", err=True)
    if csv_dir is not None:
        from opgraph.export.tables.documents import overheads_frames
        raw = samples[0].drop(columns="pos").assign(time_us=lambda d: d["ns"] / 1e3).drop(columns="ns")
        write_frames({**overheads_frames(doc), "overhead_samples": raw}, csv_dir, input)
    if as_json:
        emit_json(doc, "overheads.schema.json")
    elif csv_dir is None:
        from opgraph.export.tables.documents import render_overheads
        render_overheads(doc, console(), top)
