"""Terminal output of ``opgraph report``: the roofline table per kernel or op
(:func:`opgraph.analysis.roofline.report_doc`; µs, FLOPs, bytes, TFLOP/s, GB/s, % of peak)."""

from __future__ import annotations

from typing import Any

from opgraph.names import kernel_label
from opgraph.export.text.numbers import si


def render_roofline_report(doc: dict[str, Any], console: Any, top: int, graph_replays: bool = False) -> None:
    """The devices and their peaks, the coverage of the cost models, and the first ``top``
    rows; ``graph_replays``: the trace replays CUDA/HIP graphs (said where kernels have no op)."""
    from rich.table import Table

    from opgraph.analysis.roofline.devices import UNKNOWN_DEVICE
    from opgraph.devices.peaks import all_devices
    from opgraph.export.text.console import cell, print_table, styled

    s = doc["summary"]
    src = doc["source"].get("file") or ""
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
                                        f" ({UNKNOWN_DEVICE})")))
    cov = s["coverage_time_pct"]
    console.print(
        f"  kernels {s['kernels']:,}, {s['kernel_time_us']:,.1f} µs; with a model: {s['modelled_kernels']:,}"
        + (f" ({cov:.1f}% of kernel time)" if cov is not None else "")
        + f"; FLOPs {si(s['flops_total'], 'flop')}, bytes {si(s['bytes_total'], 'B')}")
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
            t.add_column(c, no_wrap=True, overflow="ellipsis")  # the console prints long names short
        else:
            t.add_column(c, justify="left" if c in ("bound", "model") else "right", no_wrap=True)
    for r in doc["rows"][:top]:
        t.add_row(kernel_label(r["name"]) or "-", f"{r['count']:,}", si(r["total_us"]),
                  si(r["mean_us"]), si(r["flops"], "flop"), si(r["bytes"], "B"), si(r["tflops"]), si(r["gbps"]),
                  si(r["pct_peak_flops"]), si(r["pct_peak_bw"]), r["bound"] or "",
                  r["model"] or styled(("no model", "dim")))
    print_table(console, t, f"no {'kernels' if doc['by'] == 'kernel' else 'ops launching GPU work'} in this trace")
    if len(doc["rows"]) > top:
        console.print(f"  ... {len(doc['rows']) - top} more rows (--top N, --json or --csv for all)")
    if doc["no_model"]:
        nt = Table(title="Ops launching kernels with no model", title_justify="left")
        for c in ("op", "calls", "activities", "time µs"):
            nt.add_column(c, justify="left" if c == "op" else "right")
        for r in doc["no_model"][:10]:
            nt.add_row(cell(r["name"]), f"{r['calls']:,}", f"{r['activities']:,}", si(r["time_us"]))
        console.print(nt)
