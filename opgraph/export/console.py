"""The one rich console every command prints through (docs/reliability.md, "Output").

- Names are text, never markup: the console has markup (and emoji codes) off, so an op
  named ``[/bold]`` or ``[param|x]`` prints as it is. Styled words are :class:`rich.text.Text`
  (:func:`styled`), never markup strings.
- Control characters never reach the terminal: every string the console renders goes
  through :func:`clean` (ESC, BEL, CR, newlines, C1 codes, bidi overrides become visible
  escapes such as ``\\x1b``), so a name is always one printable line. Build
  :class:`~rich.text.Text` objects from names with :func:`styled` or ``Text(clean(name))``.
- Piped output (stdout not a terminal) is never cut: the console is as wide as the
  content and tables drop their column limits, so every name is printed in full.
- Table cells that may be missing go through :func:`cell` (``None`` -> ``-``); tables that
  may have no row are printed with :func:`print_table`, which says why instead.
"""

from __future__ import annotations

import re
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

#: Why a GPU table has no row.
NO_GPU = "no GPU activity (no kernels, copies or memsets) in this trace"

#: Width of piped output: wide enough that nothing is wrapped or cut.
PIPE_WIDTH = 100_000

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


def _unlimit(t: Table) -> None:
    """Let ``t`` (and the tables nested in it) take the width of its content."""
    for col in t.columns:
        col.width = None
        col.max_width = None
        col.no_wrap = True
        col.overflow = "fold"
        for c in col.cells:
            if isinstance(c, Table):
                _unlimit(c)


class SafeConsole(Console):
    """A :class:`rich.console.Console` for names from traces (see the module docstring).

    ``full`` (default: stdout is not a terminal) prints tables and lines at the width of
    their content, never cut or wrapped. ``time_unit``: the word printed where "µs" would
    be, for graphs whose times are not µs (an execution trace's ordinal positions: "ticks")."""

    def __init__(self, *, full: bool | None = None, time_unit: str | None = None, **kwargs: Any) -> None:
        kwargs.setdefault("markup", False)
        kwargs.setdefault("emoji", False)
        super().__init__(**kwargs)
        self.full = (not self.is_terminal) if full is None else full
        self.time_unit = time_unit
        if self.full and kwargs.get("width") is None:
            self.width = PIPE_WIDTH

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
        if self.full and any(isinstance(o, Table) for o in objects):
            for o in objects:
                if isinstance(o, Table):
                    _unlimit(o)
                    if o.title is not None:  # its own line: a title is not wrapped to the table's width
                        super().print(o.title)
                        o.title = None
                super().print(o, **kwargs)
            return
        super().print(*objects, **kwargs)


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
