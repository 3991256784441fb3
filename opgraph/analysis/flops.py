"""FLOP and byte models for PyTorch operators recorded in Kineto traces.

Pure functions, no graph code. The entry point is :func:`op_cost`, which takes what a
Kineto ``cpu_op`` event records in its args (``Input Dims``, ``Input type``,
``Concrete Inputs``, ``Input Strides``) and returns an :class:`OpCost`, or ``None`` when
the operator has no model or the recorded arguments are not enough to apply one. Unknown
operators are never guessed.

Units and conventions (all rules):

* ``flops`` is an integer count of floating-point operations; one fused multiply-add is
  **2** FLOPs. Divide by a duration in seconds to get FLOP/s.
* ``bytes`` is an integer count of bytes moved to or from device memory under the
  *perfect-reuse* assumption: every distinct input element is read once and every output
  element is written once (caches are ignored, so real traffic is higher for kernels that
  re-read operands, and lower for inputs that are already cache-resident). Inputs with a
  zero stride (``expand``-ed views, visible in ``Input Strides``) count only their distinct
  elements. Element sizes come from the recorded dtype (bf16/fp16 = 2, fp32 = 4,
  fp64/int64 = 8, fp8 = 1, ...); when any tensor that contributes has an unknown dtype
  string, ``bytes`` is ``None`` (never a silent 1 byte/element).
* ``dtype`` is the canonical dtype name (``fp32``, ``bf16``, ``fp16``, ``fp8_e4m3fn``,
  ``int64``, ...) of the op's largest tensor input by element count, or ``None`` if that
  input's dtype string is unknown.

Operators that usually just call other costed operators (``aten::linear`` ->
``aten::addmm``, ``aten::conv2d`` -> ... -> ``aten::cudnn_convolution``, ``aten::clone`` ->
``aten::copy_``, ``c10d::allreduce_`` -> ``nccl:all_reduce`` ...) are still modelled so that a
top-level view works, but they are listed in :data:`COMPOSITE_OPS`: when summing costs over
a call tree, count only the innermost costed operator.

Defects of Inductor's ``profile_analysis.py`` (seed-algorithms §8 item 10) avoided here:
conv bytes are bytes (not elements); the conv output honours padding, dilation, groups and
transposition; bmm bytes do not count the left operand twice; unknown dtype strings make
bytes unknown instead of 1 byte; the op dtype is chosen by element count (product of
dims), not by the sum of dims, and list-valued dims do not crash.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

__all__ = [
    "OpCost",
    "op_cost",
    "op_cost_from_args",
    "op_family",
    "collective_cost",
    "collective_bandwidth_gbps",
    "dtype_info",
    "scalar_type_info",
    "parse_concrete",
    "COMPOSITE_OPS",
    "SDPA_BACKWARD_FACTOR",
]


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


# ---------------------------------------------------------------------------------------
# dtypes: the vocabulary lives in opgraph/dtypes.py (also read by the device table)

from opgraph.dtypes import DTYPE_CATEGORY as _CATEGORY  # noqa: E402
from opgraph.dtypes import DTYPE_TABLE as _DTYPE_TABLE  # noqa: E402
from opgraph.dtypes import NON_TENSOR_TYPES as _NON_TENSOR_TYPES  # noqa: E402
from opgraph.dtypes import dtype_info, scalar_type_info  # noqa: E402  (re-exported: __all__)
from opgraph.dtypes import itemsize as _itemsize  # noqa: E402

# ---------------------------------------------------------------------------------------
# concrete inputs

_INT_RE = re.compile(r"^[+-]?\d+$")
_FLOAT_RE = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$|^[+-]?(inf|nan)$")


def _split_top(s: str) -> list[str]:
    parts: list[str] = []
    cur: list[str] = []
    depth = 0
    for ch in s:
        if ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if cur or parts:
        parts.append("".join(cur))
    return parts


def parse_concrete(value: Any) -> Any:
    """Parse one ``Concrete Inputs`` entry.

    ``''`` and ``'None'`` -> ``None``; ``'True'``/``'False'`` -> bool; integers and floats
    (``'0.'``, ``'1e-05'``) -> numbers; ``'[2, 2]'`` -> list (recursively); anything else is
    returned unchanged (e.g. ``'same'``).
    """
    if not isinstance(value, str):
        return value
    s = value.strip()
    if s in ("", "None"):
        return None
    if s == "True":
        return True
    if s == "False":
        return False
    if _INT_RE.match(s):
        return int(s)
    if _FLOAT_RE.match(s):
        return float(s)
    if len(s) >= 2 and s[0] in "[(" and s[-1] in "])":
        inner = s[1:-1].strip()
        return [] if not inner else [parse_concrete(p) for p in _split_top(inner)]
    return s


class _Unknown:
    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN = _Unknown()


def _is_shape(x: Any) -> bool:
    return isinstance(x, (list, tuple)) and all(isinstance(d, int) and not isinstance(d, bool) for d in x)


def _prod(xs: Iterable[int]) -> int:
    return math.prod(xs)


class _Args:
    """Indexed access to the recorded arguments of one op call."""

    def __init__(self, dims: Sequence[Any] | None, types: Sequence[Any] | None,
                 concrete: Sequence[Any] | None, strides: Sequence[Any] | None):
        self.dims = list(dims or [])
        self.types = list(types) if types else []
        self.concrete = list(concrete) if concrete is not None else None
        self.strides = list(strides) if strides else []
        self.n = len(self.dims)

    # -- type and shape -----------------------------------------------------------------
    def type_str(self, i: int) -> str | None:
        return self.types[i] if i < len(self.types) and isinstance(self.types[i], str) else None

    def is_tensor(self, i: int) -> bool:
        """True if argument *i* is a (single) tensor: known dtype, or non-empty int dims."""
        if i >= self.n or not _is_shape(self.dims[i]):
            return False
        t = self.type_str(i)
        if t is not None and dtype_info(t) is not None:
            return True
        return len(self.dims[i]) > 0 and (t is None or t not in _NON_TENSOR_TYPES)

    def shape(self, i: int) -> tuple[int, ...] | None:
        return tuple(self.dims[i]) if self.is_tensor(i) else None

    def numel(self, i: int) -> int:
        s = self.shape(i)
        return _prod(s) if s is not None else 0

    def dtype(self, i: int) -> str | None:
        t = self.type_str(i)
        info = dtype_info(t) if t is not None else None
        return info[0] if info else None

    def itemsize(self, i: int) -> int | None:
        return _itemsize(self.dtype(i))

    def distinct_numel(self, i: int) -> int:
        """Elements actually stored: dims with stride 0 (broadcast views) count once."""
        s = self.shape(i)
        if s is None:
            return 0
        st = self.strides[i] if i < len(self.strides) else None
        if st is not None and _is_shape(st) and len(st) == len(s) and _prod(s) > 0:
            return _prod(d for d, k in zip(s, st) if k != 0)
        return _prod(s)

    def nbytes(self, i: int) -> int | None:
        """Bytes of the distinct elements of tensor *i* (0 if absent, None if dtype unknown)."""
        if not self.is_tensor(i):
            return 0
        size = self.itemsize(i)
        return None if size is None else self.distinct_numel(i) * size

    def tensor_indices(self) -> list[int]:
        return [i for i in range(self.n) if self.is_tensor(i)]

    def tensor_list(self, i: int) -> list[tuple[int, ...]] | None:
        """Shapes of a TensorList argument (nested dims), or None."""
        if i >= self.n:
            return None
        d = self.dims[i]
        if isinstance(d, (list, tuple)) and d and all(_is_shape(x) for x in d):
            return [tuple(x) for x in d]
        return None

    # -- concrete values ----------------------------------------------------------------
    def ci(self, i: int) -> Any:
        """Concrete value of argument *i*: parsed value, ``None`` when the argument was
        recorded as absent (empty type and value in a trace that records concrete
        inputs), or :data:`UNKNOWN`."""
        if self.concrete is None or i >= len(self.concrete):
            return UNKNOWN
        raw = self.concrete[i]
        if isinstance(raw, str) and raw.strip() == "":
            t = self.type_str(i)
            if t == "" and i < self.n and self.dims[i] in ([], None):
                return None
            return UNKNOWN
        return parse_concrete(raw)


def _sum_bytes(*parts: int | None) -> int | None:
    total = 0
    for p in parts:
        if p is None:
            return None
        total += p
    return total


def _mul_bytes(n: int, size: int | None) -> int | None:
    return None if size is None else n * size


def _op_dtype(a: _Args) -> str | None:
    """dtype of the largest tensor input by element count (first one on ties); ``None``
    when that input's dtype string is unknown or the op has only tensor lists."""
    best, best_n = None, -1
    for i in a.tensor_indices():
        n = a.numel(i)
        if n > best_n:
            best, best_n = i, n
    return None if best is None else a.dtype(best)


def _broadcast(shapes: Sequence[Sequence[int]]) -> tuple[int, ...] | None:
    nd = max((len(s) for s in shapes), default=0)
    out = []
    for k in range(nd):
        dim = 1
        for s in shapes:
            j = len(s) - nd + k
            if j < 0:
                continue
            d = s[j]
            if d == 1:
                continue
            if dim != 1 and d != dim:
                return None
            dim = d
        out.append(dim)
    return tuple(out)


def _promote(dtypes: Sequence[str | None], ndims: Sequence[int]) -> str | None:
    """Simplified torch type promotion among tensor operands (dimensioned tensors win
    over 0-dim tensors of the same category)."""
    if any(d is None for d in dtypes):
        return None
    if not dtypes:
        return None
    def pick(cands: list[str]) -> str:
        top = max(_CATEGORY.get(c, 2) for c in cands)
        cands = [c for c in cands if _CATEGORY.get(c, 2) == top]
        if len(set(cands)) == 1:
            return cands[0]
        if set(cands) <= {"fp16", "bf16"}:
            return "fp32"
        return max(cands, key=lambda c: _DTYPE_TABLE[c][1])
    dimmed = [d for d, n in zip(dtypes, ndims) if n > 0]
    zero = [d for d, n in zip(dtypes, ndims) if n == 0]
    if not dimmed:
        return pick(zero)  # type: ignore[arg-type]
    best = pick(dimmed)  # type: ignore[arg-type]
    if zero:
        z = pick(zero)  # type: ignore[arg-type]
        if _CATEGORY.get(z, 2) > _CATEGORY.get(best, 2):
            return z
    return best


