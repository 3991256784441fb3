"""The analysis catalog: one entry per analysis (docs/architecture.md, "The analysis catalog").

Every command of ``opgraph`` is an :class:`~opgraph.catalog.spec.Analysis` here or a
:class:`~opgraph.catalog.spec.Tool`; ``tests/test_catalog.py`` fails when an analysis
module, a command, an API function or a schema is not reached from this file. The order
is the command line's (build and inspect, analyse, export).
"""

from __future__ import annotations

from opgraph.catalog.spec import Analysis, Column, Option, Section, Table, Tool

#: The performance columns of every shape table.
_PERF: tuple[Column, ...] = (("count", "calls", "i"), ("total_us", "total µs", "n"),
                             ("achieved_tflops", "TFLOP/s", "n"), ("pct_peak_flops", "% peak FLOP/s", "p"),
                             ("achieved_tbps", "TB/s", "n"), ("bound", "bound", "s"),
                             ("family_time_pct", "% of family", "p"))
_TOP_10 = Option("top", 10, "Rows per table.", "int", 1, None, "output")

ANALYSES: tuple[Analysis, ...] = (
    Analysis("info", "info", "opgraph.analysis.info:trace_info",
             "Counts, devices, streams, threads, iterations, span and trace health.",
             "info.schema.json", "docs/model.md", command_impl="opgraph.commands.info:info", api_impl=True),
    Analysis("summary", "summary", "opgraph.analysis.summary_doc:summary_doc",
             "Step time, QPS and GPU busy / idle / multistream overlap per device and stream.",
             "summary.schema.json", "docs/commands/summary.md", command_impl="opgraph.commands.summary:summary",
             api_impl=True, reads_args=False),
    Analysis("iterations", "iterations", "opgraph.analysis.step_times:iterations_doc",
             "The steps with their CPU span, GPU span, GPU busy and kernel time.",
             "iterations.schema.json", "docs/commands/iterations.md",
             command_impl="opgraph.commands.iterations:iterations", api_impl=True, reads_args=False),
    Analysis("breakdown", "breakdown", "opgraph.analysis.host_breakdown:host_breakdown",
             "Where the time goes, on the host (CPU op hierarchy) or per device and stream.",
             "breakdown.schema.json", "docs/commands/breakdown.md",
             command_impl="opgraph.commands.breakdown:breakdown", api_impl=True),
    Analysis("overheads", "overheads", "opgraph.analysis.overheads:overheads_doc",
             "CPU overheads T1-T5 per op, in µs.",
             "overheads.schema.json", "docs/commands/overheads.md",
             command_impl="opgraph.commands.overheads:overheads", api_impl=True, reads_args=False),
    Analysis("critical_path", "critical-path", "opgraph.analysis.critical_path.path:critical_path",
             "The critical path of each step: what bounds it, segment by segment, and what each category is worth.",
             "critical-path.schema.json", "docs/critical-path.md",
             command_impl="opgraph.commands.critical_path:critical_path_cmd", api_impl=True, reads_args=False),
    Analysis("idle", "idle", "opgraph.analysis.idle:idle_time",
             "GPU idle time per device and stream, CPU-induced idle, and the CPU ops to blame.",
             "idle.schema.json", "docs/idle.md", command_impl="opgraph.commands.critical_path:idle_cmd",
             api_impl=True, per_rank=True, reads_args=False),
    Analysis("stragglers", "stragglers", "opgraph.analysis.stragglers:stragglers",
             "Per collective and step of a multi-rank job: the last-arriving rank and its lateness.",
             "stragglers.schema.json", "docs/multirank.md",
             command_impl="opgraph.commands.stragglers:stragglers_cmd", api_impl=True),
    Analysis("comm_overlap", "overlap", "opgraph.analysis.overlap:comm_overlap",
             "Compute, communication and memory time per step and device, their overlap and the exposed time.",
             "overlap.schema.json", "docs/overlap.md", command_impl="opgraph.commands.overlap:overlap_cmd",
             api_impl=True, per_rank=True, reads_args=False,
             section=Section("Compute, communication and memory overlap", "no device activity", order=20),
             tables=(Table("rows", "Per window and GPU (µs; exposed = not hidden behind compute; docs/overlap.md)", (
                 ("window", "window", "s"), ("device", "GPU", "i"), ("span_us", "span µs", "n"),
                 ("compute_us", "compute µs", "n"), ("comm_us", "comm µs", "n"), ("memory_us", "memory µs", "n"),
                 ("exposed_comm_us", "exposed comm µs", "n"), ("exposed_memory_us", "exposed memory µs", "n"),
                 ("comm_overlap_pct", "comm overlapped %", "p"), ("busy_pct_of_span", "busy %", "p"))),)),
    Analysis("collectives", "collectives", "opgraph.analysis.collectives:collectives",
             "Communication kernels by collective, group size, dtype and message size: count, time, algorithm "
             "and bus bandwidth.",
             "collectives.schema.json", "docs/collectives.md",
             command_impl="opgraph.commands.collectives:collectives_cmd",
             section=Section("Collectives", "no NCCL/RCCL collective kernels", order=50),
             tables=(Table("summary", "Per collective, group size, dtype and message size (docs/collectives.md)", (
                 ("collective", "collective", "s"), ("group_size", "group", "i"), ("dtype", "dtype", "s"),
                 ("message_bytes", "message bytes", "i"), ("count", "count", "i"), ("time_us", "time µs", "n"),
                 ("algbw_gbps", "algbw GB/s", "n"), ("busbw_gbps", "busbw GB/s", "n"))),),
             example=">>> opgraph.collectives(opgraph.example_trace('gpu_bound')).to_frame().columns.tolist()[:3]\n"
                     "['collective', 'group_size', 'dtype']"),
    Analysis("launch_stats", "launch-stats", "opgraph.analysis.launch_stats:launch_stats",
             "Kernel launches: call time, delay after the call (queueing behind earlier work vs launch latency), "
             "outliers, and kernels shorter than their own launch call.",
             "launch-stats.schema.json", "docs/launch-stats.md",
             options=(Option("call_cutoff_us", 50.0, "Launch calls longer than this are outliers.", "float", 0, 1e9),
                      Option("latency_cutoff_us", 100.0, "Launch latencies (stream free, activity not started) "
                             "longer than this are outliers.", "float", 0, 1e9),
                      _TOP_10),
             render="opgraph.export.text.launch:render_launch_stats", per_rank=True, reads_args=False,
             section=Section("Kernel launches", "no kernel launches", order=60),
             tables=(Table("summary", "Summary (µs; delay = queueing behind earlier work + launch latency; "
                                      "docs/launch-stats.md)"),
                     Table("histogram", "Kernel durations", (
                         ("from_us", "from µs", "n"), ("to_us", "to µs", "n"), ("kernels", "kernels", "i"),
                         ("time_us", "time µs", "n"))),
                     Table("short_by_op", "Ops launching kernels shorter than their launch call", (
                         ("op", "op", "k"), ("kernels", "kernels", "i"), ("gpu_us", "GPU µs", "n"),
                         ("call_us", "call µs", "n")))),
             example=">>> int(opgraph.launch_stats(opgraph.example_trace('gpu_bound')).to_frame()['kernels'].iloc[0])\n"
                     "18"),
    Analysis("queue_length", "queue", "opgraph.analysis.queue_length:queue_length",
             "Per stream: how many launched activities wait or run, over time (max, time-weighted mean, p50, p90) "
             "and how long the queue sat at its limit.",
             "queue-length.schema.json", "docs/queue-length.md",
             options=(Option("limit", 1024, "Queue length at which launches block the host (CUDA's launch queue "
                             "depth).", "int", 1, 1 << 30),),
             render="opgraph.export.text.queue:render_queue_length", per_rank=True, reads_args=False,
             section=Section("Stream queue length", "no launched device activity", order=70),
             tables=(Table("queues", "Per stream, time-weighted (docs/queue-length.md)", (
                 ("device", "GPU", "i"), ("stream", "stream", "i"), ("activities", "activities", "i"),
                 ("span_us", "span µs", "n"), ("max", "max", "i"), ("mean", "mean", "n"), ("p50", "p50", "n"),
                 ("p90", "p90", "n"), ("time_full_us", "time full µs", "n"))),),
             example=">>> opgraph.queue_length(opgraph.example_trace('gpu_bound')).to_frame()['stream'].tolist()\n"
                     "[7]"),
    Analysis("memory_bandwidth", "memory-bw", "opgraph.analysis.memory_bw:memory_bandwidth",
             "Memory copies and sets per device and kind: count, bytes, time and GB/s (from the exact durations "
             "the profiler's own bandwidth argument gives, not the µs-rounded ones).",
             "memory-bw.schema.json", "docs/memory-bw.md",
             render="opgraph.export.text.memory:render_memory_bw", per_rank=True,
             section=Section("Memory copies and sets", "no memcpy or memset", order=40),
             tables=(Table("by_kind", "Per GPU and kind (bytes from the profiler; GB/s over exact durations; "
                                      "docs/memory-bw.md)", (
                 ("device", "GPU", "i"), ("kind", "kind", "s"), ("count", "count", "i"), ("bytes", "bytes", "i"),
                 ("time_us", "time µs", "n"), ("gbps", "GB/s", "n"), ("gbps_p50", "p50 GB/s", "n"),
                 ("gbps_max", "max GB/s", "n"), ("pageable", "pageable", "i"))),),
             example=">>> opgraph.memory_bandwidth(opgraph.example_trace('gpu_bound')).to_frame().columns.tolist()[:3]\n"
                     "['device', 'kind', 'count']"),
    Analysis("memory_timeline", "memory", "opgraph.analysis.memory_timeline:memory_timeline",
             "Allocated and reserved memory per device over time, peaks per step and over the trace, the ops that "
             "allocate most, and what is live at the peak.",
             "memory-timeline.schema.json", "docs/memory-timeline.md",
             command_impl="opgraph.commands.memory_timeline:memory_cmd", api_impl=True,
             section=Section("Memory over time", "no [memory] events (record with profile_memory=True)",
                             "opgraph.export.html.sections:memory_section", order=80),
             tables=(Table("devices", "Per device (bytes; docs/memory-timeline.md)", (
                 ("device_type", "type", "s"), ("device", "device", "i"),
                 ("peak_allocated_bytes", "peak allocated", "i"), ("peak_reserved_bytes", "peak reserved", "i"),
                 ("live_at_peak_bytes", "live at peak (traced)", "i"),
                 ("pre_trace_at_peak_bytes", "from before the trace", "i"), ("alloc_bytes", "allocated in total", "i"))),
                 Table("allocators", "Top allocating ops", (
                     ("device_type", "type", "s"), ("device", "device", "i"), ("op", "op", "k"),
                     ("inner_op", "inner op", "k"), ("allocations", "allocations", "i"), ("alloc_bytes", "bytes", "i"))),
                 Table("live_at_peak", "Live at the peak, by allocating op", (
                     ("device_type", "type", "s"), ("device", "device", "i"), ("op", "op", "k"),
                     ("inner_op", "inner op", "k"), ("allocations", "allocations", "i"), ("live_bytes", "bytes", "i"))))),
    Analysis("gpu_categories", "categories", "opgraph.analysis.categories:gpu_categories",
             "GPU time by operation category (GEMM, conv, attention, norm, reduction, elementwise, embedding, copy, "
             "communication, memcpy/memset, other) and by kernel type.",
             "categories.schema.json", "docs/categories.md",
             render="opgraph.export.text.categories:render_categories", per_rank=True,
             section=Section("GPU time by category", "no device activity",
                             "opgraph.export.html.sections:categories_section", order=30),
             tables=(Table("by_category", "By operation category (sums of durations; docs/categories.md)", (
                 ("category", "category", "s"), ("activities", "activities", "i"), ("gpu_us", "GPU µs", "n"),
                 ("pct", "% of GPU time", "p"))),
                 Table("by_type", "By kernel type", (
                     ("type", "type", "s"), ("activities", "activities", "i"), ("gpu_us", "GPU µs", "n"),
                     ("pct", "% of GPU time", "p")))),
             example=">>> opgraph.gpu_categories(opgraph.example_trace('gpu_bound')).to_frame()['category'].tolist()\n"
                     "['GEMM']"),
    Analysis("idle_gaps", "idle-gaps", "opgraph.analysis.idle_gaps:idle_gaps",
             "Idle gaps between device activities per device, by length: many short gaps (launch-bound: "
             "fewer, larger or captured kernels help) or few long ones (the host stalled: a sync, data loading).",
             "idle-gaps.schema.json", "docs/idle-gaps.md",
             options=(Option("short_us", 10.0, "Gaps up to this long count as short (launch-bound).", "float",
                             0, 1e9),),
             per_rank=True, reads_args=False,
             section=Section("Idle gaps by length", "no device activity", order=65),
             tables=(Table("devices", "Per device: gaps between activities over its busy span (µs; "
                                      "docs/idle-gaps.md)", (
                 ("device", "GPU", "i"), ("span_us", "span µs", "n"), ("busy_us", "busy µs", "n"),
                 ("idle_us", "idle µs", "n"), ("gaps", "gaps", "i"), ("short_gaps", "short gaps", "i"),
                 ("short_idle_us", "short idle µs", "n"), ("short_idle_pct", "short % of idle", "p"),
                 ("p50_us", "p50 µs", "n"), ("p90_us", "p90 µs", "n"), ("max_us", "max µs", "n"))),
                 Table("bins", "Gaps by length (decades)", (
                     ("device", "GPU", "i"), ("from_us", "from µs", "n"), ("to_us", "to µs", "n"),
                     ("gaps", "gaps", "i"), ("idle_us", "idle µs", "n"), ("pct_of_idle", "% of idle", "p")))),
             example=">>> g = opgraph.idle_gaps(opgraph.example_trace('cpu_bound')).to_frame().iloc[0]\n"
                     ">>> bool(g['gaps'] > 0 and g['idle_us'] > 0)\nTrue"),
    Analysis("kernel_stats", "kernels", "opgraph.analysis.kernel_stats:kernel_stats",
             "Per kernel name: count, time, launch shape, registers, shared memory, blocks per SM, estimated "
             "achieved occupancy and tensor-core use (the TensorBoard plugin's kernel view).",
             "kernel-stats.schema.json", "docs/kernel-stats.md",
             options=(Option("top", 20, "Kernel names shown in the terminal (--json/--csv: all).", "int", 1, None,
                             "view"),),
             render="opgraph.export.text.kernel_stats:render_kernel_stats", per_rank=True,
             section=Section("Kernels: launch shape, occupancy, tensor cores", "no kernels", order=100),
             tables=(Table("summary", "Summary (tensor cores judged by kernel name; occupancy weighted by duration; "
                                      "docs/kernel-stats.md)"),
                     Table("kernels", "Per kernel name", (
                         ("name", "kernel", "k"), ("count", "count", "i"), ("total_us", "total µs", "n"),
                         ("pct", "%", "p"), ("grid", "grid", "s"), ("block", "block", "s"),
                         ("registers_per_thread", "regs", "n"), ("shared_memory_bytes", "smem B", "n"),
                         ("blocks_per_sm", "blocks/SM", "n"), ("occupancy_pct", "occupancy %", "p"),
                         ("tensor_cores", "tensor cores", "s")))),
             example=">>> k = opgraph.kernel_stats(opgraph.example_trace('gpu_bound'))\n"
                     ">>> int(k.to_frame()['count'].sum()) == k.summary_['kernels']\nTrue"),
    Analysis("shapes", "shapes", "opgraph.analysis.shapes:shapes",
             "GEMM, attention and convolution calls grouped by problem size, with count, kernel time, FLOPs per "
             "call, achieved TFLOP/s, % of peak, TB/s and bound.",
             "shapes.schema.json", "docs/shapes.md", command_impl="opgraph.commands.shapes:shapes_cmd",
             api_impl=True,
             section=Section("GEMM, attention and convolution shapes",
                             "no GEMM, attention or convolution op with recorded shapes",
                             "opgraph.export.html.sections:shapes_section", order=90),
             tables=(Table("families/gemm/rows", "GEMM: one row per problem size (aligned: M, N, K multiples of 8 "
                                                 "for 16-bit, 16 for 8-bit types; docs/shapes.md)", (
                 ("name", "op", "k"), ("dtype", "dtype", "s"), ("B", "B", "i"), ("M", "M", "i"), ("N", "N", "i"),
                 ("K", "K", "i"), ("aligned", "aligned", "s")) + _PERF),
                 Table("families/attention/rows", "Attention", (
                     ("name", "op", "k"), ("dtype", "dtype", "s"), ("B", "B", "i"), ("H", "H", "i"),
                     ("Sq", "Sq", "i"), ("Sk", "Sk", "i"), ("D", "D", "i"), ("causal", "causal", "s")) + _PERF),
                 Table("families/conv/rows", "Convolution", (
                     ("name", "op", "k"), ("dtype", "dtype", "s"), ("N", "N", "i"), ("C", "C", "i"), ("H", "H", "i"),
                     ("W", "W", "i"), ("K", "K", "i"), ("R", "R", "i"), ("S", "S", "i"), ("stride", "stride", "s"),
                     ("groups", "groups", "i")) + _PERF))),
    Analysis("kernel_sequences", "sequences", "opgraph.analysis.sequences:kernel_sequences",
             "Runs of consecutive kernels on a stream that repeat, most GPU time first: where fusing kernels or "
             "capturing a CUDA graph would pay.",
             "sequences.schema.json", "docs/sequences.md", command_impl="opgraph.commands.sequences:sequences_cmd",
             api_impl=True, reads_args=False,
             options=(Option("op", None, "Only kernels launched inside ops matching REGEX.", "regex"),
                      Option("min_length", 3, "Shortest pattern (kernels).", "int", 2, 64),
                      Option("max_length", 8, "Longest pattern (kernels).", "int", 2, 64),
                      Option("top", 10, "Patterns kept.", "int", 1, 1000)),
             section=Section("Repeated kernel sequences", "no kernel sequence repeats", order=110),
             tables=(Table("patterns", "Runs of 3–8 consecutive kernels that repeat, most time first: fusion or "
                                       "CUDA-graph candidates (docs/sequences.md)", (
                 ("rank", "#", "i"), ("length", "kernels", "i"), ("occurrences", "times", "i"),
                 ("total_us", "total µs", "n"), ("mean_us", "mean µs", "n"),
                 ("pct_kernel_time", "% kernel time", "p"), ("op", "op", "k"), ("kernels", "sequence", "s"))),)),
    Analysis("cupti_counters", "counters", "opgraph.analysis.counters:cupti_counters",
             "CUPTI counters (cuda_profiler_range events) per kernel range, tied to the CPU op that launched it "
             "(correlation id, External id, else launch order when the counts agree), and the mean of each "
             "counter per op; ranges tied to no op show as (no op).",
             "counters.schema.json", "docs/counters.md",
             options=(Option("top", 30, "Ops shown in the terminal.", "int", 1, None, "view"),),
             render="opgraph.export.text.counters:render_counters",
             section=Section("CUPTI counters", "no CUPTI range-profiler events", order=120),
             tables=(Table("by_op", "Mean of each counter per launching op (docs/counters.md)"),),
             example=">>> len(opgraph.cupti_counters(opgraph.example_trace('gpu_bound')).ranges)\n0"),
    Analysis("advise", "advise", "opgraph.predict.recommendations:recommendations",
             "Rules over the critical path, idle causes, launches, overlap, copies and memory that say what to "
             "try next, each with the time at stake and the numbers behind it.",
             "advise.schema.json", "docs/recommendations.md", command_impl="opgraph.commands.advise:advise_cmd",
             api_impl=True,
             section=Section("What to try next", "no rule fired (docs/recommendations.md)",
                             "opgraph.export.html.sections:advise_section", order=10, after_others=True),
             tables=(Table("findings", "Rules over the analyses below that fired, largest time at stake first; at "
                                       "stake = min(what-if gain, time it could remove) (docs/recommendations.md)", (
                 ("rule", "rule", "s"), ("impact_us", "at stake µs", "n"), ("impact_pct", "%", "p"),
                 ("removable_us", "could remove µs", "n"), ("whatif", "what-if", "s"),
                 ("whatif_gain_us", "what-if gain µs", "n"),
                 ("finding", "finding", "s"), ("try", "try", "s"), ("see", "see", "s"))),)),
    Analysis("nvtx", "nvtx", "opgraph.analysis.nvtx:nvtx_report",
             "Per NVTX range name: count, CPU time and GPU projection (the launching call inside the range "
             "on the same thread), and the step ranges.",
             "nvtx.schema.json", "docs/formats.md", command_impl="opgraph.commands.nvtx:nvtx_cmd",
             options=(Option("step_regex", None, "Ranges listed as iterations (default: the steps).", "regex"),),
             example=">>> opgraph.nvtx(opgraph.example_trace('gpu_bound')).to_frame('nvtx_iterations').shape[0]\n3"),
    Analysis("enqueue_stats", "enqueue-stats", "opgraph.analysis.enqueue_stats:enqueue_report",
             "OpenCL (dv/dt) per-kernel enqueue stages: queued→submit, submit→start, execution and host overhead.",
             "enqueue-stats.schema.json", "docs/formats.md", command_impl="opgraph.commands.nvtx:enqueue_stats_cmd",
             example=">>> opgraph.enqueue_stats(opgraph.example_trace('gpu_bound')).to_frame().shape[0]  # no OpenCL "
                     "enqueues in a Kineto trace\n0"),
    Analysis("report", "report", "opgraph.analysis.roofline.run:roofline",
             "Roofline table: count, time, FLOPs, bytes, achieved TFLOP/s and GB/s, % of peak and the bound per "
             "kernel or op; with --html the one-file HTML report.",
             "report.schema.json", "docs/roofline.md", command_impl="opgraph.commands.report:report", api_impl=True),
    Analysis("diff", "diff", "opgraph.analysis.diff:diff_graphs",
             "Compare trace B with trace A: kernels side by side, ops, step time and critical path (B − A).",
             "diff.schema.json", "docs/diff.md", command_impl="opgraph.commands.diff:diff", api_impl=True),
    Analysis("what_if", "predict", "opgraph.predict.prediction:predict",
             "Replay the timeline from its dependency graph, or predict it under what-if transforms.",
             "predict.schema.json", "docs/predict.md", command_impl="opgraph.commands.predict:predict_cmd",
             api_impl=True),
)

