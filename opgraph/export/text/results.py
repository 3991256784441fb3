"""Terminal rendering (rich) of analysis results. Pure presentation: no analysis here."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from opgraph.export.text.numbers import us
from opgraph.export.text.console import NO_GPU, cell, print_table, styled


def _kv_table(title: str, items: dict[str, Any], key: str = "kind", val: str = "count") -> Table:
    t = Table(title=title, title_justify="left")
    t.add_column(key)
    t.add_column(val, justify="right")
    for k, v in items.items():
        t.add_row(cell(k), f"{v:,}" if isinstance(v, int) else cell(v))
    return t


def render_info(doc: dict[str, Any], console: Console) -> None:
    """Print ``opgraph info`` tables."""
    src = doc["source"]
    console.print(styled((cell(src.get("file")), "bold"), f"  format={cell(src.get('format'))}  "
                         f"sha256={cell(src.get('sha256'))[:12]}…  opgraph {doc.get('opgraph_version')}"))
    span = doc["span"]
    ordinal = any(h.get("code") == "et_ordinal_time" for h in doc.get("health", []) if isinstance(h, dict))
    console.print(f"events {doc['events']:,}   nodes {doc['nodes']:,}   edges {doc['edges']:,}   "
                  + (f"span {span['duration_us']:,.0f} ordinal units (one per op; no timestamps)" if ordinal
                     else f"span {us(span['duration_us'])} µs"))
    grid = Table.grid(padding=(0, 4))
    grid.add_row(_kv_table("Events by kind", doc["events_by_kind"]),
                 _kv_table("Nodes by kind", doc["nodes_by_kind"]),
                 _kv_table("Edges by kind", doc["edges_by_kind"]))
    console.print(grid)
    if doc["devices"]:
        t = Table(title="Devices", title_justify="left")
        for c in ("id", "name", "memory GB", "SMs"):
            t.add_column(c)
        for d in doc["devices"]:
            t.add_row(cell(d["id"]), cell(d["name"]), cell(d["memory_gb"]), cell(d["sms"]))
        console.print(t)
    if doc["streams"]:
        t = Table(title="Streams", title_justify="left")
        for c in ("device", "stream", "activities", "busy µs"):
            t.add_column(c, justify="right")
        for s in doc["streams"]:
            t.add_row(str(s["device"]), str(s["stream"]), f"{s['activities']:,}", us(s['busy_us']))
        console.print(t)
    if doc["threads"]:
        t = Table(title="Threads (host events)", title_justify="left")
        for c in ("pid", "tid", "name", "events"):
            t.add_column(c)
        for th in doc["threads"][:20]:
            t.add_row(cell(th["pid"]), cell(th["tid"]), cell(th["name"], ""), f"{th['events']:,}")
        if len(doc["threads"]) > 20:
            t.add_row("…", f"{len(doc['threads']) - 20} more", "", "")
        console.print(t)
    r = doc["ranks"]
    it = doc["iterations"]
    if "job" in doc:
        render_job(doc["job"], console)
    else:
        rank = f"rank {r.get('rank')} of {cell(r.get('world_size'), '?')}   " if r.get("rank") is not None else ""
        console.print(rank + f"iterations found: {it['count']}"
                      + (f" ({it['names'][0]} … {it['names'][-1]})" if it["count"] else ""))
    health = doc["health"]
    t = Table(title="Trace health", title_justify="left")
    t.add_column("check")
    t.add_column("count", justify="right")
    t.add_column("example eid", justify="right")
    t.add_column("what it means")
    for h in health:
        t.add_row(h["code"], f"{h['count']:,}", cell(h["example_eid"]), h["message"])
    if not health:
        t.add_row("ok", "0", "", "no oddities found")
    console.print(t)
    gr = doc.get("graph_replay")
    if gr:
        pct = 100.0 * gr["mapped"] / gr["activities"] if gr["activities"] else 100.0
        caps = ", ".join(f"{cell(c.get('label'), '?')} ({c['nodes']:,} nodes)" for c in gr["captures"][:5])
        console.print(f"graph replays: {gr['replays']:,} launches, {gr['activities']:,} activities; "
                      f"{gr['mapped']:,} ({pct:.1f} %) mapped to the ops that captured them"
                      + (f" from {len(gr['captures'])} captured graph(s): {caps}" if gr["captures"] else
                         " (no capture in the trace: pass it with opgraph build --capture)"))
    inferred = doc.get("inferred_dependencies") or []
    if inferred:
        ti = Table(title="Inferred dependencies (edges with inferred=True; docs/model.md)", title_justify="left")
        ti.add_column("edge kind")
        ti.add_column("evidence")
        ti.add_column("count", justify="right")
        for r in inferred:
            ti.add_row(r["kind"], r["evidence"], f"{r['count']:,}")
        console.print(ti)


def render_job(job: dict[str, Any], console: Console) -> None:
    """The ranks, clock offsets and collective matching of a multi-rank job graph."""
    t = Table(title=f"Ranks (clock offsets relative to rank {job['reference_rank']}, {job['method']})",
              title_justify="left")
    for c in ("rank", "from", "full", "node offset", "nodes", "offset µs", "residual µs", "collectives", "file"):
        t.add_column(c, justify="left" if c in ("from", "file") else "right")
    for r in job["ranks"]:
        t.add_row(str(r["rank"]), r["rank_source"], "yes" if r["full"] else "summary", f"{r['node_offset']:,}",
                  f"{r['n_nodes']:,}", us(r['clock_offset_us']), us(r['residual_us']),
                  str(r["collectives"]), cell(r["file"]))
    console.print(t)
    c = job["collectives"]
    console.print(f"collectives: {c['matched']} matched across ranks ({', '.join(c['match']) or '-'}), "
                  f"{c['kernels']} kernels, {c['unmatched_kernels']} unmatched"
                  + (f"   [{job['keep']}]" if job.get("keep") else ""))
    if job["warnings"]:
        w = Table(title="Job warnings", title_justify="left")
        w.add_column("check")
        w.add_column("count", justify="right")
        w.add_column("what it means")
        for h in job["warnings"]:
            w.add_row(h["code"], f"{h['count']:,}", h["message"])
        console.print(w)


#: Why a blame table has no row.
NO_BLAME = "none (no CPU-induced GPU idle)"


def _pct_bar(pct: float, width: int = 20) -> str:
    n = int(round(pct / 100.0 * width))
    return "█" * n + "·" * (width - n)


def render_critical_path(res, console: Console, top: int = 8) -> None:
    """Print one table per window plus a summary (``opgraph critical-path``)."""
    from opgraph.analysis.critical_path.boundary_edges import CATEGORIES

    for w in res.windows:
        console.print(path_breakdown_table(
            f"{w.name}: span {us(w.span_ns / 1e3)} µs, critical path {us(w.length_ns / 1e3)} µs, "
            f"bound by {w.bound}", w.breakdown_ns, w.breakdown_pct, CATEGORIES))
        d = w.to_dict(with_path=False)
        print_confidence(d["inferred_us"], d["inferred_pct"], d["longest_wait"], console)
        print_top_on_path(w, console, top)
    summ = res.summary()
    console.print(path_summary_table(
        f"Summary over {{windows}} window(s) ({res.window_mode}): bound by {{bound}}", summ, CATEGORIES,
        "total (= union of the windows)"))
    print_confidence(summ["inferred_us"], summ["inferred_pct"], summ["longest_wait"], console)
    if summ["overlap_us"] > 0:
        console.print(f"windows overlap by {us(summ['overlap_us'])} µs (sum of spans {us(summ['sum_span_us'])} µs): "
                      "the summary counts each instant once, in the earlier window")


def print_confidence(inferred_us: float, inferred_pct: float, longest: dict[str, Any] | None,
                     console: Console) -> None:
    """How sure the path is: the time resting on inferred dependencies and the longest wait."""
    line = f"inferred dependencies carry {us(inferred_us)} µs ({inferred_pct:.1f} %) of the path"
    if longest:
        line += (f"; longest wait: {longest['bound_by']} {us(longest['dur_us'])} µs on {longest['lane']} "
                 f"({longest['name']})" + (" [inferred]" if longest.get("inferred") else ""))
    console.print(line)


def path_breakdown_table(title: str, b_ns: dict[str, int], pct: dict[str, float], categories: tuple[str, ...]
                         ) -> Table:
    """One critical-path window's time per category (µs, % of the path, bar)."""
    t = Table(title=title, title_justify="left")
    t.add_column("bound_by")
    t.add_column("µs", justify="right")
    t.add_column("%", justify="right")
    t.add_column("")
    for c in categories:
        if b_ns[c]:
            t.add_row(c, us(b_ns[c] / 1e3), f"{pct[c]:.1f}", _pct_bar(pct[c]))
    return t


