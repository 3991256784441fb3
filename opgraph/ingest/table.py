"""The canonical event table shared by every reader (see docs/model.md).

Times are int64 nanoseconds. Integer linking keys use -1 for "none".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

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


@dataclass
class EventTable:
    """A reader's output: canonical events plus trace-level metadata and warnings.

    ``events`` has the columns in :data:`COLUMNS` (plus ``extra`` for keys a format has
    beyond the canonical ones), indexed by position with ``eid`` equal to the position.
    ``meta`` holds the source description (format, file, sha256), ``device_properties``,
    ``distributed_info`` and the other top-level keys of the trace, untouched.
    """

    events: pd.DataFrame
    meta: dict[str, Any] = field(default_factory=dict)
    health: list[HealthItem] = field(default_factory=list)

    def warn(self, code: str, count: int, example_eid: int | None, message: str) -> None:
        """Record a recoverable oddity (listed by ``opgraph info``)."""
        if count:
            self.health.append(HealthItem(code, int(count), example_eid, message))

    def __len__(self) -> int:
        return len(self.events)
