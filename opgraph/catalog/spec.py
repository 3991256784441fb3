"""What one catalog entry declares (docs/architecture.md, "The analysis catalog").

An :class:`Analysis` names an analysis once: its function, its options with their defaults,
its ``--json`` schema, its result tables (columns with units and formats), its doc page and
HTML section. The command line, the Python API, the table files, the HTML report and the
test lists are made from it. Pure data: the dotted names are resolved by the layers that
call them (:func:`resolve`), so importing the catalog imports no analysis.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

#: Where an option goes: ``analysis`` (an argument of the function, and of the API),
#: ``output`` (an argument of the result's ``to_dict`` and of the text renderer, e.g. rows
#: kept), ``view`` (the text renderer only: rows shown in the terminal).
OPTION_ROLES = ("analysis", "output", "view")
#: Option value kinds: ``int``/``float`` (bounded numbers), ``regex`` (a pattern or None),
#: ``str`` (free text or None), ``flag`` (a boolean).
OPTION_KINDS = ("int", "float", "regex", "str", "flag")
#: Column format codes: ``s`` text, ``n`` number (3 decimals in HTML, 1 in the terminal),
#: ``i`` integer, ``p`` percent, ``b`` bytes as a number, ``k`` kernel name (shortened,
#: full name as tooltip).
COLUMN_FORMATS = ("s", "n", "i", "p", "b", "k")


@dataclass(frozen=True)
class Option:
    """One option: the function's parameter ``name`` (the CLI spells it ``--name-with-dashes``),
    its default, help, kind and bounds, and where it goes (:data:`OPTION_ROLES`)."""

    name: str
    default: Any
    help: str
    kind: str = "float"
    minimum: float | None = None
    maximum: float | None = None
    role: str = "analysis"

    @property
    def flag(self) -> str:
        """The command-line spelling, ``--call-cutoff-us`` for ``call_cutoff_us``."""
        return "--" + self.name.replace("_", "-")


#: One column of a table: the key in the document's rows, the header, a format code
#: (:data:`COLUMN_FORMATS`). Units are in the key (``_us``, ``_bytes``, ``_pct``) and the header.
Column = tuple[str, str, str]


@dataclass(frozen=True)
class Table:
    """A table of the ``--json`` document: the ``/``-separated path of its row list (or
    object) in the document, a caption, the columns (``None``: every key of the first row)
    and the rows shown in the HTML report."""

    path: str
    caption: str
    columns: tuple[Column, ...] | None = None
    top: int = 15


@dataclass(frozen=True)
class Section:
    """The analysis's section of the HTML report: its title, the sentence shown (under "Not in
    this trace") when every table is empty, and, when the document is not the function's
    ``to_dict()`` with the catalog's defaults, a ``module:function`` making it from
    ``(G, shared)`` (opgraph/export/html/tables.py); ``order`` places it on the page;
    ``after_others``: computed after the other sections (it reads their documents)."""

    title: str
    empty: str
    compute: str | None = None
    order: int = 100
    after_others: bool = False


@dataclass(frozen=True)
class Analysis:
    """One analysis, declared once.

    ``name`` is the API function (``opgraph.<name>``), ``command`` the CLI command,
    ``function`` the ``module:function`` computing the result from a
    :class:`~opgraph.model.trace_graph.TraceGraph` (a ``TableResult``: ``tables()``,
    ``to_dict()``). ``schema`` is the file in ``schemas/`` its ``--json`` is checked
    against, ``doc`` its page. ``tables`` declares the document's tables (the terminal's
    table when ``render`` is None, the HTML section's tables). ``render`` is a
    ``module:function(result, console, **options)`` when the terminal wants more than the
    tables. ``command_impl`` / ``api_impl`` say the command / API function is written by
    hand (the catalog still lists it: help, tests, docs come from here); otherwise both are
    made from this entry. ``per_rank``: the command runs per rank on a job's rank traces.
    ``reads_args``: the analysis unpacks event args (False: columns only).
    ``example``: the API function's doctest (``>>> `` lines), for made functions.
    """

    name: str
    command: str
    function: str
    help: str
    schema: str
    doc: str
    options: tuple[Option, ...] = ()
    tables: tuple[Table, ...] = ()
    render: str | None = None
    command_impl: str | None = None
    api_impl: bool = False
    per_rank: bool = False
    reads_args: bool = True
    section: Section | None = None
    example: str = ""

    def options_for(self, role: str) -> tuple[Option, ...]:
        return tuple(o for o in self.options if o.role == role)

    def defaults(self, role: str = "analysis") -> dict[str, Any]:
        """``{name: default}`` of the options going to ``role``."""
        return {o.name: o.default for o in self.options_for(role)}


@dataclass(frozen=True)
class Tool:
    """A command that is not an analysis of one graph (it builds, converts, exports or
    compares): its name and ``module:command``."""

    command: str
    command_impl: str


def resolve(dotted: str) -> Any:
    """The object a ``module:attribute`` name points at (imported on call)."""
    module, _, attr = dotted.partition(":")
    if not attr:
        raise ValueError(f"{dotted!r}: expected 'module:attribute'")
    return getattr(importlib.import_module(module), attr)
