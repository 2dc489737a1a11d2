"""The HTML report of USR-TopicalChat (four cheap metrics, `overall`), rendered and then opened
in headless Chromium through the DevTools protocol: it must load with no console error and no
network request, show something, sort its tables on a click, and have every section."""

from __future__ import annotations

import re

import pytest

from conftest import DATA, need

METRICS = ["bleu2", "bleu4", "rouge_l", "cider_d"]


@pytest.fixture(scope="module")
def usr_report(tmp_path_factory):
    from dialeval.data.datasets import load_dataset
    from dialeval.meta.systems import score_rows
    from dialeval.report.html import build_report, render_html
    from dialeval.scoring import score

    need(DATA / "usr" / "tc_usr_data.json")
    ds = load_dataset("usr-tc", DATA / "usr", exclude_systems=("Original Ground Truth",))
    result = score(ds.samples, METRICS)
    rows = score_rows(result)

    def build():
        return build_report(rows, qualities=["overall"], signatures=result.signatures,
                            inputs={"tc_usr_data.json": "0" * 64}, title="usr-tc test report",
                            n_boot=200, n_resamples=200)

    report = build()
    html = render_html(report)
    path = tmp_path_factory.mktemp("report") / "usr-tc.html"
    path.write_text(html, encoding="utf-8")
    return {"report": report, "html": html, "path": path, "rebuild": build, "result": result}


def test_report_is_deterministic_and_self_contained(usr_report):
    from dialeval.report.html import SECTIONS, render_html

    html = usr_report["html"]
    assert render_html(usr_report["rebuild"]()) == html          # same input, same bytes
    for section in SECTIONS:
        assert f'<section id="{section}">' in html
    # nothing to fetch: no external src/href, and a CSP that forbids every network source
    assert not re.search(r"""(?:src|href)\s*=\s*["'](?:https?:|//)""", html)
    assert "default-src 'none'" in html
    assert "<script src" not in html and "<link" not in html
    # the signatures of every metric and the baseline/test settings are printed
    for m in METRICS:
        assert usr_report["result"].signatures[m] in html
    assert "compare|test:bs|n:200|seed:12345|ci:95" in html


def test_report_numbers_come_from_the_library(usr_report):
    """The system table's bleu4 cell for each system is its corpus BLEU-4 from `score`."""
    report, result = usr_report["report"], usr_report["result"]
    column = [m["name"] for m in report["measures"]].index("bleu4")
    for row in report["system_rows"]:
        assert row["cells"][column]["score"] == pytest.approx(result.systems[row["system"]]["bleu4"])
        low, high = row["cells"][column]["low"], row["cells"][column]["high"]
        assert low <= row["cells"][column]["score"] <= high
    # five systems rated at turn and system level, three methods, four metrics
    levels = {(c["level"], c["method"]) for c in report["correlations"]}
    assert ("turn", "pearson") in levels and ("system", "kendall") in levels
    assert sum(1 for f in report["scatter"] if f["level"] == "system") == len(METRICS)
    assert report["agreement"] and report["agreement"][0]["raters"] == 3


@pytest.mark.slow
def test_report_opens_in_chromium(usr_report, tmp_path):
    from chromium_cdp import Browser, find_chromium

    if find_chromium() is None:
        pytest.skip("chromium not installed (Debian package `chromium`; install.sh installs it)")
    from PIL import Image
    import io

    url = usr_report["path"].as_uri()
    with Browser(timeout=60) as browser:
        page = browser.open(url)
        assert page.console_errors() == []
        external = [u for u in page.requests() if u != url and not u.startswith("data:")]
        assert external == []
        png = page.screenshot()
        sections = page.evaluate(
            "Array.from(document.querySelectorAll('section')).map(s => [s.id, "
            "s.querySelectorAll('table, svg, .sample').length])")
        # sort the systems table by its bleu4 column: ascending, then descending
        read = ("(() => { const t = document.getElementById('table-systems');"
                " const i = Array.from(t.tHead.rows[0].cells).findIndex(c => c.textContent === 'bleu4');"
                " return Array.from(t.tBodies[0].rows).map(r => parseFloat(r.cells[i].dataset.sort)); })()")
        click = ("(() => { const t = document.getElementById('table-systems');"
                 " Array.from(t.tHead.rows[0].cells).find(c => c.textContent === 'bleu4').click();"
                 " return true; })()")
        before = page.evaluate(read)
        page.evaluate(click)
        ascending = page.evaluate(read)
        page.evaluate(click)
        descending = page.evaluate(read)
        # a text column too: the correlation table (a row per metric) by metric name
        names = page.evaluate(
            "(() => { const t = document.getElementById('table-correlation');"
            " const i = Array.from(t.tHead.rows[0].cells).findIndex(c => c.textContent === 'metric');"
            " t.tHead.rows[0].cells[i].click();"
            " return Array.from(t.tBodies[0].rows).map(r => r.cells[i].textContent); })()")
        assert page.console_errors() == []
    assert ascending == sorted(before) and descending == sorted(before, reverse=True)
    assert names == sorted(names)
    assert {s for s, _ in sections} == {"run", "systems", "correlation", "heatmap", "scatter",
                                        "agreement", "disagreement"}
    assert all(count > 0 for _, count in sections), sections
    image = Image.open(io.BytesIO(png)).convert("RGB")
    assert image.size == (1280, 1600)
    colours = image.getcolors(maxcolors=1 << 20)
    non_white = sum(n for n, c in colours if c != (255, 255, 255))
    assert len(colours) > 20 and non_white > 0.02 * image.size[0] * image.size[1]
