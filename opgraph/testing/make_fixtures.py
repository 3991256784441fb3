"""Regenerate the synthetic fixtures: ``python -m opgraph.testing.make_fixtures fixtures/synth``.

Writes ``<scenario>.json`` (the Kineto trace) and ``<scenario>.answers.json`` (ground
truth, times in integer ns) for every scenario in :data:`opgraph.testing.SCENARIOS`,
with the default ``steps=3, seed=0``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from opgraph.testing.synth import SCENARIOS, synthesize, write_scenario


def main(argv: list[str] | None = None) -> int:
    """Write every scenario into the given directory; print one line per trace."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", nargs="?", default="fixtures/synth", type=Path,
                        help="output directory (default: fixtures/synth)")
    parser.add_argument("--steps", type=int, default=3, help="ProfilerSteps per scenario")
    parser.add_argument("--seed", type=int, default=0, help="seed for the ns_float sub-µs parts")
    parser.add_argument("--only", nargs="*", choices=SCENARIOS, help="scenarios to write")
    args = parser.parse_args(argv)
    for name in args.only or SCENARIOS:
        path = write_scenario(synthesize(name, steps=args.steps, seed=args.seed), args.directory)
        print(f"{path}  {path.stat().st_size / 1024:.1f} KiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
