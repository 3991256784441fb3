"""Iterations (steps): the names other code imports from here, now held by one module per
concept (this module only re-exports them):

- :mod:`opgraph.analysis.kind_codes`: node kind codes (``K_CPU_OP``, ..., ``KIND_NAMES``);
- :mod:`opgraph.analysis.graph_frame`: the column view of a graph (:class:`GraphFrame`,
  :func:`graph_frame`, :func:`frame_of`);
- :mod:`opgraph.analysis.data_markers`: data-loading markers (:data:`DEFAULT_DATA_MARKERS`,
  :func:`data_markers_of`);
- :mod:`opgraph.analysis.steps`: the step finder (:class:`Steps`, :func:`find_iterations`,
  :data:`STEP_SOURCES`);
- :mod:`opgraph.analysis.window`: the analysis window (:class:`Window`,
  :func:`analysis_window`: the steps' span, minus data loading);
- :mod:`opgraph.analysis.step_times`: per-step times (:func:`iteration_table`) and the
  ``opgraph iterations`` document (:func:`iterations_doc`);
- :mod:`opgraph.analysis.trim`: the pre-build trim of a raw event table to some steps
  (:func:`trim_table`, ``opgraph build --iterations``).

Times are integer ns inside; the user-facing tables and JSON are in µs.
"""

from __future__ import annotations

from opgraph.analysis.data_markers import DEFAULT_DATA_MARKERS, data_markers_of
from opgraph.analysis.graph_frame import GraphFrame, frame_of, graph_frame
from opgraph.analysis.kind_codes import (
    K_ANNOTATION, K_CPU_OP, K_GPU_ANNOTATION, K_KERNEL, K_MEMCPY, K_MEMSET, K_OTHER, K_PYTHON, K_RUNTIME, KIND_NAMES,
)
from opgraph.analysis.step_times import iteration_table, iterations_doc
from opgraph.analysis.steps import STEP_SOURCES, Steps, find_iterations
from opgraph.analysis.trim import trim_table
from opgraph.analysis.window import Window, analysis_window
from opgraph.ingest.steps import NVTX_ITERATION_RE
from opgraph.ingest.steps import STEP_RE as PROFILER_STEP_RE

__all__ = [
    "DEFAULT_DATA_MARKERS", "data_markers_of",
    "GraphFrame", "frame_of", "graph_frame",
    "K_ANNOTATION", "K_CPU_OP", "K_PYTHON", "K_RUNTIME", "K_KERNEL", "K_MEMCPY", "K_MEMSET", "K_GPU_ANNOTATION",
    "K_OTHER", "KIND_NAMES",
    "iteration_table", "iterations_doc",
    "STEP_SOURCES", "Steps", "find_iterations",
    "trim_table",
    "Window", "analysis_window",
    "NVTX_ITERATION_RE", "PROFILER_STEP_RE",
]
