"""``opgraph diff`` (docs/diff.md)."""

from __future__ import annotations

from typing import Any

import click

from opgraph.emit import emit_json
from opgraph.commands.base import load_input, rank_option
from opgraph.device_options import device_file_option
from opgraph.table_options import TableFiles, table_file_options, write_frames
from opgraph.errors import OpgraphInputError


def _f(v: Any, nd: int = 1) -> str:
    if v is None:
        return ""
    if isinstance(v, int):
        return f"{v:,}"
    return f"{v:,.{nd}f}"


def _d(v: Any, nd: int = 1) -> str:
    if v is None:
        return ""
    if v == 0:
        return "0"
    s = _f(v, nd)
    return ("+" + s) if v > 0 else s


def _render(doc: dict[str, Any], console: Any, top: int) -> None:
    from rich.table import Table
    from rich.text import Text

    from opgraph.analysis.diff import kernel_label
    from opgraph.export.console import cell, clean, print_table, styled

    a, b = doc["a"], doc["b"]
    width = 90 if console.is_terminal else None
    for side, info in (("a", a), ("b", b)):
        console.print(styled((side, "bold"), " " + cell(info["source"].get("file"))))
    for side, info in (("a", a), ("b", b)):
        devs = {(d["runtime_name"], d["table_name"]): d for d in info["devices"]}
        for (rn, tn), d in devs.items():
            pk = d["peak_tflops"] or {}
            peaks = ", ".join(f"{k} {v:g}" for k, v in pk.items() if v)
            console.print(f"  {side}: {cell(rn or None, '?')} -> {cell(tn or None, 'unknown')}"
                          + (f"; {d['dram_gbps']:g} GB/s; TFLOP/s {peaks}" if tn else ""))
    if doc["identical"]:
        console.print(styled(("no differences", "green"), " (kernels, ops, steps and critical path all match)"))
        return
    t = Table(title="Totals (b − a)", title_justify="left")
    for c in ("", "a", "b", "Δ"):
        t.add_column(c, justify="left" if not c else "right")
    t.add_row("kernels", _f(a["kernels"]), _f(b["kernels"]), _d(b["kernels"] - a["kernels"]))
    t.add_row("kernel time µs", _f(a["kernel_time_us"]), _f(b["kernel_time_us"]),
              _d(b["kernel_time_us"] - a["kernel_time_us"]))
    t.add_row("FLOPs", _f(a["flops"]), _f(b["flops"]), _d(b["flops"] - a["flops"]))
    t.add_row("cpu ops", _f(a["cpu_ops"]), _f(b["cpu_ops"]), _d(b["cpu_ops"] - a["cpu_ops"]))
    st = doc["steps"]
    if st:
        t.add_row("steps", _f(st["a"]["count"]), _f(st["b"]["count"]), _d(st["b"]["count"] - st["a"]["count"]))
        t.add_row("mean step µs", _f(st["a"]["mean_us"]), _f(st["b"]["mean_us"]), _d(st["delta_mean_us"]))
    console.print(t)
    kc, oc = doc["kernels"]["counts"], doc["ops"]["counts"]
    console.print(f"kernels: {kc['changed']} changed, {kc['new']} new, {kc['missing']} missing, {kc['same']} same;  "
                  f"ops: {oc['changed']} changed, {oc['new']} new, {oc['missing']} missing, {oc['same']} same")
    kt = Table(title=f"Kernels by |Δ time| (top {top})", title_justify="left")
    kt.add_column("kernel", ratio=1, min_width=24, overflow="fold")
    for c in ("status", "count a", "count b", "µs a", "µs b", "Δ µs", "Δ FLOPs"):
        kt.add_column(c, justify="right", no_wrap=True)
    for r in doc["kernels"]["rows"][:top]:
        kt.add_row(kernel_label(r["name"], width) or "-", r["status"], _f(r["count_a"]), _f(r["count_b"]),
                   _f(r["time_us_a"]), _f(r["time_us_b"]), _d(r["delta_time_us"]), _d(r["delta_flops"]))
    print_table(console, kt, "no kernel changed (--all lists the unchanged ones)" if sum(kc.values())
                else "no kernels in either trace")
    ot = Table(title=f"Ops (name, input shapes, call path) by |Δ GPU time| (top {top})", title_justify="left")
    ot.add_column("op", ratio=1, min_width=24, overflow="fold")
    for c in ("status", "count a", "count b", "Δ cpu µs", "Δ gpu µs", "Δ FLOPs"):
        ot.add_column(c, justify="right", no_wrap=True)
    for r in doc["ops"]["rows"][:top]:
        label = Text(clean(r["name"]) + (f" {clean(r['shapes'])}" if r["shapes"] else ""))
        if r["path"]:
            path = clean(r["path"])
            label.append("\n  in " + (path if width is None or len(path) <= 120 else "…" + path[-119:]), "dim")
        ot.add_row(label, r["status"], _f(r["count_a"]), _f(r["count_b"]), _d(r["delta_cpu_us"]),
                   _d(r["delta_gpu_us"]), _d(r["delta_flops"]))
    print_table(console, ot, "no op changed (--all lists the unchanged ones)" if sum(oc.values())
                else "no ops in either trace")
    cp = doc["critical_path"]
    if cp:
        ct = Table(title="Critical path per step (µs) and share (%)", title_justify="left")
        for c in ("category", "a µs", "b µs", "Δ µs", "a %", "b %", "Δ pp"):
            ct.add_column(c, justify="left" if c == "category" else "right")
        for c in cp["a"]["per_step_us"]:
            ct.add_row(c, _f(cp["a"]["per_step_us"][c]), _f(cp["b"]["per_step_us"][c]),
                       _d(cp["delta_per_step_us"][c]), _f(cp["a"]["breakdown_pct"][c]),
                       _f(cp["b"]["breakdown_pct"][c]), _d(cp["delta_pct"][c]))
        console.print(ct)
        console.print(f"bound: a {cp['a']['bound']}, b {cp['b']['bound']}")
    elif not st:
        console.print(styled(("step time and critical path: not compared (a trace has no step: no ProfilerStep#N "
                              "or Iteration N)", "dim")))


