"""Reading the recorded arguments of one op call: ``Concrete Inputs`` values
(:func:`parse_concrete`), shapes, strides and dtypes (:class:`Args`), and the dtype
arithmetic the rules share (:func:`op_dtype`, :func:`promote`, :func:`broadcast`).

Units: element counts (``numel``) are counts; :meth:`Args.itemsize` and
:meth:`Args.nbytes` are bytes (``None`` when the dtype string is unknown). The dtype
vocabulary itself lives in :mod:`opgraph.dtypes`.
"""

from __future__ import annotations

import math
import re
from typing import Any, Iterable, Sequence

from opgraph.dtypes import DTYPE_CATEGORY, DTYPE_TABLE, NON_TENSOR_TYPES, dtype_info
from opgraph.dtypes import itemsize as dtype_itemsize

__all__ = ["parse_concrete", "UNKNOWN", "is_shape", "prod", "Args", "op_dtype", "broadcast",
           "promote", "bool_mask"]

_INT_RE = re.compile(r"^[+-]?\d+$")
_FLOAT_RE = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$|^[+-]?(inf|nan)$")


def _split_top(s: str) -> list[str]:
    parts: list[str] = []
    cur: list[str] = []
    depth = 0
    for ch in s:
        if ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if cur or parts:
        parts.append("".join(cur))
    return parts


def parse_concrete(value: Any) -> Any:
    """Parse one ``Concrete Inputs`` entry.

    ``''`` and ``'None'`` -> ``None``; ``'True'``/``'False'`` -> bool; integers and floats
    (``'0.'``, ``'1e-05'``) -> numbers; ``'[2, 2]'`` -> list (recursively); anything else is
    returned unchanged (e.g. ``'same'``).
    """
    if not isinstance(value, str):
        return value
    s = value.strip()
    if s in ("", "None"):
        return None
    if s == "True":
        return True
    if s == "False":
        return False
    if _INT_RE.match(s):
        return int(s)
    if _FLOAT_RE.match(s):
        return float(s)
    if len(s) >= 2 and s[0] in "[(" and s[-1] in "])":
        inner = s[1:-1].strip()
        return [] if not inner else [parse_concrete(p) for p in _split_top(inner)]
    return s


class _Unknown:
    def __repr__(self) -> str:
        return "UNKNOWN"


#: The value of an argument whose concrete value was not recorded (see :meth:`Args.ci`).
UNKNOWN = _Unknown()


def is_shape(x: Any) -> bool:
    """True if *x* is a list or tuple of ints (bools excluded): a tensor shape."""
    return isinstance(x, (list, tuple)) and all(isinstance(d, int) and not isinstance(d, bool) for d in x)


def prod(xs: Iterable[int]) -> int:
    """Product of *xs* (1 for an empty iterable)."""
    return math.prod(xs)


