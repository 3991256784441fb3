"""Printing a command's JSON document on stdout (the one place every command's ``--json``
goes through), checked against its schema when ``$OPGRAPH_CHECK_OUTPUT`` is set
(:func:`opgraph.schemas_util.check_output`: the tests set it)."""

from __future__ import annotations

import sys
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
    data = orjson.dumps(doc, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY,
                        default=exact_default)
    buf = getattr(sys.stdout, "buffer", None)
    if buf is None:   # a text-only stdout (e.g. redirected to a StringIO)
        click.echo(data.decode())
        return
    # the bytes straight out: a path document can be 100+ MB (no decode and re-encode)
    sys.stdout.flush()
    buf.write(data)
    buf.write(b"\n")
    buf.flush()
