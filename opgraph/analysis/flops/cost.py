"""The cost record every FLOP rule returns (:class:`OpCost`) and the byte arithmetic the
rules share.

Units: ``flops`` is an integer count of floating-point operations (one FMA = 2 FLOPs);
``bytes`` is an integer count of bytes moved to or from device memory under perfect
reuse, ``None`` when a contributing dtype is unknown (see :mod:`opgraph.analysis.flops`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

__all__ = ["OpCost", "make_cost", "sum_bytes", "mul_bytes"]


@dataclass(frozen=True)
class OpCost:
    """Cost of one operator call.

    Attributes:
        flops: floating-point operations (FMA = 2), integer count.
        bytes: bytes read + written in device memory under perfect reuse, or ``None``
            when a contributing dtype is unknown.
        dtype: canonical dtype of the largest tensor input by element count, or ``None``.
        model: name of the rule that produced the cost (``gemm``, ``conv``,
            ``conv_backward``, ``sdpa``, ``sdpa_backward``, ``layer_norm``, ``softmax``,
            ``reduction``, ``elementwise``, ``copy``, ``embedding``, ``tbe_lookup``,
            ``collective``, ...).
        collective: for ``model == "collective"``, the collective kind (``all_reduce``,
            ``all_gather``, ``reduce_scatter``, ``all_to_all``, ``broadcast``, ``reduce``,
            ``send``, ``recv``); else ``None``. ``bytes`` is then the nccl-tests message
            size *S* (see :func:`collective_cost`).
        algbw_factor: algorithm bandwidth = ``algbw_factor * bytes / seconds`` (1.0 for
            collectives, ``None`` otherwise).
        busbw_factor: bus bandwidth = ``busbw_factor * algbw`` (nccl-tests convention), or
            ``None`` when the group size is unknown or for non-collectives.
        assumptions: human-readable notes for every default the rule had to assume
            because an argument was not recorded (empty when nothing was assumed).
        problem: the problem size the rule read from the arguments, for the GEMM,
            convolution and attention rules (``None`` for the others): GEMM ``B M N K``
            (C[B, M, N] = A[B, M, K] @ B[B, K, N]; ``B`` = 1 unless batched); attention
            ``B H Sq Sk D Dv causal``; convolution ``N C H W K R S`` (input batch,
            channels, height, width; output channels; filter height, width; ``D`` / ``T``
            input / filter depth of 3-d convolutions, ``None`` otherwise; 1-d: ``H`` =
            ``R`` = 1) and ``stride padding dilation`` (tuples, ``None`` when not
            recorded), ``groups``, ``transposed``. Not part of equality.
    """

    flops: int
    bytes: int | None
    dtype: str | None
    model: str
    collective: str | None = None
    algbw_factor: float | None = None
    busbw_factor: float | None = None
    assumptions: tuple[str, ...] = ()
    problem: Mapping[str, Any] | None = field(default=None, compare=False)


def sum_bytes(*parts: int | None) -> int | None:
    """Sum of byte counts; ``None`` as soon as one part is unknown (``None``)."""
    total = 0
    for p in parts:
        if p is None:
            return None
        total += p
    return total


def mul_bytes(n: int, size: int | None) -> int | None:
    """Bytes of *n* elements of *size* bytes each; ``None`` when the size is unknown."""
    return None if size is None else n * size


def make_cost(flops: float | int, nbytes: int | None, dtype: str | None, model: str,
              assumptions: Sequence[str] = (), **kw: Any) -> OpCost:
    """An :class:`OpCost` with *flops* rounded to an integer and *assumptions* as a tuple;
    further keywords (``problem``, ``collective``, ...) go to :class:`OpCost` unchanged."""
    return OpCost(int(round(flops)), nbytes, dtype, model, assumptions=tuple(assumptions), **kw)
