"""The ``opgraph`` command line: the group, its error boundary, and the list of commands.

Every command lives in :mod:`opgraph.commands` (one module per command or family) and is
added here, explicitly. Every command that takes a graph accepts a saved graph
(``.gpickle``, ``.json.gz``) or a raw trace. Bad input prints one line and exits with
code 2; never a traceback.
"""

from __future__ import annotations

import errno
import os
import sys
from typing import Any

import click

from opgraph.commands import (
    advise, augment, breakdown, build, categories, collectives, counters, critical_path, devices, diff, export, info,
    iterations, kernel_models, kernel_stats, launch_stats, memory_bw, memory_timeline, nvtx, overheads, overlap,
    predict, queue_length, report, sequences, shapes, stragglers, summary,
)
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
    """Turns every input error into one line + exit 2, and anything unexpected into one
    line + exit 1 (set OPGRAPH_DEBUG=1 for the traceback)."""

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


#: The commands, in the order of the reading: build and inspect, analyse, export.
COMMANDS: tuple[click.Command, ...] = (
    build.build, info.info, summary.summary, iterations.iterations, breakdown.breakdown, overheads.overheads,
    critical_path.critical_path_cmd, critical_path.idle_cmd, stragglers.stragglers_cmd, overlap.overlap_cmd,
    collectives.collectives_cmd, launch_stats.launch_stats_cmd, queue_length.queue_cmd, memory_bw.memory_bw_cmd,
    memory_timeline.memory_cmd, categories.categories_cmd, kernel_stats.kernels_cmd, shapes.shapes_cmd,
    sequences.sequences_cmd, counters.counters_cmd, advise.advise_cmd, nvtx.nvtx_cmd, nvtx.enqueue_stats_cmd,
    report.report, augment.augment, devices.devices, diff.diff, predict.predict_cmd,
    kernel_models.kernel_models_cmd, export.export_cmd,
)
for _cmd in COMMANDS:
    main.add_command(_cmd)

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
