"""Kineto timestamps: µs numbers (and their decimal text) -> exact int64 nanoseconds.

Kineto writes ``ts``/``dur`` in µs, as integers or as decimals with up to 3 fractional
digits. At epoch magnitude (~1.7e15 µs) a float64 cannot hold the ns digits, so when any
``ts`` is fractional :func:`exact_ts_ns` takes the exact integer ns from the decimal
*text* of the file (rounded to the nearest ns, never truncated), aligning text tokens with
the decoded events. Values that do not fit int64 ns are refused (:func:`check_us_range`).
"""

from __future__ import annotations

import re

import numpy as np

from opgraph.ingest.kineto_columns import event_error
from opgraph.ingest.source import SourceBytes

_TS_TEXT_RE = re.compile(rb'"ts"\s*:\s*(-?[0-9][0-9.eE+-]*)')
#: |µs| values beyond this do not fit int64 nanoseconds (~292 years).
MAX_US = 9.2e15


def check_us_range(path: str, arr: np.ndarray, values: list, field: str) -> None:
    """Raise when a time value (µs, as float array ``arr``; ``values`` as decoded, for the
    message) would not fit int64 ns."""
    bad = ~(np.abs(arr) < MAX_US)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise event_error(path, i, f"'{field}' = {values[i]!r} µs is out of range (it does not fit int64 nanoseconds)")


def _check_range(path: str, values: list, field: str, present: np.ndarray) -> None:
    """Raise when a time value's ns would not fit an int64."""
    if not len(values):
        return
    arr = np.asarray([v if v is not None else 0 for v in values] if not present.all() else values, dtype=np.float64)
    bad = ~(np.abs(arr) < MAX_US)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise event_error(path, i, f"'{field}' = {values[i]!r} µs is out of range (it does not fit int64 nanoseconds)")


def _align_tokens(toks: list[bytes], fvals: np.ndarray) -> np.ndarray | None:
    """Pick, in order, the text tokens that belong to the events' timestamps when the file
    has extra ``"ts"`` keys (e.g. inside args): greedy match of each event's decoded value
    against the next token that parses to the same float. None if they cannot be aligned,
    or when the pick would be a guess: two tokens with different digits parse to the same
    float as an event's timestamp (an ``args.ts`` of ``…010.05`` beside a ``ts`` of
    ``…010.1``), so the digits taken could be the wrong ones (bad-input audit #21)."""
    fl = []
    for t in toks:
        try:
            fl.append(float(t))
        except ValueError:
            fl.append(float("nan"))
    texts: dict[float, set[bytes]] = {}
    for t, v in zip(toks, fl):
        texts.setdefault(v, set()).add(t.rstrip(b"0").rstrip(b".") if b"." in t else t)
    wanted = set(fvals.tolist())
    if any(len(ts_) > 1 and v in wanted for v, ts_ in texts.items()):
        return None
    out = []
    j = 0
    m = len(toks)
    for f in fvals.tolist():
        while j < m:
            j += 1
            if fl[j - 1] == f:  # NaN (an unparsable token) equals nothing
                out.append(toks[j - 1])
                break
        else:
            return None
    return np.array(out) if out else None


def _spread(vals: np.ndarray, idx: np.ndarray, n: int) -> np.ndarray:
    out = np.zeros(n, dtype=vals.dtype)
    out[idx] = vals
    return out


def _same_width_ns(arr: np.ndarray) -> np.ndarray | None:
    """ns of µs tokens (bytes) that all have one width and exactly three decimals, the
    common epoch layout (``1712195495519689.047``): the digits without the dot are the ns.
    None for any other layout (a sign, an exponent, other decimals)."""
    width = np.strings.str_len(arr)
    if not len(width) or width.min() != width.max() or int(width[0]) < 5:
        return None
    w = int(width[0])
    b = arr.view(np.uint8).reshape(len(arr), arr.dtype.itemsize)
    if not (b[:, w - 4] == ord(".")).all():
        return None
    digits = np.concatenate([b[:, :w - 4], b[:, w - 3:w]], axis=1)
    try:   # a sign or an exponent letter among the digits is not a number numpy reads
        return digits.view(f"S{w - 1}").ravel().astype(np.int64)
    except ValueError:
        return None


def exact_ts_ns(src: SourceBytes, ts: list, has_ts: np.ndarray, types: set,
                path: str | None = None) -> tuple[np.ndarray, bool]:
    """Integer ns timestamps, exact. ``ts`` are the decoded values (µs, int or float),
    ``types`` the set of their Python types. Returns (ns, exact)."""
    n = len(ts)
    out = np.zeros(n, dtype=np.int64)
    idx = np.flatnonzero(has_ts)
    if not len(idx):
        return out, True
    all_present = len(idx) == n
    vals = ts if all_present else [ts[i] for i in idx]
    fvals = np.asarray(vals, dtype=np.float64)
    check_us_range(path or src.path, fvals if all_present else _spread(fvals, idx, n), ts, "ts")
    if float not in types:
        out[idx] = np.asarray(vals, dtype=np.int64) * 1000
        return out, True
    # Floats below 2**33 µs (~2.4 h from zero) hold 3 decimals exactly enough to round.
    if np.abs(fvals).max() < 2.0**33:
        out[idx] = np.rint(fvals * 1000.0).astype(np.int64)
        return out, True
    # Epoch-scale fractional values: take the digits from the text, aligned by order.
    toks = _TS_TEXT_RE.findall(src.data)
    arr = np.array(toks) if len(toks) == len(idx) else (
        _align_tokens(toks, fvals) if len(toks) > len(idx) else None)
    if arr is not None:
        ns = _same_width_ns(arr)
        if ns is None and not (np.strings.find(arr, b"e") >= 0).any() and not (np.strings.find(arr, b"E") >= 0).any():
            ip, _, fp = np.strings.partition(arr, b".")
            ints = ip.astype(np.int64)
            f4 = np.strings.ljust(np.strings.slice(fp, 0, 4), 4, b"0").astype(np.int64)
            frac_ns = (f4 + 5) // 10  # round half up on the 4th decimal
            ns = ints * 1000 + np.where(ints < 0, -frac_ns, frac_ns)
        if ns is not None:
            # Alignment check: the text must agree with the decoded float to float precision.
            tol = np.abs(fvals) * 1000.0 * 4e-16 + 2.0
            if (np.abs(ns.astype(np.float64) - fvals * 1000.0) <= tol).all():
                out[idx] = ns
                return out, True
    # Odd layouts (e.g. a "ts" key inside args): nearest ns of the float value, flagged.
    out[idx] = np.rint(fvals * 1000.0).astype(np.int64)
    return out, False
