"""The terminal tables of a catalog entry without its own renderer: each table the entry
declares (opgraph/catalog/entries.py), its columns and formats as declared, the first
``Table.top`` rows (all rows are in ``--json`` and the table files)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table as RichTable

from opgraph.catalog.spec import Analysis, Table
from opgraph.export.html.format import get_path
from opgraph.export.text.console import cell, print_table
from opgraph.export.text.numbers import is_missing


def _text(v: Any, fmt: str) -> str:
    if is_missing(v):
        return "-"
    if isinstance(v, bool) or fmt in ("s", "k"):
        return cell(" → ".join(map(str, v)) if isinstance(v, list) else v)
    if fmt in ("i", "b") and float(v).is_integer():
        return f"{int(v):,}"
    if fmt == "p":
        return f"{v:.1f}"
    return f"{v:,.1f}"


def _rows_at(doc: Any, path: str) -> Any:
    """The value at ``path`` in ``doc`` (:func:`~opgraph.export.html.format.get_path`), None
    when the document has no such part (e.g. a family with no call)."""
    try:
        return get_path(doc, path)
    except (KeyError, IndexError, TypeError, ValueError):
        return None


def _table(doc: dict[str, Any], spec: Table, console: Console, empty: str) -> None:
    v = _rows_at(doc, spec.path)
    if isinstance(v, dict):  # one object: key / value rows
        t = RichTable(title=spec.caption, title_justify="left")
        t.add_column("")
        t.add_column("value", justify="right")
        for k, x in v.items():
            if not isinstance(x, (list, dict)):
                t.add_row(cell(k), _text(x, "s" if isinstance(x, str) else "n"))
        print_table(console, t, empty)
        return
    rows = v if isinstance(v, list) else []
    cols = spec.columns or tuple((k, k, "s" if isinstance(x, str) else "n") for k, x in (rows[0] if rows else {}).items()
                                 if not isinstance(x, (list, dict)))
    more = f" (top {spec.top} of {len(rows)}; all in --json)" if len(rows) > spec.top else ""
    t = RichTable(title=spec.caption + more, title_justify="left")
    for _key, header, fmt in cols:
        t.add_column(header, justify="left" if fmt in ("s", "k") else "right")
    for r in rows[:spec.top]:
        t.add_row(*(_text(r.get(key), fmt) for key, _h, fmt in cols))
    print_table(console, t, empty)


def render_declared(doc: dict[str, Any], entry: Analysis, console: Console) -> None:
    """Every table ``entry`` declares, read from its ``--json`` document ``doc``."""
    empty = entry.section.empty if entry.section else "nothing in this trace"
    for spec in entry.tables:
        _table(doc, spec, console, empty)
