"""The ``opgraph`` command line: the group, its error boundary, and the list of commands.

The commands are the analysis catalog's (opgraph/catalog/entries.py; docs/architecture.md,
"The analysis catalog"): an entry's hand-written command from :mod:`opgraph.commands`, or the
one :mod:`opgraph.commands.catalog_command` makes from the entry; then the tools. Each is
imported when it runs (:func:`load_command`); :func:`commands` loads them all. Every command that takes a graph accepts a saved graph
(``.gpickle``, ``.json.gz``) or a raw trace. Bad input prints one line and exits with
code 2; never a traceback.
"""

from __future__ import annotations

import errno
import os
import sys
from typing import Any

import click

from opgraph.errors import OpgraphInputError
from opgraph.version import __version__


def _fail(msg: str, code: int) -> None:
    from opgraph.export.text.console import clean

    click.echo(f"opgraph: error: {clean(msg)}", err=True)
    sys.exit(code)


#: errno values of a failed write that are the environment's doing (full or read-only disk,
#: quota, I/O error, file too large), reported as one line and exit 2.
_WRITE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EIO, errno.EFBIG})


class _Group(click.Group):
    """The catalog's commands, each imported when it is run (``opgraph idle`` imports the
    idle command's modules, not the other 30); every input error as one line + exit 2, and
    anything unexpected as one line + exit 1 (set OPGRAPH_DEBUG=1 for the traceback)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        from opgraph.catalog.entries import COMMAND_ORDER

        return sorted(COMMAND_ORDER)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        cmd = self.commands.get(cmd_name)
        if cmd is None:
            cmd = load_command(cmd_name)
            if cmd is not None:
                self.add_command(cmd)
        return cmd

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except OpgraphInputError as e:
            _fail(str(e), 2)
        except (click.exceptions.Exit, click.exceptions.Abort, click.ClickException, SystemExit):
            raise
        except MemoryError:
            _fail("out of memory", 1)
        except KeyboardInterrupt:
            _fail("interrupted", 130)
        except BrokenPipeError:
            sys.exit(0)
        except OSError as e:
            if e.errno in _WRITE_ERRNOS:  # the disk or stdout is full, read-only or failing: not a bug
                _fail(f"cannot write the output: {e.strerror or e}"
                      + (f" ({e.filename})" if getattr(e, "filename", None) else " (standard output or a file)"), 2)
            if os.environ.get("OPGRAPH_DEBUG"):
                raise
            _fail(f"internal error ({type(e).__name__}: {e}); rerun with OPGRAPH_DEBUG=1 for details", 1)
        except Exception as e:  # noqa: BLE001 - the CLI boundary: no traceback reaches users
            if os.environ.get("OPGRAPH_DEBUG"):
                raise
            _fail(f"internal error ({type(e).__name__}: {e}); rerun with OPGRAPH_DEBUG=1 for details", 1)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="opgraph")
@click.option("--full-names", "full_names", is_flag=True, envvar="OPGRAPH_FULL_NAMES",
              help="Print kernel names whole in tables (by default long C++ names print short; JSON, CSV and "
                   "the other table files always hold the full names).")
@click.pass_context
def main(ctx: click.Context, full_names: bool) -> None:
    """Profiler traces as a typed NetworkX DAG: build, inspect, analyse, export."""
    from opgraph.commands.base import FULL_NAMES_KEY

    ctx.meta[FULL_NAMES_KEY] = full_names


def load_command(name: str) -> click.Command | None:
    """The command ``name`` of the catalog (opgraph/catalog/entries.py), imported on first
    use: an analysis's own command when it has one, else the one made from its entry; a
    tool's command. None for a name that is no command."""
    from opgraph.catalog.entries import TOOLS, by_command
    from opgraph.catalog.spec import resolve

    try:
        a = by_command(name)
    except KeyError:
        return next((resolve(t.command_impl) for t in TOOLS if t.command == name), None)
    if a.command_impl:
        return resolve(a.command_impl)
    from opgraph.commands.catalog_command import analysis_command

    return analysis_command(a)


def commands() -> tuple[click.Command, ...]:
    """Every command, in the catalog's order of reading (build and inspect, analyse,
    export), each loaded (and registered on :data:`main`)."""
    from opgraph.catalog.entries import COMMAND_ORDER

    return tuple(main.get_command(click.Context(main), c) for c in COMMAND_ORDER)  # type: ignore[misc]


#: Commands that take an input but no ``--rank``: they read a whole multi-rank job graph
#: (``build``, ``info``, ``critical-path``, ``stragglers``) or one raw trace (``augment``).
NO_RANK_COMMANDS = frozenset({"build", "info", "critical-path", "stragglers", "augment"})


def run() -> None:
    """The ``opgraph`` program: :data:`main` in a process that loads one graph and exits, so
    what it loads is frozen out of the cyclic collector's passes (``opgraph.gc_pause``)."""
    from opgraph.gc_pause import freeze_after_loads

    freeze_after_loads(True)
    main(prog_name="opgraph")


if __name__ == "__main__":  # pragma: no cover
    run()
