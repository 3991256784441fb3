"""``opgraph nvtx``: per NVTX range name, count, CPU time and GPU projection (like nsys's
``nvtx_gpu_proj_sum``); ``opgraph enqueue-stats``: per-kernel OpenCL enqueue stages.

NVTX attribution follows Nsight Systems: a device activity belongs to a range when the
runtime call that launched it lies inside the range on the range's thread
(``range.start <= call.start`` and ``call.end <= range.end``), never by GPU time. The GPU
projection of one range instance is [first activity start, last activity end] of the
activities attributed to it (kernels, copies and memsets); a name's projection is the sum
over its instances. Ranges are the ``annotation`` nodes of the graph (NVTX ranges for the
nsys formats, ``record_function`` labels for Kineto).

Iterations: the steps of the one window selector
(:func:`opgraph.graph.windows.select_windows`: ``ProfilerStep#N``, else NVTX ``Iteration
N``; or the ranges matching ``--step-regex``) that are annotation ranges are also listed one
by one, with the kernel time attributed to each (Σ kernel durations). A ``--step-regex``
that matches nothing exits 2.
"""

from __future__ import annotations

from typing import Any

import click
import networkx as nx
import numpy as np
import pandas as pd

from opgraph.emit import emit_json
from opgraph.export.console import make_console
from opgraph.commands.base import load_input, rank_option
from opgraph.table_options import TableFiles, table_file_options, write_frames
from opgraph.ingest.steps import NVTX_ITERATION_PATTERN, STEP_PATTERN

_ACT = ("kernel", "memcpy", "memset")


