"""The one-file HTML report: ``opgraph report IN --html report.html`` (issue #6).

* The page is self-contained (no URL it could fetch, scripts and styles inline).
* Every number it prints equals the value at its ``data-path`` in the CLI's ``--json``
  output of the same input (summary, idle, critical-path, breakdown, overheads, report,
  info), and the text shown is that value rounded; the charts' data are the CLI documents.
* In a real browser (Debian's Chromium driven by Playwright, the file opened from disk,
  nothing served): no console error, no request leaves file://, every chart rendered an
  SVG, hover and zoom work, the summary cards show the JSON numbers. Skips with the reason
  when Playwright or Chromium is absent.

Set ``OPGRAPH_SCREENSHOTS=DIR`` to keep the browser screenshots (docs/img/ was made so).
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path

import pytest

from conftest import KINETO_DIR, SYNTH_DIR, _run_cli, requires_traces
from opgraph.export.html.report import get_path
from opgraph.export.html.tables import TABLE_SECTIONS

REAL = [("param_dlrm_8gpu_rank0.pt.trace.json.gz", 2048), ("tracelens_h100_bert_small.json.gz", None)]
#: The CLI commands whose --json output each report section reproduces.
CLI = {
    "summary": ["summary", "--json"],
    "idle": ["idle", "--json"],
    "critical_path": ["critical-path", "--json", "--no-path"],
    "breakdown_host": ["breakdown", "--host", "--json"],
    "breakdown_device": ["breakdown", "--device", "--json"],
    "overheads": ["overheads", "--json"],
    "roofline": ["report", "--json"],
    "info": ["info", "--json"],
    # every table section: the command its catalog entry names (opgraph/catalog/entries.py)
    **{spec.key: list(spec.command) for spec in TABLE_SECTIONS},
}
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--no-first-run"]


def run(*args: object):
    r = _run_cli([str(a) for a in args])
    assert r.exception is None, r.exception
    assert r.exit_code == 0, r.stderr
    return r


def make_report(src: Path, out_dir: Path, batch: int | None) -> tuple[Path, dict]:
    """Build the graph once, write the report with the real command, and collect the CLI's
    JSON documents of the same graph."""
    g = out_dir / "g.gpickle"
    run("build", src, "-o", g)
    html = out_dir / "report.html"
    r = run("report", g, "--html", html, *(["--batch-size", batch] if batch else []))
    assert r.stderr.startswith(f"{html}: ") and "kB" in r.stderr
    docs = {}
    for key, args in CLI.items():
        extra = ["--batch-size", str(batch)] if key == "summary" and batch else []
        docs[key] = json.loads(run(*args, g, *extra).stdout)
    return html, docs


class Numbers(HTMLParser):
    """Every ``<span class="num …">`` of the page with its attributes and text, the cards'
    keys, and the embedded chart data."""

    def __init__(self) -> None:
        super().__init__()
        self.nums: list[dict] = []
        self.cards: list[str] = []
        self._cur: dict | None = None
        self._data = False
        self.data = ""

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        cls = (a.get("class") or "").split()
        if tag == "span" and "num" in cls and "na" not in cls:
            self._cur = dict(a, text="", in_card=bool(self.cards and self._card_open))
        if tag == "div" and "card" in cls:
            self.cards.append(a["data-card"])
            self._card_open = True
        if tag == "script" and a.get("id") == "opgraph-data":
            self._data = True

    _card_open = False

    def handle_endtag(self, tag):
        if tag == "span" and self._cur is not None:
            self.nums.append(self._cur)
            self._cur = None
        if tag == "section":
            self._card_open = False
        if tag == "script":
            self._data = False

    def handle_data(self, data):
        if self._cur is not None:
            self._cur["text"] += data
        if self._data:
            self.data += data


def parse(path: Path) -> Numbers:
    p = Numbers()
    p.feed(path.read_text(encoding="utf-8"))
    return p


def check_text(text: str, value, fmt: str) -> None:
    """The printed text is the value rounded (2 decimals for %, else up to ``fmt``)."""
    t = text.replace(",", "").strip()
    if isinstance(value, bool) or value is None:
        raise AssertionError(f"not a number: {value!r}")
    nd = 2 if fmt == "pct" else int(fmt)
    if isinstance(value, int) and fmt != "pct":
        assert t == str(value), (text, value)
        return
    assert math.isclose(float(t), round(float(value), nd), abs_tol=0.51 * 10 ** -nd), (text, value)


def check_numbers(path: Path, docs: dict) -> Numbers:
    page = parse(path)
    assert len(page.nums) > 40
    for n in page.nums:
        if "derived" in n["class"]:
            continue
        want = get_path(docs[n["data-src"]], n["data-path"])
        assert json.loads(n["data-value"]) == want, (n["data-src"], n["data-path"])
        check_text(n["text"], want, n["data-fmt"])
    # the derived card: CPU-induced idle as % of the GPU's span, from `opgraph idle --json`
    derived = [n for n in page.nums if "derived" in n["class"]]
    assert len(derived) == len(docs["idle"]["devices"]) >= 1
    for n in derived:
        d = docs["idle"]["devices"][int(n["data-device-index"])]
        want = 100.0 * d["cpu_induced_idle_us"] / d["span_us"]
        assert math.isclose(float(n["data-value"]), want, rel_tol=1e-12)
        check_text(n["text"], want, "pct")
    return page


def check_chart_data(page: Numbers, docs: dict) -> None:
    data = json.loads(page.data.replace("<\\/", "</"))
    for k in ("critical_path", "idle", "breakdown_host", "breakdown_device"):
        assert data[k] == docs[k], k
    assert data["roofline"]["rows"] == docs["roofline"]["rows"][:400]
    assert data["roofline"]["devices"] == docs["roofline"]["devices"]
    for t in ("t1", "t2", "t3", "t4", "t5"):
        assert data["overheads"][t] == docs["overheads"][t]


def check_table_sections(text: str, docs: dict) -> None:
    """Every table section is drawn when its document has rows, else named under "Not in
    this trace" with its reason: never silently absent."""
    from opgraph.export.html.tables import TABLE_SECTIONS, section_is_empty

    for spec in TABLE_SECTIONS:
        drawn = f'<section id="{spec.key.replace("_", "-")}">' in text
        if section_is_empty(docs[spec.key], spec):
            assert not drawn and f"<li>{spec.title}: " in text, spec.key
        else:
            assert drawn, spec.key


