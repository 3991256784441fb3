"""Stragglers of a multi-rank job: who arrived last at each collective, and by how much.

Works from the job's collective table alone (``G.graph["job"]["collectives"]``, see
docs/multirank.md), so ranks kept only as summaries count like any other.

Definitions (all times ns on the job's aligned clock):

* **arrival** of a rank at a collective = the start of its collective kernel. (The start
  of the host call that launched it, ``launch_ts``, is reported beside it as
  ``launch_skew``: it says when the rank's CPU got there, not when its GPU could join.)
* **last arrival** ``L`` = the latest arrival over the collective's participants; the
  **last rank** is the one that arrived then (lowest rank on an exact tie).
* **lateness** = ``L`` - the second-latest arrival: how much earlier the collective could
  have started had the last rank arrived with the next one.
* **skew** = ``L`` - the earliest arrival.
* **wait** of rank ``r`` = ``clamp(L - arrival[r], 0, dur[r])``: the part of its
  collective kernel spent waiting for the last rank (blamed on it). ``dur`` caps it
  because a kernel cannot wait longer than it ran (clocks are aligned only to the residual).
* per **step**: the step of a collective is the largest ``step`` of its kernels (the
  ProfilerStep whose CPU range holds each launch; ranks normally agree). The step's last
  rank is the one with the most lateness summed over the step's collectives.
* a rank is **repeatedly last** when it was last in at least 2 collectives and more often
  than chance: ``share > 1 / participants``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from opgraph.analysis.display import TableResult

#: Lower edges (µs) of the histogram bins; the last bin is open-ended.
HIST_EDGES_US: tuple[float, ...] = (0, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1_000, 2_000, 5_000, 10_000,
                                    20_000, 50_000, 100_000)


def kernel_waits(coll: pd.DataFrame) -> pd.DataFrame:
    """Matched rows of a job's collective table with each collective's last arrival.

    Parameters
    ----------
    coll : pandas.DataFrame
        ``G.graph["job"]["collectives"]``: one row per collective kernel (``rank, node,
        coll_id, ts, end, ...``; ns, aligned clock; ``coll_id`` -1 = unmatched).

    Returns
    -------
    pandas.DataFrame
        The matched rows (``coll_id >= 0``) sorted by ``coll_id, rank`` with extra columns
        ``last_ts`` (the collective's last arrival, ns), ``last_rank``, ``wait`` (ns,
        ``clamp(last_ts - ts, 0, end - ts)``) and ``is_last`` (bool).
    """
    m = coll[coll["coll_id"] >= 0].copy()
    if not len(m):
        for c, dt in (("last_ts", np.int64), ("last_rank", np.int64), ("wait", np.int64), ("is_last", bool)):
            m[c] = np.empty(0, dtype=dt)
        return m
    # latest start per collective; ties -> lowest rank (sort by ts asc, rank desc; take last)
    o = m.sort_values(["coll_id", "ts", "rank"], ascending=[True, True, False], kind="stable")
    last = o.groupby("coll_id", sort=False).tail(1).set_index("coll_id")
    m = m.sort_values(["coll_id", "rank"], kind="stable").reset_index(drop=True)
    cid = m["coll_id"].to_numpy()
    m["last_ts"] = last["ts"].reindex(cid).to_numpy(np.int64)
    m["last_rank"] = last["rank"].reindex(cid).to_numpy(np.int64)
    ts = m["ts"].to_numpy(np.int64)
    dur = np.maximum(m["end"].to_numpy(np.int64) - ts, 0)
    m["wait"] = np.clip(m["last_ts"].to_numpy(np.int64) - ts, 0, dur)
    m["is_last"] = m["rank"].to_numpy(np.int64) == m["last_rank"].to_numpy(np.int64)
    return m


def per_collective(coll: pd.DataFrame, waits: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per matched collective: ``coll_id, pg, seq, coll, nelems, step, ranks``
    (participants), ``first_ts, last_ts`` (arrivals, ns), ``last_rank``, ``lateness``,
    ``skew``, ``wait_total`` (sum of the participants' waits), ``end`` (latest end) and
    ``launch_skew`` (ns; -1 when a launch time is unknown), sorted by ``first_ts``."""
    w = kernel_waits(coll) if waits is None else waits
    cols = ["coll_id", "pg", "seq", "coll", "nelems", "step", "ranks", "first_ts", "last_ts", "last_rank",
            "lateness", "skew", "wait_total", "end", "launch_skew"]
    if not len(w):
        return pd.DataFrame({c: pd.Series(dtype=object if c in ("pg", "coll") else np.int64) for c in cols})
    g = w.groupby("coll_id", sort=True)
    out = g.agg(pg=("pg", "first"), seq=("seq", "max"), coll=("coll", "first"), nelems=("nelems", "max"),
                step=("step", "max"), ranks=("rank", "size"), first_ts=("ts", "min"), last_ts=("last_ts", "first"),
                last_rank=("last_rank", "first"), wait_total=("wait", "sum"), end=("end", "max"),
                launch_min=("launch_ts", "min"), launch_max=("launch_ts", "max"))
    # second-latest arrival: the latest start among the rows that are not the last rank's
    others = w[~w["is_last"]].groupby("coll_id", sort=True)["ts"].max()
    second = others.reindex(out.index).fillna(out["last_ts"]).to_numpy(np.int64)
    out["lateness"] = out["last_ts"].to_numpy(np.int64) - second
    out["skew"] = out["last_ts"] - out["first_ts"]
    out["launch_skew"] = np.where(out["launch_min"] >= 0, out["launch_max"] - out["launch_min"], -1)
    out = out.reset_index()
    out = out.sort_values(["first_ts", "coll_id"], kind="stable").reset_index(drop=True)
    return out[cols].astype({c: np.int64 for c in cols if c not in ("pg", "coll")})


