"""A ``--json`` schema made from a catalog entry's declared tables (docs/architecture.md,
"The analysis catalog"): an object holding each table as an array of rows with exactly the
declared columns, typed by their format codes. Written to ``schemas/`` by
``python -m opgraph.catalog.schema NAME...``; tests check the files stay equal to it."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from opgraph.catalog.spec import Analysis

#: The ``$comment`` marking a schema file made here.
GENERATED = "Made from the analysis catalog (opgraph/catalog/entries.py) by python -m opgraph.catalog.schema."

#: JSON types per column format code (numbers may be null: a share of nothing, a quantile of
#: no values).
_TYPES: dict[str, Any] = {"i": {"type": "integer"}, "b": {"type": "integer"},
                          "n": {"type": ["number", "null"]}, "p": {"type": ["number", "null"]},
                          "s": {"type": ["string", "null"]}, "k": {"type": ["string", "null"]}}


def table_schema(entry: Analysis) -> dict[str, Any]:
    """The schema of ``entry``'s document: one required array per declared table (every
    table's path is a top-level key, its columns declared)."""
    props: dict[str, Any] = {}
    for t in entry.tables:
        if "/" in t.path or t.columns is None:
            raise ValueError(f"{entry.command}: table {t.path!r} needs a top-level path and declared columns "
                             "for a schema made from the catalog")
        row = {"type": "object", "additionalProperties": False, "required": [c for c, _h, _f in t.columns],
               "properties": {c: dict(_TYPES[f], description=h) for c, h, f in t.columns}}
        props[t.path] = {"type": "array", "description": t.caption, "items": row}
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$comment": GENERATED,
            "$id": f"https://opgraph.dev/schemas/{entry.schema}", "title": f"opgraph {entry.command} --json", "description": entry.help, "type": "object",
            "additionalProperties": False, "required": list(props), "properties": props}


def schema_text(entry: Analysis) -> str:
    """The file's text (2-space JSON, one trailing newline)."""
    return json.dumps(table_schema(entry), indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str]) -> int:
    """Write ``schemas/<entry.schema>`` for each API or command name in ``argv``."""
    from opgraph.catalog.entries import ANALYSES

    root = Path(__file__).resolve().parents[2] / "schemas"
    for name in argv:
        entry = next((a for a in ANALYSES if name in (a.name, a.command)), None)
        if entry is None:
            print(f"no catalog entry {name!r}", file=sys.stderr)
            return 2
        (root / entry.schema).write_text(schema_text(entry), encoding="utf-8")
        print(root / entry.schema)
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main(sys.argv[1:]))
