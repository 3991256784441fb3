"""The event table's ``args`` column, packed in a saved graph and unpacked when read.

A 1M-event trace has 1M ``args`` dicts. Unpickling them and checking their bounds was most
of what loading a saved graph cost, yet the analyses that work on the columns (idle, the
critical path, launch statistics, queue lengths, overlap, iterations, summary, overheads)
never read them. So a ``.gpickle`` holds the column apart from an event table without it,
in one of two forms:

* :data:`JSON_ARGS_KEY`: the raw JSON text of every event's args, as the trace wrote it
  (one buffer with offsets, :class:`~opgraph.model.event_args.RawArgs`): what a build from
  a Kineto trace read by the typed pass keeps from decode to the saved file
  (:func:`attach_raw_args`), never decoding the column unless a step reads it;
* :data:`ARGS_KEY`: the column as one pickled buffer (:func:`pack_args`), for every other
  graph (other formats, a graph whose table was read or edited, graphs saved before the
  JSON form); values come back exactly (any Python value the table held).

A graph loaded in column form keeps the packed column until something reads
``graph["events"]`` (:class:`LazyGraphAttrs`): then it is decoded (orjson, exactly as the
trace's JSON decodes) or unpickled by the safe unpickler, bounded like every loaded
attribute, and put back in its place. A plain unpickler, or a load as ``networkx``,
unpacks at once (:func:`unpack_payload`), so those readers see the table as it was saved.
"""

from __future__ import annotations

import io
import pickle
from typing import Any, Callable

import numpy as np
import orjson
import pandas as pd

from opgraph.errors import OpgraphInputError
from opgraph.gc_pause import gc_paused
from opgraph.model.attr_bounds import MAX_ATTR_DEPTH, BoundsBudget
from opgraph.model.unpickler import SafeUnpickler, allocation_cap
from opgraph.model.json_depth import raw_max_depth
from opgraph.model.event_args import RawArgs, with_args

#: The payload key of the pickled column: ``(column position, pickled object array)``.
ARGS_KEY = "events_args"
#: The payload key of the column as raw JSON text: ``(column position, text, offsets)``,
#: the ``buf`` and ``offsets`` of :class:`~opgraph.model.event_args.RawArgs` (bytes; int64,
#: one more than the events).
JSON_ARGS_KEY = "events_args_json"
#: Both packed forms.
PACKED_KEYS = (ARGS_KEY, JSON_ARGS_KEY)


def attach_raw_args(payload: dict[str, Any], raw: RawArgs, pos: int, path: str | None) -> None:
    """Put the raw ``args`` column of a table being built (its event table without the
    column, at ``pos``) into ``payload``, in place: under :data:`JSON_ARGS_KEY`, as it will
    be saved, and behind the graph attributes as a :class:`LazyGraphAttrs` that decodes it
    (orjson, in chunks) the first time ``graph["events"]`` is read. ``path``: the trace, named
    if decoding fails (the typed pass checked the text, so it should not)."""
    payload[JSON_ARGS_KEY] = (int(pos), raw.buf, raw.offsets)
    text = RawArgs(raw.buf, raw.offsets)   # the text alone: not the linking keys the table read from it
    payload["graph"] = LazyGraphAttrs(payload["graph"],
                                      releasing(payload, lambda ev: with_args(ev, pos, text.column(path))))


def releasing(payload: dict[str, Any], unpack: Callable[[pd.DataFrame], pd.DataFrame]
              ) -> Callable[[pd.DataFrame], pd.DataFrame]:
    """``unpack``, which then drops the packed column from ``payload``: once the table holds
    the decoded column, the text or pickled buffer is not kept beside it (a save packs the
    table again)."""
    def run(ev: pd.DataFrame) -> pd.DataFrame:
        out = unpack(ev)
        for k in PACKED_KEYS:
            payload.pop(k, None)
        return out
    return run


