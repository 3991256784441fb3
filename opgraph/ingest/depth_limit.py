"""The nesting bound of JSON traces: args nested deeper than a saved graph can hold are cut.

:func:`limit_table_depth` is applied once to the table of every JSON reader (Kineto,
execution traces, nsys JSON lines, CLIntercept, dv/dt): any ``args`` / ``extra`` value
and the trace metadata nested more than :data:`ARGS_MAX_DEPTH` levels deep is replaced
below that depth by :data:`ARGS_TOO_DEEP`, with the ``args_too_deep`` warning. No times
here (the tables hold int64 ns; traces write µs).
"""

from __future__ import annotations

from typing import Any


from opgraph.ingest.source import SourceBytes
from opgraph.model.json_depth import raw_max_depth
from opgraph.model.table import EventTable

#: Deepest nesting kept inside an event's ``args`` (below the args object itself); deeper
#: parts are replaced by :data:`ARGS_TOO_DEEP` (JSON and pickle writers cannot nest a few
#: hundred levels, and a saved graph may nest at most ``opgraph.graph.io.MAX_ATTR_DEPTH``
#: = 32 levels, the args object included, so that what ``build`` saves loads again).
ARGS_MAX_DEPTH = 31
ARGS_TOO_DEEP = "<nested too deep: dropped by opgraph>"
_NOT_BRACKETS = bytes(i for i in range(256) if i not in b"{}[]")




def _cut_deep(obj: Any, depth: int) -> tuple[Any, bool]:
    """``obj`` with containers below ``depth`` more levels replaced by :data:`ARGS_TOO_DEEP`."""
    if not isinstance(obj, (dict, list)):
        return obj, False
    if depth <= 0:
        return ARGS_TOO_DEEP, True
    cut = False
    for k, v in (obj.items() if isinstance(obj, dict) else enumerate(obj)):
        if isinstance(v, (dict, list)):
            nv, c = _cut_deep(v, depth - 1)
            if c:
                obj[k] = nv
                cut = True
    return obj, cut


def limit_table_depth(table: EventTable, src: SourceBytes, depth_bound: int | None = None) -> None:
    """Cut every ``args``/``extra`` value of ``table`` and its trace metadata deeper than
    :data:`ARGS_MAX_DEPTH` (in place), with the ``args_too_deep`` warning: the bound of saved
    graphs, applied once to the table of every JSON reader (Kineto, execution traces, nsys
    JSON lines, CLIntercept, dv/dt).
    A bracket count on the raw bytes (:func:`raw_max_depth`, or ``depth_bound`` when the
    reader has counted already) skips the walk for ordinary files. Args kept as raw JSON
    text (:attr:`EventTable.args_pending`) come only from files that pass that count."""
    data = getattr(src, "data", None)
    if depth_bound is None and isinstance(data, (bytes, bytearray)):
        depth_bound = raw_max_depth(data)
    if depth_bound is not None and depth_bound <= ARGS_MAX_DEPTH + 1:
        return
    ev = table.events
    rows: list[int] = []
    for col in ("args", "extra"):
        if col in ev:
            for i, a in enumerate(ev[col].tolist()):
                if isinstance(a, (dict, list)) and a and _cut_deep(a, ARGS_MAX_DEPTH)[1]:
                    rows.append(i)
    if _cut_meta(table.meta) and not rows:
        rows.append(0)
    if rows and not any(h.code == "args_too_deep" for h in table.health):
        table.warn("args_too_deep", len(set(rows)), min(rows),
                   f"args nested more than {ARGS_MAX_DEPTH} levels deep: the deeper part is replaced by "
                   f"{ARGS_TOO_DEEP!r} (saving and exporting could not nest it)")


def _cut_meta(meta: dict) -> bool:
    """Cut the trace metadata of a table (graph attributes) to :data:`ARGS_MAX_DEPTH`."""
    cut = False
    for k in ("trace_metadata", "device_properties", "distributed_info"):
        v = meta.get(k)
        if isinstance(v, (dict, list)):
            cut |= _cut_deep(v, ARGS_MAX_DEPTH)[1]
    return cut
