"""Frequent kernel sequences: runs of consecutive kernels on a stream that repeat, the
candidates for fusion or for a CUDA graph (HTA's ``get_frequent_cuda_kernel_sequences``;
``opgraph sequences``, docs/sequences.md).

Definitions (all exact; times in ns inside, µs in the tables):

* Per (device, stream), the kernels in start order form one sequence. With ``op`` (a
  regular expression), only kernels whose launching call lies inside an op matching it are
  kept, and the sequence is cut between op instances: a pattern never spans two calls of
  the op (HTA's per-operator view).
* A **pattern** is a run of ``L`` consecutive kernel names, ``min_length <= L <=
  max_length``. Its **occurrences** are counted without overlap, left to right per
  sequence (``A A A A`` holds ``A A`` twice, not three times), so ``total_us``, the summed
  durations of the kernels of its occurrences, never counts a kernel twice for one pattern.
* Candidates are found by counting every run (overlapping, vectorised with a rolling hash of
  the name codes); the ``top`` ×4 most frequent per length are then counted exactly (names
  compared, so hash collisions cannot merge patterns).
* A pattern is **dropped when a longer pattern containing it has as many occurrences**: it
  only ever ran as part of the longer one. The rest are ranked by ``total_us``, and a
  pattern is left out when more than half of its kernels belong to occurrences of a pattern
  ranked above it (the other rotations of one repeating loop, shorter runs of one repeated
  kernel): each row shows a different stretch of the kernel stream.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from opgraph.model.trace_graph import TraceGraph
from opgraph.model.tree import climb_to_last
from opgraph.analysis.op_hierarchy import outermost_ops
from opgraph.names import kernel_label as _kernel_label
from opgraph.analysis.display import TableResult, json_records
from opgraph.analysis.kind_codes import K_KERNEL
from opgraph.analysis.graph_frame import frame_of

#: Columns of the ``patterns`` table.
COLUMNS: tuple[str, ...] = ("rank", "length", "occurrences", "total_us", "mean_us", "pct_kernel_time", "streams",
                            "op", "first_eid", "kernels")
_P = np.uint64(1_000_003)


@dataclass(repr=False)
class KernelSequences(TableResult):
    """Result of :func:`kernel_sequences`: ``patterns`` (:data:`COLUMNS`; ``kernels`` is the
    list of short kernel names) and the parameters used.

    Examples
    --------
    >>> import opgraph
    >>> s = opgraph.kernel_sequences(opgraph.example_trace("gpu_bound"), min_length=2)
    >>> int(s.to_frame()["occurrences"].iloc[0]) >= 2
    True
    """

    patterns: pd.DataFrame
    kernels: int
    kernel_time_us: float
    op: str | None
    min_length: int
    max_length: int
    whole_calls: bool = False
    main_table: ClassVar[str] = "patterns"

    def tables(self) -> dict[str, pd.DataFrame]:
        """``patterns`` (µs; ``kernels`` joined by `` → ``)."""
        p = self.patterns.copy()
        p["kernels"] = [" → ".join(k) for k in p["kernels"]]
        return {"patterns": p}

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (``schemas/sequences.schema.json``)."""
        rows = json_records(self.patterns)
        for r, k in zip(rows, self.patterns["kernels"]):
            r["kernels"] = list(k)
        return {"kernels": self.kernels, "kernel_time_us": self.kernel_time_us, "op": self.op,
                "min_length": self.min_length, "max_length": self.max_length, "whole_calls": self.whole_calls,
                "patterns": rows}


def _hashes(codes: np.ndarray, length: int) -> np.ndarray:
    """Rolling hash of every run of ``length`` codes (uint64 arithmetic wraps)."""
    n = len(codes) - length + 1
    h = np.zeros(n, dtype=np.uint64)
    c = codes.astype(np.uint64) + np.uint64(1)
    with np.errstate(over="ignore"):
        for j in range(length):
            h = h * _P + c[j:j + n]
    return h


def _count_exact(codes: np.ndarray, seg: np.ndarray, starts: np.ndarray, pattern: np.ndarray) -> np.ndarray:
    """Non-overlapping occurrences of ``pattern`` among candidate ``starts`` (sorted), left to
    right within each segment (``seg`` per position). Names are compared (vectorised); the
    greedy left-to-right pass runs in Python only when occurrences do overlap."""
    L = len(pattern)
    if not len(starts):
        return starts
    ok = (codes[starts[:, None] + np.arange(L)] == pattern).all(axis=1) & (seg[starts] == seg[starts + L - 1])
    starts = starts[ok]
    if len(starts) < 2:
        return starts
    close = (np.diff(starts) < L) & (seg[starts[1:]] == seg[starts[:-1]])
    if not close.any():
        return starts
    out: list[int] = []
    last_end: dict[int, int] = {}
    for st in starts.tolist():
        g = int(seg[st])
        if st >= last_end.get(g, -1):
            out.append(st)
            last_end[g] = st + L
    return np.array(out, dtype=np.int64)