def pack_args(payload: dict[str, Any]) -> dict[str, Any]:
    """``payload`` as it is saved: the event table without ``args`` and the column as one
    pickled buffer under :data:`ARGS_KEY`. A payload whose column is still packed, in
    either form (a graph loaded lazily, or built from raw JSON args, that nothing has
    read), is saved as it is, without ever unpacking its args; so is one whose table has
    no ``args`` column."""
    graph = payload.get("graph")
    if not isinstance(graph, dict):
        return payload
    if any(k in payload for k in PACKED_KEYS) and isinstance(graph, LazyGraphAttrs) and graph.args_pending:
        out = dict(payload)
        out["graph"] = graph.raw()   # as loaded or built: the table without args, the column still packed
        return out
    ev = dict.get(graph, "events")
    if not isinstance(ev, pd.DataFrame) or "args" not in ev.columns:
        if isinstance(graph, LazyGraphAttrs):
            # its table was replaced by one without args: the column packed before is stale,
            # and the lazy attributes are saved as the plain dict they hold
            out = {k: v for k, v in payload.items() if k not in PACKED_KEYS}
            out["graph"] = graph.raw()
            return out
        return payload   # already packed as saved, or nothing to pack
    pos = list(ev.columns).index("args")
    blob = pickle.dumps(ev["args"].to_numpy(dtype=object), protocol=5)
    packed_graph = dict(graph.items()) if not isinstance(graph, LazyGraphAttrs) else graph.raw()
    packed_graph["events"] = ev.drop(columns=["args"])
    out = {k: v for k, v in payload.items() if k not in PACKED_KEYS}
    out["graph"] = packed_graph
    out[ARGS_KEY] = (pos, blob)
    return out


def check_packed(packed: Any, ev: pd.DataFrame, path: str) -> None:
    """The packed column's shape (a position within the table and a byte buffer), or one
    line naming ``path``; its contents are checked when unpacked."""
    ok = (type(packed) is tuple and len(packed) == 2 and type(packed[0]) is int
          and 0 <= packed[0] <= len(ev.columns) and type(packed[1]) is bytes)
    if not ok:
        raise OpgraphInputError(path, "corrupt graph columns: the packed event args are not (position, bytes)")
    if "args" in ev.columns:
        raise OpgraphInputError(path, "corrupt graph columns: event args both packed and in the table")


def check_json_packed(packed: Any, ev: pd.DataFrame, path: str) -> None:
    """The raw JSON column's shape (a position within the table, bytes, int64 offsets one
    more than the events), or one line naming ``path``; its text is checked when decoded."""
    ok = (type(packed) is tuple and len(packed) == 3 and type(packed[0]) is int
          and 0 <= packed[0] <= len(ev.columns) and type(packed[1]) is bytes and type(packed[2]) is np.ndarray
          and packed[2].dtype == np.int64 and packed[2].ndim == 1 and len(packed[2]) == len(ev) + 1)
    if not ok:
        raise OpgraphInputError(path, "corrupt graph columns: the packed event args are not (position, JSON text, "
                                      f"offsets for {len(ev)} events)")
    if "args" in ev.columns:
        raise OpgraphInputError(path, "corrupt graph columns: event args both packed and in the table")


