"""Printing a command's JSON document on stdout, validated against its schema first (the
one place every command's ``--json`` goes through; :mod:`opgraph.cli` hands it on)."""

from __future__ import annotations

from typing import Any

import click
import orjson


def emit_json(doc: Any, schema: str | None = None) -> None:
    """Print ``doc`` as JSON (validated against ``schemas/<schema>`` when given)."""
    if schema:
        from opgraph.schemas_util import validate
        validate(doc, schema)
    click.echo(orjson.dumps(doc, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS
                            | orjson.OPT_SERIALIZE_NUMPY).decode())