def _frames(G: nx.DiGraph) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(annotation ranges, launched device activities with their launching call)."""
    nodes = G._node
    rows = [(n, d["kind"], d["name"], d["ts"], d["ts"] + d["dur"], d.get("pid"), d.get("tid"))
            for n, d in nodes.items() if d["kind"] in ("annotation", "runtime") or d["kind"] in _ACT]
    df = pd.DataFrame(rows, columns=["eid", "kind", "name", "ts", "end", "pid", "tid"])
    lane, _ = pd.factorize(pd.Series(list(zip(df["pid"].tolist(), df["tid"].tolist())), dtype=object))
    df["lane"] = lane
    ranges = df[df["kind"] == "annotation"].reset_index(drop=True)
    calls = df[df["kind"] == "runtime"].set_index("eid")
    acts = df[df["kind"].isin(_ACT)].set_index("eid")
    pairs = [(u, v) for u, v, d in G.edges(data=True) if d.get("kind") == "launch" and v in acts.index]
    lk = pd.DataFrame(pairs, columns=["call", "act"])
    if len(lk):
        lk = lk.join(calls[["ts", "end", "lane"]], on="call").join(
            acts[["ts", "end", "kind"]].rename(columns={"ts": "a_ts", "end": "a_end"}), on="act")
    else:
        lk = pd.DataFrame(columns=["call", "act", "ts", "end", "lane", "a_ts", "a_end", "kind"])
    return ranges, lk


def nvtx_ranges(G: nx.DiGraph) -> pd.DataFrame:
    """One row per range instance: ``eid``, ``name``, ``ts``/``end``/``cpu_ns``,
    ``activities``, ``kernels``, ``kernel_ns`` (Σ kernel durations), ``gpu_start``/``gpu_end``
    (-1 when nothing was launched inside) and ``gpu_proj_ns``."""
    ranges, lk = _frames(G)
    out = ranges[["eid", "name", "ts", "end"]].copy()
    out["cpu_ns"] = out["end"] - out["ts"]
    n = len(out)
    acts = np.zeros(n, dtype=np.int64)
    kern = np.zeros(n, dtype=np.int64)
    kern_ns = np.zeros(n, dtype=np.int64)
    g0 = np.full(n, -1, dtype=np.int64)
    g1 = np.full(n, -1, dtype=np.int64)
    if len(lk) and n:
        lk = lk.sort_values(["lane", "ts"])
        c_lane = lk["lane"].to_numpy(np.int64)
        c_ts = lk["ts"].to_numpy(np.int64)
        c_end = lk["end"].to_numpy(np.int64)
        a_ts = lk["a_ts"].to_numpy(np.int64)
        a_end = lk["a_end"].to_numpy(np.int64)
        is_k = (lk["kind"] == "kernel").to_numpy()
        r_lane = ranges["lane"].to_numpy(np.int64)
        r_ts = ranges["ts"].to_numpy(np.int64)
        r_end = ranges["end"].to_numpy(np.int64)
        lanes, first = np.unique(c_lane, return_index=True)
        bounds = dict(zip(lanes.tolist(), zip(first.tolist(), np.append(first[1:], len(c_lane)).tolist())))
        for i in range(n):
            b = bounds.get(int(r_lane[i]))
            if b is None:
                continue
            l0, l1 = b
            lo = l0 + int(np.searchsorted(c_ts[l0:l1], r_ts[i], side="left"))
            hi = l0 + int(np.searchsorted(c_ts[l0:l1], r_end[i], side="right"))
            if hi <= lo:
                continue
            sl = slice(lo, hi)
            inside = c_end[sl] <= r_end[i]
            if not inside.any():
                continue
            acts[i] = int(inside.sum())
            g0[i] = int(a_ts[sl][inside].min())
            g1[i] = int(a_end[sl][inside].max())
            k = inside & is_k[sl]
            kern[i] = int(k.sum())
            kern_ns[i] = int((a_end[sl][k] - a_ts[sl][k]).sum())
    out["activities"], out["kernels"], out["kernel_ns"] = acts, kern, kern_ns
    out["gpu_start"], out["gpu_end"] = g0, g1
    out["gpu_proj_ns"] = np.where(g0 >= 0, g1 - g0, 0)
    return out.sort_values(["ts", "eid"]).reset_index(drop=True)


def nvtx_summary(G: nx.DiGraph, step_regex: str | None = None) -> dict[str, Any]:
    """The ``opgraph nvtx`` document (times in µs; ``schemas/nvtx.schema.json``)."""
    inst = nvtx_ranges(G)
    rows = []
    if len(inst):
        for name, g in inst.groupby("name", sort=False):
            proj = g.loc[g["gpu_start"] >= 0, "gpu_proj_ns"]
            rows.append({
                "name": str(name), "count": int(len(g)),
                "cpu_total_us": float(g["cpu_ns"].sum()) / 1e3, "cpu_avg_us": float(g["cpu_ns"].mean()) / 1e3,
                "gpu_proj_total_us": float(proj.sum()) / 1e3,
                "gpu_proj_avg_us": float(proj.mean()) / 1e3 if len(proj) else 0.0,
                "gpu_proj_min_us": float(proj.min()) / 1e3 if len(proj) else 0.0,
                "gpu_proj_max_us": float(proj.max()) / 1e3 if len(proj) else 0.0,
                "instances_with_gpu": int(len(proj)), "activities": int(g["activities"].sum()),
                "kernels": int(g["kernels"].sum()), "kernel_total_us": float(g["kernel_ns"].sum()) / 1e3,
            })
        rows.sort(key=lambda r: (-r["gpu_proj_total_us"], -r["cpu_total_us"], r["name"]))
    from opgraph.graph.windows import select_windows

    wins = select_windows(G, step_regex=step_regex, lanes=False)  # WindowNotFound: the caller's
    pattern = step_regex or (STEP_PATTERN if wins.source in ("profiler_step", "gpu_annotation")
                             else NVTX_ITERATION_PATTERN)
    its = []
    if len(inst) and wins.is_steps:
        by_eid = inst.set_index("eid")
        ann = [w for w in wins if w.eid is not None and w.eid in by_eid.index]
        for pos, w in enumerate(ann):
            r = by_eid.loc[w.eid]
            its.append({"index": pos, "step": int(w.step), "name": str(w.name),
                        "start_us": int(r["ts"]) / 1e3, "cpu_us": int(r["cpu_ns"]) / 1e3,
                        "gpu_start_us": int(r["gpu_start"]) / 1e3 if r["gpu_start"] >= 0 else None,
                        "gpu_proj_us": int(r["gpu_proj_ns"]) / 1e3, "kernels": int(r["kernels"]),
                        "kernel_us": int(r["kernel_ns"]) / 1e3})
    return {"source": G.graph.get("source", {}), "ranges": rows, "instances": int(len(inst)),
            "step_regex": pattern, "iterations": its}


@click.command("nvtx")
@rank_option
@click.argument("input", type=click.Path(dir_okay=False))
@click.option("--step-regex", default=None, metavar="REGEX",
              help="Ranges listed as iterations (default: the steps, ProfilerStep#N else NVTX 'Iteration N'); "
                   "one that matches nothing exits 2.")
@click.option("--top", default=30, show_default=True, help="Range names shown.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (schemas/nvtx.schema.json).")
@click.option("--format", "fmt", default=None, help="Force the input format of a raw trace.")
@table_file_options
def nvtx_cmd(input: str, step_regex: str | None, top: int, as_json: bool, fmt: str | None,
             csv_dir: TableFiles | None, rank: int | None = None) -> None:
    """Per NVTX range name: count, CPU time and GPU projection (nvtx_gpu_proj_sum).

    A kernel belongs to a range when its launching API call lies inside the range on the
    same thread (never by GPU time)."""
    from opgraph.commands.iterations import check_regex
    from opgraph.commands.window_option import window_errors

    check_regex(step_regex)
    G = load_input(input, fmt, rank=rank)
    with window_errors(input, "--step-regex"):
        doc = nvtx_summary(G, step_regex)
    if csv_dir is not None:
        write_frames({"nvtx_ranges": pd.DataFrame(doc["ranges"]), "nvtx_iterations": pd.DataFrame(doc["iterations"])},
                     csv_dir, input)
    if as_json:
        emit_json(doc, "nvtx.schema.json")
        return
    if csv_dir is not None:
        return
    from rich.table import Table

    con = make_console()
    if not doc["ranges"]:
        con.print("no annotation (NVTX) ranges in this trace")
        return
    t = Table(title=f"NVTX ranges ({doc['instances']} instances)", title_justify="left")
    for c in ("range", "count", "CPU µs", "GPU proj µs", "kernels", "kernel µs"):
        if c == "range":
            t.add_column(c, no_wrap=True, min_width=12, max_width=32, overflow="ellipsis")
        else:
            t.add_column(c, justify="right")
    for r in doc["ranges"][:top]:
        t.add_row(r["name"], f"{r['count']:,}", f"{r['cpu_total_us']:,.1f}",
                  f"{r['gpu_proj_total_us']:,.1f}", f"{r['kernels']:,}", f"{r['kernel_total_us']:,.1f}")
    con.print(t)
    if doc["iterations"]:
        t = Table(title=f"Iterations ({doc['step_regex']})", title_justify="left")
        for c in ("step", "name", "CPU µs", "GPU proj µs", "kernels", "kernel µs"):
            t.add_column(c, justify="left" if c == "name" else "right")
        for r in doc["iterations"]:
            t.add_row(str(r["step"]), r["name"], f"{r['cpu_us']:,.1f}", f"{r['gpu_proj_us']:,.1f}",
                      f"{r['kernels']:,}", f"{r['kernel_us']:,.1f}")
        con.print(t)


@click.command("enqueue-stats")
@rank_option
@click.argument("input", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (schemas/enqueue-stats.schema.json).")
@click.option("--format", "fmt", default=None, help="Force the input format of a raw trace.")
@table_file_options
def enqueue_stats_cmd(input: str, as_json: bool, fmt: str | None, csv_dir: TableFiles | None, rank: int | None = None) -> None:
    """OpenCL (dv/dt) per-kernel enqueue stages: queued→submit, submit→start, execution
    and host overhead, per enqueue and per kernel name."""
    from opgraph.ingest.dvdt import enqueue_stats

    G = load_input(input, fmt, rank=rank)
    per, cum = enqueue_stats(G)
    doc = {"source": G.graph.get("source", {}),
           "kernels": [{k: (None if isinstance(v, float) and np.isnan(v) else v) for k, v in r.items()}
                       for r in cum.to_dict("records")],
           "enqueues": per.to_dict("records")}
    if csv_dir is not None:
        write_frames({"enqueue_kernels": cum, "enqueues": per}, csv_dir, input)
    if as_json:
        emit_json(doc, "enqueue-stats.schema.json")
        return
    if csv_dir is not None:
        return
    from rich.table import Table

    con = make_console()
    if not len(cum):
        con.print("no OpenCL kernel enqueues with device profiling in this trace")
        return
    t = Table(title="OpenCL kernels (device profiling)", title_justify="left")
    for c in ("kernel", "enqueues", "exec µs", "% exec", "queued→submit µs", "submit→start µs", "exec avg µs",
              "overhead µs"):
        if c == "kernel":
            t.add_column(c, no_wrap=True, min_width=12, max_width=28, overflow="ellipsis")
        else:
            t.add_column(c, justify="right")
    for r in doc["kernels"]:
        t.add_row(str(r["name"]), f"{r['enqueues']:,}", f"{r['exec_total_us']:,.1f}",
                  f"{r['exec_pct']:.1f}", f"{r['queue_avg_us']:,.1f}", f"{r['submit_avg_us']:,.1f}",
                  f"{r['exec_avg_us']:,.1f}",
                  "-" if r["host_overhead_avg_us"] is None else f"{r['host_overhead_avg_us']:,.1f}")
    con.print(t)
