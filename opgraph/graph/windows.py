"""The one step/window selector: which time windows an analysis covers.

Every command that works per step or per window (``critical-path``, ``predict``, ``export
--perfetto/--dot/--svg``, ``iterations``, ``breakdown``, ``overheads``, ``summary``,
``kernel-models``, ``nvtx``, ``info``, ``diff``, ``build --iterations``, and the multi-rank
worker) selects them here, so they all agree on what a step is (docs/critical-path.md,
"Windows").

Selection (:func:`select_windows`)
----------------------------------
``window=None`` — the trace's steps, the first of:

1. ``ProfilerStep#N`` host ranges (``annotation``, ``cpu_op``, ``python``): one window per
   distinct N, from the first start to the last end of the ranges carrying that name;
2. ``ProfilerStep#N`` GPU annotations (``gpu_annotation``), same rule (traces whose host
   side has no step marker);
3. NVTX ``Iteration N`` host ranges, same rule (Nsight Systems traces);
4. data-loading markers, only when the caller passes ``data_markers`` (the commands with
   ``--data-marker``): window k runs from marker k to marker k+1, so M markers give M-1
   windows (nested markers: the outermost);
5. one window over the whole trace (mode ``"all"``).

``window="all"`` — one window over the whole trace: the first start to the last end of any
node.

``window=REGEX`` (or ``step_regex=REGEX``) — one window per host range whose name matches
(``re.search``), else one per matching GPU annotation; repeated or nested ranges are not
merged. A regex that matches nothing raises :class:`WindowNotFound`, whose one-line message
lists what does exist; an invalid one raises :class:`WindowError`.

Every window names the host thread it follows (:attr:`Window.lane`): the thread of its
own range, or, for GPU-annotation windows and the whole trace, :func:`main_thread`: the
thread that launches the most GPU work (:func:`launch_thread`), never one that spends most
of its time asleep in a wait (:data:`SLEEP_RE`).

All times are integer ns; :meth:`Window.to_dict` gives µs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator

import numpy as np
import pandas as pd

from opgraph.model.arrays import GraphArrays
from opgraph.intervals import union_length_by, union_overlap_ns
from opgraph.ingest.steps import NVTX_ITERATION_RE, STEP_RE
from opgraph.model.table import HOST_KINDS
from opgraph.model.trace_graph import TraceGraph

#: Host ranges a step marker or a ``--window`` regex can name.
HOST_RANGE_KINDS: tuple[str, ...] = ("annotation", "cpu_op", "python")
#: Device-side ranges a step marker or a ``--window`` regex can name.
GPU_RANGE_KINDS: tuple[str, ...] = ("gpu_annotation",)
#: Calls in which a thread sleeps until something else happens (names, ``re.search``): Python
#: ``threading`` waits and joins, lock acquires, ``time.sleep``, ``select``/``poll``. Narrower
#: than a blocking call (``run_backward`` or a synchronize blocks, but its thread drives the
#: work): a thread that spends most of its time in these is a *sleeper* and never the thread
#: a window follows.
SLEEP_PATTERN = (
    r"^threading\.py\(\d+\): (?:wait|join|_wait_for_tstate_lock)$"
    r"|acquire of _thread\.(?:lock|RLock)|acquire of _multiprocessing\.SemLock|^_thread\.lock\.acquire$"
    r"|^time\.sleep$|^<built-in function sleep>$|^sleep$"
    r"|^select$|^<built-in function select>$|^selectors\.py\(\d+\): select$|method (?:e?poll|select) of select\."
    r"|(?:^|\.)(?:Event|Condition)\.wait$"
)
SLEEP_RE = re.compile(SLEEP_PATTERN)
#: A thread whose sleeping time (union of :data:`SLEEP_RE` calls) is at least this fraction of
#: its traced time (union of its host events) is a sleeper.
SLEEPER_FRACTION = 0.5
#: At most this many entries in the list of existing ranges of :class:`WindowNotFound`.
MAX_LISTED = 8
#: Longest range name shown in that list (characters).
MAX_NAME_CHARS = 48

#: The numbered step markers the default selection looks for, in order: (regex, on host
#: ranges (else GPU annotations), ``Windows.source``).
STEP_MARKERS: tuple[tuple[re.Pattern[str], bool, str], ...] = (
    (STEP_RE, True, "profiler_step"), (STEP_RE, False, "gpu_annotation"),
    (NVTX_ITERATION_RE, True, "nvtx_iteration"))
#: Every ``Windows.source`` :func:`select_windows` can give (the schemas' enums must list
#: them: tests/test_bad_input_limits.py checks it).
WINDOW_SOURCES: tuple[str, ...] = tuple(m[2] for m in STEP_MARKERS) + ("data_loader", "regex", "all")
_TRAILING_NUMBER = re.compile(r"(\d+)\s*$")


# --------------------------------------------------------------------------- errors
class WindowError(ValueError):
    """A window (step) regex that cannot select anything: invalid, or matching no range.

    ``pattern`` is the regex; ``detail`` the rest of the one-line message. ``str(err)`` is
    ``"window '<pattern>' <detail>"``; :meth:`for_option` words it for a command-line flag.
    """

    def __init__(self, pattern: str, detail: str):
        self.pattern = pattern
        self.detail = detail
        super().__init__(f"window {pattern!r} {detail}")

    def __reduce__(self):
        return (type(self), (self.pattern, self.detail))

    def for_option(self, option: str) -> str:
        """The message with ``option`` (e.g. ``"--window"``) in place of the word window."""
        return f"{option} {self.pattern!r} {self.detail}"


class WindowNotFound(WindowError):
    """A window (step) regex that matches no range. ``existing`` lists (summarised, at most
    :data:`MAX_LISTED`) the ranges that do exist; ``more`` how many were left out."""

    def __init__(self, pattern: str, existing: list[str] | str, more: int = 0):
        if isinstance(existing, str):  # unpickling: (pattern, detail)
            super().__init__(pattern, existing)
            self.existing, self.more = [], 0
            return
        self.existing = list(existing)
        self.more = int(more)
        if self.existing:
            listing = "ranges that exist: " + ", ".join(self.existing) + (f" (and {more} more)" if more else "")
        else:
            listing = "the trace has no named host range or GPU annotation"
        super().__init__(pattern, f"matches no range; {listing}")


# --------------------------------------------------------------------------- windows
@dataclass(frozen=True)
class Window:
    """One window: ``[start_ns, end_ns)`` of the range that defines it.

    ``name``: the range's name (``"all"`` for the whole trace, ``"iteration k"`` for a
    data-loader window); ``eid``: the defining node (None for the whole trace);
    ``lane``: the host thread the window follows, a lane code of the columns it was
    selected from (None when unknown or not asked for); ``kind``: the defining node's kind
    (``"all"`` for the whole trace); ``step``: N of ``ProfilerStep#N`` / ``Iteration N``,
    the trailing number of a regex match when every match has a distinct one, else the
    position.
    """

    name: str
    eid: int | None
    start_ns: int
    end_ns: int
    lane: int | None
    kind: str
    step: int = -1

    @property
    def span_ns(self) -> int:
        return self.end_ns - self.start_ns

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (µs)."""
        return {"name": self.name, "eid": self.eid, "step": self.step, "kind": self.kind,
                "start_us": self.start_ns / 1000.0, "end_us": self.end_ns / 1000.0, "span_us": self.span_ns / 1000.0}


