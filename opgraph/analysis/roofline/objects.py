"""Object-array helpers of the roofline analysis: columns that keep ``None``, membership
tests and per-distinct-value mapping on object arrays (names, kinds, dtypes; no units).

numpy's sort-based ``isin`` and element-wise Python calls are slow on millions of Python
strings; these factorize once and work per distinct value."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pandas as pd


def obj_series(values: Any) -> pd.Series:
    """An object column that keeps ``None`` (pandas >= 3 would infer ``str`` and turn
    ``None`` into NaN)."""
    return pd.Series(np.asarray(values, dtype=object), dtype=object)


def objectify(df: pd.DataFrame, cols: tuple[str, ...]) -> pd.DataFrame:
    """Turn the columns ``cols`` of ``df`` (those present) into object columns whose
    missing values (NaN, ``pd.NA``) are ``None``; in place, and returns ``df``."""
    for c in cols:
        if c in df:
            v = df[c].to_numpy(dtype=object)
            df[c] = pd.Series([None if (x is pd.NA or (isinstance(x, float) and np.isnan(x))) else x for x in v],
                              index=df.index, dtype=object)
    return df


def isin_obj(values: np.ndarray, items: Any) -> np.ndarray:
    """``np.isin`` for object arrays (strings, None), by hashing each distinct value once:
    numpy's sort-based isin is slow on Python objects."""
    if not len(values):
        return np.zeros(0, dtype=bool)
    items = frozenset(items)
    codes, uniq = pd.factorize(pd.Series(values, dtype=object), use_na_sentinel=False)
    hit = np.fromiter((u in items for u in uniq), dtype=bool, count=len(uniq))
    return hit[codes]


def map_distinct(values: np.ndarray, fn: Callable[[Any], Any]) -> np.ndarray:
    """Apply ``fn`` once per distinct value of an object array; an object array of the
    results, aligned with ``values``."""
    if not len(values):
        return np.empty(0, dtype=object)
    codes, uniq = pd.factorize(pd.Series(values, dtype=object), use_na_sentinel=False)
    out = np.array([fn(u) for u in uniq], dtype=object)
    return out[codes]
