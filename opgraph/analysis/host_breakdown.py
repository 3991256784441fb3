"""The host breakdown (seed-algorithms.md §1.4), over all occurrences: the CPU hierarchy
(``nest`` edges) aggregated by *name path* (the names from the thread's root down to the
event), level by level, per thread (:func:`host_breakdown`), and its JSON tree
(:func:`host_breakdown_doc`).

Each event's time is its range clipped to its parent's (and, for roots, to the analysis
window), minus the part an earlier sibling already covered (only non-zero when ranges
bleed by rounding), minus data loading. Hence at every level the children of an entry
never exceed it, and ``Σ children + Others + Unaccounted = 100 %`` of the parent exactly.
The root of each thread is the host runtime: window length - data loading (the seed's
step time).

All times are ns inside; the document is in µs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

import numpy as np
import pandas as pd

from opgraph.model.trace_graph import TraceGraph
from opgraph.analysis.breakdown_tree import OTHERS, UNACCOUNTED, doc_source, tree_entry
from opgraph.analysis.graph_frame import GraphFrame, frame_of
from opgraph.analysis.kind_codes import K_CPU_OP
from opgraph.analysis.op_hierarchy import host_hierarchy, input_dims
from opgraph.analysis.window import AnalysisWindow, analysis_window
from opgraph.ingest.steps import STEP_RE

__all__ = ["HostBreakdown", "host_breakdown", "host_breakdown_doc"]


def _norm_names(names: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Factorize names, folding ``ProfilerStep#N`` into ``ProfilerStep#*``."""
    codes, uniq = pd.factorize(names)
    uniq = np.array([("ProfilerStep#*" if isinstance(u, str) and STEP_RE.match(u) else u) for u in uniq],
                    dtype=object)
    codes2, uniq2 = pd.factorize(uniq)
    return codes2[codes].astype(np.int64), np.asarray(uniq2, dtype=object)


def _segmented_cummax(values: np.ndarray, group: np.ndarray) -> np.ndarray:
    """Running max of ``values`` restarting at each change of ``group`` (sorted by group)."""
    if len(values) <= 1:
        return values.copy()
    vmin = int(values.min())
    span = int(values.max()) - vmin + 1
    first = np.empty(len(group), dtype=bool)
    first[0] = True
    first[1:] = group[1:] != group[:-1]
    g = np.cumsum(first) - 1
    if (int(g[-1]) + 1) * span < 2 ** 62:
        # offset each group above the previous one, so one plain cummax never crosses groups
        off = g * span
        return np.maximum.accumulate(values - vmin + off) - off + vmin
    return pd.Series(values).groupby(g, sort=False).cummax().to_numpy(np.int64)


@dataclass
class HostBreakdown:
    """Result of :func:`host_breakdown`.

    ``paths``: one row per name path (index = path id) with ``parent`` (path id, or -1 for
    the roots of a thread), ``lane``, ``depth``, ``name``, ``time_ns`` (sum over
    occurrences), ``count`` (occurrences in scope). ``threads``: one row per thread
    (``lane``, ``pid``, ``tid``, ``time_ns`` = host runtime, ``busy_ns`` = Σ of its root
    paths). ``event_path``: path id of every frame position (-1 for non-host nodes);
    ``in_scope``: whether the event counts (inside the window, not data loading).
    ``data_loading``: per marker name, ``count`` and ``time_ns``.
    """

    frame: GraphFrame
    window: AnalysisWindow
    paths: pd.DataFrame
    threads: pd.DataFrame
    event_path: np.ndarray
    event_time: np.ndarray
    in_scope: np.ndarray
    data_loading: pd.DataFrame
    parent: np.ndarray


