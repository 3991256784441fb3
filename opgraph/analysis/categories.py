"""GPU time by kernel type and by operation category (HTA's kernel-type breakdown,
TraceLens's ``ops_summary_by_category``).

Every device activity gets (docs/categories.md):

* a **type**: ``memory`` (memcpy, memset), ``communication`` (NCCL / RCCL kernels,
  :data:`opgraph.graph.linking.COMM_KERNEL_PATTERN`) or ``computation`` (other kernels);
* a **category**: from the roofline family of the op that launched it when the op has a
  model (``gemm`` → GEMM, ``conv``, ``attention``, ``norm``, ``softmax``/``reduction`` →
  reduction, ``elementwise``, ``embedding``, ``copy``, ``collective`` → communication),
  else from the kernel's name (:data:`NAME_RULES`, first match), else ``other``;
  memcpy / memset activities are ``memcpy/memset``. ``source`` says which rule decided.

Totals are sums of durations (not unions: two streams busy at once count twice), so the
shares sum to 100 % of the GPU time of the activities.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from opgraph.model.trace_graph import TraceGraph
from opgraph.graph.linking import COMM_KERNEL_PATTERN
from opgraph.analysis.display import TableResult, json_records

#: Roofline family -> category.
FAMILY_CATEGORY: dict[str, str] = {
    "gemm": "GEMM", "conv": "conv", "attention": "attention", "norm": "norm", "softmax": "reduction",
    "reduction": "reduction", "elementwise": "elementwise", "embedding": "embedding", "copy": "copy",
    "collective": "communication",
}
#: Kernel-name rules for kernels whose op has no model: (category, regex), first match wins.
NAME_RULES: tuple[tuple[str, str], ...] = (
    ("communication", COMM_KERNEL_PATTERN),
    ("attention", r"(?i)flash|fmha|attention|sdpa|_attn"),
    ("conv", r"(?i)conv|cudnn::|implicit_?gemm.*conv|winograd|dgrad|wgrad"),
    ("GEMM", r"(?i)gemm|cutlass|cublas|gemv|xmma|wgmma|matmul|_mm_|hgemm|sgemm|ampere_.*_tn|sm\d+_xmma|nvjet"
             r"|^Cijk_"),
    ("norm", r"(?i)norm|bn_|batch_?norm|layer_?norm|rms"),
    ("reduction", r"(?i)reduce|reduction|softmax|argmax|sum_kernel|mean_kernel"),
    ("embedding", r"(?i)embedding|embs|index_select|gather|scatter|bounds_check_indices|linearize_index"),
    ("copy", r"(?i)copy|cat_?array|transpose"),
    ("elementwise", r"(?i)elementwise|vectorized|unrolled|pointwise|triton_poi|multi_tensor_apply"),
)
#: Category order in the tables.
CATEGORIES: tuple[str, ...] = ("GEMM", "conv", "attention", "norm", "reduction", "elementwise", "embedding", "copy",
                               "communication", "memcpy/memset", "other")
TYPES: tuple[str, ...] = ("computation", "communication", "memory")


def category_by_name(names: np.ndarray) -> np.ndarray:
    """The category of each kernel name by :data:`NAME_RULES` (first match), None where no
    rule matches. The regexes run once per distinct name."""
    if not len(names):
        return np.zeros(0, dtype=object)
    codes, uniq = pd.factorize(pd.Series(names, dtype=object).fillna("").astype(str))
    rules = [(c, re.compile(rx)) for c, rx in NAME_RULES]
    u_rule = np.array([next((c for c, rx in rules if rx.search(n)), None) for n in uniq], dtype=object)
    return u_rule[codes]


@dataclass(repr=False)
class CategoryBreakdown(TableResult):
    """Result of :func:`gpu_categories`: ``activities`` (one row per device activity:
    ``eid``, ``kind``, ``name``, ``device``, ``dur_ns``, ``op``, ``type``, ``category``,
    ``source``).

    Examples
    --------
    >>> import opgraph
    >>> t = opgraph.gpu_categories(opgraph.load(opgraph.example_trace("gpu_bound"))).to_frame()
    >>> round(float(t["pct"].sum()), 6)
    100.0
    """

    activities: pd.DataFrame
    main_table: ClassVar[str] = "by_category"
    display_tables: ClassVar[tuple[str, ...]] = ("by_category", "by_type")

    def tables(self) -> dict[str, pd.DataFrame]:
        """``by_category``, ``by_type`` (kernels, GPU µs, % of GPU time) and ``activities`` (µs)."""
        a = self.activities
        total = float(a["dur_ns"].sum())

        def agg(col: str, order: tuple[str, ...]) -> pd.DataFrame:
            g = a.groupby(col, sort=False).agg(activities=("eid", "size"), gpu_ns=("dur_ns", "sum"))
            g = g.reindex([c for c in order if c in g.index])
            return pd.DataFrame({col: g.index, "activities": g["activities"].astype(int).to_numpy(),
                                 "gpu_us": g["gpu_ns"].to_numpy(float) / 1e3,
                                 "pct": (100.0 * g["gpu_ns"].to_numpy(float) / total) if total else 0.0})
        acts = a.assign(dur_us=a["dur_ns"] / 1e3).drop(columns=["dur_ns"])
        return {"by_category": agg("category", CATEGORIES), "by_type": agg("type", TYPES), "activities": acts}

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (``schemas/categories.schema.json``)."""
        t = self.tables()
        return {"by_category": json_records(t["by_category"]), "by_type": json_records(t["by_type"]),
                "gpu_us": float(self.activities["dur_ns"].sum()) / 1e3}


def gpu_categories(G: TraceGraph, roofline_result: Any = None) -> CategoryBreakdown:
    """Type and category of every device activity of ``G`` (module docstring).
    ``roofline_result``: a precomputed :func:`opgraph.analysis.roofline.roofline` result."""
    from opgraph.analysis.roofline import roofline

    res = roofline_result if roofline_result is not None else roofline(G)
    k = res.kernels
    names = k["name"].astype(object).fillna("").astype(str).to_numpy(object)
    kinds = k["kind"].astype(str).to_numpy(object)
    fam = k["family"].astype(object).to_numpy(object)
    by_name = category_by_name(names)
    comm = by_name == "communication"  # NAME_RULES' first rule is the communication pattern
    mem = np.isin(kinds, ("memcpy", "memset"))
    typ = np.where(mem, "memory", np.where(comm, "communication", "computation"))
    fam_cat = pd.Series(fam, dtype=object).map(FAMILY_CATEGORY).to_numpy(object)
    modelled = pd.notna(fam_cat) & ~comm
    named = ~modelled & pd.notna(by_name)
    cat = np.where(mem, "memcpy/memset", np.where(modelled, fam_cat, np.where(named, by_name, "other"))).astype(object)
    src = np.where(mem, "kind", np.where(modelled, "op model", np.where(named, "kernel name", "none"))).astype(object)
    df = pd.DataFrame({"eid": k["eid"].to_numpy(), "kind": kinds, "name": names, "device": k["device"].to_numpy(),
                       "dur_ns": k["dur_ns"].to_numpy(np.int64), "op": k["op_name"].astype(object).to_numpy(object),
                       "type": typ, "category": cat, "source": src})
    return CategoryBreakdown(df)
