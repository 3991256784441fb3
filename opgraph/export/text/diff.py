"""Terminal output of ``opgraph diff`` (:func:`opgraph.analysis.diff.diff_graphs`; µs)."""

from __future__ import annotations

from typing import Any

from opgraph.export.text.numbers import decimal, delta


def render_diff(doc: dict[str, Any], console: Any, top: int) -> None:
    """Kernels side by side, ops, step time and the critical path of A and B (B − A), at
    most ``top`` rows per table."""
    from rich.table import Table
    from rich.text import Text

    from opgraph.names import kernel_label
    from opgraph.export.text.console import cell, clean, print_table, styled

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
    t.add_row("kernels", decimal(a["kernels"]), decimal(b["kernels"]), delta(b["kernels"] - a["kernels"]))
    t.add_row("kernel time µs", decimal(a["kernel_time_us"]), decimal(b["kernel_time_us"]),
              delta(b["kernel_time_us"] - a["kernel_time_us"]))
    t.add_row("FLOPs", decimal(a["flops"]), decimal(b["flops"]), delta(b["flops"] - a["flops"]))
    t.add_row("cpu ops", decimal(a["cpu_ops"]), decimal(b["cpu_ops"]), delta(b["cpu_ops"] - a["cpu_ops"]))
    st = doc["steps"]
    if st:
        t.add_row("steps", decimal(st["a"]["count"]), decimal(st["b"]["count"]), delta(st["b"]["count"] - st["a"]["count"]))
        t.add_row("mean step µs", decimal(st["a"]["mean_us"]), decimal(st["b"]["mean_us"]), delta(st["delta_mean_us"]))
    console.print(t)
    kc, oc = doc["kernels"]["counts"], doc["ops"]["counts"]
    console.print(f"kernels: {kc['changed']} changed, {kc['new']} new, {kc['missing']} missing, {kc['same']} same;  "
                  f"ops: {oc['changed']} changed, {oc['new']} new, {oc['missing']} missing, {oc['same']} same")
    kt = Table(title=f"Kernels by |Δ time| (top {top})", title_justify="left")
    kt.add_column("kernel", no_wrap=True, overflow="ellipsis")  # the console prints long names short
    for c in ("status", "count a", "count b", "µs a", "µs b", "Δ µs", "Δ FLOPs"):
        kt.add_column(c, justify="right", no_wrap=True)
    for r in doc["kernels"]["rows"][:top]:
        kt.add_row(kernel_label(r["name"]) or "-", r["status"], decimal(r["count_a"]), decimal(r["count_b"]),
                   decimal(r["time_us_a"]), decimal(r["time_us_b"]), delta(r["delta_time_us"]), delta(r["delta_flops"]))
    print_table(console, kt, "no kernel changed (--all lists the unchanged ones)" if sum(kc.values())
                else "no kernels in either trace")
    ot = Table(title=f"Ops (name, input shapes, call path) by |Δ GPU time| (top {top})", title_justify="left")
    ot.add_column("op", no_wrap=True, overflow="ellipsis")
    for c in ("status", "count a", "count b", "Δ cpu µs", "Δ gpu µs", "Δ FLOPs"):
        ot.add_column(c, justify="right", no_wrap=True)
    for r in doc["ops"]["rows"][:top]:
        label = Text(clean(r["name"]) + (f" {clean(r['shapes'])}" if r["shapes"] else ""))
        if r["path"]:
            path = clean(r["path"])
            label.append("\n  in " + (path if width is None or len(path) <= 120 else "…" + path[-119:]), "dim")
        ot.add_row(label, r["status"], decimal(r["count_a"]), decimal(r["count_b"]), delta(r["delta_cpu_us"]),
                   delta(r["delta_gpu_us"]), delta(r["delta_flops"]))
    print_table(console, ot, "no op changed (--all lists the unchanged ones)" if sum(oc.values())
                else "no ops in either trace")
    cp = doc["critical_path"]
    if cp:
        ct = Table(title="Critical path per step (µs) and share (%)", title_justify="left")
        for c in ("category", "a µs", "b µs", "Δ µs", "a %", "b %", "Δ pp"):
            ct.add_column(c, justify="left" if c == "category" else "right")
        for c in cp["a"]["per_step_us"]:
            ct.add_row(c, decimal(cp["a"]["per_step_us"][c]), decimal(cp["b"]["per_step_us"][c]),
                       delta(cp["delta_per_step_us"][c]), decimal(cp["a"]["breakdown_pct"][c]),
                       decimal(cp["b"]["breakdown_pct"][c]), delta(cp["delta_pct"][c]))
        console.print(ct)
        console.print(f"bound: a {cp['a']['bound']}, b {cp['b']['bound']}")
    elif not st:
        console.print(styled(("step time and critical path: not compared (a trace has no step: no ProfilerStep#N "
                              "or Iteration N)", "dim")))
