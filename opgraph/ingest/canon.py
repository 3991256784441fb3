"""Helpers shared by the non-Kineto readers: build the canonical event table from columns.

Every reader collects plain columns (lists or numpy arrays, one entry per event, in the
order the events get their ``eid``) and calls :func:`make_table`, which fills defaults and
gives each column the dtype of docs/model.md (the same dtypes the Kineto reader produces).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pandas as pd

from opgraph.model.table import ALL_KINDS, NONE_ID, EventTable

_INT_COLS = ("device", "stream", "correlation", "external_id", "rf_id", "flow_id", "rank")


def _categorical(values: Sequence[Any] | np.ndarray) -> pd.Categorical:
    """Categorical in order of first appearance, object categories, None as missing."""
    arr = np.asarray(values, dtype=object) if not isinstance(values, np.ndarray) else values.astype(object)
    codes, uniques = pd.factorize(arr)
    return pd.Categorical.from_codes(codes, categories=pd.Index(uniques, dtype=object))


def make_table(n: int, *, kind: Sequence[str] | np.ndarray, name: Sequence[Any] | np.ndarray,
               ts_ns: Any, dur_ns: Any, pid: Sequence[Any] | np.ndarray, tid: Sequence[Any] | np.ndarray,
               args: Sequence[Any] | np.ndarray | None = None, cat: Any = None, ph: Any = "X",
               has_ts: Any = None, extra: Sequence[Any] | np.ndarray | None = None,
               **ints: Any) -> EventTable:
    """The canonical :class:`EventTable` of ``n`` events from columns.

    ``cat`` and ``ph`` may be a single string (same for every event) or a column;
    ``ints`` are the int64 linking columns (``device``, ``stream``, ``correlation``,
    ``external_id``, ``rf_id``, ``flow_id``, ``rank``), each a scalar or a column; absent
    ones are -1.
    """
    unknown = set(ints) - set(_INT_COLS)
    if unknown:
        raise TypeError(f"unknown columns {sorted(unknown)}")

    def col(v: Any) -> np.ndarray:
        if v is None or isinstance(v, str):
            return np.full(n, v, dtype=object)
        return np.asarray(v, dtype=object)

    kinds = np.asarray(kind, dtype=object)
    bad = set(pd.unique(kinds)) - set(ALL_KINDS)
    if bad:
        raise ValueError(f"unknown kinds {sorted(bad)}")
    data: dict[str, Any] = {
        "eid": np.arange(n, dtype=np.int64),
        "kind": pd.Categorical(kinds, categories=list(ALL_KINDS)),
        "cat": _categorical(col(cat)),
        "ph": _categorical(col(ph)),
        "name": _categorical(np.asarray(name, dtype=object)),
        "ts_ns": np.asarray(ts_ns, dtype=np.int64).reshape(n) if n else np.zeros(0, np.int64),
        "dur_ns": np.asarray(dur_ns, dtype=np.int64).reshape(n) if n else np.zeros(0, np.int64),
        "pid": _categorical(np.asarray(pid, dtype=object)),
        "tid": _categorical(np.asarray(tid, dtype=object)),
    }
    for c in _INT_COLS:
        v = ints.get(c, NONE_ID)
        data[c] = (np.full(n, v, dtype=np.int64) if np.isscalar(v)
                   else np.asarray(v, dtype=np.int64).reshape(n))
    data["args"] = col(args) if args is not None else np.full(n, None, dtype=object)
    data["bp"] = pd.Categorical.from_codes(np.full(n, -1, dtype=np.int64), categories=pd.Index([], dtype=object))
    data["extra"] = col(extra) if extra is not None else np.full(n, None, dtype=object)
    data["has_ts"] = (np.ones(n, dtype=bool) if has_ts is None else np.asarray(has_ts, dtype=bool).reshape(n))
    return EventTable(pd.DataFrame(data, copy=False))


def combine_corr(process_code: np.ndarray, corr: np.ndarray) -> np.ndarray:
    """One int64 correlation key per (process, correlation id): correlation ids are only
    unique within a process. ``process_code`` is a small non-negative int per process;
    ids < 0 (none) stay -1."""
    corr = np.asarray(corr, dtype=np.int64)
    out = (np.asarray(process_code, dtype=np.int64) << 32) | (corr & 0xFFFFFFFF)
    return np.where(corr < 0, NONE_ID, out)
