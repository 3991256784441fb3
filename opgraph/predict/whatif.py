"""What-if transforms: parsed, validated, applied to the lags of a boundary model.

Each transform changes only the lags it touches (see :mod:`opgraph.predict.simulation` for
the roles):

* ``scale_kernels REGEX=F``: the span of every device activity (kernel, memcpy, memset)
  whose name matches, times F;
* ``scale_cpu REGEX=F``: the *exclusive* time of every host event whose name matches
  (a leaf's span; a parent's time before its first child, between its children and after
  its last child), times F; a blocking call's waiting is not its own time and is kept;
* ``launch_overhead T``: every launch API call (``cudaLaunchKernel``, ``cudaGraphLaunch``,
  ``cudaMemcpyAsync`` ... and any call with a launch edge) takes T (its own time; a
  blocking copy still waits for its copy);
* ``remove REGEX``: host events whose name matches disappear with everything nested in
  them and every device activity they launched (device activities whose name matches
  disappear alone); their time goes to zero, the gaps around them are kept, and what
  depended on them now depends on what they depended on (a removed blocking call no
  longer waits, for device work or another thread);
* ``typical_latencies``: every latency that bounded something in the trace (launch
  latency, kernel gap, sync return, queue and hand-off wake-ups) set to the trace's median
  of its kind: a replay that keeps only the dependency structure, whose error shows how
  much the timeline rests on outlier latencies (usually a dependency the graph lacks);
* ``device NAME``: kernels re-timed by roofline on the target device (each kernel keeps
  its achieved fraction of the roofline bound; kernels with no FLOP/byte model scale by
  the memory-bandwidth ratio; collectives, copies and memsets unchanged).

Patterns are Python regexes searched in the name (``re.search``). Several transforms of
one kind compose (factors multiply).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from opgraph.graph.linking import LAUNCH_API_RE
from opgraph.model.trace_graph import TraceGraph
from opgraph.model.tree import within
from opgraph.predict.simulation import NEVER, ROLES, R, BoundaryModel

#: Roles whose lag is a latency (replaced by ``typical_latencies``).
LATENCY_ROLES = ("launch", "stream", "evwait", "sync", "blockcopy", "queue", "handoff_start", "handoff_resume")

#: Predicted times must stay below this (ns, ~146 years; :data:`NEVER` is its negative):
#: a what-if whose timeline could pass it is refused rather than wrapped.
MAX_PREDICTED_NS = 1 << 62
_UNITS = {"ns": 1, "us": 1_000, "µs": 1_000, "ms": 1_000_000, "s": 1_000_000_000}
_DUR_RE = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*(ns|us|µs|ms|s)\s*$")


class WhatIfError(ValueError):
    """A bad transform spec; ``option`` names the command-line option."""

    def __init__(self, option: str, message: str):
        self.option = option
        self.message = message
        super().__init__(f"{option}: {message}")


def compile_regex(text: str, option: str) -> re.Pattern:
    """``re.compile(text)`` with a one-line error naming the option."""
    if text is None or text == "":
        raise WhatIfError(option, "empty pattern")
    try:
        return re.compile(text)
    except re.error as e:
        raise WhatIfError(option, f"invalid regex {text!r}: {e}") from None


def parse_factor(text: str, option: str) -> float:
    try:
        f = float(text)
    except (TypeError, ValueError):
        raise WhatIfError(option, f"factor {text!r} is not a number") from None
    if not math.isfinite(f) or f <= 0:
        raise WhatIfError(option, f"factor {text!r} must be a finite number > 0")
    return f


def parse_scale(spec: str, option: str) -> tuple[str, float]:
    """``'REGEX=F'`` -> (regex, F); the factor follows the *last* ``=``."""
    if not isinstance(spec, str) or "=" not in spec:
        raise WhatIfError(option, f"expected REGEX=FACTOR, e.g. 'gemm|sgemm=0.5', got {spec!r}")
    pat, _, fac = spec.rpartition("=")
    compile_regex(pat, option)
    return pat, parse_factor(fac, option)


def parse_duration(text: str, option: str) -> int:
    """``'2us'``, ``'500ns'``, ``'0.5ms'``, ``'0us'`` -> ns (int, ≥ 0)."""
    m = _DUR_RE.match(text or "")
    if not m:
        raise WhatIfError(option, f"expected a duration with a unit (ns, us, ms, s), e.g. 2us, got {text!r}")
    v = float(m.group(1)) * _UNITS[m.group(2)]
    if not math.isfinite(v) or v < 0:
        raise WhatIfError(option, f"duration {text!r} must be ≥ 0")
    if v >= MAX_PREDICTED_NS:
        raise WhatIfError(option, f"duration {text!r} is too large: predicted times must fit int64 "
                                  f"nanoseconds (below {MAX_PREDICTED_NS / 1e9:.3g} s)")
    return int(round(v))


@dataclass
class Transform:
    """One what-if transform. ``kind`` is ``scale_kernels``, ``scale_cpu``,
    ``launch_overhead``, ``remove`` or ``device``; ``matched`` is filled when applied."""

    kind: str
    pattern: str | None = None
    factor: float | None = None
    value_ns: int | None = None
    device: str | None = None
    matched: int = 0
    detail: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"kind": self.kind, "matched": int(self.matched)}
        if self.pattern is not None:
            d["pattern"] = self.pattern
        if self.factor is not None:
            d["factor"] = self.factor
        if self.value_ns is not None:
            d["value_us"] = self.value_ns / 1000.0
        if self.device is not None:
            d["device"] = self.device
        if self.detail:
            d["detail"] = self.detail
        return d

    def describe(self) -> str:
        if self.kind in ("scale_kernels", "scale_cpu"):
            return f"{self.kind.replace('_', '-')} {self.pattern!r} x{self.factor:g}"
        if self.kind == "launch_overhead":
            return f"launch-overhead {self.value_ns / 1000:g} us"
        if self.kind == "remove":
            return f"remove {self.pattern!r}"
        if self.kind == "typical_latencies":
            return "typical latencies"
        return f"device {self.device}"


def parse_transforms(scale_kernels: list[str] | tuple[str, ...] = (), scale_cpu: list[str] | tuple[str, ...] = (),
                     launch_overhead: str | None = None, remove: list[str] | tuple[str, ...] = (),
                     device: str | None = None, typical_latencies: bool = False) -> list[Transform]:
    """Validate command-line style specs into transforms (raises :class:`WhatIfError`)."""
    out: list[Transform] = []
    if typical_latencies:
        out.append(Transform("typical_latencies"))
    for s in scale_kernels or ():
        p, f = parse_scale(s, "--scale-kernels")
        out.append(Transform("scale_kernels", pattern=p, factor=f))
    for s in scale_cpu or ():
        p, f = parse_scale(s, "--scale-cpu")
        out.append(Transform("scale_cpu", pattern=p, factor=f))
    if launch_overhead is not None:
        out.append(Transform("launch_overhead", value_ns=parse_duration(launch_overhead, "--launch-overhead")))
    for s in remove or ():
        compile_regex(s, "--remove")
        out.append(Transform("remove", pattern=s))
    if device is not None:
        if not device.strip():
            raise WhatIfError("--device", "empty device name")
        out.append(Transform("device", device=device))
    return out


@dataclass
class Applied:
    """Lags and start times after the transforms, and what was removed."""

    lag: np.ndarray
    start: np.ndarray
    removed: np.ndarray       # bool per node position
    kernel_factor: np.ndarray  # float per node position (1.0 = unchanged)


def apply(m: BoundaryModel, transforms: list[Transform], device_factors: np.ndarray | None = None) -> Applied:
    """The model's lags with every transform applied (fills each transform's ``matched``).

    ``device_factors``: per node position, the duration factor of the ``device``
    transform (from :func:`device_factors`)."""
    a = m.arr
    n = a.n
    lag = m.lag.astype(np.float64)
    role, own = m.role, m.own
    for tr in transforms:
        if tr.kind == "typical_latencies":
            typ = np.zeros(len(ROLES), dtype=np.float64)
            for k, v in m.typical.items():
                typ[R[k]] = v
            sel = m.binding & np.isin(role, [R[k] for k in LATENCY_ROLES])
            tr.matched = int(sel.sum())
            tr.detail = {"typical_us": {k: v / 1000.0 for k, v in m.typical.items()},
                         "changed_us": float(np.abs(lag[sel] - typ[role[sel]]).sum() / 1000.0)}
            lag[sel] = typ[role[sel]]
    is_host = m.is_host
    is_act = m.is_act
    host_idx = np.flatnonzero(is_host)
    act_idx = np.flatnonzero(is_act)
    kfac = np.ones(n, dtype=np.float64)
    cfac = np.ones(n, dtype=np.float64)
    launch_ns = None
    removed = np.zeros(n, dtype=bool)
    for tr in transforms:
        if tr.kind == "scale_kernels":
            hit = m.match_names(tr.pattern, act_idx)
            kfac[hit] *= tr.factor
            tr.matched = int(len(hit))
        elif tr.kind == "scale_cpu":
            hit = m.match_names(tr.pattern, host_idx)
            cfac[hit] *= tr.factor
            tr.matched = int(len(hit))
        elif tr.kind == "launch_overhead":
            launch_ns = tr.value_ns
        elif tr.kind == "remove":
            hit_h = m.match_names(tr.pattern, host_idx)
            hit_a = m.match_names(tr.pattern, act_idx)
            removed[hit_h] = True
            removed[hit_a] = True
            tr.detail = {"host_events": int(len(hit_h)), "device_activities": int(len(hit_a))}
            tr.matched = int(len(hit_h) + len(hit_a))
        elif tr.kind == "device":
            if device_factors is not None:
                kfac *= device_factors
    # removal: descendants on the thread and launched activities
    if removed.any():
        removed = within(a.host_parent, removed)
        ls, ld = a.out_edges("launch")
        removed[ld[removed[ls]]] = True
    for tr in transforms:
        if tr.kind == "remove":
            tr.detail["removed_nodes_total"] = int(removed.sum())

    # spans of activities
    r_act = role == R["act"]
    r_cpu = np.isin(role, (R["leaf"], R["first"], R["gap"], R["last"]))
    with np.errstate(over="ignore", invalid="ignore"):  # an overflowing factor is refused below, in one line
        lag[r_act] *= kfac[own[r_act]]
        # exclusive host time
        lag[r_cpu] *= cfac[own[r_cpu]]
    # launch calls
    if launch_ns is not None:
        ls, _ = a.out_edges("launch")
        is_launch = np.zeros(n, dtype=bool)
        is_launch[ls] = True
        rt = np.flatnonzero(a.kind == "runtime")
        is_launch[m.match_names(LAUNCH_API_RE.pattern, rt)] = True
        leaf_launch = (role == R["leaf"]) & is_launch[own]
        lag[leaf_launch] = launch_ns
        for tr in transforms:
            if tr.kind == "launch_overhead":
                tr.matched = int(leaf_launch.sum())
                tr.detail = {"launch_calls": int(is_launch.sum()),
                             "time_removed_us": float((m.lag[leaf_launch] - launch_ns).sum() / 1000.0)}
    start = np.where(m.has_in, NEVER, m.t)
    if removed.any():
        rs = removed[own]
        dst_node = m.dst // 2
        # the removed events' own time
        lag[rs & (r_cpu | r_act)] = 0
        # into removed activities: stream order and event waits pass through; launches vanish
        into_rm_act = removed[dst_node] & is_act[dst_node]
        lag[into_rm_act & np.isin(role, (R["stream"], R["evwait"]))] = 0
        lag[into_rm_act & (role == R["launch"])] = NEVER
        # removed blocking calls no longer wait
        lag[removed[dst_node] & np.isin(role, (R["sync"], R["blockcopy"], R["queue"], R["handoff_resume"], R["late_resume"]))
            & (m.dst % 2 == 1)] = NEVER
        # removed work with nothing before it does not pin what follows to its old time
        rb = np.repeat(removed, 2)
        start[rb & ~m.has_in] = NEVER
        # a removed thread-first event still starts the thread at its measured time
        first_host = removed & is_host & ~m.has_in[0::2]
        start[2 * np.flatnonzero(first_host)] = m.t[2 * np.flatnonzero(first_host)]
    _check_range(m, lag, start, transforms)
    out = np.where(lag <= NEVER // 2, NEVER, np.rint(lag)).astype(np.int64)
    return Applied(out, start, removed, kfac)


def _check_range(m: BoundaryModel, lag: np.ndarray, start: np.ndarray, transforms: list[Transform]) -> None:
    """Refuse (:class:`WhatIfError` naming the option) transforms after which a predicted
    time could leave the int64-nanosecond range: every boundary time is at most the latest
    start plus the sum of the positive lags, so that bound must stay below
    :data:`MAX_PREDICTED_NS` (a what-if is exact or refused, never wrapped)."""
    live = lag > NEVER // 2
    with np.errstate(over="ignore", invalid="ignore"):
        total = float(np.sum(lag[live & (lag > 0)], dtype=np.float64))
    t0 = start[start > NEVER // 2]
    base = float(t0.max()) if len(t0) else 0.0
    if math.isfinite(total) and base + total < MAX_PREDICTED_NS:
        return
    grow = [t for t in transforms if t.kind in ("scale_kernels", "scale_cpu") and t.factor and t.factor > 1]
    if grow:
        t = max(grow, key=lambda t: t.factor)
        opt, what = "--" + t.kind.replace("_", "-"), f"factor {t.factor:g} ({t.pattern}={t.factor:g})"
    elif any(t.kind == "launch_overhead" for t in transforms):
        opt, what = "--launch-overhead", "this launch overhead"
    elif any(t.kind == "device" for t in transforms):
        opt, what = "--device", "re-timing for this device"
    else:
        opt, what = "predict", "this what-if"
    raise WhatIfError(opt, f"{what} makes the predicted timeline exceed the int64-nanosecond range "
                           f"(about {MAX_PREDICTED_NS / 1e9 / 86400 / 365.25:.0f} years); use a smaller value")


# --------------------------------------------------------------------------- device
def device_factors(G: TraceGraph, target: str, source: str | None = None) -> tuple[np.ndarray, dict[str, Any]]:
    """Per node position (order of ``G.arrays``), the factor re-timing each kernel
    from its trace device to ``target`` by roofline, and a report.

    A kernel with FLOPs and/or bytes from :func:`opgraph.analysis.roofline.roofline` keeps
    its achieved fraction of the roofline bound: new duration = duration × bound(target) /
    bound(source), bound = max(FLOPs / peak FLOP/s, bytes / peak bytes/s) over the terms
    known on both devices. Kernels without a model scale by the memory-bandwidth ratio.
    Collective kernels, copies and memsets keep their duration. Raises ``ValueError``
    (unknown device, no source device)."""
    from opgraph.analysis.roofline import roofline

    a = G.arrays
    tgt = roofline(G, device=target)
    src = roofline(G, device=source) if source else roofline(G)
    kt = tgt.kernels.set_index("eid")
    ks = src.kernels.set_index("eid").reindex(kt.index)
    dev_t = {d: i.table for d, i in tgt.devices.items()}
    dev_s = {d: i.table for d, i in src.devices.items()}
    missing = sorted(d for d, t in dev_s.items() if t is None)
    if missing:
        names = {d: src.devices[d].runtime_name for d in missing}
        raise ValueError("source device unknown for device " + ", ".join(
            f"{d} ({names[d] or 'no deviceProperties'})" for d in missing)
            + "; pass --source-device NAME (see `opgraph devices`)")
    t_name = next((t.name for t in dev_t.values() if t is not None), target)
    kind = kt["kind"].to_numpy(dtype=object)
    is_kernel = kind == "kernel"
    coll = kt["collective"].to_numpy(dtype=bool)
    flops = kt["flops"].to_numpy(dtype=np.float64, na_value=np.nan)
    nbytes = kt["bytes"].to_numpy(dtype=np.float64, na_value=np.nan)
    pf_t = kt["peak_tflops"].to_numpy(dtype=np.float64) * 1e12
    pb_t = kt["peak_gbps"].to_numpy(dtype=np.float64) * 1e9
    pf_s = ks["peak_tflops"].to_numpy(dtype=np.float64) * 1e12
    pb_s = ks["peak_gbps"].to_numpy(dtype=np.float64) * 1e9
    with np.errstate(divide="ignore", invalid="ignore"):
        f_ok = np.isfinite(flops) & (flops > 0) & np.isfinite(pf_t) & np.isfinite(pf_s) & (pf_t > 0) & (pf_s > 0)
        b_ok = np.isfinite(nbytes) & (nbytes > 0) & np.isfinite(pb_t) & np.isfinite(pb_s) & (pb_t > 0) & (pb_s > 0)
        bound_t = np.maximum(np.where(f_ok, flops / pf_t, 0.0), np.where(b_ok, nbytes / pb_t, 0.0))
        bound_s = np.maximum(np.where(f_ok, flops / pf_s, 0.0), np.where(b_ok, nbytes / pb_s, 0.0))
        modelled = is_kernel & ~coll & (f_ok | b_ok) & (bound_s > 0)
        bw_ratio = np.where((pb_t > 0) & np.isfinite(pb_t) & np.isfinite(pb_s), pb_s / pb_t, np.nan)
        fac = np.ones(len(kt), dtype=np.float64)
        fac[modelled] = bound_t[modelled] / bound_s[modelled]
        by_bw = is_kernel & ~coll & ~modelled & np.isfinite(bw_ratio)
        fac[by_bw] = bw_ratio[by_bw]
    unchanged = ~(modelled | by_bw)
    out = np.ones(a.n, dtype=np.float64)
    pos = np.array([a.pos_of.get(int(e), -1) for e in kt.index.tolist()], dtype=np.int64)
    ok = pos >= 0
    out[pos[ok]] = fac[ok]
    src_names = sorted({t.name for t in dev_s.values() if t is not None})
    report = {
        "target": t_name, "source": ", ".join(src_names) or None,
        "kernels": int(is_kernel.sum()),
        "roofline_modelled": int(modelled.sum()),
        "bandwidth_scaled": int(by_bw.sum()),
        "unchanged_collective": int((is_kernel & coll).sum()),
        "unchanged_copies_memsets": int((~is_kernel).sum()),
        "unchanged_other": int((is_kernel & ~coll & unchanged).sum()),
        "bandwidth_ratio": float(np.nanmedian(bw_ratio)) if np.isfinite(bw_ratio).any() else None,
        "kernel_time_measured_us": float(kt["dur_ns"].to_numpy()[is_kernel].sum() / 1000.0),
        "kernel_time_retimed_us": float((kt["dur_ns"].to_numpy()[is_kernel] * fac[is_kernel]).sum() / 1000.0),
    }
    return out, report
