"""Lanes of a Chrome / Perfetto trace and the metadata events that name them.

A lane is one (pid, tid) as written in the trace: :func:`lane_codes` gives each event's
lane as an int, :func:`lane_key` the identity of a pid/tid value (``7`` and ``"7"`` are
one), and :func:`metadata_events` the ``process_name`` / ``thread_name`` events the
Perfetto overlay adds for lanes that have no name yet (``GPU <d> stream <s>``, ...).
Times: the event table's int64 **ns** (no times are written here).
"""

from __future__ import annotations

from typing import Any, Iterable

import numpy as np
import pandas as pd

from opgraph.model.table import DEVICE_KINDS

_GPU_LANE_KINDS = DEVICE_KINDS + ("cuda_sync",)


def lane_codes(ev: pd.DataFrame) -> np.ndarray:
    """One int per (pid, tid) as written (int64; -1 when pid or tid is missing)."""
    pc = _codes(ev["pid"])
    tc = _codes(ev["tid"])
    n_t = int(tc.max()) + 2 if len(tc) else 1
    lane = pc.astype(np.int64) * n_t + tc
    lane[(pc < 0) | (tc < 0)] = -1
    return lane


def _codes(s: pd.Series) -> np.ndarray:
    if isinstance(s.dtype, pd.CategoricalDtype):
        return s.cat.codes.to_numpy().astype(np.int64)
    codes, _ = pd.factorize(s.to_numpy(dtype=object))
    return codes.astype(np.int64)


def object_column(ev: pd.DataFrame, col: str) -> np.ndarray:
    """Column ``col`` of the event table as an object array (values as written)."""
    return ev[col].to_numpy(dtype=object)



def metadata_events(ev: pd.DataFrame, counter_pids: Iterable[Any] = ()) -> list[dict[str, Any]]:
    """``process_name`` / ``thread_name`` metadata for the processes and threads of the
    trace's slices (and for the processes of ``counter_pids``) that have none yet. GPU
    lanes are named ``GPU <d> stream <s>`` (their process ``GPU <d>``); CPU threads
    ``thread <tid>``, processes ``process <pid>``. Names the trace already has are never
    repeated or changed."""
    ph = object_column(ev, "ph")
    name = object_column(ev, "name")
    pid = object_column(ev, "pid")
    tid = object_column(ev, "tid")
    is_m = ph == "M"
    pm = np.flatnonzero(is_m & (name == "process_name"))
    tm = np.flatnonzero(is_m & (name == "thread_name"))
    have_p = {lane_key(p) for p in pid[pm].tolist()}
    have_t = {(lane_key(p), lane_key(t)) for p, t in zip(pid[tm].tolist(), tid[tm].tolist())}
    lane = lane_codes(ev)
    x = np.flatnonzero(np.isin(ph, ("X", "B", "E")) & (lane >= 0))
    if not len(x) and not counter_pids:
        return []
    # one row per lane: its first slice, and its first device event (a GPU lane) if any
    lanes_u, first = np.unique(lane[x], return_index=True)
    first_row = x[first]
    dev_rows = x[ev["kind"].isin(_GPU_LANE_KINDS).to_numpy()[x]]
    g_lanes, g_first = np.unique(lane[dev_rows], return_index=True)
    gpu_row = dict(zip(g_lanes.tolist(), dev_rows[g_first].tolist()))
    device = ev["device"].to_numpy()
    stream = ev["stream"].to_numpy()
    out: list[dict[str, Any]] = []
    pid_gpu: dict[Any, list[bool]] = {}
    pid_dev: dict[Any, int] = {}
    raw_pid: dict[Any, Any] = {}
    for ln, r in zip(lanes_u.tolist(), first_row.tolist()):
        p, t = lane_key(pid[r]), lane_key(tid[r])
        raw_pid.setdefault(p, pid[r])
        g = gpu_row.get(ln)
        pid_gpu.setdefault(p, []).append(g is not None)
        if g is not None:
            d, st = int(device[g]), int(stream[g])
            pid_dev.setdefault(p, d)
        if (p, t) in have_t:
            continue
        if g is not None:
            label = f"GPU {d} stream {st}" if st >= 0 else f"GPU {d} sync"
        else:
            label = f"thread {t}" if isinstance(t, int) else str(t)
        out.append({"ph": "M", "name": "thread_name", "pid": pid[r], "tid": tid[r], "args": {"name": label}})
    for p in counter_pids:
        raw_pid.setdefault(lane_key(p), p)
    for p, raw in raw_pid.items():
        if p in have_p:
            continue
        gl = pid_gpu.get(p, [])
        if gl and all(gl) and p in pid_dev:
            label = f"GPU {pid_dev[p]}"
        else:
            label = f"process {p}" if isinstance(p, int) else str(p)
        out.append({"ph": "M", "name": "process_name", "pid": raw, "args": {"name": label}})
    return out


def lane_key(v: Any) -> Any:
    """Hashable identity of a pid/tid value (ints and their digit strings are the same)."""
    if isinstance(v, str) and v.isdigit():
        return int(v)
    if isinstance(v, (np.integer,)):
        return int(v)
    return v
