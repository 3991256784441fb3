"""Multi-rank versions of the table analyses (docs/multirank.md, "Per-rank tables").

* :func:`each_kept_rank` runs a single-rank analysis on every rank kept in full and stacks its
  tables with a leading ``rank`` column (exposed communication per rank, copies per
  rank, ...).
* :func:`job_collectives` (:func:`job_collectives_from_traces` from the rank traces,
  rank by rank): one row per collective matched across ranks (the job's
  ``coll_id``), with TraceLens's split of a collective's time into **skew** (waiting for
  the last rank to arrive) and **communication** (after every rank arrived), and the
  algorithm and bus bandwidth over the communication time only: the bandwidth of the
  network, not of the slowest rank's arrival.

Times are on the job's aligned clock (docs/multirank.md); µs in the tables.

For a collective ``c`` with kernels ``k_r`` on ranks ``r`` (start ``s_r``, end ``e_r``):

* ``skew_us = max_r s_r − min_r s_r``;
* ``comm_us = max_r e_r − max_r s_r``;
* ``wait_us`` (per rank) ``= clamp(max_r' s_r' − s_r, 0, e_r − s_r)`` and ``last_rank`` the
  latest arrival (lowest rank on ties): the definitions of :mod:`opgraph.analysis.stragglers`
  (``kernel_waits``, ``per_collective``), which this builds on;
* ``algbw = S / comm``, ``busbw = algbw × factor(n)`` with the message size ``S`` and group
  size ``n`` of the collective record (:mod:`opgraph.analysis.collectives`; the ranks must
  agree on ``S``, else the row says ``size_mismatch``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Sequence

import numpy as np
import pandas as pd

from opgraph.analysis.collectives import BUSBW_FACTOR, collectives
from opgraph.analysis.display import TableResult, json_records
from opgraph.analysis.stragglers import kernel_waits, per_collective
from opgraph.gc_pause import gc_paused
from opgraph.model.trace_graph import TraceGraph
from opgraph.multirank.executor import run
from opgraph.multirank.identity import check_ranks, discover
from opgraph.multirank.job import matched_collectives
from opgraph.multirank.worker import RankResult, rank_with_graph

#: Columns of :func:`job_collectives`'s ``collectives`` table.
COLUMNS: tuple[str, ...] = ("coll_id", "collective", "ranks", "group_size", "dtype", "message_bytes",
                            "start_us", "skew_us", "comm_us", "total_us", "last_rank", "algbw_gbps", "busbw_gbps",
                            "size_mismatch")


def full_ranks(G: TraceGraph) -> list[int]:
    """The ranks of a job graph kept in full (their graphs can be analysed)."""
    return [int(r["rank"]) for r in G.graph["job"]["ranks"] if r.get("full")]


#: ``rank_graph(G, r)``: rank ``r`` of a job graph as a single-rank graph on its own clock
#: (:func:`opgraph.multirank.rank_subgraph`, passed in by the caller).
RankGraph = Callable[[TraceGraph, int], TraceGraph]


def each_kept_rank(G: TraceGraph, analysis: Callable[[TraceGraph], TableResult], rank_graph: RankGraph
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


def collective_records(G: TraceGraph, rank: int, node_offset: int = 0) -> pd.DataFrame:
    """The collective records of one rank's graph (:func:`opgraph.analysis.collectives.
    collectives`): ``rank``, ``node`` (its event id plus ``node_offset``), ``collective``,
    ``group_size``, ``dtype``, ``message_bytes`` (bytes)."""
    k = collectives(G).kernels
    return pd.DataFrame({"rank": np.full(len(k), rank, dtype=np.int64),
                         "node": k["eid"].to_numpy(np.int64) + node_offset,
                         "collective": k["collective"].to_numpy(object), "group_size": k["group_size"].to_numpy(object),
                         "dtype": k["dtype"].to_numpy(object), "message_bytes": k["message_bytes"].to_numpy(object)})


def job_collectives(G: TraceGraph, rank_graph: RankGraph) -> JobCollectives:
    """Collectives matched across the ranks of a job graph (module docstring); ``rank_graph``
    gives a rank's own graph (for its collective records)."""
    job = G.graph["job"]
    offsets = {int(r["rank"]): int(r["node_offset"]) for r in job["ranks"]}
    sizes = [collective_records(rank_graph(G, r), r, offsets[r]) for r in full_ranks(G)]
    return collectives_table(job["collectives"], sizes)


def collectives_table(coll: pd.DataFrame, sizes: list[pd.DataFrame]) -> JobCollectives:
    """:func:`job_collectives` from the job's collective table ``coll`` (aligned ns;
    ``G.graph["job"]["collectives"]``) and the ranks' :func:`collective_records`, whose
    ``node`` ids number the kernels as ``coll["node"]`` does."""
    sizes = [x for x in sizes if len(x)]
    waits = kernel_waits(coll)  # matched rows, last arrival, clamped waits (the stragglers definitions)
    pc = per_collective(coll, waits)
    # message size, dtype and group of each collective, from its ranks' collective records
    if sizes:
        rec = waits[["coll_id", "rank", "node"]].merge(pd.concat(sizes, ignore_index=True), on=["rank", "node"],
                                                         how="inner")
    else:
        rec = pd.DataFrame({c: pd.Series(dtype=object) for c in
                            ("coll_id", "collective", "group_size", "dtype", "message_bytes")})
    rec = rec.assign(message_bytes=pd.to_numeric(rec["message_bytes"], errors="coerce"),
                     group_size=pd.to_numeric(rec["group_size"], errors="coerce"))
    g = rec.groupby("coll_id")
    meta = pd.DataFrame({"collective": g["collective"].first(), "dtype": g["dtype"].first(),
                         "group_size": g["group_size"].first(), "n_sizes": g["message_bytes"].nunique(),
                         "message_bytes": g["message_bytes"].first()}).reindex(pc["coll_id"])
    first_ts, last_ts = pc["first_ts"].to_numpy(np.int64), pc["last_ts"].to_numpy(np.int64)
    end = pc["end"].to_numpy(np.int64)
    comm = end - last_ts
    mismatch = meta["n_sizes"].fillna(0).to_numpy() > 1
    nbytes = np.where(mismatch, np.nan, meta["message_bytes"].to_numpy(float))
    n = np.where(meta["group_size"].notna(), meta["group_size"].to_numpy(float), pc["ranks"].to_numpy(float))
    kind = [k if isinstance(k, str) else (c if isinstance(c, str) and c else None)
            for k, c in zip(meta["collective"].tolist(), pc["coll"].tolist())]
    with np.errstate(invalid="ignore", divide="ignore"):
        alg = np.where(comm > 0, nbytes / np.maximum(comm, 1), np.nan)
    fac = np.array([BUSBW_FACTOR[k](x) if k in BUSBW_FACTOR and x > 0 else np.nan for k, x in zip(kind, n)],
                   dtype=float)
    out = pd.DataFrame({
        "coll_id": pc["coll_id"].to_numpy(np.int64), "collective": kind, "ranks": pc["ranks"].to_numpy(np.int64),
        "group_size": n.astype(np.int64), "dtype": meta["dtype"].to_numpy(object),
        "message_bytes": [None if v != v else int(v) for v in nbytes.tolist()],
        "start_us": first_ts / 1e3, "skew_us": (last_ts - first_ts) / 1e3, "comm_us": comm / 1e3,
        "total_us": (end - first_ts) / 1e3, "last_rank": pc["last_rank"].to_numpy(np.int64),
        "algbw_gbps": alg, "busbw_gbps": alg * fac, "size_mismatch": mismatch}, columns=list(COLUMNS))
    out = out.sort_values("coll_id", kind="stable").reset_index(drop=True)
    for col in ("collective", "dtype", "algbw_gbps", "busbw_gbps"):
        out[col] = out[col].astype(object).where(out[col].notna(), None)
    ts = waits["ts"].to_numpy(np.int64)
    ranks = pd.DataFrame({"coll_id": waits["coll_id"].to_numpy(np.int64), "rank": waits["rank"].to_numpy(np.int64),
                          "start_us": ts / 1e3, "dur_us": (waits["end"].to_numpy(np.int64) - ts) / 1e3,
                          "wait_us": waits["wait"].to_numpy(np.int64) / 1e3})
    return JobCollectives(out, ranks)


def rank_collective_records(path: str) -> tuple[RankResult, pd.DataFrame]:
    """In a worker (pool process or Dask task): one rank's
    :class:`~opgraph.multirank.worker.RankResult` without its graph, and its
    :func:`collective_records` (local event ids)."""
    with gc_paused():
        res, tg = rank_with_graph(path)
        return res, collective_records(tg, -1 if res.rank is None else int(res.rank))


def job_collectives_from_traces(inputs: Sequence[str] | str, *, workers: int | None = None,
                                scheduler: str | None = None,
                                progress: Callable[[int, int], None] | None = None) -> JobCollectives:
    """:func:`job_collectives` from a job's rank traces (a directory, a glob or the files):
    each rank is read and built by one task of the process pool (``workers``) or of the
    Dask cluster at ``scheduler``; only its collective kernels, steps and collective
    records reach this process, which matches and aligns them as ``opgraph build`` does.
    The same tables as on the saved job graph (its node ids aside, which the tables do not
    hold). Bad input raises :class:`~opgraph.errors.OpgraphInputError`."""
    files = discover(list(inputs) if not isinstance(inputs, str) else [inputs]).files
    got = run(rank_collective_records, [(f,) for f in files], workers=workers, scheduler=scheduler,
              progress=progress or (lambda _d, _n: None))
    check_ranks([(r.rank, r.file) for r, _ in got])
    got = sorted(got, key=lambda x: int(x[0].rank))  # type: ignore[arg-type]
    coll, _alignment, _warnings = matched_collectives([r for r, _ in got])
    return collectives_table(coll, [rec for _, rec in got])
