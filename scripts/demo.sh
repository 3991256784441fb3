#!/usr/bin/env bash
# Install opgraph into the project-local virtual environment .venv (created with
# `python3 -m venv .venv` on first use, reused afterwards) and run the main job on a
# bundled fixture: build the graph, show what the trace holds, find what bounds each
# step, and export the trace for Perfetto.
set -eu
cd "$(dirname "$0")/.."
. scripts/venv.sh
"$PY" -m pip install -q .
out=${OUT:-out}
mkdir -p "$out"
opgraph build fixtures/synth/gpu_bound.json -o "$out/g.gpickle"
opgraph info "$out/g.gpickle"
opgraph critical-path "$out/g.gpickle"
opgraph idle "$out/g.gpickle"
if opgraph export --help >/dev/null 2>&1; then
  opgraph export "$out/g.gpickle" --perfetto "$out/trace.perfetto.json"
  echo "open $out/trace.perfetto.json in https://ui.perfetto.dev"
fi