def host_breakdown(G: TraceGraph | GraphFrame, window: AnalysisWindow | None = None, step_regex: str | None = None,
                   data_markers: Iterable[str] | None = None, include_python: bool = False) -> HostBreakdown:
    """Aggregate the CPU hierarchy by name path, per thread, over all occurrences.

    Parameters
    ----------
    G : TraceGraph or GraphFrame
    window : AnalysisWindow, optional
        Default :func:`~opgraph.analysis.window.analysis_window` with ``step_regex``
        and ``data_markers``.
    step_regex, data_markers : optional
        See :func:`~opgraph.analysis.steps.find_iterations`.
    include_python : bool
        Keep ``python_function`` ranges in the hierarchy (default False: they are dropped
        and the other host ranges re-nested among themselves, see :func:`~opgraph.analysis.op_hierarchy.host_hierarchy`).

    Returns
    -------
    HostBreakdown
        Times in ns.
    """
    f = frame_of(G)
    w = window if window is not None else analysis_window(f, step_regex, data_markers)
    n = len(f)
    hh = host_hierarchy(f, include_python)
    host, parent, levels = hh.host, hh.parent, hh.levels
    name_code, names = _norm_names(f.name)
    hp = np.flatnonzero(host)

    seg_lo = np.zeros(n, dtype=np.int64)
    seg_hi = np.zeros(n, dtype=np.int64)
    scope = np.zeros(n, dtype=bool)
    in_dl = np.zeros(n, dtype=bool)
    in_dl[w.data_nodes] = True
    path = np.full(n, -1, dtype=np.int64)
    n_names = max(len(names), 1)
    lanes = np.unique(f.lane[hp]) if len(hp) else np.empty(0, np.int64)
    lane_off = int(lanes.max()) + 1 if len(lanes) else 0
    path_parent: list[np.ndarray] = []
    path_name: list[np.ndarray] = []
    path_depth: list[np.ndarray] = []
    path_lane: list[np.ndarray] = []
    next_id = 0
    for d, lvl in enumerate(levels):
        p = parent[lvl]
        if d == 0:
            lo = np.full(len(lvl), w.start, dtype=np.int64)
            hi = np.full(len(lvl), w.end, dtype=np.int64)
            group = f.lane[lvl]
            pscope = np.ones(len(lvl), dtype=bool)
            ppath = f.lane[lvl]  # pseudo path ids 0..lane_off-1 for thread roots
        else:
            lo, hi = seg_lo[p], seg_hi[p]
            group = p + lane_off
            pscope = scope[p]
            in_dl[lvl] |= in_dl[p]
            ppath = path[p] + lane_off
        a = np.maximum(f.ts[lvl], lo)
        b = np.maximum(np.minimum(f.end[lvl], hi), a)
        # exclusive segments among siblings (sorted by start, longest first)
        o = np.lexsort((-b, a, group))
        go, ao, bo = group[o], a[o], b[o]
        run = _segmented_cummax(bo, go)
        prev = np.empty_like(run)
        if len(run):
            prev[0] = ao[0]
            prev[1:] = run[:-1]
            first = np.empty(len(go), dtype=bool)
            first[0] = True
            first[1:] = go[1:] != go[:-1]
            prev[first] = ao[first]
        s_lo = np.maximum(ao, prev)
        s_hi = np.maximum(bo, s_lo)
        li = lvl[o]
        seg_lo[li], seg_hi[li] = s_lo, s_hi
        zero = f.dur[li] == 0
        sc = pscope[o] & ((s_hi > s_lo) | (zero & (f.ts[li] >= lo[o]) & (f.ts[li] < hi[o]) & (f.ts[li] >= s_lo)))
        scope[li] = sc & ~in_dl[li]
        # path ids
        key = ppath * n_names + name_code[lvl]
        if len(key) == 1:
            codes, uniq = np.zeros(1, dtype=np.int64), key
        else:
            codes, uniq = pd.factorize(key)
        path[lvl] = next_id + codes
        path_parent.append(uniq // n_names - lane_off if d else np.full(len(uniq), -1, dtype=np.int64))
        path_name.append(uniq % n_names)
        path_depth.append(np.full(len(uniq), d))
        # lane of a path: any member's lane
        ln = np.empty(len(uniq), dtype=np.int64)
        ln[codes] = f.lane[lvl]
        path_lane.append(ln)
        next_id += len(uniq)
    t = np.zeros(n, dtype=np.int64)
    hs = np.flatnonzero(scope)
    if len(hs):
        t[hs] = (seg_hi[hs] - seg_lo[hs]) - w.data_loading.covered(seg_lo[hs], seg_hi[hs])
    n_paths = next_id
    if n_paths:
        pp = np.concatenate(path_parent).astype(np.int64)
        pn = np.concatenate(path_name).astype(np.int64)
        pd_ = np.concatenate(path_depth).astype(np.int64)
        pl = np.concatenate(path_lane).astype(np.int64)
    else:
        pp = pn = pd_ = pl = np.empty(0, np.int64)
    time_by_path = np.bincount(path[hs], weights=t[hs], minlength=n_paths) if len(hs) else np.zeros(n_paths)
    count_by_path = np.bincount(path[hs], minlength=n_paths) if len(hs) else np.zeros(n_paths, np.int64)
    paths = pd.DataFrame({"parent": pp, "lane": pl, "depth": pd_, "name": names[pn] if n_paths else [],
                          "time_ns": np.rint(time_by_path).astype(np.int64),
                          "count": count_by_path.astype(np.int64)})
    # threads
    rt = int(w.host_runtime_ns)
    # one pass per column (grouped by lane), not one scan of all host events per lane
    hl = f.lane[hp]
    first_pos = pd.Series(hp).groupby(hl, sort=True).first()
    pos = first_pos.reindex(lanes).to_numpy(np.int64) if len(lanes) else np.empty(0, np.int64)
    roots = paths[paths["depth"] == 0]
    busy = roots["time_ns"].groupby(roots["lane"].to_numpy()).sum()
    events = pd.Series(scope[hp].astype(np.int64)).groupby(hl).sum()
    threads = pd.DataFrame({"lane": lanes.astype(np.int64), "pid": f.pid[pos] if len(pos) else [],
                            "tid": f.tid[pos] if len(pos) else [], "time_ns": rt,
                            "busy_ns": busy.reindex(lanes, fill_value=0).to_numpy(np.int64) if len(lanes) else [],
                            "events": events.reindex(lanes, fill_value=0).to_numpy(np.int64) if len(lanes) else []},
                           columns=["lane", "pid", "tid", "time_ns", "busy_ns", "events"])
    threads = threads[threads["events"] > 0].sort_values("busy_ns", ascending=False).reset_index(drop=True)
    # data loading, reported apart
    dn = w.data_nodes
    if len(dn):
        # outermost markers only (a marker inside another is not counted twice)
        outer = dn[~np.isin(parent[dn], dn)]
        a = np.clip(f.ts[outer], w.start, w.end)
        b = np.clip(f.end[outer], w.start, w.end)
        dl = pd.DataFrame({"name": f.name[outer], "time_ns": b - a, "count": 1})
        dl = dl[(b > a)].groupby("name", as_index=False).agg(count=("count", "sum"), time_ns=("time_ns", "sum"))
    else:
        dl = pd.DataFrame(columns=["name", "count", "time_ns"])
    return HostBreakdown(f, w, paths, threads, path, t, scope, dl, parent)


def _shapes_by_path(hb: HostBreakdown, wanted: np.ndarray, max_shapes: int) -> dict[int, tuple[int, list]]:
    """Distinct input shapes of the events of the ``wanted`` paths: {path: (n, [(dims, count)])}."""
    f = hb.frame
    m = hb.in_scope & np.isin(hb.event_path, wanted) & (f.kind == K_CPU_OP)
    pos = np.flatnonzero(m)
    if not len(pos):
        return {}
    dims = [input_dims(a) if isinstance(a, dict) else "-" for a in f.args_list(pos)]
    df = pd.DataFrame({"p": hb.event_path[pos], "d": dims})
    vc = df.groupby(["p", "d"]).size().reset_index(name="c").sort_values(["p", "c", "d"], ascending=[True, False, True])
    out: dict[int, tuple[int, list]] = {}
    vp = vc["p"].to_numpy(np.int64)
    vd = vc["d"].tolist()
    vcnt = vc["c"].tolist()
    cut = (np.flatnonzero(np.diff(vp)) + 1).tolist()
    for a, b in zip([0] + cut, cut + [len(vp)]):  # contiguous runs of one path (sorted by p)
        h = min(b, a + max_shapes)
        out[int(vp[a])] = (b - a, [(str(d), int(c)) for d, c in zip(vd[a:h], vcnt[a:h])])
    return out


def _thread_names(f: GraphFrame) -> dict[tuple[Any, Any], str]:
    ev = f.G.graph.get("events")
    if not isinstance(ev, pd.DataFrame) or "kind" not in ev:
        return {}
    from opgraph.analysis.info import thread_names as tn
    return tn(ev)


def host_breakdown_doc(hb: HostBreakdown, depth: int = 3, top: int = 5, max_shapes: int = 3) -> dict[str, Any]:
    """The host breakdown as a JSON-ready tree (schemas/breakdown.schema.json), in µs.

    Parameters
    ----------
    hb : HostBreakdown
    depth : int
        Levels shown below each thread (1 = the thread's roots only).
    top : int
        Entries shown per parent; the rest are lumped into ``Others``.
    max_shapes : int
        Distinct input shapes listed per entry (all are counted).

    Returns
    -------
    dict
        ``threads[*].entries`` are trees of ``{name, kind, time_us, percent, count,
        shapes_distinct, shapes, children}``; at every level the percentages (entries +
        ``Others`` + ``Unaccounted``) sum to 100.
    """
    paths = hb.paths
    pkey = np.where(paths["parent"] >= 0, paths["parent"], -1 - paths["lane"])
    child_sum = pd.Series(paths["time_ns"].to_numpy()).groupby(pkey).sum()
    shown = paths[(paths["depth"] < depth) & (paths["count"] > 0)].assign(key=pkey[(paths["depth"] < depth)
                                                                                   & (paths["count"] > 0)])
    shown = shown.sort_values(["key", "time_ns", "count", "name"], ascending=[True, False, False, True],
                              kind="stable")
    # per parent key: the top rows as plain tuples and the rest as (time, count, n); one
    # sorted pass, no DataFrame per group (10^5 threads would mean 10^5 of them)
    sk = shown["key"].to_numpy(np.int64)
    s_id = shown.index.to_numpy(np.int64)
    s_name = shown["name"].to_numpy(object)
    s_t = shown["time_ns"].to_numpy(np.int64)
    s_c = shown["count"].to_numpy(np.int64)
    bounds = np.flatnonzero(np.diff(sk)) + 1 if len(sk) else np.empty(0, np.int64)
    starts = np.concatenate(([0], bounds)) if len(sk) else np.empty(0, np.int64)
    ends = np.concatenate((bounds, [len(sk)])) if len(sk) else np.empty(0, np.int64)
    children: dict[int, tuple[list[tuple[int, Any, int, int]], tuple[int, int, int]]] = {}
    want = []
    for a, b in zip(starts.tolist(), ends.tolist()):
        h = min(b, a + top)
        head = list(zip(s_id[a:h].tolist(), s_name[a:h].tolist(), s_t[a:h].tolist(), s_c[a:h].tolist()))
        children[int(sk[a])] = (head, (int(s_t[h:b].sum()), int(s_c[h:b].sum()), b - h))
        want.extend(s_id[a:h].tolist())
    shapes = _shapes_by_path(hb, np.array(want, dtype=np.int64), max_shapes) if want else {}

    def build(key: int, parent_ns: int, lvl: int) -> list[dict[str, Any]]:
        g = children.get(key)
        out: list[dict[str, Any]] = []
        covered = 0
        if g is not None:
            head, (rest_t, rest_c, rest_n) = g
            for pid_, name, t_ns, cnt in head:
                e = tree_entry(str(name), "entry", t_ns, parent_ns, cnt)
                ns, lst = shapes.get(pid_, (0, []))
                e["shapes_distinct"] = ns
                e["shapes"] = [{"dims": d, "count": c} for d, c in lst]
                if lvl + 1 < depth:
                    e["children"] = build(pid_, t_ns, lvl + 1)
                out.append(e)
                covered += t_ns
            if rest_n:
                e = tree_entry(OTHERS, "others", rest_t, parent_ns, rest_c)
                e["entries"] = rest_n
                out.append(e)
                covered += rest_t
        else:
            covered = int(child_sum.get(key, 0))
        un = parent_ns - covered
        if un != 0 or not out:
            out.append(tree_entry(UNACCOUNTED, "unaccounted", un, parent_ns, 0))
        return out

    threads = []
    tnames = _thread_names(hb.frame)
    for r in hb.threads.itertuples(index=False):
        threads.append({"pid": r.pid, "tid": r.tid, "name": tnames.get((r.pid, r.tid)), "time_us": r.time_ns / 1e3, "busy_us": r.busy_ns / 1e3,
                        "events": int(r.events), "entries": build(-1 - int(r.lane), int(r.time_ns), 0)})
    w = hb.window
    dl = [{"name": str(r.name), "count": int(r.count), "time_us": r.time_ns / 1e3}
          for r in hb.data_loading.itertuples(index=False)]
    return {"mode": "host", "source": doc_source(hb.frame), "window": w.to_dict(), "depth": depth, "top": top,
            "data_loading": {"markers": list(w.data_markers), "time_us": w.data_loading_ns / 1e3,
                             "percent_of_window": 100.0 * w.data_loading_ns / w.length_ns if w.length_ns else 0.0,
                             "by_name": dl},
            "threads": threads}
