"""Properties of every analysis (bad-input audit, "Done means"): shuffling a trace's events,
duplicating its metadata events, or saving and loading its graph (``.gpickle`` and
node-link ``.json.gz``) never changes any result; results on a saved graph equal those on
the raw trace.

Event ids are positions in the file, so a shuffle renumbers them: keys that hold event ids
(``eid``, ``*_eid``, ``event``) and the file's name and hash are left out of the comparison;
every number and name is compared.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any, Callable

import pytest

import opgraph

from conftest import KINETO_DIR
from opgraph.catalog.entries import ANALYSES as CATALOG

#: The analyses compared, each as a JSON-ready document: these with their options, and every
#: catalog analysis whose API function is made from its entry, with the catalog's defaults.
ANALYSES: dict[str, Callable[[Any], Any]] = {
    a.name: (lambda G, a=a: getattr(opgraph, a.name)(G).to_dict(**a.defaults("output")))
    for a in CATALOG if a.name and not a.api_impl
}
ANALYSES |= {
    "idle": lambda G: opgraph.idle(G).to_dict(top=10),
    "critical_path": lambda G: opgraph.critical_path(G).to_dict(with_path=False),
    "overlap": lambda G: opgraph.comm_overlap(G).to_dict(),
    "categories": lambda G: opgraph.gpu_categories(G).to_dict(),
    "memory_bw": lambda G: opgraph.memory_bandwidth(G).to_dict(),
    "launch_stats": lambda G: opgraph.launch_stats(G).to_dict(10),
    "queue": lambda G: opgraph.queue_length(G).to_dict(),
    "kernels": lambda G: opgraph.kernel_stats(G).to_dict(),
    "sequences": lambda G: opgraph.kernel_sequences(G, min_length=2).to_dict(),
    "advise": lambda G: opgraph.advise(G).to_dict(),
    "breakdown": lambda G: opgraph.breakdown(G, device=True).to_dict(),
    "summary": lambda G: opgraph.summary(G).to_dict(),
    "info": lambda G: {k: v for k, v in opgraph.info(G).to_dict().items() if k in (
        "nodes", "nodes_by_kind", "edges", "edges_by_kind", "streams", "span",
        "health", "inferred_dependencies", "iterations")},
}
_ID_KEY = re.compile(r"(^|_)eid$|^event$|^example_eid$|^source$|sha256|^file$|^input$")


def _norm(x: Any) -> Any:
    """``x`` without event-id and file keys; lists of dicts of event-level rows sorted so a
    renumbering cannot reorder them."""
    if isinstance(x, dict):
        return {k: _norm(v) for k, v in x.items() if not _ID_KEY.search(str(k))}
    if isinstance(x, list):
        return [_norm(v) for v in x]
    if isinstance(x, float):
        return round(x, 6)
    return x


def _results(G: Any) -> dict[str, Any]:
    return {k: _norm(json.loads(json.dumps(fn(G), default=str))) for k, fn in ANALYSES.items()}


def _variants(src: Path, tmp: Path) -> dict[str, Path]:
    """The raw trace, shuffled, with duplicated metadata, and as saved graphs."""
    doc = json.loads(src.read_text()) if src.suffix == ".json" else json.loads(__import__("gzip").open(src).read())
    ev = doc["traceEvents"] if isinstance(doc, dict) else doc
    out = {"raw": src}
    sh = list(ev)
    random.Random(7).shuffle(sh)
    (tmp / "shuffled.json").write_text(json.dumps({**doc, "traceEvents": sh} if isinstance(doc, dict) else sh))
    out["shuffled"] = tmp / "shuffled.json"
    meta = [e for e in ev if isinstance(e, dict) and e.get("ph") == "M"]
    dup = list(ev) + meta + [dict(e) for e in meta]
    (tmp / "dupmeta.json").write_text(json.dumps({**doc, "traceEvents": dup} if isinstance(doc, dict) else dup))
    out["dup_metadata"] = tmp / "dupmeta.json"
    for suffix in (".gpickle", ".json.gz"):
        p = tmp / f"g{suffix}"
        opgraph.build(src, p)
        out[f"saved{suffix}"] = p
    g2 = tmp / "resaved.gpickle"
    opgraph.save(opgraph.load(tmp / "g.json.gz"), g2)
    out["resaved"] = g2
    return out


SCENARIOS = ("gpu_bound", "cpu_bound", "sync_every_op", "two_stream_event_wait", "cuda_graph", "old_format_2021")
REAL = ["tracelens_h100_bert_small.json.gz", "hta_amd_mi250_minitoy_rocm6.2.json.gz"]


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_synthesized_invariance(scenario: str, tmp_path: Path) -> None:
    src = opgraph.example_trace(scenario, tmp_path / "src")
    base = _results(opgraph.load(src))
    for name, p in _variants(Path(src), tmp_path).items():
        if name == "raw":
            continue
        got = _results(opgraph.load(p))
        for k in ANALYSES:
            assert got[k] == base[k], f"{scenario}: {k} differs on the {name} variant"


@pytest.mark.parametrize("name", REAL)
def test_real_invariance(name: str, tmp_path: Path) -> None:
    src = KINETO_DIR / name
    if not src.exists():
        pytest.skip(f"{name} not available")
    base = _results(opgraph.load(src))
    for vname, p in _variants(src, tmp_path).items():
        if vname == "raw":
            continue
        got = _results(opgraph.load(p))
        for k in ANALYSES:
            assert got[k] == base[k], f"{name}: {k} differs on the {vname} variant"
