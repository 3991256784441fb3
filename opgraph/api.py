"""The public Python API: ``import opgraph``.

Every command of the CLI has a function here that takes a graph (or a path) and returns
data: a result object with ``tables()`` / ``to_frame()`` / ``to_dict()`` that renders its
tables in Jupyter. Times in tables are µs; the objects' ``*_ns`` fields are ns.

Examples
--------
>>> import opgraph
>>> path = opgraph.example_trace("gpu_bound")   # a synthesized trace with known answers
>>> G = opgraph.load(path)
>>> opgraph.critical_path(G).to_frame("breakdown")["bound"].tolist()
['gpu_compute', 'gpu_compute', 'gpu_compute']
>>> opgraph.idle(G).to_frame()[["device", "idle_us"]].shape
(1, 2)
"""

from __future__ import annotations

import html
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import networkx as nx
import pandas as pd

from opgraph.analysis.critical_path.run_result import CriticalPathResult
from opgraph.analysis.display import TableResult
from opgraph.analysis.idle import IdleResult
from opgraph.analysis.roofline import RooflineResult
from opgraph.analysis.stragglers import StragglerReport
from opgraph.api_args import (
    bool_arg, choice_arg, graph_arg, number_arg, opt_str_arg, path_arg, paths_arg, ranks_arg, regex_arg, str_list_arg,
    suffix_arg,
)
from opgraph.catalog.entries import ANALYSES, api_names
from opgraph.catalog.spec import Analysis, Option, resolve
from opgraph.model.trace_graph import TraceGraph

PathLike = str | os.PathLike[str]

#: The API's names: these, and one function per catalog entry (opgraph/catalog/entries.py);
#: ``opgraph/__init__.py`` forwards the same names without importing this module.
__all__ = [
    "Report", "load", "build", "save", "example_trace", "roofline", "busy_windows",
    "export_perfetto", "export_graphviz", "report_html", "plot", "graph_tables", "export_tables", "TraceGraph",
    *api_names(),
]


@dataclass(repr=False)
class Report(TableResult):
    """A result that is a JSON-ready document (``to_dict()``, the shape of the command's
    ``--json`` schema) with its tables as DataFrames (``tables()``, µs)."""

    kind: str
    doc: dict[str, Any]
    frames: dict[str, pd.DataFrame] = field(default_factory=dict)
    main: str = ""

    def to_dict(self) -> dict[str, Any]:
        """The document, as ``opgraph <command> --json`` prints it."""
        return self.doc

    def tables(self) -> dict[str, pd.DataFrame]:
        return self.frames

    def to_frame(self, table: str | None = None) -> pd.DataFrame:
        if not self.frames:
            raise KeyError(f"{self.kind}: no tables; see to_dict()")
        return super().to_frame(table or self.main or None)

    def __repr__(self) -> str:
        return super().__repr__().replace("<Report:", f"<Report {self.kind}:", 1)

    def _repr_html_(self) -> str:
        if not self.frames:
            return f"<div><b>{html.escape(self.kind)}</b><pre>{html.escape(repr(self.doc)[:4000])}</pre></div>"
        return super()._repr_html_().replace("<b>Report</b>", f"<b>{html.escape(self.kind)}</b>", 1)


def _graph(g: "TraceGraph | nx.DiGraph | PathLike", name: str = "G") -> TraceGraph:
    """``g`` as a :class:`TraceGraph`: loaded when a path, taken into columns when an
    opgraph-built ``networkx.DiGraph`` (:meth:`TraceGraph.of`); anything else is a
    ``TypeError`` naming the argument ``name`` (:func:`~opgraph.api_args.graph_arg`)."""
    g = graph_arg(name, g)
    if isinstance(g, (nx.DiGraph, TraceGraph)):
        try:
            return TraceGraph.of(g)
        except ValueError as e:
            raise ValueError(f"{name}: a networkx graph {e} (use opgraph.load or opgraph.build)") from None
    return load(g)


def _sources(*gs: Any) -> tuple[str, ...]:
    """The files no writer may replace: each argument that is a path (or list of paths), and
    the files a graph was read from (``graph["source"]["file"]``, every rank's ``file`` of a
    job graph). The writers add the device files in force (:func:`opgraph.outfiles.protected_inputs`)."""
    got: list[str] = []
    for g in gs:
        if isinstance(g, (str, os.PathLike)):
            got.append(os.fspath(g))
        elif isinstance(g, (list, tuple)):
            got += [os.fspath(x) for x in g if isinstance(x, (str, os.PathLike))]
        elif isinstance(g, (nx.DiGraph, TraceGraph)):
            src = g.graph.get("source")
            if isinstance(src, dict) and isinstance(src.get("file"), str):
                got.append(src["file"])
            job = g.graph.get("job")
            if isinstance(job, dict):
                got += [r["file"] for r in job.get("ranks") or ()
                        if isinstance(r, dict) and isinstance(r.get("file"), str)]
    return tuple(got)


