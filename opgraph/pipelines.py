"""The file-to-file pipelines behind ``opgraph build`` and ``opgraph augment``: read a
trace (or a folder of rank traces), build, and write the result, in the fastest form
(column payloads pickled without a networkx round trip). Each returns a
:class:`PipelineResult`: the one line the command prints and the counts of its ``--json``.

Progress is reported through ``step(phase)`` (:func:`opgraph.progress.phase_progress`) or
``progress(done, total)`` for ranks; notes for the user (the execution-trace and capture
linking reports) go to ``note(line)``. Nothing here prints.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from opgraph.errors import OpgraphInputError
from opgraph.gc_pause import gc_paused

Step = Callable[[str], None]
Note = Callable[[str], None]

#: The outputs a graph may be saved to.
GRAPH_SUFFIXES = (".gpickle", ".json.gz", ".json")


@dataclass
class PipelineResult:
    """What a pipeline wrote: ``message`` (one line for stderr), ``counts`` (numbers for
    ``--json``) and ``notes`` (further lines for stderr)."""

    message: str
    counts: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def _noop(*_a: Any) -> None:
    return None


def check_graph_output(output: str) -> None:
    """A graph is saved as ``.gpickle`` (fast) or node-link ``.json[.gz]``."""
    if not output.endswith(GRAPH_SUFFIXES):
        raise OpgraphInputError(output, "unknown output type: use .gpickle, .json.gz or .json")


def build_file(trace: str, output: str, *, fmt: str | None = None, et_path: str | None = None,
               captures: Sequence[str] = (), iterations: tuple[int, int] | None = None,
               step_regex: str | None = None, step: Step = _noop, note: Note = _noop) -> PipelineResult:
    """``opgraph build TRACE -o OUTPUT``: read ``trace`` (a raw trace or a saved graph),
    keep steps ``iterations = (start, stop)`` (positions, Python slice rules) when given,
    link an execution trace (``et_path``) and graph captures (``captures``), build the
    graph and save it to ``output`` (``.gpickle`` from the column payload directly)."""
    from opgraph.graph.build import build_payload
    from opgraph.graph.io import GraphPayload, graph_from_payload, read_input, save_gpickle, save_graph
    from opgraph.model.trace_graph import TraceGraph

    check_graph_output(output)
    with gc_paused():  # millions of long-lived, acyclic objects: the cyclic GC only costs time here
        got = read_input(trace, format=fmt, step=step)
        if iterations is not None:
            if isinstance(got, TraceGraph):
                raise OpgraphInputError(trace, "--iterations needs a raw trace, not a saved graph")
            from opgraph.analysis.trim import trim_table

            try:
                got = trim_table(got, iterations[0], iterations[1], step_regex)
            except ValueError as e:
                raise OpgraphInputError(trace, f"--iterations {iterations[0]}:{iterations[1]}: {e}") from None
        if isinstance(got, TraceGraph):
            if et_path is not None or captures:
                raise OpgraphInputError(trace, ("--et" if et_path is not None else "--capture")
                                        + " needs a raw trace, not a saved graph")
            n_nodes, n_edges, health = got.number_of_nodes(), got.number_of_edges(), got.graph.get("health", [])
            step("save")
            save_graph(got, output, inputs=(trace,))
        else:
            if et_path is not None:  # link an execution trace (opgraph/graph/et_link.py)
                from opgraph.graph.et_link import attach_et_file, report_line
                note(report_line(attach_et_file(got, et_path)))
            if captures:  # graph replays -> the ops that captured them (opgraph/graph/graph_replay.py)
                from opgraph.graph.graph_replay import attach_capture_files
                from opgraph.graph.graph_replay import report_line as replay_line
                step("captures")
                note(replay_line(attach_capture_files(got, list(captures))))
            payload = build_payload(got, step)
            del got
            n_nodes, n_edges = len(payload["nodes"]), len(payload["src"])
            health = payload["graph"].get("health", [])
            step("save")
            if output.endswith(".gpickle"):
                save_gpickle(GraphPayload(payload), output, inputs=(trace,))
            else:
                save_graph(graph_from_payload(payload), output, inputs=(trace,))
    msg = (f"{output}: {n_nodes} nodes, {n_edges} edges"
           + (f", {len(health)} trace-health warnings (see `opgraph info`)" if health else ""))
    return PipelineResult(msg, {"nodes": int(n_nodes), "edges": int(n_edges), "health_warnings": len(health)})


def build_job_file(inputs: list[str], output: str, *, keep: str | None = None, workers: int | None = None,
                   scheduler: str | None = None, budget: int | None = None,
                   progress: Callable[[int, int], None] = _noop) -> PipelineResult:
    """``opgraph build DIR|GLOB|FILES... -o job.gpickle``: build the multi-rank job graph
    (ranks read in a process pool or on the Dask ``scheduler``; ``keep`` and ``budget``
    (bytes) choose the ranks kept in full) and save it. Counts: ranks, nodes, edges,
    matched collectives, unmatched kernels; the keep policy is a note."""
    from opgraph.graph.io import GraphPayload, check_writable, graph_from_payload, save_gpickle, save_graph
    from opgraph.multirank.job import build_job

    check_graph_output(output)
    check_writable(output)
    with gc_paused():
        jb = build_job(inputs, keep=keep, workers=workers, scheduler=scheduler, budget=budget, progress=progress)
        p = jb.payload
        job = jb.job
        n_nodes, n_edges = len(p["nodes"]), len(p["src"])
        if output.endswith(".gpickle"):
            save_gpickle(GraphPayload(p), output)
        else:
            save_graph(graph_from_payload(p), output)
    al = job["alignment"]
    max_off = max((abs(v) for v in al["offsets_ns"].values()), default=0)
    max_res = max(al["residual_ns"].values(), default=0)
    coll = job["collectives"]
    matched = int(coll.loc[coll["coll_id"] >= 0, "coll_id"].nunique()) if len(coll) else 0
    msg = (f"{output}: {len(job['ranks'])} ranks, {n_nodes} nodes, {n_edges} edges; {matched} collectives "
           f"matched, {job['unmatched']} kernels unmatched; clock offsets up to {max_off / 1000:.3f} µs "
           f"(residual ≤ {max_res / 1000:.3f} µs)"
           + (f"; {len(job['warnings'])} job warnings (see `opgraph info`)" if job["warnings"] else ""))
    notes = [f"{output}: {jb.keep_note}"] if jb.keep_note and jb.keep_note != "all ranks kept in full" else []
    return PipelineResult(msg, {"ranks": len(job["ranks"]), "nodes": int(n_nodes), "edges": int(n_edges),
                                "collectives_matched": matched, "kernels_unmatched": int(job["unmatched"])}, notes)


def job_summary(inputs: list[str], *, workers: int | None = None, scheduler: str | None = None,
                progress: Callable[[int, int], None] = _noop) -> dict[str, Any]:
    """``opgraph summary DIR``: the per-rank summary computed rank by rank in the pool or
    on the cluster (schemas/multirank-summary.schema.json)."""
    from opgraph.multirank.job import collect
    from opgraph.multirank.report import job_summary_doc
    from opgraph.multirank.worker import rank_result

    results, skipped, _ = collect(inputs, keep="none", workers=workers, scheduler=scheduler,
                                  progress=progress, fn=rank_result)
    return job_summary_doc(results, skipped)


def job_stragglers(inputs: list[str], *, workers: int | None = None, scheduler: str | None = None,
                   progress: Callable[[int, int], None] = _noop) -> Any:
    """``opgraph stragglers DIR``: the stragglers of a job read from its rank traces, each
    rank in the pool or on the cluster. No rank is kept in full: only each rank's summary,
    steps and collective kernels travel to this process, which matches the collectives and
    ranks the arrivals (:func:`opgraph.analysis.stragglers.stragglers`; the same answer as
    on the saved job graph)."""
    from opgraph.analysis.stragglers import stragglers
    from opgraph.model.trace_graph import TraceGraph
    from opgraph.multirank.job import build_job

    jb = build_job(inputs, keep="none", workers=workers, scheduler=scheduler, progress=progress)
    return stragglers(TraceGraph(jb.payload))


def augment_file(trace: str, output: str, *, fmt: str | None = None, device: str | None = None,
                 dtype: str | None = None, step: Step = _noop) -> PipelineResult:
    """``opgraph augment TRACE -o OUT``: write ``trace`` back out with FLOPs, bytes and
    roofline args on the ops and kernels that have a cost model (docs/roofline.md)."""
    import networkx as nx

    from opgraph.analysis.roofline import TraceColumns, augment_args, roofline, summarize
    from opgraph.export.perfetto.chrome import write_trace
    from opgraph.graph.io import read_input
    from opgraph.model.trace_graph import TraceGraph
    from opgraph.outfiles import check_output_path

    if not output.endswith((".json", ".json.gz")):
        raise OpgraphInputError(output, "unknown output type: use .json or .json.gz")
    check_output_path(output, (trace,))  # before any work: not the input, not a folder or FIFO
    with gc_paused():
        got = read_input(trace, format=fmt, step=step)
        if isinstance(got, TraceGraph):   # a saved graph
            cols = TraceColumns.from_trace_graph(got)
            shell = got
        else:
            step("nesting")
            cols = TraceColumns.from_table(got)
            shell = nx.DiGraph()
            shell.graph.update(cols.graph)
            del got
        if shell.graph.get("events") is None:
            raise OpgraphInputError(trace, "this graph carries no events table to write back")
        step("roofline")
        try:
            res = roofline(cols, device=device, dtype=dtype)
        except ValueError as e:
            raise OpgraphInputError(trace, str(e)) from None
        del cols
        add = augment_args(res)
        step("write")
        write_trace(shell, output, add_args=add, inputs=(trace,))
    s = summarize(res)
    cov = s["coverage_time_pct"]
    n_ann = sum(1 for v in add.values() if "kernel_flop" in v)
    msg = (f"{output}: {n_ann:,} events annotated; {s['modelled_kernels']:,}/{s['kernels']:,} kernels have a model"
           + (f" ({cov:.1f}% of kernel time)" if cov is not None else ""))
    from opgraph.analysis.roofline.devices import unknown_device_lines

    notes = [f"warning: {trace}: {line}" for line in unknown_device_lines([d.to_dict() for d in res.devices.values()])]
    return PipelineResult(msg, {"events_annotated": n_ann, "kernels": int(s["kernels"]),
                                "modelled_kernels": int(s["modelled_kernels"]), "coverage_time_pct": cov}, notes)


@dataclass
class RankAnalysis:
    """One rank's result of a per-rank analysis (:func:`per_rank`): its ``rank`` (from the
    trace's ``distributedInfo``, else its file name, else None), its ``file`` and the
    analysis ``result`` (a :class:`~opgraph.analysis.display.TableResult`)."""

    rank: int | None
    file: str
    result: Any
    sha256: str | None = None


def per_rank_warnings(results: list[RankAnalysis]) -> list[str]:
    """One line per job-level oddity of a :func:`per_rank` run: rank files with the same
    content (:func:`opgraph.multirank.identity.identical_traces`)."""
    from opgraph.multirank.identity import identical_traces

    return [w["message"] for w in identical_traces([r.file for r in results], [r.sha256 for r in results])]


def rank_analysis(path: str, fn: Callable[..., Any], kwargs: dict[str, Any]) -> RankAnalysis:
    """Run in a worker (a pool process or a Dask worker): read and build the trace at
    ``path`` and return ``fn(G, **kwargs)`` (``G`` a
    :class:`~opgraph.model.trace_graph.TraceGraph`) with the rank it belongs to. Only the
    result's tables travel back, never the graph."""
    from opgraph.graph.io import load_any
    from opgraph.multirank.identity import rank_from_filename

    with gc_paused():
        G = load_any(path)
        di = G.graph.get("distributed_info") or {}
        r = di.get("rank") if isinstance(di, dict) else None
        rank = int(r) if isinstance(r, int) and not isinstance(r, bool) and r >= 0 else rank_from_filename(path)
        src = G.graph.get("source") or {}
        return RankAnalysis(rank, path, fn(G, **kwargs), src.get("sha256") if isinstance(src, dict) else None)


