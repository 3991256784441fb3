"""How numbers are printed in the terminal tables: one home for the formatters every
``text_*`` renderer uses (the HTML report has its own, :mod:`opgraph.export.html.format`).

Missing values (``None``, NaN) print as ``missing`` (``-`` unless a table says otherwise).
"""

from __future__ import annotations

import math
from typing import Any


def is_missing(v: Any) -> bool:
    """``None``, NaN or ``...`` (a value a table has no number for)."""
    return v is None or v is Ellipsis or (isinstance(v, float) and math.isnan(v)) or (
        not isinstance(v, (int, float, str)) and v != v)


def num(v: Any, fmt: str = ",.2f", missing: str = "-") -> str:
    """``format(v, fmt)``, or ``missing`` for a missing value."""
    return missing if is_missing(v) else format(v, fmt)


def decimal(v: Any, nd: int = 1) -> str:
    """An int with thousands separators, a float with ``nd`` decimals; ``""`` when missing."""
    if v is None:
        return ""
    if isinstance(v, int):
        return f"{v:,}"
    return f"{v:,.{nd}f}"


def delta(v: Any, nd: int = 1) -> str:
    """A difference (B − A) with its sign: ``+1.5``, ``-2.0``, ``0``; ``""`` when missing."""
    if v is None:
        return ""
    if v == 0:
        return "0"
    s = decimal(v, nd)
    return ("+" + s) if v > 0 else s


def si(v: Any, unit: str = "") -> str:
    """FLOPs (``unit="flop"``) and bytes (``"B"``) with an SI prefix (``1.50 TB``); other
    values with two decimals, ints with separators; ``""`` when missing."""
    if v is None:
        return ""
    if isinstance(v, int) and not unit:
        return f"{v:,}"
    x = float(v)
    for f, s in ((1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= f and unit in ("flop", "B"):
            return f"{x / f:.2f} {s}{'' if unit == 'flop' else 'B'}"
    if unit in ("flop", "B"):
        return f"{x:.0f}" + ("" if unit == "flop" else " B")
    return f"{x:,.2f}"


def us(v: float | None) -> str:
    """A time in µs without needless decimals: whole µs from 100 up (``12,345``), one
    decimal from 10 (``12.3``), two below (``0.85``; trailing zeros dropped); ``""`` when
    missing. The full values are in the JSON and CSV outputs."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    a = abs(v)
    if a >= 1e15:
        return str(v)
    if a >= 100 or v == int(v):
        return f"{v:,.0f}"
    return f"{v:,.1f}" if a >= 10 else f"{v:,.2f}".rstrip("0").rstrip(".")


def ms(v_us: float | None, unit: str | None = None) -> str:
    """A time given in µs for a sentence: ``12.3 ms`` from 10 ms up, else ``µs`` (``us``
    rules); ``unit`` (e.g. ``"ticks"``, an execution trace's ordinal time) is printed as it
    is, never converted."""
    if v_us is None:
        return ""
    if unit:
        return f"{us(v_us)} {unit}"
    return f"{v_us / 1e3:,.1f} ms" if abs(v_us) >= 1e4 else f"{us(v_us)} µs"


def pct(v: float | None) -> str:
    """A percentage with two decimals; ``""`` when missing."""
    return "" if v is None else f"{v:.2f}"


def share(part: float, whole: float) -> str:
    """``part`` as a whole-number percentage of ``whole`` (``-`` when ``whole`` is 0)."""
    return f"{100.0 * part / whole:.0f}" if whole else "-"


def significant(v: Any) -> str:
    """A counter value: thousands separators for large values, 4 significant digits else."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    x = float(v)
    if abs(x) >= 1e4 or (x.is_integer() and abs(x) >= 1):
        return f"{x:,.0f}"
    return f"{x:.4g}"
