"""``opgraph augment``, ``opgraph report`` and ``opgraph devices`` (docs/roofline.md)."""

from __future__ import annotations

import os
from typing import Any

import click

from opgraph.analysis.diff import kernel_label
from opgraph.emit import emit_json
from opgraph.export.console import make_console
from opgraph.commands.base import load_input, rank_option
from opgraph.device_options import device_file_option
from opgraph.json_option import json_flag, output_entry, outputs_doc
from opgraph.table_options import TableFiles, table_file_options, write_frames
from opgraph.errors import OpgraphInputError

_DEVICE_HELP = ("Device for every kernel: a table name ('H100 SXM') or a runtime name "
                "('NVIDIA H100 80GB HBM3'); default: deviceProperties of the trace. See `opgraph devices`.")
_DTYPE_HELP = "dtype for kernels whose op and name show none (bf16, fp16, fp32, tf32, fp8, fp64)."


def _roofline(source: Any, path: str, device: str | None, dtype: str | None):
    from opgraph.analysis.roofline import roofline

    try:
        return roofline(source, device=device, dtype=dtype)
    except ValueError as e:
        raise OpgraphInputError(path, str(e)) from None


# --------------------------------------------------------------------------- augment
@click.command()
@click.argument("trace", type=str)
@click.option("-o", "--output", required=True, type=str,
              help="The augmented trace: .json or .json.gz (Chrome/Perfetto trace JSON).")
@click.option("--device", default=None, help=_DEVICE_HELP)
@device_file_option
@click.option("--dtype", default=None, help=_DTYPE_HELP)
@click.option("--format", "fmt", default=None, help="Force the input format of a raw trace.")
@json_flag
def augment(trace: str, output: str, device: str | None, dtype: str | None, fmt: str | None,
            as_json: bool = False) -> None:
    """Write TRACE back out with FLOPs, bytes and roofline args on ops and kernels.

    Every original event is written unchanged; ops and kernels with a cost model gain
    kernel_flop, kernel_num_gb, achieved_tflops, achieved_gbps, pct_peak_flops,
    pct_peak_bw, arithmetic_intensity and roofline_bound."""
    from opgraph.pipelines import augment_file
    from opgraph.progress import BUILD_PHASES, phase_progress

    phases = tuple(p for p in BUILD_PHASES if p != "save") + ("roofline", "write")
    with phase_progress(f"augmenting {os.path.basename(trace)}", phases) as step:
        res = augment_file(trace, output, fmt=fmt, device=device, dtype=dtype, step=step)
    click.echo(res.message, err=True)
    if as_json:
        emit_json(outputs_doc("augment", (trace,), [output_entry(output, "chrome trace", res.message)], res.counts),
                  "outputs.schema.json")


