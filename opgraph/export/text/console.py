"""The one rich console every command prints through (docs/reliability.md, "Output").

- Names are text, never markup: the console has markup (and emoji codes) off, so an op
  named ``[/bold]`` or ``[param|x]`` prints as it is. Styled words are :class:`rich.text.Text`
  (:func:`styled`), never markup strings.
- Control characters never reach the terminal: every string the console renders goes
  through :func:`clean` (ESC, BEL, CR, newlines, C1 codes, bidi overrides become visible
  escapes such as ``\\x1b``), so a name is always one printable line. Build
  :class:`~rich.text.Text` objects from names with :func:`styled` or ``Text(clean(name))``.
- Every table is laid out by :func:`fit_table`: numbers are never cut (at a narrow width
  whole columns are left out, and the line under the table says which), long C++ kernel
  names print short (``opgraph --full-names`` prints them whole; JSON and CSV always hold
  the full names), names are elided with ``…`` on a terminal.
- Piped output (stdout not a terminal) is laid out as for ``$COLUMNS`` (default 100)
  columns, except that a table's widest name column prints every name whole (the table is
  then as wide as that name needs) and prose wraps at spaces only (a name stays whole).
- Table cells that may be missing go through :func:`cell` (``None`` -> ``-``); tables that
  may have no row are printed with :func:`print_table`, which says why instead.
"""

from __future__ import annotations

import re
from typing import Any

from rich.console import Console
from rich.cells import cell_len
from rich.table import Table
from rich.text import Text

#: Why a GPU table has no row.
NO_GPU = "no GPU activity (no kernels, copies or memsets) in this trace"

_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _visible(m: re.Match[str]) -> str:
    c = m.group()
    return _NAMED.get(c) or (f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}")


def clean(s: Any) -> str:
    """``s`` as one printable line: control characters shown as visible escapes."""
    s = s if isinstance(s, str) else str(s)
    return _CONTROL.sub(_visible, s)


def cell(v: Any, missing: str = "-") -> str:
    """A table cell: ``missing`` for None / NaN, else :func:`clean` text."""
    if v is None or (isinstance(v, float) and v != v):
        return missing
    return clean(v)


def styled(*parts: str | tuple[str, str]) -> Text:
    """A line of text from plain strings and ``(text, style)`` pairs, all :func:`clean`."""
    return Text.assemble(*((clean(p[0]), p[1]) if isinstance(p, tuple) else clean(p) for p in parts))


def _plain(c: Any) -> str | None:
    """A cell's text (None for a nested renderable such as a table)."""
    if isinstance(c, Text):
        return c.plain
    if isinstance(c, str):
        return clean(c)
    return None


#: Kernel names longer than this print short in tables (``--full-names``: whole).
SHORT_NAME_WIDTH = 60
_CPP_NAME = re.compile(r"^void |<")
#: Width of piped output's prose and the base of its tables when ``$COLUMNS`` is unset.
PIPE_COLUMNS = 100


def short_cell(s: str, width: int = SHORT_NAME_WIDTH) -> str:
    """A long C++ kernel name (``void ns::k<T, ...>(args)``) as its short label: no
    ``void``, parameter list or namespaces (``k<128, 2, CUDAFunctor_add<float>>``), cut to
    ``width`` with ``…``; other text unchanged."""
    if len(s) <= width or not _CPP_NAME.search(s):
        return s
    head = re.split(r"[<(]", (s[5:] if s.startswith("void ") else s).replace("(anonymous namespace)::", ""),
                    maxsplit=1)[0]
    if not head or " " in head.strip():  # a sentence, not a name
        return s
    from opgraph.names import kernel_label

    label = _NAMESPACE.sub("", kernel_label(s)) or s
    return label if len(label) <= width else label[: width - 1] + "…"


_NAMESPACE = re.compile(r"(?:\(anonymous namespace\)::|\b\w+::)+")


def _short_text(c: Text) -> Text:
    """A :class:`~rich.text.Text` cell with each line's kernel name short (its style kept
    when nothing was shortened)."""
    lines = c.plain.split("\n")
    short = [short_cell(x) for x in lines]
    return c if short == lines else Text("\n".join(short), style=c.style)


def _is_prose(col: Any) -> bool:
    """A column of sentences (wrapped, never elided): one given a ``ratio``, or whose cells
    hold more than eight words on average (names hold one or a few)."""
    if col.justify not in ("left", "default", "center"):
        return False
    if col.ratio is not None:
        return True
    texts = [(_plain(c) or "").split("\n")[0] for c in col._cells]
    return bool(texts) and sum(_words(t) for t in texts) > 8 * len(texts)


