"""Replay and what-if prediction on the typed graph (docs/predict.md).

```python
from opgraph.graph.io import load_any
from opgraph.predict import predict, parse_transforms

G = load_any("trace.json.gz")
res = predict(G)                                              # identity replay
res = predict(G, parse_transforms(scale_kernels=["gemm=0.5"], launch_overhead="2us"))
res.steps()                 # per step: measured and predicted time (ns)
res.predicted_graph()       # G with predicted ts/dur (read-only; shares edges with G)
res.to_dict()               # schemas/predict.schema.json
```
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from opgraph.model.arrays import GraphArrays
from opgraph.model.trace_graph import TraceGraph
from opgraph.intervals import union_intervals
from opgraph.analysis.critical_path.boundary_edges import CATEGORIES
from opgraph.analysis.critical_path.run_result import CriticalPathResult
from opgraph.analysis.critical_path.path import critical_path
from opgraph.predict.simulation import (
    NEVER, BoundaryModel, build_model, critical_dag, predicted_arrays, predicted_graph, simulate,
)
from opgraph.predict.whatif import Transform, apply, device_factors

if TYPE_CHECKING:
    import networkx as nx

__all__ = ['predict', 'PredictResult', 'makespan_change', 'MakespanChange']


def gpu_usage(a: GraphArrays, exclude: np.ndarray | None = None) -> dict[int, dict[str, int]]:
    """Per device: first activity start to last end (``span``), union of activity
    intervals (``busy``), ``idle`` = span − busy, ``activities`` (ns)."""
    act = a.is_activity.copy()
    if exclude is not None:
        act &= ~exclude
    out: dict[int, dict[str, int]] = {}
    idx = np.flatnonzero(act)
    for dev in np.unique(a.device[idx]).tolist():
        sel = idx[a.device[idx] == dev]
        ms, me = union_intervals(a.ts[sel], a.end[sel])
        span = int(me[-1] - ms[0])
        busy = int((me - ms).sum())
        out[int(dev)] = {"span": span, "busy": busy, "idle": span - busy, "activities": int(len(sel))}
    return out


def _merged(a: GraphArrays, exclude: np.ndarray | None = None) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Per device: the union of activity intervals as disjoint sorted (starts, ends) and
    the prefix sums of their lengths."""
    act = a.is_activity.copy()
    if exclude is not None:
        act &= ~exclude
    idx = np.flatnonzero(act)
    out = []
    for dev in np.unique(a.device[idx]).tolist():
        sel = idx[a.device[idx] == dev]
        m0, m1 = union_intervals(a.ts[sel], a.end[sel])
        out.append((m0, m1, np.concatenate([[0], np.cumsum(m1 - m0)])))
    return out


def _busy_in(merged: list[tuple[np.ndarray, np.ndarray, np.ndarray]], ws: int, we: int) -> int:
    """GPU busy time (summed over devices) inside ``[ws, we)``."""
    tot = 0
    for m0, m1, cs in merged:
        i = int(np.searchsorted(m1, ws, side="right"))
        j = int(np.searchsorted(m0, we, side="left"))
        if j <= i:
            continue
        tot += int(cs[j] - cs[i]) - max(0, ws - int(m0[i])) - max(0, int(m1[j - 1]) - we)
    return tot


def _makespan(a: GraphArrays, exclude: np.ndarray | None = None) -> tuple[int, int]:
    m = a.is_host | a.is_activity
    if exclude is not None:
        m &= ~exclude
    if not m.any():
        return 0, 0
    return int(a.ts[m].min()), int(a.end[m].max())


#: A makespan that moves by less than this fraction counts as unchanged (for the sign of
#: the summed-step speedup).
_SAME_MAKESPAN = 1e-3


def _own_step_times(steps: list[dict[str, Any]]) -> None:
    """Add each step's own time (µs), measured and predicted: its window clipped at the
    next step's start, so a step never stretches over the next step's work (device work
    queued behind the next step's host work is the next step's time); the last step keeps
    its window. Steps are taken in start order on each timeline."""
    for side, start, end in (("measured", "measured_start_us", "measured_end_us"),
                             ("predicted", "predicted_start_us", "predicted_end_us")):
        live = sorted((d for d in steps if d.get(start) is not None), key=lambda d: d[start])
        for d in steps:
            d[f"{side}_step_us"] = None
        for i, d in enumerate(live):
            stop = d[end] if i + 1 == len(live) else min(d[end], live[i + 1][start])
            d[f"{side}_step_us"] = max(0.0, stop - d[start])
    for d in steps:
        m, p = d["measured_step_us"], d["predicted_step_us"]
        d["step_delta_pct"] = (100.0 * (p - m) / m if m else 0.0) if p is not None else None