class Args:
    """Indexed access to the recorded arguments of one op call."""

    def __init__(self, dims: Sequence[Any] | None, types: Sequence[Any] | None,
                 concrete: Sequence[Any] | None, strides: Sequence[Any] | None):
        self.dims = list(dims or [])
        self.types = list(types) if types else []
        self.concrete = list(concrete) if concrete is not None else None
        self.strides = list(strides) if strides else []
        self.n = len(self.dims)

    # -- type and shape -----------------------------------------------------------------
    def type_str(self, i: int) -> str | None:
        return self.types[i] if i < len(self.types) and isinstance(self.types[i], str) else None

    def is_tensor(self, i: int) -> bool:
        """True if argument *i* is a (single) tensor: known dtype, or non-empty int dims."""
        if i >= self.n or not is_shape(self.dims[i]):
            return False
        t = self.type_str(i)
        if t is not None and dtype_info(t) is not None:
            return True
        return len(self.dims[i]) > 0 and (t is None or t not in NON_TENSOR_TYPES)

    def shape(self, i: int) -> tuple[int, ...] | None:
        return tuple(self.dims[i]) if self.is_tensor(i) else None

    def numel(self, i: int) -> int:
        s = self.shape(i)
        return prod(s) if s is not None else 0

    def dtype(self, i: int) -> str | None:
        t = self.type_str(i)
        info = dtype_info(t) if t is not None else None
        return info[0] if info else None

    def itemsize(self, i: int) -> int | None:
        return dtype_itemsize(self.dtype(i))

    def distinct_numel(self, i: int) -> int:
        """Elements actually stored: dims with stride 0 (broadcast views) count once."""
        s = self.shape(i)
        if s is None:
            return 0
        st = self.strides[i] if i < len(self.strides) else None
        if st is not None and is_shape(st) and len(st) == len(s) and prod(s) > 0:
            return prod(d for d, k in zip(s, st) if k != 0)
        return prod(s)

    def nbytes(self, i: int) -> int | None:
        """Bytes of the distinct elements of tensor *i* (0 if absent, None if dtype unknown)."""
        if not self.is_tensor(i):
            return 0
        size = self.itemsize(i)
        return None if size is None else self.distinct_numel(i) * size

    def tensor_indices(self) -> list[int]:
        return [i for i in range(self.n) if self.is_tensor(i)]

    def tensor_list(self, i: int) -> list[tuple[int, ...]] | None:
        """Shapes of a TensorList argument (nested dims), or None."""
        if i >= self.n:
            return None
        d = self.dims[i]
        if isinstance(d, (list, tuple)) and d and all(is_shape(x) for x in d):
            return [tuple(x) for x in d]
        return None

    # -- concrete values ----------------------------------------------------------------
    def ci(self, i: int) -> Any:
        """Concrete value of argument *i*: parsed value, ``None`` when the argument was
        recorded as absent (empty type and value in a trace that records concrete
        inputs), or :data:`UNKNOWN`."""
        if self.concrete is None or i >= len(self.concrete):
            return UNKNOWN
        raw = self.concrete[i]
        if isinstance(raw, str) and raw.strip() == "":
            t = self.type_str(i)
            if t == "" and i < self.n and self.dims[i] in ([], None):
                return None
            return UNKNOWN
        return parse_concrete(raw)


def op_dtype(a: Args) -> str | None:
    """dtype of the largest tensor input by element count (first one on ties); ``None``
    when that input's dtype string is unknown or the op has only tensor lists."""
    best, best_n = None, -1
    for i in a.tensor_indices():
        n = a.numel(i)
        if n > best_n:
            best, best_n = i, n
    return None if best is None else a.dtype(best)


def broadcast(shapes: Sequence[Sequence[int]]) -> tuple[int, ...] | None:
    """The broadcast shape of *shapes* (numpy / torch rules), or ``None`` when they do not
    broadcast."""
    nd = max((len(s) for s in shapes), default=0)
    out = []
    for k in range(nd):
        dim = 1
        for s in shapes:
            j = len(s) - nd + k
            if j < 0:
                continue
            d = s[j]
            if d == 1:
                continue
            if dim != 1 and d != dim:
                return None
            dim = d
        out.append(dim)
    return tuple(out)


def promote(dtypes: Sequence[str | None], ndims: Sequence[int]) -> str | None:
    """Simplified torch type promotion among tensor operands (dimensioned tensors win
    over 0-dim tensors of the same category)."""
    if any(d is None for d in dtypes):
        return None
    if not dtypes:
        return None
    def pick(cands: list[str]) -> str:
        top = max(DTYPE_CATEGORY.get(c, 2) for c in cands)
        cands = [c for c in cands if DTYPE_CATEGORY.get(c, 2) == top]
        if len(set(cands)) == 1:
            return cands[0]
        if set(cands) <= {"fp16", "bf16"}:
            return "fp32"
        return max(cands, key=lambda c: DTYPE_TABLE[c][1])
    dimmed = [d for d, n in zip(dtypes, ndims) if n > 0]
    zero = [d for d, n in zip(dtypes, ndims) if n == 0]
    if not dimmed:
        return pick(zero)  # type: ignore[arg-type]
    best = pick(dimmed)  # type: ignore[arg-type]
    if zero:
        z = pick(zero)  # type: ignore[arg-type]
        if DTYPE_CATEGORY.get(z, 2) > DTYPE_CATEGORY.get(best, 2):
            return z
    return best


def bool_mask(v: Any, n: int) -> list[bool] | None:
    """A concrete ``output_mask`` value as a list of *n* bools, or ``None`` if *v* is not
    exactly that."""
    if isinstance(v, (list, tuple)) and len(v) == n and all(isinstance(e, bool) for e in v):
        return list(v)
    return None