@dataclass
class Windows:
    """The windows of one selection, sorted by start (then node).

    ``mode``: ``"steps"`` (the default selection found step markers), ``"all"`` (the whole
    trace, asked for or for lack of steps) or ``"regex:<pattern>"``. ``source``: how they
    were found: ``profiler_step``, ``gpu_annotation``, ``nvtx_iteration``, ``data_loader``,
    ``regex`` or ``all``.
    """

    items: list[Window]
    mode: str
    source: str

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self) -> Iterator[Window]:
        return iter(self.items)

    def __getitem__(self, i: int) -> Window:
        return self.items[i]

    @property
    def is_steps(self) -> bool:
        """True when the windows are real steps or matched ranges (not the whole trace)."""
        return self.mode != "all"

    def total_ns(self) -> int:
        """Sum of the windows' lengths (ns); counts overlapping time more than once."""
        return int(sum(w.span_ns for w in self.items))

    def union_ns(self) -> int:
        """Length of the union of the windows' ``[start, end)`` (ns): never more than the trace."""
        return union_overlap_ns([w.start_ns for w in self.items], [w.end_ns for w in self.items])[0]

    def overlap_ns(self) -> int:
        """Time counted more than once by :meth:`total_ns` (ns): ``total - union``."""
        return union_overlap_ns([w.start_ns for w in self.items], [w.end_ns for w in self.items])[1]

    def to_frame(self) -> pd.DataFrame:
        """One row per window: ``eid`` (-1 for none), ``name``, ``step``, ``ts``/``end`` (ns),
        ``lane`` (-1 for none), ``kind``."""
        it = self.items
        return pd.DataFrame({
            "eid": np.array([-1 if w.eid is None else w.eid for w in it], dtype=np.int64),
            "name": np.array([w.name for w in it], dtype=object),
            "step": np.array([w.step for w in it], dtype=np.int64),
            "ts": np.array([w.start_ns for w in it], dtype=np.int64),
            "end": np.array([w.end_ns for w in it], dtype=np.int64),
            "lane": np.array([-1 if w.lane is None else w.lane for w in it], dtype=np.int64),
            "kind": np.array([w.kind for w in it], dtype=object),
        })


