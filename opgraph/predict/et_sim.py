"""ET-driven end-to-end prediction (issue 8; the seed's §3.2 simulation, done right).

Input: a PyTorch execution trace (ops with shapes, no timings; any schema
:mod:`opgraph.ingest.et` reads), an overheads JSON of a profiled run
(:mod:`opgraph.analysis.overheads`: T1-T5, per op and optionally per shapes), and kernel
models (:mod:`opgraph.predict.kernel_models`: a measured lookup table, the analytic
embedding models, a calibrated roofline).

The walk (per iteration: each ``ProfilerStep#N`` subtree of the ET, else the whole ET):

* **Ops** are the ET's *top-level operators*, chosen exactly as the overheads analysis
  chooses them in a Kineto trace: the first CPU op (not a label / module marker / thread
  root) on every path from the root; subtrees under a data-loading marker (``DataLoader``)
  are excluded, and their time is added once per data-loading range as the profile's mean
  data-loading time per step (``data_loading="profile"``; ``"skip"`` leaves it out, as the
  seed did). Ops are walked in id order (ids are given at op start across threads, so the
  autograd thread's ops interleave with the main thread's as they ran).
* **CPU time** of an op: ``T1`` before it (not before an iteration's first op), then for
  an op that launches: ``T2 + Σ launch-call cost + T5 × (launches − 1) + T3``; for one that
  does not: its ``whole`` duration. The shape-level statistics are used when the overheads
  JSON has them for the op's shapes. Seed bugs fixed (seed-algorithms §8): no op adds T2/T3
  twice, every op's GPU work counts (not only a CONSIDER list), the launch list is the op's
  measured most common sequence (not the first occurrence), a launch-less op's time is its
  whole duration over all occurrences (not the last one).
* **Launch calls**: a non-blocking call costs the API's own time (from the lookup; T4 of the
  overheads when absent). A blocking call (``cudaStreamSynchronize``,
  ``cudaDeviceSynchronize``, or a call the profile saw wait: a pageable D2H copy in
  ``aten::item`` / ``.to("cpu")``) returns at ``max(start + own time, end of the awaited
  device work + return latency)``: the CPU waits for the GPU.
* **GPU**: each device activity starts at ``max(stream front, end of its launch call,
  ready time of the op's input tensors)`` (the replay's launch, stream-order and data
  rules), plus, for a collective, the front of the compute stream at launch (c10d makes the
  NCCL stream wait for the current stream). Streams are the profile's; ops modelled
  without a measured structure run on the profile's compute stream (collectives on its
  comm stream). An op's output tensors (and a collective's in-place inputs) are ready when
  its last activity ends.
* **Kernel models**, in order: exact lookup (op name + shapes) -> analytic embedding (TBE
  forward/backward) -> calibrated roofline -> lookup by op name (other shapes) ->
  unmodelled (counted). Ops that launch nothing in the profile are ``cpu_only``.

Result per iteration: predicted E2E (first op start to the later of CPU end and last
activity end), GPU active time (union of activity intervals), CPU time, ops by model
source, and a row per op. Times are µs (floats) throughout this module.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np
import pandas as pd

from opgraph.ingest.source import read_json
from opgraph.intervals import union_length
from opgraph.errors import OpgraphInputError
from opgraph.ingest.steps import STEP_RE
from opgraph.predict.kernel_models import (
    Activity, KernelLookup, LookupEntry, MicrobenchProfile, Peaks, RooflineCalibration, embedding_backward_us,
    embedding_forward_us, op_class, read_json_file, shape_key, tbe_backward_key, tbe_kind, tbe_params,
)

#: Launch APIs that always make the CPU wait for the device.
SYNC_APIS = ("cudaStreamSynchronize", "cudaDeviceSynchronize", "hipStreamSynchronize", "hipDeviceSynchronize")
#: Model sources, in the order they are tried.
SOURCES = ("lookup", "analytic", "roofline", "lookup_name", "cpu_only", "unmodelled")


# --------------------------------------------------------------------------- ET ops
@dataclass
class EtOp:
    """One top-level ET operator: ``id`` (execution order), ``name``, ``tid``, ``shapes``
    (canonical key), the raw input shapes / values / types and output shapes, and its
    tensor keys (inputs, outputs)."""

    id: int
    name: str
    tid: int
    parent: int
    shapes: str
    in_shapes: list
    in_values: list
    in_types: list
    out_shapes: list
    inputs: list
    outputs: list
    step: int
    bwd_input_shape: list | None = None


@dataclass
class EtWalk:
    """The ops an ET simulation walks, per iteration, with the data-loading ranges
    (``dl_before[i]``: data-loading ranges that start before op ``i`` and after op
    ``i - 1``; ``dl_after``: those after the last op) and counts of what was left out."""

    ops: list[EtOp]
    dl_before: list[int]
    steps: list[int]
    n_nodes: int
    n_labels: int
    n_data_loading_ops: int
    schema: str
    #: data-loading ranges after the last op (counted at the end of the last iteration)
    dl_after: int = 0


def _tensor_key(v: Any, t: Any) -> list[tuple[str, int]]:
    from opgraph.ingest.et import tensor_keys

    out = []
    for tid_, sid, _ in tensor_keys([v], [t]):
        out.append(("s", sid) if sid >= 0 else ("t", tid_))
    return out


def _keys(values: list, types: list) -> list[tuple[str, int]]:
    out: list[tuple[str, int]] = []
    for v, t in zip(values, types):
        out.extend(_tensor_key(v, t))
    return out


def et_ops(path: str, doc: Any, module_markers: tuple[str, ...] | None = None,
           data_markers: tuple[str, ...] = ("DataLoader",)) -> EtWalk:
    """The top-level operators of an ET document (see the module docstring)."""
    from opgraph.analysis.op_hierarchy import DEFAULT_MODULE_MARKERS
    from opgraph.ingest.et import node_kind, normalise

    markers = tuple(module_markers if module_markers is not None else DEFAULT_MODULE_MARKERS)
    nodes, top = normalise(path, doc)
    if not nodes:
        raise OpgraphInputError(path, "execution trace has no nodes")
    by_id = {n.id: n for n in nodes}
    order = sorted(nodes, key=lambda n: n.id)
    state: dict[int, tuple[int, bool, int]] = {}   # id -> (top op id or -1, in data loading, step)
    ops: list[EtOp] = []
    dl_roots: list[int] = []
    n_labels = n_dl = 0
    kinds = {n.id: node_kind(n) for n in nodes}
    for n in order:
        p = by_id.get(n.parent) if n.parent != n.id else None
        ptop, pdl, pstep = state.get(p.id, (-1, False, -1)) if p is not None else (-1, False, -1)
        m = STEP_RE.match(n.name)
        step = int(m.group(1)) if m else pstep
        dl = pdl or any(d in n.name for d in data_markers)
        if dl and not pdl:
            dl_roots.append(n.id)
        k = kinds[n.id]
        is_cand = k == "cpu_op" and not n.name.startswith(markers)
        if ptop >= 0:
            state[n.id] = (ptop, dl, step)
            continue
        if is_cand and not dl:
            state[n.id] = (n.id, dl, step)
            ops.append(EtOp(n.id, n.name, n.tid, n.parent, shape_key(n.in_shapes), n.in_shapes, n.in_values,
                            n.in_types, n.out_shapes, _keys(n.in_values, n.in_types), _keys(n.out_values, n.out_types),
                            step))
        else:
            if is_cand and dl:
                n_dl += 1
                state[n.id] = (n.id, dl, step)
            else:
                n_labels += k == "annotation"
                state[n.id] = (-1, dl, step)
    # TBE backward nodes: the grad-output shape of their autograd node (child) pairs them
    # with their forward by shape (seed §8 item 5: not by a LIFO stack)
    children: dict[int, list] = {}
    for n in nodes:
        children.setdefault(n.parent, []).append(n)
    for o in ops:
        if tbe_backward_key(o.name):
            for c in children.get(o.id, []):
                if tbe_backward_key(c.name) and c.in_shapes:
                    o.bwd_input_shape = c.in_shapes[0]
                    break
    dl_before = []
    j = 0
    dl_sorted = sorted(dl_roots)
    for o in ops:
        c = 0
        while j < len(dl_sorted) and dl_sorted[j] < o.id:
            c += 1
            j += 1
        dl_before.append(c)
    steps = sorted({o.step for o in ops})
    return EtWalk(ops, dl_before, steps, len(nodes), n_labels, n_dl, str(top.get("schema", "")),
                  len(dl_sorted) - j)


def load_et(path: str) -> EtWalk:
    """Read an ET file (``.json`` / ``.json.gz``) and select its top-level ops; bad input is
    an :class:`OpgraphInputError` naming the file."""
    doc = read_json(path, "execution trace")
    return et_ops(path, doc)


# --------------------------------------------------------------------------- overheads
@dataclass
class Overheads:
    """The overheads JSON (schemas/overheads.schema.json), µs."""

    doc: dict[str, Any]

    @property
    def t1(self) -> float:
        t = self.doc.get("t1")
        return float(t["mean"]) if t else 0.0

    def t4(self, api: str) -> float | None:
        t = self.doc["t4"].get(api)
        return float(t["mean"]) if t else None

    def entry(self, op: str) -> Mapping[str, Any] | None:
        return self.doc["ops"].get(op)

    def stat(self, op: str, kind: str, shapes: str) -> float | None:
        """Mean of ``kind`` (t2/t3/t5/whole) for ``op``: the shape-level value when the
        JSON has one for ``shapes``, else the op-level one (for ``whole``, the flat ``t5``
        of older files). ``None`` when absent."""
        e = self.entry(op)
        if e is not None:
            sh = (e.get("shapes") or {})
            se = sh.get(shapes) or sh.get("-" if shapes == "[]" else shapes)
            if se and se.get(kind):
                return float(se[kind]["mean"])
            if e.get(kind):
                return float(e[kind]["mean"])
            return None
        if kind == "whole" and op in self.doc.get("t5", {}) and op not in self.doc.get("launches", {}):
            return float(self.doc["t5"][op]["mean"])
        top = self.doc.get(kind, {})
        return float(top[op]["mean"]) if isinstance(top, dict) and op in top else None

    def launches(self, op: str) -> list[str]:
        return list(self.doc.get("launches", {}).get(op) or [])

    def prefers_launching(self, op: str) -> bool:
        e = self.entry(op)
        if e is None:
            return bool(self.launches(op))
        return e["launching"] >= e["whole_count"] and e["launching"] > 0

    @property
    def data_loading_per_step_us(self) -> float:
        w = self.doc["window"]
        return float(w["data_loading_us"]) / max(int(w["steps"]), 1)


def load_overheads(path: str) -> Overheads:
    """An overheads JSON (validated by schemas/overheads.schema.json)."""
    return Overheads(read_json_file(path, "overheads.schema.json", "overheads"))


# --------------------------------------------------------------------------- models
@dataclass
class KernelModels:
    """What the simulator times kernels with: the lookup table, the roofline calibration,
    the target device's microbench profile (analytic models) and peaks (roofline), and
    the analytic embedding options."""

    lookup: KernelLookup | None = None
    calibration: RooflineCalibration | None = None
    hw: MicrobenchProfile | None = None
    peaks: Peaks | None = None
    hit_rate: str = "all_rows"
    compute_stream: int = 7
    comm_stream: int = 7

    def __post_init__(self) -> None:
        if self.lookup is not None:
            self.compute_stream = self.lookup.compute_stream
            self.comm_stream = self.lookup.comm_stream


@dataclass
class _Slot:
    api: str
    blocking: bool


@dataclass
class _Plan:
    """How one op is simulated: its launch calls and activities (µs durations)."""

    launches: list[_Slot]
    acts: list[Activity]
    source: str


def _et_args(o: EtOp) -> dict[str, Any]:
    from opgraph.ingest.et import kineto_type

    conc = []
    for v, t in zip(o.in_values, o.in_types):
        if isinstance(t, str) and ("Tensor" in t or t.startswith("GenericList")):
            conc.append("")
        elif isinstance(v, bool):
            conc.append("True" if v else "False")
        elif isinstance(v, (int, float)):
            conc.append(str(v))
        else:
            conc.append("" if v is None else str(v))
    return {"Input Dims": o.in_shapes, "Input type": [kineto_type(t) for t in o.in_types],
            "Concrete Inputs": conc, "Output Dims": o.out_shapes}


def _scaled(entry: LookupEntry, total_us: float, collective: bool | None) -> list[Activity]:
    """The entry's activities with the selected ones (collective or not; all when None)
    rescaled so that they sum to ``total_us``."""
    sel = [a for a in entry.activities if collective is None or a.collective == collective]
    s = sum(a.mean_us for a in sel)
    out = []
    for a in entry.activities:
        if a in sel:
            d = total_us * (a.mean_us / s if s > 0 else 1.0 / len(sel))
            out.append(Activity(a.slot, a.api, a.name, a.kind, a.stream, a.collective, d, 0.0, 0))
        else:
            out.append(a)
    return out


def _default_slots(entry: LookupEntry | None, ov: Overheads, op: str) -> list[_Slot]:
    if entry is not None:
        return [_Slot(a, b) for a, b in zip(entry.launches, entry.blocking)]
    return [_Slot(a, a in SYNC_APIS) for a in ov.launches(op)]


def plan_op(o: EtOp, ov: Overheads, km: KernelModels, tbe_fwd: dict[tuple[str, str], Any]) -> _Plan:
    """Choose the kernel model of one ET op (lookup -> analytic -> roofline -> lookup by
    name -> unmodelled) and lay out its launch calls and activities."""
    lk = km.lookup
    exact = lk.entries.get((o.name, o.shapes)) if lk is not None else None
    if exact is not None:
        return _Plan(_default_slots(exact, ov, o.name), list(exact.activities), "lookup" if exact.activities else "cpu_only")
    named = lk.by_name.get(o.name) if lk is not None else None
    slots = _default_slots(named, ov, o.name)
    launches_gpu = bool(named.activities) if named is not None else bool(ov.launches(o.name))
    if not launches_gpu and not slots:
        return _Plan([], [], "cpu_only")
    # analytic embedding models
    if km.hw is not None:
        kind = tbe_kind(o.name)
        t_us = None
        if kind is not None:
            p = tbe_params(o.name, o.in_shapes, o.in_values)
            if p is not None:
                t_us = embedding_forward_us(p.B, p.E, p.T, p.L, p.D, p.rows_per_block, km.hw, hit_rate=km.hit_rate)
                if o.out_shapes:
                    tbe_fwd[(kind[1], str(o.out_shapes[0]))] = p
        bkey = tbe_backward_key(o.name)
        if bkey is not None and o.bwd_input_shape is not None:
            p = tbe_fwd.get((bkey, str(o.bwd_input_shape)))
            if p is not None:
                t_us = embedding_backward_us(p.B, p.T, p.L, p.D, km.hw)
        if t_us is not None:
            return _Plan(slots, _place(named, slots, t_us, km, "embedding", km.compute_stream), "analytic")
    # calibrated roofline
    if km.calibration is not None:
        from opgraph.analysis.flops import op_cost_from_args, op_family

        c = op_cost_from_args(o.name, _et_args(o))
        if c is not None:
            cls = op_class(o.name, op_family(o.name) or c.model)
            t_us = km.calibration.predict_us(float(c.flops) or None, None if c.bytes is None else float(c.bytes),
                                             c.dtype, cls, km.peaks)
            if t_us is not None:
                stream = km.comm_stream if cls == "comm" else km.compute_stream
                return _Plan(slots, _place(named, slots, t_us, km, cls, stream), "roofline")
    if named is not None and named.activities:
        return _Plan(slots, list(named.activities), "lookup_name")
    return _Plan(slots, [], "unmodelled" if launches_gpu or slots else "cpu_only")


def _place(named: LookupEntry | None, slots: list[_Slot], t_us: float, km: KernelModels, cls: str,
           stream: int) -> list[Activity]:
    """Activities for a modelled total time: the named entry's structure rescaled (only its
    collective part for a comm op), else one kernel on the first launch slot."""
    coll = cls == "comm"
    if named is not None and any(a.collective == coll for a in named.activities):
        return _scaled(named, t_us, coll)
    slot = next((i for i, s in enumerate(slots) if s.api not in SYNC_APIS), -1)
    api = slots[slot].api if slot >= 0 else ""
    return [Activity(slot, api, f"<{cls} model>", "kernel", stream, coll, t_us, 0.0, 0)]


# --------------------------------------------------------------------------- simulation
@dataclass
class EtPrediction:
    """Result of :func:`simulate_et` (µs). ``rows``: one per op (DataFrame), ``iterations``:
    one dict per iteration."""

    rows: pd.DataFrame
    iterations: list[dict[str, Any]]
    inputs: dict[str, Any] = field(default_factory=dict)

    def to_dict(self, with_ops: bool = True) -> dict[str, Any]:
        """The ``--json`` document (schemas/predict-et.schema.json)."""
        it = self.iterations
        e2e = [x["e2e_us"] for x in it]
        doc: dict[str, Any] = {
            "schema_version": 1, "mode": "et", "unit": "us", "inputs": self.inputs,
            "iterations": it,
            "summary": {"iterations": len(it), "e2e_us_mean": float(np.mean(e2e)) if e2e else 0.0,
                        "gpu_active_us_mean": float(np.mean([x["gpu_active_us"] for x in it])) if it else 0.0,
                        "cpu_us_mean": float(np.mean([x["cpu_us"] for x in it])) if it else 0.0,
                        "ops": int(len(self.rows)),
                        "ops_by_source": {s: int((self.rows["gpu_source"] == s).sum()) for s in SOURCES},
                        "ops_without_cpu_model": int((self.rows["cpu_source"] == "none").sum())},
        }
        if with_ops:
            doc["ops"] = [{k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in r.items()}
                          for r in self.rows.to_dict("records")]
        return doc


def simulate_et(walk: EtWalk, ov: Overheads, km: KernelModels, data_loading: str = "profile",
                gap_mode: str = "measured") -> EtPrediction:
    """Simulate the CPU and GPU timelines of an ET's iterations (see the module docstring)."""
    if data_loading not in ("profile", "skip"):
        raise ValueError(f"data_loading must be 'profile' or 'skip', not {data_loading!r}")
    if gap_mode not in ("measured", "t1"):
        raise ValueError(f"gap_mode must be 'measured' or 't1', not {gap_mode!r}")
    dl_us = 0.0
    if data_loading == "profile":
        dl_us = km.lookup.data_loading_us if km.lookup is not None else ov.data_loading_per_step_us
    lk = km.lookup
    rows: list[dict[str, Any]] = []
    iters: list[dict[str, Any]] = []
    by_step: dict[int, list[int]] = {}
    for i, o in enumerate(walk.ops):
        by_step.setdefault(o.step, []).append(i)
    tbe_fwd: dict[tuple[str, str], Any] = {}
    for step, idx in sorted(by_step.items()):
        cpu = 0.0
        front: dict[int, float] = {}
        ready: dict[tuple[str, int], float] = {}
        a_start: list[float] = []
        a_end: list[float] = []
        srcs: Counter = Counter()
        dl_total = 0.0
        for j, i in enumerate(idx):
            o = walk.ops[i]
            if walk.dl_before[i]:
                cpu += dl_us * walk.dl_before[i]
                dl_total += dl_us * walk.dl_before[i]
            if j > 0:
                cpu += _gap_us(o, ov, lk, gap_mode)
            start = cpu
            plan = plan_op(o, ov, km, tbe_fwd)
            srcs[plan.source] += 1
            has_ov = ov.entry(o.name) is not None or o.name in ov.doc.get("t5", {})
            launching = bool(plan.launches) and (plan.source != "cpu_only" or ov.prefers_launching(o.name))
            if not launching:
                w = ov.stat(o.name, "whole", o.shapes)
                if w is None and plan.launches:     # launched in the lookup, never whole in the profile
                    w = (ov.stat(o.name, "t2", o.shapes) or 0.0) + (ov.stat(o.name, "t3", o.shapes) or 0.0)
                cpu += w or 0.0
                cpu_src = "whole" if w is not None else "none"
                acts_done: list[tuple[float, float]] = []
            else:
                t2 = ov.stat(o.name, "t2", o.shapes)
                t3 = ov.stat(o.name, "t3", o.shapes)
                t5 = ov.stat(o.name, "t5", o.shapes)
                cpu_src = "launches" if has_ov and t2 is not None else "none"
                cpu += t2 or 0.0
                in_ready = max((ready.get(k, 0.0) for k in o.inputs), default=0.0)
                launch_end: dict[int, float] = {}
                acts_done = []
                by_slot: dict[int, list[Activity]] = {}
                for a in plan.acts:
                    by_slot.setdefault(a.slot, []).append(a)
                last_stream = km.compute_stream

                def run(acts: list[Activity], t_launch: float) -> None:
                    nonlocal last_stream
                    for a in acts:
                        s = a.stream
                        st = max(front.get(s, 0.0), t_launch, in_ready)
                        if a.collective:
                            st = max(st, front.get(km.compute_stream, 0.0))
                        en = st + a.mean_us
                        front[s] = en
                        acts_done.append((st, en))
                        last_stream = s

                run(by_slot.get(-1, []), cpu)
                for k, sl in enumerate(plan.launches):
                    if k > 0:
                        cpu += t5 or 0.0
                    own = _own_us(sl.api, lk, ov)
                    mine = [a for a in by_slot.get(k, []) if a.api == sl.api or a.api == ""]
                    after = [a for a in by_slot.get(k, []) if not (a.api == sl.api or a.api == "")]
                    if sl.blocking:
                        run(mine, cpu + own)
                        awaited = (max((front.get(s, 0.0) for s in front), default=0.0)
                                   if sl.api.endswith("DeviceSynchronize") else front.get(last_stream, 0.0))
                        ret = lk.apis[sl.api].return_us if lk is not None and sl.api in lk.apis else 0.0
                        cpu = max(cpu + own, awaited + ret)
                    else:
                        cpu += own
                        run(mine, cpu)
                    launch_end[k] = cpu
                    run(after, cpu)
                cpu += t3 or 0.0
            if acts_done:
                done = max(e for _, e in acts_done)
                for k in o.outputs + (o.inputs if any(a.collective for a in plan.acts) else []):
                    ready[k] = max(ready.get(k, 0.0), done)
                a_start.extend(s for s, _ in acts_done)
                a_end.extend(e for _, e in acts_done)
            rows.append({"step": int(step), "id": o.id, "name": o.name, "tid": o.tid, "shapes": o.shapes,
                         "cpu_start_us": start, "cpu_end_us": cpu, "cpu_source": cpu_src,
                         "gpu_source": plan.source, "kernels": len(acts_done),
                         "gpu_us": float(sum(e - s for s, e in acts_done)),
                         "gpu_start_us": min((s for s, _ in acts_done), default=float("nan")),
                         "gpu_end_us": max((e for _, e in acts_done), default=float("nan"))})
        if walk.dl_after and idx[-1] == len(walk.ops) - 1:   # a DataLoader after the last op
            cpu += dl_us * walk.dl_after
            dl_total += dl_us * walk.dl_after
        gpu_end = max(a_end, default=0.0)
        iters.append({"step": int(step), "e2e_us": max(cpu, gpu_end), "cpu_us": cpu, "gpu_end_us": gpu_end,
                      "gpu_active_us": float(union_length(np.asarray(a_start, dtype=float), np.asarray(a_end, dtype=float))), "gpu_kernel_us": float(sum(np.subtract(a_end, a_start))),
                      "data_loading_us": dl_total, "ops": len(idx),
                      "ops_by_source": {s: int(srcs.get(s, 0)) for s in SOURCES}})
    return EtPrediction(pd.DataFrame(rows, columns=["step", "id", "name", "tid", "shapes", "cpu_start_us", "cpu_end_us",
                                                    "cpu_source", "gpu_source", "kernels", "gpu_us", "gpu_start_us",
                                                    "gpu_end_us"]), iters)