#: Commands that are not one analysis of a graph.
TOOLS: tuple[Tool, ...] = (
    Tool("build", "opgraph.commands.build:build"),
    Tool("augment", "opgraph.commands.augment:augment"),
    Tool("devices", "opgraph.commands.devices:devices"),
    Tool("kernel-models", "opgraph.commands.kernel_models:kernel_models_cmd"),
    Tool("export", "opgraph.commands.export:export_cmd"),
)

#: The command line's order of reading: build and inspect, analyse, export.
COMMAND_ORDER: tuple[str, ...] = (
    "build", "info", "summary", "iterations", "breakdown", "overheads", "critical-path", "idle", "idle-gaps",
    "stragglers", "overlap", "collectives", "launch-stats", "queue", "memory-bw", "memory", "categories", "kernels",
    "shapes", "sequences", "counters", "advise", "nvtx", "enqueue-stats", "report", "augment", "devices", "diff",
    "predict", "kernel-models", "export",
)


def by_command(command: str) -> Analysis:
    """The entry of ``opgraph <command>`` (KeyError if it is not an analysis)."""
    for a in ANALYSES:
        if a.command == command:
            return a
    raise KeyError(command)


def by_name(name: str) -> Analysis:
    """The entry of the API function ``opgraph.<name>`` (KeyError if none)."""
    for a in ANALYSES:
        if a.name == name:
            return a
    raise KeyError(name)


def api_names() -> tuple[str, ...]:
    """The API functions the catalog gives (``opgraph.<name>``), in its order."""
    return tuple(a.name for a in ANALYSES if a.name)