@dataclass
class PredictResult:
    """A replay (no transforms) or what-if prediction of one graph. Times in ns."""

    G: TraceGraph
    model: BoundaryModel
    transforms: list[Transform]
    arr_pred: GraphArrays
    removed: np.ndarray
    measured_cp: CriticalPathResult
    predicted_cp: CriticalPathResult
    gpu_measured: dict[int, dict[str, int]]
    gpu_predicted: dict[int, dict[str, int]]
    makespan_measured: tuple[int, int]
    makespan_predicted: tuple[int, int]
    device_report: dict[str, Any] | None = None
    timings: dict[str, float] = field(default_factory=dict)
    _graph: nx.DiGraph | None = None

    @property
    def mode(self) -> str:
        return "whatif" if any(t.kind != "typical_latencies" for t in self.transforms) else "replay"

    def predicted_graph(self) -> nx.DiGraph:
        """``G`` with predicted ``ts``/``dur`` on every node (removed events: zero duration
        and ``removed=True``). Shares edges and ``graph`` with ``G``: read-only."""
        if self._graph is None:
            H = predicted_graph(self.G.to_networkx(), self.arr_pred)   # the networkx view, made here only
            if self.removed.any():
                for e in self.arr_pred.eid[self.removed].tolist():
                    H._node[e]["removed"] = True
            self._graph = H
        return self._graph

    def steps(self) -> list[dict[str, Any]]:
        """Per window: name, eid, measured and predicted span (ns), and both breakdowns."""
        pred = {(w.eid if w.eid is not None else ("#", i)): w for i, w in enumerate(self.predicted_cp.windows)}
        rows = []
        for i, w in enumerate(self.measured_cp.windows):
            p = pred.get(w.eid if w.eid is not None else ("#", i))
            rows.append({"name": w.name, "eid": w.eid, "measured": w, "predicted": p})
        return rows

    def step_errors(self) -> np.ndarray:
        """|predicted − measured| / measured per step with a nonzero measured span."""
        out = []
        for r in self.steps():
            m, p = r["measured"], r["predicted"]
            if p is not None and m.span_ns > 0:
                out.append(abs(p.span_ns - m.span_ns) / m.span_ns)
        return np.array(out, dtype=np.float64)

    def to_dict(self, with_path: bool = False) -> dict[str, Any]:
        """JSON-ready (µs), the shape of ``schemas/predict.schema.json``."""
        us = lambda ns: ns / 1000.0  # noqa: E731
        steps = []
        tot_m = tot_p = 0
        merged_m = _merged(self.model.arr)
        merged_p = _merged(self.arr_pred, self.removed)
        for r in self.steps():
            m, p = r["measured"], r["predicted"]
            d: dict[str, Any] = {"name": r["name"], "eid": r["eid"], "measured_us": us(m.span_ns)}
            if p is None:
                d.update({"predicted_us": None, "delta_us": None, "delta_pct": None})
            else:
                tot_m += m.span_ns
                tot_p += p.span_ns
                d.update({"predicted_us": us(p.span_ns), "delta_us": us(p.span_ns - m.span_ns),
                          "delta_pct": (100.0 * (p.span_ns - m.span_ns) / m.span_ns) if m.span_ns else 0.0,
                          "predicted_start_us": us(p.start_ns), "predicted_end_us": us(p.end_ns)})
            d["measured_start_us"] = us(m.start_ns)
            d["measured_end_us"] = us(m.end_ns)
            d["measured_gpu_busy_us"] = us(_busy_in(merged_m, m.start_ns, m.end_ns))
            if p is not None:
                d["predicted_gpu_busy_us"] = us(_busy_in(merged_p, p.start_ns, p.end_ns))
            mb = m.breakdown_ns
            d["measured_bound"] = m.bound
            d["measured_breakdown_us"] = {c: us(mb[c]) for c in CATEGORIES}
            if p is not None:
                pb = p.breakdown_ns
                d["predicted_bound"] = p.bound
                d["predicted_breakdown_us"] = {c: us(pb[c]) for c in CATEGORIES}
                d["delta_breakdown_us"] = {c: us(pb[c] - mb[c]) for c in CATEGORIES}
                if with_path:
                    d["predicted_path"] = [s.to_dict() for s in p.path]
            steps.append(d)
        _own_step_times(steps)
        errs = self.step_errors()
        gpu = []
        for dev in sorted(set(self.gpu_measured) | set(self.gpu_predicted)):
            gm = self.gpu_measured.get(dev, {"span": 0, "busy": 0, "idle": 0, "activities": 0})
            gp = self.gpu_predicted.get(dev, {"span": 0, "busy": 0, "idle": 0, "activities": 0})
            gpu.append({"device": dev,
                        "measured": {"span_us": us(gm["span"]), "busy_us": us(gm["busy"]), "idle_us": us(gm["idle"]),
                                     "busy_pct": 100.0 * gm["busy"] / gm["span"] if gm["span"] else 0.0,
                                     "activities": gm["activities"]},
                        "predicted": {"span_us": us(gp["span"]), "busy_us": us(gp["busy"]), "idle_us": us(gp["idle"]),
                                      "busy_pct": 100.0 * gp["busy"] / gp["span"] if gp["span"] else 0.0,
                                      "activities": gp["activities"]},
                        "delta_busy_us": us(gp["busy"] - gm["busy"]), "delta_idle_us": us(gp["idle"] - gm["idle"])})
        ms_m = self.makespan_measured[1] - self.makespan_measured[0]
        ms_p = self.makespan_predicted[1] - self.makespan_predicted[0]
        own_m = sum(d["measured_step_us"] for d in steps if d["predicted_step_us"] is not None)
        own_p = sum(d["predicted_step_us"] for d in steps if d["predicted_step_us"] is not None)
        steps_speedup = own_m / own_p if own_p else None
        ms_speedup = ms_m / ms_p if ms_p else None
        agrees = steps_speedup is None or ms_speedup is None or (steps_speedup - 1.0) * (ms_speedup - 1.0) >= 0 \
            or abs(ms_m - ms_p) <= _SAME_MAKESPAN * ms_m
        sm = self.measured_cp.summary()
        sp = self.predicted_cp.summary()
        m = self.model
        doc: dict[str, Any] = {
            "mode": self.mode,
            "source": dict(self.G.graph.get("source") or {}),
            "window_mode": self.measured_cp.window_mode,
            "transforms": [t.to_dict() for t in self.transforms],
            "device": self.device_report,
            "summary": {
                "steps": len(steps),
                "measured_us": us(tot_m), "predicted_us": us(tot_p), "delta_us": us(tot_p - tot_m),
                "delta_pct": 100.0 * (tot_p - tot_m) / tot_m if tot_m else 0.0,
                "speedup": steps_speedup if agrees else None,
                "steps_measured_us": own_m, "steps_predicted_us": own_p, "steps_speedup": steps_speedup,
                "makespan_delta_pct": 100.0 * (ms_p - ms_m) / ms_m if ms_m else 0.0,
                "makespan_speedup": ms_speedup, "speedup_agrees": bool(agrees),
                "step_error_pct": {
                    "max": float(100.0 * errs.max()) if len(errs) else 0.0,
                    "mean": float(100.0 * errs.mean()) if len(errs) else 0.0,
                },
                "makespan_measured_us": us(ms_m), "makespan_predicted_us": us(ms_p),
                "measured_bound": sm["bound"], "predicted_bound": sp["bound"],
                "measured_breakdown_us": sm["breakdown_us"], "predicted_breakdown_us": sp["breakdown_us"],
                "delta_breakdown_us": {c: sp["breakdown_us"][c] - sm["breakdown_us"][c] for c in CATEGORIES},
            },
            "steps": steps,
            "gpu": gpu,
            "model": {
                "nodes": int(m.arr.n), "boundaries": int(m.n_boundaries), "edges": int(m.n_edges),
                "binding_edges": int(m.binding.sum()), "dropped_cycle_edges": int(m.dropped_cycle_edges),
                "typical_lag_us": {k: v / 1000.0 for k, v in m.typical.items()},
                "removed_nodes": int(self.removed.sum()),
                "inferred": {k: (int(v) if not isinstance(v, dict) else {str(d): int(q) for d, q in v.items()})
                             for k, v in m.inferred.items()},
            },
            "timings_s": {k: round(v, 4) for k, v in self.timings.items()},
        }
        return doc


