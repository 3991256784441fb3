"""The tree documents the host and device breakdowns share: the labels of the closing
entries (:data:`OTHERS`, :data:`UNACCOUNTED`), one entry (:func:`tree_entry`), the
document's ``source`` (:func:`doc_source`), and the flat rows of a tree for CSV
(:func:`flatten_tree`).

Entries take times in ns and hold them in µs (``time_us``).
"""

from __future__ import annotations

from typing import Any

from opgraph.analysis.graph_frame import GraphFrame

__all__ = ["OTHERS", "UNACCOUNTED", "tree_entry", "doc_source", "flatten_tree"]

#: Name of the entry that lumps the entries of a parent past the ``top`` shown.
OTHERS = "Others"
#: Name of the entry that closes a level to 100 % of its parent (time no child covers).
UNACCOUNTED = "Unaccounted"


def tree_entry(name: str, kind: str, time_ns: int, parent_ns: int, count: int) -> dict[str, Any]:
    """One entry of a breakdown tree: ``name``, ``kind``, ``time_us`` (from ``time_ns``),
    ``percent`` of ``parent_ns`` (0 when the parent has no time) and ``count``."""
    return {"name": name, "kind": kind, "time_us": time_ns / 1e3,
            "percent": (100.0 * time_ns / parent_ns) if parent_ns > 0 else 0.0, "count": int(count)}


def doc_source(f: GraphFrame) -> dict[str, Any]:
    """The ``source`` of a breakdown document: the graph's trace ``file`` and ``sha256``
    (None when unknown)."""
    src = f.G.graph.get("source")
    src = src if isinstance(src, dict) else {}
    return {"file": src.get("file"), "sha256": src.get("sha256")}


def flatten_tree(entries: list[dict[str, Any]], prefix: tuple[str, ...] = (), level: int = 1,
                 shapes: bool = False, **fixed: Any) -> list[dict[str, Any]]:
    """Rows (one per shown entry) of a breakdown tree: ``level``, ``path`` (names joined
    with `` > ``), ``parent_path``, ``name``, ``kind``, ``time_us``, ``percent``, ``count``,
    with ``shapes``: ``shapes_distinct`` and ``top_shape``; plus ``fixed`` columns (thread or stream)."""
    rows = []
    for e in entries:
        p = prefix + (e["name"],)
        row = dict(fixed)
        row.update({"level": level, "path": " > ".join(p), "parent_path": " > ".join(prefix), "name": e["name"],
                    "kind": e["kind"], "time_us": e["time_us"], "percent": e["percent"], "count": e["count"]})
        if shapes:
            row["shapes_distinct"] = int(e.get("shapes_distinct", 0))
            row["top_shape"] = e["shapes"][0]["dims"] if e.get("shapes") else ""
        rows.append(row)
        rows.extend(flatten_tree(e.get("children", []), p, level + 1, shapes, **fixed))
    return rows
