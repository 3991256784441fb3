"""Evaluate ET-driven prediction on the same-run (ET, Kineto) pairs of ../shared/traces.

    python benchmarks/et_eval.py [--traces ../shared/traces] [--json out.json]

DLRM (8 x V100): overheads, lookup table and roofline calibration come from rank 0's
Kineto trace only; every rank's ET is predicted with them (rank 0 is in-sample, ranks 1-7
held out: rank N's Kineto trace is read only to measure the truth). param_linear and
hta_simple_add have one rank: their own profile is used (in-sample, said so in the table).

Profile side (the evaluated configuration): ``opgraph overheads --by-shapes
--drop-outliers iqr`` and ``opgraph kernel-models --job`` (rank 0's collective kernels
lose the time they waited for the other ranks of the profiled job, from the job's
collective table; the same correction for every predicted rank). ``ABLATION`` below also
runs the previous configuration (all samples, waits kept) and each fix alone.

Truth, per rank, two evaluations:

(i) raw: the rank's Kineto ``ProfilerStep`` span (one step in every pair), and the *ET
    extent* inside it = first top-level op start -> max(last top-level op end, last device
    activity end) (what the ET describes; the step also holds ~0.1-0.2 ms of profiler step
    overhead before the first op and after the last);
(ii) intrinsic: the same minus ``gpu_comm_wait`` = the time the rank's own critical path
    spent in collectives waiting for later ranks (``crossrank_critical_path(job,
    ranks=[r])`` on the 8-rank job graph). A single-rank ET cannot contain when the other
    ranks arrive, so (ii) is what it can determine; (i) also needs the arrival skew.

Errors are (predicted - truth) / truth; the geomean is over |error|.
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from opgraph.analysis.crossrank import crossrank_critical_path  # noqa: E402
from opgraph.analysis.stragglers import rank_comm_waits  # noqa: E402
from opgraph.analysis.overheads import OverheadParams, overhead_samples, overheads_doc  # noqa: E402
from opgraph.analysis.graph_frame import graph_frame
from opgraph.graph.io import load_any  # noqa: E402
from opgraph.predict.et_sim import predict_et  # noqa: E402
from opgraph.predict.kernel_models import write_json_file  # noqa: E402
from opgraph.predict.kernel_model_build import build_calibration, build_lookup, profile_ops  # noqa: E402


def profile_files(kineto: Path, out: Path, tag: str, device: str | None = None, drop_outliers: str | None = "iqr",
                  job: Any = None) -> tuple[str, str, str | None]:
    """Write overheads / lookup / calibration JSONs of one profiled trace; return paths.
    ``job``: the job graph the trace is a rank of (its cross-rank waits are removed)."""
    G = load_any(str(kineto))
    f = graph_frame(G)
    p = OverheadParams(drop_outliers=drop_outliers)
    doc = overheads_doc(f, p, True, overhead_samples(f, p, with_shapes=True))
    oh, lk, cal = out / f"{tag}_overheads.json", out / f"{tag}_lookup.json", out / f"{tag}_cal.json"
    write_json_file(doc, str(oh), "overheads.schema.json")
    cw = rank_comm_waits(job, sha256=G.graph["source"]["sha256"])[1] if job is not None else None
    po = profile_ops(f, p, comm_waits=cw)
    write_json_file(build_lookup(f, po=po, device=device).to_dict(), str(lk), "kernel-lookup.schema.json")
    try:
        write_json_file(build_calibration(f, device=device, po=po).to_dict(), str(cal), "roofline-calibration.schema.json")
        cal_s: str | None = str(cal)
    except ValueError:
        cal_s = None
    return str(oh), str(lk), cal_s


def comm_wait_on_path_us(job: Any, rank: int) -> float:
    """``gpu_comm_wait`` on rank ``rank``'s own critical path (µs): its step's path with
    the other ranks seen only through the collective table (``--ranks r``)."""
    w = crossrank_critical_path(job, ranks=[rank]).steps[0]
    return w.breakdown_ns.get("gpu_comm_wait", 0) / 1e3


def dlrm_job(kineto_dir: Path) -> Any:
    """The 8-rank DLRM job graph (``opgraph build`` of the 8 Kineto files)."""
    from opgraph.multirank.job import build_job

    return build_job([str(kineto_dir / f"param_dlrm_8gpu_rank{r}.pt.trace.json.gz") for r in range(8)],
                     workers=1).graph()


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


#: (label, drop_outliers, remove cross-rank waits): the evaluated configuration first.
ABLATION: tuple[tuple[str, str | None, bool], ...] = (
    ("iqr + waits removed", "iqr", True),
    ("waits removed only", None, True),
    ("iqr only", "iqr", False),
    ("neither (previous)", None, False),
)


def gm(xs: list[float]) -> float:
    """Geometric mean of |x| (floored at 1e-6)."""
    xs = [max(abs(x), 1e-6) for x in xs]
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def evaluate(T: Path, out: Path, job: Any, truths: dict[str, dict[str, float]], drop_outliers: str | None,
             remove_waits: bool) -> list[dict[str, Any]]:
    """One configuration's rows (predictions against the precomputed truths)."""
    K, E = T / "A_kineto", T / "B_et"
    tag = f"{drop_outliers}_{remove_waits}"
    rows = []
    oh, lk, cal = profile_files(K / "param_dlrm_8gpu_rank0.pt.trace.json.gz", out, f"dlrm0_{tag}", None,
                                drop_outliers, job if remove_waits else None)
    for r in range(8):
        res = predict_et(str(E / f"param_dlrm_8gpu_rank{r}_et.json.gz"), oh, "V100", lk, cal)
        it = res.iterations[0]
        pair = f"param_dlrm_8gpu rank {r}"
        rows.append({"pair": pair, "profile": "rank 0" + (" (in-sample)" if r == 0 else ""), "dlrm": True,
                     "held_out": r != 0, **truths[pair], "pred_us": it["e2e_us"], "gpu_active_us": it["gpu_active_us"],
                     "sources": it["ops_by_source"]})
    for name, kin, et, dev in (("param_linear", "param_linear_kineto.json.gz", "param_linear_et.json.gz", "GeForce RTX 2080 Ti"),
                               ("hta_simple_add", "hta_simple_add_kineto.json.gz", "hta_simple_add_et.json.gz", "A100 SXM4 80GB")):
        oh1, lk1, cal1 = profile_files(K / kin, out, f"{name}_{tag}", None, drop_outliers)
        res = predict_et(str(E / et), oh1, dev, lk1, cal1)
        pred = float(np.mean([x["e2e_us"] for x in res.iterations]))
        rows.append({"pair": name, "profile": "same run (in-sample)", "dlrm": False, "held_out": False, **truths[name],
                     "pred_us": pred, "gpu_active_us": float(np.mean([x["gpu_active_us"] for x in res.iterations])),
                     "sources": res.to_dict(False)["summary"]["ops_by_source"], "iterations": len(res.iterations)})
    for r in rows:
        for k in ("step", "extent", "intrinsic_step", "intrinsic_extent"):
            r[f"err_{k}_pct"] = 100 * (r["pred_us"] - r[f"{k}_us"]) / r[f"{k}_us"]
    return rows


