"""The graph builder's host ``nest`` and ``launch`` linking, run on a raw event table
without building the graph (event ids; times in ns).

``opgraph augment`` on a raw trace needs only these two edge kinds, so it skips
:func:`opgraph.graph.build.build_payload` (syncs, stream waits, thread hand-offs, flows
other than launches, cycle checks, the networkx graph). The steps are the builder's own
functions, called with the builder's inputs: :func:`~opgraph.graph.nesting.nest_sweep`
over the host events per (pid, tid) lane, :func:`~opgraph.graph.linking.link_launches`
by correlation, and :func:`~opgraph.graph.build.link_flows` for the activities no
correlation links; the node mask and the lane codes come from the builder's
:class:`~opgraph.graph.event_columns.EventColumns`."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from opgraph.graph.build import link_flows
from opgraph.graph.event_columns import EventColumns
from opgraph.graph.linking import Edges, link_launches
from opgraph.graph.nesting import nest_sweep
from opgraph.model.table import DEVICE_ACTIVITY_KINDS, HOST_KINDS


@dataclass
class TableLinks:
    """The graph nodes of an event table and its host ``nest`` and ``launch`` edges."""

    #: Per event row: the ``kind`` (object array) and whether the row is a graph node
    #: (a node kind with a timestamp and a duration >= 0, as in the builder).
    kind: np.ndarray
    is_node: np.ndarray
    #: host parent -> child, and runtime call -> device activity (event ids).
    nest: Edges
    launch: Edges


def nest_and_launch_links(ev: pd.DataFrame) -> TableLinks:
    """The nodes, host ``nest`` edges and ``launch`` edges the builder makes for the events
    ``ev`` (a reader's :attr:`~opgraph.model.table.EventTable.events`): launches by
    correlation, plus launch flows for the activities no correlation links."""
    c = EventColumns.of(ev)   # the builder's own node mask and lanes
    kind, ts, end, eid, corr = c.kind, c.ts, c.end, c.eid, c.corr
    pid_codes, lane, is_node = c.pid_codes, c.lane, c.is_node
    h = np.flatnonzero(is_node & c.kind_in(*HOST_KINDS))
    nr = nest_sweep(lane[h], ts[h], end[h])
    hp = nr.parent >= 0
    nest = Edges(eid[h][nr.parent[hp]], eid[h][hp])
    rt = np.flatnonzero(is_node & c.kind_in("runtime"))
    act = np.flatnonzero(is_node & c.kind_in(*DEVICE_ACTIVITY_KINDS))
    launch, unlinked, _n, _x = link_launches(eid[rt], corr[rt], pid_codes[rt], ts[rt], eid[act], corr[act],
                                             ts[act])
    if len(unlinked) or (corr[act] < 0).any():  # else every activity is linked: flows add nothing
        _fe, extra, _d, _u = link_flows(ev, kind, lane, ts, end, eid, is_node, launch)
        if len(extra):
            launch = Edges(np.concatenate([launch.src, extra.src]), np.concatenate([launch.dst, extra.dst]))
    return TableLinks(kind, is_node, nest, launch)
