"""CUPTI counters per kernel, attributed to the CPU op that launched the kernel (HTA's
``get_cupti_counter_data_with_operators``; docs/counters.md).

In CUPTI range-profiler mode (``torch.profiler`` with ``experimental_config=
_ExperimentalConfig(profiler_metrics=[...])``), Kineto writes one ``cuda_profiler_range``
event per profiled range (by default one per kernel: auto-range, kernel replay) whose
``args`` are the counter values, e.g. ``sm__throughput.avg.pct_of_peak_sustained_elapsed``
(percent), ``dram__bytes_read.sum`` (bytes) or ``smsp__sass_thread_inst_executed_op_ffma_pred_on.sum``
(thread instructions). The range's name is the kernel's name (``__missing__`` when CUPTI
gave none). No kernel events are written in this mode, and the range's ``ts``/``dur`` are
not kernel times (Kineto spaces the ranges evenly), so they are not reported.

Each range is tied to its launch call, in this order of preference:

1. ``correlation``: the range carries the correlation id of a runtime call;
2. ``external_id``: the range carries an ``External id`` that one ``cpu_op`` has (the op
   itself, no launch call);
3. ``order``: the remaining ranges (sorted by ``ts``) and the kernel-launch calls that no
   range claimed by 1 (``cudaLaunchKernel``, ``cuLaunchKernel``, ``cudaLaunchKernelExC``,
   ``hipLaunchKernel`` ... sorted by ``ts``; not memcpy, memset or graph launches) are
   paired one to one, in order, **only when their counts are equal**: kernel replay
   serialises the kernels in launch order. This is HTA's rule; with unequal counts no range
   is paired by order (``match = "none"``), nothing is guessed.

The op of a range is the innermost ``cpu_op`` enclosing its launch call on the launching
thread (``nest`` edges), ``top_op`` the outermost, ``op_stack`` all of them outermost
first. A range with no launch call, or whose launch call runs under no ``cpu_op``, has op
``(no op)`` and is counted in ``no_op``.

``sass_flops`` (derived, FLOPs): ``2 × fma + mul + add`` over the SASS thread-instruction
counters ``smsp__sass_thread_inst_executed_op_{d,f,h}{fma,mul,add}_pred_on.sum`` a range
has (HTA's weights); absent when the trace has none of them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from opgraph.model.trace_graph import TraceGraph
from opgraph.analysis.display import TableResult, json_value

#: Category of the CUPTI range-profiler events.
RANGE_CAT = "cuda_profiler_range"
#: What an unattributed range shows as its op.
NO_OP = "(no op)"
#: Values of the ``match`` column.
MATCHES = ("correlation", "external_id", "order", "none")
#: Kernel-launch runtime calls (not copies, memsets, graph launches or host functions).
KERNEL_LAUNCH_RE = re.compile(
    r"^(cuda|hip|cu)(LaunchKernel|LaunchKernelExC|LaunchKernelEx|LaunchCooperativeKernel|"
    r"ExtModuleLaunchKernel|ModuleLaunchKernel|ExtLaunchKernel)(_v\d+|_ptsz|_spt)?$")
#: SASS thread-instruction counters and their FLOPs per instruction (``sass_flops``).
SASS_FLOP_WEIGHTS: dict[str, int] = {
    f"smsp__sass_thread_inst_executed_op_{p}{op}_pred_on.sum": 2 if op == "fma" else 1
    for p in ("d", "f", "h") for op in ("fma", "mul", "add")}
#: Range args that link events rather than count anything.
_LINK_ARGS = frozenset({"correlation", "External id", "external id", "device", "stream", "context", "Ev Idx",
                        "Record function id", "kernel", "name"})
#: Columns of the ``ranges`` table before the counters.
RANGE_COLUMNS = ("range", "eid", "kernel", "match", "launch_eid", "launch", "op_eid", "op", "top_op", "op_stack")


@dataclass(repr=False)
class CuptiCounters(TableResult):
    """Result of :func:`cupti_counters`.

    ``ranges``: one row per range in ``ts`` order: ``range`` (0-based), ``eid``, ``kernel``
    (the range's name), ``match`` (:data:`MATCHES`), ``launch_eid`` / ``launch`` (the launch
    call; -1 / None), ``op_eid`` (-1 for none), ``op`` (:data:`NO_OP` for none),
    ``top_op``, ``op_stack`` (tuple of op names, outermost first), ``sass_flops`` (when the
    trace has SASS counters), then one float column per counter (its unit is in its name:
    ``.pct_...`` percent, ``bytes`` bytes, ``inst`` instructions, ``cycles``; NaN where a
    range lacks it). ``by_op``: per op name, ``ranges`` and the **mean** of each counter
    over its ranges. ``launch_calls``: kernel-launch calls in the graph; ``note``: why no
    range was paired by order, if so.

    Examples
    --------
    >>> import opgraph
    >>> from opgraph.analysis.counters import cupti_counters
    >>> res = cupti_counters(opgraph.load(opgraph.example_trace("gpu_bound")))
    >>> len(res.ranges), res.counters   # no CUPTI range events in this trace
    (0, ())
    """

    ranges: pd.DataFrame
    by_op: pd.DataFrame
    counters: tuple[str, ...]
    launch_calls: int = 0
    note: str | None = None
    has_sass_flops: bool = False
    main_table: ClassVar[str] = "by_op"
    display_tables: ClassVar[tuple[str, ...]] = ("by_op", "ranges")

    @property
    def no_op(self) -> int:
        """Ranges not tied to any op."""
        return int((self.ranges["op"] == NO_OP).sum()) if len(self.ranges) else 0

    def match_counts(self) -> dict[str, int]:
        """Ranges per ``match`` value."""
        vc = self.ranges["match"].value_counts() if len(self.ranges) else pd.Series(dtype=int)
        return {m: int(vc.get(m, 0)) for m in MATCHES}

    def tables(self) -> dict[str, pd.DataFrame]:
        """``by_op`` and ``ranges`` (``op_stack`` as one string, ``" > "``-joined)."""
        r = self.ranges.copy()
        r["op_stack"] = [" > ".join(s) for s in r["op_stack"]]
        return {"by_op": self.by_op, "ranges": r}

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (``schemas/counters.schema.json``)."""
        cols = list(self.counters)
        rows = []
        for r in self.ranges.to_dict("records"):
            rows.append({
                "range": int(r["range"]), "eid": int(r["eid"]), "kernel": r["kernel"], "match": r["match"],
                "launch_eid": None if r["launch_eid"] < 0 else int(r["launch_eid"]), "launch": r["launch"],
                "op_eid": None if r["op_eid"] < 0 else int(r["op_eid"]), "op": r["op"], "top_op": r["top_op"],
                "op_stack": list(r["op_stack"]),
                "sass_flops": json_value(r["sass_flops"]) if self.has_sass_flops else None,
                "counters": {c: json_value(r[c]) for c in cols}})
        by_op = [{"op": r["op"], "ranges": int(r["ranges"]),
                  "sass_flops": json_value(r["sass_flops"]) if self.has_sass_flops else None,
                  "counters": {c: json_value(r[c]) for c in cols}} for r in self.by_op.to_dict("records")]
        return {"ranges": len(self.ranges), "with_op": len(self.ranges) - self.no_op, "no_op": self.no_op,
                "match": self.match_counts(), "launch_calls": int(self.launch_calls), "note": self.note,
                "counters": cols, "rows": rows, "by_op": by_op}


