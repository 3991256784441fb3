"""opgraph beside AMD TraceLens on the same traces (docs/peers/tracelens.md).

TraceLens is not a dependency and is not on the package index reachable here (the PyPI
name ``tracelens`` is an unrelated project). It runs from a source checkout in its own venv:
``OPGRAPH_TRACELENS_PYTHON`` (its interpreter) and ``OPGRAPH_TRACELENS_PATH`` (the folder
holding the ``TraceLens`` package, put on its ``PYTHONPATH``). The figures in
docs/peers/tracelens.md come from AMD-AGI/TraceLens at commit c9b057d9df3a.

    python benchmarks/peers/tracelens_compare.py [TRACE ...]

For each trace it runs TraceLens's own ``generate_perf_report_pytorch`` (CSV output), then
opgraph's ``overlap``, ``shapes`` and ``categories``, and prints the figures side by side:
the GPU timeline, the GEMM / SDPA per-shape rows, and the per-category kernel time.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd

TRACES = Path(__file__).resolve().parents[2].parent / "shared" / "traces" / "A_kineto"
DEFAULT = ["tracelens_h100_bert_small.json.gz", "tracelens_mi300_qwen1.5_0.5b.json.gz",
           "param_dlrm_8gpu_rank0.pt.trace.json.gz"]


def tracelens_env() -> tuple[str, str] | None:
    """(python, path) of the TraceLens checkout, or None when not configured."""
    py, path = os.environ.get("OPGRAPH_TRACELENS_PYTHON"), os.environ.get("OPGRAPH_TRACELENS_PATH")
    if py and path and Path(py).exists() and (Path(path) / "TraceLens").is_dir():
        return py, path
    return None


def run_tracelens(trace: Path, out: Path) -> dict[str, pd.DataFrame]:
    """TraceLens's CSV report of ``trace`` in ``out``, read back (file stem -> table)."""
    env_ = tracelens_env()
    if env_ is None:
        raise RuntimeError("set OPGRAPH_TRACELENS_PYTHON and OPGRAPH_TRACELENS_PATH")
    py, path = env_
    out.mkdir(parents=True, exist_ok=True)
    subprocess.run([py, "-m", "TraceLens.Reporting.generate_perf_report_pytorch", "--profile_json_path", str(trace),
                    "--output_csvs_dir", str(out)], check=True, capture_output=True,
                   env=dict(os.environ, PYTHONPATH=path), timeout=900)
    tables = {}
    for p in sorted(out.glob("*.csv")):
        try:
            tables[p.stem] = pd.read_csv(p)
        except pd.errors.EmptyDataError:  # TraceLens writes an empty file for an empty table
            tables[p.stem] = pd.DataFrame()
    return tables


def timeline(tl: dict[str, pd.DataFrame], G) -> pd.DataFrame:
    """TraceLens's ``gpu_timeline`` beside opgraph's ``overlap`` over the whole trace (µs)."""
    import opgraph

    t = tl["gpu_timeline"].set_index("type")["time ms"] * 1e3
    rows = opgraph.comm_overlap(G, "all").to_frame()
    o = rows[rows["window"] == "all"].sum(numeric_only=True)
    pairs = [("total_time", "span_us"), ("computation_time", "compute_us"), ("exposed_comm_time", "exposed_comm_us"),
             ("exposed_memcpy_time", "exposed_memory_us"), ("busy_time", "busy_us"), ("idle_time", "idle_us"),
             ("total_comm_time", "comm_us"), ("total_memcpy_time", "memory_us")]
    return pd.DataFrame([{"figure": a, "tracelens_us": float(t.get(a, float("nan"))), "opgraph_us": float(o[b])}
                         for a, b in pairs])


def gemm_rows(tl: dict[str, pd.DataFrame], G) -> pd.DataFrame:
    """TraceLens's ``GEMM`` rows beside opgraph's ``shapes`` GEMM rows, joined on op, M, N, K."""
    import opgraph

    ours = opgraph.shapes(G).tables()["gemm"]
    if "GEMM" not in tl or not len(ours):
        return pd.DataFrame()
    t = tl["GEMM"].rename(columns={"param: M": "M", "param: N": "N", "param: K": "K"})
    t = t[["name", "M", "N", "K", "name_count", "Kernel Time (µs)_sum", "GFLOPS_first", "TFLOPS/s_mean"]]
    o = ours[["name", "M", "N", "K", "count", "total_us", "flops_per_call", "achieved_tflops"]].copy()
    o["GFLOPS"] = o["flops_per_call"] / 1e9
    for c in ("M", "N", "K"):
        t[c] = t[c].astype("int64")
        o[c] = o[c].astype("int64")
    return t.merge(o, on=["name", "M", "N", "K"], how="outer", suffixes=("_tl", "_og"))


def categories(tl: dict[str, pd.DataFrame], G) -> pd.DataFrame:
    """TraceLens's ``ops_summary_by_category`` beside opgraph's ``categories`` (µs)."""
    import opgraph

    t = tl["ops_summary_by_category"][["op category", "total_direct_kernel_time_ms"]].copy()
    t["tracelens_us"] = t.pop("total_direct_kernel_time_ms") * 1e3
    o = opgraph.gpu_categories(G).tables()["by_category"][["category", "gpu_us"]].rename(
        columns={"gpu_us": "opgraph_us"})
    return pd.concat([t.rename(columns={"op category": "category"}).assign(tool="TraceLens"),
                      o.assign(tool="opgraph")], ignore_index=True)


def main(argv: list[str]) -> int:
    import opgraph

    names = argv or DEFAULT
    pd.set_option("display.width", 200)
    with tempfile.TemporaryDirectory() as d:
        for name in names:
            trace = TRACES / name
            G = opgraph.load(trace)
            tl = run_tracelens(trace, Path(d) / name)
            print(f"== {name}\n-- GPU timeline (µs)\n{timeline(tl, G).to_string(index=False)}")
            g = gemm_rows(tl, G)
            if len(g):
                print(f"-- GEMM shapes\n{g.to_string(index=False)}")
            print(f"-- kernel time by category (µs)\n{categories(tl, G).to_string(index=False)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