def print_top_on_path(w: Any, console: Console, top: int) -> None:
    """The ops and the kernels holding most of a window's path (``w.top(device, n)`` rows)."""
    for label, rows in (("top ops on the path", w.top(False, top)), ("top kernels on the path", w.top(True, top))):
        if rows:
            tt = Table(title=label, title_justify="left", show_header=True)
            tt.add_column("kind")
            tt.add_column("name", max_width=90, overflow="ellipsis")
            tt.add_column("µs", justify="right")
            tt.add_column("%", justify="right")
            for r in rows:
                tt.add_row(r["kind"], cell(r["name"]), us(r['time_us']), f"{r['pct']:.1f}")
            console.print(tt)


def path_summary_table(title: str, s: dict[str, Any], categories: tuple[str, ...], total_label: str) -> Table:
    """The summary of :func:`opgraph.analysis.critical_path.summarize_windows` (µs, %);
    ``title`` may use ``{windows}`` and ``{bound}``."""
    t = Table(title=title.format(windows=s["windows"], bound=s["bound"]), title_justify="left")
    t.add_column("bound_by")
    t.add_column("µs", justify="right")
    t.add_column("%", justify="right")
    for c in categories:
        if s["breakdown_us"][c]:
            t.add_row(c, us(s['breakdown_us'][c]), f"{s['breakdown_pct'][c]:.1f}")
    t.add_row(total_label, us(s['length_us']), "100.0")
    return t


