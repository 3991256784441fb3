"""Critical-path flow events of the Perfetto overlay, and where in a slice they bind.

Where the critical path hands over between (pid, tid) lanes, the overlay writes a v1 flow
(``s`` in the source slice, ``f`` in the destination slice, ``cat`` :data:`FLOW_CAT`).
Viewers bind a flow end to the innermost slice open at its time, so :class:`SliceIndex`
finds, inside a slice, the time not covered by slices nested in it. Times are int64
**ns** (the writer turns them into the trace's µs).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from opgraph.export.perfetto.lanes import lane_codes, object_column

#: ``cat`` and ``name`` of the critical-path flow events (the same at both ends).
FLOW_CAT = "opgraph.critical_path"
FLOW_NAME = "critical path"
#: Flow end points are placed at least this far (ns) inside a slice's free interval when
#: the interval is long enough (a quarter of it otherwise), so that viewers that read
#: µs timestamps as float64 still bind them to the intended slice.
FLOW_MARGIN_NS = 1000


class SliceIndex:
    """The X events of a trace per (pid, tid) lane, sorted (lane, start, longest first),
    to find, inside a slice, the time not covered by any slice nested in it (where a
    viewer binds a flow end to that slice and not to a child)."""

    def __init__(self, ev: pd.DataFrame, lane: np.ndarray) -> None:
        ph = object_column(ev, "ph")
        ts = ev["ts_ns"].to_numpy()
        dur = ev["dur_ns"].to_numpy()
        has_ts = ev["has_ts"].to_numpy() if "has_ts" in ev else np.ones(len(ev), dtype=bool)
        x = np.flatnonzero((ph == "X") & has_ts & (dur >= 0) & (lane >= 0))
        o = x[np.lexsort((x, -dur[x], ts[x], lane[x]))]
        self.lane = lane[o]
        self.start = ts[o]
        self.end = ts[o] + dur[o]
        self.pos = np.full(len(ev), -1, dtype=np.int64)
        self.pos[o] = np.arange(len(o))
        lanes_u, first = np.unique(self.lane, return_index=True)
        self._lane_hi = dict(zip(lanes_u.tolist(), (np.append(first[1:], len(o))).tolist()))
        self._gaps: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def free_gaps(self, eid: int, a: int, b: int) -> tuple[np.ndarray, np.ndarray]:
        """Sub-intervals of ``[a, b]`` (slice ``eid``) not covered by slices nested in it."""
        got = self._gaps.get(eid)
        if got is not None:
            return got
        k = int(self.pos[eid])
        if k < 0:
            res = (np.array([a]), np.array([b]))
        else:
            hi_lane = self._lane_hi[int(self.lane[k])]
            hi = k + 1 + int(np.searchsorted(self.start[k + 1:hi_lane], b, side="left"))
            cs = self.start[k + 1:hi]
            if not len(cs):
                res = (np.array([a]), np.array([b]))
            else:
                ce = np.maximum.accumulate(np.minimum(self.end[k + 1:hi], b))
                g0 = np.concatenate(([a], ce))
                g1 = np.concatenate((cs, [b]))
                ok = g1 > g0
                res = (g0[ok], g1[ok])
        self._gaps[eid] = res
        return res

    def point(self, eid: int, a: int, b: int, t: int) -> int:
        """The time inside slice ``eid`` = ``[a, b]`` nearest ``t`` where the slice is the
        innermost one open on its lane (kept ``FLOW_MARGIN_NS`` inside that free interval
        when it is long enough)."""
        g0, g1 = self.free_gaps(eid, a, b)
        if not len(g0):
            return min(max(t, a), b)
        dist = np.where(t < g0, g0 - t, np.where(t > g1, t - g1, 0))
        j = int(np.argmin(dist))
        lo, hi = int(g0[j]), int(g1[j])
        m = min(FLOW_MARGIN_NS, (hi - lo) // 4)
        return min(max(t, lo + m), hi - m)


def critical_crossings(ev: pd.DataFrame, cp: Any) -> pd.DataFrame:
    """Consecutive critical-path segments whose events lie on different (pid, tid) lanes:
    columns ``src``, ``dst`` (event ids), ``t`` (the hand-over time, ns), ``bound_by`` (the
    category of the destination segment). One row per distinct (src, dst) pair."""
    def anchor(x: Any) -> int | None:  # a stretch between events belongs to the event it leads to
        return x.eid if x.eid is not None else (x.to_eid if x.to_eid is not None else x.from_eid)

    rows = [(anchor(a), anchor(b), a.end_ns, b.bound_by) for w in cp.windows for a, b in zip(w.path, w.path[1:])
            if anchor(a) != anchor(b) and anchor(a) is not None and anchor(b) is not None]
    df = pd.DataFrame(rows, columns=["src", "dst", "t", "bound_by"])
    if not len(df):
        return df
    lane = lane_codes(ev)
    df = df[lane[df["src"].to_numpy()] != lane[df["dst"].to_numpy()]]
    return df.drop_duplicates(["src", "dst"]).reset_index(drop=True)


def critical_flows(ev: pd.DataFrame, cp: Any, first_id: int,
                   index: SliceIndex | None = None) -> list[dict[str, Any]]:
    """Flow events (v1 ``s``/``f`` pairs, ``bp: "e"``) for every critical-path hand-over
    between lanes. The ``s`` is placed inside the source slice and the ``f`` inside the
    destination slice, each at the point nearest the hand-over where that slice is the
    innermost one open on its lane (viewers bind flow ends to the enclosing slice)."""
    cross = critical_crossings(ev, cp)
    if not len(cross):
        return []
    idx = index if index is not None else SliceIndex(ev, lane_codes(ev))
    ts = ev["ts_ns"].to_numpy()
    end = ts + np.maximum(ev["dur_ns"].to_numpy(), 0)
    pid = object_column(ev, "pid")
    tid = object_column(ev, "tid")
    out: list[dict[str, Any]] = []
    for i, (s, d, t, bb) in enumerate(zip(cross["src"].tolist(), cross["dst"].tolist(), cross["t"].tolist(),
                                          cross["bound_by"].tolist())):
        fid = first_id + i
        ps = idx.point(s, int(ts[s]), int(end[s]), t)
        pf = idx.point(d, int(ts[d]), int(end[d]), t)
        out.append({"ph": "s", "cat": FLOW_CAT, "name": FLOW_NAME, "id": fid, "pid": pid[s], "tid": tid[s],
                    "ts": ps})
        out.append({"ph": "f", "cat": FLOW_CAT, "name": FLOW_NAME, "id": fid, "pid": pid[d], "tid": tid[d],
                    "ts": pf, "bp": "e", "args": {"bound_by": bb}})
    return out


def next_flow_id(ev: pd.DataFrame) -> int:
    """The first flow id for opgraph's flows: above every (integer) flow id of the trace.
    (Viewers key v1 flows by id, ``cat`` and ``name``; opgraph's own ``cat`` keeps them
    apart from the trace's flows in any case, string ids included.)"""
    fid = ev["flow_id"].to_numpy() if "flow_id" in ev else np.empty(0, np.int64)
    top = int(fid.max()) if len(fid) else -1
    return max(top, 0) + 1
