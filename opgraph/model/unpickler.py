"""The safe unpickler of ``.gpickle`` files: :class:`SafeUnpickler` resolves only the
globals on :data:`ALLOWED_GLOBALS` (a hostile file cannot run code), and refuses an
array whose declared size exceeds :func:`allocation_cap` of the file size before anything
is allocated (:class:`ArrayTooLarge`).

The allow-list names ``opgraph.graph.io._rebuild_digraph``: that module path and name are
part of the file format (every saved graph references them), so they must stay valid.
"""

from __future__ import annotations

import pickle
from typing import Any

import numpy as np

#: (module, name) pairs a .gpickle may reference. Everything else is refused.
ALLOWED_GLOBALS = frozenset({
    ("opgraph.graph.io", "_rebuild_digraph"),
    ("networkx.classes.digraph", "DiGraph"),
    ("builtins", "slice"), ("builtins", "set"), ("builtins", "frozenset"), ("builtins", "complex"),
    ("numpy", "dtype"), ("numpy", "ndarray"),
    ("numpy._core.multiarray", "_reconstruct"), ("numpy.core.multiarray", "_reconstruct"),
    ("numpy._core.multiarray", "scalar"), ("numpy.core.multiarray", "scalar"),
    ("numpy._core.numeric", "_frombuffer"), ("numpy.core.numeric", "_frombuffer"),
    ("pandas", "Categorical"), ("pandas", "CategoricalDtype"), ("pandas", "DataFrame"),
    ("pandas", "Index"), ("pandas", "RangeIndex"), ("pandas", "StringDtype"),
    ("pandas.arrays", "StringArray"), ("pandas.core.frame", "DataFrame"), ("pandas", "NA"),
    ("pandas", "array"),
    ("pandas._libs.arrays", "__pyx_unpickle_NDArrayBacked"),
    ("pandas._libs.internals", "_unpickle_block"),
    ("pandas.core.indexes.base", "_new_Index"),
    ("pandas.core.internals.managers", "BlockManager"),
    ("pandas.core.arrays.categorical", "Categorical"),
    ("pandas.core.dtypes.dtypes", "CategoricalDtype"),
    ("pandas.core.indexes.range", "RangeIndex"),
    ("pandas.core.indexes.base", "Index"),
})


def allocation_cap(file_size: int) -> int:
    """Largest array (bytes) a saved graph of ``file_size`` bytes may declare: 64x the
    file plus 64 MiB (object columns and compressed-looking data stay far below it)."""
    return 64 * int(file_size) + 64 * 2**20


class ArrayTooLarge(pickle.UnpicklingError):
    """A pickle declares an array larger than :func:`allocation_cap` allows for its file."""


def _declared_bytes(shape: Any, dtype: Any) -> int:
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    n = 1
    for d in tuple(shape):
        d = int(d)
        if d < 0:
            raise pickle.UnpicklingError(f"negative array dimension {d}")
        n *= d
    return n * max(1, np.dtype(dtype).itemsize)


class SafeUnpickler(pickle.Unpickler):
    """Unpickler that only resolves the globals in :data:`ALLOWED_GLOBALS`.

    The numpy constructors are wrapped: an array whose declared size exceeds ``max_bytes``
    (:func:`allocation_cap` of the file size) is refused before anything is allocated."""

    def __init__(self, file: Any, *, max_bytes: int | None = None, **kw: Any):
        super().__init__(file, **kw)
        self.max_bytes = max_bytes

    def _check(self, shape: Any, dtype: Any) -> None:
        if self.max_bytes is None:
            return
        try:
            size = _declared_bytes(shape, dtype)
        except (TypeError, ValueError, OverflowError) as e:
            raise pickle.UnpicklingError(f"bad array shape or dtype ({e})") from None
        if size > self.max_bytes:
            raise ArrayTooLarge(f"declares a {size:,}-byte array, more than a file of this size can hold "
                            f"(limit {self.max_bytes:,} bytes)")

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in ALLOWED_GLOBALS:
            raise pickle.UnpicklingError(f"refused global {module}.{name}: not on opgraph's allow-list")
        obj = super().find_class(module, name)
        if (module, name) == ("numpy", "ndarray"):
            return _CheckedNdarray(self)
        if name == "_reconstruct":
            def reconstruct(subtype: Any, shape: Any, dtype: Any, _f: Any = obj) -> Any:
                if isinstance(subtype, _CheckedNdarray):
                    subtype = np.ndarray
                self._check(shape, dtype if not isinstance(dtype, bytes) else "b")
                return _f(subtype, shape, dtype)
            return reconstruct
        if name == "_frombuffer":
            def frombuffer(buf: Any, dtype: Any, shape: Any, order: Any, _f: Any = obj) -> Any:
                self._check(shape, dtype)
                return _f(buf, dtype, shape, order)
            return frombuffer
        return obj


class _CheckedNdarray:
    """``numpy.ndarray`` as a pickle sees it: a size-checked constructor."""

    def __init__(self, unpickler: SafeUnpickler):
        self.unpickler = unpickler

    def __call__(self, shape: Any, dtype: Any = float, *args: Any, **kw: Any) -> np.ndarray:
        self.unpickler._check(shape, dtype)
        return np.ndarray(shape, dtype, *args, **kw)


__all__ = ["ALLOWED_GLOBALS", "allocation_cap", "ArrayTooLarge", "SafeUnpickler"]