# ---------------------------------------------------------------------------------- graphs
def load(path: PathLike | Sequence[PathLike], format: str | None = None) -> TraceGraph:
    """The :class:`TraceGraph` of ``path``: a saved graph (``.gpickle``, node-link ``.json[.gz]``) or any
    raw trace (Kineto JSON, Nsight Systems SQLite/JSON/CSV, OpenCL logs; ``format`` forces
    one). A folder, or a list of traces (one per rank), gives the multi-rank job graph
    (ranks read in parallel, collectives matched, clocks aligned; docs/multirank.md). Bad
    input raises :class:`opgraph.errors.OpgraphInputError` (one line).

    The graph is held in columns (docs/model.md): no networkx dict is made until
    ``.to_networkx()`` asks for the ``DiGraph`` view. Every function here takes it (and
    an opgraph-built ``DiGraph``, taken back into columns).

    Examples
    --------
    >>> import opgraph
    >>> T = opgraph.load(opgraph.example_trace("gpu_bound"))
    >>> {"cpu_op", "runtime", "kernel"} <= set(T.column("kind"))
    True
    >>> G = T.to_networkx()
    >>> T.number_of_nodes() == G.number_of_nodes() and T.number_of_edges() == G.number_of_edges()
    True
    >>> opgraph.idle(G).to_frame()["idle_us"].tolist() == opgraph.idle(T).to_frame()["idle_us"].tolist()
    True
    """
    from opgraph.graph.io import load_any

    path = paths_arg("path", path)
    format = opt_str_arg("format", format)
    many = not isinstance(path, (str, os.PathLike))
    if many or Path(path).is_dir():
        from opgraph.multirank.job import build_job

        if format is not None:
            raise ValueError("format applies to a single trace, not to a multi-rank job")
        inputs = [str(p) for p in path] if many else [str(path)]  # type: ignore[union-attr]
        payload = build_job(inputs).payload
        return TraceGraph(payload)
    return load_any(path, format)


def build(trace: PathLike | Sequence[PathLike], output: PathLike | None = None, *, format: str | None = None,
          capture: PathLike | Sequence[PathLike] | None = None) -> TraceGraph:
    """Build the graph of the raw trace ``trace`` (as ``opgraph build``); save it to
    ``output`` (``.gpickle`` or ``.json[.gz]``) when given. ``capture``: trace(s) that
    recorded the CUDA/HIP-graph captures ``trace`` replays (``opgraph build --capture``;
    docs/graph-replay.md).
    Examples
    --------
    >>> import opgraph, tempfile, os
    >>> out = os.path.join(tempfile.mkdtemp(), "g.gpickle")
    >>> G = opgraph.build(opgraph.example_trace("cpu_bound"), out)
    >>> opgraph.load(out).number_of_nodes() == G.number_of_nodes()
    True
    """
    trace = paths_arg("trace", trace)
    format = opt_str_arg("format", format)
    if capture is not None:
        capture = paths_arg("capture", capture)
    if output is not None:
        from opgraph.outfiles import check_output_path

        output = suffix_arg("output", output, (".gpickle", ".json", ".json.gz"))
        check_output_path(output, _sources(trace, capture))  # before any work: never over an input
    if capture is not None:
        from opgraph.graph.build import build_graph
        from opgraph.graph.graph_replay import attach_capture_files
        from opgraph.ingest.readers import read_trace

        if not isinstance(trace, str):
            raise ValueError("capture: applies to a single trace, not to a multi-rank job")
        table = read_trace(trace, format)
        attach_capture_files(table, [str(capture)] if isinstance(capture, (str, Path)) else [str(c) for c in capture])
        G = build_graph(table)
    else:
        G = load(trace, format)
    if output is not None:
        from opgraph.graph.io import save_graph

        save_graph(G, output, inputs=_sources(trace, capture, G))
    return G


def save(G: TraceGraph, path: PathLike) -> Path:
    """Save ``G`` (a :class:`TraceGraph`, or an opgraph-built ``DiGraph``) by extension:
    ``.gpickle`` (fast: the columns as they are) or node-link ``.json[.gz]``."""
    from opgraph.graph.io import save_graph

    G = graph_arg("G", G, paths=False)
    path = suffix_arg("path", path, (".gpickle", ".json", ".json.gz"))
    save_graph(G, path, inputs=_sources(G))
    return Path(path)


