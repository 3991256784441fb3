"""Data-loading markers: the regexes naming data-loading ranges (``DataLoader`` by
default) and the helpers that apply them to event names.

The step finder falls back to these markers when a trace has no step marker, and the
analysis window (:mod:`opgraph.analysis.window`) subtracts the ranges they name. No
times here.
"""

from __future__ import annotations

import re
from typing import Iterable

import numpy as np
import pandas as pd

__all__ = ["DEFAULT_DATA_MARKERS", "compile_data_markers", "names_matching", "data_markers_of"]

#: Default data-loading markers (regular expressions searched in event names).
DEFAULT_DATA_MARKERS: tuple[str, ...] = ("DataLoader",)


def compile_data_markers(markers: Iterable[str] | None) -> re.Pattern[str] | None:
    """One regex that finds any of ``markers`` (``None`` -> :data:`DEFAULT_DATA_MARKERS`;
    empty entries ignored), or None when no marker is left."""
    ms = [m for m in (DEFAULT_DATA_MARKERS if markers is None else markers) if m]
    return re.compile("|".join(f"(?:{m})" for m in ms)) if ms else None


def names_matching(names: np.ndarray, rx: re.Pattern[str]) -> np.ndarray:
    """Boolean array: rx.search(name) for each name (one pass over the distinct names)."""
    if not len(names):
        return np.zeros(0, dtype=bool)
    codes, uniq = pd.factorize(names)
    hit = np.fromiter((bool(rx.search(u)) if isinstance(u, str) else False for u in uniq),
                      dtype=bool, count=len(uniq))
    return hit[codes]


def data_markers_of(markers: Iterable[str] | None) -> tuple[str, ...]:
    """The data-loading marker regexes in force: ``None`` -> :data:`DEFAULT_DATA_MARKERS`."""
    return tuple(m for m in (DEFAULT_DATA_MARKERS if markers is None else markers) if m)