# ---------------------------------------------------------------------------------------
# rule registry

_Rule = Callable[["_Ctx"], "OpCost | None"]


@dataclass(frozen=True)
class _Ctx:
    name: str
    a: _Args
    world_size: int | None
    output_dims: Sequence[Any] | None


_RULES: dict[str, tuple[str, _Rule]] = {}
_PATTERN_RULES: list[tuple[re.Pattern[str], str, _Rule]] = []


def _rule(family: str, *names: str) -> Callable[[_Rule], _Rule]:
    def deco(fn: _Rule) -> _Rule:
        for n in names:
            _RULES[n] = (family, fn)
        return fn
    return deco


def _pattern_rule(family: str, pattern: str) -> Callable[[_Rule], _Rule]:
    def deco(fn: _Rule) -> _Rule:
        _PATTERN_RULES.append((re.compile(pattern), family, fn))
        return fn
    return deco


def _lookup_rule(name: str) -> tuple[str, _Rule] | None:
    hit = _RULES.get(name)
    if hit is not None:
        return hit
    for pat, fam, fn in _PATTERN_RULES:
        if pat.match(name):
            return fam, fn
    return None


def op_family(name: str) -> str | None:
    """Family of the rule that models *name* (``gemm``, ``conv``, ``attention``, ``norm``,
    ``softmax``, ``reduction``, ``elementwise``, ``copy``, ``embedding``,
    ``collective``), or ``None`` if the operator has no model."""
    hit = _lookup_rule(name)
    return hit[0] if hit else None


def op_cost(
    name: str,
    input_dims: list,
    input_types: list,
    concrete_inputs: list | None,
    input_strides: list | None = None,
    *,
    world_size: int | None = None,
    output_dims: list | None = None,
) -> OpCost | None:
    """FLOPs and bytes of one operator call, from the args of a Kineto ``cpu_op`` event.

    Args:
        name: the event name, e.g. ``"aten::addmm"``, ``"nccl:all_reduce"``.
        input_dims: ``args["Input Dims"]`` (``"Input dims"`` in old traces): one shape per
            argument, ``[]`` for non-tensors, a list of shapes for TensorList arguments.
        input_types: ``args["Input type"]``: dtype strings (``"float"``,
            ``"c10::BFloat16"``, ``"long int"``, ...) or markers (``"Scalar"``,
            ``"ScalarList"``, ``""``). May be empty (old traces): bytes are then unknown.
        concrete_inputs: ``args["Concrete Inputs"]`` (strings such as ``"[2, 2]"``,
            ``"False"``) or ``None`` when the trace did not record them. Rules that need a
            hyper-parameter (conv stride, ...) return ``None`` without it.
        input_strides: ``args["Input Strides"]``; used to count broadcast (stride-0)
            inputs once.
        world_size: size of the process group, for collectives (a group size recorded in
            the op's own arguments takes precedence).
        output_dims: output shapes when known from elsewhere (e.g. old traces'
            ``Output Dims``, or the grad-output shape of the matching backward op). Used
            only by rules that cannot derive the output from the inputs (conv without
            stride/padding, FBGEMM lookups without ``total_D``).

    Returns:
        An :class:`OpCost`, or ``None`` when there is no model for *name* or the recorded
        arguments are insufficient. Never raises on malformed arguments.
    """
    hit = _lookup_rule(name)
    if hit is None:
        return None
    try:
        ctx = _Ctx(name, _Args(input_dims, input_types, concrete_inputs, input_strides),
                   world_size, output_dims)
        return hit[1](ctx)
    except (TypeError, ValueError, IndexError, ZeroDivisionError, KeyError):
        return None


def op_cost_from_args(name: str, args: Mapping[str, Any], *, world_size: int | None = None) -> OpCost | None:
    """:func:`op_cost` on a raw Kineto ``args`` dict (handles the ``Input dims`` spelling)."""
    dims = args.get("Input Dims", args.get("Input dims"))
    if dims is None:
        return None
    out = args.get("Output Dims", args.get("Output dims")) or None
    return op_cost(name, dims, args.get("Input type") or [], args.get("Concrete Inputs"),
                   args.get("Input Strides"), world_size=world_size, output_dims=out)


def _cost(flops: float | int, nbytes: int | None, dtype: str | None, model: str,
          assumptions: Sequence[str] = (), **kw: Any) -> OpCost:
    return OpCost(int(round(flops)), nbytes, dtype, model, assumptions=tuple(assumptions), **kw)


# ---------------------------------------------------------------------------------------
# GEMM family: 2*M*N*K FLOPs; bias / beta*C additions are not counted as FLOPs (their
# bytes are). Output dtype = dtype of the first matrix unless out_dtype is recorded.


def _gemm_problem(b: int, m: int, n: int, k: int) -> dict[str, Any]:
    return {"B": b, "M": m, "N": n, "K": k}


def _gemm_bytes(a: _Args, mats: Sequence[int], out_numel: int, out_size: int | None,
                extra: Sequence[int] = ()) -> int | None:
    return _sum_bytes(*(a.nbytes(i) for i in (*mats, *extra)), _mul_bytes(out_numel, out_size))


@_rule("gemm", "aten::mm", "aten::_int_mm")
def _mm(c: _Ctx) -> OpCost | None:
    a = c.a
    x, w = a.shape(0), a.shape(1)
    if x is None or w is None or len(x) != 2 or len(w) != 2 or x[1] != w[0]:
        return None
    m, k, n = x[0], x[1], w[1]
    out_size = 4 if c.name == "aten::_int_mm" else a.itemsize(0)
    return _cost(2 * m * n * k, _gemm_bytes(a, (0, 1), m * n, out_size), _op_dtype(a), "gemm",
                 problem=_gemm_problem(1, m, n, k))


@_rule("gemm", "aten::addmm", "aten::addmm_")
def _addmm(c: _Ctx) -> OpCost | None:
    a = c.a
    x, w = a.shape(1), a.shape(2)
    if x is None or w is None or len(x) != 2 or len(w) != 2 or x[1] != w[0]:
        return None
    m, k, n = x[0], x[1], w[1]
    beta = a.ci(3)
    extra = () if beta == 0 else (0,)  # beta == 0: C is not read
    return _cost(2 * m * n * k, _gemm_bytes(a, (1, 2), m * n, a.itemsize(1), extra),
                 _op_dtype(a), "gemm", problem=_gemm_problem(1, m, n, k))


@_rule("gemm", "aten::bmm")
def _bmm(c: _Ctx) -> OpCost | None:
    a = c.a
    x, w = a.shape(0), a.shape(1)
    if x is None or w is None or len(x) != 3 or len(w) != 3 or x[0] != w[0] or x[2] != w[1]:
        return None
    b, m, k, n = x[0], x[1], x[2], w[2]
    return _cost(2 * b * m * n * k, _gemm_bytes(a, (0, 1), b * m * n, a.itemsize(0)),
                 _op_dtype(a), "gemm", problem=_gemm_problem(b, m, n, k))


@_rule("gemm", "aten::baddbmm", "aten::baddbmm_", "aten::addbmm", "aten::addbmm_")
def _baddbmm(c: _Ctx) -> OpCost | None:
    a = c.a
    x, w = a.shape(1), a.shape(2)
    if x is None or w is None or len(x) != 3 or len(w) != 3 or x[0] != w[0] or x[2] != w[1]:
        return None
    b, m, k, n = x[0], x[1], x[2], w[2]
    out_numel = m * n if c.name.startswith("aten::addbmm") else b * m * n
    extra = () if a.ci(3) == 0 else (0,)
    return _cost(2 * b * m * n * k, _gemm_bytes(a, (1, 2), out_numel, a.itemsize(1), extra),
                 _op_dtype(a), "gemm", problem=_gemm_problem(b, m, n, k))


@_rule("gemm", "aten::_scaled_mm")
def _scaled_mm(c: _Ctx) -> OpCost | None:
    # _scaled_mm(self, mat2, scale_a, scale_b, bias?, scale_result?, out_dtype?, use_fast_accum)
    a = c.a
    x, w = a.shape(0), a.shape(1)
    if x is None or w is None or len(x) != 2 or len(w) != 2 or x[1] != w[0]:
        return None
    m, k, n = x[0], x[1], w[1]
    notes = []
    od = a.ci(6)
    if isinstance(od, int):
        info = scalar_type_info(od)
        out_size = info[1] if info else None
    else:
        out_size = a.itemsize(0)  # out_dtype=None means the dtype of self
        if od is UNKNOWN:
            notes.append("out_dtype not recorded: assumed the input dtype")
    return _cost(2 * m * n * k, _gemm_bytes(a, (0, 1), m * n, out_size, (2, 3, 4, 5)),
                 _op_dtype(a), "gemm", notes, problem=_gemm_problem(1, m, n, k))


def _matmul_shapes(x: tuple[int, ...], w: tuple[int, ...]) -> tuple[int, int, int, int] | None:
    """(batch, M, K, N) of torch.matmul semantics, batch dims broadcast."""
    if len(x) == 0 or len(w) == 0:
        return None
    xs = (1,) + x if len(x) == 1 else x
    ws = w + (1,) if len(w) == 1 else w
    if xs[-1] != ws[-2]:
        return None
    batch = _broadcast([xs[:-2], ws[:-2]])
    if batch is None:
        return None
    return _prod(batch), xs[-2], xs[-1], ws[-1]


@_rule("gemm", "aten::matmul")
def _matmul(c: _Ctx) -> OpCost | None:
    a = c.a
    x, w = a.shape(0), a.shape(1)
    if x is None or w is None:
        return None
    bmkn = _matmul_shapes(x, w)
    if bmkn is None:
        return None
    b, m, k, n = bmkn
    return _cost(2 * b * m * n * k, _gemm_bytes(a, (0, 1), b * m * n, a.itemsize(0)),
                 _op_dtype(a), "gemm", problem=_gemm_problem(b, m, n, k))


