"""Evaluate ET-driven prediction on the same-run (ET, Kineto) pairs of ../shared/traces.

    python benchmarks/et_eval.py [--traces ../shared/traces] [--json out.json]

DLRM (8 x V100): overheads, lookup table and roofline calibration come from rank 0's
Kineto trace only; every rank's ET is predicted with them (rank 0 is in-sample, ranks 1-7
held out: rank N's Kineto trace is read only to measure the truth). param_linear and
hta_simple_add have one rank: their own profile is used (in-sample, said so in the table).

Truth, per rank: the rank's Kineto ``ProfilerStep`` window (one step in every pair); the
*ET extent* inside it = first top-level op start -> max(last top-level op end, last device
activity end) (what the ET describes; the step also holds ~0.1-0.2 ms of profiler step
overhead before the first op and after the last). Errors are (predicted - truth) / truth;
the geomean is over |error|.
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from opgraph.analysis.overheads import OverheadParams, overhead_samples, overheads_doc  # noqa: E402
from opgraph.analysis.iterations import graph_frame  # noqa: E402
from opgraph.graph.io import load_any  # noqa: E402
from opgraph.predict.et_sim import predict_et  # noqa: E402
from opgraph.predict.kernel_models import write_json_file  # noqa: E402
from opgraph.predict.model_build import build_calibration, build_lookup, profile_ops  # noqa: E402


def profile_files(kineto: Path, out: Path, tag: str, device: str | None = None) -> tuple[str, str, str | None]:
    """Write overheads / lookup / calibration JSONs of one profiled trace; return paths."""
    G = load_any(str(kineto))
    f = graph_frame(G)
    p = OverheadParams()
    doc = overheads_doc(f, p, True, overhead_samples(f, p, with_shapes=True))
    oh, lk, cal = out / f"{tag}_overheads.json", out / f"{tag}_lookup.json", out / f"{tag}_cal.json"
    write_json_file(doc, str(oh), "overheads.schema.json")
    po = profile_ops(f, p)
    write_json_file(build_lookup(f, po=po, device=device).to_dict(), str(lk), "kernel-lookup.schema.json")
    try:
        write_json_file(build_calibration(f, device=device, po=po).to_dict(), str(cal), "roofline-calibration.schema.json")
        cal_s: str | None = str(cal)
    except ValueError:
        cal_s = None
    return str(oh), str(lk), cal_s


def truth(kineto: Path) -> dict[str, float]:
    """Measured step (ProfilerStep span, or the analysis window) and ET extent, µs."""
    G = load_any(str(kineto))
    po = profile_ops(G)
    w = po.window
    first = float(po.ops["ts"].min())
    last = max(float(po.ops["end"].max()),
               float((po.acts["ts"] + po.acts["dur"]).max()) if len(po.acts) else 0.0)
    return {"step_us": (w.end - w.start) / 1e3, "extent_us": (last - first) / 1e3}


def truth_repeated(kineto: Path, et: Path) -> dict[str, float]:
    """Per-iteration truth when the Kineto trace holds many iterations of the ET's one
    (param_linear: 40): iteration starts = every c-th occurrence of the ET's first top-level
    op name (c = its count in the ET); truth = median time between consecutive starts."""
    from opgraph.predict.et_sim import load_et

    walk = load_et(str(et))
    first = walk.ops[0].name
    c = sum(o.name == first for o in walk.ops)
    po = profile_ops(load_any(str(kineto)))
    occ = np.sort(po.ops.loc[po.ops["name"] == first, "ts"].to_numpy())
    starts = occ[::c]
    d = np.diff(starts) / 1e3
    return {"step_us": float(np.median(d)), "extent_us": float(np.median(d)), "iterations_in_trace": len(starts)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--traces", default=str(ROOT.parent / "shared" / "traces"))
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    T = Path(args.traces)
    K, E = T / "A_kineto", T / "B_et"
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        oh, lk, cal = profile_files(K / "param_dlrm_8gpu_rank0.pt.trace.json.gz", out, "dlrm0")
        for r in range(8):
            res = predict_et(str(E / f"param_dlrm_8gpu_rank{r}_et.json.gz"), oh, "V100", lk, cal)
            it = res.iterations[0]
            tr = truth(K / f"param_dlrm_8gpu_rank{r}.pt.trace.json.gz")
            rows.append({"pair": f"param_dlrm_8gpu rank {r}", "profile": "rank 0" + (" (in-sample)" if r == 0 else ""),
                         "held_out": r != 0, **tr, "pred_us": it["e2e_us"], "gpu_active_us": it["gpu_active_us"],
                         "sources": it["ops_by_source"]})
        for name, kin, et, dev in (("param_linear", "param_linear_kineto.json.gz", "param_linear_et.json.gz", "GeForce RTX 2080 Ti"),
                                   ("hta_simple_add", "hta_simple_add_kineto.json.gz", "hta_simple_add_et.json.gz", "A100 SXM4 80GB")):
            oh1, lk1, cal1 = profile_files(K / kin, out, name, None)
            res = predict_et(str(E / et), oh1, dev, lk1, cal1)
            tr = truth(K / kin) if name != "param_linear" else truth_repeated(K / kin, E / et)
            pred = float(np.mean([x["e2e_us"] for x in res.iterations]))
            rows.append({"pair": name, "profile": "same run (in-sample)", "held_out": False, **tr, "pred_us": pred,
                         "gpu_active_us": float(np.mean([x["gpu_active_us"] for x in res.iterations])),
                         "sources": res.to_dict(False)["summary"]["ops_by_source"], "iterations": len(res.iterations)})
    print("| pair | models from | measured step µs | measured ET extent µs | predicted µs | error vs extent % | error vs step % | ops lookup/analytic/roofline/by-name/cpu-only/unmodelled |")
    print("|---|---|--:|--:|--:|--:|--:|---|")
    for r in rows:
        r["err_extent_pct"] = 100 * (r["pred_us"] - r["extent_us"]) / r["extent_us"]
        r["err_step_pct"] = 100 * (r["pred_us"] - r["step_us"]) / r["step_us"]
        s = r["sources"]
        print(f"| {r['pair']} | {r['profile']} | {r['step_us']:,.1f} | {r['extent_us']:,.1f} | {r['pred_us']:,.1f} | "
              f"{r['err_extent_pct']:+.2f} | {r['err_step_pct']:+.2f} | {s['lookup']}/{s['analytic']}/{s['roofline']}/"
              f"{s['lookup_name']}/{s['cpu_only']}/{s['unmodelled']} |")

    def gm(xs: list[float]) -> float:
        xs = [max(abs(x), 1e-6) for x in xs]
        return math.exp(sum(math.log(x) for x in xs) / len(xs))

    held = [r["err_extent_pct"] for r in rows if r["held_out"]]
    dl = [r["err_extent_pct"] for r in rows if r["pair"].startswith("param_dlrm")]
    allr = [r["err_extent_pct"] for r in rows]
    print(f"\ngeomean |error| vs ET extent: held-out DLRM ranks 1-7 {gm(held):.2f} %, all 8 DLRM ranks {gm(dl):.2f} %, "
          f"all {len(allr)} pairs {gm(allr):.2f} %")
    print(f"geomean |error| vs ProfilerStep: held-out DLRM {gm([r['err_step_pct'] for r in rows if r['held_out']]):.2f} %, "
          f"all pairs {gm([r['err_step_pct'] for r in rows]):.2f} %")
    if args.json:
        import json
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
