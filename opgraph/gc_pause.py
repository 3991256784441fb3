"""One context manager for the one trick every bulk step uses: pause Python's cyclic
garbage collector while millions of small, acyclic containers are made (2-3x faster;
they are freed by reference counting), and restore it afterwards.

Freezing what was made (``gc.freeze``) is only for a process that loads one graph and
exits (the ``opgraph`` command turns it on with :func:`freeze_after_loads`): frozen
objects that sit in a reference cycle are never freed, so a long-lived process (a
notebook, a test session) that loads graph after graph would keep every one of them
(~110 MB per load of a 90k-event trace). See docs/dependencies.md."""

from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Iterator


_FREEZE = {"on": False}


def freeze_after_loads(on: bool = True) -> None:
    """Let ``gc_paused(freeze=True)`` freeze what it made (off by default: see above)."""
    _FREEZE["on"] = on


@contextmanager
def gc_paused(freeze: bool = False) -> Iterator[None]:
    """Pause the cyclic GC inside the block (a no-op when it is already paused).

    ``freeze``: on the way out, move every object alive into the permanent generation
    (:func:`gc.freeze`), so that the long-lived objects just made (a loaded graph) stay out
    of the collector's later full passes; only when :func:`freeze_after_loads` turned it on."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            if freeze and _FREEZE["on"]:
                gc.freeze()
            gc.enable()