def example_trace(name: str = "gpu_bound", directory: PathLike | None = None, steps: int = 3) -> Path:
    """Write a synthesized Kineto trace whose answers are known by construction
    (``opgraph.testing.synth``: ``gpu_bound``, ``cpu_bound``, ``sync_every_op``,
    ``two_stream_event_wait``, ...) and return its path (a new temporary folder unless
    ``directory``). Its ``<name>.answers.json`` lies beside it.
    Examples
    --------
    >>> import opgraph
    >>> opgraph.example_trace("sync_every_op").name
    'sync_every_op.json'
    """
    from opgraph.testing.synth import synthesize, write_scenario

    d = Path(directory) if directory is not None else Path(tempfile.mkdtemp(prefix="opgraph-example-"))
    return write_scenario(synthesize(name, steps=steps), d)


# -------------------------------------------------------------------------------- analyses
def info(G: TraceGraph | PathLike) -> Report:
    """Counts, devices, streams, threads, steps and trace health (``opgraph info``).
    Examples
    --------
    >>> import opgraph
    >>> r = opgraph.info(opgraph.load(opgraph.example_trace("gpu_bound")))
    >>> r.to_dict()["source"]["format"]
    'kineto'
    >>> "kernel" in set(r.to_frame()["kind"])
    True
    """
    from opgraph.analysis.info import trace_info

    from opgraph.export.tables.documents import info_frames

    doc = trace_info(_graph(G))
    frames = info_frames(doc)
    return Report("info", doc, frames, "nodes_by_kind")


def critical_path(G: TraceGraph | PathLike | Sequence[PathLike], window: str | None = None,
                  ranks: Sequence[int] | None = None, *, workers: int | None = None,
                  scheduler: str | None = None) -> CriticalPathResult:
    """The critical path of every window (``opgraph critical-path``): default one per step,
    ``"all"`` for the whole trace, or a regex over range names. On a multi-rank job graph,
    the cross-rank path of every step (``ranks`` restricts it). Given a job's rank traces
    (a folder, a glob or a list of files), the same cross-rank path computed rank by rank
    in a process pool of ``workers`` or on the Dask cluster at ``scheduler``, no process
    holding more than one rank (docs/multirank.md).
    Examples
    --------
    >>> import opgraph
    >>> res = opgraph.critical_path(opgraph.load(opgraph.example_trace("cpu_bound")))
    >>> res.summary()["bound"]
    'cpu'
    >>> path = res.to_frame()             # one row per stretch of the path, µs
    >>> float(path["dur_us"].sum()) == res.summary()["length_us"]
    True
    """
    from opgraph.multirank.identity import is_job_input

    G = graph_arg("G", G)
    window = regex_arg("window", window)
    ranks = ranks_arg("ranks", ranks)
    workers = number_arg("workers", workers, minimum=1, integer=True, none_ok=True)
    scheduler = opt_str_arg("scheduler", scheduler)
    if not isinstance(G, (nx.DiGraph, TraceGraph)) and is_job_input(G if isinstance(G, (list, tuple)) else [G]):
        if window is not None:
            raise ValueError("window: a multi-rank job's windows are the steps of the slowest rank")
        from opgraph.analysis.crossrank_workers import crossrank_from_traces

        paths = [os.fspath(p) for p in G] if isinstance(G, (list, tuple)) else [os.fspath(G)]
        return crossrank_from_traces(paths, ranks, workers=workers, scheduler=scheduler)  # type: ignore[return-value]
    if workers is not None or scheduler is not None:
        raise ValueError("workers, scheduler: apply to a job's rank traces (a folder, a glob or a list of files), "
                         "not to a loaded graph or a single trace")
    G = _graph(G)
    if isinstance(G.graph.get("job"), dict):
        from opgraph.analysis.crossrank import crossrank_critical_path

        return crossrank_critical_path(G, ranks)  # type: ignore[return-value]
    if ranks is not None:
        raise ValueError("ranks: applies to a multi-rank job graph; this graph has one rank")
    from opgraph.analysis.critical_path.path import critical_path as _cp

    return _cp(G, window)


