"""The edge kinds of the graph (docs/model.md), in the order the builder numbers them
(the column payload stores an edge's kind as its position here)."""

from __future__ import annotations

from typing import Any

#: Edge kinds; ``collective`` edges exist only in multi-rank job graphs (opgraph/multirank).
EDGE_KINDS = ("nest", "host_seq", "launch", "stream_seq", "sync", "event_wait", "flow", "data",  # [issue #7] + data
              "collective",  # [issue #9]
              "handoff")  # inferred cross-thread hand-offs (opgraph/graph/threads.py)

#: Edge attributes whose values are node ids (-1: none): the hand-off's first event of the
#: burst and the event it waited from. A job graph renumbers them with its node ids.
NODE_ID_EDGE_ATTRS = ("first", "wait_from")



def renumbered(attrs: dict[str, Any], shift: int) -> dict[str, Any]:
    """A copy of edge attributes ``attrs`` whose node-id values (:data:`NODE_ID_EDGE_ATTRS`)
    are moved by ``shift`` (-1, none, stays): how a job graph renumbers a rank's edges and
    how a rank's view takes them back."""
    out = dict(attrs)
    for k in NODE_ID_EDGE_ATTRS:
        v = out.get(k)
        if v is not None and v >= 0:
            out[k] = int(v) + shift
    return out


__all__ = ["EDGE_KINDS", "NODE_ID_EDGE_ATTRS", "renumbered"]
