"""``opgraph report IN --html report.html [--batch-size N]``: the one-file HTML report.

Adds ``--html PATH`` and ``--batch-size N`` to the roofline ``report`` command
(:mod:`opgraph.commands.roofline`) without editing it: the options are appended to the
command's parameters and its callback is wrapped. With ``--html`` the page is written
(see :mod:`opgraph.export.html` and docs/pictures.md); with ``--json`` or ``--csv`` as well,
the roofline table is also printed as before.
"""

from __future__ import annotations

import functools
from typing import Any

import click

from opgraph.commands.roofline import report
from opgraph.errors import OpgraphInputError

_original = report.callback


def _write_html(input: str, path: str, batch_size: int | None, device: str | None, dtype: str | None) -> None:
    from opgraph.cli import load_input
    from opgraph.export.html import write_report
    from opgraph.outfiles import check_output_path

    if not path.endswith((".html", ".htm")):
        raise OpgraphInputError(path, "--html writes an .html file")
    check_output_path(path, (input,))  # before any work: not the input, not a folder or FIFO
    G = load_input(input)
    try:
        res = write_report(G, path, batch_size=batch_size, device=device, dtype=dtype, inputs=(input,))
    except OSError as e:
        raise OpgraphInputError(path, f"cannot write: {e.strerror or e}") from None
    left = f"; left out: {'; '.join(res['notes'])}" if res["notes"] else ""
    click.echo(f"{path}: {res['bytes'] / 1024:,.0f} kB, {len(res['sections'])} sections "
               f"({', '.join(res['sections'])}){left} — open it in a browser (works offline)", err=True)


@functools.wraps(_original)
def _report_callback(*args: Any, html: str | None = None, batch_size: int | None = None, **kwargs: Any) -> Any:
    if html is None:
        if batch_size is not None:
            raise click.UsageError("--batch-size goes with --html (it sets the report's QPS)")
        return _original(*args, **kwargs)
    _write_html(kwargs["input"], html, batch_size, kwargs.get("device"), kwargs.get("dtype"))
    if kwargs.get("as_json") or kwargs.get("as_csv"):
        return _original(*args, **kwargs)
    return None


if not any(p.name == "html" for p in report.params):
    report.params.append(click.Option(
        ["--html", "html"], default=None, metavar="PATH", type=click.Path(dir_okay=False),
        help="Write the one-file interactive HTML report (summary, critical path, idle, breakdowns, "
             "roofline, overheads, trace health; docs/pictures.md). Opens offline."))
    report.params.append(click.Option(
        ["--batch-size", "batch_size"], default=None, type=click.IntRange(min=1),
        help="With --html: samples per step, for the report's QPS card."))
    report.callback = _report_callback