def idle(G: TraceGraph | PathLike, kernel_wait_us: float = 30.0) -> IdleResult:
    """GPU idle per device and stream, split by cause, and the CPU ops blamed for the
    CPU-induced part (``opgraph idle``).
    Examples
    --------
    >>> import opgraph
    >>> res = opgraph.idle(opgraph.load(opgraph.example_trace("cpu_bound")))
    >>> res.to_frame("blame_top").columns.tolist()
    ['kind', 'name', 'blame_us', 'count', 'share_pct']
    """
    from opgraph.analysis.idle import idle_time

    kernel_wait_us = number_arg("kernel_wait_us", kernel_wait_us, maximum=1e9)
    return idle_time(_graph(G), kernel_wait_us)


def _doc_report(kind: str, doc: dict[str, Any], frames_of: Callable[[dict[str, Any]], dict[str, pd.DataFrame]],
                main: str = "") -> Report:
    frames = frames_of(doc)
    return Report(kind, doc, frames, main if main in frames else "")


def comm_overlap(G: TraceGraph | PathLike, window: str | None = None) -> Any:
    """Compute, communication and memory time per step and device, their overlap and the
    exposed communication (``opgraph overlap``; an :class:`~opgraph.analysis.overlap.OverlapResult`).

    Examples
    --------
    >>> import opgraph
    >>> t = opgraph.comm_overlap(opgraph.example_trace("gpu_bound")).to_frame()
    >>> t["window"].tolist()
    ['ProfilerStep#1', 'ProfilerStep#2', 'ProfilerStep#3', 'all']
    """
    from opgraph.analysis.overlap import comm_overlap as _overlap

    window = regex_arg("window", window)
    return _overlap(_graph(G), window)


def busy_windows(G: TraceGraph | PathLike, step_regex: str | None = None) -> Any:
    """GPU busy and idle per device over the GPU span (``idle``'s window) and over the
    steps' window (``summary``'s), reconciled: steps' window = GPU span + lead-in + tail
    (a :class:`~opgraph.analysis.busy_windows.BusyWindows`; docs/idle.md, "Windows").

    Examples
    --------
    >>> import opgraph
    >>> w = opgraph.busy_windows(opgraph.example_trace("cpu_bound")).to_frame().iloc[0]
    >>> bool(w["steps_span_us"] == w["gpu_span_us"] + w["lead_in_us"] + w["tail_us"])
    True
    """
    from opgraph.analysis.busy_windows import busy_windows as _busy
    from opgraph.analysis.data_markers import data_markers_of

    return _busy(_graph(G), step_regex, data_markers_of(None))










def memory_timeline(G: TraceGraph | PathLike, window: str | None = None) -> Any:
    """Allocated / reserved memory per device over time from the profiler's ``[memory]``
    events, peaks per step and over the trace, top allocating ops and what is live at the
    peak (``opgraph memory``; a :class:`~opgraph.analysis.memory_timeline.MemoryTimeline`;
    bytes, µs).

    Examples
    --------
    >>> import opgraph
    >>> m = opgraph.memory_timeline(opgraph.example_trace("memory"))
    >>> int(m.to_frame().set_index("device_type").loc["CUDA", "peak_allocated_bytes"]) >> 20
    102
    """
    from opgraph.analysis.memory_timeline import memory_timeline as _mt

    window = regex_arg("window", window)
    return _mt(_graph(G), window)




def advise(G: TraceGraph | PathLike) -> Any:
    """What to try next: rules over the other analyses, each finding with the time at stake
    and its numbers (``opgraph advise``; a
    :class:`~opgraph.predict.recommendations.Recommendations`; µs).

    Examples
    --------
    >>> import opgraph
    >>> opgraph.advise(opgraph.example_trace("cpu_bound")).to_frame()["rule"].tolist()[:2]
    ['cpu_induced_idle', 'launch_bound']
    """
    from opgraph.predict.recommendations import recommendations

    return recommendations(_graph(G))


def shapes(G: TraceGraph | PathLike, *, device: str | None = None, dtype: str | None = None) -> Any:
    """GEMM, attention and convolution calls grouped by problem size, with count, kernel
    time, FLOPs per call, achieved TFLOP/s, % of peak, TB/s and bound (``opgraph shapes``;
    a :class:`~opgraph.analysis.shapes.Shapes`: tables ``gemm``, ``attention``, ``conv``).

    Examples
    --------
    >>> import opgraph
    >>> opgraph.shapes(opgraph.example_trace("gemm_shapes")).to_frame("gemm")["M"].tolist()
    [1024, 64, 100]
    """
    from opgraph.analysis.shapes import shapes as _shapes

    device, dtype = opt_str_arg("device", device), opt_str_arg("dtype", dtype)
    return _shapes(_graph(G), device=device, dtype=dtype)




