"""Matching collectives across ranks and aligning the ranks' clocks on them.

Rules (docs/multirank.md, "Matching rule" and "Clock alignment"):

* a process group whose kernels all carry ``Seq`` matches by (``pg``, ``seq``): a key is
  matched when every rank of the group holds exactly one kernel with it;
* otherwise by per-group order: the *k*-th kernel of group ``pg`` on each rank, ranks of the
  group being those that hold kernels of it; ranks with more kernels leave the extra ones
  unmatched;
* ``coll`` must agree, and so must ``nelems`` when known (except ``all_to_all``, whose
  per-rank sizes may legitimately differ); a disagreement leaves the key unmatched;
* offsets: reference = the lowest rank; offset(r) = median over shared collectives of
  ``end[ref] - end[r]`` (ns), chained through other ranks when r shares none with the
  reference; residual(r) = median of ``|aligned end[r] - aligned end[ref]|``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

#: Collectives whose per-rank message sizes may differ (not checked for agreement).
SIZE_MAY_DIFFER = frozenset({"all_to_all", "send_recv"})


@dataclass
class MatchResult:
    """``table``: the input rows plus ``key`` (int64, -1 unmatched), ``match`` and
    ``coll_id`` (assigned later, after alignment); ``warnings``: health-like dicts."""

    table: pd.DataFrame
    warnings: list[dict[str, Any]] = field(default_factory=list)


def _warn(out: list[dict[str, Any]], code: str, count: int, message: str) -> None:
    if count:
        out.append({"code": code, "count": int(count), "example_eid": None, "message": message})


def match_collectives(coll: pd.DataFrame) -> MatchResult:
    """Match the concatenated per-rank collective tables (contract columns; one row per
    collective kernel). Returns the table with ``key`` (a matched collective's id before
    renumbering, -1 when unmatched) and ``match`` (``"seq"`` / ``"order"``)."""
    t = coll.sort_values(["rank", "ts", "node"], kind="stable").reset_index(drop=True)
    warnings: list[dict[str, Any]] = []
    n = len(t)
    key = np.full(n, -1, dtype=np.int64)
    mode = np.full(n, "order", dtype=object)
    if not n:
        t["key"] = key
        t["match"] = mode
        return MatchResult(t, warnings)
    pg_all_seq = t.groupby("pg")["seq"].transform("min").to_numpy() >= 0
    mode[pg_all_seq] = "seq"
    order = t.groupby(["pg", "rank"]).cumcount().to_numpy(np.int64)
    t["_k"] = np.where(pg_all_seq, t["seq"].to_numpy(np.int64), order)
    t["_mode"] = mode
    # ranks of each group
    g_ranks = t.groupby("pg")["rank"].nunique()
    t["_gr"] = t["pg"].map(g_ranks).to_numpy(np.int64)
    grp = t.groupby(["pg", "_k"], sort=True)
    size = grp["rank"].transform("size").to_numpy()
    nuniq = grp["rank"].transform("nunique").to_numpy()
    ok = (nuniq == size) & (nuniq == t["_gr"].to_numpy()) & (nuniq >= 2)
    # a rank listing one key twice (seq mode)
    dup = (nuniq != size)
    _warn(warnings, "collective_duplicate_seq", int(dup.sum()),
          "collective kernels sharing (process group, Seq) with another kernel of the same rank: left unmatched")
    missing = (~dup) & (nuniq < t["_gr"].to_numpy()) & (nuniq >= 1)
    n_groups_single = int((t["_gr"] < 2).sum())
    _warn(warnings, "collective_single_rank", n_groups_single,
          "collective kernels of a process group seen on one rank only: nothing to match")
    _warn(warnings, "collective_unmatched", int((missing & (t["_gr"].to_numpy() >= 2)).sum()),
          "collective kernels absent on some rank of their group (different counts per rank, or a "
          "Seq missing on a rank): left unmatched")
    # coll / nelems must agree
    c_n = grp["coll"].transform("nunique").to_numpy()
    nel = t["nelems"].where(t["nelems"] >= 0)
    t["_nel"] = nel
    e_n = t.groupby(["pg", "_k"])["_nel"].transform("nunique").to_numpy()
    sized = ~t["coll"].isin(SIZE_MAY_DIFFER).to_numpy()
    disagree = ok & ((c_n > 1) | ((e_n > 1) & sized))
    _warn(warnings, "collective_mismatch", int(disagree.sum()),
          "collective kernels matched by group and position whose collective name or message size "
          "differ across ranks: left unmatched")
    ok &= ~disagree
    codes = grp.ngroup().to_numpy(np.int64)
    key[ok] = codes[ok]
    t["key"] = key
    t["match"] = t["_mode"].to_numpy()
    t = t.drop(columns=["_k", "_mode", "_gr", "_nel"])
    return MatchResult(t, warnings)


@dataclass
class Alignment:
    """Clock offsets (ns, added to a rank's own clock) and residuals (ns)."""

    reference_rank: int
    offsets_ns: dict[int, int]
    residual_ns: dict[int, int]
    matched: int
    warnings: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"method": "collective_end_median", "reference_rank": int(self.reference_rank),
                "offsets_ns": {int(r): int(v) for r, v in self.offsets_ns.items()},
                "residual_ns": {int(r): int(v) for r, v in self.residual_ns.items()},
                "matched": int(self.matched)}


def align_clocks(matched: pd.DataFrame, ranks: list[int]) -> Alignment:
    """Offsets that make matched collective kernels end together (see module doc).

    ``matched`` holds the rows of matched kernels (``rank``, ``key``, ``end`` ns)."""
    ranks = sorted(int(r) for r in ranks)
    ref = ranks[0] if ranks else 0
    warnings: list[dict[str, Any]] = []
    offsets: dict[int, int] = {ref: 0}
    m = matched[matched["key"] >= 0]
    if len(m):
        wide = m.pivot_table(index="key", columns="rank", values="end", aggfunc="first")
    else:
        wide = pd.DataFrame()
    # breadth-first from the reference through ranks that share collectives
    frontier = [ref]
    while frontier:
        nxt = []
        for q in frontier:
            if q not in wide.columns:
                continue
            eq = wide[q]
            for r in ranks:
                if r in offsets or r not in wide.columns:
                    continue
                both = eq.notna() & wide[r].notna()
                if both.any():
                    d = (eq[both] - wide[r][both]).to_numpy(dtype=np.float64)
                    offsets[r] = int(offsets[q] + np.round(np.median(d)))
                    nxt.append(r)
        frontier = nxt
    lost = [r for r in ranks if r not in offsets]
    for r in lost:
        offsets[r] = 0
    _warn(warnings, "clock_unaligned", len(lost),
          f"ranks sharing no matched collective with the others keep their own clock: {lost[:16]}")
    residual: dict[int, int] = {}
    for r in ranks:
        if r == ref or r in lost or r not in wide.columns or ref not in wide.columns:
            residual[r] = 0
            continue
        both = wide[ref].notna() & wide[r].notna()
        if not both.any():  # aligned through another rank: deviation from the key's median end
            al = wide.add(pd.Series({c: offsets.get(int(c), 0) for c in wide.columns}), axis=1)
            med = al.median(axis=1)
            d = (al[r] - med)[al[r].notna()].to_numpy(np.float64)
        else:
            d = ((wide[r][both] + offsets[r]) - (wide[ref][both] + offsets[ref])).to_numpy(np.float64)
        residual[r] = int(np.round(np.median(np.abs(d)))) if len(d) else 0
    return Alignment(ref, {r: offsets[r] for r in ranks}, residual, int(m["key"].nunique()) if len(m) else 0,
                     warnings)