@_rule("gemm", "aten::linear", "vllm::rocm_unquantized_gemm")
def _linear(c: _Ctx) -> OpCost | None:
    # linear(input[..., K], weight[N, K], bias[N]?) -> [..., N]
    a = c.a
    x, w = a.shape(0), a.shape(1)
    if x is None or w is None or len(x) < 1 or len(w) not in (1, 2) or x[-1] != w[-1]:
        return None
    k = x[-1]
    n = w[0] if len(w) == 2 else 1
    m = _prod(x[:-1])
    return _cost(2 * m * n * k, _gemm_bytes(a, (0, 1), m * n, a.itemsize(0), (2,)),
                 _op_dtype(a), "gemm", problem=_gemm_problem(1, m, n, k))


# ---------------------------------------------------------------------------------------
# Convolution: FLOPs = 2 * N * prod(spatial) * numel(W), spatial = output spatial dims for
# a normal conv (= 2*N*Cout*prod(out)*Cin/groups*prod(k)) and input spatial dims for a
# transposed conv. Bias additions are not counted as FLOPs.


def _as_list(v: Any, nd: int) -> list[int] | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return [v] * nd
    if isinstance(v, (list, tuple)) and v and all(isinstance(e, int) and not isinstance(e, bool) for e in v):
        if len(v) == 1:
            return list(v) * nd
        return list(v) if len(v) == nd else None
    return None


def _conv_out_spatial(in_sp: Sequence[int], k: Sequence[int], stride: Sequence[int],
                      pad: Sequence[int], dil: Sequence[int], transposed: bool,
                      out_pad: Sequence[int]) -> list[int] | None:
    out = []
    for i, kk, s, p, d, op in zip(in_sp, k, stride, pad, dil, out_pad):
        if transposed:
            o = (i - 1) * s - 2 * p + d * (kk - 1) + op + 1
        else:
            o = (i + 2 * p - d * (kk - 1) - 1) // s + 1
        if o < 0:
            return None
        out.append(o)
    return out


def _conv_problem(x: Sequence[Any], w: Sequence[int], cout: int | None, stride: Any, padding: Any,
                  dilation: Any, groups: Any, transposed: bool) -> dict[str, Any]:
    """``N C H W K R S`` (+ ``D T`` for 3-d) of a convolution with input ``x`` [N, C, *spatial]
    and weight ``w`` [K, C/groups, *kernel] (``[C, K/groups, ...]`` when transposed); ``x``
    may hold ``None`` for what is unknown."""
    nd = len(w) - 2
    sp, ks = list(x[2:]), list(w[2:])
    if nd == 1:
        sp, ks = [1] + sp, [1] + ks
    d3 = nd == 3
    def tup(v: Any) -> tuple[int, ...] | None:
        return tuple(v) if isinstance(v, (list, tuple)) else None
    g = groups if isinstance(groups, int) and not isinstance(groups, bool) and groups > 0 else None
    return {"N": x[0], "C": x[1], "D": sp[0] if d3 else None, "H": sp[-2], "W": sp[-1], "K": cout,
            "T": ks[0] if d3 else None, "R": ks[-2], "S": ks[-1], "stride": tup(stride), "padding": tup(padding),
            "dilation": tup(dilation), "groups": g, "transposed": bool(transposed)}


def _conv_forward(c: _Ctx, *, bias: int | None, stride: Any, padding: Any, dilation: Any,
                  transposed: Any, output_padding: Any, groups: Any) -> OpCost | None:
    a = c.a
    x, w = a.shape(0), a.shape(1)
    if x is None or w is None or len(w) < 3:
        return None
    nd = len(w) - 2
    if len(x) == nd + 1:  # unbatched input
        x = (1,) + x
    if len(x) != nd + 2:
        return None
    n, in_sp = x[0], x[2:]
    if transposed is UNKNOWN or transposed is None or not isinstance(transposed, bool):
        return None
    notes: list[str] = []
    out_sp: list[int] | None = None
    if isinstance(padding, str):
        if padding == "valid":
            padding = 0
        elif padding == "same":
            padding = None
            out_sp = list(in_sp) if not transposed else None
    st, pd, dl = _as_list(stride, nd), _as_list(padding, nd), _as_list(dilation, nd)
    opd = _as_list(output_padding, nd) if transposed else [0] * nd
    if out_sp is None and None not in (st, pd, dl, opd):
        out_sp = _conv_out_spatial(in_sp, w[2:], st, pd, dl, transposed, opd)  # type: ignore[arg-type]
    g = groups if isinstance(groups, int) and not isinstance(groups, bool) and groups > 0 else None
    if transposed:
        cout = w[1] * g if g is not None else None
    else:
        cout = w[0]
    if out_sp is None and c.output_dims:
        od = c.output_dims[0]
        if _is_shape(od) and len(od) == nd + 2:
            out_sp, cout = list(od[2:]), od[1]
            notes.append("output shape taken from output_dims")
    if out_sp is None and not transposed:
        return None
    spatial = in_sp if transposed else out_sp
    flops = 2 * n * _prod(spatial) * _prod(w)  # type: ignore[arg-type]
    if out_sp is None or cout is None:
        nbytes = None
    else:
        nbytes = _sum_bytes(a.nbytes(0), a.nbytes(1), a.nbytes(bias) if bias is not None else 0,
                            _mul_bytes(n * cout * _prod(out_sp), a.itemsize(0)))
    return _cost(flops, nbytes, _op_dtype(a), "conv", notes,
                 problem=_conv_problem(x, w, cout, st, pd, dl, g, transposed))


@_rule("conv", "aten::convolution", "aten::_convolution", "aten::convolution_overrideable")
def _convolution(c: _Ctx) -> OpCost | None:
    a = c.a
    return _conv_forward(c, bias=2, stride=a.ci(3), padding=a.ci(4), dilation=a.ci(5),
                         transposed=a.ci(6), output_padding=a.ci(7), groups=a.ci(8))


@_rule("conv", "aten::conv1d", "aten::conv2d", "aten::conv3d")
def _convnd(c: _Ctx) -> OpCost | None:
    a = c.a
    return _conv_forward(c, bias=2, stride=a.ci(3), padding=a.ci(4), dilation=a.ci(5),
                         transposed=False, output_padding=0, groups=a.ci(6))


@_rule("conv", "aten::conv_transpose1d", "aten::conv_transpose2d", "aten::conv_transpose3d")
def _conv_transpose(c: _Ctx) -> OpCost | None:
    # conv_transposeNd(input, weight, bias, stride, padding, output_padding, groups, dilation)
    a = c.a
    return _conv_forward(c, bias=2, stride=a.ci(3), padding=a.ci(4), dilation=a.ci(7),
                         transposed=True, output_padding=a.ci(5), groups=a.ci(6))


@_rule("conv", "aten::cudnn_convolution")
def _cudnn_conv(c: _Ctx) -> OpCost | None:
    a = c.a
    if a.is_tensor(2):  # old overload with bias: (self, weight, bias, padding, stride, dilation, groups, ...)
        return _conv_forward(c, bias=2, padding=a.ci(3), stride=a.ci(4), dilation=a.ci(5),
                             transposed=False, output_padding=0, groups=a.ci(6))
    # (self, weight, padding, stride, dilation, groups, benchmark, deterministic, allow_tf32)
    return _conv_forward(c, bias=None, padding=a.ci(2), stride=a.ci(3), dilation=a.ci(4),
                         transposed=False, output_padding=0, groups=a.ci(5))


@_rule("conv", "aten::cudnn_convolution_transpose")
def _cudnn_conv_t(c: _Ctx) -> OpCost | None:
    # (self, weight, padding, output_padding, stride, dilation, groups, ...)
    a = c.a
    return _conv_forward(c, bias=None, padding=a.ci(2), output_padding=a.ci(3), stride=a.ci(4),
                         dilation=a.ci(5), transposed=True, groups=a.ci(6))


@_rule("conv", "aten::miopen_convolution", "aten::miopen_depthwise_convolution",
       "aten::mkldnn_convolution")
def _miopen_conv(c: _Ctx) -> OpCost | None:
    # (self, weight, bias?, padding, stride, dilation, groups, ...)
    a = c.a
    return _conv_forward(c, bias=2, padding=a.ci(3), stride=a.ci(4), dilation=a.ci(5),
                         transposed=False, output_padding=0, groups=a.ci(6))


@_rule("conv", "aten::miopen_convolution_transpose")
def _miopen_conv_t(c: _Ctx) -> OpCost | None:
    # (self, weight, bias?, padding, output_padding, stride, dilation, groups, ...)
    a = c.a
    return _conv_forward(c, bias=2, padding=a.ci(3), output_padding=a.ci(4), stride=a.ci(5),
                         dilation=a.ci(6), transposed=True, groups=a.ci(7))


def _bool_mask(v: Any, n: int) -> list[bool] | None:
    if isinstance(v, (list, tuple)) and len(v) == n and all(isinstance(e, bool) for e in v):
        return list(v)
    return None