def kernel_sequences(G: TraceGraph | PathLike, op: str | None = None, min_length: int = 3, max_length: int = 8,
                     top: int = 10) -> Any:
    """Repeated runs of consecutive kernels per stream, most GPU time first: candidates for
    fusion or a CUDA graph (``opgraph sequences``; a
    :class:`~opgraph.analysis.sequences.KernelSequences`; µs).

    Examples
    --------
    >>> import opgraph
    >>> s = opgraph.kernel_sequences(opgraph.example_trace("gpu_bound"), min_length=2)
    >>> int(s.to_frame()["occurrences"].iloc[0]) >= 2
    True
    """
    from opgraph.analysis.sequences import kernel_sequences as _ks

    op = regex_arg("op", op, all_ok=False)
    min_length = number_arg("min_length", min_length, minimum=2, maximum=64, integer=True)
    max_length = number_arg("max_length", max_length, minimum=2, maximum=64, integer=True)
    top = number_arg("top", top, minimum=1, maximum=1000, integer=True)
    return _ks(_graph(G), op, min_length, max_length, top)




def breakdown(G: TraceGraph | PathLike, device: bool = False, *, depth: int = 3, top: int | None = None,
              step_regex: str | None = None, whole_trace: bool = False) -> Report:
    """Where the time goes on the host (CPU op hierarchy) or, with ``device=True``, per
    device and stream (``opgraph breakdown``).
    Examples
    --------
    >>> import opgraph
    >>> G = opgraph.load(opgraph.example_trace("gpu_bound"))
    >>> opgraph.breakdown(G).to_frame().shape[0] > 0
    True
    """
    from opgraph.analysis.device_breakdown import device_breakdown, device_breakdown_doc
    from opgraph.analysis.host_breakdown import host_breakdown, host_breakdown_doc
    from opgraph.analysis.window import analysis_window
    from opgraph.analysis.data_markers import data_markers_of
    from opgraph.analysis.graph_frame import graph_frame
    from opgraph.export.tables.documents import breakdown_frames

    device, whole_trace = bool_arg("device", device), bool_arg("whole_trace", whole_trace)
    depth = number_arg("depth", depth, minimum=1, integer=True)
    top = number_arg("top", top, minimum=1, integer=True, none_ok=True)
    step_regex = regex_arg("step_regex", step_regex, all_ok=False)
    f = graph_frame(_graph(G))
    w = analysis_window(f, step_regex, data_markers_of(None), use_steps=not whole_trace)
    if device:
        doc = device_breakdown_doc(device_breakdown(f, w), depth, top or 10)
    else:
        doc = host_breakdown_doc(host_breakdown(f, w), depth, top or 5)
    return _doc_report("breakdown", doc, breakdown_frames)


def iterations(G: TraceGraph | PathLike, step_regex: str | None = None) -> Report:
    """The steps with their CPU and GPU spans (``opgraph iterations``).
    Examples
    --------
    >>> import opgraph
    >>> opgraph.iterations(opgraph.example_trace("gpu_bound", steps=3)).to_frame().shape[0]
    3
    """
    from opgraph.analysis.data_markers import data_markers_of
    from opgraph.analysis.step_times import iterations_doc
    from opgraph.export.tables.documents import iterations_frames

    step_regex = regex_arg("step_regex", step_regex, all_ok=False)
    return _doc_report("iterations", iterations_doc(_graph(G), step_regex, data_markers_of(None)), iterations_frames)


def summary(G: TraceGraph | PathLike, batch_size: int | None = None, step_regex: str | None = None) -> Report:
    """Step time, QPS, GPU busy / idle / overlap per device and stream (``opgraph summary``).
    Examples
    --------
    >>> import opgraph
    >>> r = opgraph.summary(opgraph.example_trace("gpu_bound"), batch_size=32)
    >>> sorted(r.tables())
    ['summary', 'summary_devices', 'summary_streams']
    """
    from opgraph.analysis.data_markers import data_markers_of
    from opgraph.analysis.summary_doc import summary_doc
    from opgraph.export.tables.documents import summary_frames

    batch_size = number_arg("batch_size", batch_size, minimum=1, integer=True, none_ok=True)
    step_regex = regex_arg("step_regex", step_regex, all_ok=False)
    return _doc_report("summary", summary_doc(_graph(G), batch_size, step_regex, data_markers_of(None)),
                       summary_frames)


