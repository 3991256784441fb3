"""Collective rules (family ``collective``): the ProcessGroup ranges (``nccl:*``,
``rccl:*``, ``gloo:*``), the ``c10d::*`` ops, ``_c10d_functional`` / ``c10d_functional``,
vLLM and ``symm_mem`` collectives; and the cost and bandwidth of a collective by kind
(:func:`collective_cost`, :func:`collective_bandwidth_gbps`).

``bytes`` is the nccl-tests message size S (github.com/NVIDIA/nccl-tests,
doc/PERFORMANCE.md): all_reduce / broadcast / reduce: the buffer; all_gather: the gathered
output (n x per-rank input); reduce_scatter: the full input (n x per-rank output);
all_to_all: the per-rank send buffer. algbw = S / t; busbw = algbw x factor with factor
2(n-1)/n (all_reduce), (n-1)/n (all_gather, reduce_scatter, all_to_all), 1 (broadcast,
reduce, send, recv). FLOPs are 0 (reduction arithmetic is not counted). Bandwidths are in
GB/s (1e9 bytes/s).
"""

from __future__ import annotations

from typing import Callable, Sequence

from opgraph.analysis.flops.args import Args, op_dtype
from opgraph.analysis.flops.cost import OpCost, sum_bytes
from opgraph.analysis.flops.rule import Ctx, Rule, RuleTable

__all__ = ["RULES", "collective_cost", "collective_bandwidth_gbps"]

#: The collective rules.
RULES = RuleTable("collective")

