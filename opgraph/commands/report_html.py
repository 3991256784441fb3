"""``opgraph report IN --html report.html [--batch-size N]``: the one-file HTML report
(the option is declared on ``report`` in :mod:`opgraph.commands.report`; the page is
written by :mod:`opgraph.export.html.report`, docs/pictures.md)."""

from __future__ import annotations

import click

from opgraph.commands.base import load_input
from opgraph.errors import OpgraphInputError


def write_html(input: str, path: str, batch_size: int | None, device: str | None, dtype: str | None,
               rank: int | None = None) -> None:
    """Write the HTML report of ``input`` (rank ``rank`` of a job graph) to ``path`` and
    say on stderr what it holds and what was left out."""
    from opgraph.export.html.report import write_report
    from opgraph.outfiles import check_output_path

    if not path.endswith((".html", ".htm")):
        raise OpgraphInputError(path, "--html writes an .html file")
    check_output_path(path, (input,))  # before any work: not the input, not a folder or FIFO
    G = load_input(input, rank=rank)   # columns; networkx only for the picture
    try:
        res = write_report(G, path, batch_size=batch_size, device=device, dtype=dtype, inputs=(input,))
    except OSError as e:
        raise OpgraphInputError(path, f"cannot write: {e.strerror or e}") from None
    left = f"; left out: {'; '.join(res['notes'])}" if res["notes"] else ""
    click.echo(f"{path}: {res['bytes'] / 1024:,.0f} kB, {len(res['sections'])} sections "
               f"({', '.join(res['sections'])}){left} — open it in a browser (works offline)", err=True)
