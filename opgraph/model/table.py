"""The canonical event table shared by every reader (see docs/model.md).

Times are int64 nanoseconds. Integer linking keys use -1 for "none".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from opgraph.errors import OpgraphInputError
from opgraph.gc_pause import gc_paused
from opgraph.model.event_args import ArgsColumn, DictArgs, RawArgs, with_args

#: Event kinds that become graph nodes.
HOST_KINDS = ("annotation", "cpu_op", "python", "runtime")
DEVICE_ACTIVITY_KINDS = ("kernel", "memcpy", "memset")
DEVICE_KINDS = DEVICE_ACTIVITY_KINDS + ("gpu_annotation",)
NODE_KINDS = HOST_KINDS + DEVICE_KINDS
#: Kinds that are kept in the table but are not nodes.
OTHER_KINDS = ("cuda_sync", "flow_start", "flow_end", "instant", "meta", "trace_span", "counter", "other")
ALL_KINDS = NODE_KINDS + OTHER_KINDS

COLUMNS = (
    "eid", "kind", "cat", "ph", "name", "ts_ns", "dur_ns", "pid", "tid", "device", "stream",
    "correlation", "external_id", "rf_id", "flow_id", "rank", "args",
)

NONE_ID = -1


@dataclass
class HealthItem:
    """One trace-health finding: a code, a count, an example event id and a sentence."""

    code: str
    count: int
    example_eid: int | None
    message: str

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "count": int(self.count),
                "example_eid": None if self.example_eid is None else int(self.example_eid),
                "message": self.message}


class EventTable:
    """A reader's output: canonical events plus trace-level metadata and warnings.

    ``events`` has the columns in :data:`COLUMNS` (plus ``extra`` for keys a format has
    beyond the canonical ones), indexed by position with ``eid`` equal to the position.
    ``meta`` holds the source description (format, file, sha256), ``device_properties``,
    ``distributed_info`` and the other top-level keys of the trace, untouched.

    The typed Kineto pass keeps the ``args`` column as raw JSON text
    (:class:`~opgraph.model.event_args.RawArgs`, ``raw_args``; ``args_at``: the column's
    position): :attr:`frame` is then the table without it, and :meth:`event_args` reads the
    args of some rows. Reading :attr:`events` decodes the whole column once (orjson, the
    values of the general path) and puts it in its place.
    """

    def __init__(self, events: pd.DataFrame, meta: dict[str, Any] | None = None,
                 health: list[HealthItem] | None = None, raw_args: RawArgs | None = None, args_at: int | None = None):
        self._frame = events
        self.meta: dict[str, Any] = {} if meta is None else meta
        self.health: list[HealthItem] = [] if health is None else health
        self._raw_args = raw_args
        self._args_at = len(events.columns) if args_at is None else args_at

    @property
    def events(self) -> pd.DataFrame:
        """The event table with its ``args`` column (decoded here when it was raw)."""
        raw = self._raw_args
        if raw is not None:
            with gc_paused():   # a million dicts, freed by reference counting
                col = raw.column(self.meta.get("file"))
            self._frame, self._raw_args = with_args(self._frame, self._args_at, col), None
        return self._frame

    @events.setter
    def events(self, ev: pd.DataFrame) -> None:
        self._frame, self._raw_args = ev, None

    @property
    def frame(self) -> pd.DataFrame:
        """The event table as held: without the ``args`` column while :attr:`args_pending`."""
        return self._frame

    @property
    def args_pending(self) -> bool:
        """True while the ``args`` column is raw JSON text, not yet in :attr:`frame`."""
        return self._raw_args is not None

    @property
    def raw_args(self) -> RawArgs | None:
        """The raw ``args`` column while :attr:`args_pending`, else None."""
        return self._raw_args

    @property
    def args_at(self) -> int:
        """Where the ``args`` column goes in the table (its position) while it is raw."""
        return self._args_at

    def event_args(self) -> ArgsColumn:
        """The ``args`` column, to read some rows or linking keys without decoding the rest."""
        if self._raw_args is not None:
            return self._raw_args
        return DictArgs(self._frame["args"].to_numpy(dtype=object))

    def warn(self, code: str, count: int, example_eid: int | None, message: str) -> None:
        """Record a recoverable oddity (listed by ``opgraph info``)."""
        if count:
            self.health.append(HealthItem(code, int(count), example_eid, message))

    def __len__(self) -> int:
        return len(self._frame)

    def __repr__(self) -> str:
        return (f"<EventTable: {len(self)} events{', args raw' if self.args_pending else ''}, "
                f"{len(self.health)} health items>")


#: Largest int64 (ns): ``ts + dur`` of every event must stay at or below it (~292 years).
INT64_MAX = int(np.iinfo(np.int64).max)
#: Events farther than this from the trace's median time get a ``far_timestamps`` warning.
FAR_NS = 86_400 * 10**9


def _far_text(ns: float) -> str:
    days = ns / 86_400e9
    return f"{days / 365.25:,.0f} years" if days >= 365.25 else f"{days:,.1f} days"


def check_times(table: EventTable, path: str | None) -> None:
    """Checks of the times of a reader's table (every format; vectorised).

    Refuses (one-line :class:`~opgraph.errors.OpgraphInputError`) an event whose end
    ``ts + dur`` does not fit int64 nanoseconds, and a trace whose events span more than
    int64 nanoseconds (the span would wrap). Warns (``far_timestamps``) about events more
    than a day away from the median time of the trace (``ts`` 0, negative or near the
    int64 limit next to an epoch-stamped trace), since every span and idle figure then
    includes those centuries."""
    ev = table.frame
    if ev.empty:
        return
    ts = ev["ts_ns"].to_numpy(dtype=np.int64)
    dur = ev["dur_ns"].to_numpy(dtype=np.int64)
    eid = ev["eid"].to_numpy(dtype=np.int64)
    timed = ev["has_ts"].to_numpy(dtype=bool) if "has_ts" in ev else np.ones(len(ev), dtype=bool)
    pos = np.maximum(dur, 0)
    over = timed & (ts > INT64_MAX - pos)
    if over.any():
        i = int(np.flatnonzero(over)[0])
        raise OpgraphInputError(path, f"ts + dur = {int(ts[i]) / 1000:.17g} + {int(dur[i]) / 1000:.17g} µs ends "
                                      "past the int64-nanosecond range (about 292 years); the end would wrap",
                                event_index=int(eid[i]))
    idx = np.flatnonzero(timed & (ev["kind"] != "meta").to_numpy(dtype=bool))
    if not len(idx):
        return
    t = ts[idx]
    e = t + pos[idx]
    lo_i, hi_i = int(np.argmin(t)), int(np.argmax(e))
    if int(e[hi_i]) - int(t[lo_i]) > INT64_MAX:
        med = float(np.median(t))
        far_i = lo_i if med - float(t[lo_i]) >= float(e[hi_i]) - med else hi_i
        raise OpgraphInputError(path, f"the events span {(int(e[hi_i]) - int(t[lo_i])) / 1000:.4g} µs, more than "
                                      "int64 nanoseconds can hold (about 292 years); this event is the farthest "
                                      "from the others", event_index=int(eid[idx[far_i]]))
    med = float(np.median(t))
    dist = np.maximum(np.abs(t.astype(np.float64) - med), np.abs(e.astype(np.float64) - med))
    far = dist > FAR_NS
    if far.any():
        j = int(np.argmax(dist))
        table.warn("far_timestamps", int(far.sum()), int(eid[idx[j]]),
                   f"events more than 1 day from the trace's median time (the farthest {_far_text(float(dist[j]))} "
                   "away): spans and idle times include them; check their ts/dur")