def per_rank(inputs: Sequence[str] | str, fn: Callable[..., Any], kwargs: dict[str, Any] | None = None, *,
             workers: int | None = None, scheduler: str | None = None,
             progress: Callable[[int, int], None] = _noop) -> list[RankAnalysis]:
    """``fn(G, **kwargs)`` on every rank trace of a job (a directory, a glob or several
    files), each rank in its own pool process, or as a task on the Dask cluster at
    ``scheduler``: the ranks' graphs never meet in one process, only their results come
    back. ``fn`` must be a module-level function (it is pickled by reference). Results
    sorted by rank (ranks without one last, by file)."""
    from opgraph.multirank.executor import run
    from opgraph.multirank.identity import check_ranks, discover

    files = discover(list(inputs) if not isinstance(inputs, str) else [inputs]).files
    out = run(rank_analysis, [(f, fn, dict(kwargs or {})) for f in files], workers=workers, scheduler=scheduler,
              progress=progress)
    # the same refusals as build and critical-path: a rank claimed twice, a rank id out of
    # range (rank-less files are listed last, as before); identical files: per_rank_warnings
    check_ranks([(r.rank, r.file) for r in out], unknown_ok=True)
    return sorted(out, key=lambda r: (r.rank is None, r.rank if r.rank is not None else 0, r.file))
