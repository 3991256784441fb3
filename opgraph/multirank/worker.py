"""Per-rank work of a multi-rank job (runs in a pool process or on a Dask worker).

:func:`rank_result` reads one rank's trace, builds its graph in column form, and returns
a compact :class:`RankResult`: the collective table, the steps table, a summary, and the
column payload only when the rank is kept in full (docs/multirank.md, the contract).
"""

from __future__ import annotations

import os
import re
import resource
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from opgraph.names import normalise_collective
from opgraph.gc_pause import gc_paused
from opgraph.errors import OpgraphInputError
from opgraph.graph.linking import COMM_KERNEL_PATTERN
from opgraph.graph.windows import WindowColumns, select_windows
from opgraph.model.table import DEVICE_ACTIVITY_KINDS, NONE_ID
from opgraph.intervals import union_length
from opgraph.multirank.identity import rank_from_filename

if TYPE_CHECKING:  # pragma: no cover
    from opgraph.model.trace_graph import TraceGraph

#: Columns (and dtypes) of a rank's collective table.
COLLECTIVE_COLUMNS: dict[str, str] = {
    "rank": "int64", "node": "int64", "pg": "object", "seq": "int64", "coll": "object", "nelems": "int64",
    "ts": "int64", "end": "int64", "device": "int64", "stream": "int64", "step": "int64", "launch_ts": "int64",
}
#: Columns of a rank's steps table.
STEP_COLUMNS: dict[str, str] = {"step": "int64", "name": "object", "ts": "int64", "end": "int64", "gpu_ts": "int64",
                                "gpu_end": "int64"}

#: Host ranges that describe the collective a kernel runs.
_LAUNCHER_NAME_RE = re.compile(r"^(?:nccl|rccl|gloo):|^c10d::")
#: Ancestors of a launch call searched for the collective's annotation.
MAX_LAUNCHER_DEPTH = 64


@dataclass
class RankResult:
    """Compact, picklable result of one rank (docs/multirank.md).

    Times are ns on the rank's own clock. ``payload`` is the rank's graph in column form
    (:func:`opgraph.graph.build.build_payload`) only when the rank is kept in full."""

    rank: int | None
    rank_source: str
    world_size: int | None
    file: str
    sha256: str | None
    warnings: list[dict[str, Any]]
    payload: dict[str, Any] | None
    collectives: pd.DataFrame
    steps: pd.DataFrame
    summary: dict[str, Any] = field(default_factory=dict)
    n_events: int = 0


def _empty(cols: dict[str, str]) -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype=t) for c, t in cols.items()})


def _arg(a: Any, *keys: str) -> Any:
    if isinstance(a, dict):
        for k in keys:
            v = a.get(k)
            if v is not None and v != "":
                return v
    return None


def _as_int(v: Any) -> int:
    try:
        return int(v)
    except (TypeError, ValueError):
        return NONE_ID