def render_idle(res, console: Console, top: int = 15) -> None:
    """Print ``opgraph idle`` tables."""
    from opgraph.analysis.idle import CAUSES

    t = Table(title="GPU idle per device, by cause (µs; the causes sum to the idle). Window: the GPU span, first "
                    "activity start to last activity end (`opgraph summary` uses the steps' window)", title_justify="left")
    for c in ("device", "GPU span", "busy", "busy % of GPU span", "idle") + tuple(c.replace("_", " ") for c in CAUSES) + (
            "gaps (host late)",):
        t.add_column(c, justify="right")
    for d in res.devices:
        x = d.to_dict()
        t.add_row(str(d.device), us(x['span_us']), us(x['busy_us']), f"{x['busy_pct']:.1f}",
                  us(x['idle_us']), *(us(x['causes_us'][c]) for c in CAUSES),
                  f"{d.gaps:,} ({d.cpu_induced_gaps:,})")
    print_table(console, t, NO_GPU)
    for d in res.devices:
        for k, v in list(d.device_wait_by_ns.items())[:5]:
            console.print(f"GPU {d.device} device_wait {us(v / 1e3)} µs held by {k}")
        for k, v in d.launch_unknown_by_ns.items():
            console.print(f"GPU {d.device} launch_unknown {us(v / 1e3)} µs: activities with no launch record while "
                          f"{k}, which launches most of the device's work, was busy")
    t = Table(title=f"Per stream: idle by cause, and HTA's categories (kernel wait < {res.kernel_wait_us:g} µs), µs",
              title_justify="left")
    for c in ("device", "stream", "busy", "idle") + tuple(c.replace("_", " ") for c in CAUSES) + (
            "HTA host wait", "HTA kernel wait", "HTA other"):
        t.add_column(c, justify="right")
    for s in res.streams:
        x = s.to_dict()
        t.add_row(str(s.device), str(s.stream), us(x['busy_us']), us(x['idle_us']),
                  *(us(x['causes_us'][c]) for c in CAUSES),
                  us(x['host_wait_us']), us(x['kernel_wait_us']), us(x['other_us']))
    print_table(console, t, NO_GPU)
    for level, title in (("leaf", "CPU-induced idle blamed on leaf CPU ops"),
                         ("top", "... rolled up to top-level ops")):
        b = res.blame(level)
        t = Table(title=f"{title} (total {us(res.cpu_induced_idle_ns / 1e3)} µs)", title_justify="left")
        t.add_column("kind")
        t.add_column("name", max_width=90, overflow="ellipsis")
        t.add_column("count", justify="right")
        t.add_column("µs", justify="right")
        t.add_column("share %", justify="right")
        for r in b.head(top).itertuples():
            t.add_row(cell(r.kind), cell(r.name), f"{r.count:,}", us(r.blame_ns / 1e3),
                      f"{100 * r.share:.1f}")
        if len(b) > top:
            rest = b.iloc[top:]
            t.add_row("", f"… {len(rest)} more", "", us(rest['blame_ns'].sum() / 1e3),
                      f"{100 * rest['share'].sum():.1f}")
        print_table(console, t, NO_BLAME)


