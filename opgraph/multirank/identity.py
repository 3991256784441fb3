"""Which files make up a job, and which rank each file is.

Discovery turns what the user typed (a directory, a glob, or a list of files) into trace
files; rank identity comes from the trace's ``distributedInfo.rank`` and falls back to
the file name (``rank-3``, ``rank3``, ``rank_3``, ``worker3``, ``..._3.json``).
"""

from __future__ import annotations

import glob
import gzip
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from opgraph.errors import OpgraphInputError

#: File name endings read as traces when a directory or glob is expanded.
TRACE_SUFFIXES = (".json", ".json.gz")  # saved graphs (.gpickle) only when named explicitly
#: Bytes sniffed from the start of a JSON file to decide that it is a trace (after gunzip).
SNIFF_BYTES = 1 << 20

_RANK_NAME_RE = (
    re.compile(r"(?i)(?:^|[^a-z])(?:rank|worker)[-_]?(\d+)"),
    re.compile(r"_(\d+)\."),
)


def is_job_input(inputs: "str | os.PathLike | list | tuple") -> bool:
    """Several files, a directory or a glob pattern (that is not itself a file): the rank
    traces of a multi-rank job."""
    if isinstance(inputs, (list, tuple)):
        if len(inputs) != 1:
            return True
        inputs = inputs[0]
    p = os.fspath(inputs)
    return os.path.isdir(p) or (any(ch in p for ch in "*?[") and not os.path.exists(p))


def rank_from_filename(path: str) -> int | None:
    """The rank a file name states (``rank-3``, ``rank3``, ``rank_3``, ``worker3``, then
    ``_3.``), or None. Only the base name is looked at."""
    base = os.path.basename(path)
    for rx in _RANK_NAME_RE:
        m = rx.search(base)
        if m:
            return int(m.group(1))
    return None


def _looks_like_trace(path: str) -> bool:
    """True when the first :data:`SNIFF_BYTES` of ``path`` mention ``traceEvents`` (a
    Kineto / Chrome trace) or the file is a saved graph / pickle."""
    if path.endswith(".gpickle"):
        return True
    try:
        if path.endswith(".gz"):
            with gzip.open(path, "rb") as fh:
                head = fh.read(SNIFF_BYTES)
        else:
            with open(path, "rb") as fh:
                head = fh.read(SNIFF_BYTES)
    except (OSError, EOFError):
        return True  # let the reader report the problem with its one-line error
    return b'"traceEvents"' in head or head.lstrip()[:1] == b"["


@dataclass
class Discovery:
    """Result of :func:`discover`: the trace files, in name order, and what was skipped."""

    files: list[str]
    skipped: list[str] = field(default_factory=list)


def discover(inputs: list[str] | tuple[str, ...] | str) -> Discovery:
    """Rank files from a directory, a glob pattern, or explicit files.

    A directory (non-recursive) or a glob keeps files ending in :data:`TRACE_SUFFIXES`
    whose content looks like a trace (``"traceEvents"`` near the start); other files are
    listed in ``skipped``. Explicitly named files are always kept (their reader reports
    any problem). Raises :class:`OpgraphInputError` when nothing is left."""
    if isinstance(inputs, (str, os.PathLike)):
        inputs = [str(inputs)]
    files: list[str] = []
    skipped: list[str] = []
    for spec in inputs:
        spec = str(spec)
        if os.path.isdir(spec):
            cands = sorted(str(p) for p in Path(spec).iterdir() if p.is_file() and not p.name.startswith("."))
        elif any(ch in spec for ch in "*?[") and not os.path.exists(spec):
            cands = sorted(p for p in glob.glob(spec) if os.path.isfile(p))
            if not cands:
                raise OpgraphInputError(spec, "glob matches no file")
        else:
            if not os.path.exists(spec):
                raise OpgraphInputError(spec, "no such file or directory")
            files.append(spec)
            continue
        for c in cands:
            if c.endswith(TRACE_SUFFIXES) and not c.endswith(".answers.json") and _looks_like_trace(c):
                files.append(c)
            else:
                skipped.append(c)
    seen: set[str] = set()
    uniq = []
    for f in files:
        key = os.path.realpath(f)
        if key not in seen:
            seen.add(key)
            uniq.append(f)
    if not uniq:
        where = ", ".join(str(s) for s in inputs) or "<no input>"
        raise OpgraphInputError(where, "no trace files found"
                                + (f" ({len(skipped)} other files skipped)" if skipped else ""))
    return Discovery(uniq, skipped)


def check_ranks(pairs: list[tuple[int | None, str]], unknown_ok: bool = False) -> None:
    """Raise a one-line :class:`OpgraphInputError` when a file has no rank (unless
    ``unknown_ok``), a rank id is outside 0..:data:`~opgraph.model.validate.MAX_RANK_ID`, or
    two files claim the same rank; ``pairs`` is ``(rank, file)`` per file."""
    from opgraph.model.validate import MAX_RANK_ID

    missing = [f for r, f in pairs if r is None]
    if missing and not unknown_ok:
        raise OpgraphInputError(missing[0], "rank unknown: no distributedInfo.rank and no rank in the "
                                "file name (rank-3, rank3, worker3, _3.)"
                                + (f"; also {len(missing) - 1} more files" if len(missing) > 1 else ""))
    for r, f in pairs:
        if r is not None and not 0 <= int(r) <= MAX_RANK_ID:
            raise OpgraphInputError(f, f"rank id {int(r):,} is out of range: rank ids are 0..{MAX_RANK_ID:,}")
    by_rank: dict[int, list[str]] = {}
    for r, f in pairs:
        if r is not None:
            by_rank.setdefault(int(r), []).append(f)
    dups = {r: fs for r, fs in by_rank.items() if len(fs) > 1}
    if dups:
        r = min(dups)
        fs = dups[r]
        raise OpgraphInputError(fs[0], f"duplicate rank {r}: also claimed by {', '.join(fs[1:])}"
                                + (f" (and {len(dups) - 1} more duplicated ranks)" if len(dups) > 1 else ""))


def identical_traces(files: list[str], digests: list[str | None]) -> list[dict[str, object]]:
    """The ``identical_rank_traces`` warning (job warnings' shape) when two rank files have
    the same content (``digests``: SHA-256 per file, ``None`` unknown): a copy of one rank's
    trace named as another rank (ranks from file names) counts one rank twice. Empty when
    all differ."""
    seen: dict[str, str] = {}
    pairs = []
    for f, d in zip(files, digests):
        if d is None:
            continue
        if d in seen:
            pairs.append((seen[d], f))
        else:
            seen[d] = f
    if not pairs:
        return []
    a, b = pairs[0]
    return [{"code": "identical_rank_traces", "count": len(pairs), "example_eid": None,
             "message": f"{os.path.basename(b)} has the same content as {os.path.basename(a)}: one rank's trace "
                        f"may be counted twice" + (f" ({len(pairs) - 1} more such files)" if len(pairs) > 1 else "")}]
