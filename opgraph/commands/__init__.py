"""CLI commands that live in their own modules.

Every module in this package is imported by :mod:`opgraph.cli`; each registers its
commands on ``opgraph.cli.main`` with ``@main.command()``.
"""

import importlib
import pkgutil

for _m in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
    importlib.import_module(f"{__name__}.{_m.name}")
