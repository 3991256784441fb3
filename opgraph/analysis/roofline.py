"""Roofline attribution: FLOPs and bytes of operators, given to the GPU activities that do
the work, with achieved rates against the device peaks (docs/roofline.md).

Pure analysis: takes a graph (or :class:`TraceColumns`, or the column payload ``opgraph
build`` makes) and returns DataFrames; nothing is printed or written here.

Attribution rule (the invariant is ``Σ activity FLOPs == Σ FLOPs of the counted ops that
own activities``, and the same for bytes):

1. Every ``cpu_op`` with recorded shapes is costed with
   :func:`opgraph.analysis.flops.op_cost_from_args`. An op that has no rule, or whose
   arguments are not enough for it, has **no model**; nothing is guessed.
2. An op is **counted** when it has a cost, unless it is a composite
   (:data:`~opgraph.analysis.flops.COMPOSITE_OPS`, e.g. ``aten::linear``) with a costed
   op somewhere beneath it (``nest`` edges): then the work is counted at the innermost
   costed ops instead. Counted ops never nest inside each other's counts twice: a
   non-composite costed op is counted even when a costed op runs beneath it (the child
   owns its own kernels, see 3).
3. Each device activity (kernel, memcpy, memset) belongs to the **innermost counted op**
   above the runtime call that launched it (``launch`` edge, then ``nest`` parents); when
   the activity has no launch edge, its ``External id`` is matched to a ``cpu_op`` carrying
   the same id (the link Inductor's ``profile_analysis`` uses). The op's FLOPs and bytes
   are split over its **work activities** in proportion to their durations (integer split,
   remainders to the longest one, so sums are exact). For GEMM, convolution and attention
   ops the work activities are the kernels whose names look like matrix/conv/attention
   kernels (not elementwise, fill, copy, layout-transform or split-K reduce helpers); when
   none matches, and for every other family, all the op's activities share the work.
4. A kernel that already carries a nonzero ``kernel_flop`` / ``kernel_num_gb`` in its args
   (Inductor/Triton benchmark builds) keeps those values and takes no share of its op
   (the op's cost goes to its other activities, if any).

dtype of an activity: its op's dtype (largest tensor input, ``Input type``), else the
kernel name (``bf16``, ``c10::Half``, ``sgemm`` ...), else the caller's default, else
unknown. fp32 GEMM/conv kernels whose names show TF32 tensor-core math use the TF32 peak.
Device: the ``deviceProperties`` entry of the activity's device (fuzzy table lookup), or
the caller's override. Peaks are the dense datasheet rates.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, ClassVar, Mapping

import networkx as nx
import numpy as np
import orjson
import pandas as pd

from opgraph.analysis.display import TableResult
from opgraph.analysis.flops import COMPOSITE_OPS, OpCost, op_cost, op_cost_from_args, op_family
from opgraph.devices import Device, lookup, lookup_properties

__all__ = [
    "ATTRIBUTED_KINDS", "BOUNDS", "TraceColumns", "RooflineResult", "DeviceInfo", "roofline",
    "resolve_devices", "kernel_name_dtype", "work_kernel_mask", "augment_args", "summarize",
    "group_table", "no_model_table", "report_doc", "isin_obj",
]

#: Device activities that receive FLOPs and bytes.
ATTRIBUTED_KINDS = ("kernel", "memcpy", "memset")
#: Values of the ``bound`` column.
BOUNDS = ("compute", "memory", "communication")
_HOST_KINDS = ("annotation", "cpu_op", "python", "runtime")
#: Families whose FLOPs go to the matrix/conv/attention kernels only.
_COMPUTE_FAMILIES = ("gemm", "conv", "attention")
_WORK_RE = {
    "gemm": re.compile(r"(?i)gemm|gemv|cutlass|xmma|nvjet|cijk|cublas|wmma|tensorop|hipblaslt|rocblas"
                       r"|matmul|_mm_|dot_kernel|ck::|sm\d\d_|ampere_|volta_|turing_|hopper_|maxwell_"),
    "conv": re.compile(r"(?i)conv|implicit|igemm|gemm|xmma|cudnn|miopen|winograd|fft|wgrad|dgrad|fprop"
                       r"|cutlass|cijk|ck::|sm\d\d_|ampere_|volta_|turing_|hopper_|maxwell_|naive_conv"),
    "attention": re.compile(r"(?i)flash|fmha|attention|attn|sdpa|mha|cutlass|gemm|xmma|ck::|aiter|"
                            r"softmax|fwd|bwd"),
}
_HELPER_RE = re.compile(r"(?i)elementwise|vectorized_|fill|copy|memset|memcpy|splitk\w*reduce|reduce_kernel"
                        r"|nchw|nhwc|transpose|permute|convert_dq|dot_do_o|scal_kernel")


def _obj(values: Any) -> pd.Series:
    """An object column that keeps ``None`` (pandas >= 3 would infer ``str`` and turn
    ``None`` into NaN)."""
    return pd.Series(np.asarray(values, dtype=object), dtype=object)


def _objectify(df: pd.DataFrame, cols: tuple[str, ...]) -> pd.DataFrame:
    for c in cols:
        if c in df:
            v = df[c].to_numpy(dtype=object)
            df[c] = pd.Series([None if (x is pd.NA or (isinstance(x, float) and np.isnan(x))) else x for x in v],
                              index=df.index, dtype=object)
    return df


def isin_obj(values: np.ndarray, items: Any) -> np.ndarray:
    """``np.isin`` for object arrays (strings, None), by hashing each distinct value once:
    numpy's sort-based isin is slow on Python objects."""
    if not len(values):
        return np.zeros(0, dtype=bool)
    items = frozenset(items)
    codes, uniq = pd.factorize(pd.Series(values, dtype=object), use_na_sentinel=False)
    hit = np.fromiter((u in items for u in uniq), dtype=bool, count=len(uniq))
    return hit[codes]


def _vstr(values: np.ndarray, fn) -> np.ndarray:
    """Apply ``fn`` once per distinct value of an object array."""
    if not len(values):
        return np.empty(0, dtype=object)
    codes, uniq = pd.factorize(pd.Series(values, dtype=object), use_na_sentinel=False)
    out = np.array([fn(u) for u in uniq], dtype=object)
    return out[codes]


# --------------------------------------------------------------------------- dtype from names
_NAME_DTYPES = [
    (re.compile(r"(?i)fp8|f8f8|e4m3|e5m2"), "fp8"),
    (re.compile(r"(?i)bf16|bfloat16"), "bf16"),
    (re.compile(r"(?i)fp16|c10::half|\bhalf\b|\b__half\b|(?<![a-z0-9])f16|h884|h1688|h16816|hgemm"), "fp16"),
    (re.compile(r"(?i)tf32"), "fp32"),
    (re.compile(r"(?i)\bdouble\b|fp64|dgemm|(?<![a-z0-9])f64"), "fp64"),
    (re.compile(r"(?i)\bfloat\b|fp32|sgemm|(?<![a-z0-9])f32|s1688|s884|s16816"), "fp32"),
]
_TF32_RE = re.compile(r"(?i)tf32|tensorop_s1688|tensorop_s16816|_s1688gemm|_s16816gemm")


@lru_cache(maxsize=65536)
def kernel_name_dtype(name: str) -> str | None:
    """dtype a kernel name shows (``fp8``, ``bf16``, ``fp16``, ``fp64``, ``fp32``), or None.

    Checked in that order, so a ``bf16`` GEMM with fp32 accumulation reads as ``bf16``."""
    if not isinstance(name, str):
        return None
    for rx, dt in _NAME_DTYPES:
        if rx.search(name):
            return dt
    return None


