"""The click commands of ``opgraph``, one module per command or family of commands.

Each module defines its commands with ``@click.command()``; :mod:`opgraph.cli` lists them
and adds them to the ``opgraph`` group. What commands share (loading the input with
``--rank``, the multi-rank options, the output of a table command) is in
:mod:`opgraph.commands.base`.
"""
