"""Kineto / Chrome-trace events as one list per field, decoded in one typed pass.

A Kineto trace is one JSON object whose ``traceEvents`` array holds ~1M small objects with
the same ten keys. :func:`decode_kineto` decodes that array with msgspec straight into
typed records (one C pass, no per-event dict) and turns them into per-field lists
(:class:`FieldColumns`), the form the event-table builder
(:func:`opgraph.ingest.kineto_events.events_to_table`) reads. The general path
(:func:`columns_of_dicts`) makes the same columns from events decoded as dicts.

The typed pass is only a faster route to the same values. The canonical fields are
decoded as JSON scalars and type-checked by the builder exactly as before; ``args`` are
kept as raw JSON text by msgspec and then decoded by orjson in one call over all events,
so their values (unsigned 64-bit integers, larger integers as floats) and the nesting
depth allowed are those of the general path. Anything the typed pass does not take (an
event key outside :data:`STANDARD_KEYS` and :data:`EXTRA_FIELDS`, a list or object or an
integer beyond int64 in a canonical field, a top level that is not an object with
``traceEvents``, any JSON error) makes :func:`decode_kineto` return None, and the caller
decodes the file the general way, which gives its usual values and words its errors.
Without msgspec installed every file goes the general way.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Annotated, Any, Union

import numpy as np
import orjson

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
    lacks the key; times as written, in µs). ``extra``: per event, a dict of its keys
    outside :data:`STANDARD_KEYS` (kept for lossless re-export), or None when no event has
    any."""

    ph: list
    cat: list
    name: list
    pid: list
    tid: list
    ts: list
    dur: list
    args: list
    id: list
    bp: list
    extra: np.ndarray | None

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


def _decoded_args(evs: list) -> list:
    """Every event's ``args`` decoded by orjson in one call (the values, and the nesting
    depth it allows, exactly as the general path decodes them)."""
    buf = b"[[[" + b",".join([e.args for e in evs]) + b"]]]"
    return orjson.loads(buf)[0][0]


def _columns_of_records(evs: list, unset: Any) -> FieldColumns:
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
                        [e.tid for e in evs], [e.ts for e in evs], [e.dur for e in evs], _decoded_args(evs),
                        [e.id for e in evs], [e.bp for e in evs], extra)


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
        doc["traceEvents"] = _columns_of_records(evs, unset)
    except (ValueError, RecursionError):   # msgspec's and orjson's errors, bad UTF-8: the general way
        return None
    return doc
