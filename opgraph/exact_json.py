"""Integers a double cannot hold, kept exact from a trace's args to every writer.

orjson reads an integer literal beyond 64 bits (``123456789012345678901234567890``) as the
nearest double, so a writer printed ``1.2345678901234568e+29``. The args decoder
(:mod:`opgraph.model.event_args`) decodes the rare event whose text holds such a literal
with :func:`exact_loads`: the value is an :class:`ExactNumber`, a ``float`` (what every
analysis sees, as before) that remembers the literal; every JSON writer passes
:func:`exact_default` to orjson, which writes the literal back unchanged.
"""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

#: An integer literal of 20 digits or more outside a string's digits run: the only ones a
#: 64-bit integer may not hold (int64 has 19 digits; uint64 up to 20).
BIG_INT_RE = re.compile(rb"(?<![\w.\\])-?\d{20,}(?![\d.eE])")
#: Every digit mapped to ``0`` (other bytes unchanged): a run of 20 digits is then one
#: substring search, about a tenth of orjson's parse of the same bytes (a regex scan took
#: two and a half times the parse).
_DIGITS = bytes.maketrans(b"0123456789", b"0" * 10)
_RUN = b"0" * 20
_U64 = 2 ** 64
_I64 = -(2 ** 63)


class ExactNumber(float):
    """A JSON integer literal beyond 64 bits: the nearest double, plus ``text``, the literal
    as the trace wrote it (written back by :func:`exact_default`). Pickles as a plain float."""

    __slots__ = ("text",)

    def __new__(cls, text: str) -> "ExactNumber":
        self = super().__new__(cls, float(text))
        self.text = text
        return self

    def __reduce__(self) -> Any:
        return (float, (float(self),))


def _int(text: str) -> Any:
    v = int(text)
    return v if _I64 <= v < _U64 else ExactNumber(text)


def may_hold_big_int(data: bytes) -> bool:
    """Whether ``data`` holds a run of 20 digits (fast; :data:`BIG_INT_RE` then says
    whether it is an integer literal beyond 64 bits)."""
    return data.translate(_DIGITS).find(_RUN) >= 0


def exact_loads(text: bytes | str) -> Any:
    """``text`` decoded as JSON with integers beyond 64 bits as :class:`ExactNumber` (every
    other value as orjson gives it: int, float, str, list, dict, None, bool)."""
    return json.loads(text, parse_int=_int)


def exact_default(o: Any) -> Any:
    """orjson ``default``: an :class:`ExactNumber` as its literal; anything else is a ``TypeError``."""
    if isinstance(o, ExactNumber):
        return orjson.Fragment(o.text.encode())
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")