def _empty(counters: tuple[str, ...] = (), launch_calls: int = 0, note: str | None = None) -> CuptiCounters:
    ranges = pd.DataFrame({c: pd.Series(dtype=object) for c in RANGE_COLUMNS})
    by_op = pd.DataFrame({"op": pd.Series(dtype=object), "ranges": pd.Series(dtype=np.int64)})
    return CuptiCounters(ranges, by_op, counters, launch_calls, note)


def _counter_frame(args: pd.Series) -> pd.DataFrame:
    """The numeric, non-linking args of the ranges as float columns (first-seen order)."""
    recs = [a if isinstance(a, dict) else {} for a in args]
    raw = pd.DataFrame.from_records(recs, index=args.index) if recs else pd.DataFrame(index=args.index)
    keep = {}
    for c in raw.columns:
        if not isinstance(c, str) or c in _LINK_ARGS:
            continue
        col = raw[c]
        is_num = col.map(lambda v: isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)
                         and v == v)  # NaN: a range without this arg
        if not is_num.any():
            continue
        keep[c] = pd.to_numeric(col.where(is_num), errors="coerce").astype(float)
    return pd.DataFrame(keep, index=args.index)


def _nest_parent(G: TraceGraph) -> tuple[dict[int, int], np.ndarray, np.ndarray, np.ndarray]:
    """(position of each node key, nest parent position (-1: none), kind, name) per node."""
    a = G.arrays
    return a.pos_of, a.parent, a.kind, a.name


