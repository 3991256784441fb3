"""Names, one home each: how a kernel name is shortened, normalised and labelled, and
which collective a name stands for. Used by the analyses (diff, breakdown, sequences,
collectives), the multi-rank matching and every exporter.
"""

from __future__ import annotations

import re
from typing import Callable

import numpy as np
import pandas as pd


def names_where(names: np.ndarray | tuple[np.ndarray, np.ndarray], test: Callable[[str], object]) -> np.ndarray:
    """Boolean per element of ``names`` (any array, or (codes, distinct names) of one): a
    string for which ``test`` is true. Each distinct name is tested once (a trace repeats a
    few thousand names over a million events); missing and non-string names are False."""
    if isinstance(names, tuple):
        codes, uniq = names
    else:
        arr = names if isinstance(names, np.ndarray) and names.dtype == object else np.asarray(names, dtype=object)
        codes, uniq = pd.factorize(arr)
    hit = np.fromiter((isinstance(u, str) and bool(test(u)) for u in uniq), dtype=bool, count=len(uniq))
    return np.append(hit, False)[codes]


#: Kernel-name normalisation levels (see :func:`normalize_kernel_name`).
NAME_LEVELS = ("exact", "default", "base")


#: A hex address in a name (replaced by ``0x?`` when names are compared).
HEX_RE = re.compile(r"0x[0-9a-fA-F]+")


#: Runs of white space (collapsed to one space).
WS_RE = re.compile(r"\s+")


def _strip_params(s: str) -> str:
    """Drop a trailing top-level parameter list ``(...)`` (not ``(anonymous namespace)``
    and not parentheses inside template arguments)."""
    if not s.endswith(")"):
        return s
    angle = 0
    stack: list[tuple[int, int]] = []  # (position, angle depth at the '(')
    match_of_last = -1
    prev = ""
    for i, ch in enumerate(s):
        if ch == "<":
            angle += 1
        elif ch == ">" and prev != "-":
            angle = max(angle - 1, 0)
        elif ch == "(":
            stack.append((i, angle))
        elif ch == ")" and stack:
            pos, ang = stack.pop()
            if i == len(s) - 1 and not stack and ang == 0:
                match_of_last = pos
        prev = ch
    if match_of_last > 0:
        return s[:match_of_last].rstrip()
    return s


def _strip_templates(s: str) -> str:
    out = []
    depth = 0
    prev = ""
    for ch in s:
        if ch == "<":
            depth += 1
        elif ch == ">" and prev != "-" and depth:
            depth -= 1
        elif depth == 0:
            out.append(ch)
        prev = ch
    return "".join(out)


def normalize_kernel_name(name: str, level: str = "default") -> str:
    """The key two kernels are matched by.

    ``exact``: whitespace collapsed only. ``default``: also a leading ``void `` and the
    trailing parameter list are dropped (they follow from the name and template arguments,
    and change with driver/NCCL versions), and hex addresses become ``0x?``; template
    arguments stay, so ``CUDAFunctor_add<float>`` and ``MulFunctor<float>`` kernels stay
    apart. ``base``: also every template argument list is dropped (coarse: one row per
    kernel function, e.g. all ``vectorized_elementwise_kernel`` instances together).
    """
    if not isinstance(name, str):
        return ""
    s = WS_RE.sub(" ", name).strip()
    if level == "exact":
        return s
    if level not in NAME_LEVELS:
        raise ValueError(f"unknown name level {level!r}; use one of {', '.join(NAME_LEVELS)}")
    if s.startswith("void "):
        s = s[5:]
    s = HEX_RE.sub("0x?", s)
    s = _strip_params(s)
    if level == "base":
        s = _strip_templates(s)
        s = _strip_params(s)
    return WS_RE.sub(" ", s).strip()


def kernel_label(name: object, width: int | None = None) -> str:
    """A kernel name for display: without ``void``, parameter list and addresses, template
    arguments kept (:func:`normalize_kernel_name`; memcpy/memset names as they are); cut to
    ``width`` characters with ``…`` (None: never cut)."""
    if not isinstance(name, str):
        return ""
    s = name if name.startswith(("Memcpy", "Memset")) else (normalize_kernel_name(name) or name)
    return s if width is None or len(s) <= width else s[: width - 1] + "…"


def short_kernel_name(name: str) -> str:
    """A kernel's short name: no ``void`` prefix, no template or argument list, last
    ``::`` component (``void at::native::foo<float>(...)`` -> ``foo``)."""
    s = name.strip()
    if s.startswith("void "):
        s = s[5:]
    out = []
    for ch in s:
        if ch == "<" or ch == "(":
            break
        out.append(ch)
    s = "".join(out).strip() or name
    return s.rsplit("::", 1)[-1] or s


_COLL_NAMES = (
    (re.compile(r"(?i)all_?reduce"), "all_reduce"),
    (re.compile(r"(?i)all_?gather"), "all_gather"),
    (re.compile(r"(?i)reduce_?scatter"), "reduce_scatter"),
    (re.compile(r"(?i)all_?to_?all"), "all_to_all"),
    (re.compile(r"(?i)broadcast|bcast"), "broadcast"),
    (re.compile(r"(?i)send_?recv|\bsend\b|\brecv\b|^send|^recv|:send|:recv|_send|_recv"), "send_recv"),
    (re.compile(r"(?i)barrier"), "barrier"),
    (re.compile(r"(?i)gather"), "gather"),
    (re.compile(r"(?i)scatter"), "scatter"),
    (re.compile(r"(?i)reduce"), "reduce"),
)


def normalise_collective(name: str | None) -> str:
    """``allreduce``, ``nccl:all_reduce``, ``ncclKernel_AllReduce_RING_LL_Sum_float`` ... ->
    ``all_reduce``; likewise ``all_gather``, ``reduce_scatter``, ``all_to_all``,
    ``broadcast``, ``send_recv``, ``barrier``, ``gather``, ``scatter``, ``reduce``; anything
    else lower-cased, or ``"unknown"``."""
    if not name:
        return "unknown"
    s = str(name)
    if s.startswith("ncclKernel_") or s.startswith("ncclDevKernel_"):
        s = s.split("_", 1)[1]
    for rx, out in _COLL_NAMES:
        if rx.search(s):
            return out
    return s.split("(")[0].strip().lower() or "unknown"


#: ``record_function`` ranges recorded as ops by older profilers (the step, ``## backward ##``,
#: ``[param|cuda]``-style labels, optimizer and DataLoader ranges): annotations, not work.
ANNOTATION_NAME_RE = re.compile(
    r"^(ProfilerStep#\d+|## .* ##|\[[^\]]*\]|Optimizer\.(step|zero_grad)#.*|enumerate\(DataLoader\)#.*)$")
#: A DataLoader fetching the next batch (``enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__``).
DATALOADER_RE = re.compile(r"DataLoader.*__next__|^enumerate\(DataLoader\)")


def annotation_like(kind: np.ndarray, names: np.ndarray | tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """Per event: an annotation (kind ``annotation``) or a ``cpu_op`` whose name is a
    ``record_function`` label (:data:`ANNOTATION_NAME_RE`). Its own time (no child running)
    records nothing the thread did. ``names`` as :func:`names_where` takes them."""
    kind = np.asarray(kind, dtype=object)
    return (kind == "annotation") | ((kind == "cpu_op") & names_where(names, ANNOTATION_NAME_RE.match))
