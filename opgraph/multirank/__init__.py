"""Multi-rank jobs: one graph across ranks (docs/multirank.md).

Ingest half: discovery and rank identity (:mod:`.identity`), the per-rank worker
(:mod:`.worker`), executors (:mod:`.executor`: process pool or Dask), collective matching
and clock alignment (:mod:`.match`), merging into one job graph (:mod:`.job`), and one rank of it as a
single-rank graph (:mod:`.rank_view`).
"""

from opgraph.multirank.identity import discover, rank_from_filename
from opgraph.multirank.job import JobBuild, build_job, load_job, merge_results
from opgraph.multirank.rank_view import is_job, rank_subgraph
from opgraph.multirank.match import align_clocks, match_collectives
from opgraph.multirank.worker import RankResult, rank_result
from opgraph.names import normalise_collective

__all__ = ["RankResult", "JobBuild", "align_clocks", "build_job", "discover", "is_job", "load_job",
           "match_collectives", "merge_results", "normalise_collective", "rank_from_filename",
           "rank_result", "rank_subgraph"]
