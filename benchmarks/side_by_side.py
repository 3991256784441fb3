#!/usr/bin/env python3
"""opgraph and Holistic Trace Analysis (HTA) on the same traces, in one run, with the ratios.

    python benchmarks/side_by_side.py TRACE [TRACE ...] [--hta-python /path/to/venv/bin/python]

Scaled traces come from ``benchmarks/scale_trace.py`` (docs/performance.md). Each step is a
child process reaped with ``os.wait4`` (exact wall time and peak RSS per step):

========================  ==================================  =========================================
step                      opgraph                             HTA 0.5 (``--hta-python``, or
                                                              ``$OPGRAPH_HTA_PYTHON``; skipped without)
========================  ==================================  =========================================
load                      ``opgraph build TRACE -o g.gpickle``  ``TraceAnalysis(trace_dir)``
idle                      ``opgraph idle TRACE --json``        load + ``get_idle_time_breakdown``
                          (from the raw trace: build included)
critical path, all steps  ``opgraph critical-path TRACE        load + ``critical_path_analysis`` over
                          --json --no-path`` (raw trace)       every ProfilerStep (instance range)
========================  ==================================  =========================================

HTA's critical path here is one call over the range of all steps (no overlay written);
opgraph's is one path per step, every step. Both read the raw trace in every step, so the
ratios compare whole jobs. The machine's load average is printed before and after:
ratios measured on a loaded machine are not comparable to quiet ones.

Prints a markdown table: per trace and step, opgraph's and HTA's wall seconds and peak RSS,
and HTA ÷ opgraph.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HTA_SCRIPT = r"""
import os, sys, tempfile, warnings
warnings.filterwarnings("ignore")
trace, step = sys.argv[1], sys.argv[2]
d = tempfile.mkdtemp()
os.symlink(os.path.abspath(trace), os.path.join(d, os.path.basename(trace)))
from hta.trace_analysis import TraceAnalysis
ta = TraceAnalysis(trace_dir=d)
if step == "idle":
    ta.get_idle_time_breakdown(ranks=[0], visualize=False)
elif step == "critical_path":
    df = ta.t.get_trace(0)
    sym = ta.t.symbol_table.get_sym_id_map()
    ids = [v for k, v in sym.items() if "ProfilerStep" in k]
    n = int(df["name"].isin(ids).sum())
    if n == 0:
        ta.critical_path_analysis(rank=0, annotation="", instance_id=None)
    else:
        ta.critical_path_analysis(rank=0, annotation="ProfilerStep", instance_id=(0, n - 1))
"""


def run(argv: list[str], timeout: float | None = None) -> dict[str, float]:
    """Wall seconds, peak RSS (MiB) and exit code of one child process."""
    t0 = time.perf_counter()
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    deadline = None if timeout is None else t0 + timeout
    while True:
        pid, status, ru = os.wait4(p.pid, os.WNOHANG)
        if pid:
            break
        if deadline is not None and time.perf_counter() > deadline:
            p.kill()
        time.sleep(0.05)
    p.returncode = os.waitstatus_to_exitcode(status)
    err = p.stderr.read().decode(errors="replace").strip().splitlines() if p.stderr else []
    return {"wall_s": time.perf_counter() - t0, "rss_mib": ru.ru_maxrss / 1024, "rc": p.returncode,
            "err": err[-1] if err and p.returncode else ""}


def opgraph_steps(trace: str, out: str) -> dict[str, dict[str, float]]:
    exe = shutil.which("opgraph") or "opgraph"
    return {
        "load": run([exe, "build", trace, "-o", out]),
        "idle": run([exe, "idle", trace, "--json"]),
        "critical path, all steps": run([exe, "critical-path", trace, "--json", "--no-path"]),
    }


def hta_steps(trace: str, python: str, timeout: float) -> dict[str, dict[str, float]]:
    return {
        "load": run([python, "-c", HTA_SCRIPT, trace, "load"], timeout),
        "idle": run([python, "-c", HTA_SCRIPT, trace, "idle"], timeout),
        "critical path, all steps": run([python, "-c", HTA_SCRIPT, trace, "critical_path"], timeout),
    }


def cell(r: dict[str, float] | None) -> str:
    if r is None:
        return "–"
    if r["rc"]:
        return f"failed (exit {r['rc']}: {r['err'][:60]})"
    return f"{r['wall_s']:.1f} s, {r['rss_mib']:,.0f} MiB"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("traces", nargs="+")
    ap.add_argument("--hta-python", default=os.environ.get("OPGRAPH_HTA_PYTHON"),
                    help="python of a venv with holistictraceanalysis (default $OPGRAPH_HTA_PYTHON)")
    ap.add_argument("--timeout", type=float, default=1800, help="kill an HTA step after this many seconds")
    args = ap.parse_args(argv)
    print(f"<!-- {os.cpu_count()} CPUs; load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())} -->")
    print("| trace | step | opgraph | HTA 0.5 | HTA ÷ opgraph (time) |")
    print("|---|---|--:|--:|--:|")
    sys.stdout.flush()
    tmp = tempfile.mkdtemp(prefix="opgraph-sbs-")
    for trace in args.traces:
        o = opgraph_steps(trace, str(Path(tmp) / "g.gpickle"))
        h = hta_steps(trace, args.hta_python, args.timeout) if args.hta_python else {}
        for step, r in o.items():
            hr = h.get(step)
            ratio = (f"{hr['wall_s'] / r['wall_s']:.1f}×" if hr and not hr["rc"] and not r["rc"] and r["wall_s"]
                     else "–")
            print(f"| {os.path.basename(trace)} | {step} | {cell(r)} | {cell(hr)} | {ratio} |")
            sys.stdout.flush()
    print(f"<!-- load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())} -->")
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
