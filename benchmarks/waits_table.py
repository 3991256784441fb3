"""Per real trace, what the critical path and idle call waits (docs/critical-path.md,
"Waits the trace shows"): the path's breakdown over the default windows (% of the
path), the bound, the profiler-stop tail, and the ``cpu`` stretches of 1 ms or more that
are an annotation's own time (there should be none); the device idle's CPU-induced and
data-loading parts. One JSON line per trace, so two versions can be compared:

``python benchmarks/waits_table.py [TRACE ...] > after.jsonl`` (default: every Kineto
trace with device activities and every Nsight SQLite export in ../shared/traces).
"""

from __future__ import annotations

import glob
import json
import os
import sys

from opgraph.analysis.critical_path.path import critical_path
from opgraph.analysis.idle import idle_time
from opgraph.graph.io import load_any

HERE = os.path.dirname(os.path.abspath(__file__))
TRACES = os.path.join(HERE, "..", "..", "shared", "traces")


def _annotation_like(a) -> object:
    try:
        from opgraph.names import annotation_like
        return annotation_like(a.kind, a.name)
    except ImportError:   # an older opgraph: annotations by kind only
        return a.kind == "annotation"


def row(path: str) -> dict:
    G = load_any(path)
    a = G.arrays
    if not a.is_activity.any():
        return {"trace": os.path.basename(path), "skipped": "no device activities"}
    res = critical_path(G)
    s = res.summary()
    annot = _annotation_like(a)
    cpu_annot = [sg.dur_ns for w in res.windows for sg in w.path
                 if sg.bound_by == "cpu" and sg.eid is not None and sg.dur_ns >= 1_000_000 and annot[a.pos_of[sg.eid]]]
    idle = idle_time(G)
    causes: dict[str, float] = {}
    for d in idle.devices:
        for k, v in d.causes_ns.items():
            causes[k] = causes.get(k, 0.0) + v / 1e3
    return {"trace": os.path.basename(path), "windows": s["windows"], "bound": s["bound"],
            "pct": {k: round(v, 1) for k, v in s["breakdown_pct"].items() if v >= 0.05},
            "stop_tail_ms": round(sum(getattr(w, "profiler_stop_tail_ns", 0) for w in res.windows) / 1e6, 2),
            "cpu_annotation_stretches": len(cpu_annot), "cpu_annotation_ms": round(sum(cpu_annot) / 1e6, 2),
            "idle_ms": round(sum(d.idle_ns for d in idle.devices) / 1e6, 2),
            "idle_cpu_induced_ms": round(causes.get("cpu_induced", 0.0) / 1e3, 2),
            "idle_data_loading_ms": round(causes.get("data_loading", 0.0) / 1e3, 2)}


def main(argv: list[str]) -> None:
    paths = argv or sorted(glob.glob(os.path.join(TRACES, "A_kineto", "*"))
                           + glob.glob(os.path.join(TRACES, "C_nsys", "*.sqlite")))
    for p in paths:
        try:
            r = row(p)
        except Exception as e:   # a trace this version cannot read: say so and go on
            r = {"trace": os.path.basename(p), "error": f"{type(e).__name__}: {e}"[:200]}
        print(json.dumps(r), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