def _conv_bwd(a: _Args, go: tuple[int, ...], x: tuple[int, ...] | None, w: tuple[int, ...],
              transposed: bool, mask: Sequence[bool], *, go_i: int, x_i: int | None, w_i: int,
              grad_input_numel: int | None, grad_weight_numel: int | None,
              hyper: Sequence[Any] = (None, None, None, None),
              input_shape: Any = None) -> OpCost | None:
    """``hyper``: the recorded (stride, padding, dilation, groups); ``input_shape``: the
    forward input's shape when ``x`` is not an argument (the problem size only)."""
    nd = len(w) - 2
    if len(go) == nd + 1:
        go = (1,) + go
    if len(go) != nd + 2:
        return None
    if transposed:
        if x is None:
            return None
        xx = (1,) + x if len(x) == nd + 1 else x
        spatial = xx[2:]
    else:
        spatial = go[2:]
    n = go[0]
    fwd = 2 * n * _prod(spatial) * _prod(w)
    flops = (fwd if mask[0] else 0) + (fwd if mask[1] else 0)
    if len(mask) > 2 and mask[2]:
        flops += _prod(go)  # grad_bias: one add per grad_output element
    size = a.itemsize(go_i)
    parts: list[int | None] = [a.nbytes(go_i)]
    if mask[0]:
        parts.append(a.nbytes(w_i))
        parts.append(_mul_bytes(grad_input_numel, size) if grad_input_numel is not None else None)
    if mask[1]:
        parts.append(a.nbytes(x_i) if x_i is not None else 0)
        parts.append(_mul_bytes(grad_weight_numel, size) if grad_weight_numel is not None else None)
    if len(mask) > 2 and mask[2]:
        parts.append(_mul_bytes(go[1], size))
    xs: Any = x if x is not None else (tuple(input_shape) if _is_shape(input_shape) and input_shape else None)
    if xs is not None and len(xs) == nd + 1:
        xs = (1,) + tuple(xs)
    if xs is None or len(xs) != nd + 2:  # forward input unknown: batch from grad_output only
        xs = (go[0], None) + (None,) * nd
    st, pd, dl = (_as_list(h, nd) for h in hyper[:3])
    g = hyper[3]
    gi = g if isinstance(g, int) and not isinstance(g, bool) and g > 0 else None
    cout = (w[1] * gi if gi is not None else None) if transposed else w[0]
    problem = _conv_problem(xs, w, cout, st, pd, dl, gi, transposed)
    return _cost(flops, _sum_bytes(*parts), _op_dtype(a), "conv_backward", problem=problem)


@_rule("conv", "aten::convolution_backward", "aten::convolution_backward_overrideable")
def _convolution_backward(c: _Ctx) -> OpCost | None:
    # (grad_output, input, weight, bias_sizes, stride, padding, dilation, transposed,
    #  output_padding, groups, output_mask[3])
    a = c.a
    go, x, w = a.shape(0), a.shape(1), a.shape(2)
    transposed = a.ci(7)
    mask = _bool_mask(a.ci(10), 3)
    if go is None or w is None or len(w) < 3 or mask is None or not isinstance(transposed, bool):
        return None
    return _conv_bwd(a, go, x, w, transposed, mask, go_i=0, x_i=1, w_i=2,
                     grad_input_numel=a.numel(1) if x is not None else None,
                     grad_weight_numel=_prod(w), hyper=(a.ci(4), a.ci(5), a.ci(6), a.ci(9)))


@_rule("conv", "aten::cudnn_convolution_backward")
def _cudnn_convolution_backward(c: _Ctx) -> OpCost | None:
    # old (<= 1.10): (self, grad_output, weight, padding, stride, dilation, groups,
    #                 benchmark, deterministic, allow_tf32, output_mask[2])
    a = c.a
    x, go, w = a.shape(0), a.shape(1), a.shape(2)
    mask = _bool_mask(a.ci(10), 2)
    if go is None or w is None or len(w) < 3 or mask is None:
        return None
    return _conv_bwd(a, go, x, w, False, mask, go_i=1, x_i=0, w_i=2,
                     grad_input_numel=a.numel(0) if x is not None else None,
                     grad_weight_numel=_prod(w), hyper=(a.ci(4), a.ci(3), a.ci(5), a.ci(6)))


@_rule("conv", "aten::cudnn_convolution_backward_input")
def _cudnn_conv_bwd_input(c: _Ctx) -> OpCost | None:
    # old: (self_size, grad_output, weight, padding, stride, dilation, groups, ...)
    a = c.a
    go, w = a.shape(1), a.shape(2)
    if go is None or w is None or len(w) < 3:
        return None
    size = a.ci(0)
    gi = _prod(size) if _is_shape(size) and size else None
    return _conv_bwd(a, go, None, w, False, [True, False], go_i=1, x_i=None, w_i=2,
                     grad_input_numel=gi, grad_weight_numel=None,
                     hyper=(a.ci(4), a.ci(3), a.ci(5), a.ci(6)), input_shape=size)


@_rule("conv", "aten::cudnn_convolution_backward_weight")
def _cudnn_conv_bwd_weight(c: _Ctx) -> OpCost | None:
    # old: (weight_size, grad_output, self, padding, stride, dilation, groups, ...)
    a = c.a
    go, x = a.shape(1), a.shape(2)
    size = a.ci(0)
    if not (_is_shape(size) and len(size) >= 3):
        od = c.output_dims[0] if c.output_dims else None
        size = od if od is not None and _is_shape(od) and len(od) >= 3 else None
    if go is None or size is None:
        return None
    return _conv_bwd(a, go, x, tuple(size), False, [False, True], go_i=1, x_i=2, w_i=1,
                     grad_input_numel=None, grad_weight_numel=_prod(size),
                     hyper=(a.ci(4), a.ci(3), a.ci(5), a.ci(6)))


# ---------------------------------------------------------------------------------------
# Attention. Forward FLOPs = 2*B*H*Sq*Skv*(Dqk + Dv) (= 4*B*H*Sq*Skv*D for Dqk == Dv): the
# QK^T and PV matmuls; softmax is not counted. With is_causal recorded True the count is
# halved (the causal triangle). Backward = 2.5 x forward, the FlashAttention convention
# (5 matmuls, counting the recomputation of QK^T: Dao, "FlashAttention-2", arXiv
# 2307.08691, Sec. 4; flash-attention benchmarks/benchmark_flash_attention.py; equally
# torch/utils/flop_counter.py sdpa_backward_flop_count, 5 bmm = 2.5 x sdpa_flop_count).

#: Backward/forward FLOP ratio for attention (see above).
SDPA_BACKWARD_FACTOR = 2.5


def _attn(c: _Ctx, *, q: int, k: int, v: int, layout: str, causal: Any, causal_kind: str,
          extra_read: Sequence[int] = (), backward: bool = False, go: int | None = None,
          out: int | None = None, varlen: int | None = None) -> OpCost | None:
    a = c.a
    qs, ks, vs = a.shape(q), a.shape(k), a.shape(v)
    if qs is None or ks is None or vs is None:
        return None
    if varlen is not None and a.is_tensor(varlen):
        return None  # packed variable-length batch: per-sequence lengths are not recorded
    if layout == "bshd":
        if len(qs) != 4 or len(ks) != 4 or len(vs) != 4:
            return None
        bh, sq, d = qs[0] * qs[2], qs[1], qs[3]
        skv, dv = ks[1], vs[3]
        b_, h_ = qs[0], qs[2]
    else:  # [..., S, D] with batch and heads leading
        if len(qs) < 2 or len(ks) < 2 or len(vs) < 2:
            return None
        bh, sq, d = _prod(qs[:-2]), qs[-2], qs[-1]
        skv, dv = ks[-2], vs[-1]
        b_, h_ = _prod(qs[:-3]), (qs[-3] if len(qs) >= 3 else 1)
    if ks[-1] != d:
        return None
    notes: list[str] = []
    flops = 2 * bh * sq * skv * (d + dv)
    if causal_kind == "mask_type":  # efficient attention: 0 none, 1/2 causal variants
        is_causal = causal in (1, 2) if isinstance(causal, int) and not isinstance(causal, bool) else None
    else:
        is_causal = causal if isinstance(causal, bool) else None
    if is_causal is None:
        notes.append("is_causal not recorded: counted as non-causal")
    elif is_causal:
        flops //= 2
    size = a.itemsize(q)
    out_bytes = _mul_bytes(bh * sq * dv, size)
    if backward:
        flops = int(flops * SDPA_BACKWARD_FACTOR)
        nbytes = _sum_bytes(a.nbytes(go) if go is not None else 0,
                            a.nbytes(out) if out is not None else 0,
                            a.nbytes(q), a.nbytes(k), a.nbytes(v),          # read
                            a.nbytes(q), a.nbytes(k), a.nbytes(v),          # dq, dk, dv
                            *(a.nbytes(i) for i in extra_read))
    else:
        nbytes = _sum_bytes(a.nbytes(q), a.nbytes(k), a.nbytes(v), out_bytes,
                            *(a.nbytes(i) for i in extra_read))
    return _cost(flops, nbytes, _op_dtype(a), "sdpa_backward" if backward else "sdpa", notes,
                 problem={"B": b_, "H": h_, "Sq": sq, "Sk": skv, "D": d, "Dv": dv, "causal": is_causal})


@_rule("attention", "aten::scaled_dot_product_attention")
def _sdpa(c: _Ctx) -> OpCost | None:
    # (query, key, value, attn_mask?, dropout_p, is_causal, scale?, enable_gqa)
    return _attn(c, q=0, k=1, v=2, layout="bhsd", causal=c.a.ci(5), causal_kind="bool",
                 extra_read=(3,))


@_rule("attention", "aten::_scaled_dot_product_flash_attention",
       "aten::_scaled_dot_product_flash_attention_for_cpu")
def _sdpa_flash(c: _Ctx) -> OpCost | None:
    # (query, key, value, dropout_p, is_causal, ...)
    return _attn(c, q=0, k=1, v=2, layout="bhsd", causal=c.a.ci(4), causal_kind="bool")


@_rule("attention", "aten::_scaled_dot_product_efficient_attention",
       "aten::_scaled_dot_product_cudnn_attention")
def _sdpa_eff(c: _Ctx) -> OpCost | None:
    # (query, key, value, attn_bias?, compute_log_sumexp, dropout_p, is_causal, ...)
    return _attn(c, q=0, k=1, v=2, layout="bhsd", causal=c.a.ci(6), causal_kind="bool",
                 extra_read=(3,))


@_rule("attention", "aten::_scaled_dot_product_fused_attention_overrideable")
def _sdpa_fused(c: _Ctx) -> OpCost | None:
    # (query, key, value, attn_bias?, dropout_p, is_causal, return_debug_mask, scale?)
    return _attn(c, q=0, k=1, v=2, layout="bhsd", causal=c.a.ci(5), causal_kind="bool",
                 extra_read=(3,))


