"""``opgraph critical-path`` and ``opgraph idle``."""

from __future__ import annotations

import click

from opgraph.cli import _console, emit_json, load_input, main


@main.command("critical-path")
@click.argument("input", type=str)
@click.option("--window", default=None,
              help="'all' for the whole trace, or a regex matched against annotation/op names "
                   "(default: each ProfilerStep#N, else the whole trace).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (schemas/critical-path.schema.json).")
@click.option("--no-path", is_flag=True, help="With --json, leave out the per-segment path.")
@click.option("--top", default=8, show_default=True, help="Top ops and kernels shown per window.")
def critical_path_cmd(input: str, window: str | None, as_json: bool, no_path: bool, top: int) -> None:
    """Critical path of each step: what bounds it, segment by segment."""
    from opgraph.analysis.critical_path import critical_path

    G = load_input(input)
    res = critical_path(G, window=window)
    if as_json:
        emit_json(res.to_dict(with_path=not no_path), "critical-path.schema.json")
        return
    from opgraph.export.text import render_critical_path
    render_critical_path(res, _console(), top=top)


@main.command("idle")
@click.argument("input", type=str)
@click.option("--kernel-wait-us", default=30.0, show_default=True,
              help="Per-stream gaps shorter than this that are not host waits count as kernel_wait.")
@click.option("--top", default=15, show_default=True, help="Blamed CPU ops to list.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (schemas/idle.schema.json).")
def idle_cmd(input: str, kernel_wait_us: float, top: int, as_json: bool) -> None:
    """GPU idle time per device and stream, CPU-induced idle, and the CPU ops to blame."""
    from opgraph.analysis.idle import idle_time

    G = load_input(input)
    res = idle_time(G, kernel_wait_us=kernel_wait_us)
    if as_json:
        emit_json(res.to_dict(top=top), "idle.schema.json")
        return
    from opgraph.export.text import render_idle
    render_idle(res, _console(), top=top)