def _words(s: str) -> int:
    """Spaces outside ``<>``, ``()`` and ``[]`` (a C++ name's template arguments hold many)."""
    depth = n = 0
    for ch in s:
        if ch in "<([":
            depth += 1
        elif ch in ">)]" and depth:
            depth -= 1
        elif ch == " " and not depth:
            n += 1
    return n + 1


#: The widest a number column's header word makes the column (a longer word folds).
HEADER_WORD = 16


def fit_table(t: Table, width: int, *, cut: bool = True, full_names: bool = False,
              unit: str | None = None) -> list[str]:
    """Lay ``t`` out for ``width`` columns so that no value is ever cut; returns the headers
    of the columns left out.

    Right-justified columns (numbers) get the width of their widest cell and are never cut
    or wrapped; text columns share what is left: prose columns (:func:`_is_prose`) wrap at
    word boundaries, name columns are elided with ``…`` when ``cut`` (a terminal) and
    printed whole when not (piped output: the table is then as wide as it needs). When the
    numbers alone do not fit (a narrow terminal, ``cut``), whole columns are left out from
    the right, never the first. Long C++ kernel names print short (:func:`short_cell`)
    unless ``full_names``. ``unit`` replaces "µs" as the console does (so widths match)."""
    cols = list(t.columns)
    if not cols or any(not isinstance(c, (str, Text)) for col in cols for c in col._cells):
        return []
    if not full_names:
        for col in cols:
            if not _is_prose(col):
                col._cells = [short_cell(c) if isinstance(c, str) else _short_text(c) for c in col._cells]

    def lines(c: Any) -> list[str]:
        s = _plain(c) or ""
        if unit:
            s = s.replace("µs", unit)
        return s.split("\n") if isinstance(c, Text) else [s]

    def widest(col: Any) -> int:
        return max([cell_len(x) for c in col._cells for x in lines(c)] or [0])

    def word(col: Any) -> int:
        h = col.header.plain if isinstance(col.header, Text) else clean(col.header)
        if unit:
            h = h.replace("µs", unit)
        return max([cell_len(w) for w in h.split()] or [0])

    fixed = [col.justify == "right" for col in cols]
    prose = [_is_prose(col) or (col.no_wrap is False and col.overflow == "fold") for col in cols]
    # a number column is as wide as its widest value; its header wraps at words, and a header
    # word far wider than the values (a CUPTI metric name) folds at HEADER_WORD columns
    nat = [max(widest(col), min(word(col), max(widest(col), HEADER_WORD)) if fx else word(col))
           for col, fx in zip(cols, fixed)]
    low = [n if fx else min(n, max(word(col), 12 if p else 8)) for col, n, fx, p in zip(cols, nat, fixed, prose)]
    pad = (t.padding[1] + t.padding[3]) if t.padding else 0
    edge = 2 if (t.box is not None and t.show_edge) else 0
    dropped: list[str] = []

    def avail() -> int:
        sep = (len(t.columns) - 1) if t.box is not None else 0
        return width - edge - sep - pad * len(t.columns)

    keep = list(range(len(cols)))
    if cut and pad == 2 and sum(low) > avail():  # compact: one space between columns instead of two
        t.padding = (0, 0, 0, 1)
        pad = 1
    while cut and sum(low[k] for k in keep) > avail() and len(keep) > 1:
        k = max((k for k in keep[1:] if fixed[k]), default=keep[-1])
        h = cols[k].header
        dropped.append(h.plain if isinstance(h, Text) else str(h))
        keep.remove(k)
        t.columns.remove(cols[k])
    room = avail() - sum(nat[k] for k in keep if fixed[k])
    flex = [k for k in keep if not fixed[k]]
    give = {k: low[k] for k in flex}
    left = room - sum(give.values())
    # share what is left, up to each natural width: names first, then prose
    weight = {k: (cols[k].ratio or 1) for k in flex}
    while left > 0 and any(give[k] < nat[k] for k in flex):
        grow = [k for k in flex if give[k] < nat[k] and not prose[k]] or [k for k in flex if give[k] < nat[k]]
        total = sum(weight[k] for k in grow)
        for k in grow:
            d = min(max(1, left * weight[k] // total), nat[k] - give[k], left)
            give[k] += d
            left -= d
            if left <= 0:
                break
    names = [k for k in flex if not prose[k]]
    whole = max(names, key=lambda k: nat[k]) if names and not cut else None  # piped: the widest name, whole
    for k in keep:
        col = cols[k]
        col.min_width = None
        col.max_width = None
        col.ratio = None
        if fixed[k]:
            col.width, col.no_wrap, col.overflow = nat[k], False, "fold"  # headers wrap at words
        elif prose[k]:
            col.width, col.no_wrap, col.overflow = give[k], False, "fold"
        else:
            col.width, col.no_wrap, col.overflow = (nat[k] if k == whole else give[k]), True, "ellipsis"
    t.expand = False
    return dropped


def table_width(t: Table) -> int:
    """The width ``t`` takes once :func:`fit_table` set its columns' widths."""
    pad = (t.padding[1] + t.padding[3]) if t.padding else 0
    edge = 2 if (t.box is not None and t.show_edge) else 0
    sep = (len(t.columns) - 1) if t.box is not None else 0
    return edge + sep + sum((c.width or 0) + pad for c in t.columns)


class SafeConsole(Console):
    """A :class:`rich.console.Console` for names from traces (see the module docstring).

    Every table is laid out by :func:`fit_table` before it prints: numbers are never cut,
    long C++ kernel names print short (``full_names``: whole), and at a narrow width
    columns are left out (said under the table) rather than values cut. ``full``
    (default: stdout is not a terminal) is piped output: prose wraps at ``$COLUMNS`` (or
    :data:`PIPE_COLUMNS`), tables are laid out as for that width but never elide a name
    (the table is then as wide as its longest name needs). ``time_unit``: the word printed
    where "µs" would be, for graphs whose times are not µs (an execution trace's ordinal
    positions: "ticks")."""

    def __init__(self, *, full: bool | None = None, time_unit: str | None = None, full_names: bool = False,
                 **kwargs: Any) -> None:
        kwargs.setdefault("markup", False)
        kwargs.setdefault("emoji", False)
        super().__init__(**kwargs)
        self.full = (not self.is_terminal) if full is None else full
        self.time_unit = time_unit
        self.full_names = full_names
        if self.full and kwargs.get("width") is None:
            self.width = _pipe_columns()

    def render_str(self, text: str, **kwargs: Any) -> Text:  # every printed string, cell and title
        text = clean(text)
        if self.time_unit:
            text = text.replace("µs", self.time_unit)
        return super().render_str(text, **kwargs)

    def print(self, *objects: Any, **kwargs: Any) -> None:
        if self.time_unit:  # styled lines are Text, not strings: reword them too (their inner styles go)
            objects = tuple(Text(o.plain.replace("µs", self.time_unit), style=o.style) if isinstance(o, Text)
                            and "µs" in o.plain else o for o in objects)
            for o in objects:
                if isinstance(o, Table) and isinstance(o.title, Text) and "µs" in o.title.plain:
                    o.title = o.title.plain.replace("µs", self.time_unit)
        if self.full and objects and all(isinstance(o, (str, Text)) for o in objects):
            # piped prose wraps at spaces; a word longer than the line (a name) stays whole
            kwargs.setdefault("crop", False)
            for line in _wrap(" ".join(o.plain if isinstance(o, Text) else o for o in objects), self.width):
                super().print(line, **kwargs)
            return
        if not any(isinstance(o, Table) for o in objects):
            super().print(*objects, **kwargs)
            return
        for o in objects:
            if not isinstance(o, Table):
                super().print(o, **kwargs)
                continue
            dropped = fit_table(o, self.width, cut=not self.full, full_names=self.full_names, unit=self.time_unit)
            if self.full and o.title is not None:  # its own line, wrapped at the prose width
                super().print(o.title, **kwargs)
                o.title = None
            base = self.width
            if self.full:  # as wide as the table needs (print(width=) cannot exceed the console's)
                self.width = max(table_width(o), base)
            try:
                super().print(o, **kwargs)
            finally:
                self.width = base
            if dropped:
                n = len(dropped)
                super().print(Text(f"({n} column{'s' if n > 1 else ''} not shown at {self.width} columns: "
                                   f"{', '.join(clean(d) for d in dropped)}; a wider terminal, --csv or --json "
                                   "show them)", style="dim"))


def _wrap(text: str, width: int) -> list[str]:
    """Piped prose: lines wrapped at spaces to ``width``, never inside a word (a name stays
    whole)."""
    import textwrap

    out: list[str] = []
    for ln in clean(text).split("\\n"):  # clean() shows a newline as the two characters \n
        out += textwrap.wrap(ln, width, break_long_words=False, break_on_hyphens=False) or [ln]
    return out


def _pipe_columns() -> int:
    """The width piped prose wraps at: ``$COLUMNS`` when set, else :data:`PIPE_COLUMNS`."""
    import os

    try:
        return max(40, int(os.environ.get("COLUMNS", "")))
    except ValueError:
        return PIPE_COLUMNS


def make_console(**kwargs: Any) -> SafeConsole:
    """The console commands print through (stdout; ``stderr=True`` for stderr)."""
    return SafeConsole(**kwargs)


def print_table(console: Console, t: Table, empty: str) -> None:
    """Print ``t``, or, when it has no row, its title and ``empty`` (why it is empty)."""
    if t.row_count:
        console.print(t)
    else:
        title = t.title if isinstance(t.title, str) else ""
        console.print(f"{title}: {empty}" if title else empty)