def overheads(G: TraceGraph | PathLike, by_shapes: bool = False) -> Report:
    """CPU overheads T1–T5 per op (``opgraph overheads``).
    Examples
    --------
    >>> import opgraph
    >>> "overheads" in opgraph.overheads(opgraph.example_trace("cpu_bound")).tables()
    True
    """
    from opgraph.analysis.graph_frame import graph_frame
    from opgraph.analysis.overheads import OverheadParams, overhead_samples, overheads_doc
    from opgraph.export.tables.documents import overheads_frames

    by_shapes = bool_arg("by_shapes", by_shapes)
    f = graph_frame(_graph(G))
    p = OverheadParams()
    return _doc_report("overheads", overheads_doc(f, p, by_shapes, overhead_samples(f, p)), overheads_frames)


def roofline(G: TraceGraph | PathLike, device: str | None = None, dtype: str | None = None) -> RooflineResult:
    """FLOPs, bytes, achieved throughput and % of the device's peak per kernel and op (the
    data of ``opgraph report``).
    Examples
    --------
    >>> import opgraph
    >>> res = opgraph.roofline(opgraph.example_trace("gpu_bound"))
    >>> sorted(res.tables())
    ['by_kernel', 'by_op', 'kernels', 'ops']
    """
    from opgraph.analysis.roofline import roofline as _roofline

    device, dtype = opt_str_arg("device", device), opt_str_arg("dtype", dtype)
    return _roofline(_graph(G), device=device, dtype=dtype)


def report(G: TraceGraph | PathLike, by: str = "kernel", device: str | None = None, dtype: str | None = None
           ) -> Report:
    """``opgraph report``: the roofline table grouped ``by`` kernel, op, family or bound.
    Examples
    --------
    >>> import opgraph
    >>> opgraph.report(opgraph.example_trace("gpu_bound"), by="op").main
    'op'
    """
    from opgraph.analysis.roofline import group_table, report_doc

    by = choice_arg("by", by, ("kernel", "op", "family", "bound"))
    res = roofline(G, device, dtype)
    return Report("report", report_doc(res, by, None), {by: group_table(res, by)}, by)


def diff(a: TraceGraph | PathLike, b: TraceGraph | PathLike, *, name_level: str = "default",
         include_same: bool = False) -> Report:
    """Kernel, op, step-time and critical-path deltas from ``a`` to ``b`` (``opgraph diff``).
    Examples
    --------
    >>> import opgraph
    >>> G = opgraph.load(opgraph.example_trace("gpu_bound"))
    >>> opgraph.diff(G, G).to_dict()["identical"]
    True
    """
    from opgraph.analysis.diff import diff_graphs

    name_level = choice_arg("name_level", name_level, ("exact", "default", "base"))
    include_same = bool_arg("include_same", include_same)
    doc = diff_graphs(_graph(a, "a"), _graph(b, "b"), name_level=name_level, include_same=include_same)
    from opgraph.export.tables.documents import diff_frames

    return Report("diff", doc, diff_frames(doc), "kernels")


def what_if(G: TraceGraph | PathLike, *, scale_kernels: Sequence[str] = (), scale_cpu: Sequence[str] = (),
            launch_overhead: str | None = None, remove: Sequence[str] = (), window: str | None = None,
            with_path: bool = False) -> Report:
    """What-if: the step time if kernels or CPU ops were faster, launches cheaper or ops
    removed (``opgraph predict``; named ``what_if`` because ``opgraph.predict`` is the
    prediction package; specs as on the command line, e.g. ``"gemm=0.5"``,
    ``"2us"``). Table ``steps``: measured and predicted span per window (µs).
    Examples
    --------
    >>> import opgraph
    >>> G = opgraph.load(opgraph.example_trace("gpu_bound"))
    >>> t = opgraph.what_if(G, scale_kernels=[".*=0.5"]).to_frame()
    >>> bool((t["predicted_us"] < t["measured_us"]).all())
    True
    """
    from opgraph.predict.whatif import parse_transforms
    from opgraph.predict.prediction import predict as _predict

    tr = parse_transforms(str_list_arg("scale_kernels", scale_kernels), str_list_arg("scale_cpu", scale_cpu),
                          opt_str_arg("launch_overhead", launch_overhead), str_list_arg("remove", remove))
    window = regex_arg("window", window)
    with_path = bool_arg("with_path", with_path)
    from opgraph.export.tables.documents import predict_frames

    doc = _predict(_graph(G), tr, window=window).to_dict(with_path=with_path)
    return Report("what_if", doc, predict_frames(doc), "steps")


