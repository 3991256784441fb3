"""The table sections of the HTML report: one per analysis that answers with tables
(overlap, categories, copies and sets, collectives, launches, queues, memory, counters,
shapes, graph replays). Each section's data is the ``--json`` document of its command, with
the command's default options (:data:`TABLE_SECTIONS`, made from the catalog's entries with a
``section``: opgraph/catalog/entries.py), and every number printed carries its
provenance (``data-src``/``data-path``/``data-value``) like the rest of the page.

A section whose tables are all empty (no collectives, no ``[memory]`` events, ...) is not
drawn; the page lists it under "Not in this trace" with the reason, so a missing section is
never silent.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from opgraph.catalog.entries import ANALYSES
from opgraph.catalog.spec import Analysis, Table, resolve
from opgraph.export.html.format import esc as _esc
from opgraph.export.html.format import get_path
from opgraph.export.html.format import html_table as _table
from opgraph.export.html.format import num_span as _num
from opgraph.export.html.format import path_key as _k
from opgraph.export.html.format import short_name as _short
from opgraph.model.trace_graph import TraceGraph

#: A table of a section (opgraph/catalog/spec.py: path, caption, columns, top).
TableSpec = Table


@dataclass(frozen=True)
class SectionSpec:
    """A report section: its key (the document's ``data-src`` and the page anchor), title,
    the CLI command whose ``--json`` it reproduces, how to compute the document, its tables
    and the sentence shown when every table is empty."""

    key: str
    title: str
    command: tuple[str, ...]
    compute: Callable[[TraceGraph, "Shared"], Any]
    tables: tuple[TableSpec, ...]
    empty: str


class Shared(dict):
    """What the sections of one report share: the other sections' documents (by key) and
    ``"_roofline"``, the roofline result with the commands' default options (computed once
    for the categories and shapes sections)."""

    def roofline(self, G: TraceGraph) -> Any:
        if "_roofline" not in self:
            from opgraph.analysis.roofline import roofline
            self["_roofline"] = roofline(G)
        return self["_roofline"]


def _compute(entry: Analysis) -> Callable[[TraceGraph, Shared], Any]:
    """The section's document: its own ``compute`` when the catalog names one, else the
    entry's function with the catalog's defaults, ``to_dict`` with its output defaults."""
    assert entry.section is not None
    if entry.section.compute:
        own = entry.section.compute
        return lambda G, shared: resolve(own)(G, shared)
    return lambda G, shared: resolve(entry.function)(G, **entry.defaults("analysis")).to_dict(**entry.defaults("output"))


def _sections() -> tuple[SectionSpec, ...]:
    with_section = sorted((a for a in ANALYSES if a.section), key=lambda a: a.section.order)  # type: ignore[union-attr]
    return tuple(SectionSpec(a.command.replace("-", "_"), a.section.title, (a.command, "--json"),  # type: ignore[union-attr]
                             _compute(a), a.tables, a.section.empty) for a in with_section)  # type: ignore[union-attr]


#: The table sections, in the page's order: every catalog entry with a ``section``.
TABLE_SECTIONS: tuple[SectionSpec, ...] = _sections()
#: Sections computed after the others (they read the others' documents).
COMPUTED_LAST = frozenset(a.command.replace("-", "_") for a in ANALYSES if a.section and a.section.after_others)


def _fmt_cell(data: dict[str, Any], src: str, path: str, value: Any, fmt: str) -> str:
    if fmt in ("s", "k") or isinstance(value, (str, bool)) or (value is not None and not isinstance(value, (int, float))):
        if isinstance(value, bool):
            return "yes" if value else "no"
        if isinstance(value, list):  # a sequence of names
            full = " → ".join(map(str, value))
            return (f'<span class="name" title="{_esc(full)}">'
                    f'{_esc(" → ".join(_short(str(x), 40, kernel=True) for x in value))}</span>')
        s = "" if value is None else str(value)
        return (f'<span class="name" title="{_esc(s)}">{_esc(_short(s, 60, kernel=True))}</span>' if fmt == "k"
                else _esc(s))
    if fmt == "p":
        return _num(data, src, path, pct=True)
    return _num(data, src, path, nd=0 if fmt == "i" and isinstance(value, int) else 3)


def section_is_empty(doc: Any, spec: SectionSpec) -> bool:
    for t in spec.tables:
        try:
            v = get_path(doc, t.path)
        except (KeyError, IndexError, TypeError):
            continue
        if isinstance(v, list) and v:
            return False
    return True


def render_table_section(data: dict[str, Any], spec: SectionSpec) -> str:
    """The HTML of one table section (its document must be ``data[spec.key]``)."""
    doc = data[spec.key]
    parts: list[str] = []
    for t in spec.tables:
        try:
            v = get_path(doc, t.path)
        except (KeyError, IndexError, TypeError):
            continue
        if isinstance(v, dict):  # one object: key / value rows
            rows = [[_esc(k), _fmt_cell(data, spec.key, f"{t.path}/{_k(k)}", x, "n")]
                    for k, x in v.items() if not isinstance(x, (list, dict))]
            if rows:
                parts.append(f"<h3>{_esc(t.caption)}</h3>" + _table(["", "value"], rows, "small"))
            continue
        if not isinstance(v, list) or not v:
            continue
        cols = t.columns or tuple((k, k, "s" if isinstance(x, str) else "n") for k, x in v[0].items()
                                  if not isinstance(x, (list, dict)))
        rows = []
        for i, r in enumerate(v[:t.top]):
            rows.append([_fmt_cell(data, spec.key, f"{t.path}/{i}/{_k(c)}", r.get(c), f) for c, _h, f in cols])
        more = f' <span class="hint">(top {t.top} of {len(v)}; all in the JSON)</span>' if len(v) > t.top else ""
        parts.append(f"<h3>{_esc(t.caption)}{more}</h3>" + _table([h for _c, h, _f in cols], rows, "small"))
    return "".join(parts)


def table_sections(data: dict[str, Any]) -> tuple[list[tuple[str, str, str]], list[str]]:
    """``(sections, missing)``: the drawn sections as ``(anchor, title, html)`` and, for the
    others, one sentence each saying why they are not in the page."""
    out: list[tuple[str, str, str]] = []
    missing: list[str] = []
    for spec in TABLE_SECTIONS:
        if spec.key not in data:
            continue
        if section_is_empty(data[spec.key], spec):
            missing.append(f"{spec.title}: {spec.empty}")
            continue
        out.append((spec.key.replace("_", "-"), spec.title, render_table_section(data, spec)))
    return out, missing
