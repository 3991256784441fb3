"""The ``opgraph report --json`` document of a roofline result (:func:`report_doc`,
schemas/report.schema.json): source, devices, :func:`summarize` coverage, the ops without
a model and the :func:`group_table` rows. Times in µs, rates in TFLOP/s and GB/s, floats
rounded to 6 decimals, unknown values null."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from opgraph.analysis.roofline.result import RooflineResult
from opgraph.analysis.roofline.summary import summarize
from opgraph.analysis.roofline.tables import group_table, no_model_table


def rounded(x: Any, nd: int = 4) -> float | None:
    """``x`` as a float rounded to ``nd`` decimals; None when it is not a finite number."""
    if x is None:
        return None
    try:
        xf = float(x)
    except (TypeError, ValueError):
        return None
    if not np.isfinite(xf):
        return None
    return round(xf, nd)


def json_cell(v: Any) -> Any:
    """A table cell as JSON: numpy scalars as Python values, floats rounded to 6 decimals,
    missing and non-finite values as None."""
    if v is None or v is pd.NA:
        return None
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        return rounded(v, 6)
    if isinstance(v, (np.bool_,)):
        return bool(v)
    return v


def report_doc(res: RooflineResult, by: str = "kernel", top: int | None = None) -> dict[str, Any]:
    """The ``opgraph report --json`` document (schemas/report.schema.json)."""
    tab = group_table(res, by)
    if top is not None:
        tab = tab.head(top)
    rows = [{k: json_cell(v) for k, v in r.items()} for r in tab.to_dict("records")]
    nm = no_model_table(res)
    return {
        "schema_version": 1,
        "source": dict(res.source),
        "by": by,
        "default_dtype": res.default_dtype,
        "device_override": res.device_override,
        "devices": [d.to_dict() for d in res.devices.values()],
        "summary": {k: json_cell(v) for k, v in summarize(res).items()},
        "no_model": [{k: json_cell(v) for k, v in r.items()} for r in nm.to_dict("records")],
        "rows": rows,
    }
