"""Host and device time breakdowns (seed-algorithms.md §1.4, §1.5), over all occurrences.

Host: the CPU hierarchy (``nest`` edges) aggregated by *name path* (the names from the
thread's root down to the event), level by level, per thread. Each event's time is its
range clipped to its parent's (and, for roots, to the analysis window), minus the part an
earlier sibling already covered (only non-zero when ranges bleed by rounding), minus data
loading. Hence at every level the children of an entry never exceed it, and
``Σ children + Others + Unaccounted = 100 %`` of the parent exactly. The root of each
thread is the host runtime: window length - data loading (the seed's step time).

Device: per (device, stream), each device activity's time (clipped to the window) is
attributed to the CPU path of the op that launched it (``launch`` edge -> the runtime
call -> its ``nest`` parent), so an op's device time is the sum over all of its
occurrences and all kernels below it (the seed looked at the first occurrence only).

All times are ns inside; the documents returned for users are in µs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

import networkx as nx
import numpy as np
import pandas as pd

from opgraph.names import short_kernel_name
from opgraph.analysis.iterations import K_CPU_OP, K_KERNEL, K_PYTHON, GraphFrame, Window, analysis_window, frame_of
from opgraph.analysis.multistream import device_stats, stream_stats
from opgraph.analysis.replayed_ops import replayed_ops
from opgraph.ingest.steps import STEP_RE

#: Names (prefixes) that mark module/label ranges rather than operators, as the seed's
#: ``is_module`` (old traces record ``record_function`` labels as operators).
DEFAULT_MODULE_MARKERS: tuple[str, ...] = ("## ", "##", "__", "module::", "nn.Module: ", "DLRM ",
                                           "DistributedDataParallel")
OTHERS = "Others"
UNACCOUNTED = "Unaccounted"
NO_LAUNCH = "(launch not in trace)"
OUTSIDE_OPS = "(outside any op)"


# --------------------------------------------------------------------------- helpers


def _norm_names(names: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Factorize names, folding ``ProfilerStep#N`` into ``ProfilerStep#*``."""
    codes, uniq = pd.factorize(names)
    uniq = np.array([("ProfilerStep#*" if isinstance(u, str) and STEP_RE.match(u) else u) for u in uniq],
                    dtype=object)
    codes2, uniq2 = pd.factorize(uniq)
    return codes2[codes].astype(np.int64), np.asarray(uniq2, dtype=object)


def input_dims(args: dict[str, Any]) -> str:
    """The input shapes of an op as a string (``Input Dims``/``Input dims``; ``-`` when
    absent), empty entries kept so arity shows."""
    v = args.get("Input Dims", args.get("Input dims"))
    if v is None:
        return "-"
    return str(v).replace(" ", "")


def module_mask(names: np.ndarray, markers: Iterable[str]) -> np.ndarray:
    """True where a name starts with one of ``markers``."""
    ms = tuple(m for m in markers if m)
    if not ms or not len(names):
        return np.zeros(len(names), dtype=bool)
    codes, uniq = pd.factorize(names)
    hit = np.fromiter((isinstance(u, str) and u.startswith(ms) for u in uniq), dtype=bool, count=len(uniq))
    return hit[codes]


def tree_depths(parent: np.ndarray) -> np.ndarray:
    """Depth of every node of a forest given by ``parent`` (-1 for roots), by pointer
    jumping: O(n log depth), also for one n-deep chain (identical nested events)."""
    depth = (parent >= 0).astype(np.int64)
    jump = parent.copy()
    live = np.flatnonzero(jump >= 0)
    while len(live):
        j = jump[live]
        depth[live] += depth[j]  # synchronous: reads the old depths
        jump[live] = jump[j]
        live = live[jump[live] >= 0]
    return depth


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
class HostHierarchy:
    """The host forest an analysis walks: ``host`` (mask of the ranges in it), ``parent``
    (position of each range's parent in it, -1 for roots) and ``levels`` (positions grouped
    by depth, roots first)."""

    host: np.ndarray
    parent: np.ndarray
    levels: list[np.ndarray]


