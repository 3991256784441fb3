#!/usr/bin/env python3
"""FLOP coverage of every trace in a folder: the share of GPU kernel time owned by an op
with a cost model (docs/roofline.md). Prints a markdown table.

    python benchmarks/flop_coverage.py [DIR]     # default ../shared/traces/A_kineto

Columns:
- **device**: the device-table entry of the kernels' device (``?`` = not recognised);
- **kernels** / **kernel ms**: kernel count and total kernel time;
- **shapes**: % of ``cpu_op`` events that record ``Input Dims`` (no shapes = no model);
- **coverage**: % of kernel time whose owning op has a model (the headline figure);
- **of launched**: the same over the kernels whose launching op is in the trace (kernels
  launched before the profiler window started have no op to cost);
- **with FLOPs**: % of kernel time in kernels that received FLOPs > 0 (copies, fills and
  gathers have a model but 0 FLOPs; helper kernels of a GEMM get none);
- **largest gap**: the launching op with the most unmodelled kernel time, and that time.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = ROOT.parent / "shared" / "traces" / "A_kineto"


def _pct(v: float | None) -> str:
    return "–" if v is None else f"{v:.1f}"


def row(path: Path) -> str:
    import numpy as np

    from opgraph.analysis.roofline import TraceColumns, no_model_table, roofline, summarize
    from opgraph.graph.io import load_any

    G = load_any(path)
    cols = TraceColumns.from_trace_graph(G)
    res = roofline(cols)
    s = summarize(res)
    cpu = np.flatnonzero(cols.kind == "cpu_op")
    with_dims = sum(1 for a in cols.args[cpu].tolist() if a and ("Input Dims" in a or "Input dims" in a))
    shapes = 100.0 * with_dims / len(cpu) if len(cpu) else None
    used = sorted({d.table.name if d.table else "?" for d in res.devices.values()}) or ["–"]
    nm = no_model_table(res)
    gap = f"{nm['name'].iloc[0]} ({nm['time_us'].iloc[0] / 1e3:.2f} ms)" if len(nm) else ""
    name = path.name.replace(".json.gz", "").replace(".pt.trace", "").replace(".json", "")
    return (f"| {name} | {', '.join(used)} | {s['kernels']:,} | {s['kernel_time_us'] / 1e3:,.2f} | {_pct(shapes)} "
            f"| {_pct(s['coverage_time_pct'])} | {_pct(s['coverage_launched_time_pct'])} "
            f"| {_pct(s['flop_kernel_time_pct'])} | {gap.replace('|', '/')} |")


def main(argv: list[str]) -> int:
    folder = Path(argv[1]) if len(argv) > 1 else DEFAULT
    files = sorted(p for p in folder.iterdir() if p.is_file())
    print("| trace | device | kernels | kernel ms | shapes % | coverage % | of launched % | with FLOPs % | largest gap |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---|")
    for p in files:
        print(row(p), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
