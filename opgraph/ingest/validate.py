"""Schema validation of input records with one compiled validator per schema (readers
validate many small records; building a validator per record would dominate)."""

from __future__ import annotations

from functools import lru_cache
from typing import Any


@lru_cache(maxsize=None)
def _validator(schema_name: str) -> Any:
    import jsonschema

    from opgraph.schemas_util import load_schema
    return jsonschema.Draft202012Validator(load_schema(schema_name))


def first_error(doc: Any, schema_name: str) -> str | None:
    """None when ``doc`` validates against ``schemas/<schema_name>``, else a one-line
    description of the most relevant error (``path: message``)."""
    import jsonschema

    v = _validator(schema_name)
    if v.is_valid(doc):
        return None
    err = jsonschema.exceptions.best_match(v.iter_errors(doc))
    if err is None:
        return None
    where = "/".join(str(p) for p in err.absolute_path)
    return f"{where}: {err.message[:160]}" if where else err.message[:160]
