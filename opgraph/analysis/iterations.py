"""Iterations (steps): finding them, timing them, and trimming a trace to some of them.

Also home of the column view of a graph (:func:`graph_frame`) and of the analysis window
(:func:`analysis_window`: the steps' span, minus data loading) that the breakdown,
overheads and multistream analyses share.

Steps are the windows of the one selector, :func:`opgraph.graph.windows.select_windows`
(the same steps as every other command), in this order of preference:

1. host ranges (``annotation``/``cpu_op``/``python``) whose name matches ``step_regex``
   (NVTX / ``record_function`` labels), else GPU annotations that match, when one is given
   (a regex that matches nothing raises :class:`~opgraph.graph.windows.WindowNotFound`);
2. ``ProfilerStep#N`` host ranges (one step per distinct N);
3. ``ProfilerStep#N`` GPU annotations (``gpu_user_annotation``), for device-only traces;
4. NVTX ``Iteration N`` ranges;
5. data-loading markers (``DataLoader`` by default): step k runs from marker k to marker
   k+1, so M markers give M-1 steps (the seed's ``trim_trace_by_num_iter`` rule).

Times are integer ns inside; the user-facing tables and JSON are in µs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any, Iterable, Sequence

import networkx as nx
import numpy as np
import pandas as pd

from opgraph.graph.windows import WINDOW_SOURCES, WindowColumns, WindowError, Windows, select_windows
from opgraph.errors import OpgraphInputError
from opgraph.ingest.steps import NVTX_ITERATION_RE  # noqa: F401  (re-exported)
from opgraph.ingest.steps import STEP_RE as PROFILER_STEP_RE  # noqa: F401  (re-exported)
from opgraph.ingest.table import EventTable
from opgraph.intervals import IntervalSet, union_length_by

#: Default data-loading markers (regular expressions searched in event names).
DEFAULT_DATA_MARKERS: tuple[str, ...] = ("DataLoader",)

_KIND_CODES = {k: i for i, k in enumerate(
    ("annotation", "cpu_op", "python", "runtime", "kernel", "memcpy", "memset", "gpu_annotation"))}
K_ANNOTATION, K_CPU_OP, K_PYTHON, K_RUNTIME, K_KERNEL, K_MEMCPY, K_MEMSET, K_GPU_ANNOTATION = range(8)
K_OTHER = 8
#: Kind name of each kind code (``K_OTHER`` -> ``"other"``).
KIND_NAMES = np.array(list(_KIND_CODES) + ["other"], dtype=object)


# --------------------------------------------------------------------------- graph frame
@dataclass
class GraphFrame:
    """The nodes of a trace graph as parallel numpy arrays (positions 0..n-1).

    Attributes
    ----------
    node : int64 array
        Node keys (event ids).
    kind : int8 array
        Kind codes (``K_ANNOTATION`` ... ``K_GPU_ANNOTATION``, ``K_OTHER``).
    name : object array
        Node names (str; ``""`` when missing).
    ts, dur, end : int64 arrays
        Start, duration and end in ns.
    lane : int64 array
        One code per (pid, tid).
    pid, tid : object arrays
        As written in the trace.
    device, stream, correlation, external_id : int64 arrays
        -1 for none.
    parent : int64 array
        Position of the ``nest`` parent, -1 for roots (host and device nesting).
    launcher : int64 array
        For device activities, position of the runtime call that launched it (``launch``
        edge), else -1.
    """

    G: nx.DiGraph
    node: np.ndarray
    kind: np.ndarray
    name: np.ndarray
    ts: np.ndarray
    dur: np.ndarray
    end: np.ndarray
    lane: np.ndarray
    pid: np.ndarray
    tid: np.ndarray
    device: np.ndarray
    stream: np.ndarray
    correlation: np.ndarray
    external_id: np.ndarray
    parent: np.ndarray
    launcher: np.ndarray
    _depth: np.ndarray | None = field(default=None, repr=False)
    cache: dict = field(default_factory=dict, repr=False)

    def __len__(self) -> int:
        return len(self.node)

    @property
    def is_host(self) -> np.ndarray:
        return self.kind <= K_RUNTIME

    @property
    def is_activity(self) -> np.ndarray:
        return (self.kind >= K_KERNEL) & (self.kind <= K_MEMSET)

    @property
    def depth(self) -> np.ndarray:
        """Nesting depth (roots 0), computed once."""
        if self._depth is None:
            depth = np.zeros(len(self.node), dtype=np.int64)
            idx = np.flatnonzero(self.parent >= 0)
            anc = self.parent[idx]
            while len(idx):
                depth[idx] += 1
                anc = self.parent[anc]
                keep = anc >= 0
                idx, anc = idx[keep], anc[keep]
            self._depth = depth
        return self._depth

    def window_columns(self) -> WindowColumns:
        """The columns :func:`opgraph.graph.windows.select_windows` reads (computed once)."""
        c = self.cache.get("window_columns")
        if c is None:
            c = WindowColumns(KIND_NAMES[self.kind], self.name, self.ts, self.end, self.node, self.lane,
                              self.launcher[self.launcher >= 0])
            self.cache["window_columns"] = c
        return c

    def args(self, pos: int) -> dict[str, Any]:
        """The ``args`` dict of the node at position ``pos`` (empty when absent)."""
        a = self.G._node[int(self.node[pos])].get("args")
        return a if isinstance(a, dict) else {}

    def by_depth(self, mask: np.ndarray | None = None) -> list[np.ndarray]:
        """Positions grouped by depth, shallowest first (optionally only where ``mask``)."""
        d = self.depth
        pos = np.arange(len(d)) if mask is None else np.flatnonzero(mask)
        if not len(pos):
            return []
        o = pos[np.argsort(d[pos], kind="stable")]
        dd = d[o]
        cuts = np.flatnonzero(np.diff(dd)) + 1
        return np.split(o, cuts)


def graph_frame(G: nx.DiGraph) -> GraphFrame:
    """Column view of a trace graph (see :class:`GraphFrame`).

    One pass over the node attribute dicts and one over the edges (``nest`` and
    ``launch``); about 1 s for 700k nodes.

    Parameters
    ----------
    G : networkx.DiGraph
        A graph with the node attributes and edge kinds of docs/model.md. Missing
        ``device``/``stream``/``correlation``/``external_id`` attributes read as -1.

    Returns
    -------
    GraphFrame
    """
    nodes = G._node
    n = len(nodes)
    ids = np.fromiter(nodes.keys(), dtype=np.int64, count=n) if n else np.empty(0, np.int64)
    try:
        cols = list(zip(*map(itemgetter("kind", "name", "ts", "dur", "pid", "tid", "device", "stream",
                                        "correlation", "external_id"), nodes.values())))
    except KeyError:
        get = [lambda d, k=k, dflt=dflt: d.get(k, dflt) for k, dflt in (
            ("kind", "other"), ("name", ""), ("ts", 0), ("dur", 0), ("pid", None), ("tid", None),
            ("device", -1), ("stream", -1), ("correlation", -1), ("external_id", -1))]
        cols = [[g(d) for d in nodes.values()] for g in get]
    if not n:
        cols = [[] for _ in range(10)]
    kind = np.fromiter((_KIND_CODES.get(k, K_OTHER) for k in cols[0]), dtype=np.int8, count=n)
    name = np.array([s if isinstance(s, str) else ("" if s is None else str(s)) for s in cols[1]], dtype=object)
    ts = np.array(cols[2], dtype=np.int64)
    dur = np.maximum(np.array(cols[3], dtype=np.int64), 0)
    pid = np.array(cols[4], dtype=object)
    tid = np.array(cols[5], dtype=object)

    def ints(c: Sequence[Any]) -> np.ndarray:
        try:
            return np.array(c, dtype=np.int64)
        except (TypeError, ValueError):
            return np.array([v if isinstance(v, (int, np.integer)) else -1 for v in c], dtype=np.int64)

    device, stream, corr, ext = (ints(c) for c in cols[6:10])
    if n:
        pc, _ = pd.factorize(pd.Series(pid, dtype=object).astype(str))
        tc, tu = pd.factorize(pd.Series(tid, dtype=object).astype(str))
        lane, _ = pd.factorize(pc.astype(np.int64) * (len(tu) + 1) + tc)
        lane = lane.astype(np.int64)
    else:
        lane = np.empty(0, np.int64)
    # position lookup
    if n and ids.min() >= 0 and ids.max() < 4 * n + 1024:
        pos_of = np.full(int(ids.max()) + 1, -1, dtype=np.int64)
        pos_of[ids] = np.arange(n)
        lookup = lambda a: pos_of[a]  # noqa: E731
    else:
        order = np.argsort(ids)
        sorted_ids = ids[order]
        lookup = lambda a: order[np.searchsorted(sorted_ids, a)]  # noqa: E731
    n_src: list[int] = []
    n_dst: list[int] = []
    l_src: list[int] = []
    l_dst: list[int] = []
    for u, nbrs in G._succ.items():
        for v, d in nbrs.items():
            k = d.get("kind")
            if k == "nest":
                n_src.append(u)
                n_dst.append(v)
            elif k == "launch":
                l_src.append(u)
                l_dst.append(v)
    parent = np.full(n, -1, dtype=np.int64)
    if n_src:
        parent[lookup(np.array(n_dst, dtype=np.int64))] = lookup(np.array(n_src, dtype=np.int64))
    launcher = np.full(n, -1, dtype=np.int64)
    if l_src:
        launcher[lookup(np.array(l_dst, dtype=np.int64))] = lookup(np.array(l_src, dtype=np.int64))
    return GraphFrame(G, ids, kind, name, ts, dur, ts + dur, lane, pid, tid, device, stream, corr, ext,
                      parent, launcher)


def frame_of(G_or_frame: nx.DiGraph | GraphFrame) -> GraphFrame:
    """Accept a graph or an already-built frame."""
    return G_or_frame if isinstance(G_or_frame, GraphFrame) else graph_frame(G_or_frame)


# --------------------------------------------------------------------------- steps
def _compile_markers(markers: Iterable[str] | None) -> re.Pattern[str] | None:
    ms = [m for m in (DEFAULT_DATA_MARKERS if markers is None else markers) if m]
    return re.compile("|".join(f"(?:{m})" for m in ms)) if ms else None


def _match(names: np.ndarray, rx: re.Pattern[str]) -> np.ndarray:
    """Boolean array: rx.search(name) for each name (one pass over the distinct names)."""
    if not len(names):
        return np.zeros(0, dtype=bool)
    codes, uniq = pd.factorize(names)
    hit = np.fromiter((bool(rx.search(u)) if isinstance(u, str) else False for u in uniq),
                      dtype=bool, count=len(uniq))
    return hit[codes]


def data_markers_of(markers: Iterable[str] | None) -> tuple[str, ...]:
    """The data-loading marker regexes in force: ``None`` -> :data:`DEFAULT_DATA_MARKERS`."""
    return tuple(m for m in (DEFAULT_DATA_MARKERS if markers is None else markers) if m)


#: Every ``step_source`` the JSON documents can carry (summary, iterations, breakdown,
#: overheads): the window sources of a step selection, or ``none`` (no steps, whole trace).
STEP_SOURCES: tuple[str, ...] = tuple(s for s in WINDOW_SOURCES if s != "all") + ("none",)


def _steps_table(w: Windows) -> tuple[pd.DataFrame, str]:
    """The steps of a selection (none when it fell back to the whole trace): columns
    ``index``, ``step``, ``name``, ``ts``, ``end``, ``node``, and the source."""
    if not w.is_steps:
        w = Windows([], w.mode, "none")
    t = w.to_frame().rename(columns={"eid": "node"})
    t.insert(0, "index", np.arange(len(t), dtype=np.int64))
    return t[["index", "step", "name", "ts", "end", "node"]].reset_index(drop=True), w.source


@dataclass
class Steps:
    """Steps found in a trace.

    ``table`` has one row per step, sorted by start: ``index`` (0-based position),
    ``step`` (N of ``ProfilerStep#N``, or the position), ``name``, ``ts``/``end`` (ns) and
    ``node`` (the marker node, or -1). ``source`` says how they were found:
    ``regex``, ``profiler_step``, ``gpu_annotation``, ``nvtx_iteration``, ``data_loader`` or
    ``none`` (:func:`opgraph.graph.windows.select_windows`).
    """

    table: pd.DataFrame
    source: str

    def __len__(self) -> int:
        return len(self.table)


def find_iterations(G: nx.DiGraph | GraphFrame, step_regex: str | None = None,
                    data_markers: Iterable[str] | None = None) -> Steps:
    """Find the steps (iterations) of a trace graph.

    Parameters
    ----------
    G : networkx.DiGraph or GraphFrame
        The trace graph.
    step_regex : str, optional
        Regular expression for step ranges: host ranges (NVTX / ``record_function``
        labels) whose name it finds, else GPU annotations. When given, only it is used.
    data_markers : iterable of str, optional
        Regular expressions naming data-loading markers (default ``DataLoader``); used
        only when the trace has no step marker (``ProfilerStep#N``, ``Iteration N``).

    Returns
    -------
    Steps
        ``source`` ``"none"`` and no rows when the trace has no step.

    Raises
    ------
    opgraph.graph.windows.WindowNotFound
        ``step_regex`` matches no range (:class:`~opgraph.graph.windows.WindowError`
        when it is not a valid regex).
    """
    f = frame_of(G)
    w = select_windows(f, step_regex=step_regex, data_markers=data_markers_of(data_markers), lanes=False)
    return Steps(*_steps_table(w))


# --------------------------------------------------------------------------- window
@dataclass
class Window:
    """The time window an analysis covers (ns) and the data loading inside it.

    ``start``/``end``: first step start to last step end when steps exist, else the span
    of all nodes. ``data_loading``: union of data-loading marker ranges clipped to the
    window. ``host_runtime_ns`` = window length - data loading (the seed's step time).
    ``data_nodes``: positions of the marker nodes (their subtrees are excluded from host
    analyses).
    """

    start: int
    end: int
    steps: Steps
    data_loading: IntervalSet
    data_nodes: np.ndarray
    data_markers: tuple[str, ...]

    @property
    def length_ns(self) -> int:
        return self.end - self.start

    @property
    def data_loading_ns(self) -> int:
        return self.data_loading.total

    @property
    def host_runtime_ns(self) -> int:
        return self.length_ns - self.data_loading_ns

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready description (µs)."""
        return {"start_ns": int(self.start), "end_ns": int(self.end), "duration_us": self.length_ns / 1e3,
                "steps": int(len(self.steps)), "step_source": self.steps.source,
                "data_loading_us": self.data_loading_ns / 1e3, "data_loading_ranges": int(len(self.data_loading)),
                "data_markers": list(self.data_markers), "host_runtime_us": self.host_runtime_ns / 1e3}


def analysis_window(G: nx.DiGraph | GraphFrame, step_regex: str | None = None,
                    data_markers: Iterable[str] | None = None, use_steps: bool = True,
                    min_data_loading_us: float = 0.0) -> Window:
    """The window analyses cover and the data loading inside it.

    Parameters
    ----------
    G : networkx.DiGraph or GraphFrame
    step_regex : str, optional
        See :func:`find_iterations`.
    data_markers : iterable of str, optional
        Regular expressions for data-loading ranges (default ``("DataLoader",)``; pass
        ``()`` to disable).
    use_steps : bool
        When False the window is the whole trace even if steps exist.
    min_data_loading_us : float
        Ignore data-loading ranges shorter than this (µs; the seed's later version used 100).

    Returns
    -------
    Window
    """
    f = frame_of(G)
    markers = data_markers_of(data_markers)
    steps = find_iterations(f, step_regex, markers)
    if use_steps and len(steps):
        start, end = int(steps.table["ts"].min()), int(steps.table["end"].max())
    elif len(f):
        start, end = int(f.ts.min()), int(f.end.max())
    else:
        start = end = 0
    rx = _compile_markers(markers)
    if rx is not None and len(f):
        dn = np.flatnonzero((f.kind <= K_PYTHON) & _match(f.name, rx)
                            & (f.dur >= int(min_data_loading_us * 1000)))
    else:
        dn = np.empty(0, np.int64)
    a = np.clip(f.ts[dn], start, end)
    b = np.clip(f.end[dn], start, end)
    ok = b > a
    return Window(start, end, steps, IntervalSet(a[ok], b[ok]), dn, markers)


# --------------------------------------------------------------------------- per-step times
def iteration_table(G: nx.DiGraph | GraphFrame, step_regex: str | None = None,
                    data_markers: Iterable[str] | None = None) -> tuple[pd.DataFrame, Steps]:
    """Each step's CPU span, GPU span, GPU busy time and kernel time.

    A device activity belongs to a step when the runtime call that launched it starts in
    the step's CPU range; an activity without a known launch belongs to the step its own
    start falls in. For steps found from GPU annotations, the CPU range is the annotation's.

    Parameters
    ----------
    G : networkx.DiGraph or GraphFrame
    step_regex, data_markers : see :func:`find_iterations`.

    Returns
    -------
    (pandas.DataFrame, Steps)
        Columns ``index``, ``step``, ``name``, ``cpu_start_ns``, ``cpu_end_ns``,
        ``cpu_dur_ns``, ``gpu_start_ns``, ``gpu_end_ns`` (-1 when no device work),
        ``gpu_dur_ns``, ``gpu_busy_ns`` (union of activity intervals),
        ``kernel_ns`` (sum of kernel durations), ``activities``, ``kernels``,
        ``data_loading_ns``.
    """
    f = frame_of(G)
    steps = find_iterations(f, step_regex, data_markers)
    st = steps.table
    n = len(st)
    out = pd.DataFrame({"index": st["index"].to_numpy(np.int64), "step": st["step"].to_numpy(np.int64),
                        "name": st["name"].to_numpy(object), "cpu_start_ns": st["ts"].to_numpy(np.int64),
                        "cpu_end_ns": st["end"].to_numpy(np.int64)})
    out["cpu_dur_ns"] = out["cpu_end_ns"] - out["cpu_start_ns"]
    gs = np.full(n, -1, np.int64)
    ge = np.full(n, -1, np.int64)
    busy = np.zeros(n, np.int64)
    kern = np.zeros(n, np.int64)
    nact = np.zeros(n, np.int64)
    nker = np.zeros(n, np.int64)
    dl = np.zeros(n, np.int64)
    if n:
        act = np.flatnonzero(f.is_activity)
        key_t = np.where(f.launcher[act] >= 0, f.ts[np.maximum(f.launcher[act], 0)], f.ts[act])
        s0, s1 = out["cpu_start_ns"].to_numpy(), out["cpu_end_ns"].to_numpy()
        o = np.argsort(s0, kind="stable")
        k = np.searchsorted(s0[o], key_t, side="right") - 1
        ok = k >= 0
        step_of = np.full(len(act), -1, np.int64)
        step_of[ok] = o[k[ok]]
        ok &= key_t < np.where(step_of >= 0, s1[np.maximum(step_of, 0)], 0)
        a, si = act[ok], step_of[ok]
        if len(a):
            df = pd.DataFrame({"s": si, "ts": f.ts[a], "end": f.end[a], "dur": f.dur[a],
                               "k": f.kind[a] == K_KERNEL})
            g = df.groupby("s")
            gs[g.size().index] = g["ts"].min().to_numpy()
            ge[g.size().index] = g["end"].max().to_numpy()
            nact[g.size().index] = g.size().to_numpy()
            kd = df[df["k"]].groupby("s")["dur"].agg(["sum", "size"])
            kern[kd.index] = kd["sum"].to_numpy()
            nker[kd.index] = kd["size"].to_numpy()
            u = union_length_by(si, f.ts[a], f.end[a])
            busy[u.index.to_numpy()] = u.to_numpy()
        w = analysis_window(f, step_regex, data_markers)
        if len(w.data_loading):
            dl = w.data_loading.covered(s0, s1)
    out["gpu_start_ns"] = gs
    out["gpu_end_ns"] = ge
    out["gpu_dur_ns"] = np.where(gs >= 0, ge - gs, 0)
    out["gpu_busy_ns"] = busy
    out["kernel_ns"] = kern
    out["activities"] = nact
    out["kernels"] = nker
    out["data_loading_ns"] = dl
    return out, steps


def iterations_doc(G: nx.DiGraph | GraphFrame, step_regex: str | None = None,
                   data_markers: Iterable[str] | None = None) -> dict[str, Any]:
    """JSON-ready ``opgraph iterations`` result (schemas/iterations.schema.json), in µs."""
    f = frame_of(G)
    tab, steps = iteration_table(f, step_regex, data_markers)
    src = f.G.graph.get("source", {}) if isinstance(f.G.graph.get("source"), dict) else {}
    rows = []
    for r in tab.itertuples(index=False):
        has_gpu = r.gpu_start_ns >= 0
        rows.append({
            "index": int(r.index), "step": int(r.step), "name": str(r.name),
            "cpu_start_ns": int(r.cpu_start_ns), "cpu_end_ns": int(r.cpu_end_ns), "cpu_us": r.cpu_dur_ns / 1e3,
            "gpu_start_ns": int(r.gpu_start_ns) if has_gpu else None,
            "gpu_end_ns": int(r.gpu_end_ns) if has_gpu else None,
            "gpu_us": r.gpu_dur_ns / 1e3, "gpu_busy_us": r.gpu_busy_ns / 1e3, "kernel_us": r.kernel_ns / 1e3,
            "activities": int(r.activities), "kernels": int(r.kernels), "data_loading_us": r.data_loading_ns / 1e3,
        })
    cpu = tab["cpu_dur_ns"].to_numpy()
    return {
        "source": {"file": src.get("file"), "sha256": src.get("sha256")},
        "step_source": steps.source,
        "step_regex": step_regex,
        "count": len(rows),
        "steps": rows,
        "mean_cpu_us": float(cpu.mean() / 1e3) if len(cpu) else None,
        "mean_gpu_busy_us": float(tab["gpu_busy_ns"].mean() / 1e3) if len(cpu) else None,
    }


# --------------------------------------------------------------------------- trimming
_TABLE_KIND_CODES = dict(_KIND_CODES)


def trim_table(table: EventTable, start: int, stop: int, step_regex: str | None = None, *,
               data_markers: Iterable[str] | None = None) -> EventTable:
    """Keep the events of steps ``[start, stop)`` and everything their GPU work needs.

    Steps are found as in :func:`find_iterations`; ``start``/``stop`` are 0-based positions
    in the sorted step list with Python slice semantics (negative values count from the
    end; ``stop`` None-like values are not accepted: pass ``len``). Kept:

    - host events (and other timed events: instants, counters, ...) that start inside the
      window ``[first kept step start, last kept step end)`` (the seed's
      ``ts_start <= ts < ts_end`` rule; ranges enclosing the window are dropped);
    - every device activity launched by a kept runtime call (by correlation), wherever it
      runs, and device activities without a launching call that start inside the window;
    - ``cuda_sync`` events and launch flows (``ac2g``) of kept runtime calls; other flows
      whose point lies in the window; ``gpu_user_annotation`` ranges carrying the external
      id of a kept host event (or, without one, overlapping the kept device activities);
    - all metadata (``M``) events and the profiler ``Trace`` span.

    Event ids are renumbered 0..n-1 (the graph builder needs ``eid`` = position); the
    original ids are kept in the column ``source_eid``. ``meta["trimmed"]`` records the
    steps kept. Health items of the full trace are dropped (their counts no longer apply);
    the zero-duration check is redone.

    Parameters
    ----------
    table : EventTable
    start, stop : int
        Step positions, ``[start, stop)``.
    step_regex : str, optional
        See :func:`find_iterations`.
    data_markers : iterable of str, optional
        Markers for the data-loader fallback of step finding.

    Returns
    -------
    EventTable

    Raises
    ------
    OpgraphInputError
        No steps in the trace (or none matching ``step_regex``), or an empty /
        out-of-range selection.
    """
    ev = table.events
    path = table.meta.get("file")
    kind_s = ev["kind"].astype(object).to_numpy()
    kind = np.fromiter((_TABLE_KIND_CODES.get(k, K_OTHER) for k in kind_s), dtype=np.int8, count=len(ev))
    ts = ev["ts_ns"].to_numpy(np.int64)
    dur = np.maximum(ev["dur_ns"].to_numpy(np.int64), 0)
    has_ts = ev["has_ts"].to_numpy(bool) if "has_ts" in ev else np.ones(len(ev), bool)
    names = np.array([s if isinstance(s, str) else "" for s in ev["name"].to_numpy(object)], dtype=object)
    # only timed X-like events can be step markers
    usable = has_ts & (ev["dur_ns"].to_numpy(np.int64) >= 0)
    kk = np.where(usable, kind, K_OTHER).astype(np.int8)
    cols = WindowColumns(KIND_NAMES[kk], names, ts, ts + dur, np.arange(len(ev), dtype=np.int64))
    try:
        steps, source = _steps_table(select_windows(cols, step_regex=step_regex,
                                                    data_markers=data_markers_of(data_markers), lanes=False))
    except WindowError as e:
        raise OpgraphInputError(path, f"--iterations: no steps found ({e.for_option('--step-regex')})") from None
    n = len(steps)
    if n == 0:
        raise OpgraphInputError(path, "--iterations: no steps found (no ProfilerStep#N, no Iteration N, "
                                      "no data-loader markers)")
    if not (-n <= start <= n and -n <= stop <= n):
        raise OpgraphInputError(path, f"--iterations {start}:{stop}: out of range; the trace has {n} steps "
                                      f"(positions 0..{n - 1})")
    lo, hi, _ = slice(start, stop).indices(n)
    if hi <= lo:
        raise OpgraphInputError(path, f"--iterations {start}:{stop}: empty selection; the trace has {n} steps "
                                      f"(positions 0..{n - 1})")
    sel = steps.iloc[lo:hi]
    w0, w1 = int(sel["ts"].min()), int(sel["end"].max())
    in_w = has_ts & (ts >= w0) & (ts < w1)
    is_host = kind <= K_RUNTIME
    keep = np.zeros(len(ev), dtype=bool)
    keep |= is_host & in_w
    corr = ev["correlation"].to_numpy(np.int64)
    rt_kept = keep & (kind == K_RUNTIME) & (corr >= 0)
    kept_corr = np.unique(corr[rt_kept])
    all_rt_corr = np.unique(corr[(kind == K_RUNTIME) & (corr >= 0)])
    act = (kind >= K_KERNEL) & (kind <= K_MEMSET)
    has_launch = np.isin(corr, all_rt_corr)
    keep |= act & ((np.isin(corr, kept_corr)) | (~has_launch & in_w))
    ks = kind_s
    keep |= (ks == "cuda_sync") & np.isin(corr, kept_corr)
    # flows
    fid = ev["flow_id"].to_numpy(np.int64) if "flow_id" in ev else np.full(len(ev), -1, np.int64)
    is_flow = (ks == "flow_start") | (ks == "flow_end")
    if is_flow.any():
        from opgraph.graph.linking import LAUNCH_FLOW_CATS
        cats = ev["cat"].astype(object).to_numpy()
        launch_flow = is_flow & np.isin(cats, list(LAUNCH_FLOW_CATS))
        keep |= launch_flow & np.isin(fid, kept_corr)
        keep |= is_flow & ~launch_flow & in_w
    # gpu annotations
    ga = np.flatnonzero(kind == K_GPU_ANNOTATION)
    if len(ga):
        ext = ev["external_id"].to_numpy(np.int64)
        kept_ext = np.unique(ext[keep & is_host & (ext >= 0)])
        by_ext = (ext[ga] >= 0) & np.isin(ext[ga], kept_ext)
        ka = np.flatnonzero(keep & act)
        if len(ka):
            d0, d1 = ts[ka].min(), (ts[ka] + dur[ka]).max()
            by_time = (ext[ga] < 0) & (ts[ga] < d1) & (ts[ga] + dur[ga] > d0)
        else:
            by_time = np.zeros(len(ga), bool)
        keep[ga[by_ext | by_time]] = True
    # metadata and the profiler span; everything else timed in the window
    keep |= np.isin(ks, ["meta", "trace_span"])
    other = ~is_host & ~act & (kind != K_GPU_ANNOTATION) & ~np.isin(ks, ["cuda_sync", "flow_start", "flow_end",
                                                                          "meta", "trace_span"])
    keep |= other & in_w
    idx = np.flatnonzero(keep)
    new = ev.iloc[idx].copy()
    new.insert(len(new.columns), "source_eid", new["eid"].to_numpy(np.int64))
    new["eid"] = np.arange(len(new), dtype=np.int64)
    new = new.reset_index(drop=True)
    meta = dict(table.meta)
    meta["trimmed"] = {"start": int(lo), "stop": int(hi), "step_source": source,
                       "steps": [str(s) for s in sel["name"]], "window_ns": [w0, w1],
                       "events_before": int(len(ev)), "events_after": int(len(new))}
    out = EventTable(new, meta, [])
    if meta.get("format") == "kineto":
        try:
            from opgraph.ingest.kineto import post_checks
            post_checks(out)
        except ImportError:  # pragma: no cover
            pass
    return out
