"""Kineto / Chrome-trace events as one list per field, decoded in one typed pass.

A Kineto trace is one JSON object whose ``traceEvents`` array holds ~1M small objects with
the same ten keys. :func:`decode_kineto` decodes that array with msgspec straight into
typed records (one C pass, no per-event dict) and turns them into per-field lists
(:class:`FieldColumns`), the form the event-table builder
(:func:`opgraph.ingest.kineto_events.events_to_table`) reads. The general path
(:func:`columns_of_dicts`) makes the same columns from events decoded as dicts.

The typed pass is only a faster route to the same values. The canonical fields are
decoded as JSON scalars and type-checked by the builder exactly as before. ``args`` stay
raw JSON text: one buffer with offsets (:class:`~opgraph.model.event_args.RawArgs`),
decoded later by orjson, only the rows a step reads, or all of them (in chunks) when the
column is read, so their values (unsigned 64-bit integers, larger integers as floats) and
the nesting depth allowed are those of the general path. The text is kept raw only when
orjson takes all of it, which msgspec's check of the JSON shape does not promise
(:func:`args_column`); args nested deeper than a saved graph holds, or an args that is not
an object, are decoded at once instead, as before. Anything the typed pass does not take
(an event key outside :data:`STANDARD_KEYS` and :data:`EXTRA_FIELDS`, a list or object or
an integer beyond int64 in a canonical field, a top level that is not an object with
``traceEvents``, any JSON error, in args too) makes :func:`decode_kineto` return None, and
the caller decodes the file the general way, which gives its usual values and words its
errors. Without msgspec installed every file goes the general way.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Annotated, Any, Union

import numpy as np
import orjson

from opgraph.ingest.depth_limit import ARGS_MAX_DEPTH
from opgraph.model.json_depth import raw_max_depth
from opgraph.model.event_args import RawArgs

#: The keys an event's canonical columns hold.
STANDARD_KEYS = frozenset({"ph", "cat", "name", "pid", "tid", "ts", "dur", "args", "id", "bp"})
#: Keys outside the canonical columns that the typed pass also takes (kept per event in
#: ``extra``): ``s``, the scope of instant events, is the only one the real Kineto traces
#: in ../shared/traces write. A trace with any other key takes the general path (each
#: extra field costs the typed pass a scan of every event).
EXTRA_FIELDS = ("s",)


@lru_cache(maxsize=1)
def _decoders() -> Any:
    """(top-level decoder, events decoder, UNSET), made once; None without msgspec (an
    environment installed before it became a dependency): then every file is read the
    general way, slower, with the same answers."""
    try:
        import msgspec
    except ImportError:
        return None
    unset = msgspec.UNSET
    # An integer the general path (orjson) decodes as an int, within what the typed pass can
    # bound (int64). A larger one makes the typed pass step aside, so that the general path
    # gives it its usual value. A list or an object in a canonical field does the same.
    scalar = Union[str, Annotated[int, msgspec.Meta(ge=-(2**63), le=2**63 - 1)], float, bool, None]

    # one Chrome trace event as decoded: a JSON scalar per key (None when absent; UNSET for
    # ``s``, so that an explicit null is kept), ``args`` as its raw JSON text
    fields = [(f, scalar, None) for f in ("ph", "cat", "name", "pid", "tid", "ts", "dur")]
    fields += [("args", msgspec.Raw, msgspec.Raw(b"null")), ("id", scalar, None), ("bp", scalar, None)]
    fields += [(f, Union[scalar, msgspec.UnsetType], unset) for f in EXTRA_FIELDS]
    event = msgspec.defstruct("_Event", fields, forbid_unknown_fields=True, gc=False)
    return msgspec.json.Decoder(dict[str, msgspec.Raw]), msgspec.json.Decoder(list[event]), unset


@dataclass
class FieldColumns:
    """The events of a Chrome trace, one list per field in file order (None where an event
    lacks the key; times as written, in µs). ``args``: the decoded values, or from the typed
    pass their raw JSON text (:class:`~opgraph.model.event_args.RawArgs`). ``extra``: per
    event, a dict of its keys outside :data:`STANDARD_KEYS` (kept for lossless re-export),
    or None when no event has any. ``depth_bound``: the file's bracket count
    (:func:`~opgraph.ingest.depth_limit.raw_max_depth`) when the typed pass made it."""

    ph: list
    cat: list
    name: list
    pid: list
    tid: list
    ts: list
    dur: list
    args: list | RawArgs
    id: list
    bp: list
    extra: np.ndarray | None
    depth_bound: int | None = None

    def __len__(self) -> int:
        return len(self.ph)


def columns_of_dicts(events: list[dict]) -> FieldColumns:
    """The columns of events decoded as dicts (every element must be a dict)."""
    rows = [(e.get("ph"), e.get("cat"), e.get("name"), e.get("pid"), e.get("tid"), e.get("ts"),
             e.get("dur"), e.get("args"), e.get("id"), e.get("bp")) for e in events]
    cols = list(map(list, zip(*rows))) if rows else [[] for _ in range(10)]
    del rows
    extra = None
    odd = (set().union(*events) if events else set()) - STANDARD_KEYS
    if odd:
        extra = np.full(len(events), None, dtype=object)
        for i, e in enumerate(events):
            if len(e.keys() - STANDARD_KEYS):
                extra[i] = {k: e[k] for k in e.keys() - STANDARD_KEYS}
    return FieldColumns(*cols, extra=extra)


#: Bytes mapped so that the numbers a double cannot hold show: digits to ``0``, ``E`` and
#: ``+`` to ``e``. A JSON number overflows a double (orjson refuses it; msgspec's shape
#: check does not) only with a positive exponent of three digits or more (``e000`` or
#: ``ee000`` once mapped: :data:`_BIG_EXPONENT`) or with 210 digits or more before its
#: point (a run of :data:`_LONG_RUN` ``0``).
_NUMBER_SHAPES = bytes(ord("0") if 48 <= i <= 57 else ord("e") if i in (ord("E"), ord("+")) else i
                       for i in range(256))
_BIG_EXPONENT = re.compile(b"e000")
_LONG_RUN = b"0" * 200


def _rows_to_check(raw: RawArgs) -> np.ndarray:
    """The events whose text orjson might refuse though msgspec's shape check took it:
    bytes beyond ASCII (UTF-8 that may be invalid) and numbers that may not fit a double
    (events holding such a shape anywhere, in strings too: a superset)."""
    shapes = raw.buf.translate(_NUMBER_SHAPES)
    pos = [np.fromiter((m.start() for m in _BIG_EXPONENT.finditer(shapes)), dtype=np.int64)]
    run: list[int] = []
    at = shapes.find(_LONG_RUN)
    while at >= 0:
        run.append(at)
        at = shapes.find(_LONG_RUN, at + len(_LONG_RUN))
    pos.append(np.asarray(run, dtype=np.int64))
    if not raw.buf.isascii():
        pos.append(np.flatnonzero(np.frombuffer(raw.buf, dtype=np.uint8) >= 0x80))
    return np.unique(np.searchsorted(raw.offsets, np.concatenate(pos), side="right") - 1)


def args_column(texts: list, depth_bound: int) -> list | RawArgs:
    """The args column of the typed pass from each event's raw JSON text (``texts``):
    :class:`~opgraph.model.event_args.RawArgs` when it can stay raw, else the values
    decoded now by orjson (:meth:`~opgraph.model.event_args.RawArgs.decode`), exactly as
    the general path decodes them: when an
    args is not an object or null (the builder words that error) or the file nests deeper
    than the saved-graph bound (``depth_bound``: its bracket count; the deep part is cut
    from decoded values). Kept raw, the text must be what orjson takes: msgspec checked
    its JSON shape, not its UTF-8 (events with bytes beyond ASCII) nor the range of its
    numbers (events with a huge-looking number), so those events are decoded here, once.
    Raises ``orjson.JSONDecodeError`` where orjson refuses the text."""
    raw = RawArgs.of_texts(texts)
    if depth_bound > ARGS_MAX_DEPTH + 1 or not np.isin(raw.first_bytes(), (ord("{"), ord("n"))).all():
        return raw.decode()
    rows = _rows_to_check(raw)
    if len(rows):
        raw.rows(rows)
    return raw


def _columns_of_records(evs: list, unset: Any, depth_bound: int) -> FieldColumns:
    extra = None
    for f in EXTRA_FIELDS:
        vals = [getattr(e, f) for e in evs]
        if vals.count(unset) == len(vals):
            continue
        if extra is None:
            extra = np.full(len(evs), None, dtype=object)
        for i, v in enumerate(vals):
            if v is not unset:
                if extra[i] is None:
                    extra[i] = {}
                extra[i][f] = v
    return FieldColumns([e.ph for e in evs], [e.cat for e in evs], [e.name for e in evs], [e.pid for e in evs],
                        [e.tid for e in evs], [e.ts for e in evs], [e.dur for e in evs],
                        args_column([e.args for e in evs], depth_bound), [e.id for e in evs], [e.bp for e in evs],
                        extra, depth_bound)


def decode_kineto(data: bytes) -> dict[str, Any] | None:
    """The JSON object of a Kineto trace with ``traceEvents`` as :class:`FieldColumns`, or
    None when the typed pass does not take the file (see the module docstring): then decode
    it the general way. The other top-level values are decoded as plain JSON values
    (orjson, as the general way)."""
    dec = _decoders()
    if dec is None or not data[:64].lstrip().startswith(b"{"):
        return None
    top_dec, events_dec, unset = dec
    try:
        top = top_dec.decode(data)
        raw = top.get("traceEvents")
        if raw is None or not bytes(memoryview(raw)[:1]).startswith(b"["):
            return None
        evs = events_dec.decode(raw)
        doc = {k: (None if k == "traceEvents" else orjson.loads(memoryview(v))) for k, v in top.items()}
        del top, raw
        doc["traceEvents"] = _columns_of_records(evs, unset, raw_max_depth(data))
    except (ValueError, RecursionError):   # msgspec's and orjson's errors, bad UTF-8: the general way
        return None
    return doc