def check_self_contained(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    # nothing the browser could load: no src/href/url() pointing anywhere but into the page
    # (URLs as text, e.g. a device table's source, are not fetched)
    for m in re.finditer(r"""(?<![\w-])(?:src|href)\s*=\s*["']?([^"'\s>]+)""", text):
        assert m.group(1).startswith(("#", "data:")), m.group(0)
    assert not re.search(r"<script[^>]+src=", text)
    assert not re.search(r"<link[^>]+stylesheet", text)
    assert "@import" not in text and "url(http" not in text
    assert "fetch(" not in text and "XMLHttpRequest" not in text


# --------------------------------------------------------------------------- no browser needed
@pytest.fixture(scope="module")
def synth_report(tmp_path_factory):
    return make_report(SYNTH_DIR / "gpu_bound.json", tmp_path_factory.mktemp("synth"), 64)


def test_synth_numbers_and_data(synth_report):
    html, docs = synth_report
    page = check_numbers(html, docs)
    check_chart_data(page, docs)
    assert {"step_time", "gpu_busy_0", "qps", "cpu_idle_0", "cp_bound"} <= set(page.cards)
    check_table_sections(html.read_text(encoding="utf-8"), docs)


def test_synth_self_contained(synth_report):
    html, _ = synth_report
    check_self_contained(html)


def test_missing_analysis_is_left_out(tmp_path, monkeypatch):
    """A section whose analysis is not available is absent (never faked), and the page
    says so; without Graphviz the critical-path picture is left out the same way."""
    import opgraph.analysis.roofline as rl
    from opgraph.export.html.report import write_report
    from opgraph.graph.io import load_any

    def gone(*a, **k):
        raise ImportError("roofline analysis not installed")

    monkeypatch.setattr(rl, "roofline", gone)
    monkeypatch.setenv("PATH", str(tmp_path))  # no `dot`
    out = tmp_path / "r.html"
    res = write_report(load_any(str(SYNTH_DIR / "cpu_bound.json")), out)
    assert "roofline" not in res["sections"]
    assert any("roofline" in n for n in res["notes"]) and any("Graphviz" in n for n in res["notes"])
    text = out.read_text()
    assert 'id="roofline"' not in text and 'data-chart="roofline"' not in text
    assert 'data-chart="cp_svg"' not in text and "not installed" in text


def test_report_options(tmp_path):
    src = SYNTH_DIR / "gpu_bound.json"
    r = _run_cli(["report", str(src), "--batch-size", "8"])
    assert r.exit_code == 2 and "--html" in r.stderr
    r = _run_cli(["report", str(src), "--html", str(tmp_path / "r.txt")])
    assert r.exit_code == 2 and ".html" in r.stderr
    r = _run_cli(["report", str(src), "--html", str(tmp_path / "r.html"), "--json"])
    assert r.exit_code == 0 and json.loads(r.stdout)["rows"] and (tmp_path / "r.html").exists()


# --------------------------------------------------------------------------- real traces
@pytest.fixture(scope="module", params=[pytest.param(p, id=p[0].split(".")[0]) for p in REAL])
def real_report(request, tmp_path_factory):
    name, batch = request.param
    if not (KINETO_DIR / name).exists():
        pytest.skip(f"real trace not available: {KINETO_DIR / name}")
    html, docs = make_report(KINETO_DIR / name, tmp_path_factory.mktemp("real"), batch)
    return name, batch, html, docs


@requires_traces
def test_real_numbers_equal_cli_json(real_report):
    name, batch, html, docs = real_report
    page = check_numbers(html, docs)
    check_chart_data(page, docs)
    cards = set(page.cards)
    assert {"step_time", "gpu_busy_0", "cpu_idle_0", "cp_bound"} <= cards
    assert ("qps" in cards) == (batch is not None)
    check_self_contained(html)
    size = html.stat().st_size
    assert size < 1_500_000, size
    text = html.read_text()
    for sec in ("critical-path", "idle", "breakdowns", "roofline", "overheads", "health"):
        assert f'<section id="{sec}">' in text, sec
    check_table_sections(text, docs)
    if shutil.which("dot"):
        assert 'data-chart="cp_svg"' in text and "<svg" in text


# --------------------------------------------------------------------------- in a real browser
def _chromium() -> str | None:
    exe = os.environ.get("OPGRAPH_CHROMIUM")
    for c in ([exe] if exe else []) + ["/usr/bin/chromium", "/usr/bin/chromium-browser"]:
        if c and os.path.exists(c):
            return c
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def browser():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("playwright is not installed (pip install playwright; its own browser download is not needed)")
    exe = _chromium()
    if exe is None:
        pytest.skip("Chromium is not installed (apt-get install chromium)")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=exe, headless=True, args=CHROMIUM_FLAGS)
        yield b
        b.close()