def rank_tables(payload: dict[str, Any], rank: int) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, Any]]:
    """The collective table, the steps table and the summary of one rank's graph payload.

    Collective kernels are device activities whose name matches
    :data:`~opgraph.graph.linking.COMM_KERNEL_PATTERN` or whose args carry
    ``Collective name``; their process group, ``Seq``, collective name and message size
    come from the kernel's args, else from the nearest ``record_param_comms`` ancestor of
    the runtime call that launched it (launch edge, then nest edges upward), and the name
    from the nearest ``nccl:*`` / ``c10d::*`` ancestor, else the kernel name."""
    ev: pd.DataFrame = payload["graph"]["events"]
    n_ev = len(ev)
    nodes = payload["nodes"]
    cols = payload["node_cols"]
    kind_u, kind_c = cols["kind"]
    kind = np.asarray(kind_u, dtype=object)[kind_c]
    name_u, name_c = cols["name"]
    name_u = np.asarray(name_u, dtype=object)
    ts = np.asarray(cols["ts"], dtype=np.int64)
    end = ts + np.maximum(np.asarray(cols["dur"], dtype=np.int64), 0)
    # node-position lookups by eid
    pos = np.full(n_ev, -1, dtype=np.int64)
    pos[nodes] = np.arange(len(nodes))
    ek_u, ek_c = payload["edge_kind"]
    ek_u = np.asarray(ek_u, dtype=object)
    src, dst = payload["src"], payload["dst"]

    def edges_of(k: str) -> tuple[np.ndarray, np.ndarray]:
        j = np.flatnonzero(ek_u == k)
        if not len(j):
            return np.empty(0, np.int64), np.empty(0, np.int64)
        m = np.isin(ek_c, j)
        return src[m], dst[m]

    l_src, l_dst = edges_of("launch")
    launcher = np.full(n_ev, -1, dtype=np.int64)
    launcher[l_dst] = l_src
    n_src, n_dst = edges_of("nest")
    parent = np.full(n_ev, -1, dtype=np.int64)
    parent[n_dst] = n_src

    is_act = np.isin(kind, DEVICE_ACTIVITY_KINDS)
    name_is_comm = (pd.Series(name_u).astype(str).str.contains(COMM_KERNEL_PATTERN, regex=True).to_numpy()
                    & pd.notna(name_u))
    name_is_launcher = np.array([isinstance(s, str) and bool(_LAUNCHER_NAME_RE.search(s)) for s in name_u],
                                dtype=bool)
    name_is_rpc = np.array([s == "record_param_comms" for s in name_u], dtype=bool)
    args_col = ev["args"].to_numpy(dtype=object)
    # activities that carry "Collective name" in their own args
    act_pos = np.flatnonzero(is_act)
    has_cn = np.fromiter((isinstance(a, dict) and "Collective name" in a for a in args_col[nodes[act_pos]]),
                         dtype=bool, count=len(act_pos))
    coll_pos = np.union1d(act_pos[name_is_comm[name_c[act_pos]]], act_pos[has_cn])
    k_eid = nodes[coll_pos]

    # launch time (ns) of every activity: ts of the runtime call that launched it
    act_eid = nodes[act_pos]
    act_launch = launcher[act_eid]
    act_launch_ts = np.where(act_launch >= 0, ts[pos[np.maximum(act_launch, 0)]], NONE_ID)

    # walk upward from the launching runtime call
    n_k = len(k_eid)
    rpc = np.full(n_k, -1, dtype=np.int64)
    ann = np.full(n_k, -1, dtype=np.int64)
    cur = launcher[k_eid] if n_k else np.empty(0, np.int64)
    launch_ts = np.where(cur >= 0, ts[pos[np.maximum(cur, 0)]], NONE_ID) if n_k else np.empty(0, np.int64)
    for _ in range(MAX_LAUNCHER_DEPTH):
        live = cur >= 0
        if not live.any():
            break
        p = pos[np.maximum(cur, 0)]
        nc = name_c[np.maximum(p, 0)]
        hit_rpc = live & (p >= 0) & name_is_rpc[nc] & (rpc < 0)
        rpc[hit_rpc] = cur[hit_rpc]
        hit_ann = live & (p >= 0) & name_is_launcher[nc] & (ann < 0)
        ann[hit_ann] = cur[hit_ann]
        cur = np.where(live, parent[np.maximum(cur, 0)], -1)

    # steps: the one selector's (ProfilerStep#N host ranges, else GPU annotations, else NVTX
    # Iteration N); a rank without any gets none (the cross-rank path uses its whole trace)
    wins = select_windows(WindowColumns(kind, name_u[name_c], ts, end, np.asarray(nodes, dtype=np.int64)), lanes=False)
    steps = (wins.to_frame()[["step", "name", "ts", "end"]] if wins.is_steps
             else pd.DataFrame({"step": [], "name": [], "ts": [], "end": []}))
    steps = steps.astype({"step": np.int64, "name": object, "ts": np.int64, "end": np.int64}).reset_index(drop=True)
    s_ts, s_end = steps["ts"].to_numpy(np.int64), steps["end"].to_numpy(np.int64)

    def step_of(t: np.ndarray) -> np.ndarray:
        if not len(s_ts) or not len(t):
            return np.full(len(t), NONE_ID, dtype=np.int64)
        i = np.searchsorted(s_ts, t, side="right") - 1
        ok = (i >= 0) & (t >= 0)
        ok[ok] &= t[ok] < s_end[i[ok]]
        return np.where(ok, steps["step"].to_numpy(np.int64)[np.maximum(i, 0)], NONE_ID)

    a_step = step_of(act_launch_ts)
    a_ts, a_end = ts[act_pos], end[act_pos]
    gpu = pd.DataFrame({"step": a_step, "ts": a_ts, "end": a_end})
    gpu = gpu[gpu["step"] >= 0].groupby("step").agg(gpu_ts=("ts", "min"), gpu_end=("end", "max"))
    steps = steps.join(gpu, on="step")
    steps[["gpu_ts", "gpu_end"]] = steps[["gpu_ts", "gpu_end"]].fillna(NONE_ID).astype(np.int64)
    steps = steps.astype(STEP_COLUMNS)[list(STEP_COLUMNS)]

    # collective rows
    pg_l, seq_l, coll_l, nel_l = [], [], [], []
    for ke, r_, a_ in zip(k_eid.tolist(), rpc.tolist(), ann.tolist()):
        ka = args_col[ke]
        ra = args_col[r_] if r_ >= 0 else None
        pg = _arg(ka, "Process Group Name")
        pg = _arg(ra, "Process Group Name") if pg is None else pg
        seq = _arg(ka, "Seq", "seq")
        seq = _arg(ra, "Seq", "seq") if seq is None else seq
        cn = _arg(ka, "Collective name") or _arg(ra, "Collective name")
        if cn is None and a_ >= 0:
            cn = str(name_u[name_c[pos[a_]]]).split(":", 1)[-1]
        if cn is None:
            cn = name_u[name_c[pos[ke]]]
        nel = _arg(ka, "In msg nelems")
        nel = _arg(ra, "In msg nelems") if nel is None else nel
        pg_l.append("" if pg is None else str(pg))
        seq_l.append(_as_int(seq))
        coll_l.append(normalise_collective(cn))
        nel_l.append(_as_int(nel))
    kp = coll_pos
    coll = pd.DataFrame({
        "rank": np.full(n_k, rank, dtype=np.int64), "node": k_eid.astype(np.int64),
        "pg": np.array(pg_l, dtype=object), "seq": np.array(seq_l, dtype=np.int64),
        "coll": np.array(coll_l, dtype=object), "nelems": np.array(nel_l, dtype=np.int64),
        "ts": ts[kp], "end": end[kp], "device": np.asarray(cols["device"], np.int64)[kp],
        "stream": np.asarray(cols["stream"], np.int64)[kp], "step": step_of(launch_ts),
        "launch_ts": launch_ts.astype(np.int64),
    })
    coll = coll.astype(COLLECTIVE_COLUMNS)[list(COLLECTIVE_COLUMNS)]
    coll = coll.sort_values(["ts", "node"], kind="stable").reset_index(drop=True)

    busy = union_length(a_ts, a_end)
    gspan = int(a_end.max() - a_ts.min()) if len(a_ts) else 0
    span = payload["graph"].get("span_ns", (0, 0))
    step_d = (steps["end"] - steps["ts"]).to_numpy()
    summary = {
        "events": int(n_ev), "nodes": int(len(nodes)), "edges": int(len(src)),
        "kernels": int((kind == "kernel").sum()), "collectives": int(n_k),
        "steps": int(len(steps)), "step_time_ns": int(np.median(step_d)) if len(step_d) else None,
        "span_ns": int(span[1] - span[0]), "gpu_span_ns": gspan, "gpu_busy_ns": busy,
        "gpu_idle_ns": max(gspan - busy, 0), "comm_busy_ns": union_length(ts[kp], end[kp]),
        "health": len(payload["graph"].get("health", [])),
    }
    return coll, steps, summary


