"""Multi-rank jobs: one graph across ranks (docs/multirank.md).

Ingest half: discovery and rank identity (:mod:`.identity`), the per-rank worker
(:mod:`.worker`), executors (:mod:`.executor`: process pool or Dask), collective matching
and clock alignment (:mod:`.match`), merging into one job graph (:mod:`.job`), and one rank of it as a
single-rank graph (:mod:`.rank_view`). The names below are loaded on first use, so a single-rank
command does not import the job builder.
"""

from __future__ import annotations

import importlib
from typing import Any

#: Each public name and the module defining it.
_HOMES = {
    "discover": ".identity", "rank_from_filename": ".identity", "JobBuild": ".job", "build_job": ".job",
    "load_job": ".job", "merge_results": ".job", "is_job": ".rank_view", "rank_subgraph": ".rank_view",
    "align_clocks": ".match", "match_collectives": ".match", "RankResult": ".worker", "rank_result": ".worker",
    "normalise_collective": "opgraph.names",
}
__all__ = ["RankResult", "JobBuild", "align_clocks", "build_job", "discover", "is_job", "load_job",
           "match_collectives", "merge_results", "normalise_collective", "rank_from_filename",
           "rank_result", "rank_subgraph"]


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        return getattr(importlib.import_module(_HOMES[name], __name__), name)
    raise AttributeError(f"module 'opgraph.multirank' has no attribute {name!r}")
