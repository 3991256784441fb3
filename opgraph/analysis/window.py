"""The analysis window: the time span the breakdown, overheads and multistream analyses
cover (first step start to last step end, else the whole trace) and the data loading
inside it (:class:`AnalysisWindow`, :func:`analysis_window`).

Times are integer ns inside; :meth:`AnalysisWindow.to_dict` writes µs (and the ns bounds).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

import numpy as np

from opgraph.model.trace_graph import TraceGraph
from opgraph.analysis.data_markers import compile_data_markers, data_markers_of, names_matching
from opgraph.analysis.graph_frame import GraphFrame, frame_of
from opgraph.analysis.kind_codes import K_PYTHON
from opgraph.analysis.steps import Steps, find_iterations
from opgraph.intervals import IntervalSet

__all__ = ["AnalysisWindow", "analysis_window"]


@dataclass
class AnalysisWindow:
    """The time window an analysis covers (ns) and the data loading inside it.

    ``start``/``end``: first step start to last step end when steps exist, else the span
    of all nodes. ``data_loading``: union of data-loading marker ranges clipped to the
    window. ``host_runtime_ns`` = window length - data loading (the seed's step time).
    ``data_nodes``: positions of the marker nodes (their subtrees are excluded from host
    analyses).
    """

    start: int
    end: int
    steps: Steps
    data_loading: IntervalSet
    data_nodes: np.ndarray
    data_markers: tuple[str, ...]

    @property
    def length_ns(self) -> int:
        return self.end - self.start

    @property
    def data_loading_ns(self) -> int:
        return self.data_loading.total

    @property
    def host_runtime_ns(self) -> int:
        return self.length_ns - self.data_loading_ns

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready description (µs)."""
        return {"start_ns": int(self.start), "end_ns": int(self.end), "duration_us": self.length_ns / 1e3,
                "steps": int(len(self.steps)), "step_source": self.steps.source,
                "data_loading_us": self.data_loading_ns / 1e3, "data_loading_ranges": int(len(self.data_loading)),
                "data_markers": list(self.data_markers), "host_runtime_us": self.host_runtime_ns / 1e3}


def analysis_window(G: TraceGraph | GraphFrame, step_regex: str | None = None,
                    data_markers: Iterable[str] | None = None, use_steps: bool = True,
                    min_data_loading_us: float = 0.0) -> AnalysisWindow:
    """The window analyses cover and the data loading inside it.

    Parameters
    ----------
    G : TraceGraph or GraphFrame
    step_regex : str, optional
        See :func:`~opgraph.analysis.steps.find_iterations`.
    data_markers : iterable of str, optional
        Regular expressions for data-loading ranges (default ``("DataLoader",)``; pass
        ``()`` to disable).
    use_steps : bool
        When False the window is the whole trace even if steps exist.
    min_data_loading_us : float
        Ignore data-loading ranges shorter than this (µs; the seed's later version used 100).

    Returns
    -------
    AnalysisWindow
    """
    f = frame_of(G)
    markers = data_markers_of(data_markers)
    steps = find_iterations(f, step_regex, markers)
    if use_steps and len(steps):
        start, end = int(steps.table["ts"].min()), int(steps.table["end"].max())
    elif len(f):
        start, end = int(f.ts.min()), int(f.end.max())
    else:
        start = end = 0
    rx = compile_data_markers(markers)
    if rx is not None and len(f):
        dn = np.flatnonzero((f.kind <= K_PYTHON) & names_matching(f.name, rx)
                            & (f.dur >= int(min_data_loading_us * 1000)))
    else:
        dn = np.empty(0, np.int64)
    a = np.clip(f.ts[dn], start, end)
    b = np.clip(f.end[dn], start, end)
    ok = b > a
    return AnalysisWindow(start, end, steps, IntervalSet(a[ok], b[ok]), dn, markers)
