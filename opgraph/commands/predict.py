"""``opgraph predict``: replay and what-if prediction (docs/predict.md)."""

from __future__ import annotations

import re

import click

from opgraph.emit import emit_json
from opgraph.commands.base import console
from opgraph.commands.base import load_input, rank_option
from opgraph.device_options import device_file_option
from opgraph.table_options import TableFiles, table_file_options, write_frames
from opgraph.errors import OpgraphInputError


@click.command("predict")
@rank_option
@click.argument("input", type=str, required=False)
@click.option("--et", "et", default=None, metavar="ET.json",
              help="ET-driven prediction: simulate this PyTorch execution trace (needs --overheads and --device).")
@click.option("--overheads", "overheads", default=None, metavar="FILE",
              help="With --et: the overheads JSON of a profiled run (`opgraph overheads TRACE -o FILE --by-shapes`).")
@click.option("--lookup", "lookup", default=None, metavar="FILE",
              help="With --et: measured kernel lookup table (`opgraph kernel-models TRACE --lookup FILE`).")
@click.option("--calibration", "calibration", default=None, metavar="FILE",
              help="With --et: roofline calibration (`opgraph kernel-models TRACE --calibration FILE`).")
@click.option("--data-loading", "data_loading", type=click.Choice(["profile", "skip"]), default="profile",
              show_default=True, help="With --et: add the profile's data-loading time per step, or leave it out.")
@click.option("--hit-rate", "hit_rate", type=click.Choice(["all_rows", "per_row"]), default="all_rows",
              show_default=True, help="With --et: L2 hit rate of the analytic embedding forward model (seed: all_rows).")
@click.option("--gap-mode", "gap_mode", type=click.Choice(["measured", "t1"]), default="measured", show_default=True,
              help="With --et: host time between ops: the lookup's measured gap before each op, or T1 (the seed).")
@click.option("--replay", is_flag=True,
              help="Simulate the unmodified graph (the default when no transform is given).")
@click.option("--scale-kernels", "scale_kernels", multiple=True, metavar="REGEX=F",
              help="Device activities whose name matches REGEX take F times as long (repeatable).")
@click.option("--scale-cpu", "scale_cpu", multiple=True, metavar="REGEX=F",
              help="Host events whose name matches REGEX: exclusive time times F (repeatable).")
@click.option("--launch-overhead", "launch_overhead", default=None, metavar="T",
              help="Every launch API call takes T (e.g. 2us, 500ns, 0us).")
@click.option("--remove", "remove", multiple=True, metavar="REGEX",
              help="Drop host events whose name matches (with their children and kernels), and "
                   "device activities whose name matches; dependencies pass through (repeatable).")
@click.option("--device", default=None, metavar="NAME",
              help="Re-time kernels by roofline on this device ('H100 SXM'; see `opgraph devices`).")
@click.option("--source-device", "source_device", default=None, metavar="NAME",
              help="With --device: the trace's device when its deviceProperties do not identify it.")
@device_file_option
@click.option("--typical-latencies", "typical_latencies", is_flag=True,
              help="Replay with every binding latency (launch, kernel gap, sync return, ...) set to the "
                   "trace's median of its kind: the error shows how much the timeline rests on outliers.")
@click.option("--no-infer", "no_infer", is_flag=True,
              help="Use only the graph's edges (no inferred launch-queue, hand-off and cross-stream waits).")
@click.option("--window", default=None,
              help="Step windows as in critical-path: 'all', a regex (one that matches nothing exits 2), "
                   "default each step (ProfilerStep#N or NVTX 'Iteration N').")
@click.option("--perfetto", "perfetto", default=None, type=str, metavar="OUT",
              help="Write the predicted timeline as a Chrome/Perfetto trace (.json or .json.gz).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (schemas/predict.schema.json).")