def stragglers(G: TraceGraph | PathLike) -> StragglerReport:
    """Per collective, step and rank of a multi-rank job: who arrived last, by how much
    (``opgraph stragglers``).
    Examples
    --------
    A job graph comes from a folder of traces, one per rank. The synthesized job below
    (``opgraph.testing.synth_multirank``) has a slow rank 2:

    >>> import opgraph, tempfile
    >>> from opgraph.testing.synth_multirank import synthesize_job, write_job
    >>> d = tempfile.mkdtemp()
    >>> _ = write_job(synthesize_job(world_size=4, steps=2, slow_rank=2), d)
    >>> job = opgraph.load(d)
    >>> opgraph.stragglers(job).repeated
    [2]
    >>> opgraph.critical_path(job).to_frame("breakdown").shape[0]
    2
"""
    from opgraph.analysis.stragglers import stragglers as _stragglers

    return _stragglers(_graph(G))


# ------------------------------------------------------------------------------- exporters
def export_perfetto(G: TraceGraph | PathLike, path: PathLike, window: str | None = None) -> Path:
    """The trace re-exported for ui.perfetto.dev with the answers in each event's args
    (``opgraph export --perfetto``); a job graph gives one aligned trace of every rank.
    Examples
    --------
    >>> import opgraph, tempfile, os
    >>> out = os.path.join(tempfile.mkdtemp(), "trace.json.gz")
    >>> opgraph.export_perfetto(opgraph.example_trace("gpu_bound"), out).exists()
    True
    """
    path = suffix_arg("path", path, (".json", ".json.gz"))
    window = regex_arg("window", window)
    inputs = _sources(G)
    G = _graph(G)
    inputs += _sources(G)
    if isinstance(G.graph.get("job"), dict):
        from opgraph.export.perfetto.job import export_perfetto_job

        export_perfetto_job(G, path, inputs=inputs)
    else:
        from opgraph.export.perfetto.overlay import export_perfetto as _export

        _export(G, path, window=window, inputs=inputs)
    return Path(path)


def export_graphviz(G: TraceGraph | PathLike, path: PathLike, *, window: str | None = None,
                    critical_only: bool = False, collapse: str | None = None) -> Path:
    """The graph as a Graphviz picture; the format follows the extension (``.dot``,
    ``.svg``, ``.png``; the last two need Graphviz's ``dot``).
    Examples
    --------
    >>> import opgraph, tempfile, os
    >>> out = os.path.join(tempfile.mkdtemp(), "g.dot")
    >>> opgraph.export_graphviz(opgraph.example_trace("gpu_bound"), out, critical_only=True).read_text()[:7]
    'digraph'
    """
    from opgraph.export.dot import graph_view, write_graphviz

    path = suffix_arg("path", path, (".dot", ".svg", ".png"))
    window = regex_arg("window", window)
    critical_only = bool_arg("critical_only", critical_only)
    inputs = _sources(G)
    G = _graph(G)
    v = graph_view(G, window=window, critical_only=critical_only, collapse=collapse)
    write_graphviz(G, path, view=v, inputs=inputs + _sources(G))
    return Path(path)


def graph_tables(G: TraceGraph | PathLike) -> dict[str, pd.DataFrame]:
    """The graph as two DataFrames: ``nodes`` (id, kind, name, ts_ns, dur_ns, ..., args as
    JSON text) and ``edges`` (src, dst, kind and the edge attributes).

    Examples
    --------
    >>> import opgraph
    >>> t = opgraph.graph_tables(opgraph.example_trace("gpu_bound"))
    >>> e, n = t["edges"], t["nodes"].set_index("id")
    >>> launches = e[e["kind"] == "launch"]
    >>> sorted(set(n.loc[launches["dst"], "kind"]))
    ['kernel']
    """
    from opgraph.export.tables.graph import graph_tables as _tables

    return _tables(_graph(G))


def export_tables(G: TraceGraph | PathLike, directory: PathLike, fmt: str = "parquet") -> list[Path]:
    """Write :func:`graph_tables` to ``directory`` as ``nodes.<fmt>`` and ``edges.<fmt>``
    (``parquet``, needing pyarrow, or ``csv``); the CLI's ``opgraph export --parquet DIR``."""
    from opgraph.export.tables.graph import write_tables

    directory = path_arg("directory", directory)
    fmt = choice_arg("fmt", fmt, ("parquet", "csv"))
    inputs = _sources(G)
    G = _graph(G)
    return write_tables(graph_tables(G), directory, fmt, inputs=inputs + _sources(G))