# --------------------------------------------------------------------------- columns
@dataclass
class WindowColumns:
    """The node columns the selector reads (positions ``0..n-1``).

    ``kind``: kind names (object); ``name``: names (object; None allowed); ``ts``/``end``:
    ns; ``eid``: node keys (or row references) reported in :attr:`Window.eid`; ``lane``:
    one code per host thread (None: unknown, windows get ``lane=None``); ``launch_src``:
    the position of the launching call of every ``launch`` edge (None: unknown), or
    ``launch_loader`` computing it on first use.
    """

    kind: np.ndarray
    name: np.ndarray
    ts: np.ndarray
    end: np.ndarray
    eid: np.ndarray
    lane: np.ndarray | None = None
    launch_src: np.ndarray | None = None
    launch_loader: Callable[[], np.ndarray] | None = field(default=None, repr=False)

    @property
    def n(self) -> int:
        return len(self.kind)

    def launches(self) -> np.ndarray:
        """Positions of the launching calls, one per ``launch`` edge (empty when unknown)."""
        if self.launch_src is None and self.launch_loader is not None:
            self.launch_src = np.asarray(self.launch_loader(), dtype=np.int64)
            self.launch_loader = None
        return self.launch_src if self.launch_src is not None else np.empty(0, np.int64)

    @classmethod
    def from_arrays(cls, a: GraphArrays) -> "WindowColumns":
        """Columns of :class:`~opgraph.model.arrays.GraphArrays` (lanes and launches included)."""
        return cls(a.kind, a.name, a.ts, a.end, a.eid, a.lane, a.out_edges("launch")[0])

    @classmethod
    def of(cls, src: Any) -> "WindowColumns":
        """Columns of ``src``: a :class:`WindowColumns`, a
        :class:`~opgraph.model.arrays.GraphArrays`, or anything with a ``window_columns()``
        method (a :class:`~opgraph.model.trace_graph.TraceGraph`, the
        :class:`~opgraph.analysis.graph_frame.GraphFrame`)."""
        if isinstance(src, WindowColumns):
            return src
        if isinstance(src, GraphArrays):
            return cls.from_arrays(src)
        if isinstance(src, TraceGraph):
            return cls.from_arrays(src.arrays)
        if hasattr(src, "window_columns"):
            return src.window_columns()
        raise TypeError(f"cannot select windows from a {type(src).__name__}")