def work_kernel_mask(names: np.ndarray, kinds: np.ndarray, family: str | None) -> np.ndarray:
    """Which activities of an op of ``family`` do its main work (see the module docstring)."""
    if family not in _COMPUTE_FAMILIES:
        return np.ones(len(names), dtype=bool)
    rx = _WORK_RE[family]
    ok = _vstr(names, lambda n: isinstance(n, str) and bool(rx.search(n)) and not _HELPER_RE.search(n))
    return ok.astype(bool) & (kinds == "kernel")


# --------------------------------------------------------------------------- columns
@dataclass
class TraceColumns:
    """The nodes of a graph as arrays indexed by position, plus the two edge kinds the
    attribution needs: ``parent`` (host ``nest`` parent position, -1 at roots) and
    ``launch_src -> launch_dst`` (runtime call -> device activity positions)."""

    eid: np.ndarray
    kind: np.ndarray
    name: np.ndarray
    ts: np.ndarray
    dur: np.ndarray
    device: np.ndarray
    external_id: np.ndarray
    args: np.ndarray
    parent: np.ndarray
    launch_src: np.ndarray
    launch_dst: np.ndarray
    graph: Mapping[str, Any] = field(default_factory=dict)

    @property
    def n(self) -> int:
        return len(self.eid)

    @classmethod
    def from_graph(cls, G: nx.DiGraph) -> "TraceColumns":
        from opgraph.graph.arrays import GraphArrays

        a = GraphArrays.from_graph(G)
        attrs = list(G._node.values())
        n = a.n
        ext = np.array([d.get("external_id", -1) for d in attrs], dtype=np.int64)
        if n and "args" in attrs[0]:
            args = np.empty(n, dtype=object)
            args[:] = [d.get("args") for d in attrs]
        else:
            ev = G.graph.get("events")
            args = ev["args"].to_numpy(dtype=object)[a.eid] if ev is not None and n else np.full(n, None, dtype=object)
        ps, pd_ = a.out_edges("nest")
        ls, ld = a.out_edges("launch")
        return cls._finish(a.eid, a.kind, a.name, a.ts, a.end - a.ts, a.device, ext, args, ps, pd_, ls, ld, G.graph)

    @classmethod
    def from_payload(cls, payload: Mapping[str, Any]) -> "TraceColumns":
        """From the column form of :func:`opgraph.graph.build.build_payload` (no DiGraph)."""
        nodes = np.asarray(payload["nodes"], dtype=np.int64)
        cols = payload["node_cols"]
        ku, kc = cols["kind"]
        nu, nc = cols["name"]
        graph = payload["graph"]
        ev = graph.get("events")
        n = len(nodes)
        args = ev["args"].to_numpy(dtype=object)[nodes] if ev is not None else np.full(n, None, dtype=object)
        eu, ec = payload["edge_kind"]
        src = np.asarray(payload["src"], dtype=np.int64)
        dst = np.asarray(payload["dst"], dtype=np.int64)
        lut = np.full(int(nodes.max()) + 1 if n else 1, -1, dtype=np.int64)
        lut[nodes] = np.arange(n)
        eu = list(eu)

        def sel(k: str) -> tuple[np.ndarray, np.ndarray]:
            if k not in eu:
                return np.empty(0, np.int64), np.empty(0, np.int64)
            m = ec == eu.index(k)
            return lut[src[m]], lut[dst[m]]

        ps, pd_ = sel("nest")
        ls, ld = sel("launch")
        return cls._finish(nodes, np.asarray(ku, dtype=object)[kc], np.asarray(nu, dtype=object)[nc],
                           np.asarray(cols["ts"], np.int64), np.asarray(cols["dur"], np.int64),
                           np.asarray(cols["device"], np.int64), np.asarray(cols["external_id"], np.int64),
                           args, ps, pd_, ls, ld, graph)

    @classmethod
    def from_table(cls, table: Any) -> "TraceColumns":
        """Straight from a reader's :class:`~opgraph.ingest.table.EventTable`, computing only
        the two edge kinds the attribution needs with the graph builder's own steps (host
        ``nest`` sweep; ``launch`` by correlation, plus launch flows for the activities no
        correlation links). Same nodes, parents and launches as the built graph; used by
        ``opgraph augment`` to skip building every other edge kind."""
        from opgraph.graph.build import link_flows
        from opgraph.graph.linking import link_launches
        from opgraph.graph.nesting import nest_sweep
        from opgraph.ingest.table import DEVICE_ACTIVITY_KINDS, HOST_KINDS, NODE_KINDS

        ev = table.events
        kind_all = ev["kind"].to_numpy(dtype=object)
        ts = ev["ts_ns"].to_numpy()
        dur = ev["dur_ns"].to_numpy()
        end = ts + np.maximum(dur, 0)
        eid = ev["eid"].to_numpy()
        corr = ev["correlation"].to_numpy()
        has_ts = ev["has_ts"].to_numpy() if "has_ts" in ev else np.ones(len(ev), dtype=bool)
        pid_codes, _ = pd.factorize(ev["pid"].to_numpy(dtype=object))
        tid_codes, tid_u = pd.factorize(ev["tid"].to_numpy(dtype=object))
        lane, _ = pd.factorize(pid_codes.astype(np.int64) * (len(tid_u) + 2) + tid_codes + 1)
        lane = lane.astype(np.int64)
        is_node = isin_obj(kind_all, NODE_KINDS) & has_ts & (dur >= 0)
        h = np.flatnonzero(is_node & isin_obj(kind_all, HOST_KINDS))
        nr = nest_sweep(lane[h], ts[h], end[h])
        hp = nr.parent >= 0
        ps, pd_ = eid[h][nr.parent[hp]], eid[h][hp]
        rt = np.flatnonzero(is_node & (kind_all == "runtime"))
        act = np.flatnonzero(is_node & isin_obj(kind_all, DEVICE_ACTIVITY_KINDS))
        launch, unlinked, _n, _x = link_launches(eid[rt], corr[rt], pid_codes[rt], ts[rt], eid[act], corr[act],
                                                 ts[act])
        ls, ld = launch.src, launch.dst
        if len(unlinked) or (corr[act] < 0).any():
            _fe, extra, _d, _u = link_flows(ev, kind_all, lane, ts, end, eid, is_node, launch)
            if len(extra):
                ls, ld = np.concatenate([ls, extra.src]), np.concatenate([ld, extra.dst])
        idx = np.flatnonzero(is_node)
        lut = np.full(len(ev), -1, dtype=np.int64)
        lut[idx] = np.arange(len(idx))
        meta = table.meta
        graph = {"source": {"format": meta.get("format"), "file": meta.get("file"), "sha256": meta.get("sha256")},
                 "device_properties": meta.get("device_properties", []),
                 "distributed_info": meta.get("distributed_info", {}),
                 "trace_metadata": meta.get("trace_metadata", {}), "events": ev}
        return cls._finish(eid[idx], kind_all[idx], ev["name"].to_numpy(dtype=object)[idx], ts[idx], dur[idx],
                           ev["device"].to_numpy()[idx], ev["external_id"].to_numpy()[idx],
                           ev["args"].to_numpy(dtype=object)[idx], lut[ps], lut[pd_], lut[ls], lut[ld], graph)

    @classmethod
    def _finish(cls, eid, kind, name, ts, dur, device, ext, args, ps, pd_, ls, ld, graph) -> "TraceColumns":
        n = len(eid)
        is_host = isin_obj(kind, _HOST_KINDS)
        parent = np.full(n, -1, dtype=np.int64)
        if len(ps):
            m = is_host[ps] & is_host[pd_]
            parent[pd_[m]] = ps[m]
        return cls(eid, kind, name, ts, dur, device, ext, args, parent, ls, ld, graph)


