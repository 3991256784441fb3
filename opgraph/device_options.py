"""The options of every command that uses the peak table (``opgraph/devices``;
docs/roofline.md): ``--device``, ``--dtype`` and ``--device-file FILE``, one definition
each.

The option is repeatable; its files replace the ``OPGRAPH_DEVICES`` environment variable
for the command. Without the option the variable's paths (``os.pathsep``-separated) are
used. Either way every file is read and validated before the command starts, so a bad
file stops it with one line naming the file and the entry (exit 2) before any trace is read.
The command function receives nothing: the files are in force while it runs.
"""

from __future__ import annotations

from typing import Any, Callable

import click

DEVICE_FILE_HELP = ("A JSON device file (schema of opgraph/devices/devices.json) adding devices to the peak "
                    "table or overriding built-in ones by name; repeatable. Default: the paths in "
                    "$OPGRAPH_DEVICES (separated by the OS path separator).")

def _use_device_files(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> None:
    """Validate the files now (one line and exit 2 before any trace is read), then put the
    option's files in force until the root context closes (after the command, also when a
    later option fails to parse), so wrappers of the command (``report --html``) see them."""
    from opgraph.devices.peaks import active_device_files, load_device_file, reset_device_files, set_device_files

    for f in (tuple(value) if value else active_device_files()):
        load_device_file(f)
    if value:
        token = set_device_files(value)
        ctx.find_root().call_on_close(lambda: reset_device_files(token))


def device_file_option(f: Callable[..., Any]) -> Callable[..., Any]:
    """``--device-file FILE`` (repeatable): the files are in force while the command runs
    (:func:`opgraph.devices.device_files`); the command function receives nothing."""
    return click.option("--device-file", "device_files", multiple=True, metavar="FILE", expose_value=False,
                        callback=_use_device_files, help=DEVICE_FILE_HELP)(f)


def device_option(f: Callable[..., Any]) -> Callable[..., Any]:
    """``--device NAME``: the device of every kernel (a table or runtime name)."""
    return click.option("--device", default=None,
                        help="Device for every kernel: a table name ('H100 SXM') or a runtime name ('NVIDIA H100 "
                             "80GB HBM3'); default: deviceProperties of the trace. See `opgraph devices`.")(f)


def dtype_option(f: Callable[..., Any]) -> Callable[..., Any]:
    """``--dtype NAME``: the dtype of kernels whose op and name show none."""
    return click.option("--dtype", default=None,
                        help="dtype for kernels whose op and name show none (bf16, fp16, fp32, tf32, fp8, fp64).")(f)
