"""Inferred stream joins: a device activity held back until a collective kernel on another
stream of its device ended (NCCL's ``cudaStreamWaitEvent`` on the communication stream's
event, which Kineto records only as ``cuda_sync`` events). The builder infers them only
for traces without ``cuda_sync`` events. Times in ns.
"""

from __future__ import annotations

import re

import numpy as np

from opgraph.graph.linking import Edges
from opgraph.names import names_where

#: An activity counts as held back when it starts this long after its launch call began (ns).
JOIN_MIN_DELAY_NS = 50_000
#: ... and a collective kernel of its device, on another stream, ended at most this long
#: before it started (ns).
JOIN_MAX_GAP_NS = 20_000


def infer_stream_joins(act: np.ndarray, names: np.ndarray, dkey: np.ndarray, device: np.ndarray,
                       ts: np.ndarray, end: np.ndarray, launch_ts: np.ndarray, launcher: np.ndarray) -> Edges:
    """Unrecorded waits of a stream for a collective (NCCL's stream join: a
    ``cudaStreamWaitEvent`` on the communication stream's event, which Kineto records only
    as ``cuda_sync`` events). Used when the trace has no ``cuda_sync`` events.

    A launched activity ``x`` (positions ``act``, times in ns) qualifies when it started at
    least :data:`JOIN_MIN_DELAY_NS` after its launch call began, its stream was free (the
    previous activity on the stream ended before the collective did), and a collective
    kernel of the same device on another stream ended at most :data:`JOIN_MAX_GAP_NS`
    before ``x`` started and after ``x``'s launch call began. The latest such collective
    is taken: an ``event_wait`` edge ``collective -> x`` with ``inferred=True``."""
    from opgraph.graph.linking import COMM_KERNEL_PATTERN

    empty = Edges(np.empty(0, np.int64), np.empty(0, np.int64), {"inferred": np.empty(0, dtype=bool)})
    if not len(act):
        return empty
    is_comm = names_where(names[act], re.compile(COMM_KERNEL_PATTERN).search)   # once per distinct name
    coll = act[is_comm]
    if not len(coll):
        return empty
    # previous activity end on the same stream
    o = act[np.lexsort((ts[act], dkey[act]))]
    prev_end = np.full(len(ts), np.iinfo(np.int64).min, dtype=np.int64)
    same = dkey[o][1:] == dkey[o][:-1]
    prev_end[o[1:][same]] = end[o[:-1][same]]
    cand = act[~is_comm & (launcher[act] >= 0) & (ts[act] - launch_ts[act] >= JOIN_MIN_DELAY_NS)]
    if not len(cand):
        return empty
    src_l, dst_l = [], []
    oc = coll[np.lexsort((end[coll], device[coll]))]
    for dv in np.unique(device[cand]):
        cs = oc[device[oc] == dv]
        if not len(cs):
            continue
        xs = cand[device[cand] == dv]
        j = np.searchsorted(end[cs], ts[xs], "right") - 1
        ok = j >= 0
        xs, c = xs[ok], cs[j[ok]]
        ok = ((ts[xs] - end[c] <= JOIN_MAX_GAP_NS) & (end[c] > launch_ts[xs]) & (dkey[c] != dkey[xs])
              & (prev_end[xs] < end[c]))
        src_l.append(c[ok])
        dst_l.append(xs[ok])
    if not src_l:
        return empty
    src, dst = np.concatenate(src_l), np.concatenate(dst_l)
    return Edges(src, dst, {"inferred": np.ones(len(src), dtype=bool)})


__all__ = ["JOIN_MIN_DELAY_NS", "JOIN_MAX_GAP_NS", "infer_stream_joins"]
