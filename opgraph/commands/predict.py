"""``opgraph predict``: replay and what-if prediction (docs/predict.md)."""

from __future__ import annotations

import re
from typing import Any

import click

from opgraph.emit import emit_json
from opgraph.export.console import make_console
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
    from opgraph.predict import WhatIfError, parse_transforms, predict

    if et is not None:
        _predict_et(input, et, overheads, device, lookup, calibration, data_loading, hit_rate, gap_mode, as_json,
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
        from opgraph.export.predicted_trace import write_predicted_trace
        write_predicted_trace(G, res.arr_pred, res.removed, perfetto,
                              {"mode": res.mode, "transforms": [t.to_dict() for t in res.transforms],
                               "source": G.graph.get("source")})
    doc = res.to_dict(with_path=with_path)
    if csv_dir is not None:
        from opgraph.export.tables import predict_frames
        write_frames(predict_frames(doc), csv_dir, input)
    if as_json:
        emit_json(doc, "predict.schema.json")
        return
    if csv_dir is not None:
        return
    _render(doc, perfetto)


def _predict_et(input: str | None, et: str, overheads: str | None, device: str | None, lookup: str | None,
                calibration: str | None, data_loading: str, hit_rate: str, gap_mode: str, as_json: bool,
                graph_options: bool) -> None:
    """``opgraph predict --et``: ET-driven prediction (opgraph.predict.et_sim)."""
    from opgraph.predict.et_sim import predict_et

    if input is not None:
        raise OpgraphInputError(input, "--et predicts an execution trace; give no graph or trace argument with it")
    if graph_options:
        raise OpgraphInputError("--et", "replay/what-if options (--replay, --scale-*, --remove, --window, --perfetto ...) "
                                "apply to a graph, not to --et")
    if overheads is None:
        raise OpgraphInputError("--et", "needs --overheads FILE (`opgraph overheads TRACE -o FILE --by-shapes`)")
    if device is None:
        raise OpgraphInputError("--et", "needs --device NAME (e.g. V100)")
    res = predict_et(et, overheads, device, lookup, calibration, data_loading, hit_rate, gap_mode)
    doc = res.to_dict()
    if as_json:
        emit_json(doc, "predict-et.schema.json")
        return
    from rich.table import Table

    from opgraph.export.console import styled

    con = make_console()
    con.print(styled(("opgraph predict --et", "bold"), f" {et} on {doc['inputs']['device']}"))
    t = Table()
    for c in ("step", "E2E µs", "CPU µs", "GPU active µs", "data loading µs", "ops", "lookup", "analytic",
              "roofline", "by name", "cpu only", "unmodelled"):
        t.add_column(c, justify="right")
    for it in doc["iterations"]:
        s = it["ops_by_source"]
        t.add_row(str(it["step"]) if it["step"] >= 0 else "-", f"{it['e2e_us']:,.1f}", f"{it['cpu_us']:,.1f}",
                  f"{it['gpu_active_us']:,.1f}", f"{it['data_loading_us']:,.1f}", str(it["ops"]), str(s["lookup"]),
                  str(s["analytic"]), str(s["roofline"]), str(s["lookup_name"]), str(s["cpu_only"]), str(s["unmodelled"]))
    con.print(t)
    sm = doc["summary"]
    if sm["ops_by_source"]["unmodelled"] or sm["ops_without_cpu_model"]:
        con.print(styled(("note:", "yellow"), f" {sm['ops_by_source']['unmodelled']} ops launch GPU work with no "
                         f"kernel model, {sm['ops_without_cpu_model']} ops have no CPU overhead in the overheads file "
                         "(counted as 0)"))


def _render(doc: dict[str, Any], perfetto: str | None) -> None:
    from rich.table import Table

    from opgraph.export.console import styled

    con = make_console()
    s = doc["summary"]
    title = ("replay" if doc["mode"] == "replay" else "what-if") + (
        ": " + "; ".join(_tr_text(t) for t in doc["transforms"]) if doc["transforms"] else "")
    con.print(styled(("opgraph predict", "bold"), f" — {title}"))
    if doc.get("device"):
        d = doc["device"]
        con.print(f"device: {d['source']} -> {d['target']}: {d['roofline_modelled']} kernels re-timed by roofline, "
                  f"{d['bandwidth_scaled']} by the bandwidth ratio (no FLOP/byte model), "
                  f"{d['unchanged_collective'] + d['unchanged_other']} kernels and "
                  f"{d['unchanged_copies_memsets']} copies/memsets unchanged")
    t = Table(show_lines=False)
    for c, j in (("window", "left"), ("meas. µs", "right"), ("pred. µs", "right"), ("Δ %", "right"),
                 ("GPU %", "right"), ("bound", "left")):
        t.add_column(c, justify=j, no_wrap=True)
    for st in doc["steps"][:200]:
        if st["predicted_us"] is None:
            t.add_row(st["name"], f"{st['measured_us']:,.1f}", "-", "-", "-", st["measured_bound"])
            continue
        t.add_row(st["name"], f"{st['measured_us']:,.1f}", f"{st['predicted_us']:,.1f}", f"{st['delta_pct']:+.2f}",
                  f"{_pct(st['measured_gpu_busy_us'], st['measured_us'])} → "
                  f"{_pct(st['predicted_gpu_busy_us'], st['predicted_us'])}",
                  _bound(st["measured_bound"], st["predicted_bound"]))
    if len(doc["steps"]) > 200:
        t.add_row(f"… {len(doc['steps']) - 200} more", "", "", "", "", "")
    t.add_row(styled(("total", "bold")), f"{s['measured_us']:,.1f}", f"{s['predicted_us']:,.1f}", f"{s['delta_pct']:+.2f}",
              "", _bound(s["measured_bound"], s["predicted_bound"]))
    con.print(t)
    if doc["mode"] == "replay":
        con.print(f"replay error per step: max {s['step_error_pct']['max']:.4f} %, "
                  f"mean {s['step_error_pct']['mean']:.4f} %")
    if s.get("speedup"):
        con.print(f"speedup (summed step time): {s['speedup']:.3f}x; makespan {s['makespan_measured_us']:,.1f} → "
                  f"{s['makespan_predicted_us']:,.1f} µs")
    b = Table(title="critical-path composition (all windows, µs)")
    for c, j in (("category", "left"), ("measured", "right"), ("predicted", "right"), ("Δ", "right")):
        b.add_column(c, justify=j)
    for c, v in s["measured_breakdown_us"].items():
        p = s["predicted_breakdown_us"][c]
        if v or p:
            b.add_row(c, f"{v:,.1f}", f"{p:,.1f}", f"{p - v:+,.1f}")
    if b.row_count:
        con.print(b)
    g = Table(title="GPU busy / idle (µs)")
    for c in ("device", "busy meas", "busy pred", "idle meas", "idle pred", "busy % pred"):
        g.add_column(c, justify="right")
    for d in doc["gpu"]:
        g.add_row(str(d["device"]), f"{d['measured']['busy_us']:,.1f}", f"{d['predicted']['busy_us']:,.1f}",
                  f"{d['measured']['idle_us']:,.1f}", f"{d['predicted']['idle_us']:,.1f}",
                  f"{d['predicted']['busy_pct']:.1f}")
    if doc["gpu"]:
        con.print(g)
    for tr in doc["transforms"]:
        if tr["matched"] == 0:
            con.print(styled(("warning:", "yellow"), f" {_tr_text(tr)} matched nothing"))
    inf = doc["model"]["inferred"]
    parts = [f"{inf.get('blocked_calls', 0)} launch calls blocked on a full launch queue"
             + (f" (depth {', '.join(str(q) for q in inf['queue_depth'].values())})" if inf.get("queue_depth") else ""),
             f"{inf.get('handoff_edges', 0)} cross-thread hand-offs", f"{inf.get('stream_wait_edges', 0)} cross-stream waits"]
    if any(inf.get(k) for k in ("blocked_calls", "handoff_edges", "stream_wait_edges")):
        con.print("inferred dependencies: " + ", ".join(parts))
    if doc["model"]["dropped_cycle_edges"]:
        con.print(styled(("note:", "yellow"), f" {doc['model']['dropped_cycle_edges']} edges dropped to break cycles"))
    if perfetto:
        con.print(f"predicted timeline written to {perfetto}")


def _pct(part: float, whole: float) -> str:
    return f"{100.0 * part / whole:.0f}" if whole else "-"


def _bound(measured: str, predicted: str) -> str:
    return predicted if measured == predicted else f"{measured} → {predicted}"


def _tr_text(t: dict[str, Any]) -> str:
    k = t["kind"]
    if k in ("scale_kernels", "scale_cpu"):
        return f"{k.replace('_', '-')} '{t['pattern']}' x{t['factor']:g} ({t['matched']} matched)"
    if k == "launch_overhead":
        return f"launch-overhead {t['value_us']:g} us ({t['matched']} calls)"
    if k == "remove":
        return f"remove '{t['pattern']}' ({t['matched']} matched)"
    if k == "typical_latencies":
        return f"typical latencies ({t['matched']} binding latencies replaced)"
    return f"device {t['device']}"
