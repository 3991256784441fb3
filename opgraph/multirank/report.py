"""What ``opgraph info`` and ``opgraph summary DIR`` report about a multi-rank job
(JSON-ready dicts; times in µs for users)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from opgraph.multirank.match import align_clocks, match_collectives
from opgraph.multirank.worker import RankResult


def _us(ns: int | float | None) -> float | None:
    return None if ns is None else round(float(ns) / 1000.0, 3)


def collectives_doc(coll: pd.DataFrame) -> dict[str, Any]:
    """Matched / unmatched collective kernels, overall and per collective name."""
    by: dict[str, dict[str, int]] = {}
    if len(coll):
        g = coll.assign(m=coll["coll_id"] >= 0).groupby("coll")
        for name, grp in g:
            by[str(name)] = {"kernels": int(len(grp)), "matched_kernels": int(grp["m"].sum()),
                             "collectives": int(grp.loc[grp["m"], "coll_id"].nunique())}
    matched = coll[coll["coll_id"] >= 0] if len(coll) else coll
    return {"kernels": int(len(coll)), "matched": int(matched["coll_id"].nunique()) if len(coll) else 0,
            "unmatched_kernels": int((coll["coll_id"] < 0).sum()) if len(coll) else 0,
            "match": sorted(set(coll["match"].astype(str))) if len(coll) else [], "by_collective": by}


def job_info_doc(job: dict[str, Any]) -> dict[str, Any]:
    """The ``job`` section of ``opgraph info`` for a job graph."""
    al = job["alignment"]
    ranks = []
    for r in job["ranks"]:
        rk = int(r["rank"])
        ranks.append({"rank": rk, "file": r["file"], "rank_source": r["rank_source"],
                      "world_size": r["world_size"], "full": bool(r["full"]),
                      "node_offset": int(r["node_offset"]), "n_nodes": int(r["n_nodes"]),
                      "clock_offset_us": _us(r["clock_offset_ns"]),
                      "residual_us": _us(al["residual_ns"].get(rk, 0)),
                      "collectives": int(r["summary"].get("collectives", 0))})
    return {"ranks": ranks, "reference_rank": int(al["reference_rank"]), "method": al["method"],
            "collectives": collectives_doc(job["collectives"]), "unmatched": int(job["unmatched"]),
            "keep": job.get("keep", ""), "warnings": list(job.get("warnings", []))}


def job_summary_doc(results: list[RankResult], skipped: list[str]) -> dict[str, Any]:
    """``opgraph summary DIR --json``: one row per rank plus the job's alignment and
    collective matching (schemas/multirank-summary.schema.json)."""
    from opgraph.multirank.identity import check_ranks

    check_ranks([(r.rank, r.file) for r in results])
    results = sorted(results, key=lambda r: int(r.rank))  # type: ignore[arg-type]
    coll = pd.concat([r.collectives for r in results], ignore_index=True)
    m = match_collectives(coll)
    al = align_clocks(m.table, [int(r.rank) for r in results])  # type: ignore[arg-type]
    t = m.table.rename(columns={"key": "coll_id"})
    rows = []
    for r in results:
        s = r.summary
        gspan = s.get("gpu_span_ns") or 0
        rows.append({
            "rank": int(r.rank), "file": r.file, "rank_source": r.rank_source,  # type: ignore[arg-type]
            "world_size": r.world_size, "events": int(s["events"]), "nodes": int(s["nodes"]),
            "kernels": int(s["kernels"]), "steps": int(s["steps"]),
            "step_time_us": _us(s.get("step_time_ns")), "span_us": _us(s["span_ns"]),
            "gpu_busy_us": _us(s["gpu_busy_ns"]), "gpu_idle_us": _us(s["gpu_idle_ns"]),
            "gpu_busy_pct": round(100.0 * s["gpu_busy_ns"] / gspan, 2) if gspan else 0.0,
            "comm_busy_us": _us(s["comm_busy_ns"]), "collectives": int(s["collectives"]),
            "clock_offset_us": _us(al.offsets_ns[int(r.rank)]),  # type: ignore[arg-type]
            "residual_us": _us(al.residual_ns[int(r.rank)]),  # type: ignore[arg-type]
            "warnings": len(r.warnings) + int(s.get("health", 0)),
        })
    warnings = [w for r in results for w in r.warnings] + m.warnings + al.warnings
    return {"ranks": rows, "reference_rank": al.reference_rank,
            "collectives": collectives_doc(t), "skipped": list(skipped), "warnings": warnings}