def _climb(start: np.ndarray, parent: np.ndarray, hit: np.ndarray) -> np.ndarray:
    """For each start position (-1 = none): the first of itself and its ancestors where
    ``hit`` is true, else -1. Vectorised one tree level at a time."""
    res = np.full(len(start), -1, dtype=np.int64)
    idx = np.flatnonzero(start >= 0)
    cur = start[idx]
    while len(idx):
        h = hit[cur]
        res[idx[h]] = cur[h]
        idx, cur = idx[~h], parent[cur[~h]]
        ok = cur >= 0
        idx, cur = idx[ok], cur[ok]
    return res


def _mark_ancestors(start: np.ndarray, parent: np.ndarray, n: int) -> np.ndarray:
    """Boolean mask of the strict ancestors of the positions ``start``."""
    mark = np.zeros(n, dtype=bool)
    cur = np.unique(parent[start[start >= 0]])
    cur = cur[cur >= 0]
    while len(cur):
        cur = cur[~mark[cur]]
        mark[cur] = True
        cur = np.unique(parent[cur])
        cur = cur[cur >= 0]
    return mark


# --------------------------------------------------------------------------- op costs
@dataclass
class _OpCosts:
    flops: np.ndarray      # int64 per position (0 where no cost)
    bytes: np.ndarray      # int64 per position (-1 where unknown / no cost)
    costed: np.ndarray     # bool
    model: np.ndarray      # object: rule name or None
    family: np.ndarray     # object
    dtype: np.ndarray      # object
    collective: np.ndarray  # bool
    problem: np.ndarray    # object: OpCost.problem (GEMM/conv/attention problem size) or None


def _cost_ops(c: TraceColumns, world_size: int | None) -> _OpCosts:
    n = c.n
    flops = np.zeros(n, dtype=np.int64)
    nbytes = np.full(n, -1, dtype=np.int64)
    costed = np.zeros(n, dtype=bool)
    model = np.full(n, None, dtype=object)
    family = np.full(n, None, dtype=object)
    dtype = np.full(n, None, dtype=object)
    coll = np.zeros(n, dtype=bool)
    problem = np.full(n, None, dtype=object)
    cpu = np.flatnonzero(c.kind == "cpu_op")
    if not len(cpu):
        return _OpCosts(flops, nbytes, costed, model, family, dtype, coll, problem)
    fam = _vstr(c.name[cpu], lambda nm: op_family(nm) if isinstance(nm, str) else None)
    family[cpu] = fam
    cand = cpu[fam != None]  # noqa: E711
    cache: dict[tuple[str, bytes], OpCost | None] = {}
    names = c.name[cand].tolist()
    argl = c.args[cand].tolist()
    res: list[OpCost | None] = []
    dumps = orjson.dumps
    for nm, a in zip(names, argl):
        if not a:
            res.append(None)
            continue
        dims = a.get("Input Dims", a.get("Input dims"))
        if dims is None:
            res.append(None)
            continue
        try:
            key = (nm, dumps((dims, a.get("Input type"), a.get("Concrete Inputs"), a.get("Input Strides"),
                              a.get("Output Dims", a.get("Output dims")))))
        except TypeError:
            key = None
        if key is not None and key in cache:
            res.append(cache[key])
            continue
        oc = op_cost_from_args(nm, a, world_size=world_size)
        if key is not None:
            cache[key] = oc
        res.append(oc)
    res = _conv_context(c, cand, res, world_size)
    for p, oc in zip(cand.tolist(), res):
        if oc is None:
            continue
        costed[p] = True
        flops[p] = oc.flops
        nbytes[p] = -1 if oc.bytes is None else oc.bytes
        model[p] = oc.model
        dtype[p] = oc.dtype
        coll[p] = oc.collective is not None
        problem[p] = oc.problem
    return _OpCosts(flops, nbytes, costed, model, family, dtype, coll, problem)


#: Forward convolutions whose output shape can come from their backward (old traces record
#: no ``Concrete Inputs``, so stride/padding are unknown).
_CONV_FWD = frozenset({
    "aten::conv1d", "aten::conv2d", "aten::conv3d", "aten::convolution", "aten::_convolution",
    "aten::convolution_overrideable", "aten::cudnn_convolution", "aten::miopen_convolution",
    "aten::miopen_depthwise_convolution", "aten::mkldnn_convolution",
})
#: Backward convolutions: (index of grad_output, index of weight or None) in ``Input Dims``.
_CONV_BWD = {
    "aten::convolution_backward": (0, 2), "aten::convolution_backward_overrideable": (0, 2),
    "aten::cudnn_convolution_backward": (1, 2), "aten::cudnn_convolution_backward_input": (1, 2),
    "aten::cudnn_convolution_backward_weight": (1, None),
}
_NEEDS_WEIGHT = frozenset({"aten::cudnn_convolution_backward_weight"})


def _dims(a: Any, i: int | None) -> list | None:
    if not a or i is None:
        return None
    d = a.get("Input Dims", a.get("Input dims"))
    if not isinstance(d, list) or i >= len(d):
        return None
    v = d[i]
    return v if isinstance(v, list) and v and all(isinstance(x, int) for x in v) else None


def eval_shape(text: str) -> list[int]:
    """Inverse of ``repr`` for a list of ints."""
    return [int(t) for t in text.strip("[]").split(",") if t.strip()]