@click.option("--path", "with_path", is_flag=True, help="With --json, include each step's predicted critical path.")
@table_file_options
def predict_cmd(input: str, replay: bool, scale_kernels: tuple[str, ...], scale_cpu: tuple[str, ...],
                launch_overhead: str | None, remove: tuple[str, ...], device: str | None,
                source_device: str | None, typical_latencies: bool, no_infer: bool, window: str | None,
                perfetto: str | None, as_json: bool, with_path: bool, et: str | None = None,
                overheads: str | None = None, lookup: str | None = None, calibration: str | None = None,
                data_loading: str = "profile", hit_rate: str = "all_rows", gap_mode: str = "measured",
                csv_dir: TableFiles | None = None, rank: int | None = None) -> None:
    """Replay INPUT's timeline from its dependency graph, or predict it under what-if
    transforms: per-step time, GPU busy/idle and critical-path composition, against the
    measured trace. With --et (no INPUT): predict an execution trace's iteration time from
    a profile's overheads and kernel models (docs/predict.md)."""
    from opgraph.commands.window_option import check_window
    from opgraph.predict.whatif import WhatIfError, parse_transforms
    from opgraph.predict.prediction import predict

    if et is not None:
        from opgraph.commands.predict_et import predict_et_command

        predict_et_command(input, et, overheads, device, lookup, calibration, data_loading, hit_rate, gap_mode, as_json,
                    bool(replay or scale_kernels or scale_cpu or launch_overhead or remove or source_device
                         or typical_latencies or no_infer or window or perfetto or with_path))
        return
    for opt, v in (("--overheads", overheads), ("--lookup", lookup), ("--calibration", calibration)):
        if v is not None:
            raise OpgraphInputError(opt, "only applies with --et")
    if input is None:
        raise OpgraphInputError("predict", "give a trace or graph to replay, or --et ET.json --overheads FILE --device NAME")

    try:
        transforms = parse_transforms(scale_kernels, scale_cpu, launch_overhead, remove, device, typical_latencies)
        if source_device is not None and device is None:
            raise WhatIfError("--source-device", "needs --device")
        if window not in (None, "all"):
            try:
                re.compile(window)
            except re.error as e:
                raise WhatIfError("--window", f"invalid regex {window!r}: {e}") from None
    except WhatIfError as e:
        raise OpgraphInputError(e.option, e.message) from None
    edits = [t for t in transforms if t.kind != "typical_latencies"]
    if replay and edits:
        raise OpgraphInputError("--replay", "simulates the unmodified graph; drop it to apply "
                                + ", ".join(t.describe() for t in edits))
    if perfetto is not None:
        if not (perfetto.endswith(".json") or perfetto.endswith(".json.gz")):
            raise OpgraphInputError(perfetto, "unknown output type: use .json or .json.gz")
        from opgraph.outfiles import check_output_path
        check_output_path(perfetto, (input,))  # not the input, not a folder or FIFO; folders are created
    G = load_input(input, rank=rank)
    check_window(G, input, window)
    try:
        res = predict(G, transforms, window=window, source_device=source_device, infer=not no_infer)
    except WhatIfError as e:
        raise OpgraphInputError(e.option, e.message) from None
    except ValueError as e:
        raise OpgraphInputError(input, str(e)) from None
    if perfetto is not None:
        if G.graph.get("events") is None:
            raise OpgraphInputError(input, "this graph carries no events table; --perfetto needs one")
        from opgraph.export.perfetto.predicted import write_predicted_trace
        write_predicted_trace(G, res.arr_pred, res.removed, perfetto,
                              {"mode": res.mode, "transforms": [t.to_dict() for t in res.transforms],
                               "source": G.graph.get("source")})
    doc = res.to_dict(with_path=with_path)
    if csv_dir is not None:
        from opgraph.export.tables.documents import predict_frames
        write_frames(predict_frames(doc), csv_dir, input)
    if as_json:
        emit_json(doc, "predict.schema.json")
        return
    if csv_dir is not None:
        return
    from opgraph.export.text.predict import render_predict

    render_predict(doc, console(), perfetto)
