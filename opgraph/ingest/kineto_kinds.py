"""Kineto event kinds: which canonical kind each (phase, category) pair of a Chrome trace is.

Holds the category table of complete (``X``) events (:data:`CATEGORY_KIND`), the phases
the Kineto reader understands (:data:`KNOWN_PH`), the MTIA refinements by event name, and
the lookup :func:`opgraph.ingest.kineto_events.events_to_table` runs once per distinct
(phase, category) pair. No times here (the event table keeps int64 ns; traces write µs).
"""

from __future__ import annotations

import numpy as np

from opgraph.model.event_args import ArgsColumn

#: Category -> canonical kind for complete (``X``) events.
CATEGORY_KIND: dict[str, str] = {
    "cpu_op": "cpu_op", "Operator": "cpu_op", "operator": "cpu_op",
    "user_annotation": "annotation", "User Annotation": "annotation",
    "python_function": "python", "python": "python",
    "cuda_runtime": "runtime", "Runtime": "runtime", "cuda_driver": "runtime",
    "hip_runtime": "runtime", "hip_driver": "runtime", "mtia_runtime": "runtime",
    "kernel": "kernel", "Kernel": "kernel", "mtia_ccp_events": "kernel",
    "gpu_memcpy": "memcpy", "Memcpy": "memcpy",
    "gpu_memset": "memset", "Memset": "memset",
    "gpu_user_annotation": "gpu_annotation",
    "cuda_sync": "cuda_sync",
    "Trace": "trace_span",
    "cuda_profiler_range": "other", "overhead": "other",
}
#: MTIA device events (``mtia_ccp_events``) by name, where the kind is not ``kernel``:
#: ``dma_request`` is a memory transfer; ``event_record`` and ``event_wait`` are stream
#: event records and device-side waits (``args.wait_on_stream``, ``args.seq_num``), kept as
#: ``cuda_sync`` records that the graph builder turns into ``event_wait`` edges.
MTIA_CCP_KIND: dict[str, str] = {"dma_request": "memcpy", "event_record": "cuda_sync", "event_wait": "cuda_sync"}
#: ``mtia_runtime`` names that, written in the device's own process (``pid`` equal to
#: ``args.device``), are the device-side record of a host call with the same correlation
#: (``synchronize`` mirrors ``synchronizeStream``): ``cuda_sync`` records, not host calls.
MTIA_DEVICE_RECORDS = frozenset({"synchronize"})
#: Categories whose X events are known and deliberately not nodes (no
#: ``unknown_category`` warning for them).
KNOWN_NON_NODE_CATS = {"cuda_profiler_range", "overhead", "Trace", "cuda_sync"}
_FLOW_PH = {"s": "flow_start", "t": "flow_end", "f": "flow_end"}
_INSTANT_PH = {"i", "I", "n", "R"}
#: Phases the reader understands; any other is kept (kind ``other``) with an ``unknown_phase``
#: warning. ``B``/``E`` (duration begin/end) are paired per thread into complete spans.
KNOWN_PH = frozenset({"X", "B", "E", "M", "C"} | set(_FLOW_PH) | _INSTANT_PH)


def pair_kinds(pair_u: np.ndarray, ph_u: list, cat_list: list, n_cat: int) -> tuple[list[str], list[int], list[int]]:
    """The kind of each distinct (phase, category) pair ``pair_u`` (code = phase code *
    ``n_cat`` + category slot; ``cat_list[0]`` is the missing category), the positions of
    the pairs whose span category is unknown (kind ``other``) and of those whose phase is
    not in :data:`KNOWN_PH`."""
    pair_kind = []
    unknown_pairs = []
    unknown_ph_pairs = []
    for j, pc in enumerate(pair_u.tolist()):
        p, c = ph_u[pc // n_cat], cat_list[pc % n_cat]
        if p not in KNOWN_PH:
            unknown_ph_pairs.append(j)
        if p == "X" or p == "B":
            k = CATEGORY_KIND.get(c)
            if k is None:
                k = "other"
                unknown_pairs.append(j)
        elif p in _FLOW_PH:
            k = _FLOW_PH[p]
        elif p == "M":
            k = "meta"
        elif p in _INSTANT_PH:
            k = "instant"
        elif p == "C":
            k = "counter"
        else:
            k = "other"
        pair_kind.append(k)
    return pair_kind, unknown_pairs, unknown_ph_pairs


def mtia_kinds(kind: np.ndarray, cat_codes: np.ndarray, cat_uniques: list, name_codes: np.ndarray,
               name_uniques: list, pid: list, args: ArgsColumn) -> None:
    """Refine the kinds of MTIA events in place, by name (:data:`MTIA_CCP_KIND`,
    :data:`MTIA_DEVICE_RECORDS`; ``args``: the events' args, read for those records only)."""
    cats = {c: j for j, c in enumerate(cat_uniques) if c in ("mtia_ccp_events", "mtia_runtime")}
    if not cats:
        return
    code_of = {nm: j for j, nm in enumerate(name_uniques)}
    ccp = cats.get("mtia_ccp_events")
    if ccp is not None:
        is_ccp = (cat_codes == ccp) & (kind == "kernel")
        for nm, k in MTIA_CCP_KIND.items():
            if nm in code_of:
                kind[is_ccp & (name_codes == code_of[nm])] = k
    rt = cats.get("mtia_runtime")
    if rt is not None:
        codes = [code_of[nm] for nm in MTIA_DEVICE_RECORDS if nm in code_of]
        rows = np.flatnonzero((cat_codes == rt) & (kind == "runtime") & np.isin(name_codes, codes))
        for i, a in zip(rows.tolist(), args.rows(rows)):
            dev = (a or {}).get("device")
            if dev is not None and str(dev) == str(pid[i]):
                kind[i] = "cuda_sync"


def kind_categories() -> list[str]:
    """The categories of the ``kind`` column: every canonical kind, in table order."""
    from opgraph.model.table import ALL_KINDS
    return list(ALL_KINDS)
