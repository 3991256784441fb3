"""``--window`` / ``--step-regex``: one-line errors for a window regex that cannot select
anything (registers no command).

Every command that takes one of these options selects its windows through
:func:`opgraph.graph.windows.select_windows`; a regex that is invalid or matches no
range ends the command with exit code 2 and one line naming the input, the option, and
the ranges that do exist::

    opgraph: error: trace.json: --window 'fwd' matches no range; ranges that exist: ProfilerStep#1..#5, ...
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator


@contextmanager
def window_errors(input: str | None, option: str) -> Iterator[None]:
    """Turn a :class:`~opgraph.graph.windows.WindowError` raised inside into an
    :class:`~opgraph.errors.OpgraphInputError` on ``input`` worded for ``option``."""
    from opgraph.graph.windows import WindowError
    from opgraph.errors import OpgraphInputError

    try:
        yield
    except WindowError as e:
        raise OpgraphInputError(input, e.for_option(option)) from None


def check_window(G: Any, input: str | None, window: str | None, option: str = "--window") -> None:
    """Exit 2 with one line, before any analysis runs, when ``window`` is a regex that is
    invalid or matches no range of ``G`` (``None`` and ``"all"`` always select something)."""
    if window is None or window == "all" or not window:
        return
    from opgraph.graph.windows import select_windows

    with window_errors(input, option):
        select_windows(G, window, lanes=False)