def report_html(G: TraceGraph | PathLike, path: PathLike, *, batch_size: int | None = None,
                device: str | None = None) -> Path:
    """The self-contained HTML report (``opgraph report --html``).
    Examples
    --------
    >>> import opgraph, tempfile, os
    >>> out = os.path.join(tempfile.mkdtemp(), "report.html")
    >>> opgraph.report_html(opgraph.example_trace("gpu_bound"), out).read_text()[:15]
    '<!DOCTYPE html>'
    """
    from opgraph.export.html.report import write_report

    path = path_arg("path", path)
    batch_size = number_arg("batch_size", batch_size, minimum=1, integer=True, none_ok=True)
    device = opt_str_arg("device", device)
    inputs = _sources(G)
    G = _graph(G)
    write_report(G, path, batch_size=batch_size, device=device, inputs=inputs + _sources(G))
    return Path(path)


def plot(result: Any, kind: str | None = None, window: int = 0) -> Any:
    """A matplotlib figure of ``result`` (needs the ``plot`` extra:
    ``pip install 'opgraph[plot]'``): a critical path as stacked bars per window
    (``kind="breakdown"``, default) or a Gantt chart of window number ``window`` by lane
    (``kind="gantt"``); an idle result as a timeline of its gaps by cause; a roofline
    result as achieved TFLOP/s against arithmetic intensity under the device's roofs.

    Examples
    --------
    >>> import opgraph
    >>> import matplotlib; matplotlib.use("Agg")
    >>> G = opgraph.load(opgraph.example_trace("gpu_bound"))
    >>> fig = opgraph.plot(opgraph.critical_path(G), "gantt")
    >>> fig.axes[0].get_title()
    'Critical path of ProfilerStep#1'
    """
    from opgraph.analysis.crossrank import CrossRankResult
    from opgraph.export.plots import plot_critical_path, plot_idle, plot_roofline

    if isinstance(result, (CriticalPathResult, CrossRankResult)):
        return plot_critical_path(result, kind or "breakdown", window)
    if kind is not None:
        raise ValueError(f"kind applies to critical-path results only, not to {type(result).__name__}")
    if isinstance(result, IdleResult):
        return plot_idle(result)
    if isinstance(result, RooflineResult):
        return plot_roofline(result)
    raise TypeError(f"no picture for {type(result).__name__}: plot a critical-path, idle or roofline result")


# ------------------------------------------------------------------- made from the catalog
def _option_value(o: Option, v: Any) -> Any:
    """``v`` checked as the catalog declares option ``o`` (a TypeError / ValueError naming it)."""
    if o.kind == "int":
        return number_arg(o.name, v, minimum=1 if o.minimum is None else o.minimum, maximum=o.maximum, integer=True)
    if o.kind == "float":
        return number_arg(o.name, v, minimum=0.0 if o.minimum is None else o.minimum, maximum=o.maximum)
    if o.kind == "regex":
        return regex_arg(o.name, v, all_ok=False)
    if o.kind == "flag":
        return bool_arg(o.name, v)
    return opt_str_arg(o.name, v)


def catalog_function(entry: Analysis) -> Callable[..., Any]:
    """``opgraph.<entry.name>(G, ...)``: the entry's function over a graph or path, its
    ``analysis`` options as keyword (or positional) arguments with the catalog's defaults,
    each checked; the docstring is the entry's help, command and example."""
    import inspect

    opts = entry.options_for("analysis")
    hint = {"int": "int", "float": "float", "regex": "str | None", "str": "str | None", "flag": "bool"}
    sig = inspect.Signature(
        [inspect.Parameter("G", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation="TraceGraph | PathLike")]
        + [inspect.Parameter(o.name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=o.default,
                             annotation=hint[o.kind]) for o in opts],
        return_annotation="TableResult")

    def analysis(*args: Any, **kwargs: Any) -> Any:
        bound = sig.bind(*args, **kwargs)
        bound.apply_defaults()
        values = {o.name: _option_value(o, bound.arguments[o.name]) for o in opts}
        return resolve(entry.function)(_graph(bound.arguments["G"]), **values)

    example = "".join(f"\n    {line}" for line in ("Examples", "--------", ">>> import opgraph",
                                                    *entry.example.splitlines())) if entry.example else ""
    analysis.__name__ = analysis.__qualname__ = entry.name
    analysis.__signature__ = sig  # type: ignore[attr-defined]
    analysis.__doc__ = (f"{entry.help}\n\n    ``opgraph {entry.command}``; the result's ``to_dict()`` is its "
                        f"``--json`` (schemas/{entry.schema}); {entry.doc}.\n{example}\n")
    return analysis


for _entry in ANALYSES:
    if not _entry.api_impl and _entry.name:
        globals()[_entry.name] = catalog_function(_entry)