def per_step(colls: pd.DataFrame, waits: pd.DataFrame) -> pd.DataFrame:
    """One row per step (collectives with ``step >= 0``): ``step, collectives, last_rank``
    (most lateness summed over the step's collectives), ``lateness`` (that sum, ns),
    ``last_count`` (collectives it was last in), ``comm_wait`` (all ranks' waits, ns)."""
    cols = ["step", "collectives", "last_rank", "lateness", "last_count", "comm_wait"]
    c = colls[colls["step"] >= 0]
    if not len(c):
        return pd.DataFrame({k: pd.Series(dtype=np.int64) for k in cols})
    lat = c.groupby(["step", "last_rank"]).agg(lateness=("lateness", "sum"),
                                               last_count=("coll_id", "size")).reset_index()
    lat = lat.sort_values(["step", "lateness", "last_count", "last_rank"], ascending=[True, False, False, True])
    top = lat.groupby("step", sort=True).head(1).set_index("step")
    n = c.groupby("step").size()
    step_of = colls.set_index("coll_id")["step"]
    wstep = step_of.reindex(waits["coll_id"].to_numpy()).to_numpy()
    cw = pd.Series(waits["wait"].to_numpy(np.int64)).groupby(wstep).sum()
    out = pd.DataFrame({"step": n.index.to_numpy(np.int64), "collectives": n.to_numpy(np.int64)})
    out["last_rank"] = top["last_rank"].reindex(out["step"]).to_numpy(np.int64)
    out["lateness"] = top["lateness"].reindex(out["step"]).to_numpy(np.int64)
    out["last_count"] = top["last_count"].reindex(out["step"]).to_numpy(np.int64)
    out["comm_wait"] = cw.reindex(out["step"]).fillna(0).to_numpy(np.int64)
    return out[cols]


