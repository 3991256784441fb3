"""``--json`` for the commands that write files (``build``, ``export``, ``augment``,
``kernel-models``): what was written, as one schema'd document on stdout
(``schemas/outputs.schema.json``), while the usual one-line summaries stay on stderr.
No import of :mod:`opgraph.cli` (like :mod:`opgraph.table_options`)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable

import click

JSON_HELP = "Print what was written as JSON on stdout (schemas/outputs.schema.json)."


def json_flag(f: Callable[..., Any]) -> Callable[..., Any]:
    """The ``--json`` flag (``as_json``)."""
    return click.option("--json", "as_json", is_flag=True, help=JSON_HELP)(f)


def size_of(path: str | Path) -> int:
    """Bytes of a file, or of every file under a folder (0 when absent)."""
    p = Path(path)
    if p.is_dir():
        return sum(q.stat().st_size for q in p.rglob("*") if q.is_file())
    return p.stat().st_size if p.exists() else 0


def output_entry(path: str | Path, fmt: str, message: str | None) -> dict[str, Any]:
    """One ``outputs`` entry."""
    return {"path": os.fspath(path), "format": fmt, "bytes": size_of(path), "message": message}


def outputs_doc(command: str, inputs: tuple[str, ...] | list[str], outputs: list[dict[str, Any]],
                summary: dict[str, Any] | None = None) -> dict[str, Any]:
    """The ``--json`` document of a writing command."""
    return {"command": command, "input": [str(i) for i in inputs], "outputs": outputs, "summary": dict(summary or {})}
