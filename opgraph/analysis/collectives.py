"""Collective communication kernels: message size, algorithm and bus bandwidth
(nccl-tests' definitions; TraceLens's NcclAnalyser, nsys ``nccl_sum``).

For each communication kernel (NCCL / RCCL), the size comes from the trace's own
collective record: the kernel's args (``Collective name``, ``In msg nelems``, ``Out msg
nelems``, ``Group size``, ``dtype``; PyTorch ≥ 2.1 writes them), else the same keys on the
``record_param_comms`` op that launched it. With ``t`` the kernel's duration and ``n`` the
group size (docs/collectives.md):

============== ===================== ===================
collective      message size S         busbw / algbw
============== ===================== ===================
all_reduce      in nelems × dtype       2 (n − 1) / n
all_gather      out nelems × dtype      (n − 1) / n
reduce_scatter  in nelems × dtype       (n − 1) / n
all_to_all      in nelems × dtype       (n − 1) / n
broadcast,
reduce, send,
recv            in nelems × dtype       1
============== ===================== ===================

``algbw = S / t`` and ``busbw = algbw × factor`` (GB/s = 10^9 bytes/s). A kernel with no
collective record keeps its time but no size or bandwidth (``source = "none"``), never a
guess.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from opgraph.dtypes import DTYPE_TABLE
from opgraph.graph.linking import COMM_KERNEL_PATTERN
from opgraph.model.trace_graph import TraceGraph
from opgraph.analysis.display import TableResult, json_records

#: Bytes per element by lower-cased dtype name, as collective records write it (``Float``,
#: ``BFloat16``, ``Char``...): a view of :data:`opgraph.dtypes.DTYPE_TABLE`, not a copy.
DTYPE_BYTES: dict[str, int] = {name.lower(): size for name, (_canon, size) in DTYPE_TABLE.items()}

#: Canonical collective of a record's ``Collective name`` (lower-cased, underscores removed).
_KINDS: dict[str, str] = {
    "allreduce": "all_reduce", "allreducecoalesced": "all_reduce",
    "allgather": "all_gather", "allgatherbase": "all_gather", "allgatherintotensorcoalesced": "all_gather",
    "allgathercoalesced": "all_gather",
    "reducescatter": "reduce_scatter", "reducescatterbase": "reduce_scatter",
    "reducescattertensorcoalesced": "reduce_scatter",
    "alltoall": "all_to_all", "alltoallbase": "all_to_all", "alltoallv": "all_to_all",
    "broadcast": "broadcast", "reduce": "reduce", "send": "send", "recv": "recv",
}

#: Bus-bandwidth factor per collective, as a function of the group size n.
BUSBW_FACTOR = {
    "all_reduce": lambda n: 2.0 * (n - 1) / n, "all_gather": lambda n: (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n, "all_to_all": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0, "reduce": lambda n: 1.0, "send": lambda n: 1.0, "recv": lambda n: 1.0,
}

#: Columns of ``tables()["kernels"]``.
KERNEL_COLUMNS: tuple[str, ...] = ("eid", "name", "device", "stream", "ts_us", "dur_us", "collective", "group_size",
                                   "dtype", "message_bytes", "algbw_gbps", "busbw_gbps", "source")


def collective_kind(name: Any) -> str | None:
    """Canonical collective of a record's ``Collective name`` (None when unknown)."""
    if not isinstance(name, str):
        return None
    return _KINDS.get(re.sub(r"[^a-z]", "", name.lower()))


def _record(args: dict[str, Any]) -> dict[str, Any] | None:
    if not isinstance(args, dict) or "In msg nelems" not in args:
        return None
    return args


