"""Results that show themselves: every analysis result offers ``tables()`` (its tables as
DataFrames, times in µs), ``to_frame()`` (the main one) and renders those tables in
Jupyter (``_repr_html_``). Pure data: nothing here prints."""

from __future__ import annotations

import html
import math
from typing import Any, ClassVar

import numpy as np
import pandas as pd


class TableResult:
    """Mixin for result classes: subclasses define :meth:`tables` and name their main
    table in :attr:`main_table`; :attr:`display_tables` lists those shown in a notebook
    (default: all), each cut to :attr:`display_rows` rows."""

    main_table: ClassVar[str] = ""
    display_tables: ClassVar[tuple[str, ...]] = ()
    display_rows: ClassVar[int] = 20

    def tables(self) -> dict[str, pd.DataFrame]:
        """Every table of the result by name (µs for times)."""
        raise NotImplementedError

    def to_frame(self, table: str | None = None) -> pd.DataFrame:
        """The main table (or the one named ``table``; see :meth:`tables`)."""
        t = self.tables()
        name = table or self.main_table or next(iter(t))
        if name not in t:
            raise KeyError(f"no table {name!r}; tables: {', '.join(t)}")
        return t[name]

    def __repr__(self) -> str:
        t = self.tables()
        shapes = ", ".join(f"{n} {df.shape[0]}×{df.shape[1]}" for n, df in t.items())
        return f"<{type(self).__name__}: tables {shapes}; to_frame(name) for one, to_dict() for all>"

    def _repr_html_(self) -> str:
        t = self.tables()
        names = [n for n in (self.display_tables or tuple(t)) if n in t]
        parts = [f"<div><b>{html.escape(type(self).__name__)}</b>"]
        for n in names:
            df = t[n]
            more = f" (first {self.display_rows} of {len(df)} rows)" if len(df) > self.display_rows else ""
            parts.append(f"<p><i>{html.escape(n)}</i>{more}</p>")
            parts.append(df.head(self.display_rows).to_html(index=False, escape=True, max_cols=30))
        parts.append("</div>")
        return "".join(parts)


def json_value(v: Any) -> Any:
    """A DataFrame cell as JSON: numpy scalars as Python numbers, NaN / NA / ±inf as None."""
    if v is None or v is pd.NA:
        return None
    if isinstance(v, (np.integer, np.bool_)):
        return v.item()
    if isinstance(v, (float, np.floating)):
        f = float(v)
        return None if math.isnan(f) or math.isinf(f) else f
    return v


def json_records(df: pd.DataFrame, n: int | None = None) -> list[dict[str, Any]]:
    """The rows of ``df`` (the first ``n``) as JSON-ready dicts (:func:`json_value`)."""
    return [{k: json_value(v) for k, v in r.items()} for r in (df.head(n) if n else df).to_dict("records")]
