"""Which op each CUDA/HIP-graph replay activity belongs to (docs/graph-replay.md).

A replayed kernel's launcher is the graph-launch call, which sits under no CPU op. When the
build mapped it to the op that captured it (``G.graph['graph_replay']``, made by
:mod:`opgraph.graph.graph_replay`), its op is the outermost non-module op of the capture-time op
chain (the rule :func:`opgraph.analysis.op_hierarchy.outermost_ops` applies to eager ops).
Otherwise it is named ``(graph replay) <category>`` by its kernel's name
(:func:`opgraph.analysis.categories.category_by_name`): an honest "we know it is a graph
replay of, say, a GEMM" rather than a CPU op it was not launched by.
"""

from __future__ import annotations

from typing import Iterable

import numpy as np
import pandas as pd

from opgraph.analysis.categories import category_by_name
from opgraph.analysis.kind_codes import K_MEMCPY, K_MEMSET
from opgraph.analysis.graph_frame import GraphFrame
from opgraph.graph.graph_replay import is_graph_launch, replay_map

#: Prefix of the label of a replayed activity not mapped to a capture-time op.
UNMAPPED_PREFIX = "(graph replay)"


def chain_op(chain: tuple[str, ...], module_markers: Iterable[str]) -> str | None:
    """The outermost name of ``chain`` (outermost first) that is not a module marker (the
    rule of :func:`opgraph.analysis.op_hierarchy.outermost_ops`); where every name is a module
    range, the innermost one (``outermost_ops`` would give no op; a replayed kernel keeps the
    nearest name it was captured under instead); None for an empty chain."""
    ms = tuple(m for m in module_markers if m)
    for name in chain:
        if not (ms and name.startswith(ms)):
            return name
    return chain[-1] if chain else None


def replayed_ops(f: GraphFrame, act: np.ndarray, module_markers: Iterable[str]) -> tuple[np.ndarray, np.ndarray,
                                                                                          np.ndarray]:
    """For the activity positions ``act`` of ``f``: ``(replayed, mapped, label)``.

    ``replayed``: the activity was launched by a graph-launch call; ``mapped``: the build
    tied it to a capture-time op; ``label``: that op's name, or ``(graph replay)
    <category>`` (None where not ``replayed``).
    """
    n = len(act)
    label = np.full(n, None, dtype=object)
    rt = f.launcher[act] if n else np.zeros(0, np.int64)
    replayed = np.zeros(n, dtype=bool)
    has = rt >= 0
    if has.any():
        replayed[has] = is_graph_launch(f.name[rt[has]])
    mapped = np.zeros(n, dtype=bool)
    if not replayed.any():
        return replayed, mapped, label
    m, chains, anns = replay_map(f.G.graph)
    markers = tuple(module_markers)
    if len(m):
        # one label per distinct (chain, annotation) pair, not per activity
        pair = m["chain"].to_numpy(np.int64) * (len(anns) + 1) + m["annotation"].to_numpy(np.int64) + 1
        codes, uniq = pd.factorize(pair)
        names = [chain_op(chains[u // (len(anns) + 1)], markers)
                 or (anns[u % (len(anns) + 1) - 1] if u % (len(anns) + 1) else None) for u in uniq.tolist()]
        ops = pd.Series(np.asarray(names, dtype=object)[codes], index=m["eid"].to_numpy(np.int64), dtype=object)
        ops = ops[~ops.index.duplicated()]
        got = ops.reindex(f.node[act[replayed]]).to_numpy(dtype=object)
        ok = pd.notna(got)
        idx = np.flatnonzero(replayed)
        label[idx[ok]] = got[ok]
        mapped[idx[ok]] = True
    rest = replayed & ~mapped
    if rest.any():
        cat = category_by_name(f.name[act[rest]])
        cat = np.where(np.isin(f.kind[act[rest]], (K_MEMCPY, K_MEMSET)), "memcpy/memset", cat)
        label[rest] = np.array([f"{UNMAPPED_PREFIX} {c or 'other'}" for c in cat], dtype=object)
    return replayed, mapped, label
