"""``opgraph kernel-models``: build the measured kernel models of ET-driven prediction
(lookup table, roofline calibration) from a profiled trace (docs/predict.md)."""

from __future__ import annotations

import click

from opgraph.commands.base import load_input, rank_option
from opgraph.device_options import device_file_option
from opgraph.json_option import json_flag, output_entry, outputs_doc
from opgraph.errors import OpgraphInputError


@click.command("kernel-models")
@rank_option
@click.argument("input", type=str)
@click.option("--lookup", "lookup", default=None, metavar="OUT.json",
              help="Write the measured lookup table (op name + shapes -> kernels and mean durations).")
@click.option("--calibration", "calibration", default=None, metavar="OUT.json",
              help="Write the per-op-class roofline calibration.")
@click.option("--device", default=None, metavar="NAME",
              help="The trace's GPU when its deviceProperties do not identify it (roofline peaks).")
@device_file_option
@json_flag
@click.option("--step-regex", "step_regex", default=None,
              help="Steps as in `opgraph overheads` (default ProfilerStep#N); one that matches nothing exits 2.")
@click.option("--job", "job", default=None, metavar="JOB.gpickle",
              help="The multi-rank job graph INPUT is a rank of (`opgraph build DIR -o JOB`, matched by the "
                   "file's sha256): remove from INPUT's collective kernels the time they waited for the other "
                   "ranks, so the tables hold this rank's own transfer times.")
def kernel_models_cmd(input: str, lookup: str | None, calibration: str | None, device: str | None,
                      step_regex: str | None, job: str | None, as_json: bool = False, rank: int | None = None) -> None:
    """Measure INPUT's kernel models for `opgraph predict --et`: per top-level op (as
    `opgraph overheads` selects them), the kernels it launched with their mean durations,
    launch-API host costs, the gap before each op, and a roofline fit per op class."""
    import re

    from opgraph.analysis.overheads import OverheadParams
    from opgraph.commands.window_option import window_errors
    from opgraph.outfiles import check_output_path
    from opgraph.predict.kernel_models import device_peaks, write_json_file
    from opgraph.predict.kernel_model_build import build_calibration, build_lookup, profile_ops

    if lookup is None and calibration is None:
        raise OpgraphInputError("kernel-models", "nothing to write: give --lookup OUT and/or --calibration OUT")
    for out in (lookup, calibration):
        if out is not None and not out.endswith(".json"):
            raise OpgraphInputError(out, "output must be a .json file")
        if out is not None:
            check_output_path(out, (input,) + ((job,) if job else ()))
    if step_regex is not None:
        try:
            re.compile(step_regex)
        except re.error as e:
            raise OpgraphInputError("--step-regex", f"invalid regex {step_regex!r}: {e}") from None
    if device is not None and device_peaks(device) is None:
        raise OpgraphInputError("--device", f"unknown device {device!r} (see `opgraph devices`)")
    G = load_input(input, rank=rank)
    waits = None
    if job is not None:
        from opgraph.analysis.stragglers import rank_comm_waits

        J = load_input(job, job_ok=True, rank=rank)
        src = G.graph.get("source") if isinstance(G.graph.get("source"), dict) else {}
        try:
            rank, waits = rank_comm_waits(J, sha256=src.get("sha256"))
        except ValueError as e:
            raise OpgraphInputError(job, str(e)) from None
        click.echo(f"{input} is rank {rank} of {job}: {len(waits)} collective kernels, "
                   f"{sum(waits.values()) / 1e3:,.1f} us of cross-rank wait removed", err=True)
    with window_errors(input, "--step-regex"):
        po = profile_ops(G, OverheadParams(step_regex=step_regex), comm_waits=waits)
    if not len(po.ops):
        raise OpgraphInputError(input, "no top-level CPU ops in the analysis window: nothing to measure")
    written: list[dict] = []
    if lookup is not None:
        lk = build_lookup(G, po=po, device=device)
        write_json_file(lk.to_dict(), lookup, "kernel-lookup.schema.json", inputs=(input,))
        msg = f"wrote {lookup}: {len(lk.entries)} op/shape entries, {len(lk.by_name)} op names, streams {lk.streams}"
        click.echo(msg, err=True)
        written.append(output_entry(lookup, "kernel lookup", msg))
    if calibration is not None:
        try:
            cal = build_calibration(G, device=device, po=po)
        except ValueError as e:
            raise OpgraphInputError(input, str(e)) from None
        write_json_file(cal.to_dict(), calibration, "roofline-calibration.schema.json", inputs=(input,))
        msg = f"wrote {calibration}: {cal.device}, classes " + ", ".join(
            f"{c} (n={f.n})" for c, f in sorted(cal.classes.items()))
        click.echo(msg, err=True)
        written.append(output_entry(calibration, "roofline calibration", msg))
    if as_json:
        from opgraph.emit import emit_json
        emit_json(outputs_doc("kernel-models", (input,) + ((job,) if job else ()), written,
                              {"ops": int(len(po.ops))}), "outputs.schema.json")
