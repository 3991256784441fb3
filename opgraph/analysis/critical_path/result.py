"""Results of the critical path: segments, windows, summaries (times in ns; ``to_dict``
gives µs)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Sequence

import numpy as np
import pandas as pd

from opgraph.analysis.critical_path.boundary_edges import CATEGORIES, WAIT_CATEGORIES

#: Kinds of device activities (for top-kernel tables).
_DEVICE_KINDS = ("kernel", "memcpy", "memset")


@dataclass(frozen=True)
class PathSegment:
    """One stretch of the critical path: ``[start_ns, end_ns)`` spent in ``bound_by``.

    ``eid`` is the event whose own interval holds the stretch (``None`` when it lies between
    events: a wait, a launch latency, untraced time); ``kind`` and ``name`` are that
    event's, or describe the stretch when it has no event. ``lane`` is where it happens
    (``"thread <pid>/<tid>"`` or ``"stream <device>/<stream>"``); ``from_eid`` / ``to_eid``
    are the events of the dependency it crosses (the awaited activity of a ``sync_wait``, the
    other thread's event of a ``thread_wait``, the events on either side of ``untraced``
    time); ``inferred`` says the dependency was inferred, not recorded (docs/critical-path.md);
    ``edge`` is the dependency's role (docs/critical-path.md, "Model")."""

    eid: int | None
    kind: str
    name: str
    start_ns: int
    end_ns: int
    bound_by: str
    lane: str = ""
    from_eid: int | None = None
    to_eid: int | None = None
    inferred: bool = False
    edge: str = ""

    @property
    def dur_ns(self) -> int:
        return self.end_ns - self.start_ns

    def to_dict(self) -> dict[str, Any]:
        return {"eid": self.eid, "kind": self.kind, "name": self.name, "start_us": self.start_ns / 1000.0,
                "end_us": self.end_ns / 1000.0, "bound_by": self.bound_by, "lane": self.lane,
                "from_eid": self.from_eid, "to_eid": self.to_eid, "inferred": self.inferred, "edge": self.edge}


#: The columns of a :class:`SegmentTable`, in :class:`PathSegment` field order.
SEGMENT_COLUMNS = ("eid", "kind", "name", "start_ns", "end_ns", "bound_by", "lane", "from_eid", "to_eid",
                   "inferred", "edge")


