"""docs/notebooks/walkthrough.ipynb runs from top to bottom (on the real resnet50 trace when
../shared/traces is present, else on a synthesized one) and is stored without outputs."""

from __future__ import annotations

from pathlib import Path

import pytest

NB = Path(__file__).resolve().parent.parent / "docs" / "notebooks" / "walkthrough.ipynb"


def test_notebook_is_stored_without_outputs() -> None:
    nbformat = pytest.importorskip("nbformat")
    nb = nbformat.read(NB, as_version=4)
    for c in nb.cells:
        if c.cell_type == "code":
            assert not c.outputs and c.execution_count is None


def test_notebook_runs() -> None:
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    pytest.importorskip("matplotlib")
    nb = nbformat.read(NB, as_version=4)
    nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": str(NB.parent)}}).execute()
    outs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outs if o.output_type == "error"]
    html = [o["data"]["text/html"] for o in outs if "text/html" in o.get("data", {})]
    assert any("<table" in h for h in html)  # results render as tables