def render_busy_windows(doc: dict[str, Any] | None, console: Console) -> None:
    """The windows GPU busy / idle are taken over, reconciled per device
    (:func:`opgraph.analysis.busy_windows.busy_windows`; µs)."""
    if not doc or not doc["devices"]:
        return
    t = Table(title="Windows (µs): steps' window = GPU span + lead-in + tail. `idle` counts busy over the GPU span, "
                    "`summary` over the steps' window; idle (steps) = idle (GPU span) + lead-in + tail + busy "
                    "outside the steps", title_justify="left")
    for c in ("device", "GPU span", "busy", "busy % of GPU span", "lead-in", "tail", "steps' window", "busy in steps",
              "busy % of steps", "busy outside steps"):
        t.add_column(c, justify="right")
    for d in doc["devices"]:
        t.add_row(str(d["device"]), us(d["gpu_span_us"]), us(d["busy_gpu_span_us"]), f"{d['busy_pct_gpu_span']:.1f}",
                  us(d["lead_in_us"]), us(d["tail_us"]), us(d["steps_span_us"]), us(d["busy_steps_us"]),
                  f"{d['busy_pct_steps']:.1f}", us(d["busy_outside_steps_us"]))
    console.print(t)


def render_overlap(df: Any, console: Console) -> None:
    """The ``overlap`` table (µs; one row per window and device)."""
    if not len(df):
        console.print(f"overlap: {NO_GPU}")
        return
    t = Table(title="GPU time per window and device (µs): compute + exposed comm + exposed memory + idle = span. "
                    "Window: per step, first to last activity launched in it ('all': the whole trace); `idle` uses "
                    "the GPU span, `summary` the steps' window (their Windows table reconciles the two)",
              title_justify="left")
    cols = ([("rank", "rank")] if "rank" in df.columns else []) + [
            ("window", "window"), ("device", "dev"), ("span_us", "span"), ("compute_us", "compute"),
            ("comm_us", "comm"), ("overlap_us", "comm ∩ compute"), ("comm_overlap_pct", "% comm overlapped"),
            ("exposed_comm_us", "exposed comm"), ("memory_us", "memory"), ("exposed_memory_us", "exposed memory"),
            ("idle_us", "idle")]
    for _, label in cols:
        t.add_column(label, justify="left" if label == "window" else "right")
    for r in df.to_dict("records"):
        t.add_row(*[cell(r[k]) if k == "window" else (f"{r[k]:.1f}" if k.endswith("pct") else
                                                      (str(int(r[k])) if k in ("device", "rank") else us(r[k])))
                    for k, _ in cols])
    print_table(console, t, NO_GPU)