def _conv_context(c: TraceColumns, cand: np.ndarray, res: list[OpCost | None], world_size: int | None
                  ) -> list[OpCost | None]:
    """Second chance for convolutions the recorded arguments cannot cost on their own.

    A forward convolution without stride/padding takes its output shape from the
    grad_output of its backward (matched by the autograd ``Sequence number``: the
    ``...Backward`` range above the backward op carries the forward op's number); a
    ``cudnn_convolution_backward_weight`` without ``weight_size`` takes the weight shape
    of its parent ``cudnn_convolution_backward`` (or of the forward op). Without sequence
    numbers (2021 traces), a forward convolution takes the grad_output shape that every
    backward convolution with the same input and weight shapes saw, when there is exactly
    one such shape."""
    names = c.name[cand]
    argl = c.args[cand]
    todo = [j for j, (nm, oc) in enumerate(zip(names.tolist(), res))
            if oc is None and (nm in _CONV_FWD or nm in _NEEDS_WEIGHT) and argl[j]
            and ("Input Dims" in argl[j] or "Input dims" in argl[j])]
    if not todo:
        return res
    args = c.args
    go_of: dict[int, list] = {}
    w_of: dict[int, list] = {}
    bwd = np.flatnonzero(isin_obj(c.name, _CONV_BWD) & (c.kind == "cpu_op"))
    for p in bwd.tolist():
        gi, wi = _CONV_BWD[c.name[p]]
        go = _dims(args[p], gi)
        q = c.parent[p]
        seq = None
        for _ in range(8):
            if q < 0:
                break
            a = args[q]
            nm = c.name[q]
            if a and "Sequence number" in a and isinstance(nm, str) and "Backward" in nm:
                seq = a["Sequence number"]
                break
            q = c.parent[q]
        if isinstance(seq, int):
            if go is not None:
                go_of.setdefault(seq, go)
            w = _dims(args[p], wi)
            if w is not None:
                w_of.setdefault(seq, w)
    # (input shape, weight shape) -> grad_output shapes, from backward ops recording all three
    go_by_xw: dict[tuple[str, str], set[str]] = {}
    for p in bwd.tolist():
        nm = c.name[p]
        xi = 1 if nm in ("aten::convolution_backward", "aten::convolution_backward_overrideable") else \
            0 if nm == "aten::cudnn_convolution_backward" else None
        gi, wi = _CONV_BWD[nm]
        x, go, w = _dims(args[p], xi), _dims(args[p], gi), _dims(args[p], wi)
        if x is not None and go is not None and w is not None:
            go_by_xw.setdefault((repr(x), repr(w)), set()).add(repr(go))
    fwd_w: dict[int, list] = {}
    for j in todo:
        p = int(cand[j])
        a = args[p] or {}
        nm = names[j]
        seq = a.get("Sequence number")
        od = None
        if nm in _CONV_FWD:
            go = go_of.get(seq) if isinstance(seq, int) else None
            if go is None:
                # no sequence numbers: the backward ops of every convolution with these input
                # and weight shapes saw one grad_output shape -> that is the output shape
                x, w = _dims(a, 0), _dims(a, 1)
                gos = go_by_xw.get((repr(x), repr(w))) if x is not None and w is not None else None
                if gos is not None and len(gos) == 1:
                    go = eval_shape(next(iter(gos)))
            od = [go] if go is not None else None
        else:
            q = c.parent[p]
            w = _dims(args[q], 2) if q >= 0 and c.name[q] == "aten::cudnn_convolution_backward" else None
            if w is None:
                # the forward op with the backward's sequence number holds the weight
                q2, s2 = c.parent[p], None
                for _ in range(8):
                    if q2 < 0:
                        break
                    a2 = args[q2]
                    if a2 and "Sequence number" in a2 and "Backward" in str(c.name[q2]):
                        s2 = a2["Sequence number"]
                        break
                    q2 = c.parent[q2]
                w = w_of.get(s2) if isinstance(s2, int) else None
                if w is None and isinstance(s2, int):
                    if not fwd_w:
                        for f in np.flatnonzero(isin_obj(c.name, _CONV_FWD)).tolist():
                            af = args[f]
                            if af and isinstance(af.get("Sequence number"), int):
                                wf = _dims(af, 1)
                                if wf is not None:
                                    fwd_w.setdefault(af["Sequence number"], wf)
                    w = fwd_w.get(s2)
            od = [w] if w is not None else None
        if od is None:
            continue
        dims = a.get("Input Dims", a.get("Input dims"))
        if dims is None:
            continue
        res[j] = op_cost(nm, dims, a.get("Input type") or [], a.get("Concrete Inputs"), a.get("Input Strides"),
                         world_size=world_size, output_dims=od)
    return res


# --------------------------------------------------------------------------- devices
@dataclass
class DeviceInfo:
    """The device used for one device index of the trace."""

    device: int
    runtime_name: str | None
    table: Device | None
    overridden: bool = False
    inferred: bool = False

    def to_dict(self) -> dict[str, Any]:
        t = self.table
        return {
            "device": int(self.device), "runtime_name": self.runtime_name,
            "table_name": t.name if t else None, "overridden": self.overridden,
            "inferred": self.inferred,
            "dram_gbps": t.dram_gbps if t else None,
            "peak_tflops": {k: v for k, v in t.peak_tflops.items()} if t else None,
            "source": t.source if t else None,
        }


def resolve_devices(props: list[Any] | None, device_ids: list[int], override: str | None = None
                    ) -> dict[int, DeviceInfo]:
    """Device index -> :class:`DeviceInfo` from ``deviceProperties`` (fuzzy lookup), or the
    table entry named by ``override`` for all. Raises ``ValueError`` for an unknown
    override name."""
    by_id: dict[int, Mapping[str, Any]] = {}
    for i, p in enumerate(props or []):
        if isinstance(p, Mapping):
            pid = p.get("id", i)
            if isinstance(pid, int):
                by_id[pid] = p
    ov = None
    if override:
        ov = lookup(override)
        if ov is None:
            from opgraph.devices import all_devices
            raise ValueError(f"unknown or ambiguous device {override!r}; known: "
                             + ", ".join(d.name for d in all_devices()))
    out: dict[int, DeviceInfo] = {}
    found = {d: lookup_properties(p) for d, p in by_id.items()}
    same = {x.name: x for x in found.values() if x is not None}
    only = next(iter(same.values())) if len(same) == 1 and all(found.values()) else None
    for d in sorted(set(device_ids) or set(by_id)):
        p = by_id.get(d)
        rn = p.get("name") if p else None
        if ov is not None:
            out[d] = DeviceInfo(d, rn, ov, True)
        elif p is not None:
            out[d] = DeviceInfo(d, rn, found[d])
        else:
            # no deviceProperties entry for this index (e.g. a ROCm VF listed as id 0 while
            # the kernels run on device 2): use the model all listed devices share, if any
            out[d] = DeviceInfo(d, None, only, inferred=only is not None)
    return out


# --------------------------------------------------------------------------- result
@dataclass(repr=False)
class RooflineResult(TableResult):
    """Per-activity and per-op attribution. ``tables()``: ``by_kernel`` and ``by_op``
    (:func:`group_table`, µs), ``kernels`` and ``ops`` (the frames below).

    ``kernels``: one row per device activity (kernel, memcpy, memset), columns ``eid kind
    name device stream? ts_ns dur_ns op_eid op_name launcher_eid launcher_name model family
    flops bytes dtype dtype_source flop_source work peak_tflops peak_gbps achieved_tflops
    achieved_gbps pct_peak_flops pct_peak_bw arithmetic_intensity bound``. ``flops`` /
    ``bytes`` are nullable ``Int64`` (``<NA>`` = no model / unknown); ``model`` is ``None``
    for activities with no model.

    ``ops``: one row per ``cpu_op`` that has a cost or launches activities: ``eid name
    model family composite counted flops bytes dtype kernels owned gpu_ns attributed_flops
    attributed_bytes`` and the achieved columns over ``gpu_ns`` (the op's activities).
    ``kernels`` counts the activities the op owns (else launches, for ops without a
    model); ``owned`` those that took their FLOPs/bytes from the op (not from the trace).

    ``problems``: op ``eid`` -> the problem size its rule read (``OpCost.problem``: GEMM
    ``B M N K``, attention ``B H Sq Sk D Dv causal``, convolution ``N C H W K R S ...``),
    for the counted GEMM / attention / convolution ops that have one; ``op_args``: op
    ``eid`` -> its recorded args, for every counted op of those families (both used by
    :mod:`opgraph.analysis.shapes`).
    """

    kernels: pd.DataFrame
    ops: pd.DataFrame
    devices: dict[int, DeviceInfo]
    default_dtype: str | None = None
    main_table: ClassVar[str] = "by_kernel"
    display_tables: ClassVar[tuple[str, ...]] = ("by_kernel",)

    def tables(self) -> dict[str, pd.DataFrame]:
        return {"by_kernel": group_table(self, "kernel"), "by_op": group_table(self, "op"),
                "kernels": self.kernels, "ops": self.ops}
    device_override: str | None = None
    source: Mapping[str, Any] = field(default_factory=dict)
    problems: Mapping[int, Mapping[str, Any]] = field(default_factory=dict)
    op_args: Mapping[int, Any] = field(default_factory=dict)

    def coverage(self) -> dict[str, Any]:
        return summarize(self)