def unpack_json_args(ev: pd.DataFrame, packed: Any, path: str, file_size: int | None = None) -> pd.DataFrame:
    """The event table ``ev`` with its raw JSON ``args`` column decoded and put back (one
    orjson call, nested as in a trace: the values a build from the trace decodes). The
    offsets must fit the text (each event's text ends with a comma), the text must be JSON
    with one value per event, and the values are bounded as any loaded attribute (a
    bracket count on the text skips the walk when nothing can nest too deep; JSON text
    cannot hold shared references). Bad contents raise
    :class:`~opgraph.errors.OpgraphInputError` naming ``path``."""
    check_json_packed(packed, ev, path)
    pos, buf, offsets = packed
    n = len(ev)
    text = np.frombuffer(buf, dtype=np.uint8)
    # in range first (a difference of wild int64 offsets can wrap around), then each event's
    # text: at least one byte and a comma
    fits = (int(offsets.min()) >= 0 and int(offsets.max()) <= len(buf) and int(offsets[0]) == 0
            and int(offsets[-1]) == len(buf) and bool((np.diff(offsets) >= 2).all())
            and bool((text[offsets[1:] - 1] == ord(",")).all()))
    if not fits:
        raise OpgraphInputError(path, "corrupt graph columns: the packed event args' offsets do not fit their text")
    first = text[offsets[:-1]]
    odd = np.flatnonzero((first != ord("{")) & (first != ord("n")))   # the typed pass keeps objects and null
    if len(odd):
        raise OpgraphInputError(path, f"corrupt graph columns: the packed args of event {int(odd[0])} are not an "
                                      "object or null")
    try:
        vals = RawArgs(buf, offsets).decode()
    except orjson.JSONDecodeError as e:
        raise OpgraphInputError(path, f"corrupt graph columns: the packed event args are not JSON ({e})") from None
    if type(vals) is not list or len(vals) != n:
        raise OpgraphInputError(path, f"corrupt graph columns: the packed event args are not one value per event "
                                      f"({n} events)")
    if raw_max_depth(buf) > MAX_ATTR_DEPTH:
        BoundsBudget(int(file_size) if file_size is not None else len(buf), track=False).column(
            path, "event args", list(range(n)), vals)
    return with_args(ev, pos, np.fromiter(vals, dtype=object, count=n))


def unpacker(payload: dict[str, Any], path: str, file_size: int | None = None
             ) -> Callable[[pd.DataFrame], pd.DataFrame] | None:
    """What puts the packed ``args`` column of ``payload`` (a saved graph's, read from
    ``path`` of ``file_size`` bytes) back into its event table, or None when nothing is
    packed."""
    if JSON_ARGS_KEY in payload:
        packed = payload[JSON_ARGS_KEY]
        return lambda ev: unpack_json_args(ev, packed, path, file_size)
    if ARGS_KEY in payload:
        packed = payload[ARGS_KEY]
        return lambda ev: unpack_args(ev, packed, path, file_size)
    return None


def unpack_args(ev: pd.DataFrame, packed: Any, path: str, file_size: int | None = None) -> pd.DataFrame:
    """The event table ``ev`` with its packed ``args`` column put back: unpickled by the
    safe unpickler (allocations capped relative to ``file_size``, the saved file's size in
    bytes), checked to be one value per event and bounded as any loaded attribute. Bad
    contents raise :class:`~opgraph.errors.OpgraphInputError` naming ``path``."""
    check_packed(packed, ev, path)
    pos, blob = packed
    size = int(file_size) if file_size is not None else len(blob)
    try:
        arr = SafeUnpickler(io.BytesIO(blob), max_bytes=allocation_cap(size)).load()
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, IndexError, KeyError,
            ImportError, MemoryError, RecursionError) as e:
        raise OpgraphInputError(path, f"corrupt graph columns: the packed event args ({type(e).__name__}: {e})") \
            from None
    if type(arr) is not np.ndarray or arr.dtype != object or arr.ndim != 1 or len(arr) != len(ev):
        raise OpgraphInputError(path, f"corrupt graph columns: the packed event args are not one value per event "
                                      f"({len(ev)} events)")
    vals = arr.tolist()
    BoundsBudget(size, track=False).column(path, "event args", list(range(len(vals))), vals)
    return with_args(ev, pos, arr)


