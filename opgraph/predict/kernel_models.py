"""Kernel-time models for ET-driven prediction (issue 8; seed-algorithms.md §3.3-§3.7).

Pure functions and small data classes, no graph code (building the tables from a profiled
trace is :mod:`opgraph.predict.kernel_model_build`). Three models, tried in this order by the
simulator (:mod:`opgraph.predict.et_sim`):

1. **measured lookup** (:class:`KernelLookup`): op name + input shapes -> the device
   activities the op launched in a profiled trace (name, stream, kind) with the mean
   duration of each over the op's occurrences;
2. **analytic embedding models** (:func:`embedding_forward_us`,
   :func:`embedding_backward_us`): the seed's L2-hit-rate forward and SGD "simple"
   backward models for FBGEMM table-batched embedding (TBE) lookups, with device constants
   from ``opgraph/devices/microbench.json`` (:class:`MicrobenchProfile`), never hard-coded;
3. **calibrated roofline** (:class:`RooflineCalibration`): FLOPs and bytes of the op from
   :func:`opgraph.analysis.flops.op_cost`, a bound ``max(FLOPs / peak, bytes / DRAM)`` on
   the device, and a per-op-class fit ``t = floor + bound / efficiency`` made on a profiled
   trace.

Units are in every name: ``*_us`` microseconds, ``*_ns`` nanoseconds, ``*_gbps`` GB/s
(1e9 bytes/s, i.e. bytes per ns), ``gflops`` GFLOP/s (FLOPs per ns), ``*_bytes`` bytes.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import orjson
import pandas as pd

from opgraph.graph.linking import COMM_KERNEL_PATTERN
from opgraph.ingest.source import read_json
from opgraph.errors import OpgraphInputError

MICROBENCH_PATH = Path(__file__).resolve().parents[1] / "devices" / "microbench.json"

#: The seed's sector size (bytes): every access is rounded up to 32-byte sectors.
SECTOR_BYTES = 32
#: The seed's per-lookup ``table_offsets`` read (bytes, one sector).
TABLE_OFFSETS_BYTES = 32
#: The seed's per-lookup ``offsets`` read: 32 B in seed 001 (later code: 64).
OFFSETS_BYTES = 32
#: Threads per warp used by the seed's TBE kernels to size ``rows_per_block`` (256 / D).
TBE_THREADS_PER_BLOCK = 256


# --------------------------------------------------------------------------- device constants
@dataclass(frozen=True)
class MicrobenchProfile:
    """Measured device constants of the analytic models (``microbench.json``).

    Attributes: ``gflops`` GFLOP/s (= FLOP/ns); ``dram_gbps``, ``l2_gbps``, ``smem_gbps``,
    ``pcie_gbps`` GB/s (= bytes/ns); ``num_sms``; ``l2_bytes`` and ``smem_per_sm_bytes``
    bytes; ``devices``: the ``devices.json`` entries this profile stands for.
    """

    name: str
    aliases: tuple[str, ...]
    devices: tuple[str, ...]
    gflops: float
    dram_gbps: float
    l2_gbps: float
    smem_gbps: float | None
    num_sms: int
    l2_bytes: int
    smem_per_sm_bytes: int | None
    pcie_gbps: float | None
    source: str = ""
    notes: str = ""


@lru_cache(maxsize=None)
def microbench_profiles() -> tuple[MicrobenchProfile, ...]:
    """Every profile of ``opgraph/devices/microbench.json`` (validated by its schema)."""
    from opgraph.schemas_util import validation_error

    doc = orjson.loads(MICROBENCH_PATH.read_bytes())
    err = validation_error(doc, "microbench.schema.json")
    if err:
        raise OpgraphInputError(str(MICROBENCH_PATH), f"does not match microbench.schema.json: {err}")
    return tuple(MicrobenchProfile(p["name"], tuple(p["aliases"]), tuple(p["devices"]), float(p["gflops"]),
                                   float(p["dram_gbps"]), float(p["l2_gbps"]),
                                   None if p["smem_gbps"] is None else float(p["smem_gbps"]), int(p["num_sms"]),
                                   int(p["l2_bytes"]), p["smem_per_sm_bytes"],
                                   None if p["pcie_gbps"] is None else float(p["pcie_gbps"]), p["source"], p["notes"])
                 for p in doc["profiles"])


def _norm(s: str) -> str:
    return " ".join(s.lower().replace("-", " ").replace("_", " ").split())


def microbench_profile(name: str) -> MicrobenchProfile | None:
    """The profile named ``name`` (or an alias; case and punctuation ignored), else the
    profile listing the ``devices.json`` entry that :func:`opgraph.devices.lookup` finds
    for ``name`` (``"Tesla V100-SXM2-32GB"`` -> ``V100``); ``None`` when nothing matches."""
    key = _norm(name)
    for p in microbench_profiles():
        if key == _norm(p.name) or key in {_norm(a) for a in p.aliases}:
            return p
    from opgraph.devices.peaks import lookup

    dev = lookup(name)
    if dev is not None:
        for p in microbench_profiles():
            if dev.name in p.devices and "seed" not in p.name.lower():
                return p
    return None


# --------------------------------------------------------------------------- embedding models
def c32(x: float) -> float:
    """``x`` bytes rounded up to whole 32-byte sectors."""
    return math.ceil(x / SECTOR_BYTES) * SECTOR_BYTES


def embedding_hit_rate(E: int, L: float, X: int, mode: str = "all_rows") -> float:
    """The seed's L2 hit rate of a pooled lookup (dimensionless).

    ``mode="all_rows"`` (seed 001, §3.5): the probability that all ``L`` rows of a bag are
    among the ``X`` L2-resident rows of a table of ``E`` rows, ``C(X, L) / C(E, L)`` (tends
    to 0 for large ``L``: seed-algorithms §8 item 9). ``mode="per_row"``: the probability
    that one row is resident, ``X / E``. A fractional ``L`` (mean bag size) is rounded to
    the nearest integer >= 1 for the product.
    """
    if E <= 0:
        return 0.0
    if mode == "per_row":
        return min(1.0, max(0.0, X / E))
    if mode != "all_rows":
        raise ValueError(f"unknown hit-rate mode {mode!r}: use 'all_rows' or 'per_row'")
    n = max(1, int(round(L)))
    if X < n:
        return 0.0
    i = np.arange(n, dtype=np.float64)
    return float(np.prod((X - i) / (E - i)))


def embedding_forward_us(B: int, E: int, T: int, L: float, D: int, rows_per_block: int,
                         hw: MicrobenchProfile, *, hit_rate: str = "all_rows",
                         offsets_bytes: int = OFFSETS_BYTES) -> float:
    """Predicted time of a TBE pooled forward lookup, **µs** (seed 001 §3.5, fp32 rows).

    ``B`` batch, ``E`` rows per table, ``T`` tables, ``L`` pooling (bag) size, ``D``
    embedding dim, ``rows_per_block`` bags per thread block; ``hw`` gives ``num_sms``,
    ``l2_bytes``, ``dram_gbps`` and ``l2_gbps`` (bytes/ns). Traffic: per lookup the table
    offsets and offsets (L2), the indices ``c32(4L)`` and the output row ``c32(4D)`` (DRAM),
    and ``L`` rows of ``c32(4D)`` of which a fraction ``hr`` hits in L2, with the resident
    part of the table (``tbl_bytes``) read once from DRAM. Time = max(DRAM bytes / DRAM
    GB/s, L2 bytes / L2 GB/s) ns / 1000.

    >>> round(embedding_forward_us(4096, 500_000, 197, 32, 32, 128, microbench_profile("V100 (seed 001)")), 2)
    4340.77
    """
    warps_sim = hw.num_sms * rows_per_block
    tables_sim = math.ceil(warps_sim / B)
    tbl_bytes = min(hw.l2_bytes // tables_sim, E * D * 4)
    X = tbl_bytes // 4 // D
    hr = embedding_hit_rate(E, L, X, hit_rate)
    rows = B * L * c32(4 * D) - tbl_bytes
    l2_bytes = T * (B * (TABLE_OFFSETS_BYTES + offsets_bytes) + hr * rows)
    dram_bytes = T * (B * (c32(4 * L) + c32(4 * D)) + (1.0 - hr) * rows + tbl_bytes)
    return max(dram_bytes / hw.dram_gbps, l2_bytes / hw.l2_gbps) / 1000.0


def embedding_backward_us(B: int, T: int, L: float, D: int, hw: MicrobenchProfile) -> float:
    """Predicted time of a TBE backward with an SGD update, **µs** (seed 001 §3.6, "simple").

    Per bag: 32 B table offsets + 64 B offsets + ``c32(4L)`` indices + ``2 L c32(4D)``
    (rows read and written) + ``c32(4D)`` gradient; MACs ``B T L 4 (D // 4)``. Time =
    max(bytes / DRAM GB/s, MACs / GFLOP/s) ns / 1000.

    >>> round(embedding_backward_us(2048, 128, 128, 128, microbench_profile("V100 (seed 001)")), 2)
    42834.78
    """
    per_warp = 32 + 64 + c32(4 * L) + 2 * L * c32(4 * D) + c32(4 * D)
    nbytes = B * T * per_warp
    macs = B * T * L * 4 * (D // 4)
    return max(nbytes / hw.dram_gbps, macs / hw.gflops) / 1000.0


@dataclass(frozen=True)
class TbeParams:
    """Sizes of one TBE lookup, derived from its recorded shapes (seed 7c2db82 §3.3):
    ``T`` = len(D_offsets) - 1, ``B`` = (len(offsets) - 1) / T, ``L`` = len(indices) / (B T)
    (mean bag size, may be fractional), ``D`` = total_D / T, ``E`` = weight rows / T,
    ``rows_per_block`` = max(256 // D, 1)."""

    B: int
    E: int
    T: int
    L: float
    D: int
    rows_per_block: int
    optimizer: str


#: Argument positions of the FBGEMM TBE ops (``weights``, ``uvm weights``, ``D_offsets``,
#: ``total_D``, ``indices``, ``offsets``) - as in :mod:`opgraph.analysis.flops`.
_TBE_ARGS = {
    "split": dict(w=1, uvm=2, d_off=6, total_d=7, ind=11, off=12),
    "dense": dict(w=0, uvm=None, d_off=2, total_d=3, ind=7, off=8),
}


def tbe_kind(name: str) -> tuple[str, str] | None:
    """``(layout, optimizer)`` of an FBGEMM TBE forward op name, else ``None``:
    ``fbgemm::split_embedding_codegen_lookup_adagrad_function`` -> ``("split", "adagrad")``,
    ``fbgemm::dense_embedding_codegen_lookup_function`` -> ``("dense", "dense")``."""
    p = "fbgemm::split_embedding_codegen_lookup_"
    if name.startswith(p) and name.endswith("_function"):
        return "split", name[len(p):-len("_function")]
    if name == "fbgemm::dense_embedding_codegen_lookup_function":
        return "dense", "dense"
    return None


def tbe_backward_key(name: str) -> str | None:
    """The optimizer key of a TBE backward node name
    (``...CppNode<SplitLookupFunction_adagrad_Op>`` -> ``adagrad``; ``..._Dense_Op`` ->
    ``dense``), else ``None``."""
    i = name.find("SplitLookupFunction_")
    if i < 0:
        return None
    rest = name[i + len("SplitLookupFunction_"):]
    j = rest.find("_Op")
    return rest[:j].lower() if j > 0 else None


def _numel(shape: Any) -> int | None:
    if isinstance(shape, list) and all(type(x) is int for x in shape):
        return int(np.prod(shape)) if shape else 1
    return None


def tbe_params(name: str, shapes: Sequence[Any], values: Sequence[Any] | None) -> TbeParams | None:
    """:class:`TbeParams` of a TBE forward op from its input shapes and values (ET
    ``inputs``; ``total_D`` read from the value, else ``None`` is returned). ``None`` when
    the op is not a TBE lookup or a size cannot be derived."""
    k = tbe_kind(name)
    if k is None:
        return None
    a = _TBE_ARGS[k[0]]
    try:
        n_doff, n_ind, n_off = _numel(shapes[a["d_off"]]), _numel(shapes[a["ind"]]), _numel(shapes[a["off"]])
        n_w = _numel(shapes[a["w"]])
        if (n_w or 0) == 0 and a["uvm"] is not None:
            n_w = _numel(shapes[a["uvm"]])
        total_d = values[a["total_d"]] if values is not None and len(values) > a["total_d"] else None
    except (IndexError, TypeError):
        return None
    if None in (n_doff, n_ind, n_off, n_w) or type(total_d) is not int:
        return None
    T = n_doff - 1
    if T <= 0 or total_d <= 0 or (n_off - 1) % T or total_d % T:
        return None
    B = (n_off - 1) // T
    D = total_d // T
    if B <= 0 or D <= 0:
        return None
    return TbeParams(B=B, E=max(1, n_w // (T * D)), T=T, L=n_ind / (B * T), D=D,
                     rows_per_block=max(TBE_THREADS_PER_BLOCK // D, 1), optimizer=k[1])


# --------------------------------------------------------------------------- op classes
#: flops families (:func:`opgraph.analysis.flops.op_family`) and model names -> op class.
_MODEL_CLASS = {
    "attention": "attention", "norm": "norm", "softmax": "reduction",
    "gemm": "gemm", "conv": "conv", "conv_backward": "conv", "sdpa": "attention", "sdpa_backward": "attention",
    "layer_norm": "norm", "rms_norm": "norm", "group_norm": "norm", "batch_norm": "norm", "norm_backward": "norm",
    "reduction": "reduction", "elementwise": "elementwise", "copy": "copy",
    "embedding": "embedding", "tbe_lookup": "embedding", "collective": "comm",
}
#: Communication names (kernels and ops): the graph's own rule (``COMM_KERNEL_PATTERN``).
_COMM_RE = re.compile(COMM_KERNEL_PATTERN)
OP_CLASSES = ("gemm", "conv", "attention", "norm", "reduction", "elementwise", "copy", "embedding", "comm", "other")


def op_class(name: str, model: str | None) -> str:
    """The calibration class of an op: from its flops family or model (``gemm``,
    ``conv``, ``attention``, ``norm``, ``reduction``, ``elementwise``, ``copy``,
    ``embedding``, ``comm``), ``comm`` for any collective name, else ``other``."""
    if model is not None:
        c = _MODEL_CLASS.get(model)
        if c is None:
            c = next((v for k, v in _MODEL_CLASS.items() if model.startswith(k)), None)
        if c is not None:
            return c
    low = name.lower()
    if low.startswith(("c10d::", "nccl", "rccl", "gloo")) or _COMM_RE.search(name):
        return "comm"
    return "other"


# --------------------------------------------------------------------------- roofline
@dataclass(frozen=True)
class Peaks:
    """Peaks of the roofline bound: ``flops_per_ns`` per dtype key (FLOP/ns = GFLOP/s)
    and ``dram_bytes_per_ns`` (= GB/s)."""

    device: str
    flops_per_ns: Mapping[str, float]
    dram_bytes_per_ns: float

    def flops_rate(self, dtype: str | None) -> float | None:
        from opgraph.devices.peaks import peak_dtype_key

        key = peak_dtype_key(dtype) if dtype else None
        return self.flops_per_ns.get(key or "fp32") or self.flops_per_ns.get("fp32")


def device_peaks(name: str) -> Peaks | None:
    """Peaks of a device name: the ``devices.json`` entry (per-dtype dense peaks, DRAM) of
    the matching microbench profile or of :func:`opgraph.devices.lookup`; a profile with
    no ``devices.json`` entry gives its measured fp32 GFLOP/s and DRAM GB/s. ``None`` when
    unknown."""
    from opgraph.devices.peaks import all_devices, lookup

    prof = microbench_profile(name)
    dev = None
    if prof is not None and prof.devices:
        dev = next((d for d in all_devices() if d.name == prof.devices[0]), None)
    if dev is None and prof is None:
        dev = lookup(name)
    if dev is not None:
        rates = {k: v * 1e3 for k, v in dev.peak_tflops.items() if v}   # TFLOP/s -> FLOP/ns
        return Peaks(dev.name, rates, dev.dram_gbps)
    if prof is not None:
        return Peaks(prof.name, {"fp32": prof.gflops}, prof.dram_gbps)
    return None


def roofline_bound_ns(flops: np.ndarray, nbytes: np.ndarray, flops_rate: np.ndarray,
                      dram_bytes_per_ns: float) -> np.ndarray:
    """Roofline lower bound in **ns**, vectorised: ``max(FLOPs / (FLOP/ns), bytes /
    (bytes/ns))``; NaN where both terms are unknown (NaN inputs)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        tf = np.asarray(flops, np.float64) / np.asarray(flops_rate, np.float64)
        tb = np.asarray(nbytes, np.float64) / float(dram_bytes_per_ns)
    return np.fmax(tf, tb)


@dataclass
class ClassFit:
    """``t_us = floor_us + bound_us / efficiency`` for one op class; ``n`` ops fitted."""

    efficiency: float
    floor_us: float
    n: int

    def time_us(self, bound_us: float) -> float:
        """Predicted GPU time of an op of this class, **µs**."""
        return self.floor_us + bound_us / self.efficiency


#: Quantile of the class's op GPU times taken as its fixed latency floor.
FLOOR_QUANTILE = 0.05


def fit_classes(cls: np.ndarray, bound_us: np.ndarray, dur_us: np.ndarray) -> dict[str, ClassFit]:
    """Per-class fit of measured op GPU time (µs) against the roofline bound (µs).

    ``floor_us`` = the :data:`FLOOR_QUANTILE` quantile of the class's durations (launch and
    tail latency that small kernels cannot hide); ``efficiency`` = the median over the
    class's ops of ``bound / (dur - floor)`` (ops at or below the floor excluded; 1.0 when
    none is left). Robust to the odd slow kernel; vectorised with pandas."""
    df = pd.DataFrame({"c": cls, "b": bound_us, "d": dur_us})
    df = df[np.isfinite(df["b"]) & (df["b"] >= 0) & (df["d"] > 0)]
    out: dict[str, ClassFit] = {}
    if not len(df):
        return out
    floor = df.groupby("c")["d"].quantile(FLOOR_QUANTILE)
    df["f"] = floor.reindex(df["c"]).to_numpy()
    above = df[(df["d"] > df["f"]) & (df["b"] > 0)]
    eff = (above["b"] / (above["d"] - above["f"])).groupby(above["c"]).median()
    n = df.groupby("c").size()
    for c in n.index:
        e = float(eff.get(c, np.nan))
        out[str(c)] = ClassFit(efficiency=e if np.isfinite(e) and e > 0 else 1.0, floor_us=float(floor[c]),
                               n=int(n[c]))
    return out


@dataclass
class RooflineCalibration:
    """Per-op-class roofline fits made on ``device`` (schemas/roofline-calibration.schema.json)."""

    device: str
    peaks: Peaks
    classes: dict[str, ClassFit]
    source: dict[str, Any] = field(default_factory=dict)

    def predict_us(self, flops: float | None, nbytes: float | None, dtype: str | None, cls: str,
                   target: Peaks | None = None) -> float | None:
        """GPU time of one op on ``target`` (default: the calibration device), **µs**:
        the class fit applied to the op's bound on the target. ``None`` when the class
        was not calibrated or FLOPs and bytes are both unknown."""
        fit = self.classes.get(cls)
        pk = target or self.peaks
        if fit is None or (flops is None and nbytes is None):
            return None
        rate = pk.flops_rate(dtype)
        b = roofline_bound_ns(np.array([np.nan if flops is None else flops]),
                              np.array([np.nan if nbytes is None else nbytes]),
                              np.array([rate or np.nan]), pk.dram_bytes_per_ns)[0]
        if not np.isfinite(b):
            return None
        return fit.time_us(float(b) / 1e3)

    def to_dict(self) -> dict[str, Any]:
        return {"schema_version": 1, "kind": "opgraph-roofline-calibration", "unit": "us",
                "device": self.device, "source": self.source,
                "peaks": {"device": self.peaks.device, "flops_per_ns": dict(self.peaks.flops_per_ns),
                          "dram_bytes_per_ns": self.peaks.dram_bytes_per_ns},
                "floor_quantile": FLOOR_QUANTILE,
                "classes": {c: {"efficiency": f.efficiency, "floor_us": f.floor_us, "n": f.n}
                            for c, f in sorted(self.classes.items())}}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "RooflineCalibration":
        p = d["peaks"]
        return cls(d["device"], Peaks(p["device"], dict(p["flops_per_ns"]), float(p["dram_bytes_per_ns"])),
                   {c: ClassFit(float(v["efficiency"]), float(v["floor_us"]), int(v["n"]))
                    for c, v in d["classes"].items()}, dict(d.get("source") or {}))


# --------------------------------------------------------------------------- lookup table
@dataclass
class Activity:
    """One device activity of a lookup entry: launched by launch slot ``slot`` (index in
    the entry's ``launches``; -1 = by a call that is not a counted launch API, e.g.
    ``cudaMemsetAsync``), its ``api``, ``name``, ``kind`` (kernel/memcpy/memset), the
    profile's ``stream``, whether it is a collective, and its duration **µs** (mean, std,
    n over the op's occurrences)."""

    slot: int
    api: str
    name: str
    kind: str
    stream: int
    collective: bool
    mean_us: float
    std_us: float
    n: int


@dataclass
class LookupEntry:
    """What one op (name + shapes) did in the profile: its launch-API sequence
    (``launches``), which of them blocked the CPU on the GPU (``blocking``), and its
    device activities. ``count`` occurrences had this signature out of ``total``."""

    op: str
    shapes: str
    launches: list[str]
    blocking: list[bool]
    activities: list[Activity]
    count: int
    total: int
    gap_before_us: float | None = None

    @property
    def gpu_us(self) -> float:
        """Summed mean activity time, µs."""
        return float(sum(a.mean_us for a in self.activities))


@dataclass
class ApiTiming:
    """Host cost of a launch API, **µs**: ``own_us`` the call's own time when it did not
    wait for the GPU (mean; a blocking call's wait excluded), ``return_us`` (mean) the
    time from the end of the awaited device work to the call's return, for calls that
    waited; with sample counts."""

    own_us: float
    own_n: int
    return_us: float
    return_n: int


def shape_key(dims: Any) -> str:
    """Canonical shapes key: ``str(input dims)`` without spaces; absent and empty input
    lists are both ``[]`` (Kineto omits ``Input Dims`` for ops without inputs, ETs write
    ``[]``)."""
    if dims is None or dims == "-" or dims == []:
        return "[]"
    if isinstance(dims, str):
        return dims.replace(" ", "")
    return str(dims).replace(" ", "")


@dataclass
class KernelLookup:
    """The measured lookup table (schemas/kernel-lookup.schema.json).

    ``entries[(op, shapes)]`` and ``by_name[op]`` (all shapes pooled: the most common
    launch signature of the op name, durations averaged over every occurrence with it);
    ``apis`` host cost per launch API; ``streams`` profile stream -> role (``compute`` the
    stream with the most non-collective work, ``comm`` streams running collectives,
    ``other``); ``data_loading_us`` mean data-loading time per step of the profile."""

    entries: dict[tuple[str, str], LookupEntry]
    by_name: dict[str, LookupEntry]
    apis: dict[str, ApiTiming]
    streams: dict[int, str]
    data_loading_us: float
    steps: int
    device: str | None = None
    source: dict[str, Any] = field(default_factory=dict)
    #: cross-rank waits removed from the profile's collective kernels (``kernels``,
    #: ``matched``, ``removed_us``), or None when none were removed
    comm_waits: dict[str, Any] | None = None

    @property
    def compute_stream(self) -> int:
        return next((s for s, r in self.streams.items() if r == "compute"), 7)

    @property
    def comm_stream(self) -> int:
        return next((s for s, r in self.streams.items() if r == "comm"), self.compute_stream)

    def to_dict(self) -> dict[str, Any]:
        def ent(e: LookupEntry) -> dict[str, Any]:
            return {"op": e.op, "shapes": e.shapes, "count": e.count, "total": e.total,
                    "gap_before_us": e.gap_before_us, "launches": e.launches,
                    "blocking": e.blocking,
                    "activities": [{"slot": a.slot, "api": a.api, "name": a.name, "kind": a.kind, "stream": a.stream,
                                    "collective": a.collective, "dur_us": {"mean": a.mean_us, "std": a.std_us, "n": a.n}}
                                   for a in e.activities]}
        return {"schema_version": 1, "kind": "opgraph-kernel-lookup", "unit": "us", "device": self.device,
                "source": self.source, "steps": self.steps, "data_loading_us": self.data_loading_us,
                "streams": {str(s): r for s, r in sorted(self.streams.items())},
                "apis": {a: {"own_us": t.own_us, "own_n": t.own_n, "return_us": t.return_us, "return_n": t.return_n}
                         for a, t in sorted(self.apis.items())},
                "entries": [ent(e) for _, e in sorted(self.entries.items())],
                "by_name": [ent(e) for _, e in sorted(self.by_name.items())]} | (
                    {"comm_waits_removed": self.comm_waits} if self.comm_waits is not None else {})

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "KernelLookup":
        def ent(x: Mapping[str, Any]) -> LookupEntry:
            return LookupEntry(x["op"], x["shapes"], list(x["launches"]), list(x["blocking"]),
                               [Activity(a["slot"], a["api"], a["name"], a["kind"], int(a["stream"]), bool(a["collective"]),
                                         float(a["dur_us"]["mean"]), float(a["dur_us"]["std"]), int(a["dur_us"]["n"]))
                                for a in x["activities"]], int(x["count"]), int(x["total"]), x.get("gap_before_us"))
        entries = {(e.op, e.shapes): e for e in map(ent, d["entries"])}
        by_name = {e.op: e for e in map(ent, d["by_name"])}
        apis = {a: ApiTiming(float(t["own_us"]), int(t["own_n"]), float(t["return_us"]), int(t["return_n"]))
                for a, t in d["apis"].items()}
        return cls(entries, by_name, apis, {int(s): r for s, r in d["streams"].items()},
                   float(d["data_loading_us"]), int(d["steps"]), d.get("device"), dict(d.get("source") or {}),
                   d.get("comm_waits_removed"))


# --------------------------------------------------------------------------- load / save
def read_json_file(path: str, schema: str, what: str) -> dict[str, Any]:
    """:func:`read_json`, then validated against ``schemas/<schema>`` (one-line errors)."""
    doc = read_json(path, what)
    from opgraph.schemas_util import validation_error

    err = validation_error(doc, schema)
    if err:
        raise OpgraphInputError(path, f"{what}: does not match {schema}: {err}")
    return doc


def write_json_file(doc: Mapping[str, Any], path: str, schema: str, inputs: tuple = ()) -> None:
    """Validate ``doc`` against ``schemas/<schema>`` and write it (indented JSON), atomically
    (:func:`opgraph.outfiles.write_atomic`); ``inputs`` are files it must not overwrite."""
    from opgraph.outfiles import write_atomic
    from opgraph.schemas_util import validate

    validate(doc, schema)
    write_atomic(path, orjson.dumps(doc, option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY), inputs)


def load_lookup(path: str) -> KernelLookup:
    """A lookup table written by ``opgraph kernel-models`` (validated)."""
    return KernelLookup.from_dict(read_json_file(path, "kernel-lookup.schema.json", "kernel lookup table"))


def load_calibration(path: str) -> RooflineCalibration:
    """A roofline calibration written by ``opgraph kernel-models`` (validated)."""
    return RooflineCalibration.from_dict(read_json_file(path, "roofline-calibration.schema.json", "roofline calibration"))