def host_hierarchy(f: GraphFrame, include_python: bool = False) -> HostHierarchy:
    """The host ``nest`` forest, with or without ``python_function`` ranges.

    Without them, the other host ranges are re-nested by time containment among
    themselves (the graph's own sweep, :func:`opgraph.graph.nesting.nest_sweep`): python
    frames often cross the ``ProfilerStep`` range, so re-parenting through them would lose
    containment. Cached on the frame.
    """
    key = ("host_hierarchy", include_python)
    if key in f.cache:
        return f.cache[key]
    n = len(f)
    host = f.is_host.copy()
    parent = f.parent.copy()
    py = f.kind == K_PYTHON
    if not include_python and (py & host).any():
        from opgraph.graph.nesting import nest_sweep

        host &= ~py
        idx = np.flatnonzero(host)
        nr = nest_sweep(f.lane[idx], f.ts[idx], f.end[idx])
        parent = np.full(n, -1, dtype=np.int64)
        has = nr.parent >= 0
        parent[idx[has]] = idx[nr.parent[has]]
    parent[~host] = -1
    depth = tree_depths(parent)
    hp = np.flatnonzero(host)
    o = hp[np.argsort(depth[hp], kind="stable")]
    levels = np.split(o, np.flatnonzero(np.diff(depth[o])) + 1) if len(hp) else []
    h = HostHierarchy(host, parent, levels)
    f.cache[key] = h
    return h


