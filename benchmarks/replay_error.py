#!/usr/bin/env python3
"""Replay error of ``opgraph predict`` over the real Kineto traces.

    python benchmarks/replay_error.py [--traces DIR] [--whatif] [--json OUT]

For every trace in DIR (default ``../shared/traces/A_kineto`` beside the repository) that
has GPU activities, replays the unmodified graph (``opgraph predict --replay``) and
compares predicted and measured step time per step (step windows and spans as in
``opgraph critical-path``: step start to the last end of its members). Also replays with
every binding latency set to the trace's typical value (``--replay --typical-latencies``),
with and without the inferred dependencies (``--no-infer``): that error shows how much
of the timeline the dependency structure alone explains. Prints a markdown table
(docs/predict.md) and geometric means over traces. With ``--whatif`` it adds the
predicted change of the summed step time when every device activity is halved and when
all host time is halved.
"""

from __future__ import annotations

import argparse
import gc
import math
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DIR = ROOT.parent / "shared" / "traces" / "A_kineto"


def _geomean_err(errs: list[float]) -> float:
    """exp(mean(log(1 + e))) − 1: a geometric mean that is defined when errors are 0."""
    return math.expm1(float(np.mean(np.log1p(errs)))) if errs else 0.0


def run(paths: list[Path], whatif: bool) -> tuple[list[dict], dict]:
    from opgraph.graph.io import load_any
    from opgraph.predict.whatif import parse_transforms
    from opgraph.predict.prediction import predict

    rows = []
    for p in paths:
        G = load_any(p)
        kinds = G.column("kind").tolist()
        n_kernels = sum(k in ("kernel", "memcpy", "memset") for k in kinds)
        if not n_kernels:
            del G
            gc.collect()
            continue
        t0 = time.perf_counter()
        res = predict(G)
        dt = time.perf_counter() - t0
        doc = res.to_dict()
        errs = [abs(s["delta_pct"]) for s in doc["steps"] if s["delta_pct"] is not None]
        inf = doc["model"]["inferred"]
        row = {"trace": p.name, "nodes": G.number_of_nodes(), "activities": n_kernels,
               "windows": doc["window_mode"], "steps": len(doc["steps"]),
               "measured_us": doc["summary"]["measured_us"], "predicted_us": doc["summary"]["predicted_us"],
               "max_err_pct": max(errs) if errs else 0.0, "mean_err_pct": float(np.mean(errs)) if errs else 0.0,
               "dropped_edges": doc["model"]["dropped_cycle_edges"], "seconds": dt,
               "inferred": f"{inf.get('blocked_calls', 0)}/{inf.get('handoffs', 0)}/{inf.get('stream_waits', 0)}"}
        bare = predict(G, infer=False).model
        for key, model in (("typ_noinfer", bare), ("typ", res.model)):
            r = predict(G, parse_transforms(typical_latencies=True), boundary_model=model).to_dict()
            e = [abs(s["delta_pct"]) for s in r["steps"] if s["delta_pct"] is not None]
            row[key + "_max_pct"] = max(e) if e else 0.0
            row[key + "_mean_pct"] = float(np.mean(e)) if e else 0.0
        del bare
        if whatif:
            for key, kw in (("kernels_x0.5_pct", {"scale_kernels": [".*=0.5"]}),
                            ("cpu_x0.5_pct", {"scale_cpu": [".*=0.5"]})):
                r = predict(G, parse_transforms(**kw), boundary_model=res.model).to_dict()
                row[key] = r["summary"]["delta_pct"]
        rows.append(row)
        print(f"{p.name}: {row['steps']} steps, max err {row['max_err_pct']:.4f} %", file=sys.stderr)
        del G, res
        gc.collect()
    summary = {"traces": len(rows), "steps": int(sum(r["steps"] for r in rows)),
               "geomean_err_pct": 100.0 * _geomean_err([r["mean_err_pct"] / 100.0 for r in rows]),
               "max_err_pct": max((r["max_err_pct"] for r in rows), default=0.0)}
    for key in ("typ_noinfer", "typ"):
        summary[key + "_geomean_pct"] = 100.0 * _geomean_err([r[key + "_mean_pct"] / 100.0 for r in rows])
        summary[key + "_max_pct"] = max((r[key + "_max_pct"] for r in rows), default=0.0)
    return rows, summary


def table(rows: list[dict], summary: dict, whatif: bool) -> str:
    head = ("| trace | windows | steps | measured µs | predicted µs | max err % | mean err % | replay s "
            "| inferred q/h/s | typical-latency err %, graph edges | typical-latency err %, + inferred |")
    sep = "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|"
    if whatif:
        head += " kernels ×0.5 Δ% | CPU ×0.5 Δ% |"
        sep += "--:|--:|"
    out = [head, sep]
    for r in rows:
        line = (f"| {r['trace']} | {r['windows']} | {r['steps']} | {r['measured_us']:,.1f} | "
                f"{r['predicted_us']:,.1f} | "
                f"{r['max_err_pct']:.4f} | {r['mean_err_pct']:.4f} | {r['seconds']:.2f} | {r['inferred']} | "
                f"{r['typ_noinfer_max_pct']:.2f} | {r['typ_max_pct']:.2f} |")
        if whatif:
            line += f" {r['kernels_x0.5_pct']:.1f} | {r['cpu_x0.5_pct']:.1f} |"
        out.append(line)
    out.append("")
    out.append(f"{summary['traces']} traces with GPU activities, {summary['steps']} steps. Identity replay: geomean "
               f"of the per-trace mean |error| = {summary['geomean_err_pct']:.4f} %, max step |error| = "
               f"{summary['max_err_pct']:.4f} %. Typical-latency replay: geomean "
               f"{summary['typ_noinfer_geomean_pct']:.3f} % "
               f"(max {summary['typ_noinfer_max_pct']:.2f} %) with the graph's edges only, "
               f"{summary['typ_geomean_pct']:.3f} % (max {summary['typ_max_pct']:.2f} %) with the inferred "
               "dependencies.")
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--traces", type=Path, default=DEFAULT_DIR)
    ap.add_argument("--whatif", action="store_true", help="add the halved-kernels / halved-CPU columns")
    ap.add_argument("--json", type=Path, default=None, help="also write rows and summary as JSON")
    args = ap.parse_args()
    if not args.traces.is_dir():
        print(f"no traces: {args.traces} does not exist", file=sys.stderr)
        return 1
    paths = sorted(p for p in args.traces.iterdir() if p.is_file())
    rows, summary = run(paths, args.whatif)
    print(table(rows, summary, args.whatif))
    if args.json:
        import json
        args.json.write_text(json.dumps({"rows": rows, "summary": summary}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
