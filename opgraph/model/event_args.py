"""The ``args`` column of an event table, read row by row without decoding all of it.

Two forms hold one value per event (a dict, or None):

* :class:`DictArgs`: the values decoded (every reader but the typed Kineto pass);
* :class:`RawArgs`: the raw JSON text of every event's args as the trace wrote it, in one
  buffer with offsets (the typed Kineto pass, :mod:`opgraph.ingest.kineto_decode`). Only
  the rows a step reads are decoded (by orjson, one call per subset), and the whole
  column once, when something reads it all; the values are exactly those of decoding the
  whole trace with orjson (the general path).

Both answer the same two questions: :meth:`rows` (the args of some rows) and
:meth:`key_values` (one linking key of some rows, the integers the builder links by:
:data:`LINK_KEYS`). No times here.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import lru_cache
from itertools import repeat
from operator import attrgetter, is_
from typing import Any

import numpy as np
import pandas as pd
import orjson

from opgraph.errors import OpgraphInputError
from opgraph.exact_json import BIG_INT_RE, exact_loads, may_hold_big_int

#: The keys read from args to link events (the Kineto reader's linking keys and the
#: forward/backward keys of the graph builder), each with the other spelling read where it
#: is absent (None: no other spelling).
LINK_KEYS: dict[str, str | None] = {
    "correlation": None, "External id": "external id", "Record function id": None, "device": None,
    "stream": "stream_id", "Sequence number": None, "Fwd thread id": None,
}


#: Events per decode call of a whole column: bounds the text copied and the decoder's parse
#: state held at a time (a whole 1M-event column at once held ~150 MB more at its peak).
CHUNK_EVENTS = 65536


class _Absent:
    """A key missing from an event's args (decoder default; never leaves this module)."""

    def __repr__(self) -> str:
        return "<absent>"


_ABSENT = _Absent()


class DictArgs:
    """Args already decoded: ``values`` holds one dict (or None) per event, in event order."""

    __slots__ = ("values",)

    def __init__(self, values: np.ndarray):
        self.values = values

    def __len__(self) -> int:
        return len(self.values)

    def rows(self, idx: np.ndarray) -> list:
        """The args of events ``idx`` (positions), as held."""
        return self.values[idx].tolist()

    def key_values(self, key: str, idx: np.ndarray) -> list:
        """The value of ``key`` in the args of events ``idx``; -1 where the args lack it (or are
        not an object). A key of :data:`LINK_KEYS` with another spelling reads that one where
        ``key`` itself is absent."""
        sub = self.values[idx].tolist()
        alt = LINK_KEYS.get(key)
        if alt is None:
            return [a.get(key, -1) if isinstance(a, dict) else -1 for a in sub]
        return [(a[key] if key in a else a.get(alt, -1)) if isinstance(a, dict) else -1 for a in sub]


@lru_cache(maxsize=1)
def _keys_decoder() -> tuple[Any, Any, dict[str, str]]:
    """(decoder of a JSON array of args into records of the :data:`LINK_KEYS` spellings,
    the record of a null args, {spelling: record field}). A field is a JSON scalar the
    general path decodes to the same value (bool, int64, str, null); any other value (a
    float, a larger integer, a list or object) fails the decode, and the keys are then read
    from the decoded args instead. A key missing from an event defaults to -1, or to
    ``_ABSENT`` for a key with another spelling (so that the other one can be read)."""
    from typing import Annotated, Union

    import msgspec

    scalar = Union[bool, Annotated[int, msgspec.Meta(ge=-(2**63), le=2**63 - 1)], str, None]
    spellings = [(k, alt is not None) for k, alt in LINK_KEYS.items()] + [(a, False) for a in LINK_KEYS.values() if a]
    fields = [(f"k{i}", scalar, _ABSENT if has_alt else -1) for i, (_, has_alt) in enumerate(spellings)]
    rec = msgspec.defstruct("_LinkKeys", fields, rename={f"k{i}": s for i, (s, _) in enumerate(spellings)}, gc=False)
    return msgspec.json.Decoder(list[Union[rec, None]]), rec(), {s: f"k{i}" for i, (s, _) in enumerate(spellings)}


