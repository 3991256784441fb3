"""Print opgraph's critical-path and idle numbers for the traces in docs/peers/hta, as
markdown, next to HTA's (read from docs/peers/hta/<trace>.json).

    python benchmarks/peers/compare_hta.py > /tmp/compare.md
"""

from __future__ import annotations

import re
from pathlib import Path

from opgraph.analysis.critical_path.path import critical_path
from opgraph.analysis.idle import idle_time
from opgraph.graph.io import load_any

TRACES = Path(__file__).resolve().parents[2].parent / "shared" / "traces" / "A_kineto"
CASES = [
    ("alexnet", "hta_critical_path_alexnet.json.gz", re.escape("[param|pytorch.model.alex_net|0|0|0|measure|forward]")),
    ("multi-stream", "hta_cuda_event_sync_multi_stream.json.gz", "all"),
    ("dlrm", "param_dlrm_8gpu_rank0.pt.trace.json.gz", None),
    ("ns", "hta_ns_resolution_rank0.pt.trace.json.gz", None),
]


def main() -> None:
    print("| trace | window | span µs | CP length µs | cpu | gpu_compute | gpu_comm | gpu_memory | launch_overhead | kernel_gap | sync_wait | other |")
    print("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
    idle_rows = []
    for label, fname, window in CASES:
        G = load_any(TRACES / fname)
        res = critical_path(G, window=window)
        for w in res.windows:
            b = {k: v / 1000 for k, v in w.breakdown_ns.items()}
            print(f"| {label} | {w.name[:40]} | {w.span_ns / 1000:,.0f} | {w.length_ns / 1000:,.0f} | "
                  + " | ".join(f"{b[c]:,.0f}" for c in ("cpu", "gpu_compute", "gpu_comm", "gpu_memory",
                                                       "launch_overhead", "kernel_gap", "sync_wait", "other")) + " |")
        idle = idle_time(G)
        for s in idle.streams:
            idle_rows.append((label, s))
        for d in idle.devices:
            idle_rows.append((label, d))
    print()
    print("| trace | device/stream | span µs | busy µs | idle µs | host wait | kernel wait | other | CPU-induced (device) | launch latency |")
    print("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|")
    for label, x in idle_rows:
        if hasattr(x, "stream"):
            print(f"| {label} | stream {x.stream} | {x.span_ns/1e3:,.0f} | {x.busy_ns/1e3:,.0f} | {x.idle_ns/1e3:,.0f} | "
                  f"{x.host_wait_ns/1e3:,.0f} | {x.kernel_wait_ns/1e3:,.0f} | {x.other_ns/1e3:,.0f} | | |")
        else:
            print(f"| {label} | device {x.device} | {x.span_ns/1e3:,.0f} | {x.busy_ns/1e3:,.0f} | {x.idle_ns/1e3:,.0f} | | | | "
                  f"{x.cpu_induced_idle_ns/1e3:,.0f} | {x.launch_latency_ns/1e3:,.0f} |")


if __name__ == "__main__":
    main()
