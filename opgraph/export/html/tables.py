"""The table sections of the HTML report: one per analysis that answers with tables
(overlap, categories, copies and sets, collectives, launches, queues, memory, counters,
shapes, graph replays). Each section's data is the ``--json`` document of its command, with
the command's default options (:data:`TABLE_SECTIONS`), and every number printed carries its
provenance (``data-src``/``data-path``/``data-value``) like the rest of the page.

A section whose tables are all empty (no collectives, no ``[memory]`` events, ...) is not
drawn; the page lists it under "Not in this trace" with the reason, so a missing section is
never silent.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable


from opgraph.export.html.format import esc as _esc
from opgraph.export.html.format import get_path
from opgraph.export.html.format import html_table as _table
from opgraph.export.html.format import num_span as _num
from opgraph.export.html.format import path_key as _k
from opgraph.export.html.format import short_name as _short
from opgraph.graph.model import TraceGraph

#: Column format codes: ``s`` text, ``n`` number (3 decimals), ``i`` integer, ``p`` percent,
#: ``b`` bytes as a number, ``k`` kernel name (shortened, full name as tooltip).
Column = tuple[str, str, str]


@dataclass(frozen=True)
class TableSpec:
    """One table of a section: the path of its row list (or object) in the document, a
    caption, and the columns (``None``: every key of the first row)."""

    path: str
    caption: str
    columns: tuple[Column, ...] | None = None
    top: int = 15


@dataclass(frozen=True)
class SectionSpec:
    """A report section: its key (the document's ``data-src`` and the page anchor), title,
    the CLI command whose ``--json`` it reproduces, how to compute the document, its tables
    and the sentence shown when every table is empty."""

    key: str
    title: str
    command: tuple[str, ...]
    compute: Callable[[TraceGraph, "Shared"], Any]
    tables: tuple[TableSpec, ...]
    empty: str


class Shared(dict):
    """What the sections of one report share: the other sections' documents (by key) and
    ``"_roofline"``, the roofline result with the commands' default options (computed once
    for the categories and shapes sections)."""

    def roofline(self, G: TraceGraph) -> Any:
        if "_roofline" not in self:
            from opgraph.analysis.roofline import roofline
            self["_roofline"] = roofline(G)
        return self["_roofline"]


def _overlap(G: TraceGraph, shared: Shared) -> Any:
    from opgraph.analysis.overlap import comm_overlap
    return comm_overlap(G).to_dict()


def _categories(G: TraceGraph, shared: Shared) -> Any:
    from opgraph.analysis.categories import gpu_categories
    return gpu_categories(G, shared.roofline(G)).to_dict()


def _memory_bw(G: TraceGraph, shared: Shared) -> Any:
    from opgraph.analysis.memory_bw import memory_bandwidth
    return memory_bandwidth(G).to_dict()


def _collectives(G: TraceGraph, shared: Shared) -> Any:
    from opgraph.analysis.collectives import collectives
    return collectives(G).to_dict()


def _launch(G: TraceGraph, shared: Shared) -> Any:
    from opgraph.analysis.launch_stats import launch_stats
    return launch_stats(G, 50.0, 100.0).to_dict(10)


def _queue(G: TraceGraph, shared: Shared) -> Any:
    from opgraph.analysis.queue_length import queue_length
    return queue_length(G, 1024).to_dict()


def _memory(G: TraceGraph, shared: Shared) -> Any:
    from opgraph.analysis.memory_timeline import memory_timeline
    return memory_timeline(G, None).to_dict(series=False)


def _counters(G: TraceGraph, shared: Shared) -> Any:
    from opgraph.analysis.counters import cupti_counters
    return cupti_counters(G).to_dict()


def _shapes(G: TraceGraph, shared: Shared) -> Any:
    from opgraph.analysis.shapes import shapes
    return shapes(shared.roofline(G)).to_dict(None, ("gemm", "attention", "conv"))


_PERF: tuple[Column, ...] = (("count", "calls", "i"), ("total_us", "total µs", "n"),
                             ("achieved_tflops", "TFLOP/s", "n"), ("pct_peak_flops", "% peak FLOP/s", "p"),
                             ("achieved_tbps", "TB/s", "n"), ("bound", "bound", "s"),
                             ("family_time_pct", "% of family", "p"))


def _kernels(G: TraceGraph, shared: Shared) -> Any:
    from opgraph.analysis.kernel_stats import kernel_stats
    return kernel_stats(G).to_dict()


def _sequences(G: TraceGraph, shared: Shared) -> Any:
    from opgraph.analysis.sequences import kernel_sequences
    return kernel_sequences(G, None, 3, 8, 10).to_dict()


def _advise(G: TraceGraph, shared: Shared) -> Any:
    """``opgraph advise --json``, reusing the documents of the other sections made with the
    same options (so it is computed after them)."""
    from opgraph.predict.recommendations import recommendations
    given = {"cp": shared.get("critical_path"), "launch": shared.get("launch_stats"), "overlap": shared.get("overlap"),
             "copies": shared.get("memory_bw"), "memory": shared.get("memory"), "shapes": shared.get("shapes")}
    return recommendations(G, given).to_dict()


#: Sections computed after the others (they read the others' documents).
COMPUTED_LAST = frozenset({"advise"})


TABLE_SECTIONS: tuple[SectionSpec, ...] = (
    SectionSpec("advise", "What to try next", ("advise", "--json"), _advise, (
        TableSpec("findings", "Rules over the analyses below that fired, largest time at stake first; at stake = "
                              "min(what-if gain, time it could remove) (docs/recommendations.md)", (
            ("rule", "rule", "s"), ("impact_us", "at stake µs", "n"), ("impact_pct", "%", "p"),
            ("removable_us", "could remove µs", "n"), ("whatif", "what-if", "s"),
            ("whatif_gain_us", "what-if gain µs", "n"),
            ("finding", "finding", "s"), ("try", "try", "s"), ("see", "see", "s"))),),
        "no rule fired (docs/recommendations.md)"),
    SectionSpec("overlap", "Compute, communication and memory overlap", ("overlap", "--json"), _overlap, (
        TableSpec("rows", "Per window and GPU (µs; exposed = not hidden behind compute; docs/overlap.md)", (
            ("window", "window", "s"), ("device", "GPU", "i"), ("span_us", "span µs", "n"),
            ("compute_us", "compute µs", "n"), ("comm_us", "comm µs", "n"), ("memory_us", "memory µs", "n"),
            ("exposed_comm_us", "exposed comm µs", "n"), ("exposed_memory_us", "exposed memory µs", "n"),
            ("comm_overlap_pct", "comm overlapped %", "p"), ("busy_pct_of_span", "busy %", "p"))),),
        "no device activity"),
    SectionSpec("categories", "GPU time by category", ("categories", "--json"), _categories, (
        TableSpec("by_category", "By operation category (sums of durations; docs/categories.md)", (
            ("category", "category", "s"), ("activities", "activities", "i"), ("gpu_us", "GPU µs", "n"),
            ("pct", "% of GPU time", "p"))),
        TableSpec("by_type", "By kernel type", (
            ("type", "type", "s"), ("activities", "activities", "i"), ("gpu_us", "GPU µs", "n"),
            ("pct", "% of GPU time", "p")))),
        "no device activity"),
    SectionSpec("memory_bw", "Memory copies and sets", ("memory-bw", "--json"), _memory_bw, (
        TableSpec("by_kind", "Per GPU and kind (bytes from the profiler; GB/s over exact durations; "
                             "docs/memory-bw.md)", (
            ("device", "GPU", "i"), ("kind", "kind", "s"), ("count", "count", "i"), ("bytes", "bytes", "i"),
            ("time_us", "time µs", "n"), ("gbps", "GB/s", "n"), ("gbps_p50", "p50 GB/s", "n"),
            ("gbps_max", "max GB/s", "n"), ("pageable", "pageable", "i"))),),
        "no memcpy or memset"),
    SectionSpec("collectives", "Collectives", ("collectives", "--json"), _collectives, (
        TableSpec("summary", "Per collective, group size, dtype and message size (docs/collectives.md)", (
            ("collective", "collective", "s"), ("group_size", "group", "i"), ("dtype", "dtype", "s"),
            ("message_bytes", "message bytes", "i"), ("count", "count", "i"), ("time_us", "time µs", "n"),
            ("algbw_gbps", "algbw GB/s", "n"), ("busbw_gbps", "busbw GB/s", "n"))),),
        "no NCCL/RCCL collective kernels"),
    SectionSpec("launch_stats", "Kernel launches", ("launch-stats", "--json"), _launch, (
        TableSpec("summary", "Summary (µs; delay = queueing behind earlier work + launch latency; "
                             "docs/launch-stats.md)"),
        TableSpec("histogram", "Kernel durations", (
            ("from_us", "from µs", "n"), ("to_us", "to µs", "n"), ("kernels", "kernels", "i"),
            ("time_us", "time µs", "n"))),
        TableSpec("short_by_op", "Ops launching kernels shorter than their launch call", (
            ("op", "op", "k"), ("kernels", "kernels", "i"), ("gpu_us", "GPU µs", "n"), ("call_us", "call µs", "n")))),
        "no kernel launches"),
    SectionSpec("queue", "Stream queue length", ("queue", "--json"), _queue, (
        TableSpec("queues", "Per stream, time-weighted (docs/queue-length.md)", (
            ("device", "GPU", "i"), ("stream", "stream", "i"), ("activities", "activities", "i"),
            ("span_us", "span µs", "n"), ("max", "max", "i"), ("mean", "mean", "n"), ("p50", "p50", "n"),
            ("p90", "p90", "n"), ("time_full_us", "time full µs", "n"))),),
        "no launched device activity"),
    SectionSpec("memory", "Memory over time", ("memory", "--json"), _memory, (
        TableSpec("devices", "Per device (bytes; docs/memory-timeline.md)", (
            ("device_type", "type", "s"), ("device", "device", "i"), ("peak_allocated_bytes", "peak allocated", "i"),
            ("peak_reserved_bytes", "peak reserved", "i"), ("live_at_peak_bytes", "live at peak (traced)", "i"),
            ("pre_trace_at_peak_bytes", "from before the trace", "i"), ("alloc_bytes", "allocated in total", "i"))),
        TableSpec("allocators", "Top allocating ops", (
            ("device_type", "type", "s"), ("device", "device", "i"), ("op", "op", "k"), ("inner_op", "inner op", "k"),
            ("allocations", "allocations", "i"), ("alloc_bytes", "bytes", "i"))),
        TableSpec("live_at_peak", "Live at the peak, by allocating op", (
            ("device_type", "type", "s"), ("device", "device", "i"), ("op", "op", "k"), ("inner_op", "inner op", "k"),
            ("allocations", "allocations", "i"), ("live_bytes", "bytes", "i")))),
        "no [memory] events (record with profile_memory=True)"),
    SectionSpec("shapes", "GEMM, attention and convolution shapes", ("shapes", "--json"), _shapes, (
        TableSpec("families/gemm/rows", "GEMM: one row per problem size (aligned: M, N, K multiples of 8 for "
                                        "16-bit, 16 for 8-bit types; docs/shapes.md)", (
            ("name", "op", "k"), ("dtype", "dtype", "s"), ("B", "B", "i"), ("M", "M", "i"), ("N", "N", "i"),
            ("K", "K", "i"), ("aligned", "aligned", "s")) + _PERF),
        TableSpec("families/attention/rows", "Attention", (
            ("name", "op", "k"), ("dtype", "dtype", "s"), ("B", "B", "i"), ("H", "H", "i"), ("Sq", "Sq", "i"),
            ("Sk", "Sk", "i"), ("D", "D", "i"), ("causal", "causal", "s")) + _PERF),
        TableSpec("families/conv/rows", "Convolution", (
            ("name", "op", "k"), ("dtype", "dtype", "s"), ("N", "N", "i"), ("C", "C", "i"), ("H", "H", "i"),
            ("W", "W", "i"), ("K", "K", "i"), ("R", "R", "i"), ("S", "S", "i"), ("stride", "stride", "s"),
            ("groups", "groups", "i")) + _PERF)),
        "no GEMM, attention or convolution op with recorded shapes"),
    SectionSpec("kernels", "Kernels: launch shape, occupancy, tensor cores", ("kernels", "--json"), _kernels, (
        TableSpec("summary", "Summary (tensor cores judged by kernel name; occupancy weighted by duration; "
                             "docs/kernel-stats.md)"),
        TableSpec("kernels", "Per kernel name", (
            ("name", "kernel", "k"), ("count", "count", "i"), ("total_us", "total µs", "n"), ("pct", "%", "p"),
            ("grid", "grid", "s"), ("block", "block", "s"), ("registers_per_thread", "regs", "n"),
            ("shared_memory_bytes", "smem B", "n"), ("blocks_per_sm", "blocks/SM", "n"),
            ("occupancy_pct", "occupancy %", "p"), ("tensor_cores", "tensor cores", "s")))),
        "no kernels"),
    SectionSpec("sequences", "Repeated kernel sequences", ("sequences", "--json"), _sequences, (
        TableSpec("patterns", "Runs of 3–8 consecutive kernels that repeat, most time first: fusion or CUDA-graph "
                              "candidates (docs/sequences.md)", (
            ("rank", "#", "i"), ("length", "kernels", "i"), ("occurrences", "times", "i"),
            ("total_us", "total µs", "n"), ("mean_us", "mean µs", "n"), ("pct_kernel_time", "% kernel time", "p"),
            ("op", "op", "k"), ("kernels", "sequence", "s"))),),
        "no kernel sequence repeats"),
    SectionSpec("counters", "CUPTI counters", ("counters", "--json"), _counters, (
        TableSpec("by_op", "Mean of each counter per launching op (docs/counters.md)"),),
        "no CUPTI range-profiler events"),
)


def _fmt_cell(data: dict[str, Any], src: str, path: str, value: Any, fmt: str) -> str:
    if fmt in ("s", "k") or isinstance(value, (str, bool)) or (value is not None and not isinstance(value, (int, float))):
        if isinstance(value, bool):
            return "yes" if value else "no"
        if isinstance(value, list):  # a sequence of names
            full = " → ".join(map(str, value))
            return (f'<span class="name" title="{_esc(full)}">'
                    f'{_esc(" → ".join(_short(str(x), 40, kernel=True) for x in value))}</span>')
        s = "" if value is None else str(value)
        return (f'<span class="name" title="{_esc(s)}">{_esc(_short(s, 60, kernel=True))}</span>' if fmt == "k"
                else _esc(s))
    if fmt == "p":
        return _num(data, src, path, pct=True)
    return _num(data, src, path, nd=0 if fmt == "i" and isinstance(value, int) else 3)


def section_is_empty(doc: Any, spec: SectionSpec) -> bool:
    for t in spec.tables:
        try:
            v = get_path(doc, t.path)
        except (KeyError, IndexError, TypeError):
            continue
        if isinstance(v, list) and v:
            return False
    return True


def render_table_section(data: dict[str, Any], spec: SectionSpec) -> str:
    """The HTML of one table section (its document must be ``data[spec.key]``)."""
    doc = data[spec.key]
    parts: list[str] = []
    for t in spec.tables:
        try:
            v = get_path(doc, t.path)
        except (KeyError, IndexError, TypeError):
            continue
        if isinstance(v, dict):  # one object: key / value rows
            rows = [[_esc(k), _fmt_cell(data, spec.key, f"{t.path}/{_k(k)}", x, "n")]
                    for k, x in v.items() if not isinstance(x, (list, dict))]
            if rows:
                parts.append(f"<h3>{_esc(t.caption)}</h3>" + _table(["", "value"], rows, "small"))
            continue
        if not isinstance(v, list) or not v:
            continue
        cols = t.columns or tuple((k, k, "s" if isinstance(x, str) else "n") for k, x in v[0].items()
                                  if not isinstance(x, (list, dict)))
        rows = []
        for i, r in enumerate(v[:t.top]):
            rows.append([_fmt_cell(data, spec.key, f"{t.path}/{i}/{_k(c)}", r.get(c), f) for c, _h, f in cols])
        more = f' <span class="hint">(top {t.top} of {len(v)}; all in the JSON)</span>' if len(v) > t.top else ""
        parts.append(f"<h3>{_esc(t.caption)}{more}</h3>" + _table([h for _c, h, _f in cols], rows, "small"))
    return "".join(parts)


def table_sections(data: dict[str, Any]) -> tuple[list[tuple[str, str, str]], list[str]]:
    """``(sections, missing)``: the drawn sections as ``(anchor, title, html)`` and, for the
    others, one sentence each saying why they are not in the page."""
    out: list[tuple[str, str, str]] = []
    missing: list[str] = []
    for spec in TABLE_SECTIONS:
        if spec.key not in data:
            continue
        if section_is_empty(data[spec.key], spec):
            missing.append(f"{spec.title}: {spec.empty}")
            continue
        out.append((spec.key.replace("_", "-"), spec.title, render_table_section(data, spec)))
    return out, missing
