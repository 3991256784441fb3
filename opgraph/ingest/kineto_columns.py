"""Column decoding for the Kineto reader: type checks and linking keys of decoded events.

The Kineto event loop (:mod:`opgraph.ingest.kineto_events`) reads each event field as one
Python list; these helpers check a list's types in one scan (a one-line
:class:`~opgraph.errors.OpgraphInputError` naming the first bad event), turn args values
and flow ids into int64 linking keys (-1 = none), and build the categorical columns
(pid/tid with digit strings normalised to ints). No times here (see
:mod:`opgraph.ingest.kineto_times`: µs text in traces, int64 ns in the table).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from opgraph.errors import OpgraphInputError
from opgraph.model.event_args import ArgsColumn
from opgraph.model.table import NONE_ID


def object_array(values: list) -> np.ndarray:
    """``values`` as a 1-d object array, element for element (``np.asarray`` would look
    into each element for a nested sequence first, at twice the cost)."""
    return np.fromiter(values, dtype=object, count=len(values))


def event_error(path: str, idx: int, problem: str) -> OpgraphInputError:
    """The one-line input error about event ``idx`` (0-based, file order) of ``path``."""
    return OpgraphInputError(path, problem, event_index=idx)


def _first_bad(path: str, values: list, field: str, ok: tuple[type, ...],
               required_mask: np.ndarray | None, expected: str) -> None:
    """Raise on the first value of ``field`` whose type is not in ``ok`` (slow path, only
    reached when a fast type scan found a problem)."""
    for i, v in enumerate(values):
        if type(v) in ok:
            continue
        if v is None:
            if required_mask is not None and required_mask[i]:
                raise event_error(path, i, f"'{field}' is missing")
            continue
        raise event_error(path, i, f"'{field}' has the wrong type ({type(v).__name__} {v!r:.40}), "
                                   f"expected {expected}")


def check_field_types(path: str, values: list, field: str, ok: tuple[type, ...],
                      required_mask: np.ndarray | None = None, expected: str = "a number") -> bool:
    """Fast type scan of a column; raises a one-line error on the first bad value.

    Returns True when some values are None (absent)."""
    types = set(map(type, values))
    has_none = type(None) in types
    types.discard(type(None))
    if not types <= set(ok):
        _first_bad(path, values, field, ok, None, expected)
    if has_none and required_mask is not None:
        absent = np.fromiter((v is None for v in values), dtype=bool, count=len(values))
        bad = absent & required_mask
        if bad.any():
            raise event_error(path, int(np.flatnonzero(bad)[0]), f"'{field}' is missing")
    return has_none


def int_values(vals: list, bad: list[int] | None = None) -> np.ndarray:
    """int64 array from decoded values: ints kept, digit strings parsed, anything else -1.
    ``bad``: collects the positions of values present but not read as integers (a float, a
    list, a bool, text that is not digits; None is absent, not bad). A float is not read
    as the integer it truncates to."""
    if set(map(type, vals)) <= {int}:   # the usual case, in one conversion
        try:
            return np.array(vals, dtype=np.int64)
        except OverflowError:
            pass
    out = []
    app = out.append
    for i, v in enumerate(vals):
        t = type(v)
        if t is int and -(2**63) <= v < 2**63:
            app(v)
        elif t is str and v.isdigit():
            app(int(v))
        else:
            app(NONE_ID)
            if bad is not None and v is not None:
                bad.append(i)
    return np.array(out, dtype=np.int64)


def int_arg(args: ArgsColumn, rows: np.ndarray, n: int, key: str,
            bad: dict[str, np.ndarray] | None = None) -> np.ndarray:
    """Integer linking key ``key`` (one of :data:`~opgraph.model.event_args.LINK_KEYS`, its
    other spelling read where it is absent) read from the args of events ``rows``; -1 where
    absent or not an integer. ``bad``: gets ``bad[key]``, the rows whose value is present
    but not an integer (read as absent), when there are any."""
    out = np.full(n, NONE_ID, dtype=np.int64)
    if not len(rows):
        return out
    wrong: list[int] = []
    out[rows] = int_values(args.key_values(key, rows), wrong)
    if wrong and bad is not None:
        bad[key] = rows[np.asarray(wrong, dtype=np.int64)]
    return out


def flow_ids(vals: list) -> np.ndarray:
    """Flow ids as int64: integers kept, ``"0x1a"``/``"26"`` strings parsed, any other string
    mapped to a stable id of its own above 2**62 (flows pair by equal ids)."""
    if set(map(type, vals)) <= {int}:
        return int_values(vals)
    other: dict[str, int] = {}
    out = []
    for v in vals:
        if type(v) is int:
            out.append(v if -(2**63) <= v < 2**63 else other.setdefault(str(v), 2**62 + len(other)))
        elif type(v) is str:
            t = v.strip().lower()
            try:
                out.append(int(t, 16) if t.startswith("0x") else int(t))
                continue
            except ValueError:
                out.append(other.setdefault(v, 2**62 + len(other)))
        else:
            out.append(NONE_ID)
    return np.array(out, dtype=np.int64)


def norm_categorical(vals: list) -> tuple[pd.Categorical, np.ndarray, list]:
    """pid/tid as a categorical of normalised values (digit strings become ints, so that
    ``"24572"`` and ``24572`` are one thread), the rows whose original was a digit string
    (kept for lossless re-export), and the categories as a list."""
    codes, uniq = pd.factorize(object_array(vals))
    uniq = list(uniq)
    digit = np.array([type(u) is str and u.isdigit() for u in uniq], dtype=bool)
    if not digit.any():
        cat = pd.Categorical.from_codes(codes, categories=pd.Index(uniq, dtype=object))
        return cat, np.empty(0, dtype=np.int64), uniq
    norm = [int(u) if d else u for u, d in zip(uniq, digit)]
    c2, u2 = pd.factorize(np.asarray(norm, dtype=object))
    new_codes = np.where(codes >= 0, c2[np.maximum(codes, 0)], -1)
    rows = np.flatnonzero((codes >= 0) & digit[np.maximum(codes, 0)])
    u2 = list(u2)
    return pd.Categorical.from_codes(new_codes, categories=pd.Index(u2, dtype=object)), rows, u2


def _norm_ids(vals: list) -> list:
    """pid/tid as written: ints stay ints, digit strings become ints, other strings stay."""
    if set(map(type, vals)) <= {int}:
        return vals
    return [int(v) if type(v) is str and v.isdigit() else v for v in vals]


def _categorical(values: list | np.ndarray) -> pd.Categorical:
    """Categorical in order of first appearance, with object categories (any mix of
    ints and strings), None as missing."""
    codes, uniques = pd.factorize(np.asarray(values, dtype=object) if isinstance(values, list) else values)
    return pd.Categorical.from_codes(codes, categories=pd.Index(uniques, dtype=object))


def sparse_categorical(values: np.ndarray | None, rows: np.ndarray, n: int) -> pd.Categorical:
    """Categorical of a column (an object array, None when no value is set) that is only
    set on ``rows`` (None elsewhere)."""
    codes = np.full(n, -1, dtype=np.int64)
    uniques: list = []
    if len(rows) and values is not None:
        c, u = pd.factorize(values[rows])
        codes[rows] = c
        uniques = list(u)
    return pd.Categorical.from_codes(codes, categories=pd.Index(uniques, dtype=object))


def _not_none(v: Any) -> bool:
    return v is not None
