"""``opgraph critical-path`` and ``opgraph idle``."""

from __future__ import annotations

from typing import Any, Callable

import click

from opgraph.commands.base import console, is_multirank_input, multirank_options, per_rank_command
from opgraph.commands.base import emit_result, load_input, rank_option
from opgraph.table_options import TableFiles, table_file_options
from opgraph.errors import OpgraphInputError


def parse_ranks(spec: str | None) -> list[int] | None:
    """``None`` / ``"all"`` -> None (every rank); ``"0,3"`` / ``"0-2,5"`` -> sorted ranks
    (the syntax of ``opgraph build --keep``). ValueError otherwise."""
    from opgraph.multirank.job import RankRangeTooWide, parse_rank_set

    if spec is None or spec.strip().lower() == "all":
        return None
    try:
        return sorted(parse_rank_set(spec))
    except RankRangeTooWide as e:
        raise ValueError(f"--ranks {spec!r}: {e}") from None
    except ValueError:
        raise ValueError(f"--ranks {spec!r}: expected all or ranks like 0,3,5-7") from None


def _crossrank(input: str, window: str | None, ranks: str | None, as_json: bool, no_path: bool, top: int,
               files: TableFiles | None, compute: Callable[[list[int] | None], Any]) -> None:
    """``critical-path`` on a multi-rank job: the cross-rank path per step, ``compute(ranks)``
    on the job graph or on the rank traces; its errors as one line naming ``input``."""
    from opgraph.analysis.critical_path.engine import CircularPath

    if window is not None:
        raise OpgraphInputError(input, "--window is not supported on a multi-rank job: windows are the "
                                       "steps of the slowest rank")
    try:
        sel = parse_ranks(ranks)
    except ValueError as e:
        raise OpgraphInputError(input, str(e)) from None  # names --ranks and the problem
    try:
        res = compute(sel)
    except CircularPath as e:
        raise OpgraphInputError(input, str(e)) from None
    except ValueError as e:
        raise OpgraphInputError(input, f"--ranks {ranks or 'all'}: {e}") from None
    from opgraph.export.text.crossrank import render_crossrank_path
    emit_result(input, res.tables, files, as_json, lambda: res.to_dict(with_path=not no_path),
                "critical-path.schema.json", lambda: render_crossrank_path(res, console(), top=top))


def _from_traces(input: str, workers: int | None, scheduler: str | None) -> Callable[[list[int] | None], Any]:
    """``compute`` of :func:`_crossrank` for rank traces: rank by rank, with a progress bar."""
    def compute(sel: list[int] | None) -> Any:
        from opgraph.analysis.crossrank_workers import crossrank_from_traces
        from opgraph.progress import rank_progress

        with rank_progress("ranks: read, walked, named") as step:
            return crossrank_from_traces([input], ranks=sel, workers=workers, scheduler=scheduler,
                                         progress=lambda _name, d, n: step(d, n))
    return compute


@click.command("critical-path")
@click.argument("input", type=str)
@click.option("--window", default=None,
              help="'all' for the whole trace, or a regex matched against annotation/op names "
                   "(default: each ProfilerStep#N, else GPU ProfilerStep annotations, else NVTX "
                   "'Iteration N', else the whole trace). A regex that matches nothing exits 2.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (schemas/critical-path.schema.json).")
@click.option("--no-path", is_flag=True, help="With --json, leave out the per-segment path.")
@click.option("--top", type=click.IntRange(min=1), default=8, show_default=True, help="Top ops and kernels shown per window.")
@click.option("--ranks", "ranks", default=None, metavar="all|R[,R...]",
              help="Multi-rank job graph: the ranks to analyse (default: all ranks kept in full). The path "
                   "of each step may cross ranks at collectives (docs/multirank.md).")
@click.option("--summary", "summary_only", is_flag=True,
              help="Print only the run verdict and what each category is worth, not the per-step tables.")
@click.option("--gains/--no-gains", "with_gains", default=True, show_default=True,
              help="Predict what each category is worth with the what-if engine (one replay per category "
                   "of 5 %% or more of the path).")
