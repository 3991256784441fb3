"""The columns of an event table the graph builder links on (times in ns): one home for
the node mask and the (pid, tid) lane codes, read by :func:`opgraph.graph.build.build_payload`
and by the roofline's table-only linking (:mod:`opgraph.analysis.roofline.table_links`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from opgraph.model.lanes import lanes_of_codes
from opgraph.model.table import NODE_KINDS


@dataclass
class EventColumns:
    """Per event row: ``kind`` (object), ``ts``/``dur``/``end`` (ns; ``end`` clips negative
    durations), ``eid``, ``corr`` (correlation, -1 none), ``has_ts``, ``pid_codes`` (one
    code per process), ``lane`` (one code per (pid, tid)) and ``is_node`` (a node kind with
    a timestamp and a duration >= 0: the rows that become graph nodes); ``kind_codes``:
    ``kind`` as (codes, distinct kinds), for :meth:`kind_in`."""

    kind: np.ndarray
    ts: np.ndarray
    dur: np.ndarray
    end: np.ndarray
    eid: np.ndarray
    corr: np.ndarray
    has_ts: np.ndarray
    pid_codes: np.ndarray
    lane: np.ndarray
    is_node: np.ndarray
    kind_codes: tuple[np.ndarray, np.ndarray]

    def kind_in(self, *kinds: str) -> np.ndarray:
        """Per row: its kind is one of ``kinds`` (tested once per distinct kind)."""
        codes, uniq = self.kind_codes
        return np.append(np.isin(uniq, kinds), False)[codes]

    @classmethod
    def of(cls, ev: pd.DataFrame) -> "EventColumns":
        """The columns of a reader's :attr:`~opgraph.model.table.EventTable.events`."""
        kind = ev["kind"].to_numpy(dtype=object)
        ts = ev["ts_ns"].to_numpy()
        dur = ev["dur_ns"].to_numpy()
        has_ts = ev["has_ts"].to_numpy() if "has_ts" in ev else np.ones(len(ev), dtype=bool)
        pid_codes, _ = _codes(ev["pid"])
        tid_codes, tid_u = _codes(ev["tid"])
        lane = lanes_of_codes(pid_codes, tid_codes, len(tid_u))
        kind_codes = _codes(ev["kind"])
        c = cls(kind, ts, dur, ts + np.maximum(dur, 0), ev["eid"].to_numpy(), ev["correlation"].to_numpy(),
                has_ts, pid_codes, lane, has_ts & (dur >= 0), kind_codes)
        c.is_node &= c.kind_in(*NODE_KINDS)
        return c


def _codes(col: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """(codes, distinct values) of a column, -1 for a missing value: a categorical's own
    (the readers' kind, pid and tid), else :func:`pandas.factorize` of its objects."""
    if isinstance(col.dtype, pd.CategoricalDtype):
        return np.asarray(col.cat.codes), np.asarray(col.cat.categories, dtype=object)
    codes, uniq = pd.factorize(col.to_numpy(dtype=object))
    return codes, np.asarray(uniq, dtype=object)


__all__ = ["EventColumns"]
