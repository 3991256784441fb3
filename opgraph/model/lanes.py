"""Lanes, defined once: a lane is a host thread (``pid``, ``tid``) or, for device activities,
a device stream (``device``, ``stream``), and in a multi-rank job each rank's own
(docs/model.md, "Lanes"). Every lane code of opgraph comes from :func:`lanes`: the event
table's (one per thread, before the graph), the graph's (:attr:`GraphArrays.lane`), the
B/E pairing of the Kineto reader, the CUDA-graph capture matching."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd


def lanes(pid: Any, tid: Any, device: np.ndarray | None = None, stream: np.ndarray | None = None,
          is_device: np.ndarray | None = None, rank: np.ndarray | None = None) -> np.ndarray:
    """One int64 code per lane, numbered in first-seen order.

    ``pid``/``tid`` are compared as they are (``1`` and ``"1"`` are two threads). With
    ``is_device``, the rows it marks are on the lane of their (``device``, ``stream``)
    instead, never shared with a host thread. With ``rank`` holding more than one rank,
    the same thread or stream of two ranks is two lanes."""
    if not len(pid):
        return np.empty(0, np.int64)
    pc, _ = pd.factorize(pid)
    tc, tu = pd.factorize(tid)
    return lanes_of_codes(pc, tc, len(tu), device, stream, is_device, rank)


def lanes_of_codes(pid_codes: np.ndarray, tid_codes: np.ndarray, n_tids: int, device: np.ndarray | None = None,
                   stream: np.ndarray | None = None, is_device: np.ndarray | None = None,
                   rank: np.ndarray | None = None) -> np.ndarray:
    """:func:`lanes` of ``pid``/``tid`` already factorized (codes, -1 for no value; ``n_tids``
    distinct tids), for a caller that holds the codes."""
    if not len(pid_codes):
        return np.empty(0, np.int64)
    raw = np.asarray(pid_codes, np.int64) * (n_tids + 2) + np.asarray(tid_codes, np.int64) + 1  # -1 codes stay apart
    if is_device is not None and device is not None and stream is not None:
        raw = np.where(is_device, -((device + 2) * (1 << 32) + (stream + 2)), raw)
    lane, _ = pd.factorize(raw)
    if rank is not None and len(np.unique(rank)) > 1:
        lane, _ = pd.factorize(rank * (int(lane.max()) + 1) + lane)
    return lane.astype(np.int64)