_BUSBW: dict[str, Callable[[int], float]] = {
    "all_reduce": lambda n: 2 * (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "all_to_all": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0,
    "reduce": lambda n: 1.0,
    "send": lambda n: 1.0,
    "recv": lambda n: 1.0,
}


def collective_cost(kind: str, message_bytes: int | None, world_size: int | None,
                    dtype: str | None = None, assumptions: Sequence[str] = ()) -> OpCost:
    """Cost record of a collective with nccl-tests message size *message_bytes* (bytes)
    over a group of *world_size* ranks (``None`` = unknown: no bus-bandwidth factor)."""
    if kind not in _BUSBW:
        raise ValueError(f"unknown collective kind {kind!r}")
    busbw = None
    if isinstance(world_size, int) and world_size >= 1:
        busbw = _BUSBW[kind](world_size)
    elif kind in ("broadcast", "reduce", "send", "recv"):
        busbw = 1.0
    return OpCost(0, message_bytes, dtype, "collective", collective=kind, algbw_factor=1.0,
                  busbw_factor=busbw, assumptions=tuple(assumptions))


def collective_bandwidth_gbps(cost: OpCost, duration_us: float) -> tuple[float, float | None] | None:
    """(algbw, busbw) in GB/s (1e9 bytes/s) of a collective that took *duration_us* µs."""
    if cost.collective is None or cost.bytes is None or duration_us <= 0:
        return None
    algbw = (cost.algbw_factor or 1.0) * cost.bytes / (duration_us * 1e-6) / 1e9
    return algbw, (algbw * cost.busbw_factor if cost.busbw_factor is not None else None)


def _all_tensor_bytes(a: Args) -> int | None:
    """Bytes of every tensor argument; ``None`` if there is none or a TensorList (whose
    element dtypes Kineto does not record) contributes."""
    idx = a.tensor_indices()
    lists = [i for i in range(a.n) if a.tensor_list(i)]
    if not idx and not lists:
        return None
    return sum_bytes(*(a.nbytes(i) for i in idx), *(None for _ in lists))


def _group_size(c: Ctx, idx: int | None) -> int | None:
    if idx is not None:
        v = c.a.ci(idx)
        if isinstance(v, int) and not isinstance(v, bool) and v > 0:
            return v
    return c.world_size


_NCCL_KINDS = {
    "all_reduce": "all_reduce", "allreduce": "all_reduce", "all_reduce_coalesced": "all_reduce",
    "allreduce_coalesced": "all_reduce",
    "all_gather": "all_gather", "_all_gather_base": "all_gather", "allgather": "all_gather",
    "all_gather_into_tensor_coalesced": "all_gather", "allgather_into_tensor_coalesced": "all_gather",
    "reduce_scatter": "reduce_scatter", "_reduce_scatter_base": "reduce_scatter",
    "reduce_scatter_tensor_coalesced": "reduce_scatter",
    "all_to_all": "all_to_all", "alltoall": "all_to_all", "all_to_allv": "all_to_all",
    "alltoall_base": "all_to_all",
    "broadcast": "broadcast", "reduce": "reduce", "send": "send", "recv": "recv",
}


@RULES.pattern(r"^(nccl|rccl|gloo):[A-Za-z_]+$")
def _backend_collective(c: Ctx) -> OpCost | None:
    # ProcessGroup record_function ranges ("nccl:all_reduce" ...): inputs are recorded.
    kind = _NCCL_KINDS.get(c.name.split(":", 1)[1])
    if kind is None:
        return None
    s_in = _all_tensor_bytes(c.a)
    n = c.world_size
    notes: list[str] = []
    if kind == "all_gather":
        size = None if s_in is None or n is None else s_in * n
        if n is None:
            notes.append("group size unknown: all_gather message size unknown")
    else:
        size = s_in
    return collective_cost(kind, size, n, op_dtype(c.a), notes)


def _c10d(kind: str, msg: Callable[[Ctx], int | None], group_idx: int | None = None) -> Rule:
    def rule(c: Ctx) -> OpCost | None:
        n = _group_size(c, group_idx)
        return collective_cost(kind, msg(c), n, op_dtype(c.a))
    return rule


def _input_bytes(i: int) -> Callable[[Ctx], int | None]:
    return lambda c: c.a.nbytes(i) if c.a.is_tensor(i) else None


def _gathered_bytes(i: int, group_idx: int | None) -> Callable[[Ctx], int | None]:
    def f(c: Ctx) -> int | None:
        n = _group_size(c, group_idx)
        b = c.a.nbytes(i) if c.a.is_tensor(i) else None
        return None if b is None or n is None else b * n
    return f


def _list_bytes(c: Ctx) -> int | None:
    return _all_tensor_bytes(c.a)


for _names, _rule_fn in [
    (("c10d::allreduce_", "c10d::allreduce_coalesced_"), _c10d("all_reduce", _list_bytes)),
    (("c10d::_allgather_base_",), _c10d("all_gather", _input_bytes(0))),  # (output, input)
    (("c10d::allgather_", "c10d::allgather_into_tensor_coalesced_"), _c10d("all_gather", lambda c: None)),
    (("c10d::_reduce_scatter_base_",), _c10d("reduce_scatter", _input_bytes(1))),  # (output, input)
    (("c10d::reduce_scatter_", "c10d::reduce_scatter_tensor_coalesced_"), _c10d("reduce_scatter", lambda c: None)),
    (("c10d::alltoall_base_",), _c10d("all_to_all", _input_bytes(1))),  # (output, input, ...)
    (("c10d::alltoall_",), _c10d("all_to_all", lambda c: None)),
    (("c10d::broadcast_",), _c10d("broadcast", _list_bytes)),
    (("c10d::reduce_",), _c10d("reduce", _list_bytes)),
    (("c10d::send",), _c10d("send", _list_bytes)),
    (("c10d::recv_",), _c10d("recv", _list_bytes)),
    (("_c10d_functional::all_reduce", "_c10d_functional::all_reduce_",
      "c10d_functional::all_reduce", "vllm::all_reduce", "symm_mem::multimem_all_reduce_",
      "symm_mem::one_shot_all_reduce", "symm_mem::two_shot_all_reduce_"),
     _c10d("all_reduce", _input_bytes(0))),
    (("_c10d_functional::all_gather_into_tensor",), _c10d("all_gather", _gathered_bytes(0, 1), 1)),
    (("vllm::all_gather",), _c10d("all_gather", _gathered_bytes(0, 2), 2)),
    (("_c10d_functional::reduce_scatter_tensor",), _c10d("reduce_scatter", _input_bytes(0), 2)),
    (("vllm::reduce_scatter",), _c10d("reduce_scatter", _input_bytes(0), 2)),
    (("_c10d_functional::all_to_all_single",), _c10d("all_to_all", _input_bytes(0))),
]:
    RULES.add(_rule_fn, *_names)