def kernel_sequences(G: TraceGraph, op: str | None = None, min_length: int = 3, max_length: int = 8,
                     top: int = 10, whole_calls: bool = False) -> KernelSequences:
    """The most time-consuming repeated kernel sequences of ``G`` (module docstring).

    Parameters
    ----------
    G : TraceGraph
        A trace graph.
    op : str, optional
        Regular expression: only kernels launched inside a matching op, cut per op call.
    min_length, max_length : int
        Pattern lengths (kernels), ``2 <= min_length <= max_length``.
    top : int
        Patterns kept.
    whole_calls : bool
        With ``op``: each call's whole kernel sequence (all its streams, in start order) is
        one pattern, and identical sequences are counted (HTA's definition; calls with fewer
        than ``min_length`` kernels are left out, ``max_length`` does not apply).

    Returns
    -------
    KernelSequences
    """
    if min_length < 2 or max_length < min_length:
        raise ValueError(f"pattern lengths must satisfy 2 <= min ({min_length}) <= max ({max_length})")
    rx = re.compile(op) if op else None
    f = frame_of(G)
    k = np.flatnonzero(f.kind == K_KERNEL)
    total_all = int(f.dur[k].sum())
    seg_key = (f.device[k] << 32) + f.stream[k]
    if rx is not None:
        # the ops on the launching call's nesting path that match: the outermost one cuts the sequence
        rt = f.launcher[k]
        parent = f.parent
        cur = np.where(rt >= 0, parent[np.maximum(rt, 0)], -1)
        codes_n, uniq_n = pd.factorize(pd.Series(f.name, dtype=object))
        hit_u = np.array([bool(rx.search(str(u))) for u in uniq_n], dtype=bool)
        hit = hit_u[codes_n] if len(f) else np.zeros(0, bool)
        inst = climb_to_last(cur, parent, hit)   # the outermost matching op wins
        keep = inst >= 0
        k, seg_key, inst = k[keep], seg_key[keep], inst[keep]
        if whole_calls:
            return _whole_calls(f, k, inst, min_length, max_length, top, total_all, op)
        seg_key = seg_key * (len(f) + 1) + inst
    elif whole_calls:
        raise ValueError("whole_calls needs op (the op whose calls are the patterns)")
    order = np.lexsort((k, f.ts[k], seg_key))
    k, seg_key = k[order], seg_key[order]
    seg = np.cumsum(np.concatenate(([0], (seg_key[1:] != seg_key[:-1]).astype(np.int64)))) if len(k) else k
    skey = (f.device[k] << 32) + f.stream[k]
    codes, uniq = pd.factorize(pd.Series(f.name[k], dtype=object)) if len(k) else (np.zeros(0, np.int64), [])
    codes = np.asarray(codes, dtype=np.int64)
    labels = np.array([kernel_label(str(u)) for u in uniq], dtype=object)
    names = labels[codes] if len(k) else np.zeros(0, object)
    dur = f.dur[k].astype(np.int64)
    cum = np.concatenate(([0], np.cumsum(dur)))
    _is_op, top_op = outermost_ops(f)
    rt_all = f.launcher[k]
    op_of = np.where(rt_all >= 0, top_op[np.maximum(rt_all, 0)], -1)
    found: list[dict[str, Any]] = []
    for L in range(min_length, max_length + 1):
        if len(k) < L:
            break
        h = _hashes(codes, L)
        same_seg = seg[L - 1:] == seg[:len(seg) - L + 1]
        h, pos = h[same_seg], np.flatnonzero(same_seg)
        if not len(h):
            continue
        uh, inv, cnt = np.unique(h, return_inverse=True, return_counts=True)
        cand = np.argsort(-cnt, kind="stable")[:top * 4]
        cand = cand[cnt[cand] >= 2]
        if not len(cand):
            continue
        o = np.argsort(inv, kind="stable")
        bounds = np.concatenate(([0], np.cumsum(np.bincount(inv, minlength=len(uh)))))
        for ci in cand.tolist():
            starts = pos[o[bounds[ci]:bounds[ci + 1]]]
            pat = codes[starts[0]:starts[0] + L]
            occ_a = _count_exact(codes, seg, np.sort(starts), pat)
            if len(occ_a) < 2:
                continue
            occ = occ_a
            t = int((cum[occ_a + L] - cum[occ_a]).sum())
            first_ops = op_of[occ_a]
            fo = pd.Series(first_ops[first_ops >= 0])
            op_name = str(f.name[int(fo.mode().iloc[0])]) if len(fo) else None
            found.append({"length": L, "occurrences": len(occ), "total_ns": t, "streams": int(len(np.unique(skey[occ_a]))),
                          "op": op_name, "first_eid": int(f.node[k[int(occ[0])]]),
                          "codes": tuple(pat.tolist()), "occ": occ_a, "kernels": tuple(names[int(occ[0]):int(occ[0]) + L].tolist())})
    # drop a pattern contained in a longer one with as many occurrences
    maximal = [p for p in found if not any(
        q["length"] > p["length"] and q["occurrences"] >= p["occurrences"] and _contains(q["codes"], p["codes"])
        for q in found)]
    maximal.sort(key=lambda p: (-p["total_ns"], -p["occurrences"], p["length"], p["kernels"]))
    # then one pattern per stretch of kernels: a pattern whose kernels are mostly (> half)
    # those of a pattern ranked above it (a rotation of the same loop, a shorter run of the
    # same repeated kernel) is left out
    covered = np.zeros(len(k), dtype=bool)
    kept = []
    for p in maximal:
        idx = (p["occ"][:, None] + np.arange(p["length"])).ravel()
        if covered[idx].mean() > 0.5:
            continue
        covered[idx] = True
        kept.append(p)
        if len(kept) == top:
            break
    rows = pd.DataFrame({
        "rank": np.arange(1, len(kept) + 1), "length": [p["length"] for p in kept],
        "occurrences": [p["occurrences"] for p in kept], "total_us": [p["total_ns"] / 1e3 for p in kept],
        "mean_us": [p["total_ns"] / p["occurrences"] / 1e3 for p in kept],
        "pct_kernel_time": [100.0 * p["total_ns"] / total_all if total_all else 0.0 for p in kept],
        "streams": [p["streams"] for p in kept], "op": [p["op"] for p in kept],
        "first_eid": [p["first_eid"] for p in kept], "kernels": [p["kernels"] for p in kept]},
        columns=list(COLUMNS))
    rows["op"] = rows["op"].astype(object)
    return KernelSequences(rows, int(len(np.flatnonzero(f.kind == K_KERNEL))), total_all / 1e3, op, min_length,
                           max_length)


