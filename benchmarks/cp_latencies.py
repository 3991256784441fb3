"""Measured latencies behind the critical path's tolerances (docs/critical-path.md).

For every real Kineto trace in ../shared/traces/A_kineto (or the files given):

* hand-offs the graph builder inferred: the wake-up latency (the other thread's first
  event after the waiter went quiet) and the resume latency (the waiter's resume after the
  other thread's event ended), µs;
* binding launch edges on the default windows' paths: the time from the launch call's
  return to the activity's start on a free stream (launch latency), µs;
* binding stream edges: the gap between back-to-back activities when the next one was
  already queued (kernel gap), µs;
* binding launch edges: the time from the launch call's start to the activity's start
  (``launch_from_call``: what a launch costs when the stream was free, the basis of
  ``LAUNCH_CALL_MAX_NS``), and of it the part inside the call (``launch_in_call``), µs.

Prints percentiles per quantity over all traces, and the traces whose values exceed the
bounds. Usage: ``python benchmarks/cp_latencies.py [TRACE ...]``.
"""

from __future__ import annotations

import glob
import os
import sys

import numpy as np

from opgraph.analysis.critical_path.boundary_edges import R
from opgraph.analysis.critical_path.engine import boundary_dag
from opgraph.graph.io import load_any

HERE = os.path.dirname(os.path.abspath(__file__))
TRACES = os.path.join(HERE, "..", "..", "shared", "traces", "A_kineto")


def measure(path: str) -> dict[str, np.ndarray]:
    G = load_any(path)
    a = G.arrays
    N = G.nodes
    wake, resume = [], []
    for u, v, d in G.edges(data=True):
        if d.get("kind") != "handoff":
            continue
        wf, first = d["wait_from"], d["first"]
        i0 = N[wf]["ts"] + (N[wf]["dur"] if d["wait_from_at"] == "end" else 0)
        i1 = N[v]["ts"] + (N[v]["dur"] if d["resume_at"] == "end" else 0)
        if first >= 0:
            wake.append(N[first]["ts"] - i0)
        resume.append(i1 - (N[u]["ts"] + N[u]["dur"]))
    dag = boundary_dag(G, a)
    picked = dag.cedge[dag.cedge >= 0]
    role = dag.role[picked]
    src, dst = dag.src[picked], dag.dst[picked]
    lm = role == R["launch"]
    call, act = src[lm] // 2, dst[lm] // 2
    after_return = a.ts[act] - a.end[call]
    from_call = a.ts[act] - a.ts[call]
    in_call = np.minimum(a.end[call], a.ts[act]) - a.ts[call]
    sm = role == R["stream"]
    gaps = dag.t[dst[sm]] - dag.t[src[sm]]
    return {"wake": np.array(wake) / 1e3, "resume": np.array(resume) / 1e3,
            "launch_after_return": after_return[after_return >= 0] / 1e3, "kernel_gap": gaps / 1e3,
            "launch_from_call": from_call / 1e3, "launch_in_call": in_call / 1e3}


def main(argv: list[str]) -> int:
    files = argv or sorted(glob.glob(os.path.join(TRACES, "*")))
    acc: dict[str, list[np.ndarray]] = {}
    over: dict[str, list[str]] = {}
    for f in files:
        m = measure(f)
        for k, v in m.items():
            acc.setdefault(k, []).append(v)
            if k in ("launch_after_return", "kernel_gap") and len(v) and (v > 100).any():
                over.setdefault(k, []).append(f"{os.path.basename(f)} ({int((v > 100).sum())} > 100 µs, "
                                              f"max {v.max():,.0f} µs)")
    print(f"{'quantity':22s} {'n':>7s} {'p50':>8s} {'p90':>8s} {'p99':>8s} {'p99.9':>9s} {'max':>11s}  (µs)")
    for k, vs in acc.items():
        v = np.concatenate(vs) if vs else np.empty(0)
        if not len(v):
            continue
        p = np.percentile(v, [50, 90, 99, 99.9])
        print(f"{k:22s} {len(v):7d} {p[0]:8.1f} {p[1]:8.1f} {p[2]:8.1f} {p[3]:9.1f} {v.max():11,.1f}")
    for k, rows in over.items():
        print(f"\n{k} above 100 µs in:")
        for r in rows:
            print("  " + r)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
