"""One graph for a multi-rank job: merge the ranks' results (docs/multirank.md).

:func:`build_job` runs :func:`~opgraph.multirank.worker.rank_result` per file (process
pool or Dask), matches collectives, aligns clocks, and merges the kept ranks' column
payloads into one payload (global node ids ``node_offset[r] + local id``, node column
``rank``, ``collective`` edges, ``G.graph["job"]``). :func:`opgraph.multirank.rank_view.rank_subgraph`
takes one rank back out as an ordinary single-rank graph.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd

from opgraph.version import GRAPH_SCHEMA_VERSION, __version__
from opgraph.errors import OpgraphInputError
from opgraph.model.edge_kinds import renumbered
from opgraph.model.trace_graph import TraceGraph
from opgraph.multirank.executor import run
from opgraph.multirank.identity import check_ranks, discover, identical_traces
from opgraph.multirank.match import align_clocks, match_collectives
from opgraph.multirank.worker import COLLECTIVE_COLUMNS, STEP_COLUMNS, RankResult, rank_result

#: Memory (bytes) of a loaded graph per byte of uncompressed trace JSON (measured on
#: 8 ranks x ns_x2.json (24 MB, 137k events): 245 MB per rank loaded; docs/multirank.md).
GRAPH_BYTES_PER_JSON_BYTE = 10.0
#: Default budget (bytes) for the ranks kept in full when ``--keep auto``.
DEFAULT_MEMORY_BUDGET = 8 * 2**30


# --------------------------------------------------------------------------- keep policy
def uncompressed_size(path: str) -> int:
    """Bytes of the trace once decompressed (gzip's trailer, mod 4 GiB; else the file size)."""
    size = os.path.getsize(path)
    if path.endswith(".gz") and size >= 18:
        with open(path, "rb") as fh:
            fh.seek(-4, os.SEEK_END)
            isize = struct.unpack("<I", fh.read(4))[0]
        # ISIZE is mod 2**32: a trace compresses less than 1000:1
        while isize < size:
            isize += 2**32
        return isize
    return size


def estimate_graph_bytes(path: str) -> int:
    """Estimated memory (bytes) of the loaded graph of one rank's trace."""
    return int(uncompressed_size(path) * GRAPH_BYTES_PER_JSON_BYTE)


def parse_keep(spec: str | None, files: Sequence[str], budget: int | None = None) -> tuple[list[bool], str]:
    """Which files (in order) keep their full graph, and a one-line note.

    ``spec``: ``"all"``, ``"none"``, ``"auto"`` (default: every rank while the estimated
    graph sizes fit ``budget`` bytes, lowest file first), or rank numbers / ranges
    ``"0,3,5-7"`` (applied to ranks once known: returned as the set in the note field)."""
    spec = (spec or "auto").strip().lower()
    n = len(files)
    if spec == "all":
        return [True] * n, "all ranks kept in full"
    if spec == "none":
        return [False] * n, "no rank kept in full (summaries and collective tables only)"
    if spec == "auto":
        budget = DEFAULT_MEMORY_BUDGET if budget is None else budget
        est = [estimate_graph_bytes(f) for f in files]
        keep, total = [], 0
        for e in est:
            total += e
            keep.append(total <= budget or not keep)  # always keep at least the first rank
        k = sum(keep)
        note = ("all ranks kept in full" if k == n else
                f"{k} of {n} ranks kept in full (estimated {sum(est) / 2**30:.1f} GiB > budget "
                f"{budget / 2**30:.1f} GiB); the rest contribute summaries and collective tables "
                f"(choose with --keep)")
        return keep, note
    raise ValueError(spec)


#: Widest rank range ``A-B`` accepted by :func:`parse_rank_set` (``--keep``, ``--ranks``):
#: the range is expanded into a set, so ``0-3000000000`` would take gigabytes.
MAX_RANK_RANGE = 1_000_000


class RankRangeTooWide(ValueError):
    """A rank range wider than :data:`MAX_RANK_RANGE` ranks."""


def format_rank_set(ranks: list[int] | set[int]) -> str:
    """``[0, 1, 2, 5]`` -> ``"0-2,5"`` (the inverse of :func:`parse_rank_set`; ``"none"``
    for no rank)."""
    out: list[str] = []
    for r in sorted(set(ranks)):
        if out and out[-1].split("-")[-1] == str(r - 1):
            out[-1] = f"{out[-1].split('-')[0]}-{r}"
        else:
            out.append(str(r))
    return ",".join(out) or "none"


def parse_rank_set(spec: str) -> set[int]:
    """``"0,3,5-7"`` -> {0, 3, 5, 6, 7}. Raises ``ValueError`` on bad syntax and
    :class:`RankRangeTooWide` (a ``ValueError``) for a range of more than
    :data:`MAX_RANK_RANGE` ranks, or more than that many ranks in all, before expanding it."""
    out: set[int] = set()
    for part in spec.split(","):
        part = part.strip()
        if not part:
            continue
        if "-" in part:
            a, b = part.split("-", 1)
            lo, hi = int(a), int(b)
            if hi < lo:
                raise ValueError(part)
            if hi - lo + 1 + len(out) > MAX_RANK_RANGE:
                raise RankRangeTooWide(f"rank range {part} spans {hi - lo + 1:,} ranks; at most "
                                       f"{MAX_RANK_RANGE:,} ranks can be selected")
            out.update(range(lo, hi + 1))
        else:
            out.add(int(part))
    if not out:
        raise ValueError(spec)
    return out


# --------------------------------------------------------------------------- merging
def _concat_categorical(parts: list[pd.Categorical]) -> pd.Categorical:
    """Concatenate categoricals with different (possibly mixed-type) categories."""
    uniq_l, code_l, off = [], [], 0
    for c in parts:
        cats = np.asarray(c.categories, dtype=object)
        codes = np.asarray(c.codes, dtype=np.int64)
        uniq_l.append(cats)
        code_l.append(np.where(codes < 0, -1, codes + off))
        off += len(cats)
    allu = np.concatenate(uniq_l) if uniq_l else np.empty(0, dtype=object)
    remap, uniq = pd.factorize(pd.Series(allu, dtype=object), use_na_sentinel=False)
    codes = np.concatenate(code_l) if code_l else np.empty(0, np.int64)
    new = np.where(codes < 0, -1, remap[np.maximum(codes, 0)] if len(remap) else codes)
    return pd.Categorical.from_codes(new.astype(np.int64), categories=pd.Index(np.asarray(uniq, dtype=object),
                                                                                  dtype=object))


def _concat_events(frames: list[pd.DataFrame]) -> pd.DataFrame:
    cols: list[str] = []
    for f in frames:
        cols += [c for c in f.columns if c not in cols]
    data: dict[str, Any] = {}
    for c in cols:
        parts = [f[c] if c in f else pd.Series([None] * len(f), dtype=object) for f in frames]
        if all(isinstance(p.dtype, pd.CategoricalDtype) for p in parts):
            data[c] = _concat_categorical([p.array for p in parts])
        elif all(p.dtype == parts[0].dtype for p in parts):
            data[c] = np.concatenate([p.to_numpy() for p in parts]) if parts else []
        else:
            data[c] = np.concatenate([p.to_numpy(dtype=object) for p in parts])
    return pd.DataFrame(data)


def _concat_codes(parts: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """(uniques, codes) pairs -> one pair (uniques concatenated; duplicates are harmless)."""
    u_l, c_l, off = [], [], 0
    for u, c in parts:
        u_l.append(np.asarray(u, dtype=object))
        c_l.append(np.asarray(c, dtype=np.int64) + off)
        off += len(u)
    u = np.concatenate(u_l) if u_l else np.empty(0, dtype=object)
    c = np.concatenate(c_l).astype(np.int32) if c_l else np.empty(0, np.int32)
    return u, c


@dataclass
class JobBuild:
    """Result of :func:`build_job`: the job graph in column form, and what to report."""

    payload: dict[str, Any]
    skipped: list[str] = field(default_factory=list)
    keep_note: str = ""

    @property
    def job(self) -> dict[str, Any]:
        return self.payload["graph"]["job"]

    def graph(self) -> TraceGraph:
        """The job graph (a :class:`~opgraph.model.trace_graph.TraceGraph`)."""
        return TraceGraph(self.payload)


def matched_collectives(results: list[RankResult]) -> tuple[pd.DataFrame, Any, list[dict[str, Any]]]:
    """The job's collective table from per-rank results sorted by rank: matched
    (``coll_id``, numbered by aligned start; -1 unmatched), on the aligned clock, ``node``
    still the rank's **local** node id, sorted by ``ts, rank``. Returns (table, the clock
    alignment (:func:`~opgraph.multirank.match.align_clocks`), warnings: world size,
    matching and alignment)."""
    ranks = [int(r.rank) for r in results]  # type: ignore[arg-type]
    warnings: list[dict[str, Any]] = []
    for r in results:
        warnings += r.warnings
    ws = {r.world_size for r in results if r.world_size is not None}
    if len(ws) > 1:
        warnings.append({"code": "world_size_mismatch", "count": len(ws), "example_eid": None,
                         "message": f"ranks report different world sizes: {sorted(ws)}"})
    elif ws and len(results) < max(ws):
        absent = sorted(set(range(max(ws))) - set(ranks))
        warnings.append({"code": "ranks_absent", "count": len(absent), "example_eid": None,
                         "message": f"{len(results)} of world size {max(ws)} ranks given; absent: "
                                    f"{absent[:32]}{' ...' if len(absent) > 32 else ''}"})
    coll = pd.concat([r.collectives for r in results], ignore_index=True) if results else pd.DataFrame(
        {c: pd.Series(dtype=t) for c, t in COLLECTIVE_COLUMNS.items()})
    m = match_collectives(coll)
    warnings += m.warnings
    al = align_clocks(m.table, ranks)
    warnings += al.warnings
    t = m.table
    off_of = pd.Series(al.offsets_ns, dtype=np.int64)
    shift = t["rank"].map(off_of).to_numpy(np.int64)
    t["ts"] = t["ts"].to_numpy(np.int64) + shift
    t["end"] = t["end"].to_numpy(np.int64) + shift
    lt = t["launch_ts"].to_numpy(np.int64)
    t["launch_ts"] = np.where(lt >= 0, lt + shift, lt)
    # coll_id: matched collectives numbered by their aligned start
    mk = t[t["key"] >= 0].groupby("key")["ts"].min().sort_values(kind="stable")
    cid = pd.Series(np.arange(len(mk), dtype=np.int64), index=mk.index)
    t["coll_id"] = t["key"].map(cid).fillna(-1).astype(np.int64)
    t = t.drop(columns=["key"]).sort_values(["ts", "rank"], kind="stable").reset_index(drop=True)
    return t[list(COLLECTIVE_COLUMNS) + ["coll_id", "match"]], al, warnings


def merge_results(results: list[RankResult]) -> dict[str, Any]:
    """Merge per-rank results into one job payload (contract in docs/multirank.md).

    Frees each rank's payload as it is merged."""
    from opgraph.model.payload import PICKLE_MAGIC

    check_ranks([(r.rank, r.file) for r in results])
    results = sorted(results, key=lambda r: int(r.rank))  # type: ignore[arg-type]
    ranks = [int(r.rank) for r in results]  # type: ignore[arg-type]
    ws = {r.world_size for r in results if r.world_size is not None}
    t, al, warnings = matched_collectives(results)
    warnings += identical_traces([r.file for r in results], [r.sha256 for r in results])
    unmatched = int((t["coll_id"] < 0).sum())

    # --- node offsets and the merged payload ---
    full = [r.payload is not None for r in results]
    node_offset: dict[int, int] = {}
    off = 0
    for r, f in zip(results, full):
        if f:
            node_offset[int(r.rank)] = off  # type: ignore[arg-type]
            off += int(r.n_events)
    goff = t["rank"].map(pd.Series(node_offset, dtype=np.int64)).to_numpy()
    kept_row = ~pd.isna(goff)
    t["node"] = np.where(kept_row, t["node"].to_numpy(np.int64) + np.nan_to_num(goff).astype(np.int64), -1)

    steps_l = []
    for r in results:
        s = r.steps.copy()
        o = al.offsets_ns[int(r.rank)]  # type: ignore[arg-type]
        for c in ("ts", "end", "gpu_ts", "gpu_end"):
            v = s[c].to_numpy(np.int64)
            s[c] = np.where(v >= 0, v + o, v) if c.startswith("gpu") else v + o
        s.insert(0, "rank", np.int64(r.rank))
        steps_l.append(s)
    steps = (pd.concat(steps_l, ignore_index=True) if steps_l else
             pd.DataFrame({"rank": pd.Series(dtype="int64"), **{c: pd.Series(dtype=d) for c, d in STEP_COLUMNS.items()}}))

    node_ids, ev_l, ts_l, dur_l, dev_l, st_l, corr_l, ext_l, rank_l = [], [], [], [], [], [], [], [], []
    kind_p, name_p, pid_p, tid_p, src_l, dst_l, ek_p = [], [], [], [], [], [], []
    extra: dict[int, dict[str, Any]] = {}
    health: list[dict[str, Any]] = []
    rank_rows: list[dict[str, Any]] = []
    n_edges = 0
    span_lo, span_hi = None, None
    dev_props: list = []
    for r, f in zip(results, full):
        rk = int(r.rank)  # type: ignore[arg-type]
        co = al.offsets_ns[rk]
        row: dict[str, Any] = {
            "rank": rk, "file": r.file, "sha256": r.sha256, "rank_source": r.rank_source,
            "world_size": r.world_size, "node_offset": node_offset.get(rk, -1), "n_nodes": 0, "full": f,
            "clock_offset_ns": int(co), "summary": dict(r.summary), "n_events": int(r.n_events) if f else 0,
        }
        if f:
            p = r.payload
            g = p["graph"]
            no = node_offset[rk]
            cols = p["node_cols"]
            nodes = np.asarray(p["nodes"], dtype=np.int64)
            row["n_nodes"] = int(len(nodes))
            row["graph"] = {k: v for k, v in g.items() if k != "events"}
            node_ids.append(nodes + no)
            ts_l.append(np.asarray(cols["ts"], np.int64) + co)
            dur_l.append(np.asarray(cols["dur"], np.int64))
            dev_l.append(np.asarray(cols["device"], np.int64))
            st_l.append(np.asarray(cols["stream"], np.int64))
            corr_l.append(np.asarray(cols["correlation"], np.int64))
            ext_l.append(np.asarray(cols["external_id"], np.int64))
            rank_l.append(np.full(len(nodes), rk, dtype=np.int64))
            kind_p.append(cols["kind"])
            name_p.append(cols["name"])
            pid_p.append(cols["pid"])
            tid_p.append(cols["tid"])
            src_l.append(np.asarray(p["src"], np.int64) + no)
            dst_l.append(np.asarray(p["dst"], np.int64) + no)
            ek_p.append(p["edge_kind"])
            for j, a in p["edge_extra"].items():
                extra[n_edges + j] = renumbered(a, no)
            n_edges += len(p["src"])
            ev = g["events"].copy(deep=False)
            ev["eid"] = ev["eid"].to_numpy(np.int64) + no
            ev["ts_ns"] = ev["ts_ns"].to_numpy(np.int64) + co
            if "rank" in ev:
                ev["rank"] = np.int64(rk)
            ev_l.append(ev)
            for h in g.get("health", []):
                hh = dict(h)
                if hh.get("example_eid") is not None:
                    hh["example_eid"] = int(hh["example_eid"]) + no
                hh["message"] = f"rank {rk}: {hh['message']}"
                health.append(hh)
            sp = g.get("span_ns", (0, 0))
            if len(nodes):
                span_lo = sp[0] + co if span_lo is None else min(span_lo, sp[0] + co)
                span_hi = sp[1] + co if span_hi is None else max(span_hi, sp[1] + co)
            if not dev_props:
                dev_props = list(g.get("device_properties") or [])
            r.payload = None  # free as we go
        rank_rows.append(row)

    # collective edges: every ordered pair of kept participants' kernels
    kc = t[(t["coll_id"] >= 0) & (t["node"] >= 0)][["coll_id", "node"]]
    pairs = kc.merge(kc, on="coll_id", suffixes=("_u", "_v"))
    pairs = pairs[pairs["node_u"] != pairs["node_v"]]
    c_src = pairs["node_u"].to_numpy(np.int64)
    c_dst = pairs["node_v"].to_numpy(np.int64)
    c_id = pairs["coll_id"].to_numpy(np.int64).tolist()
    for j, c in enumerate(c_id):
        extra[n_edges + j] = {"coll_id": c}
    src_l.append(c_src)
    dst_l.append(c_dst)
    ek_p.append((np.array(["collective"], dtype=object), np.zeros(len(c_src), dtype=np.int32)))

    def cat(lst: list[np.ndarray]) -> np.ndarray:
        return np.concatenate(lst) if lst else np.empty(0, np.int64)

    events = _concat_events(ev_l) if ev_l else pd.DataFrame({"eid": pd.Series(dtype="int64"), "args": []})
    del ev_l
    job = {
        "ranks": rank_rows,
        "collectives": t,
        "steps": steps,
        "alignment": al.to_dict(),
        "unmatched": unmatched,
        "warnings": warnings,
    }
    di = {"world_size": max(ws) if ws else None, "ranks": ranks}
    graph = {
        "source": {"format": "opgraph-job", "file": os.path.commonpath([os.path.abspath(r.file) for r in results])
                   if results else None, "sha256": None},
        "device_properties": dev_props,
        "distributed_info": di,
        "trace_metadata": {},
        "schema_version": GRAPH_SCHEMA_VERSION,
        "opgraph_version": __version__,
        "span_ns": (int(span_lo or 0), int(span_hi or 0)),
        "health": health + warnings,
        "events": events,
        "job": job,
    }
    node_cols = {
        "ts": cat(ts_l), "dur": cat(dur_l), "device": cat(dev_l), "stream": cat(st_l),
        "correlation": cat(corr_l), "external_id": cat(ext_l), "rank": cat(rank_l),
        "kind": _concat_codes(kind_p), "name": _concat_codes(name_p),
        "pid": _concat_codes(pid_p), "tid": _concat_codes(tid_p),
    }
    return {"magic": PICKLE_MAGIC, "graph": graph, "nodes": cat(node_ids), "node_cols": node_cols,
            "src": cat(src_l), "dst": cat(dst_l), "edge_kind": _concat_codes(ek_p), "edge_extra": extra}


def collect(inputs: Sequence[str] | str, keep: str | None = "auto", workers: int | None = None,
            scheduler: str | None = None, budget: int | None = None,
            progress: Callable[[int, int], None] | None = None,
            fn: Callable[..., RankResult] = rank_result) -> tuple[list[RankResult], list[str], str]:
    """Discover the rank files, decide which are kept in full, run ``fn(path, keep_full)``
    per file (pool or Dask). Returns (results, skipped files, keep note)."""
    disc = discover(list(inputs) if not isinstance(inputs, str) else [inputs])
    files = disc.files
    spec = (keep or "auto").strip().lower()
    rank_set: set[int] | None = None
    if spec in ("all", "none", "auto"):
        flags, note = parse_keep(spec, files, budget)
    else:
        try:
            rank_set = parse_rank_set(spec)
        except RankRangeTooWide as e:
            raise OpgraphInputError(None, f"--keep {keep!r}: {e}") from None
        except ValueError:
            raise OpgraphInputError(None, f"--keep {keep!r}: expected all, none, auto or ranks like 0,3,5-7") from None
        # ranks are known only after reading: each worker decides once it knows its rank,
        # so payloads of ranks not asked for never travel back to this process
        flags, note = [frozenset(rank_set)] * len(files), f"ranks {spec} kept in full"
    results = run(fn, [(f, k) for f, k in zip(files, flags)], workers=workers, scheduler=scheduler,
                  progress=progress or (lambda _d, _n: None))
    if rank_set is not None:
        got = {r.rank for r in results}
        if not rank_set & got:
            raise OpgraphInputError(None, f"--keep {keep}: none of these ranks is in the job (ranks "
                                    f"{sorted(x for x in got if x is not None)})")
    return results, disc.skipped, note


def build_job(inputs: Sequence[str] | str, keep: str | None = "auto", workers: int | None = None,
              scheduler: str | None = None, budget: int | None = None,
              progress: Callable[[int, int], None] | None = None) -> JobBuild:
    """Read every rank of a job (directory, glob or files) and merge them into one job
    payload; ``.graph()`` gives the :class:`~opgraph.model.trace_graph.TraceGraph`. See :func:`collect` for the options."""
    results, skipped, note = collect(inputs, keep, workers, scheduler, budget, progress)
    payload = merge_results(results)
    if skipped:
        payload["graph"]["job"]["warnings"].append(
            {"code": "files_skipped", "count": len(skipped), "example_eid": None,
             "message": f"files that are not traces were skipped: {', '.join(os.path.basename(s) for s in skipped[:8])}"
                        + (" ..." if len(skipped) > 8 else "")})
    payload["graph"]["job"]["keep"] = note
    return JobBuild(payload, skipped, note)


def load_job(inputs: Sequence[str] | str, **kw: Any) -> TraceGraph:
    """:func:`build_job` and return the job graph."""
    return build_job(inputs, **kw).graph()
