"""Terminal rendering (rich) of the multi-rank analyses: the cross-rank critical path and
the straggler report. Pure presentation: no analysis here."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from opgraph.analysis.crossrank import CROSS_CATEGORIES, CrossRankResult
from opgraph.analysis.stragglers import StragglerReport
from opgraph.export.text.console import cell, styled
from opgraph.export.text.results import path_breakdown_table, path_summary_table, print_top_on_path


def render_crossrank_path(res: CrossRankResult, console: Console, top: int = 8) -> None:
    """One table per step (breakdown, per-rank share, crossings, comm waits) plus a summary."""
    for note in res.notes:
        console.print(styled(("note:", "yellow"), f" {note}"))
    for w in res.steps:
        ranks = " → ".join(str(r) for r in w.ranks_on_path) or "-"
        console.print(path_breakdown_table(
            f"{w.name}: slowest rank {w.window_rank}, span {w.span_ns / 1e3:,.1f} µs, critical path "
            f"{w.length_ns / 1e3:,.1f} µs through ranks {ranks}, bound by {w.bound}",
            w.breakdown_ns, w.breakdown_pct, CROSS_CATEGORIES))
        byr = w.breakdown_by_rank_ns()
        if len(byr) > 1:
            tr = Table(title="path time per rank", title_justify="left")
            tr.add_column("rank", justify="right")
            tr.add_column("µs", justify="right")
            tr.add_column("largest category")
            for r, d in sorted(byr.items()):
                tot = sum(d.values())
                big = max(d, key=lambda c: d[c])
                tr.add_row(str(r), f"{tot / 1e3:,.1f}", f"{big} {d[big] / 1e3:,.1f} µs")
            console.print(tr)
        for x in w.crossings():
            console.print(f"  crosses rank {x['from_rank']} → {x['to_rank']} at collective {x['coll_id']}, "
                          f"{x['at_us'] - w.start_ns / 1e3:,.1f} µs into the step")
        waits = [(r, v) for r, v in sorted(w.comm_wait.items()) if v["wait_ns"]]
        if waits:
            tw = Table(title="gpu_comm_wait per rank in this step (waiting for …)", title_justify="left")
            tw.add_column("rank", justify="right")
            tw.add_column("wait µs", justify="right")
            tw.add_column("for rank: µs")
            for r, v in waits:
                tw.add_row(str(r), f"{v['wait_ns'] / 1e3:,.1f}",
                           ", ".join(f"{k}: {x / 1e3:,.1f}" for k, x in sorted(v["for_rank_ns"].items(),
                                                                              key=lambda kv: -kv[1])))
            console.print(tw)
        print_top_on_path(w, console, top)
    summarised = f" (summarised: {','.join(map(str, res.summarised))})" if res.summarised else ""
    console.print(path_summary_table(
        f"Summary over {{windows}} step(s), ranks {','.join(map(str, res.ranks))}{summarised}: bound by {{bound}}",
        res.summary(), CROSS_CATEGORIES, "total (= union of the steps' windows)"))


def render_stragglers(rep: StragglerReport, console: Console, top: int = 15) -> None:
    """Per-rank straggler counts, per-step last ranks and the latest arrivals."""
    d = rep.to_dict(top=top)
    console.print(f"{d['matched']:,} matched collectives ({', '.join(f'{k}: {v}' for k, v in d['match'].items())}), "
                  f"{d['unmatched']:,} unmatched kernel(s); arrival = collective kernel start (aligned clock)")
    t = Table(title="Ranks: how often last, and the waiting they caused", title_justify="left")
    for c in ("rank", "collectives", "times last", "share %", "lateness µs", "others' wait µs", "own wait µs",
              "repeatedly last"):
        t.add_column(c, justify="right")
    for r in d["by_rank"]:
        t.add_row(str(r["rank"]) + ("" if r["full"] else " (summary)"), f"{r['collectives']:,}",
                  f"{r['times_last']:,}", f"{100 * r['share']:.1f}", f"{r['lateness_us']:,.1f}",
                  f"{r['wait_caused_us']:,.1f}", f"{r['comm_wait_us']:,.1f}", "yes" if r["repeated"] else "")
    console.print(t)
    if d["by_step"]:
        t = Table(title="Steps: the rank that held collectives up most", title_justify="left")
        for c in ("step", "collectives", "last rank", "lateness µs", "times last", "all ranks' wait µs"):
            t.add_column(c, justify="right")
        for s in d["by_step"]:
            t.add_row(str(s["step"]), str(s["collectives"]), str(s["last_rank"]), f"{s['lateness_us']:,.1f}",
                      str(s["last_count"]), f"{s['comm_wait_us']:,.1f}")
        console.print(t)
    t = Table(title=f"Latest arrivals (top {top} by lateness)", title_justify="left")
    for c in ("coll_id", "collective", "pg", "seq", "step", "ranks", "last rank", "lateness µs", "skew µs"):
        t.add_column(c, justify="right")
    for c in d["by_collective"]:
        t.add_row(str(c["coll_id"]), cell(c["coll"]), cell(c["pg"] or None), str(c["seq"]) if c["seq"] >= 0 else "-",
                  str(c["step"]), str(c["ranks"]), str(c["last_rank"]), f"{c['lateness_us']:,.1f}",
                  f"{c['skew_us']:,.1f}")
    console.print(t)
    if d["repeated"]:
        console.print(f"repeatedly last: rank(s) {', '.join(map(str, d['repeated']))}")