class RawArgs:
    """The args of every event as raw JSON text: ``buf`` holds each event's text followed by
    a comma (``b"{...},null,{...},"``; empty for no events), ``offsets`` (int64, one more
    than the events) where each starts: event ``i`` is ``buf[offsets[i]:offsets[i+1] - 1]``.
    Every text is a JSON object or ``null`` (the typed pass checks that, and that orjson
    takes them, before it keeps a column in this form)."""

    __slots__ = ("buf", "offsets", "_keys")

    def __init__(self, buf: bytes, offsets: np.ndarray):
        self.buf = buf
        self.offsets = offsets
        self._keys: np.ndarray | DictArgs | None = None

    @classmethod
    def of_texts(cls, texts: list) -> RawArgs:
        """The column of ``texts``: each event's raw JSON text (bytes-like), in event order."""
        lens = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
        offsets = np.zeros(len(texts) + 1, dtype=np.int64)
        np.cumsum(lens + 1, out=offsets[1:])
        return cls(b",".join(texts + [b""]), offsets)

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def json_arrays(self) -> Iterator[bytes]:
        """The texts as JSON arrays (``[...]``) of up to :data:`CHUNK_EVENTS` events each, in
        event order: each decode then holds one chunk's text and parse state at a time."""
        view = memoryview(self.buf)
        n = len(self)
        for a in range(0, n, CHUNK_EVENTS):
            b = min(a + CHUNK_EVENTS, n)
            yield b"".join((b"[", view[int(self.offsets[a]):int(self.offsets[b]) - 1], b"]"))

    def first_bytes(self) -> np.ndarray:
        """The first byte of every event's text (uint8): ``{`` for an object, ``n`` for null."""
        return np.frombuffer(self.buf, dtype=np.uint8)[self.offsets[:-1]] if len(self) else np.empty(0, np.uint8)

    def decode(self) -> list:
        """Every event's args, decoded by orjson (one call per :data:`CHUNK_EVENTS` events),
        nested as in a trace (inside the document, the events array and the event), so that
        the values and the nesting depth allowed are exactly those of decoding the whole trace
        (the general path). Raises ``orjson.JSONDecodeError`` on text orjson does not take."""
        out: list = []
        for a, arr in zip(range(0, len(self), CHUNK_EVENTS), self.json_arrays()):
            doc = orjson.loads(b"".join((b"[[", arr, b"]]")))
            if len(doc) != 1 or len(doc[0]) != 1:   # text that closes the nesting early
                raise orjson.JSONDecodeError("args text closes the events array early", "", 0)
            vals = doc[0][0]
            if may_hold_big_int(arr):   # rare: integers beyond 64 bits, kept exact
                self._exact(vals, np.arange(a, a + len(vals)))
            out += vals
        return out

    def _exact(self, vals: list, idx: np.ndarray) -> None:
        """Decode again, in place, the values of events ``idx`` whose text holds an integer
        beyond 64 bits (:func:`opgraph.exact_json.exact_loads`: such integers stay exact)."""
        view = memoryview(self.buf)
        for k, (s, e) in enumerate(zip(self.offsets[idx].tolist(), (self.offsets[idx + 1] - 1).tolist())):
            text = bytes(view[s:e])
            if BIG_INT_RE.search(text):
                vals[k] = exact_loads(text)

    def column(self, path: str | None) -> np.ndarray:
        """:meth:`decode` as the event table's column (an object array); text orjson refuses
        (never kept raw by the typed pass) raises a one-line input error naming ``path``."""
        try:
            vals = self.decode()
        except orjson.JSONDecodeError as e:
            raise OpgraphInputError(path, f"invalid JSON in the events' args ({e})") from None
        return np.fromiter(vals, dtype=object, count=len(vals))

    def rows(self, idx: np.ndarray) -> list:
        """The args of events ``idx`` (positions), decoded by orjson in one call."""
        idx = np.asarray(idx, dtype=np.int64)
        if not len(idx):
            return []
        view = memoryview(self.buf)
        parts = [view[s:e] for s, e in zip(self.offsets[idx].tolist(), (self.offsets[idx + 1] - 1).tolist())]
        text = b"".join((b"[[[", b",".join(parts), b"]]]"))
        vals = orjson.loads(text)[0][0]
        if may_hold_big_int(text):
            self._exact(vals, idx)
        return vals

    def key_values(self, key: str, idx: np.ndarray) -> list:
        """As :meth:`DictArgs.key_values`, for a key of :data:`LINK_KEYS`. The first call
        reads the keys of every event by one typed decode of the buffer, which skips every
        other key and value; each call then takes its rows' values from those records."""
        recs = self._link_records()
        if isinstance(recs, DictArgs):
            return recs.key_values(key, idx)
        fields = _keys_decoder()[2]
        sub = recs[idx]
        vals = np.fromiter(map(attrgetter(fields[key]), sub), dtype=object, count=len(sub))
        alt = LINK_KEYS[key]
        if alt is not None:
            absent = np.fromiter(map(is_, vals, repeat(_ABSENT)), dtype=bool, count=len(vals))
            if absent.any():
                vals[absent] = np.fromiter(map(attrgetter(fields[alt]), sub[absent]), dtype=object,
                                           count=int(absent.sum()))
        return vals.tolist()

    def _link_records(self) -> np.ndarray | DictArgs:
        """The link-key records of every event (object array), or the decoded args when a
        key holds a value the typed decode does not take (read from them instead)."""
        if self._keys is None:
            import msgspec

            dec, empty, _ = _keys_decoder()
            recs: list = []
            try:
                for arr in self.json_arrays():
                    recs += dec.decode(arr)
            except (msgspec.ValidationError, msgspec.DecodeError):
                self._keys = DictArgs(np.fromiter(self.decode(), dtype=object, count=len(self)))
            else:
                if recs.count(None):   # null args: no keys
                    recs = [empty if r is None else r for r in recs]
                self._keys = np.fromiter(recs, dtype=object, count=len(recs))
        return self._keys


#: An args column as the builder reads it.
ArgsColumn = DictArgs | RawArgs


def with_args(ev: pd.DataFrame, pos: int, col: np.ndarray) -> pd.DataFrame:
    """A shallow copy of the event table ``ev`` with the ``args`` column ``col`` at ``pos``
    (the frame without args may be shared, e.g. by a built graph)."""
    out = ev.copy(deep=False)
    out.insert(pos, "args", col)
    return out


__all__ = ["CHUNK_EVENTS", "LINK_KEYS", "DictArgs", "RawArgs", "ArgsColumn", "with_args"]
