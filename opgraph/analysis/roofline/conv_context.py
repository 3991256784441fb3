"""Second chance for convolutions whose recorded arguments cannot be costed on their own:
the missing output or weight shape is taken from the matching backward op (autograd
``Sequence number``) or from backward ops with the same input and weight shapes.

Shapes are lists of ints (elements); the costs returned are
:class:`~opgraph.analysis.flops.OpCost` (FLOPs, bytes)."""

from __future__ import annotations

from typing import Any

import numpy as np

from opgraph.analysis.flops import OpCost, op_cost
from opgraph.analysis.roofline.columns import TraceColumns
from opgraph.analysis.roofline.objects import isin_obj

#: Forward convolutions whose output shape can come from their backward (old traces record
#: no ``Concrete Inputs``, so stride/padding are unknown).
CONV_FWD = frozenset({
    "aten::conv1d", "aten::conv2d", "aten::conv3d", "aten::convolution", "aten::_convolution",
    "aten::convolution_overrideable", "aten::cudnn_convolution", "aten::miopen_convolution",
    "aten::miopen_depthwise_convolution", "aten::mkldnn_convolution",
})
#: Backward convolutions: (index of grad_output, index of weight or None) in ``Input Dims``.
CONV_BWD = {
    "aten::convolution_backward": (0, 2), "aten::convolution_backward_overrideable": (0, 2),
    "aten::cudnn_convolution_backward": (1, 2), "aten::cudnn_convolution_backward_input": (1, 2),
    "aten::cudnn_convolution_backward_weight": (1, None),
}
#: Backward convolutions that need the weight shape from elsewhere.
NEEDS_WEIGHT = frozenset({"aten::cudnn_convolution_backward_weight"})
#: How far up the nest tree the ``...Backward`` range of a backward op is looked for.
_SEQ_DEPTH = 8


def input_dims(a: Any, i: int | None) -> list | None:
    """The ``i``-th recorded input shape of args ``a`` when it is a non-empty list of
    ints, else None."""
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


def backward_sequence(c: TraceColumns, p: int) -> Any:
    """The autograd ``Sequence number`` of the op at position ``p``: carried by the nearest
    ``...Backward`` range above it (within a few levels), else None."""
    q = c.parent[p]
    for _ in range(_SEQ_DEPTH):
        if q < 0:
            break
        a = c.args[q]
        nm = c.name[q]
        if a and "Sequence number" in a and isinstance(nm, str) and "Backward" in nm:
            return a["Sequence number"]
        q = c.parent[q]
    return None


def conv_context(c: TraceColumns, cand: np.ndarray, res: list[OpCost | None], world_size: int | None
                 ) -> list[OpCost | None]:
    """Costs ``res`` of the ops at positions ``cand``, with the convolutions the recorded
    arguments cannot cost on their own filled in where their context allows.

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
            if oc is None and (nm in CONV_FWD or nm in NEEDS_WEIGHT) and argl[j]
            and ("Input Dims" in argl[j] or "Input dims" in argl[j])]
    if not todo:
        return res
    args = c.args
    bwd = np.flatnonzero(isin_obj(c.name, CONV_BWD) & c.is_cpu_op)
    go_of, w_of = _backward_shapes_by_sequence(c, bwd)
    go_by_xw = _grad_outputs_by_input_weight(c, bwd)
    fwd_w: dict[int, list] = {}
    for j in todo:
        p = int(cand[j])
        a = args[p] or {}
        nm = names[j]
        od = None
        if nm in CONV_FWD:
            seq = a.get("Sequence number")
            go = go_of.get(seq) if isinstance(seq, int) else None
            if go is None:
                # no sequence numbers: the backward ops of every convolution with these input
                # and weight shapes saw one grad_output shape -> that is the output shape
                x, w = input_dims(a, 0), input_dims(a, 1)
                gos = go_by_xw.get((repr(x), repr(w))) if x is not None and w is not None else None
                if gos is not None and len(gos) == 1:
                    go = eval_shape(next(iter(gos)))
            od = [go] if go is not None else None
        else:
            q = c.parent[p]
            w = input_dims(args[q], 2) if q >= 0 and c.name[q] == "aten::cudnn_convolution_backward" else None
            if w is None:
                # the forward op with the backward's sequence number holds the weight
                s2 = backward_sequence(c, p)
                w = w_of.get(s2) if isinstance(s2, int) else None
                if w is None and isinstance(s2, int):
                    if not fwd_w:
                        fwd_w.update(_forward_weights_by_sequence(c))
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


def _backward_shapes_by_sequence(c: TraceColumns, bwd: np.ndarray) -> tuple[dict[int, list], dict[int, list]]:
    """(grad_output shape, weight shape) per forward ``Sequence number``, from the backward
    convolutions ``bwd`` (the first one seen for each number)."""
    go_of: dict[int, list] = {}
    w_of: dict[int, list] = {}
    for p in bwd.tolist():
        gi, wi = CONV_BWD[c.name[p]]
        go = input_dims(c.args[p], gi)
        seq = backward_sequence(c, p)
        if isinstance(seq, int):
            if go is not None:
                go_of.setdefault(seq, go)
            w = input_dims(c.args[p], wi)
            if w is not None:
                w_of.setdefault(seq, w)
    return go_of, w_of


def _grad_outputs_by_input_weight(c: TraceColumns, bwd: np.ndarray) -> dict[tuple[str, str], set[str]]:
    """(input shape, weight shape) -> grad_output shapes (``repr`` s), from the backward
    convolutions ``bwd`` that record all three."""
    go_by_xw: dict[tuple[str, str], set[str]] = {}
    for p in bwd.tolist():
        nm = c.name[p]
        xi = 1 if nm in ("aten::convolution_backward", "aten::convolution_backward_overrideable") else \
            0 if nm == "aten::cudnn_convolution_backward" else None
        gi, wi = CONV_BWD[nm]
        x, go, w = input_dims(c.args[p], xi), input_dims(c.args[p], gi), input_dims(c.args[p], wi)
        if x is not None and go is not None and w is not None:
            go_by_xw.setdefault((repr(x), repr(w)), set()).add(repr(go))
    return go_by_xw


def _forward_weights_by_sequence(c: TraceColumns) -> dict[int, list]:
    """Weight shape per ``Sequence number`` of the forward convolutions (first seen)."""
    fwd_w: dict[int, list] = {}
    for f in np.flatnonzero(isin_obj(c.name, CONV_FWD)).tolist():
        af = c.args[f]
        if af and isinstance(af.get("Sequence number"), int):
            wf = input_dims(af, 1)
            if wf is not None:
                fwd_w.setdefault(af["Sequence number"], wf)
    return fwd_w
