"""``opgraph summary``: step time, QPS and GPU busy/idle/overlap."""

from __future__ import annotations

import click

from opgraph.emit import emit_json
from opgraph.commands.base import is_multirank_input, load_input, multirank_options, rank_option
from opgraph.commands.base import console
from opgraph.commands.iterations import (
    check_regex, markers, output_options, window_options,
)
from opgraph.table_options import TableFiles, write_frames


@click.command()
@rank_option
@click.argument("input", type=str)
@click.option("--batch-size", type=click.IntRange(min=1), default=None,
              help="Samples per step; QPS = steps × batch size / host runtime (never assumed).")
@window_options
@output_options
@multirank_options
def summary(input: str, batch_size: int | None, step_regex: str | None, data_marker: tuple[str, ...],
            no_data_markers: bool, fmt: str | None, as_json: bool, csv_dir: TableFiles | None,
            scheduler: str | None, workers: int | None, rank: int | None = None) -> None:
    """Step time, QPS and GPU busy / idle / multistream overlap of INPUT.

    Host runtime = steps' span − data loading; per device: busy = union of activity
    intervals, overlap = Σ per-stream active − busy, idle = span − busy.

    INPUT a directory or a glob (one trace per rank): a per-rank table computed rank by
    rank in a process pool, or on a Dask cluster with --scheduler (--json:
    schemas/multirank-summary.schema.json)."""
    from opgraph.analysis.summary_doc import summary_doc

    if is_multirank_input([input]) or scheduler:
        from opgraph.export.text.multirank import render_multirank_summary
        from opgraph.pipelines import job_summary
        from opgraph.progress import rank_progress

        with rank_progress("summarising ranks") as progress:
            job_doc = job_summary([input], workers=workers, scheduler=scheduler, progress=progress)
        if as_json:
            emit_json(job_doc, "multirank-summary.schema.json")
        else:
            render_multirank_summary(job_doc, console())
        return
    from opgraph.commands.window_option import window_errors

    check_regex(step_regex)
    G = load_input(input, fmt, rank=rank)
    with window_errors(input, "--step-regex"):
        doc = summary_doc(G, batch_size, step_regex, markers(data_marker, no_data_markers))
    if csv_dir is not None:
        from opgraph.export.tables.documents import summary_frames
        write_frames(summary_frames(doc), csv_dir, input)
    if as_json:
        emit_json(doc, "summary.schema.json")
    elif csv_dir is None:
        from opgraph.export.tables.documents import render_summary
        render_summary(doc, console())