@dataclass(repr=False)
class CollectivesResult(TableResult):
    """Result of :func:`collectives`: ``kernels`` (one row per communication kernel).
    ``tables()``: ``kernels`` and ``summary`` (per collective, group size, dtype and message
    size: count, time, mean algbw/busbw weighted by time).

    Examples
    --------
    >>> import opgraph
    >>> opgraph.collectives(opgraph.example_trace("gpu_bound")).to_frame().shape[0]
    0
    """

    kernels: pd.DataFrame
    main_table: ClassVar[str] = "summary"

    def tables(self) -> dict[str, pd.DataFrame]:
        k = self.kernels
        rows = []
        known = k[k["message_bytes"].notna()]
        for key, g in known.groupby(["collective", "group_size", "dtype", "message_bytes"], sort=True, dropna=False):
            t = float(g["dur_us"].sum())
            rows.append({"collective": key[0], "group_size": key[1], "dtype": key[2], "message_bytes": int(key[3]),
                         "count": int(len(g)), "time_us": t,
                         "algbw_gbps": float(g["message_bytes"].sum()) / (t * 1e3) if t > 0 else None,
                         "busbw_gbps": (float((g["busbw_gbps"] * g["dur_us"]).sum()) / t
                                        if t > 0 and g["busbw_gbps"].notna().all() else None)})
        unknown = k[k["message_bytes"].isna()]
        if len(unknown):
            rows.append({"collective": "(no collective record)", "group_size": None, "dtype": None,
                         "message_bytes": None, "count": int(len(unknown)), "time_us": float(unknown["dur_us"].sum()),
                         "algbw_gbps": None, "busbw_gbps": None})
        cols = ["collective", "group_size", "dtype", "message_bytes", "count", "time_us", "algbw_gbps", "busbw_gbps"]
        return {"summary": pd.DataFrame(rows, columns=cols), "kernels": k}

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (``schemas/collectives.schema.json``)."""
        t = self.tables()
        return {"summary": json_records(t["summary"]), "kernels": json_records(t["kernels"])}


def collectives(G: TraceGraph) -> CollectivesResult:
    """Every communication kernel of ``G`` (a :class:`~opgraph.model.trace_graph.TraceGraph`)
    with its collective, message size and
    algorithm and bus bandwidth (module docstring). Times in the table are µs, sizes bytes,
    bandwidths GB/s."""
    a = G.arrays
    rx = re.compile(COMM_KERNEL_PATTERN)
    kern = np.flatnonzero(a.kind == "kernel")
    comm = kern[a.names_match(rx)[kern]]   # the regex once per distinct name
    # each node's launching call and nest parent
    launcher, parent = a.launcher, a.parent
    eid = a.eid
    rows = []
    for p in comm.tolist():
        rec, source = _record(G.node_args([int(eid[p])])[0] or {}), "kernel"
        if rec is None:
            source = "op"
            cur = int(launcher[p])
            for _ in range(64):  # up the nesting from the launch call
                if cur < 0:
                    break
                rec = _record(G.node_args([int(eid[cur])])[0] or {})
                if rec is not None:
                    break
                cur = int(parent[cur])
        kind = collective_kind(rec.get("Collective name")) if rec else None
        n = rec.get("Group size") if rec else None
        n = int(n) if isinstance(n, (int, float)) and not isinstance(n, bool) and n >= 1 else None
        dt = str(rec.get("dtype")) if rec and rec.get("dtype") is not None else None
        size = DTYPE_BYTES.get(dt.lower()) if dt else None
        nel_key = "Out msg nelems" if kind == "all_gather" else "In msg nelems"
        nel = rec.get(nel_key) if rec else None
        msg = int(nel) * size if isinstance(nel, (int, float)) and nel >= 0 and size else None
        dur_ns = int(a.end[p] - a.ts[p])
        algbw = msg / dur_ns if msg is not None and dur_ns > 0 else None
        busbw = algbw * BUSBW_FACTOR[kind](n) if algbw is not None and kind in BUSBW_FACTOR and n else None
        rows.append({"eid": int(eid[p]), "name": a.name[p], "device": int(a.device[p]),
                     "stream": int(a.stream[p]), "ts_us": int(a.ts[p]) / 1e3, "dur_us": dur_ns / 1e3,
                     "collective": kind, "group_size": n, "dtype": dt, "message_bytes": msg,
                     "algbw_gbps": algbw, "busbw_gbps": busbw,
                     "source": (source if msg is not None else "none")})
    df = pd.DataFrame(rows, columns=list(KERNEL_COLUMNS))
    df["message_bytes"] = df["message_bytes"].astype("Int64")
    df["group_size"] = df["group_size"].astype("Int64")
    return CollectivesResult(df.sort_values(["ts_us", "eid"], kind="stable").reset_index(drop=True))