def unpack_payload(payload: dict[str, Any], path: str = "<pickle>") -> dict[str, Any]:
    """``payload`` with a packed args column (either form) put back into its event table (a
    payload with nothing packed is returned as it is). Runs inside unpickling: bad contents
    raise ValueError, which the loader words as a corrupt pickle of its file. Also used on
    a payload built in this process (a graph built from raw JSON args), whose
    :class:`LazyGraphAttrs` decodes its own column."""
    keys = [k for k in PACKED_KEYS if k in payload]
    if not keys:
        return payload
    graph = payload.get("graph")
    if len(keys) > 1:
        raise ValueError("event args packed twice")
    if not isinstance(graph, dict) or not isinstance(dict.get(graph, "events"), pd.DataFrame):
        raise ValueError("packed event args without an event table")
    out = {k: v for k, v in payload.items() if k not in PACKED_KEYS}
    if isinstance(graph, LazyGraphAttrs):
        out["graph"] = graph.copy()
        return out
    g = dict(graph.items())
    try:
        g["events"] = unpacker(payload, path)(dict.get(graph, "events"))  # type: ignore[misc]
    except OpgraphInputError as e:   # inside an unpickler, which names the file itself
        raise ValueError((f"event {e.event_index}: " if e.event_index is not None else "") + e.problem) from None
    out["graph"] = g
    return out


class LazyGraphAttrs(dict):
    """Graph attributes whose event table gets its ``args`` column back the first time the
    table is read (``["events"]``, ``.get("events")``, the views, a copy, pickling).

    Everything else reads as the plain dict it is; :attr:`args_pending` says whether the
    column is still packed."""

    def __init__(self, attrs: dict[str, Any], unpack: Callable[[pd.DataFrame], pd.DataFrame]):
        super().__init__(attrs)
        self._unpack: Callable[[pd.DataFrame], pd.DataFrame] | None = unpack

    @property
    def args_pending(self) -> bool:
        """True while the event table's args are still packed."""
        return self._unpack is not None

    def raw(self) -> dict[str, Any]:
        """A plain copy of the attributes as they are now, without unpacking."""
        return {k: dict.__getitem__(self, k) for k in dict.keys(self)}

    def _ready(self) -> None:
        unpack = self._unpack
        if unpack is not None and dict.__contains__(self, "events"):
            # a million long-lived dicts: the cyclic GC only costs time here, and they are
            # frozen out of its later full passes, as a load does (opgraph.graph.io.load_any)
            with gc_paused(freeze=True):
                dict.__setitem__(self, "events", unpack(dict.__getitem__(self, "events")))
        self._unpack = None

    def __getitem__(self, key: str) -> Any:
        if key == "events":
            self._ready()
        return dict.__getitem__(self, key)

    def get(self, key: str, default: Any = None) -> Any:
        if key == "events":
            self._ready()
        return dict.get(self, key, default)

    def pop(self, key: str, *default: Any) -> Any:
        if key == "events":
            self._ready()
        return dict.pop(self, key, *default)

    def setdefault(self, key: str, default: Any = None) -> Any:
        if key == "events":
            self._ready()
        return dict.setdefault(self, key, default)

    def __setitem__(self, key: str, value: Any) -> None:
        if key == "events":
            self._unpack = None   # a table set by hand replaces the packed one
        dict.__setitem__(self, key, value)

    def items(self):  # type: ignore[override]
        self._ready()
        return dict.items(self)

    def values(self):  # type: ignore[override]
        self._ready()
        return dict.values(self)

    def __iter__(self):
        # not dict's own iterator: dict(x), {**x} and update(x) then go through keys() and
        # __getitem__, which unpack, instead of copying the packed table
        return iter(list(dict.keys(self)))

    def copy(self) -> dict[str, Any]:
        self._ready()
        return dict(dict.items(self))

    def __eq__(self, other: object) -> bool:
        self._ready()
        return dict.__eq__(self, other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return "{" + ", ".join(f"{k!r}: {'<event table, args packed>' if k == 'events' and self.args_pending else repr(v)}"
                               for k, v in dict.items(self)) + "}"

    def __reduce__(self) -> tuple:
        self._ready()
        return dict, (dict(dict.items(self)),)


__all__ = ["ARGS_KEY", "JSON_ARGS_KEY", "PACKED_KEYS", "LazyGraphAttrs", "attach_raw_args", "check_json_packed",
           "check_packed", "pack_args", "releasing", "unpack_args", "unpack_json_args", "unpacker", "unpack_payload"]