@click.command()
@rank_option
@click.argument("a", type=str)
@click.argument("b", type=str)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (schemas/diff.schema.json).")
@click.option("--names", "name_level", type=click.Choice(["exact", "default", "base"]), default="default",
              show_default=True, help="How kernel names are normalised before matching (see docs/diff.md).")
@click.option("--all", "include_same", is_flag=True, help="Also list the rows that did not change.")
@click.option("--no-critical-path", is_flag=True, help="Skip the critical-path composition (faster).")
@click.option("--dtype", default=None, help="dtype for kernels whose op and name show none.")
@device_file_option
@click.option("--top", default=20, show_default=True, help="Rows per table in the terminal.")
@table_file_options
def diff(a: str, b: str, as_json: bool, name_level: str, include_same: bool, no_critical_path: bool,
         dtype: str | None, top: int, csv_dir: TableFiles | None, rank: int | None = None) -> None:
    """Compare trace B with trace A: kernels side by side, ops, step time and critical path.

    Deltas are B − A. Kernels are matched by normalised name, ops by name + input shapes +
    call path. Traces from different devices are fine (both peak tables are shown)."""
    from opgraph.analysis.diff import diff_graphs

    Ga = load_input(a, label="loading a:", rank=rank)
    Gb = load_input(b, label="loading b:", rank=rank)
    try:
        doc = diff_graphs(Ga, Gb, name_level=name_level, include_same=include_same, dtype=dtype,
                          with_critical_path=not no_critical_path)
    except ValueError as e:
        raise OpgraphInputError(a, str(e)) from None
    if csv_dir is not None:
        from opgraph.export.tables import diff_frames
        write_frames(diff_frames(doc), csv_dir, b)
    if as_json:
        emit_json(doc, "diff.schema.json")
        return
    if csv_dir is not None:
        return
    from opgraph.export.console import make_console
    _render(doc, make_console(), top)
