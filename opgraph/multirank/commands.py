"""Bodies of the multi-rank forms of ``opgraph build`` and ``opgraph summary`` (the click
commands stay in :mod:`opgraph.cli` and :mod:`opgraph.commands.summary`)."""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from typing import Callable, Iterator

import click

from opgraph.errors import OpgraphInputError


@contextmanager
def rank_progress(label: str, enabled: bool | None = None) -> Iterator[Callable[[int, int], None]]:
    """Yield ``progress(done, total)``; a rich bar of ranks done on a terminal, else silent."""
    if enabled is None:
        enabled = sys.stderr.isatty()
    if not enabled:
        yield lambda _d, _n: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=Console(stderr=True), transient=True) as prog:
        task = prog.add_task(label, total=None)

        def step(done: int, total: int) -> None:
            prog.update(task, completed=done, total=total)

        yield step


def build_job_command(inputs: list[str], output: str, keep: str | None, workers: int | None,
                      scheduler: str | None, budget: int | None) -> dict:
    """``opgraph build DIR|GLOB|FILES... -o job.gpickle``: build and save the job graph,
    then print one summary line (and the keep policy) on stderr. Returns the counts (for
    ``--json``): ranks, nodes, edges, matched collectives, unmatched kernels."""
    import gc

    from opgraph.graph.io import GraphPayload, check_writable, graph_from_payload, save_gpickle, save_graph
    from opgraph.multirank.job import build_job

    if not (output.endswith(".gpickle") or output.endswith(".json.gz") or output.endswith(".json")):
        raise OpgraphInputError(output, "unknown output type: use .gpickle, .json.gz or .json")
    check_writable(output)
    gc.disable()
    with rank_progress("reading ranks") as progress:
        jb = build_job(inputs, keep=keep, workers=workers, scheduler=scheduler, budget=budget, progress=progress)
    p = jb.payload
    job = jb.job
    n_nodes, n_edges = len(p["nodes"]), len(p["src"])
    if output.endswith(".gpickle"):
        save_gpickle(GraphPayload(p), output)
    else:
        save_graph(graph_from_payload(p), output)
    al = job["alignment"]
    offs = al["offsets_ns"]
    max_off = max((abs(v) for v in offs.values()), default=0)
    max_res = max(al["residual_ns"].values(), default=0)
    coll = job["collectives"]
    matched = int(coll.loc[coll["coll_id"] >= 0, "coll_id"].nunique()) if len(coll) else 0
    msg = (f"{output}: {len(job['ranks'])} ranks, {n_nodes} nodes, {n_edges} edges; {matched} collectives "
               f"matched, {job['unmatched']} kernels unmatched; clock offsets up to {max_off / 1000:.3f} µs "
               f"(residual ≤ {max_res / 1000:.3f} µs)"
               + (f"; {len(job['warnings'])} job warnings (see `opgraph info`)" if job["warnings"] else ""))
    click.echo(msg, err=True)
    if jb.keep_note and jb.keep_note != "all ranks kept in full":
        click.echo(f"{output}: {jb.keep_note}", err=True)
    return {"message": msg, "ranks": len(job["ranks"]), "nodes": int(n_nodes), "edges": int(n_edges),
            "collectives_matched": matched, "kernels_unmatched": int(job["unmatched"])}


def summary_command(inputs: list[str], workers: int | None, scheduler: str | None, as_json: bool) -> None:
    """``opgraph summary DIR``: the per-rank summary fanned out over the pool / cluster."""
    from opgraph.multirank.job import collect
    from opgraph.multirank.report import summary_doc
    from opgraph.multirank.worker import rank_result

    with rank_progress("summarising ranks") as progress:
        results, skipped, _ = collect(inputs, keep="none", workers=workers, scheduler=scheduler,
                                      progress=progress, fn=rank_result)
    doc = summary_doc(results, skipped)
    if as_json:
        from opgraph.emit import emit_json
        emit_json(doc, "multirank-summary.schema.json")
        return
    from rich.table import Table

    from opgraph.export.console import make_console

    t = Table(title=f"{len(doc['ranks'])} ranks (clock offsets relative to rank {doc['reference_rank']})",
              title_justify="left")
    cols = ("rank", "events", "steps", "step µs", "GPU busy µs", "busy %", "GPU idle µs", "comm µs",
            "collectives", "offset µs", "residual µs", "file")
    for c in cols:
        t.add_column(c, justify="left" if c == "file" else "right")
    for r in doc["ranks"]:
        t.add_row(str(r["rank"]) + ("*" if r["rank_source"] == "filename" else ""), f"{r['events']:,}",
                  str(r["steps"]), "-" if r["step_time_us"] is None else f"{r['step_time_us']:,.1f}",
                  f"{r['gpu_busy_us']:,.1f}", f"{r['gpu_busy_pct']:.1f}", f"{r['gpu_idle_us']:,.1f}",
                  f"{r['comm_busy_us']:,.1f}", str(r["collectives"]), f"{r['clock_offset_us']:,.3f}",
                  f"{r['residual_us']:,.3f}", os.path.basename(str(r["file"])))
    con = make_console()
    con.print(t)
    c = doc["collectives"]
    con.print(f"collectives: {c['matched']} matched across ranks, {c['unmatched_kernels']} kernels unmatched"
              + ("   (* rank taken from the file name)" if any(r["rank_source"] == "filename" for r in doc["ranks"])
                 else ""))
    for w in doc["warnings"]:
        con.print(f"warning: {w['code']}: {w['message']}")