def by_rank_table(colls: pd.DataFrame, waits: pd.DataFrame, ranks: list[int]) -> pd.DataFrame:
    """One row per rank: ``rank, collectives`` (matched ones it joined), ``times_last``,
    ``share`` (times_last / collectives), ``lateness`` (summed when last, ns),
    ``wait_caused`` (others' waits blamed on it, ns), ``comm_wait`` (its own waits, ns),
    ``repeated`` (see the module doc)."""
    idx = pd.Index(sorted(int(r) for r in ranks), name="rank")
    joined = waits.groupby("rank").size().reindex(idx, fill_value=0)
    last = colls.groupby("last_rank").agg(times_last=("coll_id", "size"), lateness=("lateness", "sum"))
    caused = waits.groupby("last_rank")["wait"].sum().reindex(idx, fill_value=0)
    own = waits.groupby("rank")["wait"].sum().reindex(idx, fill_value=0)
    parts = colls.set_index("coll_id")["ranks"]
    # chance share of being last: mean over its collectives of 1 / participants
    chance = (1.0 / parts.reindex(waits["coll_id"].to_numpy()).to_numpy(np.float64))
    chance_r = pd.Series(chance).groupby(waits["rank"].to_numpy()).mean().reindex(idx, fill_value=0.0)
    out = pd.DataFrame(index=idx)
    out["collectives"] = joined.to_numpy(np.int64)
    out["times_last"] = last["times_last"].reindex(idx, fill_value=0).to_numpy(np.int64)
    out["share"] = np.where(out["collectives"] > 0, out["times_last"] / out["collectives"].clip(lower=1), 0.0)
    out["lateness"] = last["lateness"].reindex(idx, fill_value=0).to_numpy(np.int64)
    out["wait_caused"] = caused.to_numpy(np.int64)
    out["comm_wait"] = own.to_numpy(np.int64)
    out["repeated"] = (out["times_last"] >= 2) & (out["share"] > chance_r.to_numpy())
    return out.reset_index()


def histogram_us(values_ns: np.ndarray, edges_us: tuple[float, ...] = HIST_EDGES_US) -> list[int]:
    """Counts of ``values_ns`` per bin ``[edges[i], edges[i+1])`` µs, the last bin open."""
    v = np.asarray(values_ns, dtype=np.float64) / 1000.0
    idx = np.searchsorted(np.asarray(edges_us, dtype=np.float64), v, side="right") - 1
    idx = np.clip(idx, 0, len(edges_us) - 1)
    return np.bincount(idx, minlength=len(edges_us)).astype(int).tolist()


@dataclass(repr=False)
class StragglerReport(TableResult):
    """Straggler analysis of a job; DataFrames in ns (``to_dict`` gives µs; ``tables()``
    gives ``by_rank``, ``by_step`` and ``by_collective`` in µs)."""

    main_table: ClassVar[str] = "by_rank"

    ranks: list[int]
    full: dict[int, bool]
    collectives: pd.DataFrame
    steps: pd.DataFrame
    by_rank: pd.DataFrame
    waits: pd.DataFrame
    unmatched: int
    match: dict[str, int] = field(default_factory=dict)

    @property
    def repeated(self) -> list[int]:
        """Ranks that are repeatedly last (module doc)."""
        return [int(r) for r in self.by_rank.loc[self.by_rank["repeated"], "rank"]]

    def histograms(self) -> dict[str, Any]:
        """Counts per bin (``edges_us``: lower edges, last bin open) of per-collective skew and
        lateness, and of per-kernel waits."""
        return {"edges_us": list(HIST_EDGES_US),
                "skew": histogram_us(self.collectives["skew"].to_numpy()),
                "lateness": histogram_us(self.collectives["lateness"].to_numpy()),
                "wait": histogram_us(self.waits["wait"].to_numpy())}

    def tables(self) -> dict[str, pd.DataFrame]:
        d = self.to_dict()
        return {k: pd.DataFrame(d[k]) for k in ("by_rank", "by_step", "by_collective")}

    def to_dict(self, top: int | None = None) -> dict[str, Any]:
        """JSON-ready (schemas/stragglers.schema.json); ``top`` limits ``by_collective`` to
        the latest arrivals (most lateness first) when given."""
        c = self.collectives
        if top is not None:
            c = c.sort_values(["lateness", "first_ts"], ascending=[False, True], kind="stable").head(top)
        us = 1000.0
        by_coll = [{"coll_id": int(r.coll_id), "pg": str(r.pg), "seq": int(r.seq), "coll": str(r.coll),
                    "nelems": int(r.nelems), "step": int(r.step), "ranks": int(r.ranks),
                    "first_arrival_us": r.first_ts / us, "last_arrival_us": r.last_ts / us,
                    "last_rank": int(r.last_rank), "lateness_us": r.lateness / us, "skew_us": r.skew / us,
                    "wait_total_us": r.wait_total / us,
                    "launch_skew_us": (r.launch_skew / us if r.launch_skew >= 0 else None)}
                   for r in c.itertuples(index=False)]
        by_step = [{"step": int(r.step), "collectives": int(r.collectives), "last_rank": int(r.last_rank),
                    "lateness_us": r.lateness / us, "last_count": int(r.last_count), "comm_wait_us": r.comm_wait / us}
                   for r in self.steps.itertuples(index=False)]
        by_rank = [{"rank": int(r.rank), "full": bool(self.full.get(int(r.rank), True)),
                    "collectives": int(r.collectives), "times_last": int(r.times_last), "share": float(r.share),
                    "lateness_us": r.lateness / us, "wait_caused_us": r.wait_caused / us,
                    "comm_wait_us": r.comm_wait / us, "repeated": bool(r.repeated)}
                   for r in self.by_rank.itertuples(index=False)]
        return {"arrival": "kernel_start", "ranks": [int(r) for r in self.ranks],
                "matched": int(len(self.collectives)), "unmatched": int(self.unmatched), "match": self.match,
                "repeated": self.repeated, "by_collective": by_coll, "by_step": by_step, "by_rank": by_rank,
                "histograms": self.histograms()}