class _RangeNames:
    """The host ranges and GPU annotations of some columns, with their names factorized
    once: each regex runs once per distinct name."""

    def __init__(self, c: WindowColumns):
        self.rows = np.flatnonzero(np.isin(c.kind, HOST_RANGE_KINDS + GPU_RANGE_KINDS))
        codes, uniq = pd.factorize(c.name[self.rows])
        self.codes = np.asarray(codes, dtype=np.int64)
        self.uniq = np.asarray(uniq, dtype=object)
        self.kind = c.kind[self.rows]
        self.host = np.isin(self.kind, HOST_RANGE_KINDS)

    def numbers(self, rx: re.Pattern[str]) -> np.ndarray:
        """Per distinct name: group 1 of ``rx.match`` as an int (-1: no match)."""
        out = np.full(len(self.uniq), -1, dtype=np.int64)
        for j, u in enumerate(self.uniq.tolist()):
            if isinstance(u, str):
                m = rx.match(u)
                if m:
                    out[j] = int(m.group(1))
        return out

    def hits(self, rx: re.Pattern[str]) -> np.ndarray:
        """Per distinct name: ``rx.search`` found something."""
        return np.fromiter((isinstance(u, str) and rx.search(u) is not None for u in self.uniq.tolist()),
                           dtype=bool, count=len(self.uniq))

    def per_row(self, per_name: np.ndarray, fill: Any) -> np.ndarray:
        """A per-distinct-name array spread over :attr:`rows` (``fill`` where the name is missing)."""
        out = np.full(len(self.rows), fill, dtype=per_name.dtype)
        ok = self.codes >= 0
        out[ok] = per_name[self.codes[ok]]
        return out


# --------------------------------------------------------------------------- selection
def select_windows(src: Any, window: str | None = None, step_regex: str | None = None, *,
                   data_markers: Iterable[str] = (), lanes: bool = True) -> Windows:
    """The windows an analysis covers (see the module doc for the rules).

    Parameters
    ----------
    src : GraphArrays, TraceGraph, GraphFrame or WindowColumns
        The trace graph, or its columns.
    window : str, optional
        ``None``: the steps (``ProfilerStep#N`` host ranges, else GPU annotations, else NVTX
        ``Iteration N``, else the data-loader windows when ``data_markers`` are given,
        else the whole trace); ``"all"``: the whole trace; otherwise a regex: every host
        range whose name it finds, else every GPU annotation.
    step_regex : str, optional
        What a step is, when ``window`` is None: the same as ``window=step_regex``.
    data_markers : iterable of str
        Regexes naming data-loading ranges, for the data-loader fallback (none by default).
    lanes : bool
        False: skip the thread analysis (:func:`main_thread`); windows that would follow the
        main thread (GPU annotations, the whole trace) get ``lane=None``.

    Returns
    -------
    Windows
        Sorted by start, then node; times in ns.

    Raises
    ------
    WindowNotFound
        The regex matches no range (the message lists the ranges that exist).
    WindowError
        The regex is not a valid regular expression.
    """
    c = WindowColumns.of(src)
    main: list[int | None] = []

    def main_lane() -> int | None:
        if not main:
            main.append(main_thread(c) if lanes and c.lane is not None else None)
        return main[0]

    if window == "all":
        return Windows(_whole(c, main_lane), "all", "all")
    pattern = window or step_regex or None
    names = _RangeNames(c)
    if pattern:
        try:
            rx = re.compile(pattern)
        except re.error as e:
            raise WindowError(pattern, f"is not a valid regex ({e})") from None
        hit = names.per_row(names.hits(rx), False)
        for host in (True, False):
            idx = names.rows[hit & (names.host == host)]
            if len(idx):
                return Windows(_matched(c, idx, main_lane), f"regex:{pattern}", "regex")
        existing, more = _existing(names)
        raise WindowNotFound(pattern, existing, more)
    for rx, host, source in STEP_MARKERS:
        num = names.per_row(names.numbers(rx), -1)
        sel = (num >= 0) & (names.host == host)
        if sel.any():
            return Windows(_numbered(c, names.rows[sel], num[sel], main_lane), "steps", source)
    markers = [m for m in data_markers if m]
    if markers:
        got = _data_loader(c, names, re.compile("|".join(f"(?:{m})" for m in markers)))
        if got:
            return Windows(got, "steps", "data_loader")
    return Windows(_whole(c, main_lane), "all", "all")


def _lane_of(c: WindowColumns, p: int, main_lane: Callable[[], int | None]) -> int | None:
    """The thread a window defined by node ``p`` follows: its own for a host range."""
    if c.lane is None:
        return None
    if c.kind[p] in HOST_RANGE_KINDS:
        return int(c.lane[p])
    return main_lane()


def _whole(c: WindowColumns, main_lane: Callable[[], int | None]) -> list[Window]:
    if not c.n:
        return []
    return [Window("all", None, int(c.ts.min()), int(c.end.max()), main_lane(), "all")]


