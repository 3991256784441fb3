"""Per-kernel launch statistics from the profiler's kernel args: grid, block, registers,
shared memory, blocks per SM, estimated achieved occupancy, and tensor-core use by kernel
name (the TensorBoard profiler plugin's kernel view; ``opgraph kernels``,
docs/kernel-stats.md).

Per kernel name (one row, largest total time first):

* ``count``, ``total_us``, ``mean_us``, ``min_us``, ``max_us``, ``pct`` of all kernel time;
* ``grid`` / ``block``: the most frequent launch shape (as ``x×y×z``), ``shapes`` how many
  distinct (grid, block) pairs the kernel had;
* ``registers_per_thread`` and ``shared_memory_bytes``: the largest value recorded;
* ``blocks_per_sm`` and ``occupancy_pct``: means **weighted by duration** over the
  kernels that record them (CUPTI's ``blocks per SM`` and ``est. achieved occupancy %``,
  as the plugin weights them); None when no kernel of the name records them;
* ``tensor_cores``: the kernel name matches a tensor-core pattern: the plugin's allowlist
  (:data:`TB_PLUGIN_PATTERNS`, from PyProf) plus the names of later libraries
  (:data:`EXTRA_PATTERNS`: WMMA, Hopper/Blackwell ``wgmma``/``gmma``/``nvjet``, CUTLASS
  ``tensorop``, flash attention, AMD Tensile's matrix instructions ``MI16x16``...). This is
  a heuristic on names, as in the plugin: the profiler does not record instruction use.

The summary gives the share of kernel time on tensor cores (the plugin's "Kernels using
Tensor Cores"), with and without the extra patterns, and the duration-weighted mean
occupancy over all kernels that record it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from opgraph.model.trace_graph import TraceGraph
from opgraph.analysis.display import TableResult, json_records
from opgraph.analysis.kind_codes import K_KERNEL
from opgraph.analysis.graph_frame import frame_of

#: The TensorBoard profiler plugin's tensor-core kernel-name allowlist (substrings).
TB_PLUGIN_PATTERNS: tuple[str, ...] = (
    "h884", "s884", "h1688", "s1688", "hmma", "i8816", "16816", "dgrad_1x1_stride_2x2", "first_layer_wgrad_kernel",
    "conv1x1", "conv2d_c1_k1", "direct_group", "xmma_implicit_gemm", "xmma_sparse_conv",
    "xmma_warp_specialized_implicit_gemm", "xmma_gemm", "xmma_sparse_gemm", "c1688")
#: Tensor-core (matrix-core) kernel names the plugin's list predates (regular expressions).
EXTRA_PATTERNS: tuple[str, ...] = (
    r"wgmma", r"gmma", r"wmma", r"nvjet", r"tensorop", r"sm(80|86|89|90|100|120)_xmma", r"imma", r"bf16816",
    r"flash_?(fwd|bwd|attn)|fmha", r"MI(16|32)x(16|32)x", r"_mfma|mfma_")
#: Columns of the ``kernels`` table.
COLUMNS: tuple[str, ...] = ("name", "count", "total_us", "mean_us", "min_us", "max_us", "pct", "grid", "block",
                            "shapes", "registers_per_thread", "shared_memory_bytes", "blocks_per_sm",
                            "occupancy_pct", "tensor_cores", "tensor_cores_tb_plugin")
_KEYS = ("grid", "block", "registers per thread", "shared memory", "blocks per SM", "est. achieved occupancy %")


def _dims(v: Any) -> str | None:
    if isinstance(v, (list, tuple)) and v and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v):
        return "×".join(str(int(x)) for x in v)
    return None


def _num(s: pd.Series) -> np.ndarray:
    """A column of arg values as float, NaN where missing or not a (non-bool) number."""
    vals = s.to_numpy(dtype=object)
    ok = np.fromiter((isinstance(v, (int, float)) and not isinstance(v, bool) for v in vals), dtype=bool,
                     count=len(vals))
    out = np.full(len(vals), np.nan)
    if ok.any():
        out[ok] = vals[ok].astype(float)
    return out


def tensor_core_names(names: np.ndarray, extra: bool = True) -> np.ndarray:
    """Mask of kernel names matching a tensor-core pattern (module docstring); the patterns
    run once per distinct name."""
    if not len(names):
        return np.zeros(0, dtype=bool)
    codes, uniq = pd.factorize(pd.Series(names, dtype=object).fillna("").astype(str))
    rx = re.compile("|".join(EXTRA_PATTERNS)) if extra else None
    hit = np.array([any(p in u for p in TB_PLUGIN_PATTERNS) or bool(rx and rx.search(u)) for u in uniq], dtype=bool)
    return hit[codes]


@dataclass(repr=False)
class KernelStats(TableResult):
    """Result of :func:`kernel_stats`: ``launches`` (one row per kernel: ``eid``, ``name``,
    ``dur_ns`` and the parsed args) and the per-name ``kernels`` table (module docstring).

    Examples
    --------
    >>> import opgraph
    >>> k = opgraph.kernel_stats(opgraph.example_trace("gpu_bound"))
    >>> int(k.to_frame()["count"].sum()) == len(k.launches)
    True
    """

    launches: pd.DataFrame
    kernels: pd.DataFrame
    summary_: dict[str, Any] = field(default_factory=dict)
    main_table: ClassVar[str] = "kernels"
    display_tables: ClassVar[tuple[str, ...]] = ("summary", "kernels")

    def tables(self) -> dict[str, pd.DataFrame]:
        """``summary`` (one row) and ``kernels`` (µs, %, bytes)."""
        return {"summary": pd.DataFrame([self.summary_]), "kernels": self.kernels}

    def to_dict(self, top: int | None = None) -> dict[str, Any]:
        """JSON-ready (``schemas/kernel-stats.schema.json``; the ``top`` kernels by time)."""
        return {"summary": dict(self.summary_), "kernels": json_records(self.kernels, top)}


def kernel_stats(G: TraceGraph) -> KernelStats:
    """Per-kernel-name launch statistics of ``G`` (module docstring).

    Parameters
    ----------
    G : TraceGraph
        A trace graph; kernels are its ``kernel`` nodes, their args the event table's.

    Returns
    -------
    KernelStats
    """
    f = frame_of(G)
    pos = np.flatnonzero(f.kind == K_KERNEL)
    ev = G.graph.get("events")
    if ev is not None and len(pos):
        args = ev["args"].to_numpy(dtype=object)[f.node[pos]]
    else:
        args = np.full(len(pos), None, dtype=object)
    a = pd.DataFrame.from_records([x if isinstance(x, dict) else {} for x in args.tolist()], columns=list(_KEYS))
    dur = f.dur[pos].astype(np.int64)
    names = f.name[pos]
    lz = pd.DataFrame({
        "eid": f.node[pos], "name": names, "dur_ns": dur,
        "grid": [_dims(v) for v in a["grid"].tolist()], "block": [_dims(v) for v in a["block"].tolist()],
        "registers_per_thread": _num(a["registers per thread"]), "shared_memory_bytes": _num(a["shared memory"]),
        "blocks_per_sm": _num(a["blocks per SM"]), "occupancy_pct": _num(a["est. achieved occupancy %"]),
        "tensor_cores": tensor_core_names(names), "tensor_cores_tb_plugin": tensor_core_names(names, extra=False)})
    total = int(dur.sum())
    if not len(lz):
        kern = pd.DataFrame({c: [] for c in COLUMNS})
    else:
        w = lz["dur_ns"].to_numpy(float)
        for c in ("blocks_per_sm", "occupancy_pct"):
            v = lz[c].to_numpy(float)
            has = ~np.isnan(v)
            lz[c + "_w"] = np.where(has, v * w, 0.0)
            lz[c + "_d"] = np.where(has, w, 0.0)
        lz["shape"] = lz["grid"].fillna("-") + " / " + lz["block"].fillna("-")
        g = lz.groupby("name", sort=False)
        kern = g.agg(count=("eid", "size"), total_ns=("dur_ns", "sum"), min_ns=("dur_ns", "min"),
                     max_ns=("dur_ns", "max"), shapes=("shape", "nunique"),
                     registers_per_thread=("registers_per_thread", "max"),
                     shared_memory_bytes=("shared_memory_bytes", "max"), bw=("blocks_per_sm_w", "sum"),
                     bd=("blocks_per_sm_d", "sum"), ow=("occupancy_pct_w", "sum"), od=("occupancy_pct_d", "sum"),
                     tensor_cores=("tensor_cores", "first"),
                     tensor_cores_tb_plugin=("tensor_cores_tb_plugin", "first")).reset_index()
        mode = (lz.groupby(["name", "grid", "block"], sort=False, dropna=False).size().reset_index(name="n")
                .sort_values(["name", "n"], ascending=[True, False], kind="stable").drop_duplicates("name"))
        kern = kern.merge(mode[["name", "grid", "block"]], on="name", how="left")
        kern["mean_us"] = kern["total_ns"] / kern["count"] / 1e3
        kern["total_us"] = kern["total_ns"] / 1e3
        kern["min_us"] = kern["min_ns"] / 1e3
        kern["max_us"] = kern["max_ns"] / 1e3
        kern["pct"] = 100.0 * kern["total_ns"] / total if total else 0.0
        kern["blocks_per_sm"] = np.where(kern["bd"] > 0, kern["bw"] / kern["bd"].where(kern["bd"] > 0, 1), np.nan)
        kern["occupancy_pct"] = np.where(kern["od"] > 0, kern["ow"] / kern["od"].where(kern["od"] > 0, 1), np.nan)
        kern = kern.sort_values(["total_ns", "name"], ascending=[False, True], kind="stable").reset_index(drop=True)
        kern = kern[list(COLUMNS)]
        for c in ("registers_per_thread", "shared_memory_bytes", "blocks_per_sm", "occupancy_pct"):
            kern[c] = kern[c].astype(object).where(kern[c].notna(), None)
    tc = lz["tensor_cores"].to_numpy(bool) if len(lz) else np.zeros(0, bool)
    tb = lz["tensor_cores_tb_plugin"].to_numpy(bool) if len(lz) else np.zeros(0, bool)
    occ = lz["occupancy_pct"].to_numpy(float) if len(lz) else np.zeros(0)
    has = ~np.isnan(occ)
    summary = {
        "kernels": int(len(lz)), "names": int(len(kern)), "kernel_time_us": total / 1e3,
        "tensor_core_time_pct": 100.0 * float(dur[tc].sum()) / total if total else 0.0,
        "tensor_core_time_pct_tb_plugin": 100.0 * float(dur[tb].sum()) / total if total else 0.0,
        "occupancy_pct": float((occ[has] * dur[has]).sum() / dur[has].sum()) if has.any() and dur[has].sum() else None,
        "with_occupancy": int(has.sum()),
    }
    return KernelStats(lz[["eid", "name", "dur_ns", "grid", "block", "registers_per_thread", "shared_memory_bytes",
                           "blocks_per_sm", "occupancy_pct", "tensor_cores", "tensor_cores_tb_plugin"]] if len(lz)
                       else lz, kern, summary)