def job_of(G: Any) -> dict[str, Any]:
    """``G.graph["job"]``, or ValueError when ``G`` is not a multi-rank job graph."""
    job = G.graph.get("job") if hasattr(G, "graph") else None
    if not isinstance(job, dict) or "collectives" not in job:
        raise ValueError("not a multi-rank job graph: build one from a directory of rank traces "
                         "(opgraph build DIR -o job.gpickle)")
    return job


def stragglers(G: Any) -> StragglerReport:
    """Straggler report of a job graph (``opgraph build DIR``); see the module doc.

    Raises ValueError when ``G`` is not a job graph."""
    job = job_of(G)
    coll: pd.DataFrame = job["collectives"]
    ranks = [int(r["rank"]) for r in job.get("ranks", [])] or sorted(int(r) for r in coll["rank"].unique())
    full = {int(r["rank"]): bool(r.get("full", True)) for r in job.get("ranks", [])}
    waits = kernel_waits(coll)
    colls = per_collective(coll, waits)
    steps = per_step(colls, waits)
    by_rank = by_rank_table(colls, waits, ranks)
    match = {str(k): int(v) for k, v in coll.loc[coll["coll_id"] >= 0].groupby("match")["coll_id"].nunique().items()} \
        if "match" in coll.columns else {}
    unmatched = int((coll["coll_id"] < 0).sum())
    return StragglerReport(ranks, full, colls, steps, by_rank, waits, unmatched, match)


def rank_comm_waits(G: Any, rank: int | None = None, sha256: str | None = None) -> tuple[int, dict[int, int]]:
    """The cross-rank waits inside one rank's collective kernels, for use on that rank's
    own single-rank graph (ET-driven prediction removes them from the profile's kernel
    times: they are the other ranks' lateness, not the rank's work).

    Parameters
    ----------
    G : TraceGraph
        A job graph (``opgraph build DIR``).
    rank, sha256 : optional
        Which rank: by number, or by the sha256 of its trace file (as in a single-rank
        graph's ``graph["source"]["sha256"]``). One of them is required.

    Returns
    -------
    (rank, waits)
        ``waits``: rank-local node id (the node id in the graph built from the rank's file
        alone) -> wait (ns, :func:`kernel_waits`: ``clamp(last arrival - start, 0, dur)``),
        for every matched collective kernel of the rank.

    Raises ValueError when ``G`` is not a job graph or the rank is not in it (in full).
    """
    job = job_of(G)
    rows = job.get("ranks", [])
    if rank is None and sha256 is None:
        raise ValueError("rank_comm_waits needs a rank or a sha256")
    row = next((x for x in rows if (rank is not None and int(x["rank"]) == int(rank))
                or (rank is None and x.get("sha256") == sha256)), None)
    if row is None:
        raise ValueError(f"rank {rank} is not in this job" if rank is not None
                         else "the profiled trace is not a rank of this job (no rank file with its sha256)")
    if not row.get("full", True):
        raise ValueError(f"rank {row['rank']} was not kept in full when this job was built (its keep setting)")
    r, off = int(row["rank"]), int(row["node_offset"])
    w = kernel_waits(job["collectives"])
    w = w[w["rank"].to_numpy(np.int64) == r]
    return r, {int(n) - off: int(x) for n, x in zip(w["node"].to_numpy(np.int64), w["wait"].to_numpy(np.int64))}