def open_page(browser, path: Path):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    events: list[tuple[str, str]] = []
    page.on("console", lambda m: events.append((m.type, m.text)))
    page.on("pageerror", lambda e: events.append(("pageerror", str(e))))
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.goto(path.resolve().as_uri())
    page.wait_for_function("document.body.hasAttribute('data-charts')", timeout=30_000)
    return page, events, requests


def browser_checks(browser, path: Path, docs: dict, shot: str) -> None:
    page, events, requests = open_page(browser, path)
    try:
        assert [e for e in events if e[0] in ("error", "pageerror")] == []
        assert all(u.startswith(("file:", "data:")) for u in requests), requests
        charts = page.evaluate("""() => Array.from(document.querySelectorAll('[data-chart]')).map(el => ({
            key: el.getAttribute('data-chart'), ok: el.getAttribute('data-rendered'),
            shapes: el.querySelectorAll('svg rect, svg circle, svg path, svg polygon').length,
            w: el.querySelector('svg') ? el.querySelector('svg').getBoundingClientRect().width : 0}))""")
        assert len(charts) >= 6
        for c in charts:
            assert c["ok"] == "1" and c["shapes"] >= 1 and c["w"] > 100, c
        n = len(charts)
        assert page.evaluate("document.body.getAttribute('data-charts')") == f"{n}/{n}"
        # every category on the path and every idle cause present is drawn, in the catalog's colour
        from opgraph.time_categories import COLOURS, CROSS_RANK_CATEGORIES, IDLE_CAUSES
        legend = """(key) => Array.from(document.querySelectorAll('[data-chart="' + key + '"] .legend span')).map(
            s => [s.textContent, getComputedStyle(s.querySelector('i')).backgroundColor])"""
        rgb = lambda h: f"rgb({int(h[1:3], 16)}, {int(h[3:5], 16)}, {int(h[5:7], 16)})"   # noqa: E731
        ws = docs["critical_path"]["windows"]
        want = [c for c in CROSS_RANK_CATEGORIES if any(w["breakdown_us"].get(c, 0) > 0 for w in ws)]
        assert page.evaluate(legend, "cp_steps") == [[c, rgb(COLOURS[c])] for c in want]
        st = docs["idle"]["streams"]
        want = [c for c in IDLE_CAUSES if any(x["causes_us"][c] > 0 for x in st)]
        assert page.evaluate(legend, "idle_streams") == [[c, rgb(COLOURS[c])] for c in want]
        # the summary cards, as the browser shows them, are the JSON numbers
        cards = page.evaluate("""() => Array.from(document.querySelectorAll('#summary .num')).map(e => ({
            src: e.dataset.src, path: e.dataset.path, value: e.dataset.value, fmt: e.dataset.fmt,
            derived: e.classList.contains('derived'), text: e.textContent}))""")
        assert len(cards) >= 8
        for c in cards:
            if c["derived"]:
                continue
            want = get_path(docs[c["src"]], c["path"])
            assert json.loads(c["value"]) == want
            check_text(c["text"], want, c["fmt"])
        # hover shows a value
        bar = page.locator('[data-chart="idle_blame"] svg rect').first
        bar.hover()
        tip = page.locator("#tip")
        assert tip.is_visible() and "µs" in tip.inner_text()
        # drag a box to zoom, double-click to reset (the per-stream idle chart)
        el = page.locator('[data-chart="idle_streams"] svg')
        box = el.bounding_box()
        labels = lambda: page.locator('[data-chart="idle_streams"] svg .axis text').count()  # noqa: E731
        before = labels()
        if len(docs["idle"]["streams"]) > 1:
            page.mouse.move(box["x"] + 70, box["y"] + 20)
            page.mouse.down()
            page.mouse.move(box["x"] + 90, box["y"] + box["height"] - 60, steps=4)
            page.mouse.up()
            assert labels() < before
            page.locator('[data-chart="idle_streams"] svg').dblclick(position={"x": 200, "y": 40})
            assert labels() == before
        # icicle: click an entry to zoom into it
        ic = page.locator('[data-chart="icicle_host"] svg rect')
        k0 = ic.count()
        ic.nth(2).click()
        assert page.locator('[data-chart="icicle_host"] svg rect').count() <= k0
        assert [e for e in events if e[0] in ("error", "pageerror")] == []
        out = os.environ.get("OPGRAPH_SCREENSHOTS")
        if out:
            page.mouse.move(0, 0)
            page.evaluate("window.scrollTo(0, 0)")
            page.screenshot(path=str(Path(out) / shot), full_page=False)
    finally:
        page.close()