@_rule("attention", "aten::_flash_attention_forward")
def _flash_fwd(c: _Ctx) -> OpCost | None:
    # (query[B,S,H,D], key, value, cum_seq_q?, cum_seq_k?, max_q, max_k, dropout_p, is_causal, ...)
    return _attn(c, q=0, k=1, v=2, layout="bshd", causal=c.a.ci(8), causal_kind="bool", varlen=3)


@_rule("attention", "aten::_efficient_attention_forward")
def _eff_fwd(c: _Ctx) -> OpCost | None:
    # (query[B,S,H,D], key, value, bias?, cu_seqlens_q?, cu_seqlens_k?, max_seqlen_q,
    #  max_seqlen_k, dropout_p, custom_mask_type, ...)
    return _attn(c, q=0, k=1, v=2, layout="bshd", causal=c.a.ci(9), causal_kind="mask_type",
                 extra_read=(3,), varlen=4)


@_rule("attention", "aten::_scaled_dot_product_flash_attention_backward")
def _sdpa_flash_bwd(c: _Ctx) -> OpCost | None:
    # (grad_out, query, key, value, out, logsumexp, cum_seq_q, cum_seq_k, max_q, max_k,
    #  dropout_p, is_causal, ...)
    return _attn(c, q=1, k=2, v=3, layout="bhsd", causal=c.a.ci(11), causal_kind="bool",
                 backward=True, go=0, out=4)


@_rule("attention", "aten::_scaled_dot_product_efficient_attention_backward")
def _sdpa_eff_bwd(c: _Ctx) -> OpCost | None:
    # (grad_out, query, key, value, attn_bias, out, logsumexp, philox_seed, philox_offset,
    #  dropout_p, grad_input_mask, is_causal, ...)
    return _attn(c, q=1, k=2, v=3, layout="bhsd", causal=c.a.ci(11), causal_kind="bool",
                 backward=True, go=0, out=5, extra_read=(4,))


@_rule("attention", "aten::_scaled_dot_product_cudnn_attention_backward")
def _sdpa_cudnn_bwd(c: _Ctx) -> OpCost | None:
    # (grad_out, query, key, value, out, logsumexp, philox_seed, philox_offset, attn_bias,
    #  cum_seq_q, cum_seq_k, max_q, max_k, dropout_p, is_causal, ...)
    return _attn(c, q=1, k=2, v=3, layout="bhsd", causal=c.a.ci(14), causal_kind="bool",
                 backward=True, go=0, out=4, extra_read=(8,))


@_rule("attention", "aten::_scaled_dot_product_flash_attention_for_cpu_backward")
def _sdpa_cpu_bwd(c: _Ctx) -> OpCost | None:
    # (grad_out, query, key, value, out, logsumexp, dropout_p, is_causal, ...)
    return _attn(c, q=1, k=2, v=3, layout="bhsd", causal=c.a.ci(7), causal_kind="bool",
                 backward=True, go=0, out=4)


@_rule("attention", "aten::_flash_attention_backward")
def _flash_bwd(c: _Ctx) -> OpCost | None:
    # (grad_out, query[B,S,H,D], key, value, out, logsumexp, cum_seq_q, cum_seq_k, max_q,
    #  max_k, dropout_p, is_causal, ...)
    return _attn(c, q=1, k=2, v=3, layout="bshd", causal=c.a.ci(11), causal_kind="bool",
                 backward=True, go=0, out=4, varlen=6)


@_rule("attention", "aten::_efficient_attention_backward")
def _eff_bwd(c: _Ctx) -> OpCost | None:
    # (grad_out, query[B,S,H,D], key, value, bias?, out, cu_seqlens_q?, cu_seqlens_k?,
    #  max_seqlen_q, max_seqlen_k, logsumexp, dropout_p, philox_seed, philox_offset,
    #  custom_mask_type, ...)
    return _attn(c, q=1, k=2, v=3, layout="bshd", causal=c.a.ci(14), causal_kind="mask_type",
                 backward=True, go=0, out=5, extra_read=(4,), varlen=6)


# ---------------------------------------------------------------------------------------
# Normalisation. FLOPs per element (convention; these ops are memory-bound):
#   statistics 3 (mean: 1 add; variance: 1 sub + 1 FMA-ish), normalise 2 (sub, mul),
#   RMSNorm statistics 2 (square, add) and normalise 1 (mul), affine +1 per weight and
#   +1 per bias. Backward = 2 x forward FLOPs.
# Bytes: read x (+ weight, bias, running stats); write y and the saved statistics (one
# mean and one rstd per normalised group, in fp32, fp64 for fp64 inputs).

_NORM_BWD_FACTOR = 2


def _stat_size(dtype: str | None) -> int:
    return 8 if dtype == "fp64" else 4


def _norm_fwd(a: _Args, *, x: int, weight: int | None, bias: int | None, groups: int | None,
              n_stats: int, per_elem: int, extra: Sequence[int] = (), model: str,
              notes: Sequence[str] = (), write_extra: Sequence[int] = ()) -> OpCost | None:
    xs = a.shape(x)
    if xs is None:
        return None
    numel = _prod(xs)
    affine = int(weight is not None and a.is_tensor(weight)) + int(bias is not None and a.is_tensor(bias))
    flops = numel * (per_elem + affine)
    stats = None if groups is None else _mul_bytes(n_stats * groups, _stat_size(a.dtype(x)))
    nbytes = _sum_bytes(a.nbytes(x), a.nbytes(weight) if weight is not None else 0,
                        a.nbytes(bias) if bias is not None else 0,
                        *(a.nbytes(i) for i in extra), _mul_bytes(numel, a.itemsize(x)), stats,
                        *(a.nbytes(i) for i in write_extra))
    return _cost(flops, nbytes, _op_dtype(a), model, notes)


def _groups_from_shape(xs: tuple[int, ...] | None, norm_shape: Any) -> int | None:
    if xs is None or not _is_shape(norm_shape):
        return None
    inner = _prod(norm_shape) if norm_shape else 1
    return _prod(xs) // inner if inner else None


def _norm_shape(a: _Args, idx: int, weight: int | None) -> Any:
    ns = a.ci(idx)
    if _is_shape(ns):
        return ns
    if weight is not None and a.is_tensor(weight):
        return list(a.shape(weight) or [])  # weight.shape == normalized_shape by definition
    return None


@_rule("norm", "aten::layer_norm", "aten::native_layer_norm")
def _layer_norm(c: _Ctx) -> OpCost | None:
    # layer_norm(input, normalized_shape, weight?, bias?, eps, cudnn_enable)
    a = c.a
    groups = _groups_from_shape(a.shape(0), _norm_shape(a, 1, 2))
    return _norm_fwd(a, x=0, weight=2, bias=3, groups=groups, n_stats=2, per_elem=5,
                     model="layer_norm")


@_rule("norm", "aten::rms_norm", "aten::_fused_rms_norm")
def _rms_norm(c: _Ctx) -> OpCost | None:
    # rms_norm(input, normalized_shape, weight?, eps?)
    a = c.a
    groups = _groups_from_shape(a.shape(0), _norm_shape(a, 1, 2))
    return _norm_fwd(a, x=0, weight=2, bias=None, groups=groups, n_stats=1, per_elem=3,
                     model="rms_norm")


@_rule("norm", "_C::rms_norm")
def _vllm_rms_norm(c: _Ctx) -> OpCost | None:
    # vLLM: rms_norm(out!, input, weight, epsilon); no statistics written
    a = c.a
    xs = a.shape(1)
    if xs is None:
        return None
    numel = _prod(xs)
    nbytes = _sum_bytes(a.nbytes(1), a.nbytes(2), _mul_bytes(numel, a.itemsize(0)))
    return _cost(numel * 4, nbytes, _op_dtype(a), "rms_norm")


@_rule("norm", "_C::fused_add_rms_norm")
def _vllm_fused_add_rms_norm(c: _Ctx) -> OpCost | None:
    # vLLM: fused_add_rms_norm(input!, residual!, weight, epsilon): residual += input;
    # input = rms_norm(residual) * weight. Reads input, residual, weight; writes both.
    a = c.a
    xs = a.shape(0)
    if xs is None:
        return None
    numel = _prod(xs)
    nbytes = _sum_bytes(a.nbytes(0), a.nbytes(1), a.nbytes(2),
                        _mul_bytes(numel, a.itemsize(0)), _mul_bytes(numel, a.itemsize(1)))
    return _cost(numel * 5, nbytes, _op_dtype(a), "rms_norm")


@_rule("norm", "aten::group_norm")
def _group_norm(c: _Ctx) -> OpCost | None:
    # group_norm(input, num_groups, weight?, bias?, eps, cudnn_enabled)
    a = c.a
    xs, g = a.shape(0), a.ci(1)
    groups = xs[0] * g if xs is not None and isinstance(g, int) and xs else None
    return _norm_fwd(a, x=0, weight=2, bias=3, groups=groups, n_stats=2, per_elem=5,
                     model="group_norm")


@_rule("norm", "aten::native_group_norm")
def _native_group_norm(c: _Ctx) -> OpCost | None:
    # native_group_norm(input, weight?, bias?, N, C, HxW, group, eps)
    a = c.a
    n, g = a.ci(3), a.ci(6)
    groups = n * g if isinstance(n, int) and isinstance(g, int) else None
    return _norm_fwd(a, x=0, weight=1, bias=2, groups=groups, n_stats=2, per_elem=5,
                     model="group_norm")


def _bn_fwd(c: _Ctx, *, training: Any) -> OpCost | None:
    # (input, weight?, bias?, running_mean?, running_var?, ...)
    a = c.a
    xs = a.shape(0)
    if xs is None or len(xs) < 2:
        return None
    notes = []
    if not isinstance(training, bool):
        notes.append("training flag not recorded: assumed training")
        training = True
    if training:
        # statistics per channel; running stats read and updated
        return _norm_fwd(a, x=0, weight=1, bias=2, groups=xs[1], n_stats=2, per_elem=5,
                         extra=(3, 4), write_extra=(3, 4), model="batch_norm", notes=notes)
    return _norm_fwd(a, x=0, weight=1, bias=2, groups=0, n_stats=0, per_elem=2, extra=(3, 4),
                     model="batch_norm", notes=notes)


