#!/usr/bin/env bash
# Install opgraph with its test extras into the project-local virtual environment .venv
# (created with `python3 -m venv .venv` on first use, reused afterwards), and the system
# tools the tests use, then run the whole test suite: the quick tests and the sweeps over
# real traces (marked slow; plain `pytest` leaves them out). Usage: bash scripts/test.sh [pytest args]
set -eu
cd "$(dirname "$0")/.."
if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  if ! command -v dot >/dev/null 2>&1 || ! command -v chromium >/dev/null 2>&1; then
    (apt-get update -qq && apt-get install -y -qq graphviz chromium >/dev/null) \
      || echo "warning: could not install graphviz/chromium; tests that need them will skip" >&2
  fi
fi
. scripts/venv.sh
"$PY" -m pip install -q -e '.[test]'
set +e
"$PY" -m pytest -q -m "slow or not slow" "$@"
