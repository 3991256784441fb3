"""Node kind codes: the small integers the column views (:mod:`opgraph.analysis.graph_frame`,
:func:`opgraph.analysis.trim.trim_table`) use in place of the kind names of docs/model.md.

No times here (the modules that use the codes keep ns inside and write µs in documents).
"""

from __future__ import annotations

import numpy as np

__all__ = ["KIND_CODES", "KIND_NAMES", "K_ANNOTATION", "K_CPU_OP", "K_PYTHON", "K_RUNTIME", "K_KERNEL",
           "K_MEMCPY", "K_MEMSET", "K_GPU_ANNOTATION", "K_OTHER"]

#: Code of each node kind name; a kind not listed gets :data:`K_OTHER`. Host kinds come
#: first (code <= ``K_RUNTIME``), then the device activities (``K_KERNEL``..``K_MEMSET``).
KIND_CODES: dict[str, int] = {k: i for i, k in enumerate(
    ("annotation", "cpu_op", "python", "runtime", "kernel", "memcpy", "memset", "gpu_annotation"))}
K_ANNOTATION, K_CPU_OP, K_PYTHON, K_RUNTIME, K_KERNEL, K_MEMCPY, K_MEMSET, K_GPU_ANNOTATION = range(8)
K_OTHER = 8
#: Kind name of each kind code (``K_OTHER`` -> ``"other"``).
KIND_NAMES = np.array(list(KIND_CODES) + ["other"], dtype=object)