def _gap_us(o: EtOp, ov: Overheads, lk: KernelLookup | None, mode: str) -> float:
    """Host time before an op, µs: ``"t1"`` the overheads' T1 (the seed); ``"measured"``
    the lookup's mean gap before this op (name + shapes, else name), else T1."""
    if mode == "measured" and lk is not None:
        e = lk.entries.get((o.name, o.shapes))
        if e is None or e.gap_before_us is None:
            e = lk.by_name.get(o.name)
        if e is not None and e.gap_before_us is not None:
            return e.gap_before_us
    return ov.t1


def _own_us(api: str, lk: KernelLookup | None, ov: Overheads) -> float:
    """A launch call's own host time, µs: the lookup's (waits excluded), else T4."""
    if lk is not None and api in lk.apis:
        return lk.apis[api].own_us
    t = ov.t4(api)
    return t if t is not None else 0.0


# --------------------------------------------------------------------------- entry point
def resolve_device(name: str) -> tuple[MicrobenchProfile | None, Peaks]:
    """(microbench profile, peaks) of a ``--device`` name; ``ValueError`` listing the known
    names when neither table knows it."""
    from opgraph.devices.peaks import all_devices
    from opgraph.predict.kernel_models import device_peaks, microbench_profile, microbench_profiles

    prof = microbench_profile(name)
    pk = device_peaks(name)
    if pk is None:
        known = [p.name for p in microbench_profiles()] + [d.name for d in all_devices()]
        raise ValueError(f"unknown device {name!r}; known: " + ", ".join(known))
    return prof, pk