@table_file_options
@multirank_options
def critical_path_cmd(input: str, window: str | None, as_json: bool, no_path: bool, top: int,
                      ranks: str | None, csv_dir: TableFiles | None, scheduler: str | None = None,
                      workers: int | None = None, summary_only: bool = False, with_gains: bool = True) -> None:
    """Critical path of each step: what bounds it, segment by segment.

    First the run verdict (the steady-state step, the outlier steps and why, "bound by X"
    only when X holds most of the path, else "mixed") with what each category is worth:
    the gain a what-if predicts for the change that would shrink it (docs/critical-path.md).

    On a multi-rank job graph (opgraph build DIR), one cross-rank path per step, in the
    window of the step's slowest rank, with gpu_comm_wait naming the rank waited for.
    Given the rank traces themselves (a directory or a glob), the same path is computed
    rank by rank in the process pool (--workers) or on a Dask cluster (--scheduler), so
    no process holds more than one rank."""
    from opgraph.analysis.critical_path.path import critical_path
    from opgraph.commands.window_option import check_window, window_errors

    if is_multirank_input((input,)):
        _crossrank(input, window, ranks, as_json, no_path, top, csv_dir, _from_traces(input, workers, scheduler))
        return
    if workers is not None or scheduler is not None:
        raise OpgraphInputError(input, "--workers/--scheduler apply to rank traces (a directory or a glob)")
    G = load_input(input, job_ok=True)
    if isinstance(G.graph.get("job"), dict):
        from opgraph.analysis.crossrank import crossrank_critical_path

        _crossrank(input, window, ranks, as_json, no_path, top, csv_dir,
                   lambda sel: crossrank_critical_path(G, ranks=sel))
        return
    if ranks is not None:
        raise OpgraphInputError(input, "--ranks needs a multi-rank job graph (opgraph build DIR -o job.gpickle); "
                                       "this graph has one rank")
    check_window(G, input, window)
    with window_errors(input, "--window"):
        res = critical_path(G, window=window, with_nodes=False)
    from opgraph.export.text.results import render_critical_path
    from opgraph.export.text.verdict import render_run_verdict

    from opgraph.predict.gains import category_gains, path_document

    def doc() -> dict:
        return path_document(G, res, with_path=not no_path, with_gains=with_gains)

    def render() -> None:
        con = console()
        verdict = res.verdict()
        skipped: list[str] = []
        render_run_verdict(verdict, category_gains(G, verdict.shares, skipped=skipped) if with_gains else None, con)
        for n in skipped:
            con.print(f"note: {n}")
        if not summary_only:
            con.print()
            render_critical_path(res, con, top=top)
    emit_result(input, res.tables, csv_dir, as_json, doc, "critical-path.schema.json", render)


@click.command("idle")
@rank_option
@click.argument("input", type=str)
@click.option("--kernel-wait-us", type=click.FloatRange(min=0, max=1e9), default=30.0, show_default=True,
              help="Per-stream gaps shorter than this that are not host waits count as kernel_wait.")
@click.option("--top", type=click.IntRange(min=1), default=15, show_default=True, help="Blamed CPU ops to list.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (schemas/idle.schema.json).")
@table_file_options
@multirank_options
def idle_cmd(input: str, kernel_wait_us: float, top: int, as_json: bool, csv_dir: TableFiles | None,
             rank: int | None = None, scheduler: str | None = None, workers: int | None = None) -> None:
    """GPU idle time per device and stream, CPU-induced idle, and the CPU ops to blame."""
    from opgraph.analysis.busy_windows import idle_with_windows
    from opgraph.export.text.results import render_busy_windows, render_idle

    def show_one(res, con) -> None:
        render_idle(res, con, top=top)
        render_busy_windows(res.windows, con)

    if is_multirank_input([input]) or scheduler:  # a job's rank traces: one task per rank
        per_rank_command(input, idle_with_windows, {"kernel_wait_us": kernel_wait_us}, csv_dir, as_json,
                         "idle.schema.json", lambda res: res.to_dict(top=top), show_one, workers, scheduler, rank)
        return
    G = load_input(input, rank=rank)
    res = idle_with_windows(G, kernel_wait_us=kernel_wait_us)
    doc = res.to_dict(top=top)

    def show() -> None:
        show_one(res, console())

    emit_result(input, res.tables, csv_dir, as_json, lambda: doc, "idle.schema.json", show)
