"""Which host events are data-loading waits: the DataLoader's ``__next__`` ranges and the
waits inside them (the critical path's ``data_loading`` category, the run verdict's
waits)."""

from __future__ import annotations

import numpy as np

from opgraph.graph.threads import BLOCKING_WAIT_RE
from opgraph.model.arrays import GraphArrays
from opgraph.model.tree import within
from opgraph.names import DATALOADER_RE


def data_loading_owners(a: GraphArrays, parent: np.ndarray | None = None) -> np.ndarray:
    """Per node: a host event whose own time is a data-loading wait: a DataLoader's
    ``__next__`` range (:data:`~opgraph.names.DATALOADER_RE`) and, inside one, the
    annotations, Python frames and blocking waits (the worker queue's ``get``). Ops and
    runtime calls inside it stay CPU work (a single-process loader's collate)."""
    host = a.is_host
    dl = host & a.names_match(DATALOADER_RE)
    if not dl.any():
        return dl
    par = a.host_parent if parent is None else parent
    inside = within(par, dl)
    waiting = a.annotation_like | a.is_kind("python") | a.names_match(BLOCKING_WAIT_RE)
    return host & inside & (dl | waiting)