def _op_stacks(start: np.ndarray, parent: np.ndarray, kind: np.ndarray, name: np.ndarray,
               eid_of_pos: np.ndarray) -> tuple[np.ndarray, list[tuple[str, ...]]]:
    """For each start position (-1: none): the innermost ``cpu_op`` at or above it (its eid,
    -1 for none) and the ``cpu_op`` names from the outermost down. One vectorised step per
    nesting level."""
    n = len(start)
    innermost = np.full(n, -1, dtype=np.int64)
    levels: list[np.ndarray] = []
    cur = start.copy()
    while (cur >= 0).any():
        live = cur >= 0
        is_op = np.zeros(n, dtype=bool)
        is_op[live] = kind[cur[live]] == "cpu_op"
        first = is_op & (innermost < 0)
        innermost[first] = eid_of_pos[cur[first]]
        levels.append(np.where(is_op, cur, -1))
        nxt = np.full(n, -1, dtype=np.int64)
        nxt[live] = parent[cur[live]]
        cur = nxt
    stacks = []
    for i in range(n):
        stacks.append(tuple(str(name[lv[i]]) for lv in reversed(levels) if lv[i] >= 0))
    return innermost, stacks


def cupti_counters(G: TraceGraph) -> CuptiCounters:
    """CUPTI range-profiler counters per range with the op that launched it, and their mean
    per op (module docstring). A graph without ``cuda_profiler_range`` events (or without
    its events table) gives empty tables."""
    ev = G.graph.get("events")
    if not isinstance(ev, pd.DataFrame) or "cat" not in ev:
        return _empty(note="this graph carries no events table (build it from the raw trace)")
    cat = ev["cat"].astype(object)
    is_rng = (cat == RANGE_CAT).to_numpy(bool, copy=True)
    if "ph" in ev:
        is_rng &= (ev["ph"].astype(object) == "X").to_numpy(bool)
    rt = ev[(ev["kind"].astype(object) == "runtime").to_numpy(bool)]
    rt_names = rt["name"].astype(object).to_numpy(object)
    codes, uniq = pd.factorize(pd.Series(rt_names, dtype=object), use_na_sentinel=False)
    is_launch = np.array([isinstance(u, str) and bool(KERNEL_LAUNCH_RE.match(u)) for u in uniq], dtype=bool)
    launches = rt[is_launch[codes]] if len(rt) else rt
    if not is_rng.any():
        return _empty(launch_calls=len(launches))
    rng = ev[is_rng].sort_values(["ts_ns", "eid"], kind="stable")
    n = len(rng)
    cnt = _counter_frame(rng["args"])
    counters = tuple(cnt.columns)

    launch_eid = np.full(n, -1, dtype=np.int64)
    op_direct = np.full(n, -1, dtype=np.int64)
    match = np.full(n, "none", dtype=object)
    # 1. correlation id of a runtime call
    corr = rng["correlation"].to_numpy(np.int64) if "correlation" in rng else np.full(n, -1, np.int64)
    rt_corr = rt[["correlation", "eid"]]
    rt_corr = rt_corr[rt_corr["correlation"] >= 0].drop_duplicates("correlation", keep=False)
    hit = pd.Series(rt_corr["eid"].to_numpy(np.int64), index=rt_corr["correlation"].to_numpy(np.int64)) \
        .reindex(corr).to_numpy()
    ok = (corr >= 0) & ~np.isnan(hit.astype(float))
    launch_eid[ok] = hit[ok].astype(np.int64)
    match[ok] = "correlation"
    # 2. External id of one cpu_op
    ext = rng["external_id"].to_numpy(np.int64) if "external_id" in rng else np.full(n, -1, np.int64)
    ops = ev[(ev["kind"].astype(object) == "cpu_op").to_numpy(bool)][["external_id", "eid"]]
    ops = ops[ops["external_id"] >= 0].drop_duplicates("external_id", keep=False)
    hit = pd.Series(ops["eid"].to_numpy(np.int64), index=ops["external_id"].to_numpy(np.int64)) \
        .reindex(ext).to_numpy()
    ok = (match == "none") & (ext >= 0) & ~np.isnan(hit.astype(float))
    op_direct[ok] = hit[ok].astype(np.int64)
    match[ok] = "external_id"
    # 3. launch order, when the counts agree
    note = None
    rest = np.flatnonzero(match == "none")
    free = launches[~launches["eid"].isin(launch_eid[launch_eid >= 0])].sort_values(["ts_ns", "eid"], kind="stable")
    if len(rest):
        if len(rest) == len(free):
            launch_eid[rest] = free["eid"].to_numpy(np.int64)
            match[rest] = "order"
        else:
            note = (f"{len(rest):,} ranges without a correlation or External id and {len(free):,} kernel-launch "
                    "calls left: counts differ, so no range is paired by launch order")

    # op stacks: from the launch call (or the op itself) up the nest edges
    pos_of, parent, kind, name = _nest_parent(G)
    eid_of_pos = np.array(list(pos_of), dtype=np.int64)
    start_eid = np.where(launch_eid >= 0, launch_eid, op_direct)
    start = np.array([pos_of.get(int(e), -1) if e >= 0 else -1 for e in start_eid], dtype=np.int64)
    op_eid, stacks = _op_stacks(start, parent, kind, name, eid_of_pos)
    op_name = np.array([s[-1] if s else NO_OP for s in stacks], dtype=object)
    top = np.array([s[0] if s else None for s in stacks], dtype=object)
    names_by_eid = pd.Series(ev["name"].astype(object).to_numpy(object), index=ev["eid"].to_numpy(np.int64))
    launch_name = names_by_eid.reindex(launch_eid).to_numpy(object)
    launch_name[launch_eid < 0] = None

    def obj(v: Any) -> pd.Series:  # object columns keep None (pandas >= 3 would infer str)
        return pd.Series(np.asarray(v, dtype=object), dtype=object)

    stack_col = np.empty(n, dtype=object)
    stack_col[:] = stacks
    out = pd.DataFrame({
        "range": np.arange(n, dtype=np.int64), "eid": rng["eid"].to_numpy(np.int64),
        "kernel": obj(rng["name"].astype(object).to_numpy(object)), "match": obj(match), "launch_eid": launch_eid,
        "launch": obj(launch_name), "op_eid": op_eid, "op": obj(op_name), "top_op": obj(top),
        "op_stack": obj(stack_col)})
    sass = [c for c in counters if c in SASS_FLOP_WEIGHTS]
    has_sass = bool(sass)
    if has_sass:
        w = np.array([SASS_FLOP_WEIGHTS[c] for c in sass], dtype=float)
        vals = cnt[sass].to_numpy(float)
        flops = np.nansum(vals * w, axis=1)
        out["sass_flops"] = np.where(np.isnan(vals).all(axis=1), np.nan, flops)
    else:
        out["sass_flops"] = np.nan
    out = pd.concat([out, cnt.reset_index(drop=True)], axis=1)
    mean_cols = (["sass_flops"] if has_sass else []) + list(counters)
    g = out.groupby("op", sort=False)
    by_op = g.size().rename("ranges").to_frame().join(g[mean_cols].mean()).reset_index()
    by_op = by_op.sort_values(["ranges", "op"], ascending=[False, True], kind="stable").reset_index(drop=True)
    if not has_sass:
        by_op["sass_flops"] = np.nan
    return CuptiCounters(out, by_op, counters, len(launches), note, has_sass)
