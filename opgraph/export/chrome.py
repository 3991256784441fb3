"""Writing the graph's events back out as Chrome/Perfetto trace JSON.

The original events are written unchanged (same keys, same args, timestamps as exact µs
decimals from the integer ns), with optional extra args merged into chosen events and
extra events (flows, counters, metadata) appended. Nothing here re-parses the trace.
"""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any, Iterable

import networkx as nx
import numpy as np
import orjson
import pandas as pd

_OPTS = orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY


def us_text(ns: int) -> bytes:
    """Exact µs decimal text of an integer ns value (``1234567`` -> ``b"1234.567"``)."""
    sign = "-" if ns < 0 else ""
    q, r = divmod(abs(int(ns)), 1000)
    return f"{sign}{q}.{r:03d}".encode() if r else f"{sign}{q}".encode()


def _num(ns: int) -> bytes:
    return us_text(ns)


def iter_event_json(ev: pd.DataFrame, add_args: dict[int, dict[str, Any]] | None = None) -> Iterable[bytes]:
    """One JSON object (bytes) per row of the canonical table, in eid order."""
    add_args = add_args or {}
    cols = {c: ev[c].to_numpy(dtype=object) if c in ("kind", "cat", "ph", "name", "pid", "tid", "bp")
            else ev[c].to_numpy() for c in ("eid", "ph", "cat", "name", "pid", "tid", "ts_ns", "dur_ns",
                                             "args", "flow_id", "bp", "extra", "has_ts")}
    for eid, ph, cat, name, pid, tid, ts, dur, args, fid, bp, extra, has_ts in zip(
            cols["eid"].tolist(), cols["ph"].tolist(), cols["cat"].tolist(), cols["name"].tolist(),
            cols["pid"].tolist(), cols["tid"].tolist(), cols["ts_ns"].tolist(), cols["dur_ns"].tolist(),
            cols["args"].tolist(), cols["flow_id"].tolist(), cols["bp"].tolist(), cols["extra"].tolist(),
            cols["has_ts"].tolist()):
        d: dict[str, Any] = {"ph": ph}
        if isinstance(cat, str):
            d["cat"] = cat
        if name is not None and not (isinstance(name, float) and np.isnan(name)):
            d["name"] = name
        if pid is not None and not (isinstance(pid, float) and np.isnan(pid)):
            d["pid"] = pid
        if tid is not None and not (isinstance(tid, float) and np.isnan(tid)):
            d["tid"] = tid
        if fid >= 0 and ph in ("s", "t", "f"):
            d["id"] = fid
        if isinstance(bp, str):
            d["bp"] = bp
        if extra:
            d.update(extra)
        extra_args = add_args.get(eid)
        if args is not None or extra_args:
            d["args"] = {**(args or {}), **(extra_args or {})}
        body = orjson.dumps(d, option=_OPTS)
        head = b'{"ts":' + _num(ts) + b"," if has_ts else b"{"
        if dur >= 0 and ph == "X":
            head += b'"dur":' + _num(dur) + b","
        yield head + body[1:]


def write_trace(G: nx.DiGraph, path: str | Path, add_args: dict[int, dict[str, Any]] | None = None,
                extra_events: list[dict[str, Any]] | None = None) -> None:
    """Write the trace of ``G`` (all original events, unchanged) to ``path`` (``.json`` or
    ``.json.gz``), merging ``add_args[eid]`` into event ``eid``'s args and appending
    ``extra_events`` (whose ``ts``/``dur`` are given in **ns** as ints and written as µs)."""
    ev: pd.DataFrame = G.graph["events"]
    top: dict[str, Any] = dict(G.graph.get("trace_metadata") or {})
    if G.graph.get("device_properties"):
        top["deviceProperties"] = G.graph["device_properties"]
    if G.graph.get("distributed_info"):
        top["distributedInfo"] = G.graph["distributed_info"]
    parts = [b"{"]
    for k, v in top.items():
        parts.append(orjson.dumps(k) + b":" + orjson.dumps(v, option=_OPTS) + b",")
    parts.append(b'"traceEvents":[')
    first = True
    for chunk in iter_event_json(ev, add_args):
        parts.append(chunk if first else b"," + chunk)
        first = False
    for e in extra_events or []:
        e = dict(e)
        ts = e.pop("ts", None)
        dur = e.pop("dur", None)
        body = orjson.dumps(e, option=_OPTS)
        head = b"{"
        if ts is not None:
            head += b'"ts":' + _num(int(ts)) + b","
        if dur is not None:
            head += b'"dur":' + _num(int(dur)) + b","
        chunk = head + body[1:] if len(body) > 2 else head.rstrip(b",") + b"}"
        parts.append(chunk if first else b"," + chunk)
        first = False
    parts.append(b"]}")
    data = b"".join(parts)
    if str(path).endswith(".gz"):
        data = gzip.compress(data, compresslevel=6)
    Path(path).write_bytes(data)
