"""``opgraph export --perfetto PATH``: the trace with the answers in each event's args
(docs/perfetto.md); on a multi-rank job graph, the whole job (docs/multirank.md)."""

from __future__ import annotations

from typing import Any

import click

from opgraph.commands.exporters import exporter, input_files
from opgraph.errors import OpgraphInputError
from opgraph.model.trace_graph import TraceGraph


def _write_perfetto(G: TraceGraph, path: str, opts: dict[str, Any]) -> str:
    from opgraph.commands.window_option import check_window, window_errors
    from opgraph.export.perfetto.overlay import export_perfetto

    check_window(G, opts.get("input"), opts.get("window"))
    with window_errors(opts.get("input"), "--window"):
        s = export_perfetto(G, path, window=opts.get("window"), inputs=input_files(opts))
    return (f"{path}: {s['events']:,} original events + {s['flows']:,} critical-path flows, "
            f"{s['counter_events']:,} counter samples, {s['metadata_events']:,} names; "
            f"{s['critical_events']:,} critical events in {s['windows']} window(s) "
            f"— open it in https://ui.perfetto.dev")


def _write_perfetto_job(G: TraceGraph, path: str, opts: dict[str, Any]) -> str:
    from opgraph.export.perfetto.job import export_perfetto_job

    if opts.get("window"):
        raise OpgraphInputError(str(opts.get("input")), "--window applies to one rank: a job's critical path is "
                                "one cross-rank path per step (pass --rank N for a single-rank overlay)")
    s = export_perfetto_job(G, path, inputs=input_files(opts))
    summ = s["summarised_ranks"]
    return (f"{path}: {s['kept']} rank(s) in full, {s['events']:,} original events on the aligned clock + "
            f"{s['collective_flows']:,} collective flows, {s['critical_flows']:,} critical-path flows, "
            f"{s['counter_events']:,} counter samples; cross-rank critical path of {s['steps']} step(s)"
            + (f"; summarised (collectives only): ranks {','.join(map(str, summ))}" if summ else "")
            + " — open it in https://ui.perfetto.dev")


#: ``--window``: shared by ``--perfetto`` and the pictures.
WINDOW_OPTION = click.Option(
    ["--window"], default=None,
    help="Critical-path windows: 'all' for the whole trace, or a regex matched against "
         "annotation/op names (default: each step, ProfilerStep#N or NVTX 'Iteration N', else the "
         "whole trace). A regex that matches nothing exits 2.")

#: ``--perfetto PATH``.
PERFETTO_EXPORTER = exporter(
    "perfetto", "--perfetto", run=_write_perfetto, run_job=_write_perfetto_job, suffixes=(".json", ".json.gz"),
    help="Chrome/Perfetto trace JSON (.json or .json.gz): the original events plus the "
         "critical path, idle blame, launch delays, GPU counters (docs/perfetto.md). On a "
         "multi-rank job graph without --rank: the whole job, one process group per rank "
         "(docs/multirank.md).")
