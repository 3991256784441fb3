"""The critical path of a whole graph: every window's path, their totals and the run
verdict (times in ns; ``to_dict`` gives µs; docs/critical-path.md)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import pandas as pd

from opgraph.analysis.critical_path.boundary_edges import CATEGORIES
from opgraph.analysis.critical_path.result import WindowPath, breakdown_frame, path_frame, summarize_windows
from opgraph.analysis.critical_path.verdict import RunVerdict, run_verdict
from opgraph.analysis.display import TableResult

__all__ = ["CriticalPathResult"]


@dataclass(repr=False)
class CriticalPathResult(TableResult):
    """Critical paths of all windows of a graph.

    Examples
    --------
    >>> import opgraph
    >>> res = opgraph.critical_path(opgraph.load(opgraph.example_trace("gpu_bound")))
    >>> res.to_frame("breakdown")[["window", "bound"]].head(1)
               window        bound
    0  ProfilerStep#1  gpu_compute
    >>> round(res.summary()["length_us"] - res.summary()["span_us"], 6)
    0.0
    """

    windows: list[WindowPath]
    window_mode: str
    _verdict: RunVerdict | None = field(default=None, init=False, repr=False, compare=False)
    main_table: ClassVar[str] = "path"
    display_tables: ClassVar[tuple[str, ...]] = ("breakdown",)

    def tables(self) -> dict[str, pd.DataFrame]:
        """``breakdown`` (one row per window, µs per category) and ``path`` (one row per
        segment, µs)."""
        return {"path": path_frame(self.windows), "breakdown": breakdown_frame(self.windows, CATEGORIES)}

    def summary(self) -> dict[str, Any]:
        return summarize_windows(self.windows, CATEGORIES)

    def verdict(self) -> RunVerdict:
        """The run verdict (:func:`opgraph.analysis.critical_path.verdict.run_verdict`),
        computed once."""
        if self._verdict is None:
            self._verdict = run_verdict(self.windows, CATEGORIES)
        return self._verdict

    def to_dict(self, with_path: bool = True) -> dict[str, Any]:
        return {"window_mode": self.window_mode, "run": self.verdict().to_dict(), "summary": self.summary(),
                "windows": [w.to_dict(with_path) for w in self.windows]}