def _simulated(m: BoundaryModel, ap: Any) -> GraphArrays:
    """The predicted arrays of the applied transforms ``ap``: removed events end where they
    start (a removed activity that never ran starts at its launch call)."""
    a = m.arr
    tb = simulate(m, ap.lag, ap.start)
    pa = predicted_arrays(m, tb)
    rm = ap.removed
    if rm.any():
        s, e = pa.ts.copy(), pa.end.copy()
        never = tb[0::2] <= NEVER // 2
        ls, ld = a.out_edges("launch")
        launcher = np.full(a.n, -1, dtype=np.int64)
        launcher[ld] = ls
        fix = np.flatnonzero(rm & never & (launcher >= 0))
        s[fix] = s[launcher[fix]]
        e[rm] = s[rm]
        pa.ts, pa.end = s, e
    return pa


@dataclass
class MakespanChange:
    """What a what-if does to the whole timeline (ns): the measured and the predicted
    makespan (first host event or activity start to the last end), and ``gain_ns`` =
    measured − predicted (negative: the what-if is slower)."""

    transforms: list[Transform]
    measured_ns: int
    predicted_ns: int

    @property
    def gain_ns(self) -> int:
        return self.measured_ns - self.predicted_ns


def makespan_change(G: TraceGraph, transforms: list[Transform], *,
                    boundary_model: BoundaryModel | None = None) -> MakespanChange:
    """The makespan of ``G`` replayed under ``transforms`` against the measured one, without
    the per-step critical paths :func:`predict` also computes (``opgraph advise`` prices
    each finding with it). ``boundary_model``: a :func:`build_model` of ``G`` to reuse."""
    m = boundary_model if boundary_model is not None else build_model(G)
    ap = apply(m, list(transforms))
    pa = _simulated(m, ap)
    m0, m1 = _makespan(m.arr)
    p0, p1 = _makespan(pa, ap.removed)
    return MakespanChange(list(transforms), m1 - m0, p1 - p0)


