"""Writing synthesized traces: Kineto JSON text with digit-exact decimal timestamps.

:func:`trace_to_json` writes a scenario's document one event per line, keeping the
:class:`~decimal.Decimal` µs of ``ns_float`` as their exact digits (``json.dumps`` would
round them through float64); :func:`write_scenario` writes ``<name>.json`` and
``<name>.answers.json`` (the answers' times are integer ns).
"""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

from opgraph.testing.synth_model import Scenario


def _dump_value(v: Any) -> str:
    """JSON text for ``v``; :class:`Decimal` is written as its exact decimal digits."""
    if isinstance(v, Decimal):
        return str(v)
    if isinstance(v, dict):
        return "{" + ", ".join(f"{json.dumps(str(k))}: {_dump_value(x)}" for k, x in v.items()) + "}"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_dump_value(x) for x in v) + "]"
    return json.dumps(v)


def trace_to_json(trace: dict[str, Any] | list[dict[str, Any]]) -> str:
    """Kineto JSON text, one event per line, keeping Decimal timestamps digit-exact."""
    if isinstance(trace, list):
        return "[\n" + ",\n".join("  " + _dump_value(e) for e in trace) + "\n]\n"
    parts = []
    for k, v in trace.items():
        if k == "traceEvents":
            body = ",\n".join("    " + _dump_value(e) for e in v)
            parts.append(f'  "traceEvents": [\n{body}\n  ]')
        else:
            parts.append(f"  {json.dumps(k)}: {_dump_value(v)}")
    return "{\n" + ",\n".join(parts) + "\n}\n"


def write_scenario(sc: Scenario, directory: str | Path) -> Path:
    """Write ``<name>.json`` (the trace) and ``<name>.answers.json``; return the trace path."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    path = d / f"{sc.name}.json"
    path.write_text(trace_to_json(sc.trace), encoding="utf-8")
    (d / f"{sc.name}.answers.json").write_text(
        json.dumps(sc.answers, indent=2) + "\n", encoding="utf-8")
    return path
