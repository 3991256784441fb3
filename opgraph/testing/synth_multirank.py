"""A synthesized N-rank data-parallel training job whose cross-rank answers are known by
construction (one Kineto trace per rank).

Built on :mod:`opgraph.testing.synth`'s timeline model (integer **ns**, every time a whole
µs so the JSON is exact): each rank is a :class:`~opgraph.testing.synth.TraceBuilder` whose
events are placed on the rank's **own** clock, ``local = true + skew[r]``. The model runs
all ranks in lock step on a shared *true* clock; answers are computed from the model,
never by re-parsing the JSON.

Per rank and step (``ProfilerStep#k`` on the main thread, everything on one stream):

- the step opens at ``s_k + stagger[r]`` (rank 0 first, so rank 0 has the longest step);
- ``len(COLLECTIVES)`` segments, each: two ``aten::mm`` ops launching ``sgemm`` kernels of
  ``COMPUTE_US + 2 µs * r`` (the slow rank's second kernel is longer by
  ``slow_extra_us[segment]``: the "more compute before each collective"), then a
  collective: ``c10d::<op>`` > ``record_param_comms`` > ``cudaLaunchKernel`` launching an
  NCCL kernel on the same stream. ``record_param_comms`` and the kernel carry ``Process
  Group Name``, ``Seq`` (left out in the ``seq=False`` variant), ``Collective name``,
  ``In msg nelems``, ``Out msg nelems``, ``Group size``, ``Process Group Ranks``, ``dtype``;
- an optimizer op launching a 30 µs kernel, ``cudaDeviceSynchronize`` (returns 2 µs after
  the stream drains), and the step closes 8 µs later.

**Collective semantics.** A rank's collective kernel starts like any kernel (``max(launch
call end + 5 µs, stream free)``); this start is its *arrival*. With ``L`` = the latest
arrival over the ranks (true clock), every rank's kernel ends at ``L + transfer +
jitter[r]``, where ``jitter`` is 0 or 1 µs (1 µs on fewer than a third of each rank's
collectives, so the median of end differences recovers the skew exactly).

Answers (:func:`synthesize_job`, all times integer ns on the **aligned clock** = the
reference rank 0's clock, i.e. ``true + skew[0]``):

- ``alignment.offsets_ns[r] = skew[0] - skew[r]``: add it to rank ``r``'s raw times;
- ``collectives``: per collective ``pg, seq, coll, nelems, step, arrival_ns[r]`` (kernel
  start), ``launch_ns[r]`` (start of its ``cudaLaunchKernel``), ``end_ns[r]``,
  ``last_rank`` (latest arrival; lowest rank on ties), ``lateness_ns`` = latest arrival -
  second-latest arrival, ``skew_ns`` = latest - earliest arrival, ``wait_ns[r] =
  clamp(L - arrival[r], 0, dur[r])`` (the time rank ``r`` sat in the collective waiting for
  ``last_rank``);
- ``comm_wait_ns[r]`` (total), ``stragglers`` (how often each rank was last);
- ``steps``: per step, every rank's window (start = its ``ProfilerStep`` start, end = the
  last end of anything it launched or ran in it; aligned), ``window_rank`` (the longest
  span), ``path_length_ns`` (= that span), ``path_ranks`` (the ranks the cross-rank
  critical path visits: the window rank and the slow rank, by construction: the window
  rank's tail waits in the last collective for the slow rank, whose own chain reaches back
  to the step start), ``comm_wait_ns[r]`` and ``comm_wait_by_rank_ns[r][blamed]``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from opgraph.testing.synth import BASE_NS, STREAM, US, TraceBuilder, builder_answers, trace_to_json

#: Per step: (op name, ``Collective name`` as PyTorch writes it, normalised name, NCCL kernel,
#: elements, transfer time µs).
COLLECTIVES: tuple[tuple[str, str, str, str, int, int], ...] = (
    ("c10d::allreduce_", "allreduce", "all_reduce",
     "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)", 1 << 20, 40),
    ("c10d::alltoall_base_", "all_to_allv", "all_to_all",
     "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)", 1 << 18, 60),
    ("c10d::allreduce_", "allreduce", "all_reduce",
     "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)", 1 << 16, 30),
)
#: Base duration of a compute kernel (µs); rank ``r`` adds ``2 * r`` µs.
COMPUTE_US = 80
#: The slow rank's extra compute before the collective of each segment (µs).
SLOW_EXTRA_US: tuple[int, ...] = (100, 125, 150)
#: Duration of the optimizer kernel that ends each step (µs).
OPTIM_US = 30
#: Process group name of the default group.
PG = "0"


def default_skew_us(world_size: int) -> list[int]:
    """Each rank's clock minus the true clock (µs); rank 0 is 0."""
    table = (0, 1234, -567, 89, 2500, -1800, 321, -42)
    return [table[r % len(table)] + 3 * (r // len(table)) for r in range(world_size)]


def default_stagger_us(world_size: int) -> list[int]:
    """How long after rank 0 each rank opens its ``ProfilerStep`` (µs, true clock)."""
    return [0 if r == 0 else 2 + (r % 3) for r in range(world_size)]


@dataclass
class JobScenario:
    """A synthesized job: one Kineto document per rank (index = rank) and the answers."""

    name: str
    traces: list[dict[str, Any]]
    answers: dict[str, Any]


def _jitter(r: int, c: int) -> int:
    """End jitter (ns) of rank ``r`` in collective number ``c`` (0 or 1 µs)."""
    return US if (r + c) % 5 == 0 and r > 0 else 0


def synthesize_job(world_size: int = 4, steps: int = 3, slow_rank: int = 2, seq: bool = True) -> JobScenario:
    """Build the job (see the module docstring); deterministic for given arguments.

    Parameters
    ----------
    world_size : int
        Number of ranks (>= 2).
    steps : int
        ProfilerSteps per rank (>= 1).
    slow_rank : int
        The rank given extra compute before every collective (not 0: rank 0 must be the
        reference and have the longest step, so the path crosses ranks).
    seq : bool
        Write the ``Seq`` argument (``False``: the order-fallback variant).
    """
    if world_size < 2:
        raise ValueError("world_size must be >= 2")
    if not 0 < slow_rank < world_size:
        raise ValueError("slow_rank must be in 1..world_size-1")
    if steps < 1:
        raise ValueError("steps must be >= 1")
    skew = [s * US for s in default_skew_us(world_size)]
    stagger = [s * US for s in default_stagger_us(world_size)]
    builders = [TraceBuilder(f"rank{r}") for r in range(world_size)]
    ranks_str = "[" + ", ".join(str(r) for r in range(world_size)) + "]"

    def loc(r: int, t: int) -> int:   # true -> rank r's clock
        return t + skew[r]

    def true(r: int, t: int) -> int:  # rank r's clock -> true
        return t - skew[r]

    colls: list[dict[str, Any]] = []
    step_rows: list[list[dict[str, Any]]] = []
    seqno = 0
    cidx = 0
    s_true = [BASE_NS] * world_size          # next step start before stagger, per rank
    for k in range(1, steps + 1):
        st_evs = []
        cursor = []
        for r, b in enumerate(builders):
            st = b.open("annotation", f"ProfilerStep#{k}", loc(r, s_true[r] + stagger[r]))
            st_evs.append(st)
            cursor.append(st.ts + 10 * US)    # rank r's clock
        for seg, (op_name, coll_arg, coll_norm, kname, nelems, transfer_us) in enumerate(COLLECTIVES):
            seqno += 1
            kernels = []
            launches = []
            for r, b in enumerate(builders):
                t = cursor[r]
                for i in range(2):
                    op = b.span("cpu_op", "aten::mm", t, t + 30 * US, parent=st_evs[r])
                    rt = b.runtime("cudaLaunchKernel", t + 10 * US, t + 20 * US, parent=op)
                    dur = (COMPUTE_US + 2 * r) * US
                    if r == slow_rank and i == 1:
                        dur += SLOW_EXTRA_US[seg % len(SLOW_EXTRA_US)] * US
                    b.launch("kernel", "ampere_sgemm_128x64_nn", rt, dur)
                    t += 35 * US
                cargs: dict[str, Any] = {
                    "Collective name": coll_arg, "dtype": "Float", "In msg nelems": nelems,
                    "Out msg nelems": nelems, "In split size": "[]", "Out split size": "[]",
                    "Global rank start": 0, "Global rank stride": 1, "Group size": world_size,
                    "Process Group Name": PG, "Process Group Description": "default_pg",
                    "Process Group Ranks": ranks_str, "Rank": r,
                }
                if seq:
                    cargs["Seq"] = seqno
                op = b.span("cpu_op", op_name, t, t + 40 * US, parent=st_evs[r])
                rpc = b.span("cpu_op", "record_param_comms", t + 5 * US, t + 35 * US, parent=op, args=cargs)
                rt = b.runtime("cudaLaunchKernel", t + 15 * US, t + 25 * US, parent=rpc)
                kern = b.launch("kernel", kname, rt, US, args=dict(cargs))   # dur fixed below
                kernels.append(kern)
                launches.append(rt)
                cursor[r] = t + 45 * US
            arrivals = [true(r, kernels[r].ts) for r in range(world_size)]
            last_t = max(arrivals)
            last_rank = arrivals.index(last_t)
            ends = []
            for r, kern in enumerate(kernels):
                end_true = last_t + transfer_us * US + _jitter(r, cidx)
                kern.dur = loc(r, end_true) - kern.ts
                builders[r].tail[STREAM] = kern.end
                ends.append(end_true)
            others = sorted(arrivals[:last_rank] + arrivals[last_rank + 1:])
            colls.append({
                "pg": PG, "seq": seqno if seq else -1, "order": cidx, "coll": coll_norm, "nelems": nelems,
                "step": k, "transfer_ns": transfer_us * US,
                "arrival_true": arrivals, "launch_true": [true(r, launches[r].ts) for r in range(world_size)],
                "end_true": ends, "last_rank": last_rank, "lateness_ns": last_t - others[-1],
                "skew_ns": last_t - min(arrivals),
                "wait_ns": [min(max(last_t - arrivals[r], 0), ends[r] - arrivals[r]) for r in range(world_size)],
            })
            cidx += 1
        rows = []
        for r, b in enumerate(builders):
            t = cursor[r]
            op = b.span("cpu_op", "Optimizer.step#SGD.step", t, t + 30 * US, parent=st_evs[r])
            rt = b.runtime("cudaLaunchKernel", t + 10 * US, t + 20 * US, parent=op)
            b.launch("kernel", "void multi_tensor_apply_kernel<float>(float*)", rt, OPTIM_US * US)
            sync = b.synchronize("cudaDeviceSynchronize", t + 35 * US, parent=st_evs[r], stream=None)
            b.close(st_evs[r], sync.end + 8 * US)
            rows.append({"rank": r, "start_true": true(r, st_evs[r].ts), "end_true": true(r, st_evs[r].end)})
        step_rows.append(rows)
        nxt = max(row["end_true"] for row in rows) + 20 * US   # the next step opens together
        s_true = [nxt] * world_size

    # ------------------------------------------------------------------ render + answers
    traces: list[dict[str, Any]] = []
    per_rank: list[dict[str, Any]] = []
    for r, b in enumerate(builders):
        events, dicts = b.render()
        ans = builder_answers(b, events, f"rank {r} of a synthesized {world_size}-rank job")
        doc = b.document(dicts)
        assert isinstance(doc, dict)
        doc["distributedInfo"] = {"backend": "nccl", "rank": r, "world_size": world_size}
        doc["traceName"] = f"synth_job_rank{r}.json"
        traces.append(doc)
        per_rank.append({"rank": r, "file": f"rank{r}.json", "num_events": ans["num_events"],
                         "nodes_by_kind": ans["nodes_by_kind"], "edges_by_kind": ans["edges_by_kind"],
                         "collectives": len(colls), "steps": len(step_rows)})
    answers = _job_answers(colls, step_rows, skew, world_size, slow_rank, seq, steps)
    answers["ranks"] = per_rank
    return JobScenario("multirank" if seq else "multirank_noseq", traces, answers)


def _job_answers(colls: list[dict[str, Any]], step_rows: list[list[dict[str, Any]]], skew: list[int],
                 world_size: int, slow_rank: int, seq: bool, steps: int) -> dict[str, Any]:
    """Answers on the aligned clock (= rank 0's clock = true + skew[0])."""
    ref = 0

    def al(t: int) -> int:
        return t + skew[ref]

    offsets = {r: skew[ref] - skew[r] for r in range(world_size)}
    # construction check: the contract's alignment (median of end[ref] - end[r] on raw clocks)
    # recovers the offsets exactly
    for r in range(world_size):
        diffs = sorted((c["end_true"][ref] + skew[ref]) - (c["end_true"][r] + skew[r]) for c in colls)
        med = diffs[len(diffs) // 2] if len(diffs) % 2 else (diffs[len(diffs) // 2 - 1] + diffs[len(diffs) // 2]) // 2
        assert med == offsets[r], f"rank {r}: median end difference {med} != offset {offsets[r]}"
    coll_out = []
    comm_wait = {r: 0 for r in range(world_size)}
    last_count = {r: 0 for r in range(world_size)}
    for c in colls:
        coll_out.append({
            "pg": c["pg"], "seq": c["seq"], "order": c["order"], "coll": c["coll"], "nelems": c["nelems"],
            "step": c["step"], "transfer_ns": c["transfer_ns"],
            "arrival_ns": {str(r): al(t) for r, t in enumerate(c["arrival_true"])},
            "launch_ns": {str(r): al(t) for r, t in enumerate(c["launch_true"])},
            "end_ns": {str(r): al(t) for r, t in enumerate(c["end_true"])},
            "last_rank": c["last_rank"], "lateness_ns": c["lateness_ns"], "skew_ns": c["skew_ns"],
            "wait_ns": {str(r): w for r, w in enumerate(c["wait_ns"])},
        })
        last_count[c["last_rank"]] += 1
        for r, w in enumerate(c["wait_ns"]):
            comm_wait[r] += w
    step_out = []
    for k, rows in enumerate(step_rows, start=1):
        spans = {row["rank"]: row["end_true"] - row["start_true"] for row in rows}
        longest = max(spans.values())
        window_rank = min(r for r, s in spans.items() if s == longest)
        assert list(spans.values()).count(longest) == 1, f"step {k}: tied longest spans"
        assert window_rank != slow_rank, f"step {k}: the slow rank has the longest span"
        in_step = [c for c in colls if c["step"] == k]
        wait = {str(r): sum(c["wait_ns"][r] for c in in_step) for r in range(world_size)}
        by = {str(r): {} for r in range(world_size)}
        for c in in_step:
            for r, w in enumerate(c["wait_ns"]):
                if w:
                    key = str(c["last_rank"])
                    by[str(r)][key] = by[str(r)].get(key, 0) + w
        step_out.append({
            "step": k, "name": f"ProfilerStep#{k}",
            "windows": [{"rank": row["rank"], "start_ns": al(row["start_true"]), "end_ns": al(row["end_true"]),
                         "span_ns": spans[row["rank"]]} for row in rows],
            "window_rank": window_rank, "path_length_ns": longest,
            "path_ranks": sorted({window_rank, slow_rank}),
            "comm_wait_ns": wait, "comm_wait_by_rank_ns": by,
        })
    return {
        "scenario": "multirank" if seq else "multirank_noseq",
        "description": (f"{world_size}-rank data-parallel job, rank {slow_rank} slow (extra compute before "
                        "every collective), per-rank clock skew"),
        "time_unit": "ns", "clock": "aligned (reference rank 0)",
        "world_size": world_size, "steps_requested": steps, "slow_rank": slow_rank,
        "match": "seq" if seq else "order",
        "alignment": {"reference_rank": ref, "offsets_ns": {str(r): o for r, o in offsets.items()},
                      "residual_ns": {str(r): 0 for r in range(world_size)}, "matched": len(colls)},
        "num_collectives": len(colls), "collective_kernels": len(colls) * world_size,
        "collectives": coll_out,
        "comm_wait_ns": {str(r): w for r, w in comm_wait.items()},
        "stragglers": {"last_count": {str(r): n for r, n in last_count.items()},
                       "most_often_last": max(last_count, key=lambda r: (last_count[r], -r))},
        "steps": step_out,
    }


def write_job(job: JobScenario, directory: str | Path) -> list[Path]:
    """Write ``rank<r>.json`` for every rank and ``<directory>.answers.json`` beside the
    directory (so a build of the directory sees only traces); return the trace paths."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    paths = []
    for r, tr in enumerate(job.traces):
        p = d / f"rank{r}.json"
        p.write_text(trace_to_json(tr), encoding="utf-8")
        paths.append(p)
    answers_path(d).write_text(json.dumps(job.answers, indent=2) + "\n", encoding="utf-8")
    return paths


def answers_path(directory: str | Path) -> Path:
    """Where :func:`write_job` puts the answers of the job written to ``directory``."""
    d = Path(directory)
    return d.parent / f"{d.name}.answers.json"


def write_fixtures(root: str | Path = "fixtures/multirank") -> list[Path]:
    """Write both variants: ``<root>/seq/rank{0..3}.json`` (+ ``<root>/seq.answers.json``) and
    ``<root>/noseq/...`` (no ``Seq`` argument: per-group order matching)."""
    root = Path(root)
    out = []
    for seq in (True, False):
        out += write_job(synthesize_job(seq=seq), root / ("seq" if seq else "noseq"))
    return out


if __name__ == "__main__":  # python -m opgraph.testing.synth_multirank [root]
    import sys

    for p in write_fixtures(sys.argv[1] if len(sys.argv) > 1 else "fixtures/multirank"):
        print(f"{p}  {p.stat().st_size / 1024:.1f} KiB")