def _numbered(c: WindowColumns, idx: np.ndarray, num: np.ndarray,
              main_lane: Callable[[], int | None]) -> list[Window]:
    """One window per distinct number: first start to last end of its ranges, named and
    identified by its earliest range."""
    df = pd.DataFrame({"pos": idx, "num": num, "ts": c.ts[idx], "end": c.end[idx], "eid": c.eid[idx]})
    df = df.sort_values(["ts", "eid"], kind="stable")
    g = (df.groupby("num", sort=False).agg(pos=("pos", "first"), ts=("ts", "min"), end=("end", "max"))
           .reset_index().sort_values(["ts", "num"], kind="stable"))
    return [Window(str(c.name[p]), int(c.eid[p]), int(t0), int(t1), _lane_of(c, p, main_lane), str(c.kind[p]), int(k))
            for p, k, t0, t1 in zip(g["pos"].tolist(), g["num"].tolist(), g["ts"].tolist(), g["end"].tolist())]


def _matched(c: WindowColumns, idx: np.ndarray, main_lane: Callable[[], int | None]) -> list[Window]:
    """One window per matched range; steps numbered by the names' trailing numbers when
    each has a distinct one, else by position."""
    o = np.lexsort((c.eid[idx], c.ts[idx]))
    idx = idx[o]
    nums = []
    for p in idx.tolist():
        m = _TRAILING_NUMBER.search(str(c.name[p]))
        nums.append(int(m.group(1)) if m else None)
    if None in nums or len(set(nums)) != len(nums):
        nums = list(range(len(idx)))
    return [Window(str(c.name[p]), int(c.eid[p]), int(c.ts[p]), int(c.end[p]), _lane_of(c, p, main_lane),
                   str(c.kind[p]), int(k)) for p, k in zip(idx.tolist(), nums)]


def _data_loader(c: WindowColumns, names: _RangeNames, rx: re.Pattern[str]) -> list[Window]:
    """Window k from data-loading marker k to marker k+1 (outermost markers only)."""
    hit = names.per_row(names.hits(rx), False) & names.host
    idx = names.rows[hit]
    if len(idx) < 2:
        return []
    idx = idx[np.lexsort((c.eid[idx], c.ts[idx]))]
    ts, end = c.ts[idx], c.end[idx]
    reach = np.maximum.accumulate(end)
    outer = np.ones(len(idx), dtype=bool)
    outer[1:] = ts[1:] >= reach[:-1]
    idx = idx[outer]
    return [Window(f"iteration {k}", int(c.eid[p]), int(c.ts[p]), int(c.ts[q]),
                   None if c.lane is None else int(c.lane[p]), str(c.kind[p]), k)
            for k, (p, q) in enumerate(zip(idx[:-1].tolist(), idx[1:].tolist()))]


def _existing(names: _RangeNames) -> tuple[list[str], int]:
    """What a regex could have matched, summarised for one line: step markers first
    (``ProfilerStep#1..#5``), then annotation names (host and GPU) by how often they occur;
    op names only when the trace has no annotation. Returns (entries, how many more)."""
    count = np.bincount(names.codes[names.codes >= 0], minlength=len(names.uniq))
    is_ann = np.zeros(len(names.uniq), dtype=bool)
    ann_rows = np.isin(names.kind, ("annotation",) + GPU_RANGE_KINDS) & (names.codes >= 0)
    is_ann[names.codes[ann_rows]] = True
    steps: dict[str, list[int]] = {}
    ann: list[tuple[int, str]] = []
    ops: list[tuple[int, str]] = []
    for u, k, a in zip(names.uniq.tolist(), count.tolist(), is_ann.tolist()):
        if not isinstance(u, str) or not k:
            continue
        m = STEP_RE.match(u)
        m2 = None if m else NVTX_ITERATION_RE.match(u)
        if m:
            steps.setdefault("ProfilerStep#", []).append(int(m.group(1)))
        elif m2:
            steps.setdefault("Iteration ", []).append(int(m2.group(1)))
        else:
            (ann if a else ops).append((k, u))
    entries = []
    for prefix, ns in steps.items():
        lo, hi = min(ns), max(ns)
        sep = "#" if prefix.endswith("#") else ""
        entries.append(f"{prefix}{lo}" if lo == hi else f"{prefix}{lo}..{sep}{hi}")
    rest = ann if ann or steps else ops
    rest.sort(key=lambda kv: (-kv[0], kv[1]))
    entries += [_short(u) for _, u in rest]
    return entries[:MAX_LISTED], max(len(entries) - MAX_LISTED, 0)