def test_browser_synth(browser, synth_report, tmp_path):
    html, docs = synth_report
    browser_checks(browser, html, docs, "report_synth.png")


@requires_traces
def test_browser_real(browser, real_report):
    name, _, html, docs = real_report
    browser_checks(browser, html, docs, f"report_{name.split('.')[0]}.png")


@pytest.mark.parametrize("name", ["gpu_bound.json", "hta_nccl_data.json.gz", "param_dlrm_8gpu_rank3.pt.trace.json.gz"])
def test_report_data_on_columns_equals_networkx(name: str) -> None:
    """The report's data from the column model equals the networkx graph's, section by
    section and note by note, and no networkx view is made for it."""
    from opgraph.export.html.report import report_data
    from opgraph.graph.io import load_any

    path = SYNTH_DIR / name if name.endswith(".json") else KINETO_DIR / name
    if not path.exists():
        pytest.skip(f"{path} not available")
    notes_nx: list[str] = []
    notes_cols: list[str] = []
    want = report_data(load_any(path), notes=notes_nx)
    T = load_any(path)
    got = report_data(T, notes=notes_cols)
    assert T._nx is None
    assert notes_cols == notes_nx
    assert json.dumps(got, sort_keys=True, default=str) == json.dumps(want, sort_keys=True, default=str)