def geomeans(rows: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Per truth: geomean |error| over held-out DLRM ranks, all 8 DLRM ranks, all pairs."""
    out = {}
    for k in ("step", "extent", "intrinsic_step", "intrinsic_extent"):
        e = f"err_{k}_pct"
        out[k] = {"held_out": gm([r[e] for r in rows if r["held_out"]]),
                  "dlrm": gm([r[e] for r in rows if r["dlrm"]]), "all": gm([r[e] for r in rows])}
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--traces", default=str(ROOT.parent / "shared" / "traces"))
    ap.add_argument("--json", default=None)
    ap.add_argument("--no-ablation", action="store_true", help="Only the evaluated configuration.")
    args = ap.parse_args()
    T = Path(args.traces)
    K, E = T / "A_kineto", T / "B_et"
    job = dlrm_job(K)
    truths: dict[str, dict[str, float]] = {}
    for r in range(8):
        tr = truth(K / f"param_dlrm_8gpu_rank{r}.pt.trace.json.gz")
        w = comm_wait_on_path_us(job, r)
        truths[f"param_dlrm_8gpu rank {r}"] = {**tr, "comm_wait_us": w, "intrinsic_step_us": tr["step_us"] - w,
                                               "intrinsic_extent_us": tr["extent_us"] - w}
    for name, kin, et in (("param_linear", "param_linear_kineto.json.gz", "param_linear_et.json.gz"),
                          ("hta_simple_add", "hta_simple_add_kineto.json.gz", "hta_simple_add_et.json.gz")):
        tr = truth(K / kin) if name != "param_linear" else truth_repeated(K / kin, E / et)
        truths[name] = {**tr, "comm_wait_us": 0.0, "intrinsic_step_us": tr["step_us"], "intrinsic_extent_us": tr["extent_us"]}
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for label, ol, rw in (ABLATION[:1] if args.no_ablation else ABLATION):
            results[label] = evaluate(T, Path(tmp), job, truths, ol, rw)
    rows = results[ABLATION[0][0]]
    print(f"configuration: {ABLATION[0][0]}\n")
    print("| pair | models from | step µs | ET extent µs | gpu_comm_wait on path µs | predicted µs | (i) vs step % "
          "| (i) vs extent % | (ii) vs step − wait % | (ii) vs extent − wait % | ops lookup/analytic/roofline/by-name/cpu-only/unmodelled |")
    print("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|---|")
    for r in rows:
        s = r["sources"]
        print(f"| {r['pair']} | {r['profile']} | {r['step_us']:,.1f} | {r['extent_us']:,.1f} | {r['comm_wait_us']:,.1f} | "
              f"{r['pred_us']:,.1f} | {r['err_step_pct']:+.2f} | {r['err_extent_pct']:+.2f} | "
              f"{r['err_intrinsic_step_pct']:+.2f} | {r['err_intrinsic_extent_pct']:+.2f} | {s['lookup']}/{s['analytic']}/"
              f"{s['roofline']}/{s['lookup_name']}/{s['cpu_only']}/{s['unmodelled']} |")
    print("\ngeomean |error| % (held-out DLRM ranks 1-7 / all 8 DLRM ranks / all 10 pairs):")
    print("| configuration | (i) vs step | (i) vs extent | (ii) vs step − wait | (ii) vs extent − wait |")
    print("|---|--:|--:|--:|--:|")
    for label, rs in results.items():
        g = geomeans(rs)
        print(f"| {label} | " + " | ".join(f"{g[k]['held_out']:.2f} / {g[k]['dlrm']:.2f} / {g[k]['all']:.2f}"
                                           for k in ("step", "extent", "intrinsic_step", "intrinsic_extent")) + " |")
    print("\nparam_linear predicted µs per configuration: "
          + ", ".join(f"{label} {next(r for r in rs if r['pair'] == 'param_linear')['pred_us']:,.1f}"
                      for label, rs in results.items()))
    if args.json:
        import json
        Path(args.json).write_text(json.dumps({"rows": rows, "geomeans": {k: geomeans(v) for k, v in results.items()},
                                               "ablation": results}, indent=1))


if __name__ == "__main__":
    main()
