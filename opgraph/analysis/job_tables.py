"""Multi-rank versions of the table analyses (docs/multirank.md, "Per-rank tables").

* :func:`per_rank` runs a single-rank analysis on every rank kept in full and stacks its
  tables with a leading ``rank`` column (exposed communication per rank, copies per
  rank, ...).
* :func:`job_collectives`: one row per collective matched across ranks (the job's
  ``coll_id``), with TraceLens's split of a collective's time into **skew** (waiting for
  the last rank to arrive) and **communication** (after every rank arrived), and the
  algorithm and bus bandwidth over the communication time only: the bandwidth of the
  network, not of the slowest rank's arrival.

Times are on the job's aligned clock (docs/multirank.md); µs in the tables.

For a collective ``c`` with kernels ``k_r`` on ranks ``r`` (start ``s_r``, end ``e_r``):

* ``skew_us = max_r s_r − min_r s_r``;
* ``comm_us = max_r e_r − max_r s_r``;
* ``wait_us`` (per rank) ``= max_r' s_r' − s_r``;
* ``algbw = S / comm``, ``busbw = algbw × factor(n)`` with the message size ``S`` and group
  size ``n`` of the collective record (:mod:`opgraph.analysis.collectives`; the ranks must
  agree on ``S``, else the row says ``size_mismatch``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, ClassVar

import networkx as nx
import numpy as np
import pandas as pd

from opgraph.analysis.collectives import BUSBW_FACTOR, collectives
from opgraph.analysis.display import TableResult, json_records

#: Columns of :func:`job_collectives`'s ``collectives`` table.
COLUMNS: tuple[str, ...] = ("coll_id", "collective", "ranks", "group_size", "dtype", "message_bytes",
                            "start_us", "skew_us", "comm_us", "total_us", "last_rank", "algbw_gbps", "busbw_gbps",
                            "size_mismatch")


def full_ranks(G: nx.DiGraph) -> list[int]:
    """The ranks of a job graph kept in full (their graphs can be analysed)."""
    return [int(r["rank"]) for r in G.graph["job"]["ranks"] if r.get("full")]


#: ``rank_graph(G, r)``: rank ``r`` of a job graph as a single-rank graph on its own clock
#: (:func:`opgraph.multirank.rank_subgraph`; passed in, so analyses stay below the
#: multi-rank layer).
RankGraph = Callable[[nx.DiGraph, int], nx.DiGraph]


def per_rank(G: nx.DiGraph, analysis: Callable[[nx.DiGraph], TableResult], rank_graph: RankGraph
             ) -> tuple[dict[str, pd.DataFrame], dict[int, TableResult]]:
    """``analysis`` on each rank kept in full (``rank_graph`` gives a rank's graph): its
    tables stacked with a leading ``rank`` column (the rank's own clock, as ``--rank N``
    gives), and the result of every rank."""
    out: dict[str, list[pd.DataFrame]] = {}
    results: dict[int, TableResult] = {}
    for r in full_ranks(G):
        res = results[r] = analysis(rank_graph(G, r))
        for name, t in res.tables().items():
            t = t.copy()
            t.insert(0, "rank", np.full(len(t), r, dtype=np.int64))
            out.setdefault(name, []).append(t)
    return {k: pd.concat(v, ignore_index=True) for k, v in out.items()}, results


@dataclass(repr=False)
class JobCollectives(TableResult):
    """Result of :func:`job_collectives`: ``collectives`` (:data:`COLUMNS`) and ``ranks``
    (one row per collective and rank: ``coll_id``, ``rank``, ``start_us``, ``dur_us``,
    ``wait_us``)."""

    collectives: pd.DataFrame
    ranks: pd.DataFrame
    main_table: ClassVar[str] = "collectives"

    def tables(self) -> dict[str, pd.DataFrame]:
        """``collectives`` and ``ranks`` (µs, bytes, GB/s)."""
        return {"collectives": self.collectives, "ranks": self.ranks}

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (``schemas/job-collectives.schema.json``)."""
        return {"collectives": json_records(self.collectives), "ranks": json_records(self.ranks)}


def job_collectives(G: nx.DiGraph, rank_graph: RankGraph) -> JobCollectives:
    """Collectives matched across the ranks of a job graph (module docstring); ``rank_graph``
    gives a rank's own graph (for its collective records)."""
    job = G.graph["job"]
    coll: pd.DataFrame = job["collectives"]
    offsets = {int(r["rank"]): int(r["node_offset"]) for r in job["ranks"]}
    sizes = []
    for r in full_ranks(G):
        k = collectives(rank_graph(G, r)).kernels
        if len(k):
            sizes.append(pd.DataFrame({"rank": r, "node": k["eid"].to_numpy(np.int64) + offsets[r],
                                       "collective": k["collective"].to_numpy(object),
                                       "group_size": k["group_size"].to_numpy(object),
                                       "dtype": k["dtype"].to_numpy(object),
                                       "message_bytes": k["message_bytes"].to_numpy(object)}))
    c = coll[coll["coll_id"] >= 0][["coll_id", "rank", "node", "coll", "ts", "end"]].copy()
    if sizes:
        c = c.merge(pd.concat(sizes, ignore_index=True), on=["rank", "node"], how="left")
    else:
        for col in ("collective", "group_size", "dtype", "message_bytes"):
            c[col] = None
    rows = []
    per = []
    for cid, g in c.groupby("coll_id", sort=True):
        s, e = g["ts"].to_numpy(np.int64), g["end"].to_numpy(np.int64)
        last = int(s.max())
        comm = int(e.max()) - last
        b = pd.to_numeric(g["message_bytes"], errors="coerce").dropna()
        mismatch = bool(b.nunique() > 1)
        nbytes = int(b.iloc[0]) if len(b) and not mismatch else None
        kind = next((x for x in g["collective"] if isinstance(x, str)), None) or next(
            (x for x in g["coll"] if isinstance(x, str) and x), None)
        gs = pd.to_numeric(g["group_size"], errors="coerce").dropna()
        n = int(gs.iloc[0]) if len(gs) else int(len(g))
        alg = nbytes / comm if nbytes is not None and comm > 0 else None
        fac = BUSBW_FACTOR.get(kind) if kind else None
        bus = alg * fac(n) if alg is not None and fac is not None and n > 0 else None
        dt = next((x for x in g["dtype"] if isinstance(x, str)), None)
        rows.append({"coll_id": int(cid), "collective": kind, "ranks": int(len(g)), "group_size": n, "dtype": dt,
                     "message_bytes": nbytes, "start_us": float(s.min()) / 1e3, "skew_us": (last - int(s.min())) / 1e3,
                     "comm_us": comm / 1e3, "total_us": (int(e.max()) - int(s.min())) / 1e3,
                     "last_rank": int(g["rank"].to_numpy()[int(np.argmax(s))]), "algbw_gbps": alg,
                     "busbw_gbps": bus, "size_mismatch": mismatch})
        for r, s_r, e_r in zip(g["rank"].tolist(), s.tolist(), e.tolist()):
            per.append({"coll_id": int(cid), "rank": int(r), "start_us": s_r / 1e3, "dur_us": (e_r - s_r) / 1e3,
                        "wait_us": (last - s_r) / 1e3})
    out = pd.DataFrame(rows, columns=list(COLUMNS))
    for col in ("collective", "dtype", "message_bytes", "algbw_gbps", "busbw_gbps"):
        out[col] = out[col].astype(object).where(out[col].notna(), None)
    return JobCollectives(out, pd.DataFrame(per, columns=["coll_id", "rank", "start_us", "dur_us", "wait_us"]))
