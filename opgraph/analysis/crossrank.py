"""Cross-rank critical path of each step of a multi-rank job (docs/multirank.md).

The single-rank model (:mod:`opgraph.analysis.critical_path`, docs/critical-path.md) runs
unchanged on the job graph, whose ranks' boundary DAGs are disjoint; the job's
``collective`` edges add one boundary edge each: for a matched collective and two of its
participants' kernels ``u`` (rank a) and ``v`` (rank b), ``start(u) -> end(v)`` ("v cannot
end before u has started"), category ``gpu_comm``, owned by ``v``. A collective kernel's
end therefore has as dependencies its own start and every other participant's start, and
its critical predecessor is the **last-arriving** participant (its own start on a tie): the
path walks from the waiting rank into the rank that arrived last.

Windows. For every step ``N`` and every analysed rank, the rank's window is the
single-rank one (its ``ProfilerStep#N`` start to the last end of anything it ran or
launched in it, on the aligned clock). The step's window is the **slowest rank's**: the
longest span (lowest rank on a tie). The path is walked back from that window's last end
to its start, crossing ranks at collectives, so its length equals that span exactly.

``gpu_comm_wait``. For a collective kernel of rank ``r`` with arrival (kernel start)
``a_r`` and the collective's last arrival ``L`` over all its participants, the interval
``[a_r, a_r + clamp(L - a_r, 0, dur_r)]`` is time ``r`` spent waiting for the last rank
(:func:`opgraph.analysis.stragglers.kernel_waits`). A ``gpu_comm`` path segment owned by a
collective kernel is split: its part inside that interval is ``gpu_comm_wait`` (naming the
last rank), the rest stays ``gpu_comm`` (transfer). When every participant is analysed
the path leaves a waiting kernel through the collective edge at ``L``, so waits on the
path are zero; they appear when the last rank is not analysed (``--ranks``) or not kept in
full: such ranks are seen only through their rows of the job's collective table.

Unrecorded stream joins (a compute stream waiting for the NCCL stream, which Kineto
records only with ``cuda_sync`` events) are ``event_wait`` edges of the graph itself,
inferred by the builder (:func:`opgraph.graph.build.infer_stream_joins`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Sequence

import numpy as np
import pandas as pd

from opgraph.model.arrays import GraphArrays, key_positions
from opgraph.model.trace_graph import TraceGraph
from opgraph.analysis.critical_path.boundary_edges import CATEGORIES
from opgraph.analysis.critical_path.engine import BoundaryDAG, ExtraEdges, boundary_dag, segment_columns, walk_back
from opgraph.analysis.critical_path.result import PathSegment, SegmentTable, WindowPath, breakdown_frame, path_frame, summarize_windows
from opgraph.analysis.critical_path.path import segment_table
from opgraph.analysis.display import TableResult
from opgraph.time_categories import CROSS_RANK_CATEGORIES
from opgraph.analysis.stragglers import job_of, kernel_waits

#: Categories of the cross-rank path: the single-rank ones plus ``gpu_comm_wait``.
CROSS_CATEGORIES: tuple[str, ...] = tuple(CROSS_RANK_CATEGORIES)
_GPU_COMM = CATEGORIES.index("gpu_comm")
#: Tie priority of collective edges: below spans and program order (3), so a kernel that
#: ties for last arrival keeps the path on its own rank.
COLLECTIVE_PRIO = 1


@dataclass(frozen=True)
class CrossSegment(PathSegment):
    """A path segment on rank ``rank``; ``wait_for_rank`` names the last-arriving rank of a
    ``gpu_comm_wait`` segment; ``coll_id`` is set on segments of collective kernels."""

    rank: int = 0
    wait_for_rank: int | None = None
    coll_id: int | None = None

    def to_dict(self) -> dict[str, Any]:
        d = super().to_dict()
        d["rank"] = self.rank
        if self.wait_for_rank is not None:
            d["wait_for_rank"] = self.wait_for_rank
        if self.coll_id is not None:
            d["coll_id"] = self.coll_id
        return d


@dataclass
class StepPath(WindowPath):
    """The cross-rank critical path of one step, in the window of its slowest rank.

    ``rank_windows``: every analysed rank's window of the step (ns, aligned clock);
    ``comm_wait``: per rank, its waits in the step's collectives and whom they were for
    (from the collective table, so summarised ranks count)."""

    categories: ClassVar[tuple[str, ...]] = CROSS_CATEGORIES

    step: int = -1
    window_rank: int = 0
    rank_windows: list[dict[str, int]] = field(default_factory=list)
    comm_wait: dict[int, dict[str, Any]] = field(default_factory=dict)

    @property
    def ranks_on_path(self) -> list[int]:
        """Ranks the path visits, in time order of first visit."""
        seen: list[int] = []
        for s in self.path:
            r = getattr(s, "rank", 0)
            if r not in seen:
                seen.append(r)
        return seen

    def crossings(self) -> list[dict[str, Any]]:
        """Where the path changes rank (time order): ``from_rank`` (earlier) -> ``to_rank``."""
        out = []
        for p, q in zip(self.path, self.path[1:]):
            if getattr(p, "rank", 0) != getattr(q, "rank", 0):
                out.append({"at_us": q.start_ns / 1000.0, "from_rank": getattr(p, "rank", 0),
                            "to_rank": getattr(q, "rank", 0), "coll_id": getattr(q, "coll_id", None)})
        return out

    def breakdown_by_rank_ns(self) -> dict[int, dict[str, int]]:
        out: dict[int, dict[str, int]] = {}
        for s in self.path:
            r = getattr(s, "rank", 0)
            d = out.setdefault(r, {c: 0 for c in CROSS_CATEGORIES})
            d[s.bound_by] += s.dur_ns
        return out

    def to_dict(self, with_path: bool = True) -> dict[str, Any]:
        d = super().to_dict(with_path)
        d["step"] = self.step
        d["window_rank"] = self.window_rank
        d["ranks_on_path"] = self.ranks_on_path
        d["crossings"] = self.crossings()
        d["breakdown_by_rank_us"] = {str(r): {c: v / 1000.0 for c, v in b.items()}
                                     for r, b in sorted(self.breakdown_by_rank_ns().items())}
        d["rank_windows"] = [{"rank": w["rank"], "start_us": w["start_ns"] / 1000.0, "end_us": w["end_ns"] / 1000.0,
                              "span_us": (w["end_ns"] - w["start_ns"]) / 1000.0} for w in self.rank_windows]
        d["comm_wait"] = [{"rank": r, "wait_us": v["wait_ns"] / 1000.0,
                           "for_rank_us": {str(k): x / 1000.0 for k, x in sorted(v["for_rank_ns"].items())}}
                          for r, v in sorted(self.comm_wait.items())]
        return d


@dataclass(repr=False)
class CrossRankResult(TableResult):
    """Cross-rank critical paths of a job's steps. ``ranks``: the ranks analysed in full;
    ``summarised``: requested ranks not kept in full (seen through collective rows only).
    ``tables()``: ``path`` (one row per segment, with its rank) and ``breakdown`` (per step)."""

    main_table: ClassVar[str] = "path"
    display_tables: ClassVar[tuple[str, ...]] = ("breakdown",)

    steps: list[StepPath]
    ranks: list[int]
    summarised: list[int]
    notes: list[str] = field(default_factory=list)
    #: How it was computed, when rank by rank (:mod:`opgraph.analysis.crossrank_workers`):
    #: per pass, tasks, wall time (s) and the largest worker's peak RSS (bytes). Not part
    #: of ``to_dict``.
    stats: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def windows(self) -> list[StepPath]:
        return self.steps

    window_mode = "steps:cross-rank"

    def summary(self) -> dict[str, Any]:
        return summarize_windows(self.steps, CROSS_CATEGORIES)

    def tables(self) -> dict[str, pd.DataFrame]:
        return {"path": path_frame(self.steps), "breakdown": breakdown_frame(self.steps, CROSS_CATEGORIES)}

    def to_dict(self, with_path: bool = True) -> dict[str, Any]:
        """JSON-ready (schemas/critical-path.schema.json, cross-rank form; µs)."""
        return {"window_mode": self.window_mode, "ranks": self.ranks, "summarised_ranks": self.summarised,
                "notes": self.notes, "summary": self.summary(),
                "windows": [w.to_dict(with_path) for w in self.steps]}


def node_ranks(a: GraphArrays) -> np.ndarray:
    """The ``rank`` of every node position (int64; 0 for a graph without ranks: the node
    table holds ``rank`` for every node of a job graph or for none)."""
    r = getattr(a, "rank", None)
    if r is not None and len(r) == a.n:
        return np.asarray(r, dtype=np.int64)
    return np.zeros(a.n, dtype=np.int64)


def _positions(a: GraphArrays, nodes: np.ndarray) -> np.ndarray:
    """Positions of node keys ``nodes`` (-1 for keys not in the graph)."""
    return key_positions(a.eid, nodes)


def _step_table(job: dict[str, Any], a: GraphArrays, rank_of: np.ndarray, ranks: list[int]) -> pd.DataFrame:
    """``rank, step, ts, end, name`` of every analysed rank's steps (aligned ns); a rank without steps
    gets one window ``step=-1`` over its whole trace."""
    st = job.get("steps")
    rows = []
    if isinstance(st, pd.DataFrame) and len(st):
        s = st[st["rank"].isin(ranks)]
        named = s["name"] if "name" in s else pd.Series(None, index=s.index, dtype=object)
        s = s[["rank", "step", "ts", "end"]].astype(np.int64)
        s["name"] = named.to_numpy(object)
        rows.append(s)
    have = set(rows[0]["rank"].tolist()) if rows else set()
    for r in ranks:
        if r not in have:
            m = rank_of == r
            if m.any():
                rows.append(pd.DataFrame({"rank": [r], "step": [-1], "ts": [int(a.ts[m].min())],
                                          "end": [int(a.end[m].max())], "name": ["all"]}))
    if not rows:
        return pd.DataFrame({"rank": [], "step": [], "ts": [], "end": [], "name": []})
    return pd.concat(rows, ignore_index=True).sort_values(["step", "rank"], kind="stable").reset_index(drop=True)


def crossrank_critical_path(G: TraceGraph, ranks: Sequence[int] | None = None) -> CrossRankResult:
    """Cross-rank critical path of every step of a job graph (see the module doc).

    Parameters
    ----------
    G : TraceGraph
        A job graph (``opgraph build DIR``): nodes carry ``rank``, ``G.graph["job"]`` holds
        the collective table and steps (docs/multirank.md).
    ranks : sequence of int, optional
        Restrict the analysis to these ranks (default: every rank kept in full). Collective
        edges to other ranks are dropped; waits for them become ``gpu_comm_wait``.

    Returns
    -------
    CrossRankResult
        One :class:`StepPath` per step; times in ns (``to_dict`` gives µs).

    Raises
    ------
    ValueError
        ``G`` is not a job graph, or ``ranks`` names a rank the job does not have, or none
        of the requested ranks is kept in full.
    """
    job = job_of(G)
    info = {int(r["rank"]): r for r in job.get("ranks", [])}
    all_ranks = sorted(info)
    full, summarised, notes = select_ranks(ranks, all_ranks, [r for r in all_ranks if info[r].get("full", True)])

    a = G.arrays
    rank_of = node_ranks(a)
    keep = np.zeros(max(all_ranks + [int(rank_of.max()) if a.n else 0]) + 1, dtype=bool)
    keep[full] = True
    # collective edges between analysed ranks: start(u) -> end(v)
    cs, cd = a.out_edges("collective")
    m = keep[rank_of[cs]] & keep[rank_of[cd]]
    cs, cd = cs[m], cd[m]
    extra = ExtraEdges(2 * cs, 2 * cd + 1, np.full(len(cs), _GPU_COMM, np.int8), cd,
                       np.full(len(cs), COLLECTIVE_PRIO, np.int8))
    d = boundary_dag(G, a, extra=extra)
    # waits of every collective kernel (all ranks, from the table)
    waits = kernel_waits(job["collectives"])
    wpos = _positions(a, waits["node"].to_numpy(np.int64)) if len(waits) else np.empty(0, np.int64)
    wait_end = np.full(a.n, -1, dtype=np.int64)
    blame = np.full(a.n, -1, dtype=np.int64)
    coll_of = np.full(a.n, -1, dtype=np.int64)
    ok = wpos >= 0
    if ok.any():
        p = wpos[ok]
        wait_end[p] = a.ts[p] + waits["wait"].to_numpy(np.int64)[ok]
        blame[p] = waits["last_rank"].to_numpy(np.int64)[ok]
        coll_of[p] = waits["coll_id"].to_numpy(np.int64)[ok]

    # per-step waits by rank and blamed rank (table only)
    comm = step_waits(job["collectives"], waits, set(full) | set(summarised))

    # window members, sorted by (rank, key)
    members = np.flatnonzero((a.is_host | a.is_activity) & keep[rank_of])
    key = np.where(a.is_activity[members], d.launch_time[members], a.ts[members])
    o = np.lexsort((key, rank_of[members]))
    mem_sorted, key_sorted, rk_sorted = members[o], key[o], rank_of[members][o]
    bounds = {r: (int(np.searchsorted(rk_sorted, r, "left")), int(np.searchsorted(rk_sorted, r, "right")))
              for r in full}
    steps = _step_table(job, a, rank_of, full)
    results: list[StepPath] = []
    for stepno, grp in steps.groupby("step", sort=True):
        wins = []
        for r, ws, we in zip(grp["rank"].tolist(), grp["ts"].tolist(), grp["end"].tolist()):
            lo_r, hi_r = bounds[r]
            ks = key_sorted[lo_r:hi_r]
            lo = lo_r + int(np.searchsorted(ks, ws, "left"))
            hi = lo_r + int(np.searchsorted(ks, we, "left"))
            if hi <= lo:
                wins.append({"rank": r, "start_ns": ws, "end_ns": ws, "sink": -1})
                continue
            sel = mem_sorted[lo:hi]
            j = int(np.argmax(a.end[sel]))
            wins.append({"rank": r, "start_ns": ws, "end_ns": int(a.end[sel[j]]), "sink": int(sel[j])})
        spans = [w["end_ns"] - w["start_ns"] for w in wins]
        wi = int(np.argmax(spans))  # first max: lowest rank (rows sorted by rank)
        w = wins[wi]
        # the step's own name (ProfilerStep#N, Iteration N, ...) as the lowest rank saw it
        named = [x for x in grp["name"].tolist() if isinstance(x, str) and x]
        name = named[0] if named else (f"step {stepno}" if stepno >= 0 else "all")
        path: list[PathSegment] = []
        if w["sink"] >= 0:
            raw = segment_columns(d, walk_back(d, 2 * w["sink"] + 1, w["start_ns"]))
            path = cross_segments(d, raw, segment_table(d, raw), rank_of, wait_end, blame, coll_of)
        results.append(StepPath(name, None, w["start_ns"], w["end_ns"], path, step=int(stepno),
                                window_rank=int(w["rank"]),
                                rank_windows=[{k: int(v) for k, v in x.items() if k != "sink"} for x in wins],
                                comm_wait=comm.get(int(stepno), {})))
    return CrossRankResult(results, full, summarised, notes)


def cross_segments(d: BoundaryDAG, raw: dict[str, np.ndarray], table: SegmentTable, rank_of: np.ndarray,
                   wait_end: np.ndarray, blame: np.ndarray, coll_of: np.ndarray, shift: int = 0) -> list[PathSegment]:
    """Path segments on their ranks of the engine's segment columns ``raw``
    (:func:`opgraph.analysis.critical_path.segment_columns`) and their :class:`SegmentTable`
    ``table``, splitting collective kernels' ``gpu_comm`` time into ``gpu_comm_wait``
    (inside the kernel's wait interval ``[ts, wait_end]``, blamed on ``blame``) and
    ``gpu_comm``. Per node position: ``rank_of``, ``wait_end`` (ns, -1: none), ``blame``
    (the rank waited for), ``coll_of`` (collective id, -1: none). ``shift`` (ns) is added
    to every segment's times (a rank's own clock to the job's aligned clock)."""
    a = d.arr
    out: list[PathSegment] = []
    cols = zip(raw["owner"].tolist(), raw["cat"].tolist(), raw["t0"].tolist(), raw["t1"].tolist(),
               raw["src"].tolist(), raw["dst"].tolist())
    for (owner, cat, t0, t1, src, dst), ps in zip(cols, table):
        ow = owner if owner >= 0 else (dst if dst >= 0 else src)
        rank = int(rank_of[ow]) if ow >= 0 else 0
        cid = int(coll_of[owner]) if owner >= 0 and coll_of[owner] >= 0 else None
        pieces: list[tuple[int, int, str, int | None]] = [(t0, t1, ps.bound_by, None)]
        if owner >= 0 and cat == _GPU_COMM and wait_end[owner] > a.ts[owner]:
            w0, w1 = int(a.ts[owner]), int(wait_end[owner])
            o0, o1 = max(t0, w0), min(t1, w1)
            if o1 > o0:
                pieces = [(x0, x1, c, wr) for x0, x1, c, wr in (
                    (t0, o0, "gpu_comm", None), (o0, o1, "gpu_comm_wait", int(blame[owner])),
                    (o1, t1, "gpu_comm", None)) if x1 > x0]
        for x0, x1, c, wr in pieces:
            out.append(CrossSegment(ps.eid, ps.kind, ps.name, x0 + shift, x1 + shift, c, ps.lane, ps.from_eid,
                                    ps.to_eid, ps.inferred, ps.edge, rank=rank, wait_for_rank=wr, coll_id=cid))
    return out


def step_waits(coll: pd.DataFrame, waits: pd.DataFrame, ranks: set[int]) -> dict[int, dict[int, dict[str, Any]]]:
    """``{step: {rank: {"wait_ns": total, "for_rank_ns": {last_rank: ns}}}}`` for ``ranks``
    (ns), from the collective table ``coll`` and its :func:`~opgraph.analysis.stragglers.kernel_waits` ``waits``,
    the step of a collective being the largest step of its kernels."""
    out: dict[int, dict[int, dict[str, Any]]] = {}
    if not len(waits):
        return out
    step_of = waits.groupby("coll_id")["step"].max()
    w = waits.assign(cstep=step_of.reindex(waits["coll_id"].to_numpy()).to_numpy(np.int64))
    w = w[w["rank"].isin(list(ranks))]
    tot = w.groupby(["cstep", "rank"])["wait"].sum()
    for (s, r), v in tot.items():
        out.setdefault(int(s), {})[int(r)] = {"wait_ns": int(v), "for_rank_ns": {}}
    by = w[w["wait"] > 0].groupby(["cstep", "rank", "last_rank"])["wait"].sum()
    for (s, r, lr), v in by.items():
        out[int(s)][int(r)]["for_rank_ns"][int(lr)] = int(v)
    return out


def select_ranks(ranks: Sequence[int] | None, all_ranks: list[int], full_ranks: list[int]
                 ) -> tuple[list[int], list[int], list[str]]:
    """The ranks a cross-rank path analyses: ``(full, summarised, notes)`` for the
    requested ``ranks`` (None: every rank) of a job with ``all_ranks``, of which
    ``full_ranks`` are kept in full (the path can enter them; the others are seen through
    their collective rows only). ``notes`` say what is left out.

    Raises ValueError for a rank the job does not have, or when none of the requested
    ranks is kept in full."""
    if ranks is None:
        wanted = list(all_ranks)
    else:
        wanted = sorted({int(r) for r in ranks})
        known = set(all_ranks)
        unknown = [r for r in wanted if r not in known]
        if unknown:
            raise ValueError(f"rank(s) {unknown} not in this job (ranks {fmt_ranks(all_ranks)})")
    kept = set(full_ranks)
    full = [r for r in wanted if r in kept]
    summarised = [r for r in wanted if r not in kept]
    if not full:
        raise ValueError(f"none of ranks {fmt_ranks(wanted)} is kept in full in this job "
                         f"(full ranks: {fmt_ranks(full_ranks)})")
    notes: list[str] = []
    not_full_job = [r for r in all_ranks if r not in kept]
    if not_full_job:
        notes.append(f"ranks {fmt_ranks(not_full_job)} are not kept in full: the path cannot enter them; they appear "
                     "only through their collective rows, as gpu_comm_wait of the ranks that waited for them")
    if ranks is not None and len(full) < len(full_ranks):
        notes.append(f"analysis restricted to ranks {fmt_ranks(full)}: waits for other ranks are gpu_comm_wait")
    return full, summarised, notes


def fmt_ranks(rs: Sequence[int]) -> str:
    """Ranks as `0,3,5` (`none` when empty)."""
    return ",".join(str(r) for r in rs) if rs else "none"
