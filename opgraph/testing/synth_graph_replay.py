"""A CUDA/HIP-graph capture trace and a replay trace whose mapping is known by construction
(docs/graph-replay.md, :mod:`opgraph.graph.graph_replay`).

The capture (one thread): an eager ``aten::fill_`` kernel that runs (so it is *not* part of
the graph), then ``cudaStreamBeginCapture``, :data:`LAYERS` layers of

* ``aten::mm`` -> launch of ``gemm_kernel`` (40 µs at replay),
* ``aten::add`` -> launch of ``add_kernel`` (5 µs),
* ``vllm::attention`` > ``aten::_flash_attention_forward`` -> launch of ``flash_fwd_kernel`` (30 µs),

all inside a ``## layer ##`` annotation, then ``aten::zero_`` -> ``cudaMemsetAsync`` (2 µs),
then ``cudaStreamEndCapture``. With ``names=True`` the launch calls record the kernel name
(``args.kernel``, as HIP does); without, they do not (as CUDA).

The replay: ``steps`` graph launches at top level (under no CPU op), each followed by the
graph's activities sharing its correlation; with ``two_streams`` the attention kernels run on
a second stream and start before the add of their layer (the replay order differs from the
capture order). :data:`EXPECTED_OPS` holds the per-op kernels and device time of one replay.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

US = 1000
LAYERS = 3
#: Per op: (kernels per replay, device µs per replay).
EXPECTED_OPS: dict[str, tuple[int, float]] = {
    "aten::mm": (LAYERS, 40.0 * LAYERS), "aten::add": (LAYERS, 5.0 * LAYERS),
    "vllm::attention": (LAYERS, 30.0 * LAYERS), "aten::zero_": (1, 2.0),
}
_NODES = (("aten::mm", (), "gemm_kernel", 40), ("aten::add", (), "add_kernel", 5),
          ("vllm::attention", ("aten::_flash_attention_forward",), "flash_fwd_kernel", 30))
_PROPS = [{"id": 0, "name": "NVIDIA A100-SXM4-80GB", "totalGlobalMem": 85_000_000_000, "computeMajor": 8,
           "computeMinor": 0, "numSms": 108}]


def _x(cat: str, name: str, ts_us: float, dur_us: float, pid: Any, tid: Any, args: dict[str, Any] | None = None
       ) -> dict[str, Any]:
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": round(ts_us, 3), "dur": round(dur_us, 3),
            "args": args or {}}


def capture_trace(names: bool = True, prefix: str = "cuda") -> dict[str, Any]:
    """The capture trace document (module docstring)."""
    ev: list[dict[str, Any]] = []
    corr = 100
    t = 1000.0
    # eager kernel that runs: not captured
    ev.append(_x("cpu_op", "aten::fill_", t, 10, 1, 1))
    ev.append(_x("cuda_runtime", f"{prefix}LaunchKernel", t + 2, 5, 1, 1,
                 {"correlation": corr, **({"kernel": "fill_kernel"} if names else {})}))
    ev.append(_x("kernel", "fill_kernel", t + 20, 3, 0, 7, {"device": 0, "stream": 7, "correlation": corr}))
    corr += 1
    t += 50
    ev.append(_x("cuda_runtime", f"{prefix}StreamBeginCapture", t, 2, 1, 1, {"correlation": corr}))
    corr += 1
    t += 5
    for _layer in range(LAYERS):
        start = t
        for op, inner, kname, _d in _NODES:
            depth = len(inner)
            ev.append(_x("cpu_op", op, t, 10 + 2 * depth, 1, 1))
            for j, name in enumerate(inner):
                ev.append(_x("cpu_op", name, t + 1 + j, 10 - 2 * j, 1, 1))
            ev.append(_x("cuda_runtime", f"{prefix}LaunchKernel", t + 2 + depth, 4, 1, 1,
                         {"correlation": corr, **({"kernel": kname} if names else {})}))
            corr += 1
            t += 15 + 2 * depth
        ev.append(_x("user_annotation", "## layer ##", start - 0.5, t - start, 1, 1))
        t += 2
    ev.append(_x("cpu_op", "aten::zero_", t, 10, 1, 1))
    ev.append(_x("cuda_runtime", f"{prefix}MemsetAsync", t + 2, 4, 1, 1, {"correlation": corr}))
    corr += 1
    t += 15
    ev.append(_x("cuda_runtime", f"{prefix}StreamEndCapture", t, 2, 1, 1, {"correlation": corr}))
    ev.sort(key=lambda e: (e["ts"], -e["dur"]))
    return {"schemaVersion": 1, "deviceProperties": _PROPS, "traceEvents": ev}


def replay_trace(steps: int = 2, two_streams: bool = False, prefix: str = "cuda") -> dict[str, Any]:
    """The replay trace document (module docstring)."""
    ev: list[dict[str, Any]] = []
    corr = 5000
    t = 10_000.0
    for _s in range(steps):
        ev.append(_x("cuda_runtime", f"{prefix}GraphLaunch", t, 20, 1, 1, {"correlation": corr}))
        g = t + 30
        for _layer in range(LAYERS):
            for op, _inner, kname, d in _NODES:
                stream = 8 if (two_streams and kname == "flash_fwd_kernel") else 7
                start = g
                if two_streams and kname == "add_kernel":
                    start = g + 31  # after the attention of the layer, which starts first
                if two_streams and kname == "flash_fwd_kernel":
                    start = g - 6
                ev.append(_x("kernel", kname, start, d, 0, stream,
                             {"device": 0, "stream": stream, "correlation": corr}))
                g += d + 1
        ev.append(_x("gpu_memset", "Memset (Device)", g, 2, 0, 7, {"device": 0, "stream": 7, "correlation": corr}))
        t = g + 100
        corr += 1
    return {"schemaVersion": 1, "deviceProperties": _PROPS, "traceEvents": ev}


def write_pair(directory: str | Path, names: bool = True, two_streams: bool = False, steps: int = 2
               ) -> tuple[Path, Path]:
    """Write ``replay.json`` and ``capture.json`` into ``directory``; return their paths."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    rp, cp = d / "replay.json", d / "capture.json"
    rp.write_text(json.dumps(replay_trace(steps, two_streams)))
    cp.write_text(json.dumps(capture_trace(names)))
    return rp, cp