def predict_et(et_path: str, overheads_path: str, device: str, lookup_path: str | None = None,
               calibration_path: str | None = None, data_loading: str = "profile",
               hit_rate: str = "all_rows", gap_mode: str = "measured") -> EtPrediction:
    """Read the inputs, check them, and simulate (see :func:`simulate_et`). Bad input raises
    :class:`OpgraphInputError` naming the file or item."""
    from opgraph.predict.kernel_models import load_calibration, load_lookup

    try:
        prof, pk = resolve_device(device)
    except ValueError as e:
        raise OpgraphInputError("--device", str(e)) from None
    ov = load_overheads(overheads_path)
    lk = load_lookup(lookup_path) if lookup_path else None
    cal = load_calibration(calibration_path) if calibration_path else None
    walk = load_et(et_path)
    if not walk.ops:
        raise OpgraphInputError(et_path, "execution trace has no operators to simulate (only labels / data loading)")
    km = KernelModels(lookup=lk, calibration=cal, hw=prof, peaks=pk, hit_rate=hit_rate)
    res = simulate_et(walk, ov, km, data_loading, gap_mode)
    res.inputs = {"et": et_path, "et_schema": walk.schema, "overheads": overheads_path, "lookup": lookup_path,
                  "calibration": calibration_path, "device": pk.device,
                  "microbench_profile": prof.name if prof else None, "data_loading": data_loading,
                  "hit_rate": hit_rate, "gap_mode": gap_mode if lk is not None else "t1", "et_nodes": walk.n_nodes, "data_loading_ops_excluded": walk.n_data_loading_ops}
    return res
