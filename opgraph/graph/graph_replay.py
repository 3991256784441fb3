"""CUDA/HIP-graph replays attributed to the ops that captured them.

A graph replay is one ``cudaGraphLaunch``/``hipGraphLaunch`` call whose correlation is
carried by every kernel, copy and set the graph runs: the profiler records no CPU op above
those activities, so per-op tables file all of them under one launch call (TraceLens #827,
HTA #290). The ops are in the trace that recorded the **capture**: between
``cudaStreamBeginCapture`` and ``cudaStreamEndCapture`` every launch call is recorded on the
capturing thread inside the ops that issued it, but runs nothing (it becomes a graph node).

Method (docs/graph-replay.md):

1. **Captured graphs.** In each capture source (the trace itself, and every ``--capture``
   file), per thread, each ``...BeginCapture`` is paired with the next ``...EndCapture``.
   The launch calls between them on that thread, in call order, are the graph's nodes
   (kernel, memcpy or memset by the API name; host-function nodes and calls whose activity
   ran in the capture trace, i.e. were not captured, are left out). Each node keeps the
   kernel name the call recorded (HIP's ``args.kernel``; CUDA records none), the chain of
   ``cpu_op`` names enclosing the call (outermost first) and the innermost
   ``user_annotation`` enclosing it.
2. **Replays.** Each graph-launch call of the trace and the device activities sharing its
   correlation, in start order.
3. **Matching.** When the capture recorded kernel names, the k-th activity named X in the
   replay is the k-th node named X of the captured graph (``evidence='name_order'``; robust
   to the interleaving of streams); the captured graph with the most matches is used, if it
   matches at least half of the replay. Without names, a replay is mapped position by
   position (``evidence='position'``) only when all its activities ran on one stream (so it
   ran in capture order), to a captured graph with the same number and kinds of nodes, and
   only when every such graph gives the same ops. Anything else stays unmapped and is
   counted.

The result (``G.graph['graph_replay']``, JSON-ready) holds the captures, the counts and one
row per mapped activity: ``eid``, the index of its op chain in ``chains``, the capture and
node index, and the evidence. Analyses name a mapped activity's op from its chain; an
unmapped replayed activity is named by its kernel's category, never silently filed under a
CPU op.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from opgraph.model.lanes import lanes as lane_codes
from opgraph.model.table import EventTable
from opgraph.names import names_where

#: A graph replay call.
GRAPH_LAUNCH_RE = re.compile(r"^(cuda|hip|cu)GraphLaunch(_v\d+|_ptsz|_spt)?$")
#: Capture begin / end calls.
BEGIN_CAPTURE_RE = re.compile(r"^(cuda|hip|cu)StreamBeginCapture(ToGraph)?(_v\d+|_ptsz|_spt)?$")
END_CAPTURE_RE = re.compile(r"^(cuda|hip|cu)StreamEndCapture(_v\d+|_ptsz|_spt)?$")
#: Launch calls that add a device node to a graph being captured.
CAPTURED_LAUNCH_RE = re.compile(
    r"^(cuda|hip|cu)(LaunchKernel|LaunchKernelExC|LaunchKernelEx|LaunchCooperativeKernel|ExtModuleLaunchKernel|"
    r"ModuleLaunchKernel|ExtLaunchKernel|Memcpy\w*|Memset\w*)(_v\d+|_ptsz|_spt)?$")
#: Least share of a replay's activities a captured graph must match by name to be used.
MIN_NAME_MATCH = 0.5
#: Evidence labels.
EVIDENCE = ("name_order", "position")


@dataclass
class CapturedGraph:
    """One capture window: its source file, thread, times (ns) and nodes in call order."""

    source: str
    begin_ns: int
    end_ns: int
    label: str | None
    kinds: list[str] = field(default_factory=list)
    names: list[str | None] = field(default_factory=list)
    chains: list[tuple[str, ...]] = field(default_factory=list)
    annotations: list[str | None] = field(default_factory=list)

    @property
    def names_recorded(self) -> bool:
        """Whether the capture recorded the kernel name of every kernel node."""
        return all(n is not None for n, k in zip(self.names, self.kinds) if k == "kernel")


def _api_kind(name: str) -> str:
    s = name.lower()
    return "memcpy" if "memcpy" in s else "memset" if "memset" in s else "kernel"


def _enclosing(ranges: pd.DataFrame, points: pd.DataFrame) -> list[list[int]]:
    """For each row of ``points`` (columns ts, end), the positions in ``ranges`` (columns
    ts, end, sorted by ts then -end) of the ranges containing it, outermost first: a stack
    sweep over one thread's properly nested ranges (a range crossing its parent's end is
    popped when the sweep passes its end)."""
    rts = ranges["ts"].to_numpy(np.int64)
    rend = ranges["end"].to_numpy(np.int64)
    stack: list[int] = []
    i = 0
    order = np.argsort(points["ts"].to_numpy(np.int64), kind="stable")
    res: dict[int, list[int]] = {}
    pts = points["ts"].to_numpy(np.int64)
    pend = points["end"].to_numpy(np.int64)
    for j in order.tolist():
        t = int(pts[j])
        while i < len(rts) and rts[i] <= t:
            while stack and rend[stack[-1]] < rts[i]:
                stack.pop()
            stack.append(i)
            i += 1
        while stack and rend[stack[-1]] < t:
            stack.pop()
        res[j] = [r for r in stack if rend[r] >= pend[j] and rts[r] <= t]
    return [res.get(j, []) for j in range(len(points))]


def captured_graphs(table: EventTable, source: str | None = None) -> list[CapturedGraph]:
    """The graphs captured in ``table`` (module docstring, step 1), in capture order.

    Parameters
    ----------
    table : EventTable
        A reader's canonical table (times in ns).
    source : str, optional
        The file to name in the result (default: the table's own file).
    """
    ev = table.frame
    src = source if source is not None else str(table.meta.get("file") or "")
    if not len(ev):
        return []
    kind = ev["kind"].to_numpy(dtype=object)
    rt = np.flatnonzero(kind == "runtime")
    names = ev["name"].to_numpy(dtype=object)
    begin = rt[names_where(names[rt], BEGIN_CAPTURE_RE.match)]
    if not len(begin):
        return []
    end_calls = rt[names_where(names[rt], END_CAPTURE_RE.match)]
    ts = ev["ts_ns"].to_numpy(np.int64)
    dur = np.maximum(ev["dur_ns"].to_numpy(np.int64), 0)
    end = ts + dur
    lanes = lane_codes(ev["pid"].to_numpy(dtype=object), ev["tid"].to_numpy(dtype=object))  # per thread
    corr = ev["correlation"].to_numpy(np.int64)
    args = table.event_args()
    # launch calls whose activity ran were not captured
    act = np.isin(kind, ("kernel", "memcpy", "memset"))
    launches = rt[names_where(names[rt], CAPTURED_LAUNCH_RE.match)]
    launches = launches[~np.isin(corr[launches], corr[act & (corr >= 0)])]
    host = np.flatnonzero(np.isin(kind, ("cpu_op", "annotation")))
    cap_lanes = np.unique(lanes[begin])
    # per capturing lane, its end calls, launches and host ranges (sorted by start)
    per_lane = {}
    for ln in cap_lanes.tolist():
        def on(ix: np.ndarray) -> np.ndarray:
            ix = ix[lanes[ix] == ln]
            return ix[np.lexsort((ix, ts[ix]))]
        per_lane[ln] = (on(end_calls), on(launches), on(host))
    out: list[CapturedGraph] = []
    for b, e in _capture_pairs(begin, end_calls, ts, lanes, src):
        _, launch_l, host_l = per_lane[int(lanes[b])]
        w0, w1 = int(end[b]), int(ts[e])
        lo, hi = np.searchsorted(ts[launch_l], [w0, w1], side="left").tolist()
        sel = launch_l[lo:hi]
        sel = sel[end[sel] <= w1]
        # host ranges overlapping the window (starts at or before its end)
        hsel = host_l[:np.searchsorted(ts[host_l], w1, side="right")]
        hsel = hsel[end[hsel] >= w0]
        hr = pd.DataFrame({"pos": hsel, "ts": ts[hsel], "end": end[hsel]})
        hr = hr.sort_values(["ts", "end"], ascending=[True, False], kind="stable").reset_index(drop=True)
        wrap = hsel[(ts[hsel] <= ts[b]) & (end[hsel] >= end[e])]
        ann = [i for i in wrap.tolist() if kind[i] == "annotation"]
        label = str(names[max(ann, key=lambda i: (int(ts[i]), -int(dur[i])))]) if ann else None
        g = CapturedGraph(src, w0, w1, label)
        encl = _enclosing(hr, pd.DataFrame({"ts": ts[sel], "end": end[sel]}))
        hpos = hr["pos"].to_numpy(np.int64)
        for i, rows, a in zip(sel.tolist(), encl, args.rows(sel)):
            kn = a.get("kernel") if isinstance(a, dict) else None
            g.kinds.append(_api_kind(str(names[i])))
            g.names.append(kn.strip() if isinstance(kn, str) and kn.strip() else None)
            ps = hpos[rows] if rows else np.empty(0, np.int64)
            g.chains.append(tuple(str(names[p]) for p in ps if kind[p] == "cpu_op"))
            anns = [p for p in ps.tolist() if kind[p] == "annotation"]
            g.annotations.append(str(names[anns[-1]]) if anns else None)
        out.append(g)
    return out


#: Deepest nesting of BeginCapture calls on one thread that a capture file may hold. CUDA
#: and HIP capture a stream per call, so real nesting is as deep as the streams a thread
#: captures at once (a handful); the bound is the one nested args have (32 levels), and
#: keeps the pairing and the graphs linear in the file (N nested begins made N graphs of
#: N nodes: 2,000 levels took 20 s and 1.3 GB).
MAX_CAPTURE_DEPTH = 32


def _capture_pairs(begin: np.ndarray, end_calls: np.ndarray, ts: np.ndarray, lanes: np.ndarray,
                   src: str) -> list[tuple[int, int]]:
    """``(begin, end)`` positions of the captures: on each thread, in time order, an end call
    closes the latest open begin (nested captures pair like brackets; each begin and each
    end is used once; a begin never closed is no capture), in order of the begins' starts.
    Nesting past :data:`MAX_CAPTURE_DEPTH` is an :class:`~opgraph.errors.OpgraphInputError`
    naming ``src``."""
    from opgraph.errors import OpgraphInputError

    calls = np.concatenate([begin, end_calls])
    is_begin = np.concatenate([np.ones(len(begin), bool), np.zeros(len(end_calls), bool)])
    order = np.lexsort((calls, ts[calls], lanes[calls]))  # by thread, then time, then file order
    stacks: dict[int, list[int]] = {}
    pairs: list[tuple[int, int]] = []
    for i, opening in zip(calls[order].tolist(), is_begin[order].tolist()):
        stack = stacks.setdefault(int(lanes[i]), [])
        if opening:
            if len(stack) >= MAX_CAPTURE_DEPTH:
                raise OpgraphInputError(src, f"BeginCapture calls nested more than {MAX_CAPTURE_DEPTH} deep on one "
                                             "thread (a stream is captured once at a time; at most "
                                             f"{MAX_CAPTURE_DEPTH} captures can be open together)")
            stack.append(i)
        elif stack:
            pairs.append((stack.pop(), i))
    return sorted(pairs, key=lambda p: (int(ts[p[0]]), p[0]))


def _replays(table: EventTable) -> list[tuple[int, np.ndarray]]:
    """Each graph-launch call (position) and the positions of its device activities, in
    start order."""
    ev = table.frame
    kind = ev["kind"].to_numpy(dtype=object)
    names = ev["name"].to_numpy(dtype=object)
    rt = np.flatnonzero(kind == "runtime")
    gl = rt[names_where(names[rt], GRAPH_LAUNCH_RE.match)]
    if not len(gl):
        return []
    corr = ev["correlation"].to_numpy(np.int64)
    ts = ev["ts_ns"].to_numpy(np.int64)
    act = np.flatnonzero(np.isin(kind, ("kernel", "memcpy", "memset")) & (corr >= 0))
    want = corr[gl]
    counts = Counter(want.tolist())
    act = act[np.isin(corr[act], want)]
    act = act[np.lexsort((act, ts[act], corr[act]))]
    ac = corr[act]
    out = []
    for g in gl.tolist():
        c = int(corr[g])
        if c < 0 or counts[c] != 1:
            continue  # no correlation, or shared by two launch calls: not attributable
        lo, hi = np.searchsorted(ac, c, "left"), np.searchsorted(ac, c, "right")
        out.append((g, act[lo:hi]))
    return out


def _kernel_key(name: Any) -> str:
    return str(name).strip()


def _best_named_graph(rkeys: list[tuple[str, int]], keyed: list[dict[tuple[str, int], int] | None],
                      graphs: list[CapturedGraph]) -> tuple[int, int]:
    """(captured graph, matches) with the most (name, occurrence) matches for ``rkeys``;
    (-1, 0) when none matches, or when graphs tied at the most matches would give the
    replay different ops (which one ran cannot be told from the names)."""
    hits = [sum(1 for k in rkeys if k in d) if d is not None else 0 for d in keyed]
    top = max(hits, default=0)
    if top == 0:
        return -1, 0
    tied = [gi for gi, h in enumerate(hits) if h == top]
    ops = {tuple(graphs[gi].chains[keyed[gi][k]] for k in rkeys if k in keyed[gi]) for gi in tied}  # type: ignore[index]
    return (tied[0], top) if len(ops) == 1 else (-1, 0)


def attribute_replays(table: EventTable, graphs: list[CapturedGraph],
                      replays: list[tuple[int, np.ndarray]] | None = None) -> dict[str, Any]:
    """Map the replayed activities of ``table`` to the ops that captured them (module
    docstring, steps 2-3).

    Returns
    -------
    dict
        JSON-ready: ``captures`` (source, label, begin/end ns, nodes, whether names were
        recorded), ``replays`` (graph-launch calls), ``activities`` (their device
        activities), ``mapped``, ``mapped_by`` (per evidence), ``unmapped``, ``chains``
        (distinct op chains, outermost first), ``annotations`` (distinct innermost
        annotations) and ``map`` (columns ``eid``, ``chain``, ``annotation``, ``capture``,
        ``node``, ``evidence``; ``annotation`` is -1 when none).
    """
    ev = table.frame
    names = ev["name"].to_numpy(dtype=object)
    kind = ev["kind"].to_numpy(dtype=object)
    eid = ev["eid"].to_numpy(np.int64)
    stream = ev["stream"].to_numpy(np.int64)
    reps = _replays(table) if replays is None else replays
    chain_ids: dict[tuple[str, ...], int] = {}
    ann_ids: dict[str, int] = {}
    cols: dict[str, list[Any]] = {k: [] for k in ("eid", "chain", "annotation", "capture", "node", "evidence")}
    by_ev: Counter = Counter()
    # name -> occurrence index per captured graph
    keyed: list[dict[tuple[str, int], int] | None] = []
    for g in graphs:
        if not g.names_recorded:
            keyed.append(None)
            continue
        seen: Counter = Counter()
        d: dict[tuple[str, int], int] = {}
        for i, (k, n) in enumerate(zip(g.kinds, g.names)):
            key = _kernel_key(n) if k == "kernel" else f"({k})"
            d[(key, seen[key])] = i
            seen[key] += 1
        keyed.append(d)
    n_act = 0
    best_of: dict[tuple, tuple[int, int]] = {}
    for _call, acts in reps:
        n_act += len(acts)
        if not len(acts) or not graphs:
            continue
        seen = Counter()
        rkeys = []
        for p in acts.tolist():
            key = _kernel_key(names[p]) if kind[p] == "kernel" else f"({kind[p]})"
            rkeys.append((key, seen[key]))
            seen[key] += 1
        tk = tuple(rkeys)
        if tk not in best_of:  # replays of one graph repeat the same keys: score them once
            best_of[tk] = _best_named_graph(rkeys, keyed, graphs)
        best, best_hits = best_of[tk]
        pairs: list[tuple[int, int, int, str]] = []
        if best >= 0 and best_hits >= MIN_NAME_MATCH * len(acts):
            d = keyed[best]
            assert d is not None
            pairs = [(p, best, d[k], "name_order") for p, k in zip(acts.tolist(), rkeys) if k in d]
        elif len(np.unique(stream[acts])) == 1:  # one stream: the replay runs in capture order
            rk = [str(kind[p]) for p in acts.tolist()]
            cands = [gi for gi, g in enumerate(graphs) if g.kinds == rk]
            if cands and len({tuple(graphs[gi].chains) for gi in cands}) == 1:
                pairs = [(p, cands[0], i, "position") for i, p in enumerate(acts.tolist())]
        for p, gi, node, evd in pairs:
            g = graphs[gi]
            ch = g.chains[node]
            cid = chain_ids.setdefault(ch, len(chain_ids))
            an = g.annotations[node]
            aid = ann_ids.setdefault(an, len(ann_ids)) if an is not None else -1
            cols["eid"].append(int(eid[p]))
            cols["chain"].append(cid)
            cols["annotation"].append(aid)
            cols["capture"].append(gi)
            cols["node"].append(int(node))
            cols["evidence"].append(evd)
            by_ev[evd] += 1
    mapped = len(cols["eid"])
    return {
        "captures": [{"source": g.source, "label": g.label, "begin_ns": g.begin_ns, "end_ns": g.end_ns,
                      "nodes": len(g.kinds), "names_recorded": g.names_recorded} for g in graphs],
        "replays": len(reps), "activities": int(n_act), "mapped": mapped,
        "mapped_by": {k: int(by_ev.get(k, 0)) for k in EVIDENCE}, "unmapped": int(n_act - mapped),
        "chains": [list(c) for c in chain_ids], "annotations": list(ann_ids), "map": cols,
    }


def attach_captures(table: EventTable, extra: list[CapturedGraph] | None = None) -> dict[str, Any] | None:
    """Attribute the graph replays of ``table`` using the captures it holds itself and the
    graphs ``extra`` (captured in other traces); the result goes to
    ``table.meta['graph_replay']`` (and from there to ``G.graph['graph_replay']``), None when
    the trace replays no graph (stored too, so the build does not look again)."""
    reps = _replays(table)
    if not reps:
        table.meta["graph_replay"] = None
        return None
    graphs = captured_graphs(table) + list(extra or [])
    doc = attribute_replays(table, graphs, reps)
    table.meta["graph_replay"] = doc
    if doc["unmapped"]:
        why = ("no capture of these graphs is in the trace; pass the trace that recorded the capture with "
               "`opgraph build --capture FILE`" if not graphs else
               "no captured graph matched them (names differ or fit several captured graphs with different "
               "ops; or the capture recorded no kernel names and the replay ran on several streams, or several "
               "captured graphs fit by position)")
        table.warn("graph_replay_unmapped", doc["unmapped"], None,
                   f"graph-replay activities not mapped to the ops that captured them: {why}; they are named by "
                   "their kernel's category")
    return doc


def attach_capture_files(table: EventTable, paths: list[str]) -> dict[str, Any] | None:
    """Read each capture trace in ``paths`` and :func:`attach_captures` its graphs to ``table``."""
    from opgraph.errors import OpgraphInputError
    from opgraph.ingest.readers import read_trace

    graphs: list[CapturedGraph] = []
    for p in paths:
        got = captured_graphs(read_trace(p), p)
        if not got:
            raise OpgraphInputError(p, "--capture: no graph capture in this trace (no cudaStreamBeginCapture/"
                                       "hipStreamBeginCapture ... EndCapture pair)")
        graphs += got
    return attach_captures(table, graphs)


def report_line(doc: dict[str, Any] | None) -> str:
    """One line for ``opgraph build`` about graph replays."""
    if doc is None:
        return "no graph replays in the trace"
    pct = 100.0 * doc["mapped"] / doc["activities"] if doc["activities"] else 100.0
    return (f"graph replays: {doc['mapped']}/{doc['activities']} replayed activities of {doc['replays']} launches "
            f"mapped to the ops that captured them ({pct:.1f}%) from {len(doc['captures'])} captured graph(s)")


def replay_map(graph_attrs: dict[str, Any]) -> tuple[pd.DataFrame, list[tuple[str, ...]], list[str]]:
    """``G.graph['graph_replay']``'s map as ``(rows, chains, annotations)``: ``rows`` has the
    columns ``eid``, ``chain`` and ``annotation`` (indexes into ``chains``, op names
    outermost first, and ``annotations``; -1 for none), ``capture``, ``node`` and
    ``evidence``; empty when the graph has none. Callers resolve each distinct chain once."""
    doc = graph_attrs.get("graph_replay")
    cols = ["eid", "chain", "annotation", "capture", "node", "evidence"]
    if not isinstance(doc, dict) or not isinstance(doc.get("map"), dict):
        return pd.DataFrame({c: [] for c in cols}), [], []
    return (pd.DataFrame(doc["map"], columns=cols), [tuple(c) for c in doc.get("chains", [])],
            [str(a) for a in doc.get("annotations", [])])


def is_graph_launch(names: np.ndarray) -> np.ndarray:
    """Mask of graph-launch API names."""
    return names_where(names, GRAPH_LAUNCH_RE.match)


__all__ = ["CapturedGraph", "captured_graphs", "attribute_replays", "attach_captures", "attach_capture_files",
           "report_line", "replay_map", "is_graph_launch"]
