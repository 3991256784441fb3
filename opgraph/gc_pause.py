"""One context manager for the one trick every bulk step uses: pause Python's cyclic
garbage collector while millions of small, acyclic containers are made (2-3x faster;
they are freed by reference counting), and restore it afterwards."""

from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Iterator


@contextmanager
def gc_paused(freeze: bool = False) -> Iterator[None]:
    """Pause the cyclic GC inside the block (a no-op when it is already paused).

    ``freeze``: on the way out, move every object alive into the permanent generation
    (:func:`gc.freeze`), so that the long-lived objects just made (a loaded graph) stay out
    of the collector's later full passes."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            if freeze:
                gc.freeze()
            gc.enable()
