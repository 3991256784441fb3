"""Loading the JSON Schemas in ``schemas/`` and validating documents against them."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

import orjson

SCHEMA_DIR = Path(__file__).resolve().parent / "schemas"


@lru_cache(maxsize=None)
def load_schema(name: str) -> dict[str, Any]:
    """The schema ``schemas/<name>`` as a dict."""
    return orjson.loads((SCHEMA_DIR / name).read_bytes())


def validation_error(doc: Any, schema_name: str) -> str | None:
    """None when ``doc`` validates, else a one-line description of the first error."""
    import jsonschema

    schema = load_schema(schema_name)
    validator = jsonschema.Draft202012Validator(schema)
    err = jsonschema.exceptions.best_match(validator.iter_errors(doc))
    if err is None:
        return None
    where = "/".join(str(p) for p in err.absolute_path) or "<root>"
    return f"{where}: {err.message[:200]}"


def validate(doc: Any, schema_name: str) -> None:
    """Raise ``ValueError`` naming the first schema violation."""
    err = validation_error(doc, schema_name)
    if err:
        raise ValueError(f"{schema_name}: {err}")