def _peaks(k: pd.DataFrame, devices: dict[int, DeviceInfo], tf32: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(peak FLOP/s, peak bytes/s) per row (NaN = unknown)."""
    n = len(k)
    pf = np.full(n, np.nan)
    pb = np.full(n, np.nan)
    if not n:
        return pf, pb
    keys = pd.DataFrame({"d": k["device"].to_numpy(), "t": k["dtype"].to_numpy(dtype=object), "x": tf32})
    codes, uniq = pd.factorize(pd.MultiIndex.from_frame(keys.fillna({"t": ""})))
    vf = np.full(len(uniq), np.nan)
    vb = np.full(len(uniq), np.nan)
    for j, (d, t, x) in enumerate(uniq):
        info = devices.get(int(d))
        dev = info.table if info else None
        if dev is None:
            continue
        vb[j] = dev.dram_bytes_per_s
        if t:
            p = dev.peak_flops_per_s(t, tf32=bool(x))
            if p is None and x:
                p = dev.peak_flops_per_s(t)
            if p is not None:
                vf[j] = p
    return vf[codes], vb[codes]


def _rates(flops: np.ndarray, has_f: np.ndarray, nbytes: np.ndarray, has_b: np.ndarray, dur_ns: np.ndarray,
           pf: np.ndarray, pb: np.ndarray, coll: np.ndarray) -> dict[str, np.ndarray]:
    n = len(flops)
    d = dur_ns.astype(float)
    pos = d > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        tflops = np.where(has_f & pos, flops / np.where(pos, d, 1) / 1e3, np.nan)
        gbps = np.where(has_b & pos, nbytes / np.where(pos, d, 1), np.nan)
        pct_f = np.where(np.isfinite(pf) & (pf > 0), 100.0 * tflops * 1e12 / pf, np.nan)
        pct_b = np.where(np.isfinite(pb) & (pb > 0) & ~coll, 100.0 * gbps * 1e9 / pb, np.nan)
        ai = np.where(has_f & has_b & (nbytes > 0), flops / np.where(nbytes > 0, nbytes, 1), np.nan)
        ridge = pf / pb
    bound = np.full(n, None, dtype=object)
    known = has_f & has_b
    comp = known & (((nbytes == 0) & (flops > 0)) | ((nbytes > 0) & np.isfinite(ridge) & (ai >= ridge)))
    mem = known & (((flops == 0) & (nbytes > 0)) | ((nbytes > 0) & (flops > 0) & np.isfinite(ridge) & (ai < ridge)))
    bound[comp] = "compute"
    bound[mem] = "memory"
    bound[coll & has_b] = "communication"
    return {"achieved_tflops": tflops, "achieved_gbps": gbps, "pct_peak_flops": pct_f, "pct_peak_bw": pct_b,
            "arithmetic_intensity": ai, "bound": bound}


def _split(total: np.ndarray, gidx: np.ndarray, w: np.ndarray, ng: int) -> np.ndarray:
    """Integer split of ``total[g]`` over the members of each group ``g`` in proportion to
    ``w`` (equal shares where a group's weights are all 0); remainders go to the member
    with the largest weight, so each group's shares sum exactly to its total."""
    if not len(gidx):
        return np.zeros(0, dtype=np.int64)
    wsum = np.bincount(gidx, weights=w, minlength=ng)
    cnt = np.bincount(gidx, minlength=ng)
    zero = wsum[gidx] <= 0
    ww = np.where(zero, 1.0, w)
    ws = np.where(zero, cnt[gidx], wsum[gidx])
    share = np.floor(total[gidx].astype(float) * ww / ws).astype(np.int64)
    rem = total - np.bincount(gidx, weights=share, minlength=ng).astype(np.int64)
    o = np.lexsort((np.arange(len(gidx)), ww, gidx))
    last = np.ones(len(o), dtype=bool)
    last[:-1] = gidx[o][1:] != gidx[o][:-1]
    top = o[last]
    share[top] += rem[gidx[top]]
    return share


def roofline(source: nx.DiGraph | TraceColumns | Mapping[str, Any], *, device: str | None = None,
             dtype: str | None = None) -> RooflineResult:
    """Attribute op FLOPs/bytes to device activities and compute achieved rates.

    Parameters
    ----------
    source : networkx.DiGraph, TraceColumns, or a build payload
        A graph from :func:`opgraph.graph.build_graph`, or its column form.
    device : str, optional
        Table name or runtime name of the device to use for every activity (overrides
        ``deviceProperties``). Raises ``ValueError`` if unknown.
    dtype : str, optional
        dtype for activities whose op and name show none (``bf16``, ``fp32`` ...).
    """
    if isinstance(source, TraceColumns):
        c = source
    elif isinstance(source, nx.DiGraph):
        c = TraceColumns.from_graph(source)
    else:
        c = TraceColumns.from_payload(source)
    g = c.graph
    di = g.get("distributed_info") or {}
    ws = di.get("world_size") if isinstance(di.get("world_size"), int) else None
    if dtype is not None:
        from opgraph.analysis.flops import dtype_info
        from opgraph.devices import peak_dtype_key
        info = dtype_info(dtype)
        canon = info[0] if info else None
        if canon is None and peak_dtype_key(dtype) is None:
            raise ValueError(f"unknown dtype {dtype!r}; use e.g. bf16, fp16, fp32, tf32, fp8, fp64")
        dtype = canon or peak_dtype_key(dtype)
    n = c.n
    oc = _cost_ops(c, ws)
    is_cpu = c.kind == "cpu_op"
    composite = np.zeros(n, dtype=bool)
    cpu_idx = np.flatnonzero(is_cpu)
    composite[cpu_idx] = isin_obj(c.name[cpu_idx], COMPOSITE_OPS)
    has_costed_below = _mark_ancestors(np.flatnonzero(oc.costed), c.parent, n)
    counted = oc.costed & ~(composite & has_costed_below)

    # --- activities and their ops
    act = np.flatnonzero(isin_obj(c.kind, ATTRIBUTED_KINDS))
    rt_of = np.full(n, -1, dtype=np.int64)
    if len(c.launch_dst):
        rt_of[c.launch_dst] = c.launch_src
    rt = rt_of[act]
    start = np.where(rt >= 0, c.parent[np.maximum(rt, 0)], -1)
    # fallback: External id -> the unique cpu_op with that id
    miss = (start < 0) & (c.external_id[act] > 0)
    if miss.any() and len(cpu_idx):
        x = pd.Series(cpu_idx, index=c.external_id[cpu_idx])
        x = x[(x.index > 0) & ~x.index.duplicated(keep=False)]
        got = x.reindex(c.external_id[act][miss]).to_numpy()
        got = np.where(np.isnan(got.astype(float)), -1, got).astype(np.int64)
        start[miss] = got
    launcher = _climb(start, c.parent, is_cpu)
    owner = _climb(start, c.parent, counted)

    # --- kernels that carry their own values
    kargs = c.args[act]
    kf = np.zeros(len(act), dtype=np.int64)
    kb = np.full(len(act), -1, dtype=np.int64)
    own = np.zeros(len(act), dtype=bool)
    for j, a in enumerate(kargs.tolist()):
        if a and ("kernel_flop" in a or "kernel_num_gb" in a):
            f, gb = a.get("kernel_flop"), a.get("kernel_num_gb")
            if (isinstance(f, (int, float)) and f > 0) or (isinstance(gb, (int, float)) and gb > 0):
                own[j] = True
                kf[j] = int(f) if isinstance(f, (int, float)) and f > 0 else 0
                kb[j] = int(round(gb * 1e9)) if isinstance(gb, (int, float)) and gb > 0 else -1

    # --- split op costs over work activities
    kname = c.name[act]
    kkind = c.kind[act]
    kdur = np.maximum(c.dur[act], 0)
    has_owner = (owner >= 0) & ~own
    fam = np.where(has_owner, oc.family[np.maximum(owner, 0)], None)
    work = np.zeros(len(act), dtype=bool)
    for f in _COMPUTE_FAMILIES:
        m = has_owner & (fam == f)
        if m.any():
            work[m] = work_kernel_mask(kname[m], kkind[m], f)
    other = has_owner & ~isin_obj(fam, _COMPUTE_FAMILIES)
    work[other] = True
    # owners with no work activity: all their activities share
    ow_codes, ow_uniq = pd.factorize(np.where(has_owner, owner, -1))
    any_work = np.bincount(ow_codes, weights=work.astype(float), minlength=len(ow_uniq)) > 0
    work |= has_owner & ~any_work[ow_codes]
    flops = np.zeros(len(act), dtype=np.int64)
    nbytes = np.zeros(len(act), dtype=np.int64)
    wi = np.flatnonzero(work)
    if len(wi):
        gcodes, guniq = pd.factorize(owner[wi])
        guniq = np.asarray(guniq, dtype=np.int64)
        w = kdur[wi].astype(float)
        flops[wi] = _split(oc.flops[guniq], gcodes, w, len(guniq))
        bk = oc.bytes[guniq]
        bshare = _split(np.maximum(bk, 0), gcodes, w, len(guniq))
        nbytes[wi] = bshare
    has_f = has_owner.copy()
    op_bytes_known = np.where(has_owner, oc.bytes[np.maximum(owner, 0)] >= 0, False)
    has_b = has_owner & op_bytes_known
    flops[own] = kf[own]
    nbytes[own] = np.maximum(kb[own], 0)
    has_f |= own
    has_b |= own & (kb >= 0)
    coll = np.where(has_owner, oc.collective[np.maximum(owner, 0)], False).astype(bool)
    model = np.where(has_owner, oc.model[np.maximum(owner, 0)], None)
    model[own] = "trace"
    flop_source = np.full(len(act), None, dtype=object)
    flop_source[has_owner] = "op"
    flop_source[own] = "trace"

    # --- dtype
    op_dt = np.where(has_owner, oc.dtype[np.maximum(owner, 0)], None)
    # unmodelled kernels: the dtype of their launching op's cost is unknown; use names
    name_dt = _vstr(kname, kernel_name_dtype)
    kdtype = np.where(op_dt != None, op_dt, name_dt)  # noqa: E711
    dsrc = np.where(op_dt != None, "op", np.where(name_dt != None, "kernel_name", None))  # noqa: E711
    if dtype is not None:
        fill = kdtype == None  # noqa: E711
        kdtype[fill] = dtype
        dsrc[fill] = "default"
    tf32 = (kdtype == "fp32") & _vstr(kname, lambda s: isinstance(s, str) and bool(_TF32_RE.search(s))).astype(bool)
    if dtype == "tf32":
        tf32 |= dsrc == "default"

    devs = sorted(set(int(x) for x in np.unique(c.device[act]) if x >= 0))
    devices = resolve_devices(g.get("device_properties"), devs, device)

    kdf = pd.DataFrame({
        "eid": c.eid[act], "kind": _obj(kkind), "name": _obj(kname), "device": c.device[act],
        "ts_ns": c.ts[act], "dur_ns": kdur,
        "op_eid": np.where(owner >= 0, c.eid[np.maximum(owner, 0)], -1),
        "op_name": _obj(np.where(owner >= 0, c.name[np.maximum(owner, 0)], None)),
        "launcher_eid": np.where(launcher >= 0, c.eid[np.maximum(launcher, 0)], -1),
        "launcher_name": _obj(np.where(launcher >= 0, c.name[np.maximum(launcher, 0)], None)),
        "model": _obj(model), "family": _obj(np.where(has_owner, fam, None)), "collective": coll,
        "flops": pd.array(np.where(has_f, flops, 0), dtype="Int64"),
        "bytes": pd.array(np.where(has_b, nbytes, 0), dtype="Int64"),
        "dtype": _obj(kdtype), "dtype_source": _obj(dsrc), "flop_source": _obj(flop_source), "work": work | own,
    })
    kdf.loc[~has_f, "flops"] = pd.NA
    kdf.loc[~has_b, "bytes"] = pd.NA
    pf, pb = _peaks(kdf, devices, tf32)
    kdf["peak_tflops"] = pf / 1e12
    kdf["peak_gbps"] = pb / 1e9
    r = _rates(flops, has_f, nbytes, has_b, kdur, pf, pb, coll)
    for k_, v in r.items():
        kdf[k_] = _obj(v) if k_ == "bound" else v

    # --- ops
    is_launcher = np.zeros(n, dtype=bool)
    is_launcher[launcher[launcher >= 0]] = True
    op_rows = np.flatnonzero(is_cpu & (oc.costed | is_launcher))
    gpu_ns = np.zeros(n, dtype=np.int64)
    nk = np.zeros(n, dtype=np.int64)
    af = np.zeros(n, dtype=np.int64)
    ab = np.zeros(n, dtype=np.int64)
    key = np.where(owner >= 0, owner, launcher)
    m = key >= 0
    np.add.at(gpu_ns, key[m], kdur[m])
    np.add.at(nk, key[m], 1)
    mo = has_owner  # activities whose FLOPs/bytes come from their op (not from the trace)
    owned = np.zeros(n, dtype=np.int64)
    np.add.at(owned, owner[mo], 1)
    np.add.at(af, owner[mo], np.where(has_f[mo], flops[mo], 0))
    np.add.at(ab, owner[mo], np.where(has_b[mo], nbytes[mo], 0))
    # device and peak of an op: those of its first activity
    first_dev = np.full(n, -1, dtype=np.int64)
    first_tf = np.zeros(n, dtype=bool)
    if m.any():
        kk = key[m][::-1]
        first_dev[kk] = c.device[act][m][::-1]
        first_tf[kk] = tf32[m][::-1]
    odt = oc.dtype[op_rows].copy()
    if dtype is not None:
        odt[odt == None] = dtype  # noqa: E711
    odf = pd.DataFrame({
        "eid": c.eid[op_rows], "name": _obj(c.name[op_rows]), "ts_ns": c.ts[op_rows], "dur_ns": c.dur[op_rows],
        "model": _obj(oc.model[op_rows]), "family": _obj(oc.family[op_rows]), "composite": composite[op_rows],
        "counted": counted[op_rows], "collective": oc.collective[op_rows],
        "flops": pd.array(oc.flops[op_rows], dtype="Int64"), "bytes": pd.array(oc.bytes[op_rows], dtype="Int64"),
        "dtype": _obj(odt), "device": first_dev[op_rows], "kernels": nk[op_rows], "owned": owned[op_rows],
        "gpu_ns": gpu_ns[op_rows],
        "attributed_flops": af[op_rows], "attributed_bytes": ab[op_rows],
    })
    odf.loc[~oc.costed[op_rows], ["flops"]] = pd.NA
    odf.loc[oc.bytes[op_rows] < 0, ["bytes"]] = pd.NA
    opf, opb = _peaks(odf, devices, first_tf[op_rows])
    odf["peak_tflops"] = opf / 1e12
    odf["peak_gbps"] = opb / 1e9
    ohf = counted[op_rows] & (nk[op_rows] > 0)
    ohb = ohf & (oc.bytes[op_rows] >= 0)
    r = _rates(af[op_rows], ohf, ab[op_rows], ohb, gpu_ns[op_rows], opf, opb, oc.collective[op_rows])
    for k_, v in r.items():
        odf[k_] = _obj(v) if k_ == "bound" else v
    pr = np.flatnonzero(counted & isin_obj(oc.family, _COMPUTE_FAMILIES))
    op_args = dict(zip(c.eid[pr].tolist(), c.args[pr].tolist()))
    pr = pr[oc.problem[pr] != None]  # noqa: E711
    problems = dict(zip(c.eid[pr].tolist(), oc.problem[pr].tolist()))
    return RooflineResult(kdf, odf, devices, dtype, device, dict(g.get("source") or {}), problems, op_args)


# --------------------------------------------------------------------------- derived views
def _r(x: Any, nd: int = 4) -> float | None:
    if x is None:
        return None
    try:
        xf = float(x)
    except (TypeError, ValueError):
        return None
    if not np.isfinite(xf):
        return None
    return round(xf, nd)


def augment_args(res: RooflineResult) -> dict[int, dict[str, Any]]:
    """Extra args per event id for :func:`opgraph.export.chrome.write_trace`.

    On activities with a model and on counted ops: ``kernel_flop`` (int), ``kernel_num_gb``
    (GB = 1e9 bytes), ``achieved_tflops``, ``achieved_gbps``, ``pct_peak_flops``,
    ``pct_peak_bw``, ``arithmetic_intensity`` (FLOP/byte), ``roofline_bound``, plus
    ``flop_model`` (the rule) and ``roofline_dtype``. Ops that launch activities but have
    no model get ``flop_model: "none"``. Values that are unknown are left out.
    """
    out: dict[int, dict[str, Any]] = {}
    cols = ("achieved_tflops", "achieved_gbps", "pct_peak_flops", "pct_peak_bw", "arithmetic_intensity")

    def emit(df: pd.DataFrame, flops_col: str, bytes_col: str, mask: np.ndarray) -> None:
        sub = df[mask]
        if not len(sub):
            return
        eids = sub["eid"].to_numpy().tolist()
        fl = sub[flops_col].to_numpy(dtype=object)
        by = sub[bytes_col].to_numpy(dtype=object)
        if bytes_col == "attributed_bytes":
            bk = sub["bytes"].notna().to_numpy()
        else:
            bk = sub[bytes_col].notna().to_numpy()
        vals = {k: np.round(sub[k].to_numpy(dtype=float), 4) for k in cols}
        bound = sub["bound"].to_numpy(dtype=object)
        model = sub["model"].to_numpy(dtype=object)
        dt = sub["dtype"].to_numpy(dtype=object)
        for j, e in enumerate(eids):
            d: dict[str, Any] = {"kernel_flop": int(fl[j]) if fl[j] is not pd.NA else 0}
            if bk[j]:
                d["kernel_num_gb"] = float(by[j]) / 1e9
            for k in cols:
                v = vals[k][j]
                if np.isfinite(v):
                    d[k] = float(v)
            if bound[j] is not None:
                d["roofline_bound"] = bound[j]
            d["flop_model"] = model[j]
            if dt[j] is not None:
                d["roofline_dtype"] = dt[j]
            out[int(e)] = d

    k = res.kernels
    emit(k, "flops", "bytes", k["model"].notna().to_numpy())
    o = res.ops
    emit(o, "attributed_flops", "attributed_bytes", (o["counted"] & (o["kernels"] > 0)).to_numpy())
    host_only = (o["counted"] & (o["kernels"] == 0)).to_numpy()
    for e, f, b, mdl, dt in zip(o["eid"][host_only].tolist(), o["flops"][host_only].tolist(),
                                o["bytes"][host_only].tolist(), o["model"][host_only].tolist(),
                                o["dtype"][host_only].tolist()):
        d = {"kernel_flop": int(f), "flop_model": mdl}
        if b is not pd.NA and b is not None:
            d["kernel_num_gb"] = int(b) / 1e9
        if dt is not None:
            d["roofline_dtype"] = dt
        out[int(e)] = d
    unmod = (o["model"].isna() & (o["kernels"] > 0)).to_numpy()
    for e in o["eid"][unmod].tolist():
        out.setdefault(int(e), {"flop_model": "none"})
    return out


def summarize(res: RooflineResult) -> dict[str, Any]:
    """Coverage and totals (JSON-ready; times in µs)."""
    k = res.kernels
    kern = k[k["kind"] == "kernel"]
    t_all = int(kern["dur_ns"].sum())
    modelled = kern["model"].notna()
    t_mod = int(kern.loc[modelled, "dur_ns"].sum())
    carrying = kern["flops"].fillna(0).to_numpy() > 0
    t_carry = int(kern.loc[carrying, "dur_ns"].sum())
    fl = k["flops"].fillna(0).to_numpy()
    by = k["bytes"].fillna(0).to_numpy()
    # the dtype matters for the FLOP peak only
    dtype_unknown = k["model"].notna() & k["dtype"].isna() & (k["flops"].fillna(0) > 0)
    o = res.ops
    counted = o["counted"].to_numpy()
    with_k = (o["kernels"] > 0).to_numpy()
    no_model = o["model"].isna().to_numpy() & with_k
    unowned = k["model"].isna()
    mod_time = int(k.loc[k["model"].notna(), "dur_ns"].sum())
    t_launched = int(kern.loc[(kern["launcher_eid"] >= 0) | kern["model"].notna(), "dur_ns"].sum())
    return {
        "activities": int(len(k)),
        "kernels": int(len(kern)),
        "kernel_time_us": t_all / 1e3,
        "modelled_kernels": int(modelled.sum()),
        "modelled_kernel_time_us": t_mod / 1e3,
        "coverage_time_pct": (100.0 * t_mod / t_all) if t_all else None,
        "coverage_count_pct": (100.0 * float(modelled.sum()) / len(kern)) if len(kern) else None,
        "coverage_launched_time_pct": (100.0 * t_mod / t_launched) if t_launched else None,
        "flop_kernel_time_pct": (100.0 * t_carry / t_all) if t_all else None,
        "flops_total": int(fl.sum()),
        "bytes_total": int(by.sum()),
        "achieved_tflops": (float(fl.sum()) / mod_time / 1e3) if mod_time else None,
        "achieved_gbps": (float(by.sum()) / mod_time) if mod_time else None,
        "counted_ops": int(counted.sum()),
        "op_flops_total": int(o.loc[counted, "flops"].fillna(0).sum()),
        "op_flops_without_activities": int(o.loc[counted & ~with_k, "flops"].fillna(0).sum()),
        "no_model_ops": int(no_model.sum()),
        "no_model_op_names": int(o.loc[no_model, "name"].nunique()),
        "no_model_activities": int(unowned.sum()),
        "no_model_time_us": int(k.loc[unowned, "dur_ns"].sum()) / 1e3,
        "unlaunched_activities": int(((k["launcher_eid"] < 0) & unowned).sum()),
        "unknown_dtype_activities": int(dtype_unknown.sum()),
        "unknown_dtype_time_us": int(k.loc[dtype_unknown, "dur_ns"].sum()) / 1e3,
    }


def _weighted_pct(flops: np.ndarray, dur_s: np.ndarray, peak: np.ndarray) -> float | None:
    m = np.isfinite(peak) & (peak > 0) & np.isfinite(flops)
    den = float((dur_s[m] * peak[m]).sum())
    return 100.0 * float(flops[m].sum()) / den if den > 0 else None


def group_table(res: RooflineResult, by: str = "kernel") -> pd.DataFrame:
    """The report table: one row per kernel name (``by="kernel"``) or op name (``"op"``).

    Columns: ``name count total_us mean_us flops bytes tflops gbps pct_peak_flops
    pct_peak_bw arithmetic_intensity bound modelled model dtype`` and ``kind``/``op``
    (kernel rows: the kind and the op owning most of the time) or ``calls``/``kernels``
    (op rows). Rates are totals over the modelled instances (Σ FLOPs / Σ time); % of peak is
    Σ FLOPs / Σ (time × peak), i.e. time-weighted; ``bound`` is the bound of the most time.
    Op rows cover the ops that launch activities: counted ops, and ops without a model
    (``model`` null). Sorted by total time, descending."""
    if by == "kernel":
        df = res.kernels.copy()
        df["_key"] = df["name"].fillna("")
        df["_calls"] = 1
        dur = df["dur_ns"].to_numpy()
        peak_f = df["peak_tflops"].to_numpy() * 1e12
        peak_b = df["peak_gbps"].to_numpy() * 1e9
        flops = df["flops"].to_numpy(dtype=float, na_value=np.nan)
        nbytes = df["bytes"].to_numpy(dtype=float, na_value=np.nan)
        coll = df["collective"].to_numpy()
    elif by == "op":
        df = res.ops[res.ops["kernels"] > 0].copy()
        df = df[df["counted"] | df["model"].isna()]
        df["_key"] = df["name"].fillna("")
        df["_calls"] = 1
        dur = df["gpu_ns"].to_numpy()
        peak_f = df["peak_tflops"].to_numpy() * 1e12
        peak_b = df["peak_gbps"].to_numpy() * 1e9
        flops = np.where(df["model"].notna(), df["attributed_flops"].to_numpy(dtype=float), np.nan)
        nbytes = np.where(df["bytes"].notna(), df["attributed_bytes"].to_numpy(dtype=float), np.nan)
        coll = df["collective"].to_numpy()
    else:
        raise ValueError(f"by must be 'kernel' or 'op', not {by!r}")
    cols = ["name", "count", "total_us", "mean_us", "flops", "bytes", "tflops", "gbps", "pct_peak_flops",
            "pct_peak_bw", "arithmetic_intensity", "bound", "modelled", "model", "dtype"]
    cols += ["kind", "op"] if by == "kernel" else ["calls", "kernels"]
    if not len(df):
        return pd.DataFrame(columns=cols)
    dur_s = dur.astype(float) * 1e-9
    # exact integer totals (float sums lose FLOPs beyond 2**53)
    if by == "kernel":
        fi = df["flops"].fillna(0).to_numpy(dtype=np.int64)
        bi = df["bytes"].fillna(0).to_numpy(dtype=np.int64)
    else:
        fi = np.where(df["model"].notna(), df["attributed_flops"].to_numpy(dtype=np.int64), 0)
        bi = np.where(df["bytes"].notna(), df["attributed_bytes"].to_numpy(dtype=np.int64), 0)
    df = df.assign(_dur=dur, _durs=dur_s, _f=flops, _b=nbytes, _fi=fi, _bi=bi, _pf=peak_f, _pb=peak_b, _coll=coll)
    rows = []
    for key, g in df.groupby("_key", sort=False):
        f = g["_f"].to_numpy()
        b = g["_b"].to_numpy()
        d = g["_dur"].to_numpy()
        ds = g["_durs"].to_numpy()
        hf = np.isfinite(f)
        hb = np.isfinite(b)
        tf_time = d[hf].sum()
        tb_time = d[hb].sum()
        tot = int(d.sum())
        fsum = int(g["_fi"].to_numpy()[hf].sum()) if hf.any() else None
        bsum = int(g["_bi"].to_numpy()[hb].sum()) if hb.any() else None
        bmask = g["bound"].notna().to_numpy()
        bound = None
        if bmask.any():
            bt = pd.Series(d[bmask]).groupby(g["bound"].to_numpy()[bmask]).sum()
            bound = str(bt.idxmax())
        mm = g["model"].notna().to_numpy()
        model = None
        if mm.any():
            mt = pd.Series(d[mm]).groupby(g["model"].to_numpy()[mm]).sum()
            model = str(mt.idxmax())
        dm = g["dtype"].notna().to_numpy()
        dtype = None
        if dm.any():
            dt = pd.Series(d[dm]).groupby(g["dtype"].to_numpy()[dm]).sum()
            dtype = str(dt.idxmax())
        notc = ~g["_coll"].to_numpy().astype(bool)
        row = {
            "name": key, "count": int(len(g)), "total_us": tot / 1e3, "mean_us": tot / 1e3 / len(g),
            "flops": fsum, "bytes": bsum,
            "tflops": (fsum / tf_time / 1e3) if fsum is not None and tf_time > 0 else None,
            "gbps": (bsum / tb_time) if bsum is not None and tb_time > 0 else None,
            "pct_peak_flops": _weighted_pct(np.where(hf, f, np.nan), ds, g["_pf"].to_numpy()) if hf.any() else None,
            "pct_peak_bw": _weighted_pct(np.where(hb & notc, b, np.nan), ds, g["_pb"].to_numpy())
            if (hb & notc).any() else None,
            "arithmetic_intensity": (fsum / bsum) if fsum is not None and bsum else None,
            "bound": bound, "modelled": int(mm.sum()), "model": model, "dtype": dtype,
        }
        if by == "kernel":
            row["kind"] = str(g["kind"].iloc[0])
            om = g["op_name"].notna().to_numpy()
            lm = g["launcher_name"].notna().to_numpy()
            if om.any():
                row["op"] = str(pd.Series(d[om]).groupby(g["op_name"].to_numpy()[om]).sum().idxmax())
            elif lm.any():
                row["op"] = str(pd.Series(d[lm]).groupby(g["launcher_name"].to_numpy()[lm]).sum().idxmax())
            else:
                row["op"] = None
        else:
            row["calls"] = int(len(g))
            row["kernels"] = int(g["kernels"].sum())
            row["count"] = row["calls"]
        rows.append(row)
    out = pd.DataFrame(rows, columns=cols)
    for c_ in ("flops", "bytes"):
        out[c_] = out[c_].astype("Int64")
    _objectify(out, ("name", "bound", "model", "dtype", "kind", "op"))
    return out.sort_values(["total_us", "name"], ascending=[False, True], kind="stable").reset_index(drop=True)


def no_model_table(res: RooflineResult) -> pd.DataFrame:
    """Ops that launch activities but have no model: ``name calls activities time_us``,
    by GPU time (activities with no launching op at all are one row named ``(no op)``)."""
    k = res.kernels
    um = k[k["model"].isna()]
    if not len(um):
        return pd.DataFrame(columns=["name", "calls", "activities", "time_us"])
    nm = um["launcher_name"].fillna("(no op)")
    g = um.assign(_n=nm).groupby("_n", sort=False).agg(
        calls=("launcher_eid", lambda s: int(s[s >= 0].nunique())), activities=("eid", "size"),
        time_ns=("dur_ns", "sum"))
    g = g.reset_index().rename(columns={"_n": "name"})
    _objectify(g, ("name",))
    g["time_us"] = g["time_ns"] / 1e3
    return g.drop(columns="time_ns").sort_values(["time_us", "name"], ascending=[False, True]).reset_index(drop=True)


def _json_val(v: Any) -> Any:
    if v is None or v is pd.NA:
        return None
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        return _r(v, 6)
    if isinstance(v, (np.bool_,)):
        return bool(v)
    return v


def report_doc(res: RooflineResult, by: str = "kernel", top: int | None = None) -> dict[str, Any]:
    """The ``opgraph report --json`` document (schemas/report.schema.json)."""
    tab = group_table(res, by)
    if top is not None:
        tab = tab.head(top)
    rows = [{k: _json_val(v) for k, v in r.items()} for r in tab.to_dict("records")]
    nm = no_model_table(res)
    return {
        "schema_version": 1,
        "source": dict(res.source),
        "by": by,
        "default_dtype": res.default_dtype,
        "device_override": res.device_override,
        "devices": [d.to_dict() for d in res.devices.values()],
        "summary": {k: _json_val(v) for k, v in summarize(res).items()},
        "no_model": [{k: _json_val(v) for k, v in r.items()} for r in nm.to_dict("records")],
        "rows": rows,
    }