# --------------------------------------------------------------------------- report
def _num(v: Any, unit: str = "") -> str:
    if v is None:
        return ""
    if isinstance(v, int) and not unit:
        return f"{v:,}"
    x = float(v)
    for f, s in ((1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= f and unit in ("flop", "B"):
            return f"{x / f:.2f} {s}{'' if unit == 'flop' else 'B'}"
    if unit in ("flop", "B"):
        return f"{x:.0f}" + ("" if unit == "flop" else " B")
    return f"{x:,.2f}"


def _render_report(doc: dict[str, Any], console: Any, top: int, graph_replays: bool = False) -> None:
    from rich.table import Table

    from opgraph.devices import all_devices
    from opgraph.export.console import cell, print_table, styled

    s = doc["summary"]
    src = doc["source"].get("file") or ""
    width = 90 if console.is_terminal else None
    console.print(styled(("Roofline", "bold"), f" {cell(src)}  (by {doc['by']})"))
    user = {x.name: x.origin for x in all_devices() if x.origin}
    for d in doc["devices"]:
        name = styled((d["table_name"], "") if d["table_name"] else ("unknown", "red"))
        extra = " (--device)" if d["overridden"] else " (inferred)" if d.get("inferred") else ""
        if d["table_name"] in user:
            extra += f" (user device file {user[d['table_name']]})"
        pk = d["peak_tflops"] or {}
        peaks = ", ".join(f"{k} {v:g}" for k, v in pk.items() if v) if pk else "no peaks"
        console.print(styled(f"  device {d['device']}: {cell(d['runtime_name'] or None, '?')} -> ") + name
                      + styled(extra + (f"; {d['dram_gbps']:g} GB/s; TFLOP/s {peaks}" if d["table_name"] else
                                        " (not in the peak table: no % of peak for it; name it with --device, or "
                                        "add it with --device-file / $OPGRAPH_DEVICES: docs/roofline.md)")))
    cov = s["coverage_time_pct"]
    console.print(
        f"  kernels {s['kernels']:,}, {s['kernel_time_us']:,.1f} µs; with a model: {s['modelled_kernels']:,}"
        + (f" ({cov:.1f}% of kernel time)" if cov is not None else "")
        + f"; FLOPs {_num(s['flops_total'], 'flop')}, bytes {_num(s['bytes_total'], 'B')}")
    if s["no_model_activities"]:
        console.print(f"  no model: {s['no_model_activities']:,} activities, {s['no_model_time_us']:,.1f} µs "
                      f"({s['no_model_ops']:,} op calls of {s['no_model_op_names']} names"
                      + (f"; {s['unlaunched_activities']:,} with no launching CPU op in the trace"
                         + (" (CUDA/HIP-graph replays among them: opgraph info, docs/graph-replay.md)"
                            if graph_replays else "") if s["unlaunched_activities"] else "") + ")")
    if s.get("achieved_tflops") is not None:
        console.print(f"  achieved over the modelled kernels only: {s['achieved_tflops']:,.2f} TFLOP/s"
                      + (f", {s['achieved_gbps']:,.1f} GB/s" if s.get("achieved_gbps") is not None else "")
                      + " (the TFLOP/s and GB/s columns are per row, over that row's modelled kernels)")
    if s["unknown_dtype_activities"]:
        console.print(f"  dtype unknown for {s['unknown_dtype_activities']:,} modelled activities "
                      f"({s['unknown_dtype_time_us']:,.1f} µs): no % of peak for them (try --dtype)")
    t = Table(title_justify="left")
    first = "kernel" if doc["by"] == "kernel" else "op"
    cols = [first, "count", "total µs", "mean µs", "FLOPs", "bytes", "TFLOP/s", "GB/s", "% peak FLOP",
            "% peak BW", "bound", "model"]
    for c in cols:
        if c == first:
            t.add_column(c, ratio=1, min_width=24, overflow="fold")
        else:
            t.add_column(c, justify="left" if c in ("bound", "model") else "right", no_wrap=True)
    for r in doc["rows"][:top]:
        t.add_row(kernel_label(r["name"], width) or "-", f"{r['count']:,}", _num(r["total_us"]),
                  _num(r["mean_us"]), _num(r["flops"], "flop"), _num(r["bytes"], "B"), _num(r["tflops"]), _num(r["gbps"]),
                  _num(r["pct_peak_flops"]), _num(r["pct_peak_bw"]), r["bound"] or "",
                  r["model"] or styled(("no model", "dim")))
    print_table(console, t, f"no {'kernels' if doc['by'] == 'kernel' else 'ops launching GPU work'} in this trace")
    if len(doc["rows"]) > top:
        console.print(f"  ... {len(doc['rows']) - top} more rows (--top N, --json or --csv for all)")
    if doc["no_model"]:
        nt = Table(title="Ops launching kernels with no model", title_justify="left")
        for c in ("op", "calls", "activities", "time µs"):
            nt.add_column(c, justify="left" if c == "op" else "right")
        for r in doc["no_model"][:10]:
            nt.add_row(cell(r["name"]), f"{r['calls']:,}", f"{r['activities']:,}", _num(r["time_us"]))
        console.print(nt)


@click.command()
@rank_option
@click.argument("input", type=str)
@click.option("--by", type=click.Choice(["kernel", "op"]), default="kernel", show_default=True,
              help="One row per kernel name or per op name.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (schemas/report.schema.json).")
@table_file_options
@click.option("--device", default=None, help=_DEVICE_HELP)
@device_file_option
@click.option("--dtype", default=None, help=_DTYPE_HELP)
@click.option("--top", default=None, type=int, help="Rows shown (default: 30 in the terminal, all with --json/--csv).")
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
    from opgraph.analysis.roofline import group_table, report_doc

    if html is None and batch_size is not None:
        raise click.UsageError("--batch-size goes with --html (it sets the report's QPS)")
    if html is not None:
        from opgraph.commands.report_html import write_html

        write_html(input, html, batch_size, device, dtype, rank)
        if not as_json and csv_dir is None:
            return

    to_stdout = csv_dir is not None and csv_dir.csv == "-"
    if as_json and to_stdout:
        raise click.UsageError("--json and --csv - both write to stdout")
    G = load_input(input, rank=rank)
    res = _roofline(G, input, device, dtype)
    if csv_dir is not None:
        tab = group_table(res, by)
        if top is not None:
            tab = tab.head(top)
        if to_stdout:
            from opgraph.export.tables import spreadsheet_safe
            click.echo(spreadsheet_safe(tab).to_csv(index=False), nl=False)
            csv_dir = TableFiles(None, csv_dir.parquet, csv_dir.xlsx)
        if csv_dir.parquet is not None or csv_dir.xlsx is not None or csv_dir.csv is not None:
            write_frames({f"report_{by}": tab}, csv_dir, input)
        if not as_json:
            return
    doc = report_doc(res, by, top if as_json else None)
    if as_json:
        emit_json(doc, "report.schema.json")
        return
    _render_report(doc, make_console(), top or 30, graph_replays=bool(G.graph.get("graph_replay")))


# --------------------------------------------------------------------------- devices
@click.command()
@click.option("--json", "as_json", is_flag=True,
              help="The table as JSON (the devices.json document, schemas/devices.schema.json).")
@click.option("--name", default=None, help="Show only the entry this runtime or table name resolves to.")
@click.option("--sparse", is_flag=True, help="Show the 2:4-sparsity peaks instead of the dense ones.")
@device_file_option
@table_file_options
def devices(as_json: bool, name: str | None, sparse: bool, csv_dir: TableFiles | None) -> None:
    """The device peak table (dense TFLOP/s per dtype, DRAM GB/s) with its sources; entries
    from user device files (--device-file, $OPGRAPH_DEVICES) cite the file."""
    import orjson

    from opgraph.devices import DATA_PATH, PEAK_DTYPES, device_entries, lookup

    doc = orjson.loads(DATA_PATH.read_bytes())
    entries = device_entries()
    doc = dict(doc, devices=entries)
    if name:
        dev = lookup(name)
        if dev is None:
            raise OpgraphInputError(None, f"no unique table entry for device name {name!r} (see `opgraph devices`)")
        entries = [e for e in entries if e["name"] == dev.name]
        doc = dict(doc, devices=entries)
    if csv_dir is not None:
        import pandas as pd

        key = "peak_tflops_sparse" if sparse else "peak_tflops"
        rows = [{**{k: v for k, v in e.items() if not isinstance(v, (dict, list)) and k != "user_file"},
                 **{f"{key}_{dt}": (e.get(key) or {}).get(dt) for dt in PEAK_DTYPES},
                 "user_file": e.get("user_file")} for e in entries]
        write_frames({"devices": pd.DataFrame(rows)}, csv_dir, "devices")
    if as_json:
        emit_json(doc, "devices.schema.json")
        return
    if csv_dir is not None:
        return
    from rich.table import Table

    key = "peak_tflops_sparse" if sparse else "peak_tflops"
    t = Table(title=f"Peak {'2:4-sparse' if sparse else 'dense'} TFLOP/s and DRAM bandwidth, per runtime device",
              title_justify="left")
    for c in ("#", "device", "vendor", "arch", "SMs/CUs", "memory GB", "DRAM GB/s", *PEAK_DTYPES):
        t.add_column(c, justify="left" if c in ("device", "vendor", "arch") else "right", no_wrap=True)
    sources: dict[str, int] = {}
    for e in entries:
        # an entry from a user file cites the file (its own `source` text follows it)
        cite = f"user device file {e['user_file']} (entry's source: {e['source']})" if e.get("user_file") \
            else e["source"]
        j = sources.setdefault(cite, len(sources) + 1)
        pk = e.get(key) or {}
        t.add_row(str(j), e["name"], e["vendor"], e.get("arch") or "", str(e.get("num_sms") or ""),
                  f"{e['memory_gb']:g}", f"{e['dram_gbps']:g}",
                  *[("" if pk.get(k) is None else f"{pk[k]:g}") for k in PEAK_DTYPES])
    console = make_console()
    console.print(t)
    console.print("Sources:")
    for s, j in sources.items():
        console.print(f"  [{j}] {s}")
    n_user = sum(1 for e in entries if e.get("user_file"))
    if n_user:
        console.print(f"{n_user} entr{'y' if n_user == 1 else 'ies'} from user device files (replacing built-in "
                      "entries of the same name; matched before the built-in table)")
    console.print("Units: " + "; ".join(f"{k}: {v}" for k, v in doc.get("units", {}).items()))