class SegmentTable(Sequence[PathSegment]):
    """A window's path held as columns (one entry per segment, path order); it reads as
    the list of :class:`PathSegment` it stands for, each made on request.

    ``cols`` maps :data:`SEGMENT_COLUMNS` to arrays: ``eid``/``from_eid``/``to_eid``
    int64 (-1 = none), ``start_ns``/``end_ns`` int64 ns, ``inferred`` bool, the others
    object arrays of str. The window summaries (length, breakdown, confidence, top
    events, the document) are computed on the columns."""

    __slots__ = ("cols", "_objs", "_tops", "_bound_codes")

    def __init__(self, cols: dict[str, np.ndarray]):
        self.cols = cols
        self._objs: list[PathSegment] | None = None
        self._tops: dict[tuple[int, int], tuple[list[dict[str, Any]], list[dict[str, Any]]]] = {}
        self._bound_codes: tuple[np.ndarray, list[str]] | None = None

    def __len__(self) -> int:
        return len(self.cols["start_ns"])

    def _lists(self, rows: slice = slice(None)) -> list[list]:
        """The columns (of ``rows``) as :class:`PathSegment` field values: Python objects,
        None for no event."""
        out = []
        for f in SEGMENT_COLUMNS:
            col = self.cols[f][rows]
            v = col.tolist()
            if f in ("eid", "from_eid", "to_eid"):
                for i in np.flatnonzero(col < 0).tolist():   # (few: stretches between events)
                    v[i] = None
            out.append(v)
        return out

    def objects(self) -> list[PathSegment]:
        """The segments as :class:`PathSegment` objects (made once)."""
        if self._objs is None:
            self._objs = [PathSegment(*row) for row in zip(*self._lists())]
        return self._objs

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice) or self._objs is not None:
            return self.objects()[i]
        j = range(len(self))[i]   # IndexError as a list's; negative indices from the end
        return PathSegment(*(v[0] for v in self._lists(slice(j, j + 1))))

    def __iter__(self):
        return iter(self.objects())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (SegmentTable, list, tuple)):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"SegmentTable({len(self)} segments)"

    def __reduce__(self) -> tuple:
        return SegmentTable, (self.cols,)

    @property
    def dur(self) -> np.ndarray:
        return self.cols["end_ns"] - self.cols["start_ns"]

    def totals(self, categories: Sequence[str], cut: int | None = None) -> tuple[dict[str, int], int]:
        """(ns per category, ns resting on inferred edges) of the segments after ``cut``
        (ns; each segment's part at or after it), or of all of them."""
        start, end = self.cols["start_ns"], self.cols["end_ns"]
        lo = start if cut is None else np.maximum(start, cut)
        d = end - lo
        keep = d > 0
        out = {c: 0 for c in categories}
        if keep.any():
            codes, uniq = self.bound_codes()
            sums = np.zeros(len(uniq), dtype=np.int64)
            np.add.at(sums, codes[keep], d[keep])
            for c, v in zip(uniq, sums.tolist()):
                if v:
                    out[c] += v      # (a category outside ``categories`` is a KeyError, as in a list)
        inferred = int(d[keep & self.cols["inferred"]].sum())
        return out, inferred

    def longest_wait(self) -> PathSegment | None:
        """The first of the longest wait segments (:data:`WAIT_CATEGORIES`), or None."""
        codes, uniq = self.bound_codes()
        w = np.array([u in WAIT_CATEGORIES for u in uniq] + [False], dtype=bool)[codes]
        if not w.any():
            return None
        idx = np.flatnonzero(w)
        return self[int(idx[int(np.argmax(self.dur[idx]))])]

    def bound_codes(self) -> tuple[np.ndarray, list[str]]:
        """``bound_by`` as (codes, categories), factorized once per table."""
        if self._bound_codes is None:
            codes, uniq = pd.factorize(self.cols["bound_by"])
            self._bound_codes = (codes, [str(u) for u in uniq.tolist()])
        return self._bound_codes

    def tops(self, n: int, total_ns: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """(host events, device activities) with the most path time inside their own
        interval: per (kind, name), first-appearance order, sorted by time (stable). Computed
        once per (n, total_ns): the text and the document both ask."""
        got = self._tops.get((n, total_ns))
        if got is None:
            got = self._tops[(n, total_ns)] = self._compute_tops(n, total_ns)
        return [dict(d) for d in got[0]], [dict(d) for d in got[1]]

    def _compute_tops(self, n: int, total_ns: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        c = self.cols
        m = c["eid"] >= 0
        out: list[list[dict[str, Any]]] = []
        total = total_ns or 1
        kinds = c["kind"][m]
        dev = np.isin(kinds, list(_DEVICE_KINDS))
        names, dur = c["name"][m], self.dur[m]
        for want in (False, True):
            sel = dev == want
            if not sel.any():
                out.append([])
                continue
            # per (kind, name) in order of first appearance, then by time (stable)
            kc, ku = pd.factorize(kinds[sel])
            nc, nu = pd.factorize(names[sel])
            gc, first = pd.factorize(kc.astype(np.int64) * len(nu) + nc)
            sums = np.zeros(len(first), dtype=np.int64)
            np.add.at(sums, gc, dur[sel])
            top = np.argsort(-sums, kind="stable")[:n]
            ku_l, nu_l = ku.tolist(), nu.tolist()
            out.append([{"kind": ku_l[int(first[g]) // len(nu)], "name": nu_l[int(first[g]) % len(nu)],
                         "time_us": v / 1000.0, "pct": 100.0 * v / total}
                        for g, v in zip(top.tolist(), sums[top].tolist())])
        return out[0], out[1]

    def dicts(self) -> list[dict[str, Any]]:
        """``PathSegment.to_dict()`` of every segment, made from the columns."""
        e, k, nm, t0, t1, bb, ln, fe, te, inf, ed = self._lists()
        return [{"eid": a, "kind": b, "name": c_, "start_us": s0 / 1000.0, "end_us": s1 / 1000.0, "bound_by": x,
                 "lane": y, "from_eid": f, "to_eid": t, "inferred": i, "edge": z}
                for a, b, c_, s0, s1, x, y, f, t, i, z in zip(e, k, nm, t0, t1, bb, ln, fe, te, inf, ed)]


def _confidence(path: Sequence[PathSegment]) -> dict[str, Any]:
    """How much of ``path`` rests on inferred edges (ns) and its longest wait segment."""
    if isinstance(path, SegmentTable):
        return {"inferred_ns": int(path.dur[path.cols["inferred"]].sum()), "longest_wait": path.longest_wait()}
    inferred = sum(s.dur_ns for s in path if s.inferred)
    waits = [s for s in path if s.bound_by in WAIT_CATEGORIES]
    longest = max(waits, key=lambda s: s.dur_ns) if waits else None
    return {"inferred_ns": inferred, "longest_wait": longest}


def _wait_dict(s: PathSegment | None) -> dict[str, Any] | None:
    if s is None:
        return None
    return {"bound_by": s.bound_by, "dur_us": s.dur_ns / 1000.0, "start_us": s.start_ns / 1000.0,
            "end_us": s.end_ns / 1000.0, "lane": s.lane, "eid": s.eid, "name": s.name, "from_eid": s.from_eid,
            "to_eid": s.to_eid, "inferred": s.inferred}


@dataclass
class WindowPath:
    """The critical path of one window (a step, a matched range, or the whole trace)."""

    #: the categories of :attr:`breakdown_ns` (a cross-rank path adds ``gpu_comm_wait``)
    categories: ClassVar[tuple[str, ...]] = CATEGORIES

    name: str
    eid: int | None
    start_ns: int
    end_ns: int
    path: list[PathSegment] = field(default_factory=list)
    lane: str = ""
    #: the event ids the walk passes through, in time order: both ends of every step it
    #: takes, also events crossed in zero time (so a drawing of the path is connected);
    #: :attr:`path` merges and names the stretches between them. Not part of ``to_dict``.
    nodes: list[int] = field(default_factory=list, repr=False)

    @property
    def span_ns(self) -> int:
        """Window start to its sink's end: the last end of the window's own thread's events
        and of the device work launched in it (ns)."""
        return self.end_ns - self.start_ns

    @property
    def length_ns(self) -> int:
        if isinstance(self.path, SegmentTable):
            return int(self.path.dur.sum())
        return int(sum(s.dur_ns for s in self.path))

    @property
    def breakdown_ns(self) -> dict[str, int]:
        if isinstance(self.path, SegmentTable):
            return self.path.totals(self.categories)[0]
        out = {c: 0 for c in self.categories}
        for s in self.path:
            out[s.bound_by] += s.dur_ns
        return out

    @property
    def breakdown_pct(self) -> dict[str, float]:
        total = self.length_ns
        b = self.breakdown_ns
        return {c: (100.0 * v / total if total else 0.0) for c, v in b.items()}

    @property
    def bound(self) -> str:
        """The category with the largest share of the path."""
        b = self.breakdown_ns
        return max(b, key=lambda c: b[c]) if self.path else "other"

    @property
    def profiler_stop_tail_ns(self) -> int:
        """Path time after the trace fell silent at the profiler's stop (ns;
        :mod:`~opgraph.analysis.critical_path.stop_tail`), counted in ``untraced``."""
        if isinstance(self.path, SegmentTable):
            return int(self.path.dur[self.path.cols["edge"] == "profiler_stop_tail"].sum())
        return int(sum(s.dur_ns for s in self.path if s.edge == "profiler_stop_tail"))

    @property
    def inferred_ns(self) -> int:
        """Path time resting on inferred edges (ns)."""
        return int(_confidence(self.path)["inferred_ns"])

    @property
    def longest_wait(self) -> PathSegment | None:
        """The longest ``device_wait`` / ``sync_wait`` / ``thread_wait`` / ``untraced`` segment."""
        return _confidence(self.path)["longest_wait"]

    def top(self, device: bool, n: int = 10) -> list[dict[str, Any]]:
        """Events with the most time on the path inside their own interval (device
        activities or host events); stretches between events count for no event."""
        return self._tops(n, self.length_ns)[1 if device else 0]

    def _tops(self, n: int, length_ns: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """(host events, device activities) with the most time on the path, in one pass."""
        if isinstance(self.path, SegmentTable):
            return self.path.tops(n, length_ns)
        acc: tuple[dict[tuple[str, str], int], dict[tuple[str, str], int]] = ({}, {})
        for s in self.path:
            if s.eid is None:
                continue
            d = acc[s.kind in _DEVICE_KINDS]
            key = (s.kind, s.name)
            d[key] = d.get(key, 0) + s.end_ns - s.start_ns
        total = length_ns or 1
        return tuple([{"kind": k, "name": nm, "time_us": v / 1000.0, "pct": 100.0 * v / total}
                      for (k, nm), v in sorted(a.items(), key=lambda kv: -kv[1])[:n]] for a in acc)  # type: ignore[return-value]

    def to_dict(self, with_path: bool = True) -> dict[str, Any]:
        # one pass for the breakdown and one for the confidence (the properties each walk the path)
        b = self.breakdown_ns
        length = int(sum(b.values()))
        conf = _confidence(self.path)
        inferred = int(conf["inferred_ns"])
        d: dict[str, Any] = {
            "name": self.name, "eid": self.eid, "lane": self.lane,
            "start_us": self.start_ns / 1000.0, "end_us": self.end_ns / 1000.0,
            "span_us": self.span_ns / 1000.0, "length_us": length / 1000.0,
            "bound": max(b, key=lambda c: b[c]) if self.path else "other",
            "breakdown_us": {k: v / 1000.0 for k, v in b.items()},
            "breakdown_pct": {c: (100.0 * v / length if length else 0.0) for c, v in b.items()},
            "inferred_us": inferred / 1000.0,
            "inferred_pct": 100.0 * inferred / length if length else 0.0,
            "longest_wait": _wait_dict(conf["longest_wait"]),
            "profiler_stop_tail_us": self.profiler_stop_tail_ns / 1000.0,
        }
        d["top_ops"], d["top_kernels"] = self._tops(10, length)
        if with_path:
            d["path"] = self.path.dicts() if isinstance(self.path, SegmentTable) else [s.to_dict() for s in self.path]
        return d


def summarize_windows(windows: Sequence[Any], categories: Sequence[str]) -> dict[str, Any]:
    """Totals over windows (anything with ``start_ns``, ``end_ns``, ``path`` and
    ``breakdown_ns``), counting each instant once: windows are taken by start, and a
    window's segments count only after the previous windows' last end (a step's device
    tail that runs into the next step is counted in the earlier step). So ``span_us`` is
    the union of the windows (never more than the trace) and ``overlap_us`` the time that
    two windows share; ``sum_span_us`` is the plain sum of the windows' spans. Breakdown
    per category in µs and % of the counted length; ``bound`` is the largest category."""
    tot = {c: 0 for c in categories}
    inferred = 0
    covered = None
    sum_span = 0
    union = 0
    longest: PathSegment | None = None
    for w in sorted(windows, key=lambda w: (w.start_ns, w.end_ns)):
        sum_span += w.end_ns - w.start_ns
        cut = w.start_ns if covered is None else max(w.start_ns, covered)
        if w.end_ns > cut:
            union += w.end_ns - cut
        if isinstance(w.path, SegmentTable):
            part, inf = w.path.totals(categories, cut)
            for c, v in part.items():
                tot[c] += v
            inferred += inf
        else:
            for s in w.path:
                lo, hi = max(s.start_ns, cut), s.end_ns
                if hi > lo:
                    tot[s.bound_by] += hi - lo
                    if s.inferred:
                        inferred += hi - lo
        lw = _confidence(w.path)["longest_wait"]
        if lw is not None and (longest is None or lw.dur_ns > longest.dur_ns):
            longest = lw
        covered = w.end_ns if covered is None else max(covered, w.end_ns)
    length = sum(tot.values())
    return {"windows": len(windows), "span_us": union / 1000.0, "length_us": length / 1000.0,
            "sum_span_us": sum_span / 1000.0, "overlap_us": (sum_span - union) / 1000.0,
            "breakdown_us": {c: v / 1000.0 for c, v in tot.items()},
            "breakdown_pct": {c: (100.0 * v / length if length else 0.0) for c, v in tot.items()},
            "inferred_us": inferred / 1000.0, "inferred_pct": 100.0 * inferred / length if length else 0.0,
            "longest_wait": _wait_dict(longest),
            "bound": max(tot, key=lambda c: tot[c]) if length else "other"}


def path_frame(windows: Sequence[Any]) -> pd.DataFrame:
    """One row per path segment of ``windows``: ``window``, ``start_us``, ``end_us``,
    ``dur_us``, ``bound_by``, ``kind``, ``name``, ``lane``, ``eid``, ``from_eid``,
    ``to_eid``, ``inferred``, ``edge`` (and ``rank`` where segments carry one)."""
    rows = []
    for w in windows:
        for s in w.path:
            r = {"window": w.name, "start_us": s.start_ns / 1e3, "end_us": s.end_ns / 1e3, "dur_us": s.dur_ns / 1e3,
                 "bound_by": s.bound_by, "kind": s.kind, "name": s.name, "lane": s.lane, "eid": s.eid,
                 "from_eid": s.from_eid, "to_eid": s.to_eid, "inferred": s.inferred, "edge": s.edge}
            if hasattr(s, "rank"):
                r["rank"] = s.rank
            rows.append(r)
    cols = ["window", "start_us", "end_us", "dur_us", "bound_by", "kind", "name", "lane", "eid", "from_eid",
            "to_eid", "inferred", "edge"]
    return pd.DataFrame(rows, columns=cols + (["rank"] if rows and "rank" in rows[0] else []))


def breakdown_frame(windows: Sequence[Any], categories: Sequence[str]) -> pd.DataFrame:
    """One row per window: ``window``, ``start_us``, ``span_us``, ``length_us``, ``bound``,
    ``inferred_us`` and the time (µs) of every category."""
    rows = []
    for w in windows:
        b = w.breakdown_ns   # once per window (a property that walks the path)
        r = {"window": w.name, "start_us": w.start_ns / 1e3, "span_us": w.span_ns / 1e3,
             "length_us": w.length_ns / 1e3, "bound": max(b, key=lambda c: b[c]) if w.path else "other",
             "inferred_us": w.inferred_ns / 1e3}
        r.update({c: b.get(c, 0) / 1e3 for c in categories})
        rows.append(r)
    return pd.DataFrame(rows, columns=["window", "start_us", "span_us", "length_us", "bound", "inferred_us",
                                       *categories])
