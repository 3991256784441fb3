"""Attribution of op costs to device activities: which op launched each activity and which
counted op owns it, the activities that carry their own values, and the integer split
of each op's FLOPs and bytes over its work activities in proportion to their durations
(so that Σ activity FLOPs == Σ FLOPs of the counted ops that own activities; same for
bytes). Positions index a :class:`~opgraph.analysis.roofline.columns.TraceColumns`;
durations are ns, FLOPs and bytes int64."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from opgraph.analysis.roofline.columns import TraceColumns
from opgraph.analysis.roofline.kernel_names import COMPUTE_FAMILIES, work_kernel_mask
from opgraph.analysis.roofline.objects import isin_obj
from opgraph.analysis.roofline.op_costs import OpCosts
from opgraph.model.tree import climb_to_first

#: Device activities that receive FLOPs and bytes.
ATTRIBUTED_KINDS = ("kernel", "memcpy", "memset")


@dataclass
class ActivityOps:
    """The attributed activities (``act``: positions) with, per activity, its duration
    (``dur``, ns, clipped at 0), the innermost ``cpu_op`` above its launch (``launcher``)
    and the innermost counted op above it (``owner``); -1 where there is none."""

    act: np.ndarray
    dur: np.ndarray
    launcher: np.ndarray
    owner: np.ndarray


def link_activities(c: TraceColumns, counted: np.ndarray) -> ActivityOps:
    """Each activity's launching and owning op: climb from the host parent of the runtime
    call that launched it (``launch`` edge), or, without a launch edge, from the unique
    ``cpu_op`` carrying its ``External id``."""
    act = np.flatnonzero(isin_obj(c.kind, ATTRIBUTED_KINDS))
    start = _launch_parents(c, act)
    launcher = climb_to_first(start, c.parent, c.is_cpu_op)
    owner = climb_to_first(start, c.parent, counted)
    return ActivityOps(act, np.maximum(c.dur[act], 0), launcher, owner)


def _launch_parents(c: TraceColumns, act: np.ndarray) -> np.ndarray:
    """Per activity: the host parent of its launching runtime call, else the ``cpu_op``
    with its ``External id`` (the link Inductor's ``profile_analysis`` uses), else -1."""
    rt_of = np.full(c.n, -1, dtype=np.int64)
    if len(c.launch_dst):
        rt_of[c.launch_dst] = c.launch_src
    rt = rt_of[act]
    start = np.where(rt >= 0, c.parent[np.maximum(rt, 0)], -1)
    # fallback: External id -> the unique cpu_op with that id
    cpu_idx = np.flatnonzero(c.is_cpu_op)
    miss = (start < 0) & (c.external_id[act] > 0)
    if miss.any() and len(cpu_idx):
        x = pd.Series(cpu_idx, index=c.external_id[cpu_idx])
        x = x[(x.index > 0) & ~x.index.duplicated(keep=False)]
        got = x.reindex(c.external_id[act][miss]).to_numpy()
        got = np.where(np.isnan(got.astype(float)), -1, got).astype(np.int64)
        start[miss] = got
    return start


@dataclass
class TraceValues:
    """Activities whose args already carry a nonzero ``kernel_flop`` / ``kernel_num_gb``
    (``own``), with those values: ``flops`` (0 where none) and ``bytes`` (-1 where none)."""

    own: np.ndarray
    flops: np.ndarray
    bytes: np.ndarray


def trace_values(args: np.ndarray) -> TraceValues:
    """The values the activities with args ``args`` carry (Inductor/Triton benchmark
    builds); ``kernel_num_gb`` is GB (1e9 bytes)."""
    kf = np.zeros(len(args), dtype=np.int64)
    kb = np.full(len(args), -1, dtype=np.int64)
    own = np.zeros(len(args), dtype=bool)
    for j, a in enumerate(args.tolist()):
        if a and ("kernel_flop" in a or "kernel_num_gb" in a):
            f, gb = a.get("kernel_flop"), a.get("kernel_num_gb")
            if (isinstance(f, (int, float)) and f > 0) or (isinstance(gb, (int, float)) and gb > 0):
                own[j] = True
                kf[j] = int(f) if isinstance(f, (int, float)) and f > 0 else 0
                kb[j] = int(round(gb * 1e9)) if isinstance(gb, (int, float)) and gb > 0 else -1
    return TraceValues(own, kf, kb)


def split_shares(total: np.ndarray, gidx: np.ndarray, w: np.ndarray, ng: int) -> np.ndarray:
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


@dataclass
class Shares:
    """Per activity: ``has_owner`` (takes its values from its owning op), the op's
    ``family``, ``collective`` and ``model`` (``"trace"`` for activities with their own
    values), ``work`` (took a share or carries its own values), ``flops`` / ``nbytes``
    (valid where ``has_f`` / ``has_b``) and ``flop_source`` (``op``, ``trace`` or None)."""

    has_owner: np.ndarray
    family: np.ndarray
    collective: np.ndarray
    model: np.ndarray
    work: np.ndarray
    flops: np.ndarray
    nbytes: np.ndarray
    has_f: np.ndarray
    has_b: np.ndarray
    flop_source: np.ndarray


def work_activities(names: np.ndarray, kinds: np.ndarray, owner: np.ndarray, has_owner: np.ndarray,
                    family: np.ndarray) -> np.ndarray:
    """Which owned activities share their op's cost: the matrix/conv/attention kernels of
    GEMM, convolution and attention ops (:func:`work_kernel_mask`), all activities of other
    ops, and all activities of an op none of whose activities matched."""
    work = np.zeros(len(names), dtype=bool)
    for f in COMPUTE_FAMILIES:
        m = has_owner & (family == f)
        if m.any():
            work[m] = work_kernel_mask(names[m], kinds[m], f)
    other = has_owner & ~isin_obj(family, COMPUTE_FAMILIES)
    work[other] = True
    # owners with no work activity: all their activities share
    ow_codes, ow_uniq = pd.factorize(np.where(has_owner, owner, -1))
    any_work = np.bincount(ow_codes, weights=work.astype(float), minlength=len(ow_uniq)) > 0
    work |= has_owner & ~any_work[ow_codes]
    return work


def share_op_costs(c: TraceColumns, links: ActivityOps, oc: OpCosts, tv: TraceValues) -> Shares:
    """Split each owning op's FLOPs and bytes over its work activities by duration; the
    activities with trace values keep those and take no share."""
    act, owner, own = links.act, links.owner, tv.own
    n_act = len(act)
    kname = c.name[act]
    has_owner = (owner >= 0) & ~own
    of = np.maximum(owner, 0)  # owner positions, 0 where none (masked below)
    fam = np.where(has_owner, oc.family[of], None)
    work = work_activities(kname, c.kind[act], owner, has_owner, fam)
    flops = np.zeros(n_act, dtype=np.int64)
    nbytes = np.zeros(n_act, dtype=np.int64)
    wi = np.flatnonzero(work)
    if len(wi):
        gcodes, guniq = pd.factorize(owner[wi])
        guniq = np.asarray(guniq, dtype=np.int64)
        w = links.dur[wi].astype(float)
        flops[wi] = split_shares(oc.flops[guniq], gcodes, w, len(guniq))
        nbytes[wi] = split_shares(np.maximum(oc.bytes[guniq], 0), gcodes, w, len(guniq))
    has_f = has_owner.copy()
    has_b = has_owner & np.where(has_owner, oc.bytes[of] >= 0, False)
    flops[own] = tv.flops[own]
    nbytes[own] = np.maximum(tv.bytes[own], 0)
    has_f |= own
    has_b |= own & (tv.bytes >= 0)
    coll = np.where(has_owner, oc.collective[of], False).astype(bool)
    model = np.where(has_owner, oc.model[of], None)
    model[own] = "trace"
    flop_source = np.full(n_act, None, dtype=object)
    flop_source[has_owner] = "op"
    flop_source[own] = "trace"
    return Shares(has_owner, fam, coll, model, work | own, flops, nbytes, has_f, has_b, flop_source)