@_rule("norm", "aten::batch_norm", "aten::_batch_norm_impl_index", "aten::native_batch_norm",
       "aten::_native_batch_norm_legit", "aten::cudnn_batch_norm", "aten::miopen_batch_norm")
def _batch_norm(c: _Ctx) -> OpCost | None:
    # (input, weight, bias, running_mean, running_var, training, momentum, eps, ...)
    return _bn_fwd(c, training=c.a.ci(5))


@_rule("norm", "aten::_native_batch_norm_legit_no_training")
def _batch_norm_eval(c: _Ctx) -> OpCost | None:
    return _bn_fwd(c, training=False)


def _norm_bwd(a: _Args, *, go: int, x: int, weight: int | None, bias: int | None,
              reads: Sequence[int], mask: Sequence[bool] | None, fwd_per_elem: int,
              model: str, bias_numel: int | None = None) -> OpCost | None:
    xs = a.shape(x)
    if xs is None:
        return None
    numel = _prod(xs)
    notes = []
    has_w = weight is not None and a.is_tensor(weight)
    if mask is None:
        mask = [True, has_w, has_w and (bias is not None)]
        notes.append("output_mask not recorded: assumed gradients for input and affine params")
    affine = int(has_w) + int(bias is not None and has_w)
    flops = _NORM_BWD_FACTOR * numel * (fwd_per_elem + affine)
    size = a.itemsize(x)
    parts: list[int | None] = [a.nbytes(go), a.nbytes(x), *(a.nbytes(i) for i in reads)]
    if mask[0]:
        parts.append(_mul_bytes(numel, size))
    wbytes = a.nbytes(weight) if has_w and weight is not None else 0
    if len(mask) > 1 and mask[1]:
        parts.append(wbytes)
    if len(mask) > 2 and mask[2]:
        parts.append(wbytes if bias_numel is None else _mul_bytes(bias_numel, a.itemsize(weight) if weight is not None else None))
    return _cost(flops, _sum_bytes(*parts), _op_dtype(a), model, notes)


@_rule("norm", "aten::native_layer_norm_backward")
def _layer_norm_bwd(c: _Ctx) -> OpCost | None:
    # (grad_out, input, normalized_shape, mean, rstd, weight?, bias?, output_mask[3])
    a = c.a
    return _norm_bwd(a, go=0, x=1, weight=5, bias=6, reads=(3, 4, 5),
                     mask=_bool_mask(a.ci(7), 3), fwd_per_elem=5, model="layer_norm_backward")


@_rule("norm", "aten::_fused_rms_norm_backward")
def _rms_norm_bwd(c: _Ctx) -> OpCost | None:
    # (grad_out, input, normalized_shape, rstd, weight?, output_mask[2])
    a = c.a
    return _norm_bwd(a, go=0, x=1, weight=4, bias=None, reads=(3, 4),
                     mask=_bool_mask(a.ci(5), 2), fwd_per_elem=3, model="rms_norm_backward")


@_rule("norm", "aten::native_group_norm_backward")
def _group_norm_bwd(c: _Ctx) -> OpCost | None:
    # (grad_out, input, mean, rstd, weight?, N, C, HxW, group, output_mask[3])
    a = c.a
    return _norm_bwd(a, go=0, x=1, weight=4, bias=4, reads=(2, 3, 4),
                     mask=_bool_mask(a.ci(9), 3), fwd_per_elem=5, model="group_norm_backward")


@_rule("norm", "aten::native_batch_norm_backward")
def _bn_bwd(c: _Ctx) -> OpCost | None:
    # (grad_out, input, weight?, running_mean?, running_var?, save_mean?, save_invstd?,
    #  train, eps, output_mask[3])
    a = c.a
    return _norm_bwd(a, go=0, x=1, weight=2, bias=2, reads=(2, 5, 6),
                     mask=_bool_mask(a.ci(9), 3), fwd_per_elem=5, model="batch_norm_backward")


@_rule("norm", "aten::cudnn_batch_norm_backward", "aten::miopen_batch_norm_backward")
def _bn_bwd_vendor(c: _Ctx) -> OpCost | None:
    # (input, grad_output, weight, running_mean?, running_var?, save_mean?, save_var?,
    #  epsilon, reserveSpace?): computes grad_input, grad_weight and grad_bias
    a = c.a
    return _norm_bwd(a, go=1, x=0, weight=2, bias=2, reads=(2, 5, 6),
                     mask=[True, True, True], fwd_per_elem=5, model="batch_norm_backward")


# ---------------------------------------------------------------------------------------
# Softmax: forward 5 FLOPs/element (max, subtract, exp, sum, divide -- or subtract the log
# for log_softmax); backward 4 FLOPs/element.


def _softmax_common(c: _Ctx, *, out_fp32: Any, backward: bool) -> OpCost | None:
    a = c.a
    if backward:
        # (grad_output, output, dim, input_dtype)
        gs = a.shape(0)
        if gs is None:
            return None
        numel = _prod(gs)
        code = a.ci(3)
        info = scalar_type_info(code) if isinstance(code, int) else None
        out_size = info[1] if info else a.itemsize(0)
        nbytes = _sum_bytes(a.nbytes(0), a.nbytes(1), _mul_bytes(numel, out_size))
        return _cost(4 * numel, nbytes, _op_dtype(a), "softmax_backward")
    xs = a.shape(0)
    if xs is None:
        return None
    numel = _prod(xs)
    notes = []
    out_size = a.itemsize(0)
    if out_fp32 is True:
        out_size = 4
    elif isinstance(out_fp32, int) and not isinstance(out_fp32, bool):
        info = scalar_type_info(out_fp32)
        out_size = info[1] if info else None
    elif out_fp32 is UNKNOWN and a.dtype(0) in ("fp16", "bf16"):
        notes.append("half_to_float / dtype not recorded: assumed output in the input dtype")
    nbytes = _sum_bytes(a.nbytes(0), _mul_bytes(numel, out_size))
    return _cost(5 * numel, nbytes, _op_dtype(a), "softmax", notes)


@_rule("softmax", "aten::_softmax", "aten::_log_softmax")
def _softmax_impl(c: _Ctx) -> OpCost | None:
    # (self, dim, half_to_float)
    return _softmax_common(c, out_fp32=c.a.ci(2), backward=False)


@_rule("softmax", "aten::softmax", "aten::log_softmax", "aten::_safe_softmax")
def _softmax_api(c: _Ctx) -> OpCost | None:
    # (self, dim, dtype?) ; dtype is a ScalarType code
    return _softmax_common(c, out_fp32=c.a.ci(2), backward=False)


@_rule("softmax", "aten::_softmax_backward_data", "aten::_log_softmax_backward_data")
def _softmax_bwd(c: _Ctx) -> OpCost | None:
    return _softmax_common(c, out_fp32=None, backward=True)


# ---------------------------------------------------------------------------------------
# Reductions: FLOPs = input elements x k (k = 1; 2 for norms; 3 for var/std/logsumexp).
# Bytes = input + output; the output size needs the reduced dims (Concrete Inputs), except
# for full reductions.

_REDUCTIONS: dict[str, tuple[int, int | None, int | None, str]] = {
    # name: (flops per element, dim arg index, keepdim arg index, output dtype rule)
    "aten::sum": (1, 1, 2, "acc_int64"),
    "aten::nansum": (1, 1, 2, "acc_int64"),
    "aten::prod": (1, 1, 2, "acc_int64"),
    "aten::mean": (1, 1, 2, "same"),
    "aten::amax": (1, 1, 2, "same"),
    "aten::amin": (1, 1, 2, "same"),
    "aten::max": (1, 1, 2, "same+index"),
    "aten::min": (1, 1, 2, "same+index"),
    "aten::argmax": (1, 1, 2, "int64"),
    "aten::argmin": (1, 1, 2, "int64"),
    "aten::any": (1, 1, 2, "bool"),
    "aten::all": (1, 1, 2, "bool"),
    "aten::logsumexp": (3, 1, 2, "same"),
    "aten::var": (3, 1, 3, "same"),
    "aten::std": (3, 1, 3, "same"),
    "aten::norm": (2, 2, 3, "same"),
    "aten::linalg_vector_norm": (2, 2, 3, "same"),
}


@_rule("reduction", *_REDUCTIONS)
def _reduction(c: _Ctx) -> OpCost | None:
    a = c.a
    if c.name in ("aten::max", "aten::min") and a.is_tensor(1):
        return _elementwise_impl(c, arith=True)  # max(self, other): elementwise maximum
    xs = a.shape(0)
    if xs is None:
        return None
    k, dim_i, keep_i, rule = _REDUCTIONS[c.name]
    numel = _prod(xs)
    nd = len(xs)
    # reduced dims
    dim: Any = None
    if dim_i is not None and dim_i < a.n:
        dim = a.ci(dim_i)
    if c.name in ("aten::max", "aten::min") and not isinstance(dim, int):
        dim = None if dim is not UNKNOWN or a.n == 1 else UNKNOWN
    out_numel: int | None
    if dim is UNKNOWN:
        out_numel = None
    elif dim is None or dim == []:
        out_numel = 1
    else:
        dims = [dim] if isinstance(dim, int) else dim
        if not (isinstance(dims, list) and all(isinstance(d, int) for d in dims)):
            out_numel = None
        else:
            red = {d % nd for d in dims} if nd else set()
            out_numel = _prod(s for i, s in enumerate(xs) if i not in red)
    in_dt = a.dtype(0)
    if rule == "same":
        out_size = a.itemsize(0)
    elif rule == "acc_int64":
        out_size = 8 if _CATEGORY.get(in_dt or "", 2) <= 1 and in_dt is not None else a.itemsize(0)
    elif rule == "int64":
        out_size = 8
    elif rule == "bool":
        out_size = 1
    else:  # values + int64 indices (only for the dim overloads)
        size = a.itemsize(0)
        out_size = None if size is None else (size + 8 if isinstance(dim, int) else size)
    nbytes = _sum_bytes(a.nbytes(0), None if out_numel is None else _mul_bytes(out_numel, out_size))
    return _cost(k * numel, nbytes, _op_dtype(a), "reduction")


