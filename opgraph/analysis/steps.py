"""The step finder: the steps (iterations) of a trace as a table (:class:`Steps`,
:func:`find_iterations`), and the step sources the documents can name.

Steps are the windows of the one selector, :func:`opgraph.graph.windows.select_windows`
(the same steps as every other command), in this order of preference:

1. host ranges (``annotation``/``cpu_op``/``python``) whose name matches ``step_regex``
   (NVTX / ``record_function`` labels), else GPU annotations that match, when one is given
   (a regex that matches nothing raises :class:`~opgraph.graph.windows.WindowNotFound`);
2. ``ProfilerStep#N`` host ranges (one step per distinct N);
3. ``ProfilerStep#N`` GPU annotations (``gpu_user_annotation``), for device-only traces;
4. NVTX ``Iteration N`` ranges;
5. data-loading markers (``DataLoader`` by default): step k runs from marker k to marker
   k+1, so M markers give M-1 steps (the seed's ``trim_trace_by_num_iter`` rule).

Times are integer ns (the ``ts``/``end`` columns); the documents built on them are in µs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

import numpy as np
import pandas as pd

from opgraph.model.trace_graph import TraceGraph
from opgraph.analysis.data_markers import data_markers_of
from opgraph.analysis.graph_frame import GraphFrame, frame_of
from opgraph.graph.windows import WINDOW_SOURCES, Windows, select_windows

__all__ = ["STEP_SOURCES", "Steps", "find_iterations", "steps_table"]


#: Every ``step_source`` the JSON documents can carry (summary, iterations, breakdown,
#: overheads): the window sources of a step selection, or ``none`` (no steps, whole trace).
STEP_SOURCES: tuple[str, ...] = tuple(s for s in WINDOW_SOURCES if s != "all") + ("none",)


def steps_table(w: Windows) -> tuple[pd.DataFrame, str]:
    """The steps of a selection (none when it fell back to the whole trace): columns
    ``index``, ``step``, ``name``, ``ts``, ``end``, ``node``, and the source."""
    if not w.is_steps:
        w = Windows([], w.mode, "none")
    t = w.to_frame().rename(columns={"eid": "node"})
    t.insert(0, "index", np.arange(len(t), dtype=np.int64))
    return t[["index", "step", "name", "ts", "end", "node"]].reset_index(drop=True), w.source


@dataclass
class Steps:
    """Steps found in a trace.

    ``table`` has one row per step, sorted by start: ``index`` (0-based position),
    ``step`` (N of ``ProfilerStep#N``, or the position), ``name``, ``ts``/``end`` (ns) and
    ``node`` (the marker node, or -1). ``source`` says how they were found:
    ``regex``, ``profiler_step``, ``gpu_annotation``, ``nvtx_iteration``, ``data_loader`` or
    ``none`` (:func:`opgraph.graph.windows.select_windows`).
    """

    table: pd.DataFrame
    source: str

    def __len__(self) -> int:
        return len(self.table)


def find_iterations(G: TraceGraph | GraphFrame, step_regex: str | None = None,
                    data_markers: Iterable[str] | None = None) -> Steps:
    """Find the steps (iterations) of a trace graph.

    Parameters
    ----------
    G : TraceGraph or GraphFrame
        The trace graph.
    step_regex : str, optional
        Regular expression for step ranges: host ranges (NVTX / ``record_function``
        labels) whose name it finds, else GPU annotations. When given, only it is used.
    data_markers : iterable of str, optional
        Regular expressions naming data-loading markers (default ``DataLoader``); used
        only when the trace has no step marker (``ProfilerStep#N``, ``Iteration N``).

    Returns
    -------
    Steps
        ``source`` ``"none"`` and no rows when the trace has no step.

    Raises
    ------
    opgraph.graph.windows.WindowNotFound
        ``step_regex`` matches no range (:class:`~opgraph.graph.windows.WindowError`
        when it is not a valid regex).
    """
    f = frame_of(G)
    w = select_windows(f, step_regex=step_regex, data_markers=data_markers_of(data_markers), lanes=False)
    return Steps(*steps_table(w))
