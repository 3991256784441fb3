#!/usr/bin/env python3
"""Load a folder of Kineto traces in HTA and print what HTA finds, as one JSON document.

Run with HTA's own interpreter (HTA is not a dependency of opgraph), e.g.
``/work/hta-venv/bin/python benchmarks/peers/hta_roundtrip.py DIR``. Used by
tests/test_peer_roundtrip.py to check that opgraph's per-rank Perfetto exports load in HTA
as the same ranks, with the same numbers, as the original traces.

Output: ``{"ranks": [...], "stragglers": [...], "kernel_time_us": {rank: total},
"idle": {rank: {host_wait_us, kernel_wait_us, other_us}}, "comm_comp_overlap_pct":
{rank: pct}}``.
"""

from __future__ import annotations

import json
import logging
import sys
import warnings


def main(folder: str) -> int:
    warnings.filterwarnings("ignore")
    logging.disable(logging.CRITICAL)
    from hta.trace_analysis import TraceAnalysis

    t = TraceAnalysis(trace_dir=folder)
    ranks = sorted(int(r) for r in t.t.traces.keys())
    out: dict = {"ranks": ranks}
    try:
        out["stragglers"] = sorted(int(r) for r in t.get_potential_stragglers(num_candidates=1))
    except Exception as e:  # noqa: BLE001 - report HTA's failure, do not hide it
        out["stragglers_error"] = f"{type(e).__name__}: {e}"
    kt = {}
    for r in ranks:
        df = t.t.get_trace(r)
        names = t.t.symbol_table.sym_table
        cat = df["cat"].map(lambda i: names[int(i)] if int(i) >= 0 else "")
        kt[str(r)] = float(df.loc[cat == "kernel", "dur"].sum())
    out["kernel_time_us"] = kt
    idle = {}
    try:
        res = t.get_idle_time_breakdown(ranks=ranks, visualize=False)
        df = res[0] if isinstance(res, tuple) else res
        for r, g in df.groupby("rank"):
            piv = g.groupby("idle_category")["idle_time"].sum().to_dict()
            idle[str(int(r))] = {"host_wait_us": float(piv.get("host_wait", 0.0)),
                                 "kernel_wait_us": float(piv.get("kernel_wait", 0.0)),
                                 "other_us": float(piv.get("other", 0.0))}
        out["idle"] = idle
    except Exception as e:  # noqa: BLE001
        out["idle_error"] = f"{type(e).__name__}: {e}"
    try:
        ov = t.get_comm_comp_overlap(visualize=False)
        out["comm_comp_overlap_pct"] = {str(int(r)): float(p) for r, p in
                                        zip(ov["rank"], ov["comp_comm_overlap_pctg"])}
    except Exception as e:  # noqa: BLE001
        out["overlap_error"] = f"{type(e).__name__}: {e}"
    print(json.dumps(out, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
