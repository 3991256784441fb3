"""The cross-rank critical path of a job computed where each rank's data lives.

:func:`crossrank_from_traces` gives exactly what :func:`opgraph.analysis.crossrank.
crossrank_critical_path` gives on the saved job graph (docs/multirank.md, "Cross-rank
critical path"), but no process ever holds more than one rank's graph: each rank is read,
built and walked by tasks of the process pool or the Dask cluster, and only compact tables
travel to the driver. Three passes, each one task per rank:

1. **Tables** (:func:`rank_path_tables`): the rank's collective kernels and steps (as for
   ``stragglers``), the window of each step (its start, its last end and the node that
   ends it), and at the end boundary of every collective kernel the rank's own last-arriving
   dependency (arrival ns, tie priority, source boundary). The built graph is kept on disk
   for the next passes when a cache directory is given.
2. The driver matches the collectives and aligns the clocks (as ``opgraph build`` does),
   then decides at every collective kernel's end whether another participant's start
   arrived last (the job model's collective edge wins the pick, with the engine's order:
   latest arrival, then priority, then the later source boundary in job order). Those ends
   are the rank's **exits**; the winning starts are the other ranks' **entries**, and so
   are the slowest rank's window ends.
   **Chains** (:func:`rank_chains`): from every entry each rank follows its critical
   predecessors until an exit, a boundary with no predecessor, or the entry's bound (the
   earliest start of the windows holding it, :func:`entry_bounds`), and returns only how
   the chain ended, its exit and the earliest time on it.
3. The driver stitches every step's walk from those chain ends exactly as the engine's
   :func:`~opgraph.analysis.critical_path.walk_back` walks the job graph (clamps, stop at
   the window start, crossing ranks at exits; a window that starts before a chain's bound
   asks for that chain again, in another round). **Segments** (:func:`rank_segments`):
   each rank walks its pieces of the paths and turns them into categorised segments,
   split into ``gpu_comm_wait`` as on the job graph.

Node ids in the result are the job graph's (rank ``r``'s local id plus the events of the
ranks before it), times are on the aligned clock (ns).
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
import time
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
import pandas as pd

from opgraph.analysis.critical_path.boundary_edges import CAT, PRIORITY, ROLES
from opgraph.analysis.critical_path.engine import EXIT_EDGE, BoundaryDAG, CircularPath, boundary_dag, segment_columns, walk_back
from opgraph.analysis.critical_path.path import segment_table
from opgraph.analysis.crossrank import (COLLECTIVE_PRIO, CrossRankResult, StepPath, cross_segments, select_ranks,
                                        step_waits)
from opgraph.analysis.stragglers import kernel_waits
from opgraph.gc_pause import gc_paused
from opgraph.model.arrays import key_positions
from opgraph.model.trace_graph import TraceGraph
from opgraph.multirank.executor import run
from opgraph.multirank.identity import check_ranks, discover
from opgraph.multirank.job import matched_collectives
from opgraph.multirank.worker import RankResult, peak_rss_bytes, rank_with_graph

_ROLE_PRIO = np.array([PRIORITY[r] for r in ROLES], dtype=np.int64)


@dataclass
class RankPathTables:
    """Pass 1 of one rank (:func:`rank_path_tables`; ns on the rank's own clock).

    ``result``: the rank's :class:`~opgraph.multirank.worker.RankResult` without its graph;
    ``n_nodes``: its node count; ``coll_pos``: node position of each row of
    ``result.collectives``; ``own_arrive``, ``own_prio``, ``own_src``: per row, the rank's
    own last-arriving edge into that kernel's end boundary (arrival ns, tie priority,
    local source boundary; -1 / -1 / -1 when none); ``windows``: ``step, name, ts, end,
    sink`` (the window's last end and the node position that ends it, -1 when empty);
    ``graph_file``: where the built graph was kept (None: rebuilt from ``file``)."""

    result: RankResult
    n_nodes: int
    coll_pos: np.ndarray
    own_arrive: np.ndarray
    own_prio: np.ndarray
    own_src: np.ndarray
    windows: pd.DataFrame
    graph_file: str | None
    peak_rss_bytes: int = 0


def _rank_graph(path: str, graph_file: str | None) -> TraceGraph:
    """The rank's graph as columns: the kept graph file when there is one, else built
    from the trace again (the build is deterministic)."""
    from opgraph.graph.io import load_any

    return load_any(graph_file if graph_file is not None and os.path.exists(graph_file) else path)


def rank_windows(d: BoundaryDAG, steps: pd.DataFrame) -> pd.DataFrame:
    """Every step's window of one rank: ``step, name, ts, end`` (ns) where ``end`` is the
    last end of the host events and device activities keyed in ``[ts, step end)`` (an
    activity by its launch time) and ``sink`` the node position ending it (-1: empty).
    A rank without steps gets one window ``step=-1`` over its whole trace (the job
    model's rule)."""
    a = d.arr
    members = np.flatnonzero(a.is_host | a.is_activity)
    key = np.where(a.is_activity[members], d.launch_time[members], a.ts[members])
    o = np.argsort(key, kind="stable")
    mem_sorted, key_sorted = members[o], key[o]
    if len(steps):
        st = steps[["step", "name", "ts", "end"]].reset_index(drop=True)
    elif a.n:
        st = pd.DataFrame({"step": [-1], "name": ["all"], "ts": [int(a.ts.min())], "end": [int(a.end.max())]})
    else:
        st = pd.DataFrame({"step": [], "name": [], "ts": [], "end": []})
    ends, sinks = [], []
    for ws, we in zip(st["ts"].tolist(), st["end"].tolist()):
        lo = int(np.searchsorted(key_sorted, ws, "left"))
        hi = int(np.searchsorted(key_sorted, we, "left"))
        if hi <= lo:
            ends.append(int(ws))
            sinks.append(-1)
            continue
        sel = mem_sorted[lo:hi]
        j = int(sel[int(np.argmax(a.end[sel]))])
        ends.append(int(a.end[j]))
        sinks.append(j)
    return pd.DataFrame({"step": st["step"].to_numpy(np.int64), "name": st["name"].to_numpy(object),
                         "ts": st["ts"].to_numpy(np.int64), "end": np.array(ends, dtype=np.int64),
                         "sink": np.array(sinks, dtype=np.int64)})


def rank_path_tables(path: str, graph_file: str | None) -> RankPathTables:
    """Pass 1, in a worker: read and build one rank, keep its graph at ``graph_file``
    (when given) and return its :class:`RankPathTables`."""
    from opgraph.graph.io import GraphPayload, save_gpickle

    with gc_paused():
        res, tg = rank_with_graph(path)
        a = tg.arrays
        d = boundary_dag(tg, a)
        pos = key_positions(a.eid, res.collectives["node"].to_numpy(np.int64))
        b = 2 * pos + 1
        u = d.cpred[b]
        has = u >= 0
        arrive = np.where(has, np.minimum(d.t[np.maximum(u, 0)], d.t[b]), -1)
        e = d.cedge[b]
        prio = np.where(has & (e >= 0), _ROLE_PRIO[np.maximum(d.role[np.maximum(e, 0)], 0)], -1)
        windows = rank_windows(d, res.steps)
        if graph_file is not None:
            save_gpickle(GraphPayload(tg.payload), graph_file)
        return RankPathTables(res, int(a.n), pos.astype(np.int64), arrive.astype(np.int64), prio.astype(np.int64),
                              np.where(has, u, -1).astype(np.int64), windows, graph_file, peak_rss_bytes())


#: How a chain of pass 2 ends: at an exit, at a boundary with no predecessor, or cut at its bound.
END_EXIT, END_NONE, END_CUT = 0, 1, 2
#: ``m`` of a chain with no boundary after the entry.
NO_TIME = int(np.iinfo(np.int64).max)


def rank_chains(path: str, graph_file: str | None, entries: np.ndarray, bounds: np.ndarray, exits: np.ndarray
                ) -> dict[str, np.ndarray | int]:
    """Pass 2, in a worker: where the chain of critical predecessors from each entry
    boundary ends.

    From entry ``e`` (local boundary) the chain follows the rank's critical predecessors
    until an exit (``END_EXIT``, the exit in ``x``), a boundary with no predecessor
    (``END_NONE``) or a boundary at or before the entry's bound (ns, own clock:
    ``END_CUT``; a walk that reaches it has stopped, for any window starting at or after
    the bound). ``m`` is the earliest time (ns, own clock) of the chain's boundaries after
    the entry (:data:`NO_TIME` when none): a walk entering with time ``c`` reaches the exit
    at ``min(c, m)``, the engine's clamp. Entries are walked lowest bound first; a chain
    that meets a boundary an earlier one passed takes that chain's end from there (a cut
    there was made at a lower bound, so it holds for this one too). Also returns this
    worker's ``peak_rss_bytes``."""
    with gc_paused():
        tg = _rank_graph(path, graph_file)
        d = boundary_dag(tg, tg.arrays)
        t, cpred = d.t, d.cpred
        nb = len(t)
        is_exit = np.zeros(nb, dtype=bool)
        is_exit[np.asarray(exits, dtype=np.int64)] = True
        known = np.zeros(nb, dtype=bool)
        k_end = np.zeros(nb, dtype=np.int8)
        k_x = np.full(nb, -1, dtype=np.int64)
        k_m = np.full(nb, NO_TIME, dtype=np.int64)
        ent = np.asarray(entries, dtype=np.int64)
        bnd = np.asarray(bounds, dtype=np.int64)
        for i in np.argsort(bnd, kind="stable").tolist():
            b, bound = int(ent[i]), int(bnd[i])
            chain: list[int] = []
            guard = nb + 1
            while True:
                if known[b]:
                    end, x, m = int(k_end[b]), int(k_x[b]), min(int(t[b]), int(k_m[b]))
                    break
                chain.append(b)
                guard -= 1
                if is_exit[b]:
                    end, x, m = END_EXIT, b, NO_TIME
                    break
                u = int(cpred[b])
                if u < 0:
                    end, x, m = END_NONE, -1, NO_TIME
                    break
                if int(t[b]) <= bound or not guard:
                    end, x, m = END_CUT, -1, NO_TIME
                    break
                b = u
            for z in reversed(chain):
                known[z] = True
                k_end[z], k_x[z], k_m[z] = end, x, m
                m = min(m, int(t[z]))
        return {"end": k_end[ent].copy(), "x": k_x[ent].copy(), "m": k_m[ent].copy(),
                "peak_rss_bytes": peak_rss_bytes()}


def rank_segments(path: str, graph_file: str | None, pieces: np.ndarray, foreign: dict[int, tuple[int, int]],
                  rank: int, shift: int, node_offset: int, waits: dict[str, np.ndarray], prefix: bool = True
                  ) -> tuple[list[list], int]:
    """Pass 3, in a worker: the path segments (:class:`~opgraph.analysis.crossrank.
    CrossSegment`, job node ids, aligned ns) of each piece of the walk on this rank.

    ``pieces`` is ``(k, 3)``: entry boundary, the time the walk reaches it, the window
    start (ns, own clock); ``foreign`` maps each exit boundary to (the start of the other
    rank's kernel that arrived last, own clock; its job node id). The collective edge
    into an exit (a step from another rank's kernel start) is the model's extra edge:
    ``gpu_comm`` owned by the kernel, its source named by the other rank's node id.
    ``waits``: the rank's collective kernels (``pos``, ``wait_end`` own clock,
    ``blame``, ``coll_id``). ``shift`` (ns) takes the rank's clock to the aligned one.
    ``prefix``: lanes are named ``rank r ...`` (as in a job graph with a rank other than 0).
    Returns the segments of each piece and this worker's peak RSS (bytes)."""
    with gc_paused():
        tg = _rank_graph(path, graph_file)
        a = tg.arrays
        d = boundary_dag(tg, a)
        ne = len(d.src)
        exits = {x: f[0] for x, f in foreign.items()}
        walks = [walk_back(d, int(e), int(ws), int(c), exits) for e, c, ws in np.asarray(pieces).tolist()]
        # the collective edges into the exits walked, as extra edges of the model
        fb = np.array([s[2] for w in walks for s in w if s[0] == EXIT_EDGE], dtype=np.int64)
        k = len(fb)
        d2 = dataclasses.replace(
            d, src=np.concatenate([d.src, fb - 1]), dst=np.concatenate([d.dst, fb]),
            role=np.concatenate([d.role, np.full(k, -1, d.role.dtype)]),
            cat=np.concatenate([d.cat, np.full(k, CAT["gpu_comm"], d.cat.dtype)]),
            own=np.concatenate([d.own, fb // 2]), inferred=np.concatenate([d.inferred, np.zeros(k, bool)]))
        rank_of = np.full(a.n, rank, dtype=np.int64)
        wait_end = np.full(a.n, -1, dtype=np.int64)
        blame = np.full(a.n, -1, dtype=np.int64)
        coll_of = np.full(a.n, -1, dtype=np.int64)
        p = waits["pos"]
        wait_end[p], blame[p], coll_of[p] = waits["wait_end"], waits["blame"], waits["coll_id"]
        out: list[list] = []
        j = ne
        for w in walks:
            steps, fnode = [], {}
            for e, u, b, t0, t1 in w:
                if e == EXIT_EDGE:  # from the other rank's kernel (its own start stands in as the source)
                    e, u, fnode[b // 2] = j, b - 1, foreign[b][1]
                    j += 1
                steps.append((e, u, b, t0, t1))
            raw = segment_columns(d2, steps)
            table = segment_table(d2, raw)
            c = table.cols
            for col in ("eid", "from_eid", "to_eid"):
                v = c[col]
                c[col] = np.where(v >= 0, v + node_offset, v)
            if fnode:
                # the collective edge's source is the other rank's kernel
                is_f = (raw["role"] == -1) & (raw["src"] >= 0)
                c["from_eid"] = np.where(is_f, [fnode.get(int(x), -1) for x in raw["dst"].tolist()], c["from_eid"])
            if prefix:
                c["lane"] = np.array([f"rank {rank} {x}" if x else x for x in c["lane"].tolist()], dtype=object)
            out.append(cross_segments(d2, raw, table, rank_of, wait_end, blame, coll_of, shift))
        return out, peak_rss_bytes()


def crossrank_from_traces(inputs: Sequence[str] | str, ranks: Sequence[int] | None = None, *,
                          workers: int | None = None, scheduler: str | None = None, cache_dir: str | None = None,
                          progress: Callable[[str, int, int], None] | None = None) -> CrossRankResult:
    """Cross-rank critical path of every step of a job, from its rank traces (module doc).

    Parameters
    ----------
    inputs : str or sequence of str
        A directory, a glob pattern or the rank files (traces or saved single-rank graphs).
    ranks : sequence of int, optional
        Restrict the analysis to these ranks (default: every rank); waits for the others
        become ``gpu_comm_wait``, as with ``--ranks`` on a job graph.
    workers, scheduler
        The embedded process pool's size, or a Dask scheduler address (``tcp://host:8786``).
    cache_dir : str, optional
        Where pass 1 keeps each rank's built graph for passes 2 and 3 (default: a temporary
        directory with the process pool, removed at the end; none with Dask, whose workers
        then build each rank again from its trace).
    progress : callable, optional
        ``progress(pass name, done, total)``.

    Returns
    -------
    CrossRankResult
        As :func:`~opgraph.analysis.crossrank.crossrank_critical_path` on the job graph of
        the same files (ns; node ids of that job graph).

    Raises
    ------
    OpgraphInputError
        A rank's file is bad, or two files hold one rank.
    CircularPath
        The critical predecessors run in a circle across ranks (collectives matched in
        an order the ranks contradict), as the job graph's walk finds too.
    ValueError
        ``ranks`` names a rank the job does not have, or none.
    """
    files = discover(list(inputs) if not isinstance(inputs, str) else [inputs]).files
    if cache_dir is None and scheduler is None:
        with tempfile.TemporaryDirectory(prefix="opgraph-ranks-") as tmp:
            return _crossrank(files, ranks, workers, scheduler, tmp, progress)
    return _crossrank(files, ranks, workers, scheduler, cache_dir, progress)


def _crossrank(files: list[str], ranks: Sequence[int] | None, workers: int | None, scheduler: str | None,
               cache_dir: str | None, progress: Callable[[str, int, int], None] | None) -> CrossRankResult:
    def prog(name: str) -> Callable[[int, int], None]:
        return (lambda d, n: progress(name, d, n)) if progress else (lambda _d, _n: None)

    gfiles = [os.path.join(cache_dir, f"rank-file-{i}.gpickle") if cache_dir else None for i in range(len(files))]
    clock = time.perf_counter()
    p1: list[RankPathTables] = run(rank_path_tables, list(zip(files, gfiles)), workers=workers, scheduler=scheduler,
                                   progress=prog("reading ranks"))
    t_tables = time.perf_counter() - clock
    check_ranks([(x.result.rank, x.result.file) for x in p1])
    p1 = sorted(p1, key=lambda x: int(x.result.rank))  # type: ignore[arg-type]
    by_rank = {int(x.result.rank): x for x in p1}  # type: ignore[arg-type]
    all_ranks = sorted(by_rank)
    wanted, _summarised, notes = select_ranks(ranks, all_ranks, all_ranks)
    coll, al, _warnings = matched_collectives([x.result for x in p1])
    offs = {r: int(al.offsets_ns[r]) for r in all_ranks}
    # job node ids and job boundary order: ranks in order, each one's nodes in its own order
    node_off, pos_off = {}, {}
    no = po = 0
    for r in all_ranks:
        node_off[r], pos_off[r] = no, po
        no += int(by_rank[r].result.n_events)
        po += by_rank[r].n_nodes
    want = np.zeros(max(all_ranks) + 1, dtype=bool)
    want[wanted] = True

    rk = coll["rank"].to_numpy(np.int64)
    # per collective-kernel row: local position, own pick at its end (aligned, job boundary)
    pos_col = np.full(len(coll), -1, dtype=np.int64)
    o_arr = np.full(len(coll), -1, dtype=np.int64)
    o_pri = np.full(len(coll), -1, dtype=np.int64)
    o_src = np.full(len(coll), -1, dtype=np.int64)
    for r in all_ranks:
        x = by_rank[r]
        rows = np.flatnonzero(rk == r)
        if not len(rows):
            continue
        i = key_positions(x.result.collectives["node"].to_numpy(np.int64), coll["node"].to_numpy(np.int64)[rows])
        pos_col[rows] = x.coll_pos[i]
        o_arr[rows] = np.where(x.own_arrive[i] >= 0, x.own_arrive[i] + offs[r], -1)
        o_pri[rows] = x.own_prio[i]
        o_src[rows] = np.where(x.own_src[i] >= 0, x.own_src[i] + 2 * pos_off[r], -1)
    gpos = pos_col + np.array([pos_off[r] for r in rk.tolist()], dtype=np.int64)
    gnode = coll["node"].to_numpy(np.int64) + np.array([node_off[r] for r in rk.tolist()], dtype=np.int64)
    m = (coll["coll_id"].to_numpy(np.int64) >= 0) & want[rk] & (pos_col >= 0)
    win = last_arrivals(coll["coll_id"].to_numpy(np.int64)[m], coll["ts"].to_numpy(np.int64)[m],
                        coll["end"].to_numpy(np.int64)[m], 2 * gpos[m], o_arr[m], o_pri[m], o_src[m])
    # per analysed rank, its exits: local end boundary -> (rank, local start boundary, job node id and
    # aligned start of the other rank's kernel that arrived last)
    idx = np.flatnonzero(m)
    c_ts = coll["ts"].to_numpy(np.int64)
    exits: dict[int, dict[int, tuple[int, int, int, int]]] = {r: {} for r in wanted}
    for i, j in zip(idx[win >= 0].tolist(), idx[win[win >= 0]].tolist()):
        r, q = int(rk[i]), int(rk[j])
        exits[r][int(2 * pos_col[i] + 1)] = (q, int(2 * pos_col[j]), int(gnode[j]), int(c_ts[j]))

    # windows of the analysed ranks (aligned), the slowest rank's per step
    wrows = []
    for r in wanted:
        w = by_rank[r].windows.copy()
        w["ts"] += offs[r]
        w["end"] += offs[r]
        w.insert(0, "rank", r)
        wrows.append(w)
    wins = pd.concat(wrows, ignore_index=True).sort_values(["step", "rank"], kind="stable").reset_index(drop=True)
    steps_sel = []
    for stepno, grp in wins.groupby("step", sort=True):
        wi = int(np.argmax((grp["end"] - grp["ts"]).to_numpy(np.int64)))  # first max: lowest rank
        steps_sel.append((int(stepno), grp, grp.iloc[wi]))
    w_ts = np.array([int(row["ts"]) for _s, _g, row in steps_sel], dtype=np.int64)
    w_end = np.array([int(row["end"]) for _s, _g, row in steps_sel], dtype=np.int64)

    # pass 2, in rounds: each entry's chain to its end; a round asks again for the chains a
    # window needs further back than their bound (rare: a window reaching an entry it starts after)
    summ: dict[tuple[int, int], tuple[int, int, int, int]] = {}  # (rank, entry) -> (bound, end, x, m) own clock
    want_b: dict[tuple[int, int], int] = {}
    for _s, _g, row in steps_sel:
        if int(row["sink"]) >= 0:
            r = int(row["rank"])
            want_b[(r, 2 * int(row["sink"]) + 1)] = int(row["ts"]) - offs[r]
    ent = [(q, fsrc, fts) for r in wanted for q, fsrc, _n, fts in exits[r].values()]
    f_ts = np.array([x[2] for x in ent], dtype=np.int64)
    for (q, fsrc, _t), b in zip(ent, entry_bounds(f_ts, w_ts, w_end).tolist()):
        want_b[(q, fsrc)] = min(want_b.get((q, fsrc), b - offs[q]), b - offs[q])
    n_chain_tasks = peak = rounds = 0
    clock = time.perf_counter()
    plans: list[list[tuple[int, int, int, int]]] = []
    while True:
        rounds += 1
        ask: dict[int, list[tuple[int, int]]] = {}
        for (r, e), bnd in want_b.items():
            have = summ.get((r, e))
            if have is None or (have[1] == END_CUT and have[0] > bnd):
                ask.setdefault(r, []).append((e, bnd))
        if not ask and rounds > 1:  # pragma: no cover - a bound lowered each round, so never
            raise RuntimeError("cross-rank walk: a chain was asked for again with no lower bound")
        if ask:
            rs = sorted(ask)
            got = run(rank_chains, [(by_rank[r].result.file, by_rank[r].graph_file,
                                     np.array([e for e, _b in ask[r]], np.int64),
                                     np.array([b for _e, b in ask[r]], np.int64),
                                     np.array(sorted(exits[r]), np.int64)) for r in rs],
                      workers=workers, scheduler=scheduler, progress=prog("walking ranks"))
            n_chain_tasks += len(rs)
            peak = max([peak] + [int(g["peak_rss_bytes"]) for g in got])
            for r, g in zip(rs, got):
                for (e, bnd), end, x, mm in zip(ask[r], g["end"].tolist(), g["x"].tolist(), g["m"].tolist()):
                    summ[(r, e)] = (bnd, end, x, mm)
        plans, missing = [], {}
        for _s, _g, row in steps_sel:
            plans.append(_stitch(row, summ, exits, offs, missing))
        if not missing:
            break
        want_b.update(missing)

    t_chains = time.perf_counter() - clock
    clock = time.perf_counter()
    # pass 3: each rank's pieces of the walks to segments
    waits = kernel_waits(coll)
    pieces_of: dict[int, list[tuple[int, int, int]]] = {r: [] for r in wanted}
    where: list[list[tuple[int, int]]] = []
    for plan in plans:
        w_idx = []
        for r, e, c, ws in plan:
            w_idx.append((r, len(pieces_of[r])))
            pieces_of[r].append((e, c, ws))
        where.append(w_idx)
    seg_ranks = [r for r in wanted if pieces_of[r]]
    args = []
    for r in seg_ranks:
        w = waits[waits["rank"] == r]
        i = key_positions(by_rank[r].result.collectives["node"].to_numpy(np.int64), w["node"].to_numpy(np.int64))
        wd = {"pos": by_rank[r].coll_pos[i],
              "wait_end": w["ts"].to_numpy(np.int64) - offs[r] + w["wait"].to_numpy(np.int64),
              "blame": w["last_rank"].to_numpy(np.int64), "coll_id": w["coll_id"].to_numpy(np.int64)}
        foreign = {x: (fts - offs[r], fn) for x, (_q, _f, fn, fts) in exits[r].items()}
        args.append((by_rank[r].result.file, by_rank[r].graph_file, np.array(pieces_of[r], np.int64), foreign, r,
                     offs[r], node_off[r], wd, any(x != 0 for x in all_ranks)))
    p3 = run(rank_segments, args, workers=workers, scheduler=scheduler, progress=prog("naming segments"))
    segs = {r: x[0] for r, x in zip(seg_ranks, p3)}
    stats = {"tables": {"tasks": len(p1), "wall_s": round(t_tables, 2),
                        "worker_peak_rss_bytes": max((x.peak_rss_bytes for x in p1), default=0)},
             "chains": {"tasks": n_chain_tasks, "rounds": rounds, "entries": len(summ),
                        "wall_s": round(t_chains, 2), "worker_peak_rss_bytes": peak},
             "segments": {"tasks": len(p3), "wall_s": round(time.perf_counter() - clock, 2),
                          "worker_peak_rss_bytes": max((x[1] for x in p3), default=0)}}
    comm = step_waits(coll, waits, set(wanted))
    results: list[StepPath] = []
    for (stepno, grp, row), w_idx in zip(steps_sel, where):
        path: list = []
        for r, k in reversed(w_idx):
            path.extend(segs[r][k])
        named = [x for x in grp["name"].tolist() if isinstance(x, str) and x]
        name = named[0] if named else (f"step {stepno}" if stepno >= 0 else "all")
        rw = [{"rank": int(rr), "start_ns": int(s0), "end_ns": int(e0)}
              for rr, s0, e0 in zip(grp["rank"].tolist(), grp["ts"].tolist(), grp["end"].tolist())]
        results.append(StepPath(name, None, int(row["ts"]), int(row["end"]), path, step=int(stepno),
                                window_rank=int(row["rank"]), rank_windows=rw, comm_wait=comm.get(int(stepno), {})))
    return CrossRankResult(results, wanted, [], notes, stats)


def _stitch(row: pd.Series, summ: dict[tuple[int, int], tuple[int, int, int, int]],
            exits: dict[int, dict[int, tuple[int, int, int, int]]], offs: dict[int, int],
            missing: dict[tuple[int, int], int]) -> list[tuple[int, int, int, int]]:
    """The pieces of one window's walk, latest first: ``(rank, entry boundary, time the
    walk reaches it, window start)`` (own clock of the rank). A chain whose summary was
    cut above this window's start goes in ``missing`` (entry -> the bound needed). Raises
    :class:`~opgraph.analysis.critical_path.CircularPath` when the walk comes back to an
    entry at the same time (a circle through other ranks)."""
    plan: list[tuple[int, int, int, int]] = []
    if int(row["sink"]) < 0:
        return plan
    ws = int(row["ts"])
    r, e, c = int(row["rank"]), 2 * int(row["sink"]) + 1, int(row["end"])
    node = -1
    seen: set[tuple[int, int, int]] = set()
    while True:
        s = summ.get((r, e))
        wl = ws - offs[r]
        if s is None or (s[1] == END_CUT and s[0] > wl):
            missing[(r, e)] = min(missing.get((r, e), wl), wl)
            return plan
        if (r, e, c) in seen:
            raise CircularPath(f"the critical path runs in a circle through rank {r}'s collective kernel (event "
                               f"{node}) at {c / 1000.0:.3f} us: the recorded and matched dependencies contradict "
                               "each other")
        seen.add((r, e, c))
        plan.append((r, e, c - offs[r], wl))
        bound, end, x, m = s
        if end != END_EXIT:
            return plan
        cx = c if m == NO_TIME else min(c, m + offs[r])
        if cx <= ws:
            return plan
        q, fsrc, node, fts = exits[r][x]
        tu = min(fts, cx)
        if tu <= ws:
            return plan
        r, e, c = q, fsrc, tu


def entry_bounds(t: np.ndarray, ws: np.ndarray, we: np.ndarray) -> np.ndarray:
    """How far back (ns, aligned) the chain from an entry at time ``t`` is first walked:
    the earliest start of the windows ``[ws, we]`` holding it, else the latest window
    start before it, else ``t`` itself. A window whose walk reaches the entry starts before
    it, and almost always holds it (a clamp can bring a walk to an entry later than its
    window's end); a window starting earlier asks again (:func:`_stitch`)."""
    out = np.full(len(t), np.iinfo(np.int64).max, dtype=np.int64)
    if not len(t):
        return out
    o = np.argsort(t, kind="stable")
    ts = t[o]
    b = out.copy()
    for s, e in zip(ws.tolist(), we.tolist()):
        lo, hi = int(np.searchsorted(ts, s, "right")), int(np.searchsorted(ts, e, "right"))
        if hi > lo:
            b[lo:hi] = np.minimum(b[lo:hi], s)
    none = b == np.iinfo(np.int64).max
    if none.any():
        st = np.sort(ws)
        k = np.searchsorted(st, ts[none], "left") - 1
        b[none] = np.where(k >= 0, st[np.maximum(k, 0)], ts[none])
    out[o] = b
    return out


def last_arrivals(coll_id: np.ndarray, ts: np.ndarray, end: np.ndarray, src: np.ndarray, o_arr: np.ndarray,
                  o_pri: np.ndarray, o_src: np.ndarray) -> np.ndarray:
    """For every collective kernel (rows; aligned ns), the row of the other participant
    whose start is its end's critical predecessor in the job model, or -1 when its own
    dependency (arrival ``o_arr``, priority ``o_pri``, job source boundary ``o_src``; -1:
    none) wins. The model's pick: the latest arrival ``min(start of u, end)``, then the
    priority (:data:`~opgraph.analysis.crossrank.COLLECTIVE_PRIO` for the collective
    edges), then the later source boundary (``src``, the start boundaries in job order)."""
    n = len(coll_id)
    out = np.full(n, -1, dtype=np.int64)
    if n < 2:
        return out
    o = np.lexsort((src, ts, coll_id))  # per collective by (start, boundary): the last is the latest
    g = coll_id[o]
    last = np.ones(n, dtype=bool)
    last[:-1] = g[1:] != g[:-1]
    top1 = np.full(n, -1, dtype=np.int64)
    top2 = np.full(n, -1, dtype=np.int64)
    li = np.flatnonzero(last)
    first = np.append(0, li[:-1] + 1)
    size = li - first + 1
    top1_of = o[li]
    top2_of = np.where(size >= 2, o[np.maximum(li - 1, 0)], -1)
    gi = np.repeat(np.arange(len(li)), size)  # group of each sorted position
    top1[o] = top1_of[gi]
    top2[o] = top2_of[gi]
    me = np.arange(n)
    best = np.where(top1 == me, top2, top1)  # the latest other start
    ok = best >= 0
    bb = np.maximum(best, 0)
    # a start at or after the kernel's end arrives at the end: the ties go to the latest source boundary
    late = ok & (ts[bb] >= end)
    at = np.empty(n, dtype=np.int64)
    at[o] = np.arange(n)
    for i in np.flatnonzero(late).tolist():
        k = gi[at[i]]
        grp = o[first[k]:li[k] + 1]
        oth = grp[grp != i]
        arr = np.minimum(ts[oth], end[i])
        best[i] = oth[np.lexsort((src[oth], arr))[-1]]
    bb = np.maximum(best, 0)
    fa = np.minimum(ts[bb], end)
    fs = src[bb]
    wins = ok & ((o_src < 0) | (fa > o_arr) | ((fa == o_arr) & ((COLLECTIVE_PRIO > o_pri)
                                                               | ((COLLECTIVE_PRIO == o_pri) & (fs > o_src)))))
    out[wins] = best[wins]
    return out
