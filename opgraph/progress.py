"""Progress display: a bar on a terminal (stderr), silent when piped."""

from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import Callable, Iterator

#: The phases of reading and building, in order (the bar's steps).
BUILD_PHASES = ("read", "parse", "table", "nesting", "launches", "flows", "syncs", "graph", "save")


@contextmanager
def phase_progress(label: str, phases: tuple[str, ...] = BUILD_PHASES,
                   enabled: bool | None = None) -> Iterator[Callable[[str], None]]:
    """Yield ``step(phase)``; on a terminal a rich progress bar advances through ``phases``.

    ``enabled`` defaults to whether stderr is a terminal."""
    if enabled is None:
        enabled = sys.stderr.isatty()
    if not enabled:
        yield lambda _phase: None
        return
    from rich.console import Console
    from rich.markup import escape
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from opgraph.export.text.console import clean

    label = escape(clean(label))  # a file name is text, not markup
    console = Console(stderr=True)
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), TextColumn("{task.fields[phase]}"),
                  TimeElapsedColumn(), console=console, transient=True) as prog:
        task = prog.add_task(label, total=len(phases), phase="")
        seen: set[str] = set()

        def step(phase: str) -> None:
            if phase in phases and phase not in seen:
                seen.add(phase)
                prog.update(task, completed=phases.index(phase), phase=phase)

        yield step
        prog.update(task, completed=len(phases))


@contextmanager
def rank_progress(label: str, enabled: bool | None = None) -> Iterator[Callable[[int, int], None]]:
    """Yield ``progress(done, total)``; a rich bar of ranks done on a terminal, else silent."""
    if enabled is None:
        enabled = sys.stderr.isatty()
    if not enabled:
        yield lambda _d, _n: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=Console(stderr=True), transient=True) as prog:
        task = prog.add_task(label, total=None)

        def step(done: int, total: int) -> None:
            prog.update(task, completed=done, total=total)

        yield step
