"""The per-trace critical-path table of docs/critical-path.md ("Every real trace").

For every real Kineto trace with device activities in ../shared/traces/A_kineto: opgraph's
critical path over the default windows (summary: union of the windows, breakdown in % of
the path, the share resting on inferred dependencies, the longest wait) beside HTA 0.5.0's
answer from docs/peers/hta/critical_path_all.json (path length over the window span and
its breakdown by ``bound_by``, or HTA's failure). Prints Markdown.

With ``--idle``: the idle table of docs/idle.md instead: per trace, the device idle split
by cause (opgraph, summed over devices) beside HTA's idle breakdown summed over streams
(host wait / kernel wait / other).

Usage: ``python benchmarks/cp_table.py [--idle] [TRACE ...] > table.md``.
"""

from __future__ import annotations

import glob
import json
import os
import sys

from opgraph.analysis.critical_path.boundary_edges import CATEGORIES
from opgraph.analysis.critical_path.path import critical_path
from opgraph.graph.io import load_any

HERE = os.path.dirname(os.path.abspath(__file__))
TRACES = os.path.join(HERE, "..", "..", "shared", "traces", "A_kineto")
HTA = os.path.join(HERE, "..", "docs", "peers", "hta", "critical_path_all.json")
SHORT = {"cpu": "cpu", "data_loading": "data", "gpu_compute": "gpu", "gpu_comm": "comm", "gpu_memory": "mem", "launch_overhead": "launch",
         "kernel_gap": "kgap", "device_wait": "dwait", "sync_wait": "sync", "thread_wait": "twait",
         "untraced": "untraced", "other": "other"}
HTA_SHORT = {"cpu_bound": "cpu", "gpu_compute_bound": "gpu", "gpu_kernel_kernel_overhead": "kk",
             "gpu_kernel_launch_overhead": "launch"}


def _stem(path: str) -> str:
    b = os.path.basename(path)
    for ext in (".pt.trace.json.gz", ".json.gz", ".json"):
        if b.endswith(ext):
            return b[: -len(ext)]
    return b


def _hta_cell(h: dict | None) -> str:
    if not h:
        return "not run"
    ok = [w for w in h.get("windows", []) if w.get("success")]
    if not ok:
        err = (h.get("error") or "failed").split(":")[-1].strip()[:60]
        return f"fails ({err})"
    length = sum(w["length_us"] for w in ok)
    span = sum(w["window_span_us"] for w in ok)
    tot: dict[str, float] = {}
    for w in ok:
        for k, v in (w.get("breakdown_us") or {}).items():
            if k in HTA_SHORT:
                tot[HTA_SHORT[k]] = tot.get(HTA_SHORT[k], 0) + v
    s = sum(tot.values()) or 1
    parts = " ".join(f"{k} {100 * v / s:.0f}" for k, v in sorted(tot.items(), key=lambda kv: -kv[1]) if v / s >= 0.005)
    note = f" ({len(ok)}/{len(h['windows'])} windows)" if len(ok) < len(h["windows"]) else ""
    return f"{length:,.0f} of {span:,.0f} µs ({100 * length / span:.0f} %): {parts}{note}"


def row(path: str, hta: dict) -> str | None:
    G = load_any(path)
    if not G.graph["events"]["kind"].astype(object).isin(["kernel", "memcpy", "memset"]).any():
        return None
    res = critical_path(G)
    s = res.summary()
    b = " ".join(f"{SHORT[c]} {s['breakdown_pct'][c]:.1f}" for c in CATEGORIES if s["breakdown_pct"][c] >= 0.05)
    lw = s["longest_wait"]
    lw_s = f"{lw['bound_by']} {lw['dur_us']:,.0f} µs on {lw['lane']}" if lw else "-"
    ov = f", overlap {s['overlap_us']:,.0f}" if s["overlap_us"] else ""
    return (f"| `{_stem(path)}` | {s['windows']} ({res.window_mode}) | {s['span_us']:,.0f}{ov} | {b} | "
            f"{s['inferred_pct']:.1f} | {lw_s} | {_hta_cell(hta.get(_stem(path)))} |")


def idle_row(path: str, hta: dict) -> str | None:
    from opgraph.analysis.idle import CAUSES, idle_time

    G = load_any(path)
    if not G.graph["events"]["kind"].astype(object).isin(["kernel", "memcpy", "memset"]).any():
        return None
    res = idle_time(G)
    idle = sum(d.idle_ns for d in res.devices)
    tot = {c: sum(d.causes_ns.get(c, 0) for d in res.devices) for c in CAUSES}
    cells = " | ".join(f"{tot[c] / 1e3:,.0f}" for c in CAUSES)
    by: dict[str, int] = {}
    for d in res.devices:
        for k, v in d.device_wait_by_ns.items():
            by[k] = by.get(k, 0) + v
    held = ", ".join(f"{k} {v / 1e3:,.0f}" for k, v in sorted(by.items(), key=lambda kv: -kv[1])[:2]) or "-"
    h = (hta.get(_stem(path)) or {}).get("idle") or {}
    ht = h.get("total")
    hcell = (f"{ht['host_wait_us']:,.0f} / {ht['kernel_wait_us']:,.0f} / {ht['other_us']:,.0f}" if ht
             else ("fails" if h.get("error") else "not run"))
    streams = res.streams
    ocell = (f"{sum(s.host_wait_ns for s in streams) / 1e3:,.0f} / {sum(s.kernel_wait_ns for s in streams) / 1e3:,.0f}"
             f" / {sum(s.other_ns for s in streams) / 1e3:,.0f}")
    return f"| `{_stem(path)}` | {idle / 1e3:,.0f} | {cells} | {held} | {ocell} | {hcell} |"


def main(argv: list[str]) -> int:
    idle_mode = "--idle" in argv
    argv = [a for a in argv if a != "--idle"]
    files = argv or sorted(glob.glob(os.path.join(TRACES, "*")))
    hta = json.load(open(HTA)) if os.path.exists(HTA) else {}
    if idle_mode:
        print("| trace | device idle µs | cpu_induced | sync_drain | launch_latency | kernel_gap | device_wait | untraced "
              "| device waits held by (µs) | opgraph host / kernel / other wait µs (streams summed) "
              "| HTA 0.5.0 host / kernel / other wait µs (streams summed) |")
        print("|---|--:|--:|--:|--:|--:|--:|--:|---|---|---|")
        for f in files:
            r = idle_row(f, hta)
            if r:
                print(r, flush=True)
        return 0
    print("| trace | windows | µs (union) | opgraph breakdown, % of the path | inferred % | longest wait "
          "| HTA 0.5.0: path length of window span, breakdown % |")
    print("|---|---|--:|---|--:|---|---|")
    for f in files:
        r = row(f, hta)
        if r:
            print(r, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