# ---------------------------------------------------------------------------------------
# Elementwise and copies: bytes = inputs + outputs; FLOPs = output elements for arithmetic
# ops (transcendentals count 1), 0 for copies. Only the operators listed below.

_ARITH = {
    "add", "add_", "sub", "sub_", "rsub", "mul", "mul_", "div", "div_", "divide", "divide_",
    "true_divide", "true_divide_", "floor_divide", "floor_divide_", "remainder", "remainder_",
    "fmod", "fmod_", "neg", "neg_", "abs", "abs_", "sgn", "sgn_", "sign", "sign_",
    "reciprocal", "reciprocal_", "sqrt", "sqrt_", "rsqrt", "rsqrt_", "exp", "exp_", "exp2",
    "exp2_", "expm1", "expm1_", "log", "log_", "log2", "log2_", "log10", "log10_", "log1p",
    "log1p_", "pow", "pow_", "square", "square_", "sin", "sin_", "cos", "cos_", "tan", "tan_",
    "tanh", "tanh_", "sigmoid", "sigmoid_", "erf", "erf_", "erfinv", "erfinv_", "relu",
    "relu_", "gelu", "gelu_", "silu", "silu_", "elu", "elu_", "leaky_relu", "leaky_relu_",
    "hardtanh", "hardtanh_", "hardswish", "hardswish_", "hardsigmoid", "hardsigmoid_", "mish",
    "mish_", "softplus", "clamp", "clamp_", "clamp_min", "clamp_min_", "clamp_max",
    "clamp_max_", "clip", "clip_", "threshold", "threshold_", "threshold_backward",
    "sigmoid_backward", "tanh_backward", "gelu_backward", "silu_backward", "elu_backward",
    "hardtanh_backward", "leaky_relu_backward", "hardswish_backward", "softplus_backward",
    "maximum", "minimum", "fmax", "fmin", "lerp", "lerp_", "addcmul", "addcmul_", "addcdiv",
    "addcdiv_", "where", "nan_to_num", "nan_to_num_", "floor", "floor_", "ceil", "ceil_",
    "round", "round_", "trunc", "trunc_", "frac", "frac_", "xlogy", "logit", "sinh", "cosh",
    "atan", "atan2", "asin", "acos", "bitwise_and", "bitwise_and_", "bitwise_or",
    "bitwise_or_", "bitwise_xor", "bitwise_xor_", "bitwise_not", "bitwise_not_",
}
_COMPARE = {
    "eq", "eq_", "ne", "ne_", "lt", "lt_", "le", "le_", "gt", "gt_", "ge", "ge_",
    "logical_and", "logical_and_", "logical_or", "logical_or_", "logical_xor",
    "logical_xor_", "logical_not", "logical_not_", "isnan", "isinf", "isfinite",
}
_FOREACH_ARITH = {
    "add", "add_", "sub", "sub_", "mul", "mul_", "div", "div_", "addcmul", "addcmul_",
    "addcdiv", "addcdiv_", "sqrt", "sqrt_", "lerp", "lerp_", "neg", "neg_", "exp", "exp_",
    "maximum_", "minimum_", "pow", "pow_", "reciprocal", "reciprocal_", "sign", "abs",
    "clamp_min_", "clamp_max_", "norm",
}
_COPY_FILL = {"fill_", "zero_"}


def _elementwise_impl(c: _Ctx, *, arith: bool, compare: bool = False) -> OpCost | None:
    a = c.a
    idx = a.tensor_indices()
    if not idx or (c.name == "aten::where" and len(idx) == 1):  # where(cond) == nonzero
        return None
    base = c.name.split("::", 1)[-1]
    inplace = base.endswith("_") and not base.endswith("__")
    if inplace:
        out_shape = a.shape(0)
        if out_shape is None:
            return None
        out_dtype = a.dtype(0)
    else:
        out_shape = _broadcast([a.shape(i) for i in idx])  # type: ignore[misc]
        if out_shape is None and len(idx) > 1 and a.numel(idx[-1]) == 0:
            # an empty trailing tensor is the not-yet-resized out= buffer of an .out overload
            idx = idx[:-1]
            out_shape = _broadcast([a.shape(i) for i in idx])  # type: ignore[misc]
        if out_shape is None:
            return None
        if compare:
            out_dtype = "bool"
        else:
            out_dtype = _promote([a.dtype(i) for i in idx], [len(a.shape(i) or ()) for i in idx])
    out_numel = _prod(out_shape)
    nbytes = _sum_bytes(*(a.nbytes(i) for i in idx), _mul_bytes(out_numel, _itemsize(out_dtype)))
    return _cost(out_numel if arith else 0, nbytes, _op_dtype(a), "elementwise")


@_rule("elementwise", *(f"aten::{n}" for n in _ARITH))
def _elementwise(c: _Ctx) -> OpCost | None:
    return _elementwise_impl(c, arith=True)


@_rule("elementwise", *(f"aten::{n}" for n in _COMPARE))
def _compare(c: _Ctx) -> OpCost | None:
    return _elementwise_impl(c, arith=True, compare=True)


@_rule("elementwise", *(f"aten::_foreach_{n}" for n in _FOREACH_ARITH))
def _foreach(c: _Ctx) -> OpCost | None:
    # Tensor lists: element counts are recorded, dtypes are not ("TensorList").
    a = c.a
    first = a.tensor_list(0)
    if first is None:
        return None
    flops = sum(_prod(s) for s in first)
    return _cost(flops, None, None, "elementwise")


@_rule("copy", "aten::copy_")
def _copy(c: _Ctx) -> OpCost | None:
    # copy_(self, src, non_blocking): read src (distinct elements), write self
    a = c.a
    dst = a.shape(0)
    if dst is None or not a.is_tensor(1):
        return None
    nbytes = _sum_bytes(a.nbytes(1), _mul_bytes(_prod(dst), a.itemsize(0)))
    return _cost(0, nbytes, _op_dtype(a), "copy")


@_rule("copy", "aten::_to_copy")
def _to_copy(c: _Ctx) -> OpCost | None:
    # _to_copy(self, dtype?, layout?, device?, pin_memory?, non_blocking, memory_format?)
    a = c.a
    xs = a.shape(0)
    if xs is None:
        return None
    notes = []
    code = a.ci(1)
    if isinstance(code, int) and not isinstance(code, bool):
        info = scalar_type_info(code)
        out_size = info[1] if info else None
    else:
        out_size = a.itemsize(0)
        if code is UNKNOWN:
            notes.append("target dtype not recorded: assumed unchanged")
    nbytes = _sum_bytes(a.nbytes(0), _mul_bytes(_prod(xs), out_size))
    return _cost(0, nbytes, _op_dtype(a), "copy", notes)


@_rule("copy", "aten::clone")
def _clone(c: _Ctx) -> OpCost | None:
    a = c.a
    xs = a.shape(0)
    if xs is None:
        return None
    return _cost(0, _sum_bytes(a.nbytes(0), _mul_bytes(_prod(xs), a.itemsize(0))),
                 _op_dtype(a), "copy")


@_rule("copy", *(f"aten::{n}" for n in _COPY_FILL))
def _fill(c: _Ctx) -> OpCost | None:
    # write-only: self is overwritten (a 0-dim tensor value, if any, is read)
    a = c.a
    xs = a.shape(0)
    if xs is None:
        return None
    extra = [a.nbytes(i) for i in a.tensor_indices() if i != 0]
    return _cost(0, _sum_bytes(_mul_bytes(_prod(xs), a.itemsize(0)), *extra), _op_dtype(a), "copy")


@_rule("copy", "aten::masked_fill", "aten::masked_fill_")
def _masked_fill(c: _Ctx) -> OpCost | None:
    return _elementwise_impl(c, arith=False)


@_rule("copy", "aten::cat", "aten::_cat")
def _cat(c: _Ctx) -> OpCost | None:
    # cat(tensors, dim): bytes = 2 x sum of inputs; dtypes of TensorList are not recorded
    a = c.a
    tl = a.tensor_list(0)
    if tl is None:
        return None
    return _cost(0, None, None, "copy")


@_rule("copy", "aten::index_select")
def _index_select(c: _Ctx) -> OpCost | None:
    # index_select(self, dim, index): gather rows; reads the selected slices, writes them
    a = c.a
    xs, idx = a.shape(0), a.shape(2)
    if xs is None or idx is None:
        return None
    dim = a.ci(1)
    if not isinstance(dim, int) or isinstance(dim, bool):
        if len(xs) != 1:
            return None
        dim = 0
    if not xs:
        return None
    dim %= len(xs)
    out_numel = _prod(xs) // xs[dim] * _prod(idx) if xs[dim] else 0
    size = a.itemsize(0)
    nbytes = _sum_bytes(a.nbytes(2), _mul_bytes(out_numel, size), _mul_bytes(out_numel, size))
    return _cost(0, nbytes, _op_dtype(a), "gather")


# ---------------------------------------------------------------------------------------
# Embeddings. Bytes: indices + offsets + gathered rows (L x D) + output; FLOPs for pooled
# lookups = one add per gathered element (two with per-sample weights).


@_rule("embedding", "aten::embedding")
def _embedding(c: _Ctx) -> OpCost | None:
    # embedding(weight[V, D], indices, padding_idx, scale_grad_by_freq, sparse)
    a = c.a
    w, idx = a.shape(0), a.shape(1)
    if w is None or idx is None or len(w) != 2:
        return None
    n, d = _prod(idx), w[1]
    size = a.itemsize(0)
    nbytes = _sum_bytes(a.nbytes(1), _mul_bytes(n * d, size), _mul_bytes(n * d, size))
    return _cost(0, nbytes, _op_dtype(a), "embedding")


