"""Formatting helpers of the HTML report (opgraph/export/html/report.py and its table sections):
numbers as printed, with their provenance attributes (``data-src``/``data-path``/
``data-value``), escaping, shortened names, tables and chart placeholders."""

from __future__ import annotations

import html
import math
from typing import Any

import orjson

from opgraph.exact_json import exact_default


def fmt_num(v: Any, nd: int = 3) -> str:
    """A number as printed: thousands separators, ``nd`` decimals with trailing zeros
    dropped (µs values keep their ns digits)."""
    if v is None:
        return "–"
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, int):
        return f"{v:,}"
    x = float(v)
    if not math.isfinite(x):
        return str(x)
    s = f"{x:,.{nd}f}"
    if "." in s:
        s = s.rstrip("0").rstrip(".")
    return "0" if s in ("-0", "") else s


def fmt_pct(v: Any) -> str:
    return "–" if v is None else f"{float(v):,.2f}"


def path_key(key: Any) -> str:
    """A dict key as one step of a ``data-path`` (JSON-pointer escapes: ``~0`` ``~1``)."""
    return str(key).replace("~", "~0").replace("/", "~1")


def get_path(doc: Any, path: str) -> Any:
    """The value at a ``data-path`` (``/``-separated; ``~1`` is ``/``, ``~0`` is ``~``)."""
    cur = doc
    for part in path.split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        cur = cur[int(part)] if isinstance(cur, list) else cur[part]
    return cur


def num_span(data: dict[str, Any], src: str, path: str, unit: str = "", pct: bool = False, nd: int = 3) -> str:
    """A printed number of ``data[src]`` at ``path``, with its provenance attributes."""
    v = get_path(data[src], path)
    text = fmt_pct(v) if pct else fmt_num(v, nd)
    if v is None:
        return '<span class="num na">–</span>'
    unit_html = f'<span class="unit">{html.escape(unit)}</span>' if unit else ""
    return (f'<span class="num" data-src="{src}" data-path="{html.escape(path)}" '
            f'data-value="{html.escape(orjson.dumps(v, default=exact_default).decode())}" data-fmt="{"pct" if pct else nd}">'
            f'{text}</span>{unit_html}')


def esc(s: Any) -> str:
    return html.escape("" if s is None else str(s))


def short_name(name: str, width: int = 80, kernel: bool = False) -> str:
    """A name for a table cell (the full name is its tooltip): a kernel without ``void``
    and parameter list; then cut in the middle, keeping both ends."""
    s = " ".join(str(name).split())
    if kernel:
        from opgraph.names import normalize_kernel_name
        s = normalize_kernel_name(s) or s
    if len(s) <= width:
        return s
    k = (width - 1) // 3
    return s[:k] + "…" + s[len(s) - (width - 1 - k):]


def html_table(head: list[str], rows: list[list[str]], cls: str = "") -> str:
    """A table; cells that are not numbers are left-aligned."""
    th = "".join(f"<th>{esc(h)}</th>" for h in head)

    def td(c: str) -> str:
        return f"<td>{c}</td>" if (not c or 'class="num' in c or 'class="val' in c) else f'<td class="l">{c}</td>'
    body = "".join("<tr>" + "".join(td(c) for c in r) + "</tr>" for r in rows)
    return f'<table class="{cls}"><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>'


def chart(key: str, title: str, note: str = "", height: int = 320) -> str:
    return (f'<figure class="fig"><figcaption>{esc(title)}<span class="hint">{esc(note)}</span></figcaption>'
            f'<div class="chart" data-chart="{key}" style="height:{height}px"></div></figure>')


