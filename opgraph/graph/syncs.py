"""Sync and event-wait edges: which device activity each blocking host call waited for,
and which activity of one stream another stream's activity waited for (times in ns).

:func:`link_syncs` links the ``cuda_sync`` records a trace holds and infers the rest from
the blocking runtime calls (:func:`blocking_call_modes`; async copies to pageable host
memory block too, :func:`pageable_dtoh`). The builder (:mod:`opgraph.graph.build`) calls
it in its "syncs" phase.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pandas as pd

from opgraph.graph.linking import (
    BLOCKING_COPY_RE, DEVICE_SYNC_RE, EVENT_SYNC_RE, STREAM_SYNC_RE, SYNC_RECORD_KINDS, Edges, StreamIndex,
)
from opgraph.model.event_args import ArgsColumn
from opgraph.names import names_where

#: A blocking call may return up to this long after the GPU work it awaited ended (ns).
SYNC_TOLERANCE_NS = 1000


def link_syncs(args: ArgsColumn, kind: np.ndarray, eid: np.ndarray, ts: np.ndarray, end: np.ndarray,
               corr: np.ndarray, device: np.ndarray, stream: np.ndarray, names: np.ndarray,
               is_rt: np.ndarray, sidx: StreamIndex, warn: Callable[..., None],
               blocking_rt: set[int] = frozenset()) -> tuple[Edges, Edges]:
    """Sync edges (device activity -> the blocking host call that waited for it) and
    event-wait edges (last activity of the awaited stream -> first activity the waiting
    stream ran after the wait). Times in ns; ``args``: the events' args (the records' and
    the blocking calls' are read).

    Recorded first: each ``cuda_sync`` record links the host call of its correlation, by
    ``args.cuda_sync_kind`` (or, for MTIA's device-side records, by name through
    :data:`~opgraph.graph.linking.SYNC_RECORD_KINDS`). Then, per call: every blocking
    runtime call (see :func:`blocking_call_modes`) without a resolved record of its own
    gets inferred edges (``inferred=True``) from the activity it waited for, the one that
    ended last before it returned (+ :data:`SYNC_TOLERANCE_NS`) among those launched before
    it started: one per stream of its device for a device sync, else on the stream its args
    name, or the latest-ending over the streams (a blocking copy: its own copy excluded). Health: ``cuda_sync_absent`` (a trace without
    records), ``sync_inferred`` (calls without a record of their own in a trace with
    records), ``sync_unresolved`` (records that could not be linked)."""
    tol = SYNC_TOLERANCE_NS
    rt = np.flatnonzero(is_rt)
    rt_by_corr: dict[int, int] = {}
    for c, e in zip(corr[rt].tolist(), eid[rt].tolist()):
        if c >= 0 and c not in rt_by_corr:
            rt_by_corr[c] = e
    s_src: list[int] = []
    s_dst: list[int] = []
    s_kind: list[str] = []
    s_inf: list[bool] = []
    w_src: list[int] = []
    w_dst: list[int] = []
    keys_of_device: dict[int, list[int]] = {}
    for k in sidx.bounds:
        keys_of_device.setdefault(int((k >> 32) - 1), []).append(k)
    all_keys = list(sidx.bounds)

    def add_sync(pos: int, call: int, sk: str, inferred: bool) -> bool:
        if pos < 0:
            return False
        s_src.append(int(sidx.eid[pos]))
        s_dst.append(call)
        s_kind.append(sk)
        s_inf.append(inferred)
        return True

    def key(dev: int, st: int) -> int:
        return (dev + 1) * (1 << 32) + (st + 1)

    # --- recorded syncs ---
    cs = np.flatnonzero(kind == "cuda_sync")
    cs_args = [a if isinstance(a, dict) else {} for a in args.rows(cs)]
    rec_kind: list[str] = []
    seq_record_ts: dict[tuple[int, int, int], int] = {}  # (device, stream, seq_num) -> start (ns)
    for i, a in zip(cs.tolist(), cs_args):
        sk = a.get("cuda_sync_kind") or SYNC_RECORD_KINDS.get(names[i], names[i])
        rec_kind.append(sk)
        if sk == "Event Record":
            seq = int_or_none(a.get("seq_num"))
            if seq is not None:
                seq_record_ts.setdefault((int(device[i]), int(stream[i]), seq), int(ts[i]))
    recorded: set[int] = set()
    unresolved = [0, -1]

    def unresolved_at(i: int) -> None:
        unresolved[0] += 1
        unresolved[1] = unresolved[1] if unresolved[1] >= 0 else i

    for i, sk, a in zip(cs.tolist(), rec_kind, cs_args):
        call = rt_by_corr.get(int(corr[i]), -1)
        dev = int(device[i])
        if sk == "Event Record":
            continue
        if sk == "Device Event Wait":
            src_stream = int_or_none(a.get("wait_on_stream"))
            if src_stream is None or src_stream < 0:
                unresolved_at(i)
                continue
            rec_ts = seq_record_ts.get((dev, src_stream, int_or_none(a.get("seq_num")) or -1))
            if rec_ts is not None:
                p = sidx.last_started_before(key(dev, src_stream), rec_ts)
            else:
                p = sidx.last_ended_before(key(dev, src_stream), int(end[i]) + tol)
            q = sidx.first_started_after(key(dev, int(stream[i])), int(ts[i]))
            if p >= 0 and q >= 0:
                w_src.append(int(sidx.eid[p]))
                w_dst.append(int(sidx.eid[q]))
            continue
        if sk == "Stream Wait Event":
            rec = rt_by_corr.get(a.get("wait_on_cuda_event_record_corr_id", -1), -1)
            src_stream = a.get("wait_on_stream", -1)
            if rec < 0 or src_stream is None or src_stream < 0 or call < 0:
                unresolved_at(i)
                continue
            p = sidx.last_launched_before(key(dev, int(src_stream)), int(ts[rec]))
            q = sidx.first_launched_after(key(dev, int(stream[i])), int(ts[call]))
            if p >= 0 and q >= 0:
                w_src.append(int(sidx.eid[p]))
                w_dst.append(int(sidx.eid[q]))
            continue
        if call < 0:
            unresolved_at(i)
            continue
        c0, c1 = int(ts[call]), int(end[call])
        if sk == "Stream Sync" and 0 <= int(stream[i]) < 0xFFFFFFFF:
            add_sync(sidx.awaited(key(dev, int(stream[i])), c0, c1, tol, call), call, "stream", False)
        elif sk == "Event Sync":
            rec = rt_by_corr.get(a.get("wait_on_cuda_event_record_corr_id", -1), -1)
            src_stream = a.get("wait_on_stream", -1)
            if rec < 0 or src_stream is None or src_stream < 0:
                unresolved_at(i)
                continue
            p = sidx.last_launched_before(key(dev, int(src_stream)), int(ts[rec]))
            add_sync(p, call, "event", False)
        else:  # Context Sync, a stream sync without a stream, and anything device-wide
            for k in keys_of_device.get(dev, all_keys):
                add_sync(sidx.awaited(k, c0, c1, tol, call), call, "device", False)
        recorded.add(call)
    if unresolved[0]:
        warn("sync_unresolved", unresolved[0], unresolved[1],
             "cuda_sync events whose host call, event record or stream is unknown (no edge from the "
             "record; a blocking call among them gets an inferred edge instead)")

    # --- inferred, per blocking call without a record of its own ---
    modes = blocking_call_modes(names[rt], np.isin(eid[rt], list(blocking_rt)))
    n_calls = {"device": 0, "stream": 0, "event": 0, "memcpy": 0}
    example = -1
    blocking = rt[modes != ""]
    for i, mode, a in zip(blocking.tolist(), modes[modes != ""].tolist(), args.rows(blocking)):
        call = int(eid[i])
        if call in recorded:
            continue
        a = a if isinstance(a, dict) else {}
        dev = int_or_none(a.get("device"))
        st = int_or_none(a.get("stream", a.get("stream_id")))
        keys = keys_of_device.get(dev, all_keys) if dev is not None else all_keys
        c0, c1 = int(ts[i]), int(end[i])
        linked = False
        if mode == "device":
            for k in keys:
                linked |= add_sync(sidx.awaited(k, c0, c1, tol, call), call, mode, True)
        elif mode == "stream" and dev is not None and st is not None and key(dev, st) in sidx.bounds:
            linked = add_sync(sidx.awaited(key(dev, st), c0, c1, tol, call), call, mode, True)
        else:
            best, best_end = -1, -1
            for k in keys:
                p = sidx.awaited(k, c0, c1, tol, call)
                if p >= 0 and sidx.end[p] > best_end:
                    best, best_end = p, int(sidx.end[p])
            linked = add_sync(best, call, mode, True)
        if linked:
            n_calls[mode] += 1
            example = call if example < 0 else example
    n_inferred = sum(n_calls.values())
    parts = ", ".join(f"{n} {m}" for m, n in n_calls.items() if n)
    if n_inferred and not len(cs):
        warn("cuda_sync_absent", n_inferred, example,
             f"no cuda_sync events in the trace: sync edges were inferred from the blocking runtime "
             f"calls ({parts}; the activity that ended last before each call returned, inferred=True)")
    elif n_inferred:
        warn("sync_inferred", n_inferred, example,
             f"blocking runtime calls without a cuda_sync record of their own in a trace that has records "
             f"({parts}; blocking copies are never recorded): sync edges inferred from the call "
             f"(the activity that ended last before it returned, inferred=True)")
    sync = Edges(np.array(s_src, dtype=np.int64), np.array(s_dst, dtype=np.int64),
                 {"sync_kind": np.array(s_kind, dtype=object), "inferred": np.array(s_inf, dtype=bool)})
    return sync, Edges(np.array(w_src, dtype=np.int64), np.array(w_dst, dtype=np.int64))


def blocking_call_modes(call_names: np.ndarray, blocking: np.ndarray | None = None) -> np.ndarray:
    """How each runtime call blocks the host: ``"device"`` (device synchronize: CUDA, driver,
    HIP, MTIA ``synchronize``), ``"stream"``, ``"event"``, ``"memcpy"`` (blocking copies by
    name, or where ``blocking`` is True: e.g. async copies to pageable memory), ``""`` (does
    not block). Regexes run once per distinct name."""
    codes, uniq = pd.factorize(pd.Series(call_names, dtype=object).fillna(""))
    out_u = np.empty(len(uniq), dtype=object)
    for j, nm in enumerate(uniq.tolist()):
        nm = str(nm)
        out_u[j] = ("device" if DEVICE_SYNC_RE.match(nm) else "stream" if STREAM_SYNC_RE.match(nm)
                    else "event" if EVENT_SYNC_RE.match(nm) else "memcpy" if BLOCKING_COPY_RE.match(nm) else "")
    out = out_u[codes].astype(object) if len(codes) else np.empty(0, dtype=object)
    if blocking is not None and len(out):
        out[(out == "") & blocking] = "memcpy"
    return out


def int_or_none(v: Any) -> int | None:
    """An integer arg (ints, or digit strings such as MTIA's ``"stream_id": "108"``); None otherwise."""
    if type(v) is int:
        return v
    if isinstance(v, str) and v.strip().lstrip("-").isdigit():
        return int(v)
    return None


#: A launch call counts as synchronous (it waited for its own device work) only when that
#: work ran at least this long (ns) ...
SYNC_LAUNCH_MIN_NS = 50_000
#: ... and at least this share of the call: a short kernel that ends inside a slow launch
#: call did not make the call wait (docs/critical-path.md, "Waits the trace shows").
SYNC_LAUNCH_MIN_SHARE = 0.5


def synchronous_launches(call_ts: np.ndarray, call_end: np.ndarray, act_ts: np.ndarray, act_end: np.ndarray,
                         call_names: np.ndarray) -> np.ndarray:
    """Per launch edge (the call's and its activity's times, ns; the call's name): the
    call returned only after its own device activity ended, so it waited for it (MTIA's
    ``runFunction``, a synchronous launch of any vendor). The activity must end at or
    before the call's end, run at least :data:`SYNC_LAUNCH_MIN_NS` and at least
    :data:`SYNC_LAUNCH_MIN_SHARE` of the call. Blocking copies by name
    (:data:`~opgraph.graph.linking.BLOCKING_COPY_RE`) are already modelled as such and are
    left out."""
    run = act_end - act_ts
    out = ((act_ts >= call_ts) & (act_end <= call_end) & (run >= SYNC_LAUNCH_MIN_NS)
           & (run >= SYNC_LAUNCH_MIN_SHARE * (call_end - call_ts)))
    if out.any():
        out &= ~names_where(call_names, BLOCKING_COPY_RE.search)
    return out


def pageable_dtoh(names: np.ndarray) -> np.ndarray:
    """Copies from device to pageable host memory: their (async) API call returns only once
    the copy has completed (CUDA runtime API docs, "API synchronization behavior")."""
    return names_where(names, lambda n: "DtoH" in n and "Pageable" in n)


__all__ = ["SYNC_TOLERANCE_NS", "SYNC_LAUNCH_MIN_NS", "SYNC_LAUNCH_MIN_SHARE", "synchronous_launches", "link_syncs", "blocking_call_modes", "int_or_none", "pageable_dtoh"]