@_rule("embedding", "aten::embedding_backward", "aten::embedding_dense_backward")
def _embedding_bwd(c: _Ctx) -> OpCost | None:
    # (grad_output[..., D], indices, num_weights, padding_idx, scale_grad_by_freq[, sparse])
    a = c.a
    g, idx = a.shape(0), a.shape(1)
    if g is None or idx is None or not g:
        return None
    nw = a.ci(2)
    grad_w = _mul_bytes(nw * g[-1], a.itemsize(0)) if isinstance(nw, int) and not isinstance(nw, bool) else None
    return _cost(_prod(g), _sum_bytes(a.nbytes(0), a.nbytes(1), grad_w), _op_dtype(a),
                 "embedding_backward")


@_rule("embedding", "aten::embedding_bag", "aten::_embedding_bag",
       "aten::_embedding_bag_forward_only")
def _embedding_bag(c: _Ctx) -> OpCost | None:
    # (weight[V, D], indices, offsets, scale_grad_by_freq, mode, sparse,
    #  per_sample_weights?, include_last_offset, padding_idx)
    a = c.a
    w, idx = a.shape(0), a.shape(1)
    if w is None or idx is None or len(w) != 2:
        return None
    notes = []
    d, l = w[1], _prod(idx)
    if len(idx) == 2:
        b = idx[0]
    else:
        offs = a.shape(2)
        if offs is None:
            return None
        ilo = a.ci(7)
        if not isinstance(ilo, bool):
            notes.append("include_last_offset not recorded: assumed False")
            ilo = False
        b = _prod(offs) - (1 if ilo else 0)
    mode = a.ci(4)
    if not isinstance(mode, int) or isinstance(mode, bool):
        notes.append("mode not recorded: assumed sum")
        mode = 0
    weighted = a.is_tensor(6)
    flops = l * d * (2 if weighted else 1) + (b * d if mode == 1 else 0)
    size = a.itemsize(0)
    nbytes = _sum_bytes(a.nbytes(1), a.nbytes(2), a.nbytes(6), _mul_bytes(l * d, size),
                        _mul_bytes(b * d, size))
    return _cost(flops, nbytes, _op_dtype(a), "embedding_bag", notes)


# FBGEMM table-batched embedding (TBE) lookups, as in DLRM / TorchRec traces:
#   fbgemm::split_embedding_codegen_lookup_<optimizer>_function(
#     placeholder_autograd_tensor, dev_weights, uvm_weights, lxu_cache_weights,
#     weights_placements, weights_offsets, D_offsets, total_D, max_D, hash_size_cumsum,
#     total_hash_size_bits, indices, offsets, pooling_mode, indice_weights?, ...)
#   fbgemm::dense_embedding_codegen_lookup_function(
#     dev_weights, weights_offsets, D_offsets, total_D, max_D, hash_size_cumsum,
#     total_hash_size_bits, indices, offsets, pooling_mode, indice_weights?,
#     feature_requires_grad?, output_dtype)
# T = len(D_offsets) - 1 tables, B = (len(offsets) - 1) / T, L = len(indices).
# pooling_mode: 0 SUM, 1 MEAN, 2 NONE (sequence). output_dtype (SparseType): 0 FP32,
# 1 FP16, 5 BF16 (FP32 by default).

_SPARSE_TYPE_SIZE = {0: 4, 1: 2, 5: 2}


def _tbe(c: _Ctx, *, w: int, uvm: int | None, d_off: int, total_d: int, max_d: int, ind: int,
         off: int, pool: int, iw: int, out_dtype: int | None) -> OpCost | None:
    a = c.a
    d_offsets, indices, offsets = a.shape(d_off), a.shape(ind), a.shape(off)
    if d_offsets is None or indices is None or offsets is None:
        return None
    t = _prod(d_offsets) - 1
    bt = _prod(offsets) - 1
    if t <= 0 or bt < 0 or bt % t:
        return None
    b, l = bt // t, _prod(indices)
    notes: list[str] = []
    tot_d, mx_d, pm = a.ci(total_d), a.ci(max_d), a.ci(pool)
    od = c.output_dims[0] if c.output_dims else None
    if not isinstance(tot_d, int) and od is not None and _is_shape(od) and len(od) == 2 and od[0] == b:
        tot_d = od[1]
        notes.append("total_D taken from output_dims")
        if not isinstance(pm, int):
            pm = 0
            notes.append("pooling_mode not recorded: assumed SUM (pooled output)")
    if not isinstance(pm, int) or isinstance(pm, bool):
        return None
    # weights dtype: device weights, or UVM weights when the device tensor is empty
    wi = w if a.numel(w) > 0 or uvm is None else uvm
    w_size = a.itemsize(wi)
    code = a.ci(out_dtype) if out_dtype is not None else UNKNOWN
    if isinstance(code, int) and not isinstance(code, bool):
        out_size = _SPARSE_TYPE_SIZE.get(code)
    else:
        out_size = 4
        notes.append("output_dtype not recorded: assumed FP32 (the TBE default)")
    weighted = a.is_tensor(iw)
    if pm == 2:  # NONE: one D-wide row per index
        if not isinstance(mx_d, int):
            return None
        rows: float = l * mx_d
        flops = rows if weighted else 0
        out_elems = l * mx_d
    else:
        if not isinstance(tot_d, int) or tot_d <= 0:
            return None
        if isinstance(mx_d, int) and mx_d * t != tot_d:
            notes.append("tables of different D: indices assumed spread evenly over tables")
        rows = l * tot_d / t
        flops = rows * (2 if weighted else 1) + (b * tot_d if pm == 1 else 0)
        out_elems = b * tot_d
    nbytes = _sum_bytes(a.nbytes(ind), a.nbytes(off), a.nbytes(iw),
                        _mul_bytes(int(round(rows)), w_size), _mul_bytes(out_elems, out_size))
    return _cost(flops, nbytes, _op_dtype(a), "tbe_lookup", notes)


@_pattern_rule("embedding", r"^fbgemm::split_embedding_codegen_lookup_[a-z0-9_]+_function(_cpu)?$")
def _tbe_split(c: _Ctx) -> OpCost | None:
    return _tbe(c, w=1, uvm=2, d_off=6, total_d=7, max_d=8, ind=11, off=12, pool=13, iw=14,
                out_dtype=None)


@_rule("embedding", "fbgemm::dense_embedding_codegen_lookup_function")
def _tbe_dense(c: _Ctx) -> OpCost | None:
    return _tbe(c, w=0, uvm=None, d_off=2, total_d=3, max_d=4, ind=7, off=8, pool=9, iw=10,
                out_dtype=12)


# ---------------------------------------------------------------------------------------
# Collectives. ``bytes`` is the nccl-tests message size S (github.com/NVIDIA/nccl-tests,
# doc/PERFORMANCE.md): all_reduce / broadcast / reduce: the buffer; all_gather: the
# gathered output (n x per-rank input); reduce_scatter: the full input (n x per-rank
# output); all_to_all: the per-rank send buffer. algbw = S / t; busbw = algbw x factor with
# factor 2(n-1)/n (all_reduce), (n-1)/n (all_gather, reduce_scatter, all_to_all), 1
# (broadcast, reduce, send, recv). FLOPs are 0 (reduction arithmetic is not counted).

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


def _all_tensor_bytes(a: _Args) -> int | None:
    """Bytes of every tensor argument; ``None`` if there is none or a TensorList (whose
    element dtypes Kineto does not record) contributes."""
    idx = a.tensor_indices()
    lists = [i for i in range(a.n) if a.tensor_list(i)]
    if not idx and not lists:
        return None
    return _sum_bytes(*(a.nbytes(i) for i in idx), *(None for _ in lists))


def _group_size(c: _Ctx, idx: int | None) -> int | None:
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


@_pattern_rule("collective", r"^(nccl|rccl|gloo):[A-Za-z_]+$")
def _backend_collective(c: _Ctx) -> OpCost | None:
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
    return collective_cost(kind, size, n, _op_dtype(c.a), notes)


def _c10d(kind: str, msg: Callable[[_Ctx], int | None], group_idx: int | None = None) -> _Rule:
    def rule(c: _Ctx) -> OpCost | None:
        n = _group_size(c, group_idx)
        return collective_cost(kind, msg(c), n, _op_dtype(c.a))
    return rule


def _input_bytes(i: int) -> Callable[[_Ctx], int | None]:
    return lambda c: c.a.nbytes(i) if c.a.is_tensor(i) else None


def _gathered_bytes(i: int, group_idx: int | None) -> Callable[[_Ctx], int | None]:
    def f(c: _Ctx) -> int | None:
        n = _group_size(c, group_idx)
        b = c.a.nbytes(i) if c.a.is_tensor(i) else None
        return None if b is None or n is None else b * n
    return f


def _list_bytes(c: _Ctx) -> int | None:
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
    for _n in _names:
        _RULES[_n] = ("collective", _rule_fn)


#: Operators whose work is normally done by costed child operators recorded beneath them
#: (same thread, nested range). When summing costs over a call tree, count only the
#: innermost costed operator.
COMPOSITE_OPS: frozenset[str] = frozenset(
    {
        "aten::linear", "aten::matmul", "vllm::rocm_unquantized_gemm",
        "aten::conv1d", "aten::conv2d", "aten::conv3d", "aten::conv_transpose1d",
        "aten::conv_transpose2d", "aten::conv_transpose3d", "aten::convolution",
        "aten::_convolution", "aten::cudnn_convolution_backward",
        "aten::scaled_dot_product_attention", "aten::_scaled_dot_product_flash_attention",
        "aten::_scaled_dot_product_efficient_attention",
        "aten::layer_norm", "aten::rms_norm", "aten::group_norm", "aten::batch_norm",
        "aten::_batch_norm_impl_index", "aten::softmax", "aten::log_softmax",
        "aten::_to_copy", "aten::clone", "aten::embedding", "aten::embedding_backward",
        "aten::embedding_bag",
        "c10d::allreduce_", "c10d::allreduce_coalesced_", "c10d::_allgather_base_",
        "c10d::allgather_", "c10d::allgather_into_tensor_coalesced_",
        "c10d::_reduce_scatter_base_", "c10d::reduce_scatter_",
        "c10d::reduce_scatter_tensor_coalesced_", "c10d::alltoall_base_", "c10d::alltoall_",
        "c10d::broadcast_", "c10d::reduce_", "c10d::send", "c10d::recv_",
    }
)