def peak_rss_bytes() -> int:
    """Peak resident set size of this process so far (bytes; Linux reports KiB)."""
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024


def rank_result(path: str, keep_full: bool | frozenset[int]) -> RankResult:
    """Read and build one rank's trace; return its compact :class:`RankResult`.

    ``keep_full`` keeps the rank's graph payload (column form) in the result; otherwise
    only the tables and summary travel back. A set of ranks decides once the file's rank
    is known (here, in the worker), so unwanted payloads never leave the worker. Bad input raises
    :class:`~opgraph.errors.OpgraphInputError` (picklable, so it crosses process and
    Dask boundaries intact)."""
    from opgraph.graph.build import build_payload
    from opgraph.graph.io import read_input
    from opgraph.model.trace_graph import TraceGraph
    from opgraph.model.packed_args import unpack_payload

    with gc_paused():
        got = read_input(path)
        if isinstance(got, TraceGraph):
            payload = unpack_payload(got.payload)
            if "rank" in payload["node_cols"]:
                raise OpgraphInputError(path, "is already a multi-rank job graph")
            meta = payload["graph"]
            del got
        else:
            # the args decoded here, if the build kept them raw: the job merges whole tables
            payload = unpack_payload(build_payload(got))
            meta = got.meta
            del got
        ev: pd.DataFrame = payload["graph"]["events"]
        di = payload["graph"].get("distributed_info") or {}
        warnings: list[dict[str, Any]] = []
        r = di.get("rank") if isinstance(di, dict) else None
        if isinstance(r, (int, np.integer)) and not isinstance(r, bool) and r >= 0:
            rank, source = int(r), "distributedInfo"
        else:
            rank = rank_from_filename(path)
            source = "filename"
            if rank is not None:
                warnings.append({"code": "rank_from_filename", "count": 1, "example_eid": None,
                                 "message": f"{os.path.basename(path)}: no distributedInfo.rank; rank "
                                            f"{rank} taken from the file name"})
        ws = di.get("world_size") if isinstance(di, dict) else None
        ws = int(ws) if isinstance(ws, (int, np.integer)) and not isinstance(ws, bool) else None
        if rank is not None and "rank" in ev:
            ev["rank"] = np.int64(rank)
        coll, steps, summary = rank_tables(payload, -1 if rank is None else rank)
        summary["peak_rss_bytes"] = peak_rss_bytes()
        keep = (rank in keep_full) if isinstance(keep_full, (set, frozenset)) else bool(keep_full)
        src = payload["graph"].get("source") or {}
        return RankResult(rank=rank, rank_source=source, world_size=ws, file=str(path),
                          sha256=src.get("sha256") or (meta.get("sha256") if isinstance(meta, dict) else None),
                          warnings=warnings, payload=payload if keep else None, collectives=coll,
                          steps=steps, summary=summary, n_events=int(len(ev)))


def rank_with_graph(path: str) -> "tuple[RankResult, TraceGraph]":
    """:func:`rank_result` and the rank's graph as columns, the result without its payload
    (for per-rank work that analyses the graph where it was built)."""
    from opgraph.model.trace_graph import TraceGraph

    res = rank_result(path, True)
    payload, res.payload = res.payload, None
    return res, TraceGraph(payload)


def rank_summary(path: str) -> RankResult:
    """:func:`rank_result` without the graph (what ``opgraph summary DIR`` fans out)."""
    return rank_result(path, False)