def _whole_calls(f: Any, k: np.ndarray, inst: np.ndarray, min_length: int, max_length: int, top: int,
                 total_all: int, op: str | None) -> KernelSequences:
    """Per matching op call: its kernels in start order as one pattern; identical patterns
    (and op names) counted together."""
    order = np.lexsort((k, f.ts[k], inst))
    k, inst = k[order], inst[order]
    cuts = np.flatnonzero(np.concatenate(([True], inst[1:] != inst[:-1], [True])))
    agg: dict[tuple[Any, ...], dict[str, Any]] = {}
    for a, b in zip(cuts[:-1].tolist(), cuts[1:].tolist()):
        if b - a < min_length:
            continue
        key = (str(f.name[inst[a]]),) + tuple(str(n) for n in f.name[k[a:b]])
        d = agg.setdefault(key, {"occurrences": 0, "total_ns": 0, "first_eid": int(f.node[k[a]]), "length": b - a,
                                 "streams": set()})
        d["streams"].update(((f.device[k[a:b]] << 32) + f.stream[k[a:b]]).tolist())
        d["occurrences"] += 1
        d["total_ns"] += int(f.dur[k[a:b]].sum())
    rows = sorted(agg.items(), key=lambda kv: (-kv[1]["total_ns"], -kv[1]["occurrences"], kv[0]))[:top]
    out = pd.DataFrame({
        "rank": np.arange(1, len(rows) + 1), "length": [d["length"] for _k, d in rows],
        "occurrences": [d["occurrences"] for _k, d in rows], "total_us": [d["total_ns"] / 1e3 for _k, d in rows],
        "mean_us": [d["total_ns"] / d["occurrences"] / 1e3 for _k, d in rows],
        "pct_kernel_time": [100.0 * d["total_ns"] / total_all if total_all else 0.0 for _k, d in rows],
        "streams": [len(d["streams"]) for _k, d in rows],
        "op": [key[0] for key, _d in rows], "first_eid": [d["first_eid"] for _k, d in rows],
        "kernels": [tuple(kernel_label(n) for n in key[1:]) for key, _d in rows]}, columns=list(COLUMNS))
    out["op"] = out["op"].astype(object)
    return KernelSequences(out, int(np.count_nonzero(f.kind == K_KERNEL)), total_all / 1e3, op, min_length, max_length,
                           True)


#: Width (characters) kernel names are cut to in the patterns.
LABEL_WIDTH = 100


def kernel_label(name: str) -> str:
    """A kernel name as the patterns show it (:func:`opgraph.analysis.diff.kernel_label`,
    templates kept so CUTLASS's ``Kernel2<...>`` stays distinguishable; :data:`LABEL_WIDTH`)."""
    return _kernel_label(name, LABEL_WIDTH)


def _contains(seq: tuple[int, ...], sub: tuple[int, ...]) -> bool:
    n, m = len(seq), len(sub)
    return any(seq[i:i + m] == sub for i in range(n - m + 1))
