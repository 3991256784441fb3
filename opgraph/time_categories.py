"""The one list of time categories: where the critical path's time goes and why a device
was idle, with one colour and one description each (docs/categories.md).

Every output draws on this module: the critical path (:mod:`opgraph.analysis.critical_path`),
the idle split (:mod:`opgraph.analysis.idle`), the text tables, the HTML chart, the
Perfetto args and the pictures. A category added here reaches all of them; the test
``tests/test_categories_catalog.py`` fails when an output misses one.
"""

from __future__ import annotations

#: Critical-path categories, in display order, with what each means.
PATH_CATEGORIES: dict[str, str] = {
    "cpu": "host work recorded on the path's thread: an op, a runtime call or a Python frame ran",
    "data_loading": "the thread waited in a DataLoader's __next__ (workers had no batch ready)",
    "gpu_compute": "a kernel ran",
    "gpu_comm": "a communication kernel (NCCL/RCCL/Gloo collective or send/recv) ran",
    "gpu_memory": "a copy or memset ran on the device",
    "launch_overhead": "a launch call ran, and the launch latency after it returned",
    "kernel_gap": "the device's own delay between queued activities of a stream",
    "device_wait": "a stream waited for work on another stream (an event wait)",
    "sync_wait": "the host waited in a synchronising call for device work it awaited",
    "thread_wait": "the thread waited for another thread of its process (autograd, a helper)",
    "untraced": "nothing recorded explains it (an annotation's empty time, a blocking wait with no "
                "recorded waker, a held stream, a profiler-stop tail)",
    "other": "a dependency of a kind the model does not classify",
}

#: Causes of device idle, in the order a gap is split (docs/idle.md), with what each means.
IDLE_CAUSES: dict[str, str] = {
    "cpu_induced": "the host had not launched the next activity yet (busy with other work)",
    "data_loading": "the host had not launched yet because it waited for a DataLoader batch",
    "sync_drain": "the host was blocked in a synchronising call: a sync emptied the queue",
    "launch_latency": "the launch call ran and the activity was starting",
    "kernel_gap": "the device's own delay in starting queued work",
    "device_wait": "the activity was held by an event wait on other work",
    "launch_unknown": "an activity with no launch in the trace (e.g. MTIA DMA) ended it while the launching "
                      "thread was busy: launched by that thread's work, but no call records it",
    "untraced": "held by nothing the trace records",
}

#: Categories of the cross-rank path: the path's, and waiting for another rank's collective.
CROSS_RANK_CATEGORIES: dict[str, str] = {
    **PATH_CATEGORIES,
    "gpu_comm_wait": "a collective waited for a later rank to join it",
}

#: The categories in which a thread or a stream waits (reported as a run's "longest wait").
WAIT_CATEGORIES: tuple[str, ...] = ("data_loading", "device_wait", "sync_wait", "thread_wait", "untraced")

#: One colour per category and cause (stable across the HTML report, the pictures and Perfetto).
COLOURS: dict[str, str] = {
    "cpu": "#4e79a7", "data_loading": "#8cd17d", "gpu_compute": "#59a14f", "gpu_comm": "#b07aa1",
    "gpu_memory": "#9c755f", "launch_overhead": "#f28e2b", "kernel_gap": "#edc948", "device_wait": "#e15759",
    "sync_wait": "#ff9da7", "thread_wait": "#76b7b2", "untraced": "#bab0ac", "other": "#d4a6c8",
    "gpu_comm_wait": "#af7aa1", "cpu_induced": "#4e79a7", "sync_drain": "#ff9da7", "launch_latency": "#f28e2b",
    "launch_unknown": "#86bcb6",
}


def colour(name: str) -> str:
    """The colour of a category or cause (grey for a name the catalog does not hold)."""
    return COLOURS.get(name, "#999999")


__all__ = ["PATH_CATEGORIES", "IDLE_CAUSES", "CROSS_RANK_CATEGORIES", "WAIT_CATEGORIES", "COLOURS", "colour"]
