"""The names of the ranges that mark iterations (steps), defined once for every layer.

The readers (``ingest``), the graph builder (``graph``), the multi-rank worker and the one
step/window selector (:mod:`opgraph.graph.windows`) all recognise steps by these
patterns; nothing else in the code spells them.
"""

from __future__ import annotations

import re

#: ``ProfilerStep#N``: the range ``torch.profiler.profile.step()`` writes around each
#: iteration (host ``user_annotation``; a ``gpu_user_annotation`` of the same name on the
#: device). Group 1 is N.
STEP_PATTERN = r"^ProfilerStep#(\d+)$"
STEP_RE = re.compile(STEP_PATTERN)

#: ``Iteration N``: the NVTX ranges training loops write around each iteration (Nsight
#: Systems traces; seed-algorithms §7). Group 1 is N.
NVTX_ITERATION_PATTERN = r"^Iteration\s+(\d+)$"
NVTX_ITERATION_RE = re.compile(NVTX_ITERATION_PATTERN)
