"""Printing a command's JSON document on stdout (the one place every command's ``--json``
goes through), checked against its schema when ``$OPGRAPH_CHECK_OUTPUT`` is set
(:func:`opgraph.schemas_util.check_output`: the tests set it)."""

from __future__ import annotations

from typing import Any

import click
import orjson

from opgraph.exact_json import exact_default


def emit_json(doc: Any, schema: str | None = None) -> None:
    """Print ``doc`` as JSON (checked against ``schemas/<schema>`` when given and output
    checks are on)."""
    if schema:
        from opgraph.schemas_util import check_output
        check_output(doc, schema)
    click.echo(orjson.dumps(doc, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS
                            | orjson.OPT_SERIALIZE_NUMPY, default=exact_default).decode())