def outermost_ops(f: GraphFrame, module_markers: Iterable[str] = DEFAULT_MODULE_MARKERS,
                  include_python: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """The seed's ``get_operators``: the first non-module CPU op on every nesting path.

    Returns
    -------
    (is_op, top_op)
        ``is_op[i]``: position i is such an op; ``top_op[i]``: position of the op at or
        above host event i (-1 if none).
    """
    hh = host_hierarchy(f, include_python)
    cand = (f.kind == K_CPU_OP) & ~module_mask(f.name, module_markers)
    top = np.full(len(f), -1, dtype=np.int64)
    for lvl in hh.levels:
        p = hh.parent[lvl]
        inherited = np.where(p >= 0, top[np.maximum(p, 0)], -1)
        top[lvl] = np.where(inherited >= 0, inherited, np.where(cand[lvl], lvl, -1))
    is_op = cand & (top == np.arange(len(f)))
    return is_op, top


# --------------------------------------------------------------------------- host
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
    window: Window
    paths: pd.DataFrame
    threads: pd.DataFrame
    event_path: np.ndarray
    event_time: np.ndarray
    in_scope: np.ndarray
    data_loading: pd.DataFrame
    parent: np.ndarray


def host_breakdown(G: nx.DiGraph | GraphFrame, window: Window | None = None, step_regex: str | None = None,
                   data_markers: Iterable[str] | None = None, include_python: bool = False) -> HostBreakdown:
    """Aggregate the CPU hierarchy by name path, per thread, over all occurrences.

    Parameters
    ----------
    G : networkx.DiGraph or GraphFrame
    window : Window, optional
        Default :func:`~opgraph.analysis.iterations.analysis_window` with ``step_regex``
        and ``data_markers``.
    step_regex, data_markers : optional
        See :func:`~opgraph.analysis.iterations.find_iterations`.
    include_python : bool
        Keep ``python_function`` ranges in the hierarchy (default False: they are dropped
        and the other host ranges re-nested among themselves, see :func:`host_hierarchy`).

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
    nodes = f.G._node
    ids = f.node[pos].tolist()
    dims = []
    for i in ids:
        a = nodes[i].get("args")
        dims.append(input_dims(a) if isinstance(a, dict) else "-")
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


def _source(f: GraphFrame) -> dict[str, Any]:
    src = f.G.graph.get("source")
    src = src if isinstance(src, dict) else {}
    return {"file": src.get("file"), "sha256": src.get("sha256")}


def _thread_names(f: GraphFrame) -> dict[tuple[Any, Any], str]:
    ev = f.G.graph.get("events")
    if not isinstance(ev, pd.DataFrame) or "kind" not in ev:
        return {}
    from opgraph.analysis.info import thread_names as tn
    return tn(ev)


def _entry(name: str, kind: str, time_ns: int, parent_ns: int, count: int) -> dict[str, Any]:
    return {"name": name, "kind": kind, "time_us": time_ns / 1e3,
            "percent": (100.0 * time_ns / parent_ns) if parent_ns > 0 else 0.0, "count": int(count)}


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
                e = _entry(str(name), "entry", t_ns, parent_ns, cnt)
                ns, lst = shapes.get(pid_, (0, []))
                e["shapes_distinct"] = ns
                e["shapes"] = [{"dims": d, "count": c} for d, c in lst]
                if lvl + 1 < depth:
                    e["children"] = build(pid_, t_ns, lvl + 1)
                out.append(e)
                covered += t_ns
            if rest_n:
                e = _entry(OTHERS, "others", rest_t, parent_ns, rest_c)
                e["entries"] = rest_n
                out.append(e)
                covered += rest_t
        else:
            covered = int(child_sum.get(key, 0))
        un = parent_ns - covered
        if un != 0 or not out:
            out.append(_entry(UNACCOUNTED, "unaccounted", un, parent_ns, 0))
        return out

    threads = []
    tnames = _thread_names(hb.frame)
    for r in hb.threads.itertuples(index=False):
        threads.append({"pid": r.pid, "tid": r.tid, "name": tnames.get((r.pid, r.tid)), "time_us": r.time_ns / 1e3, "busy_us": r.busy_ns / 1e3,
                        "events": int(r.events), "entries": build(-1 - int(r.lane), int(r.time_ns), 0)})
    w = hb.window
    dl = [{"name": str(r.name), "count": int(r.count), "time_us": r.time_ns / 1e3}
          for r in hb.data_loading.itertuples(index=False)]
    return {"mode": "host", "source": _source(hb.frame), "window": w.to_dict(), "depth": depth, "top": top,
            "data_loading": {"markers": list(w.data_markers), "time_us": w.data_loading_ns / 1e3,
                             "percent_of_window": 100.0 * w.data_loading_ns / w.length_ns if w.length_ns else 0.0,
                             "by_name": dl},
            "threads": threads}


# --------------------------------------------------------------------------- device
@dataclass
class DeviceBreakdown:
    """Result of :func:`device_breakdown`.

    ``items``: one row per (stream key, tree node) with ``device``, ``stream``, ``node``
    (path id for op nodes; negative ids for kernel leaves), ``parent`` (path id or -1 for
    the stream root), ``name``, ``kind`` (``op``/``kernel``/``no_launch``), ``time_ns``
    (device time), ``activities``. ``streams``: :func:`~opgraph.analysis.multistream.stream_stats`.
    ``ops``: per outermost op name, ``count``, ``kernels``, ``device_ns``, ``host_ns``.
    ``devices``: :func:`~opgraph.analysis.multistream.device_stats` (busy, idle, overlap).
    """

    window: Window
    items: pd.DataFrame
    streams: pd.DataFrame
    ops: pd.DataFrame
    host: HostBreakdown
    devices: pd.DataFrame


def device_breakdown(G: nx.DiGraph | GraphFrame, window: Window | None = None, step_regex: str | None = None,
                     data_markers: Iterable[str] | None = None,
                     module_markers: Iterable[str] = DEFAULT_MODULE_MARKERS,
                     short_names: bool = True, include_python: bool = False) -> DeviceBreakdown:
    """Device time per stream, attributed to the CPU op hierarchy that launched it.

    Parameters
    ----------
    G : networkx.DiGraph or GraphFrame
    window : Window, optional
    step_regex, data_markers : optional
        See :func:`~opgraph.analysis.iterations.find_iterations`.
    module_markers : iterable of str
        Name prefixes of label ranges that are not ops (for the per-op table).
    short_names : bool
        Shorten kernel names (:func:`short_kernel_name`).
    include_python : bool
        Attribute through ``python_function`` frames too (default: CPU ops only).

    Returns
    -------
    DeviceBreakdown
        Times in ns. For each stream the op tree sums exactly to the stream's device time.
    """
    f = frame_of(G)
    w = window if window is not None else analysis_window(f, step_regex, data_markers)
    hb = host_breakdown(f, w, include_python=include_python)
    paths = hb.paths
    w0, w1 = w.start, w.end
    act = np.flatnonzero(f.is_activity & (((f.end > w0) & (f.ts < w1)) | ((f.dur == 0) & (f.ts >= w0) & (f.ts < w1))))
    a = np.clip(f.ts[act], w0, w1)
    b = np.maximum(np.clip(f.end[act], w0, w1), a)
    dt = b - a
    rt = f.launcher[act]
    op_parent = np.where(rt >= 0, hb.parent[np.maximum(rt, 0)], -1)
    # attach to the runtime's parent path; a runtime at the root attaches to its thread root
    attach = np.where(op_parent >= 0, hb.event_path[np.maximum(op_parent, 0)], -1)
    lane_of_rt = np.where(rt >= 0, f.lane[np.maximum(rt, 0)], -1)
    skey = (f.device[act] << 32) + f.stream[act] + 1
    kname = f.name[act]
    if short_names:
        kc, ku = pd.factorize(kname)
        if len(ku):
            is_k = np.zeros(len(ku), dtype=bool)
            is_k[kc] = f.kind[act] == K_KERNEL
            ku = np.array([short_kernel_name(k) if is_k[i] and isinstance(k, str) else k for i, k in enumerate(ku)],
                          dtype=object)
            kname = ku[kc]
    leaf = pd.DataFrame({"skey": skey, "device": f.device[act], "stream": f.stream[act],
                         "attach": attach, "lane": lane_of_rt, "has_rt": rt >= 0, "kname": kname, "t": dt})
    # kernel leaves
    leaf["parent"] = np.where(leaf["has_rt"], leaf["attach"], -2)  # -2: no launch known
    leaf.loc[leaf["has_rt"] & (leaf["attach"] < 0), "parent"] = -3 - leaf["lane"]  # thread root
    kl = leaf.groupby(["skey", "parent", "kname"], as_index=False, sort=False).agg(
        device=("device", "first"), stream=("stream", "first"), time_ns=("t", "sum"), activities=("t", "size"))
    kl["kind"] = "kernel"
    kl = kl.rename(columns={"kname": "name"})
    # op nodes: roll kernel time up the path tree
    direct = kl[kl["parent"] >= 0].groupby(["skey", "parent"], as_index=False).agg(
        time_ns=("time_ns", "sum"), activities=("activities", "sum"))
    direct = direct.rename(columns={"parent": "node"})
    pparent = paths["parent"].to_numpy()
    pdepth = paths["depth"].to_numpy()
    ops = _roll_up(direct, pparent, pdepth)
    nodes = ops["node"].to_numpy(np.int64)
    ops["parent"] = pparent[nodes] if len(nodes) else []
    ops["lane"] = paths["lane"].to_numpy()[nodes] if len(nodes) else []
    ops["parent"] = np.where(ops["parent"] >= 0, ops["parent"], -3 - ops["lane"]) if len(nodes) else []
    ops["name"] = paths["name"].to_numpy()[nodes] if len(nodes) else []
    ops["depth"] = pdepth[nodes] if len(nodes) else []
    ops["kind"] = "op"
    sk = ops["skey"].to_numpy(np.int64)
    ops["device"] = sk >> 32
    ops["stream"] = (sk & 0xFFFFFFFF) - 1
    # kernel leaves get negative node ids; thread-root pseudo parents are -3 - lane
    kl["node"] = -1000000000 - np.arange(len(kl))
    kl.loc[kl["parent"] == -2, "kind"] = "no_launch"
    cols = ["skey", "device", "stream", "node", "parent", "name", "kind", "time_ns", "activities"]
    items = pd.concat([ops[cols], kl[cols]], ignore_index=True)
    items["time_ns"] = items["time_ns"].astype(np.int64)
    items["activities"] = items["activities"].astype(np.int64)
    ss = stream_stats(f, w)
    # per-op table (outermost ops)
    is_op, top = outermost_ops(f, module_markers, include_python)
    occ = np.flatnonzero(is_op & hb.in_scope)
    host_t = pd.DataFrame({"op": f.name[occ], "host_ns": hb.event_time[occ]}).groupby("op").agg(
        count=("host_ns", "size"), host_ns=("host_ns", "sum"))
    top_of_act = np.where(rt >= 0, top[np.maximum(rt, 0)], -1)
    op_label = np.where(top_of_act >= 0, f.name[np.maximum(top_of_act, 0)], OUTSIDE_OPS).astype(object)
    # graph replays: the op that captured the kernel, else (outside any op) its category
    replayed, mapped, rlabel = replayed_ops(f, act, module_markers)
    use = mapped | (replayed & (top_of_act < 0))
    op_label[use] = rlabel[use]
    dev_t = pd.DataFrame({"op": op_label, "t": dt, "k": 1, "g": replayed.astype(np.int64)}).groupby("op").agg(
        kernels=("k", "sum"), device_ns=("t", "sum"), graph_kernels=("g", "sum"))
    opt = host_t.join(dev_t, how="outer").fillna(0)
    opt = opt.astype({"count": np.int64, "host_ns": np.int64, "kernels": np.int64, "device_ns": np.int64,
                      "graph_kernels": np.int64})
    opt = opt.reset_index().rename(columns={"index": "op"})
    opt = opt.sort_values(["device_ns", "host_ns", "op"], ascending=[False, False, True]).reset_index(drop=True)
    return DeviceBreakdown(w, items, ss, opt, hb, device_stats(f, w))


def _roll_up(direct: pd.DataFrame, pparent: np.ndarray, pdepth: np.ndarray) -> pd.DataFrame:
    """Per (skey, path node): the sum of ``time_ns`` and ``activities`` of ``direct`` over
    the node and all its descendants. Rows move up one depth at a time, deepest first, and
    only the rows at the current depth are touched (numpy only): O(output log output) plus a
    small constant per level, also for an N-deep chain of ops."""
    cols = ["skey", "node", "time_ns", "activities"]
    if not len(direct):
        return pd.DataFrame(columns=cols)
    kc, ku = pd.factorize(direct["skey"].to_numpy(np.int64))
    n_nodes = max(len(pparent), 1)
    node = direct["node"].to_numpy(np.int64)
    key = kc.astype(np.int64) * n_nodes + node
    t = direct["time_ns"].to_numpy(np.int64)
    a = direct["activities"].to_numpy(np.int64)
    dep = pdepth[node]
    o = np.argsort(-dep, kind="stable")
    key, t, a, dep = key[o], t[o], a[o], dep[o]
    cut = np.flatnonzero(np.diff(dep)) + 1
    pending: dict[int, list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = {}
    for lo, hi in zip(np.concatenate(([0], cut)).tolist(), np.concatenate((cut, [len(dep)])).tolist()):
        pending.setdefault(int(dep[lo]), []).append((key[lo:hi], t[lo:hi], a[lo:hi]))
    out_k, out_t, out_a = [], [], []
    d = max(pending)
    while d >= 0:
        parts = pending.pop(d, None)
        if parts:
            k = np.concatenate([p[0] for p in parts])
            o = np.argsort(k, kind="stable")  # exact int64 sums per key (no float bincount)
            k = k[o]
            first = np.flatnonzero(np.concatenate(([True], k[1:] != k[:-1])))
            uk = k[first]
            st = np.add.reduceat(np.concatenate([p[1] for p in parts])[o], first)
            sa = np.add.reduceat(np.concatenate([p[2] for p in parts])[o], first)
            out_k.append(uk)
            out_t.append(st)
            out_a.append(sa)
            par = pparent[uk % n_nodes]
            up = par >= 0
            if up.any():
                pending.setdefault(d - 1, []).append(((uk[up] // n_nodes) * n_nodes + par[up], st[up], sa[up]))
        d -= 1
    k = np.concatenate(out_k)
    o = np.argsort(k, kind="stable")
    k = k[o]
    return pd.DataFrame({"skey": np.asarray(ku, dtype=np.int64)[k // n_nodes], "node": k % n_nodes,
                         "time_ns": np.concatenate(out_t)[o], "activities": np.concatenate(out_a)[o]}
                        ).sort_values(["skey", "node"], kind="stable").reset_index(drop=True)


def device_breakdown_doc(db: DeviceBreakdown, depth: int = 3, top: int = 10) -> dict[str, Any]:
    """The device breakdown as a JSON-ready document (schemas/breakdown.schema.json), µs.

    Per stream: span, active, idle (active + idle = span), device time, and a tree of CPU
    ops -> kernels with device time, ``depth`` levels deep and ``top`` entries per parent
    (the rest in ``Others``; ``Unaccounted`` closes each level to 100 %). Also the per-op
    table (``ops``: op, count, kernels, device µs, host µs, device/host ratio).
    """
    items = db.items.sort_values(["skey", "parent", "time_ns", "name"], ascending=[True, True, False, True],
                                 kind="stable").reset_index(drop=True)
    groups = items.groupby(["skey", "parent"], sort=False).indices  # positions, in sorted order

    def children_of(skey: int, key: int) -> pd.DataFrame | None:
        idx = groups.get((skey, key))
        return None if idx is None else items.iloc[idx]

    def build(skey: int, key: int, parent_ns: int, lvl: int) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        g = children_of(skey, key)
        covered = 0
        if g is not None:
            head, rest = g.iloc[:top], g.iloc[top:]
            for r in head.itertuples(index=False):
                e = _entry(str(r.name) if r.kind != "no_launch" else f"{NO_LAUNCH} {r.name}", str(r.kind),
                           int(r.time_ns), parent_ns, int(r.activities))
                if r.kind == "op" and lvl + 1 < depth:
                    e["children"] = build(skey, int(r.node), int(r.time_ns), lvl + 1)
                out.append(e)
                covered += int(r.time_ns)
            if len(rest):
                t = int(rest["time_ns"].sum())
                e = _entry(OTHERS, "others", t, parent_ns, int(rest["activities"].sum()))
                e["entries"] = int(len(rest))
                out.append(e)
                covered += t
        else:
            covered = parent_ns
        un = parent_ns - covered
        if un != 0 or not out:
            out.append(_entry(UNACCOUNTED, "unaccounted", un, parent_ns, 0))
        return out

    streams = []
    for r in db.streams.itertuples(index=False):
        skey = int(r.device) * (1 << 32) + int(r.stream) + 1
        roots = items[(items["skey"] == skey) & (items["parent"] < 0)]
        total = int(r.device_ns)
        # top level: thread roots merged under the stream
        top_entries: list[dict[str, Any]] = []
        rows = roots.sort_values(["time_ns", "name"], ascending=[False, True])
        head, rest = rows.iloc[:top], rows.iloc[top:]
        covered = 0
        for x in head.itertuples(index=False):
            e = _entry(str(x.name) if x.kind != "no_launch" else f"{NO_LAUNCH} {x.name}", str(x.kind),
                       int(x.time_ns), total, int(x.activities))
            if x.kind == "op" and depth > 1:
                e["children"] = build(skey, int(x.node), int(x.time_ns), 1)
            top_entries.append(e)
            covered += int(x.time_ns)
        if len(rest):
            t = int(rest["time_ns"].sum())
            e = _entry(OTHERS, "others", t, total, int(rest["activities"].sum()))
            e["entries"] = int(len(rest))
            top_entries.append(e)
            covered += t
        if total - covered != 0 or not top_entries:
            top_entries.append(_entry(UNACCOUNTED, "unaccounted", total - covered, total, 0))
        span = int(r.span_ns) or 1
        streams.append({"device": int(r.device), "stream": int(r.stream), "span_us": r.span_ns / 1e3,
                        "active_us": r.active_ns / 1e3, "idle_us": r.idle_ns / 1e3,
                        "active_pct": 100.0 * r.active_ns / span, "idle_pct": 100.0 * r.idle_ns / span,
                        "device_us": r.device_ns / 1e3, "activities": int(r.activities), "kernels": int(r.kernels),
                        "entries": top_entries})
    ops = []
    for r in db.ops.itertuples(index=False):
        ops.append({"op": str(r.op), "count": int(r.count), "kernels": int(r.kernels),
                    "graph_kernels": int(r.graph_kernels), "device_us": r.device_ns / 1e3,
                    "host_us": r.host_ns / 1e3,
                    "ratio": (r.device_ns / r.host_ns) if r.host_ns > 0 else None})
    devices = [{"device": int(r.device), "streams": int(r.streams), "span_us": r.span_ns / 1e3,
                "busy_us": r.busy_ns / 1e3, "idle_us": r.idle_ns / 1e3, "overlap_us": r.overlap_ns / 1e3}
               for r in db.devices.itertuples(index=False)]
    return {"mode": "device", "source": _source(db.host.frame), "window": db.window.to_dict(), "depth": depth,
            "top": top, "devices": devices, "streams": streams,
            "ops": ops}


# --------------------------------------------------------------------------- flat tables (CSV)
def flatten_tree(entries: list[dict[str, Any]], prefix: tuple[str, ...] = (), level: int = 1,
                 shapes: bool = False, **fixed: Any) -> list[dict[str, Any]]:
    """Rows (one per shown entry) of a breakdown tree: ``level``, ``path`` (names joined
    with `` > ``), ``parent_path``, ``name``, ``kind``, ``time_us``, ``percent``, ``count``,
    with ``shapes``: ``shapes_distinct`` and ``top_shape``; plus ``fixed`` columns (thread or stream)."""
    rows = []
    for e in entries:
        p = prefix + (e["name"],)
        row = dict(fixed)
        row.update({"level": level, "path": " > ".join(p), "parent_path": " > ".join(prefix), "name": e["name"],
                    "kind": e["kind"], "time_us": e["time_us"], "percent": e["percent"], "count": e["count"]})
        if shapes:
            row["shapes_distinct"] = int(e.get("shapes_distinct", 0))
            row["top_shape"] = e["shapes"][0]["dims"] if e.get("shapes") else ""
        rows.append(row)
        rows.extend(flatten_tree(e.get("children", []), p, level + 1, shapes, **fixed))
    return rows
