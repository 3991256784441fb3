"""One list of time categories (opgraph/time_categories.py) drives every output: the
critical path, the cross-rank path, the idle causes, the schemas of the JSON outputs, the
text tables, the Perfetto args and the pictures' colours (issue "One answer a user can act
on", item 6). The HTML chart is checked in a browser in tests/test_html.py."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from conftest import table_headers
from opgraph.time_categories import COLOURS, CROSS_RANK_CATEGORIES, IDLE_CAUSES, PATH_CATEGORIES, WAIT_CATEGORIES


def _schema(name: str) -> dict:
    return json.loads((Path(__file__).resolve().parents[1] / "schemas" / name).read_text())


def test_analyses_use_the_catalog() -> None:
    from opgraph.analysis.critical_path.boundary_edges import CATEGORIES, WAIT_CATEGORIES as CP_WAITS
    from opgraph.analysis.crossrank import CROSS_CATEGORIES
    from opgraph.analysis.idle import CAUSES
    from opgraph.export.plots import COLORS

    assert CATEGORIES == tuple(PATH_CATEGORIES)
    assert CROSS_CATEGORIES == tuple(CROSS_RANK_CATEGORIES)
    assert CAUSES == tuple(IDLE_CAUSES)
    assert CP_WAITS == WAIT_CATEGORIES and set(WAIT_CATEGORIES) <= set(PATH_CATEGORIES)
    for c in list(CROSS_RANK_CATEGORIES) + list(IDLE_CAUSES):
        assert c in COLOURS and COLORS[c] == COLOURS[c], c
        assert c in PATH_CATEGORIES or c in CROSS_RANK_CATEGORIES or c in IDLE_CAUSES


def test_schemas_name_every_category() -> None:
    cp = _schema("critical-path.schema.json")["$defs"]
    assert set(cp["category"]["enum"]) == set(CROSS_RANK_CATEGORIES)
    assert cp["breakdown"]["required"] == list(PATH_CATEGORIES)
    idle = _schema("idle.schema.json")
    text = json.dumps(idle)
    for c in IDLE_CAUSES:
        assert f'"{c}"' in text, c
    pf = json.dumps(_schema("perfetto-trace.schema.json"))
    for c in CROSS_RANK_CATEGORIES:
        assert f'"{c}"' in pf, c
    pr = _schema("predict.schema.json")["$defs"]
    assert set(pr["category"]["enum"]) == set(PATH_CATEGORIES)


@pytest.fixture(scope="module")
def dataloader(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from opgraph.testing.synth_paths import path_scenario, write_path_scenario

    return write_path_scenario(path_scenario("dataloader_wait"), tmp_path_factory.mktemp("dl"))


def test_every_output_carries_a_new_category(dataloader: Path, cli, tmp_path: Path) -> None:
    """``data_loading``, the newest category, reaches the JSON, the text tables and the
    Perfetto args of a trace that has it: an output that kept its own list would miss it."""
    r = cli(["critical-path", str(dataloader), "--json"])
    doc = json.loads(r.stdout)
    assert list(doc["windows"][0]["breakdown_us"]) == list(PATH_CATEGORIES)
    assert doc["windows"][0]["bound"] == "data_loading"
    r = cli(["critical-path", str(dataloader)])
    assert r.exit_code == 0 and "data_loading" in r.stdout
    r = cli(["idle", str(dataloader), "--json"])
    assert list(json.loads(r.stdout)["devices"][0]["causes_us"]) == list(IDLE_CAUSES)
    r = cli(["idle", str(dataloader)])
    assert r.exit_code == 0 and "data loading" in table_headers(r.stdout)
    out = tmp_path / "t.json.gz"
    r = cli(["export", str(dataloader), "--perfetto", str(out)])
    assert r.exit_code == 0, r.stderr
    with gzip.open(out, "rt") if str(out).endswith(".gz") else open(out) as f:
        trace = json.load(f)
    evs = trace["traceEvents"] if isinstance(trace, dict) else trace
    bound = {e["args"].get("opgraph.bound_by") for e in evs if isinstance(e.get("args"), dict)}
    assert "data_loading" in bound
    causes = [e["args"]["opgraph.idle_cause_us"] for e in evs
              if isinstance(e.get("args"), dict) and "opgraph.idle_cause_us" in e["args"]]
    assert causes and all(set(c) <= set(IDLE_CAUSES) for c in causes)
    assert any(c.get("data_loading", 0) > 0 for c in causes)
