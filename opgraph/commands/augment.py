"""``opgraph augment``: the trace written back with FLOPs, bytes and roofline args
(:func:`opgraph.pipelines.augment_file`; docs/roofline.md)."""

from __future__ import annotations

import os

import click

from opgraph.device_options import device_file_option, device_option, dtype_option
from opgraph.emit import emit_json
from opgraph.json_option import json_flag, output_entry, outputs_doc


@click.command()
@click.argument("trace", type=str)
@click.option("-o", "--output", required=True, type=str,
              help="The augmented trace: .json or .json.gz (Chrome/Perfetto trace JSON).")
@device_option
@device_file_option
@dtype_option
@click.option("--format", "fmt", default=None, help="Force the input format of a raw trace.")
@json_flag
def augment(trace: str, output: str, device: str | None, dtype: str | None, fmt: str | None,
            as_json: bool = False) -> None:
    """Write TRACE back out with FLOPs, bytes and roofline args on ops and kernels.

    Every original event is written unchanged; ops and kernels with a cost model gain
    kernel_flop, kernel_num_gb, achieved_tflops, achieved_gbps, pct_peak_flops,
    pct_peak_bw, arithmetic_intensity and roofline_bound."""
    from opgraph.export.text.console import clean
    from opgraph.pipelines import augment_file
    from opgraph.progress import BUILD_PHASES, phase_progress

    phases = tuple(p for p in BUILD_PHASES if p != "save") + ("roofline", "write")
    with phase_progress(f"augmenting {os.path.basename(trace)}", phases) as step:
        res = augment_file(trace, output, fmt=fmt, device=device, dtype=dtype, step=step)
    click.echo(res.message, err=True)
    for line in res.notes:
        click.echo(clean(line), err=True)
    if as_json:
        emit_json(outputs_doc("augment", (trace,), [output_entry(output, "chrome trace", res.message)], res.counts),
                  "outputs.schema.json")
