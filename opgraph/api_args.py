"""The Python API's argument checks (:mod:`opgraph.api`): each public function checks its
arguments at the boundary and raises ``TypeError`` (wrong type) or ``ValueError`` (a value
out of range) naming the argument and what it accepts, before any work, instead of a
silent wrong answer or an error from deep inside. A string is never taken for a list."""

from __future__ import annotations

import math
import os
import re
from typing import Any, Sequence

import networkx as nx


def _kind(v: Any) -> str:
    return f"{type(v).__name__} {v!r:.60}"


def path_arg(name: str, v: Any) -> str:
    """``v`` as a path string: a ``str`` or ``os.PathLike`` (not bytes, not a number)."""
    if isinstance(v, (str, os.PathLike)) and not isinstance(v, bytes):
        p = os.fspath(v)
        if isinstance(p, str) and p:
            return p
    raise TypeError(f"{name}: expected a path (a non-empty str or os.PathLike), got {_kind(v)}")


def paths_arg(name: str, v: Any) -> str | list[str]:
    """One path, or a non-empty list or tuple of paths (a job's rank traces)."""
    if isinstance(v, (list, tuple)):
        if not v:
            raise ValueError(f"{name}: expected a path or a non-empty list of paths, got an empty {type(v).__name__}")
        return [path_arg(f"{name}[{i}]", x) for i, x in enumerate(v)]
    return path_arg(name, v)


def graph_arg(name: str, v: Any, *, paths: bool = True) -> Any:
    """A graph argument: a :class:`~opgraph.model.trace_graph.TraceGraph`, an opgraph
    ``networkx.DiGraph`` (its graph attributes checked: a plain ``DiGraph`` is refused), or (with
    ``paths``) a path or list of paths, returned as given."""
    from opgraph.model.trace_graph import TraceGraph

    if isinstance(v, TraceGraph):
        return v
    if isinstance(v, nx.DiGraph):
        from opgraph.errors import OpgraphInputError
        from opgraph.model.validate import check_graph_attrs

        try:
            check_graph_attrs(v.graph, name, args_packed=True)  # the args column may be decoded lazily
        except OpgraphInputError as e:
            raise ValueError(f"{name}: {e.problem} (a graph made by opgraph.load or opgraph.build is expected)") \
                from None
        return v
    if paths and isinstance(v, (str, os.PathLike, list, tuple)) and not isinstance(v, bytes):
        return paths_arg(name, v)
    what = "an opgraph graph (networkx.DiGraph or TraceGraph)" + (" or a path to a trace or saved graph"
                                                                  if paths else "")
    raise TypeError(f"{name}: expected {what}, got {_kind(v)}")


def str_list_arg(name: str, v: Any) -> list[str]:
    """A list (or tuple) of strings; ``None`` is empty. A plain ``str`` is refused: it would
    be read character by character (``remove="sgemm"`` removed everything holding s, g, e, m)."""
    if v is None:
        return []
    if isinstance(v, (str, bytes)):
        raise TypeError(f"{name}: expected a list of strings, got the string {v!r:.60} (write [{v!r:.60}])")
    if not isinstance(v, (list, tuple)):
        raise TypeError(f"{name}: expected a list of strings, got {_kind(v)}")
    for i, x in enumerate(v):
        if not isinstance(x, str):
            raise TypeError(f"{name}[{i}]: expected a string, got {_kind(x)}")
    return list(v)


def opt_str_arg(name: str, v: Any) -> str | None:
    """``None`` or a string."""
    if v is None or isinstance(v, str):
        return v
    raise TypeError(f"{name}: expected a string or None, got {_kind(v)}")


def bool_arg(name: str, v: Any) -> bool:
    """``True`` or ``False`` (also numpy booleans)."""
    if isinstance(v, bool) or type(v).__name__ == "bool_":
        return bool(v)
    raise TypeError(f"{name}: expected True or False, got {_kind(v)}")


def number_arg(name: str, v: Any, *, minimum: float = 0.0, exclusive: bool = False, integer: bool = False,
               none_ok: bool = False, maximum: float | None = None) -> Any:
    """A finite number (an ``int`` with ``integer``) of at least ``minimum`` (above it with
    ``exclusive``), at most ``maximum``; ``None`` when ``none_ok``. Booleans and strings are
    refused."""
    if v is None and none_ok:
        return None
    ok_type = (int,) if integer else (int, float)
    if isinstance(v, bool) or not isinstance(v, ok_type) and not _numpy_number(v, integer):
        what = "an integer" if integer else "a number"
        raise TypeError(f"{name}: expected {what}{' or None' if none_ok else ''}, got {_kind(v)}")
    bad = not math.isfinite(float(v)) or (v <= minimum if exclusive else v < minimum) or (
        maximum is not None and v > maximum)
    if bad:
        bound = f"{'above' if exclusive else 'at least'} {minimum:g}" + (
            f" and at most {maximum:g}" if maximum is not None else "")
        raise ValueError(f"{name}: expected a finite {'integer' if integer else 'number'} {bound}, got {v!r}")
    return int(v) if integer else v


def _numpy_number(v: Any, integer: bool) -> bool:
    import numpy as np

    return isinstance(v, np.integer) or (not integer and isinstance(v, np.floating))


def regex_arg(name: str, v: Any, *, all_ok: bool = True) -> str | None:
    """``None`` or a string that compiles as a regular expression (``"all"`` when
    ``all_ok``: the whole trace)."""
    if v is None:
        return None
    if not isinstance(v, str):
        raise TypeError(f"{name}: expected a regular expression (str) or None, got {_kind(v)}")
    if all_ok and v == "all":
        return v
    try:
        re.compile(v)
    except re.error as e:
        raise ValueError(f"{name}: {v!r:.60} is not a valid regular expression ({e})") from None
    return v


def choice_arg(name: str, v: Any, choices: Sequence[str]) -> str:
    """One of ``choices``."""
    if not isinstance(v, str) or v not in choices:
        raise ValueError(f"{name}: expected one of {', '.join(map(repr, choices))}, got {v!r:.60}")
    return v


def suffix_arg(name: str, v: Any, suffixes: Sequence[str]) -> str:
    """A path ending in one of ``suffixes`` (case-insensitive) that is not a folder."""
    p = path_arg(name, v)
    if not p.lower().endswith(tuple(suffixes)):
        raise ValueError(f"{name}: {p!r:.80} must end in {' or '.join(suffixes)}")
    if os.path.isdir(p):
        raise ValueError(f"{name}: {p!r:.80} is a folder, not an output file")
    return p


def ranks_arg(name: str, v: Any) -> list[int] | None:
    """``None`` or a list (tuple, set, range) of rank ids: integers >= 0."""
    if v is None:
        return None
    if isinstance(v, (str, bytes)) or not isinstance(v, (list, tuple, set, frozenset, range)):
        raise TypeError(f"{name}: expected a list of rank ids (integers) or None, got {_kind(v)}")
    return [number_arg(f"{name} item", r, integer=True) for r in v]
