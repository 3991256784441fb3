"""Loading the JSON Schemas in ``schemas/`` and validating documents against them.

Input we read is always validated. Our own output is checked against its schema by the
tests, not at run time (a large ``critical-path --json`` spent most of its time in that
self-check): :func:`check_output` validates only when ``$OPGRAPH_CHECK_OUTPUT`` is set
(the test suite sets it for every command it runs)."""

from __future__ import annotations

import os
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


#: Set (to anything but ``""`` or ``0``) to validate every document opgraph writes against
#: its schema before writing it (the tests set it; see the module docstring).
OUTPUT_CHECK_ENV = "OPGRAPH_CHECK_OUTPUT"


def output_checks_enabled() -> bool:
    """Whether ``$OPGRAPH_CHECK_OUTPUT`` asks for our own output to be validated."""
    return os.environ.get(OUTPUT_CHECK_ENV, "") not in ("", "0")


def check_output(doc: Any, schema_name: str) -> None:
    """:func:`validate` our own output ``doc``, when :func:`output_checks_enabled`."""
    if output_checks_enabled():
        validate(doc, schema_name)