def predict(G: TraceGraph, transforms: list[Transform] | None = None, *, window: str | None = None,
            source_device: str | None = None, boundary_model: BoundaryModel | None = None,
            infer: bool = True) -> PredictResult:
    """Replay ``G`` (no transforms) or predict it under ``transforms``.

    Parameters
    ----------
    G : TraceGraph
        A graph built by :func:`opgraph.graph.build_graph`.
    transforms : list of Transform, optional
        From :func:`opgraph.predict.whatif.parse_transforms`.
    window : str, optional
        Step windows as in :func:`opgraph.analysis.critical_path.critical_path`.
    source_device : str, optional
        For a ``device`` transform: the trace's device when ``deviceProperties`` do not
        identify it.
    infer : bool
        Add the dependencies the graph lacks but the trace shows (launch-queue
        back-pressure, cross-thread hand-offs, cross-stream waits); see
        :func:`opgraph.predict.simulation.build_model`.

    Raises ``ValueError`` for an unknown device (the CLI turns it into a one-line error).
    """
    transforms = list(transforms or [])
    tm: dict[str, float] = {}
    t0 = time.perf_counter()
    m = boundary_model if boundary_model is not None else build_model(G, infer=infer)
    tm.update(m.timings)
    a = m.arr
    t1 = time.perf_counter()
    dev_fac = None
    dev_report = None
    dev_tr = [t for t in transforms if t.kind == "device"]
    if dev_tr:
        dev_fac, dev_report = device_factors(G, dev_tr[-1].device, source_device)
        dev_tr[-1].matched = dev_report["roofline_modelled"] + dev_report["bandwidth_scaled"]
        dev_tr[-1].detail = dict(dev_report)
    tm["device_s"] = time.perf_counter() - t1
    t2 = time.perf_counter()
    ap = apply(m, transforms, dev_fac)
    pa = _simulated(m, ap)
    rm = ap.removed
    tm["simulate_s"] = time.perf_counter() - t2
    t3 = time.perf_counter()
    # windows are selected from the DAG's arrays (opgraph.graph.windows.select_windows),
    # so the predicted path's steps are the predicted step ranges
    cp_m = critical_path(G, window=window, dag=critical_dag(m, a))
    live = ap.lag > NEVER // 2
    cp_p = critical_path(G, window=window, dag=critical_dag(m, pa, live))
    res = PredictResult(G, m, transforms, pa, rm, cp_m, cp_p, gpu_usage(a), gpu_usage(pa, rm),
                        _makespan(a), _makespan(pa, rm), dev_report, tm)
    tm["analysis_s"] = time.perf_counter() - t3
    tm["total_s"] = time.perf_counter() - t0
    return res