def _short(name: str) -> str:
    s = " ".join(name.split())
    return s if len(s) <= MAX_NAME_CHARS else s[: MAX_NAME_CHARS - 1] + "…"


# --------------------------------------------------------------------------- threads
def thread_stats(src: Any) -> pd.DataFrame:
    """Per host thread (lane code, the index): ``launches`` (``launch`` edges from its
    calls), ``busy_ns`` (union of its host events), ``sleep_ns`` (union of its
    :data:`SLEEP_RE` calls) and ``sleeper`` (``sleep_ns >= SLEEPER_FRACTION * busy_ns``).
    Empty when the columns have no lanes."""
    c = WindowColumns.of(src)
    cols = ["launches", "busy_ns", "sleep_ns", "sleeper"]
    if c.lane is None:
        return pd.DataFrame(columns=cols)
    host = np.flatnonzero(np.isin(c.kind, HOST_KINDS))
    if not len(host):
        return pd.DataFrame(columns=cols)
    lane = c.lane[host]
    busy = union_length_by(lane, c.ts[host], c.end[host])
    codes, uniq = pd.factorize(c.name[host])
    sl = np.fromiter((isinstance(u, str) and SLEEP_RE.search(u) is not None for u in uniq.tolist()),
                     dtype=bool, count=len(uniq))
    is_sleep = np.zeros(len(host), dtype=bool)
    ok = codes >= 0
    is_sleep[ok] = sl[codes[ok]]
    sp = host[is_sleep]
    sleep = union_length_by(c.lane[sp], c.ts[sp], c.end[sp])
    ls = c.launches()
    ls = ls[np.isin(c.kind[ls], HOST_KINDS)] if len(ls) else ls
    launches = pd.Series(c.lane[ls]).value_counts() if len(ls) else pd.Series(dtype=np.int64)
    df = pd.DataFrame({"busy_ns": busy})
    df["sleep_ns"] = sleep.reindex(df.index).fillna(0).astype(np.int64)
    df["launches"] = launches.reindex(df.index).fillna(0).astype(np.int64)
    df["busy_ns"] = df["busy_ns"].astype(np.int64)
    df["sleeper"] = df["sleep_ns"] >= SLEEPER_FRACTION * df["busy_ns"]
    df.index.name = "lane"
    return df[cols]


def _ranked(df: pd.DataFrame) -> list[int]:
    """Lanes by launches, then busy time (descending), then lane code."""
    if not len(df):
        return []
    o = df.reset_index().sort_values(["launches", "busy_ns", "lane"], ascending=[False, False, True], kind="stable")
    return [int(x) for x in o["lane"].tolist()]


def _launcher(st: pd.DataFrame) -> int | None:
    """:func:`launch_thread` from :func:`thread_stats`."""
    if not len(st):
        return None
    launching = st[st["launches"] > 0]
    for part in (launching[~launching["sleeper"]], launching):
        r = _ranked(part)
        if r:
            return r[0]
    return None


def launch_thread(src: Any) -> int | None:
    """The host thread (lane code) that launches the most GPU work: the most ``launch``
    edges from calls on it, ties broken by busy time; never a sleeper (:func:`thread_stats`)
    while a thread that is not one launches anything (a launching thread that mostly waits
    is chosen only when every launching thread does). None when nothing is launched."""
    return _launcher(thread_stats(src))


def main_thread(src: Any) -> int | None:
    """The host thread a window without a thread of its own follows: :func:`launch_thread`;
    with no GPU work, the thread with the most traced busy time that is not a sleeper (any
    thread when all are). None when there is no host thread."""
    st = thread_stats(src)
    lt = _launcher(st)
    if lt is not None:
        return lt
    for part in (st[~st["sleeper"]] if len(st) else st, st):
        if len(part):
            o = part.reset_index().sort_values(["busy_ns", "lane"], ascending=[False, True], kind="stable")
            return int(o["lane"].iloc[0])
    return None
