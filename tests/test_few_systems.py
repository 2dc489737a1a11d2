"""Issue 30, item 3: system-level statistics over a handful of systems are descriptive only.

With n systems there are n! rankings, so no rank test goes below p = 2/n! (0.33 at 3 systems,
0.083 at 4): below `MIN_SYSTEMS` (5) systems `correlate`, `evaluate` and the HTML report print
the r with no p, no CI and no mark, and say why. From 5 systems on everything prints as before.
Hand-made score rows (a `scores` dict and `ratings`), no model-based metric.
"""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest

import threebots
from dialeval.cli import main

CAVEAT = "only 3 systems: descriptive only, no test can reach significance"


def _rows(n_systems: int, k: int = 8, seed: int = 0) -> list[dict]:
    """`k` items per system; `good` follows the ratings closely, `noise` does not."""
    rng = np.random.default_rng(seed)
    out = []
    for s in range(n_systems):
        level = s / max(n_systems - 1, 1)
        for i in range(k):
            q = level + rng.normal(scale=0.05)
            out.append({"id": f"s{s}-{i}", "system": f"sys{s:02d}", "item": f"i{i}",
                        "scores": {"good": float(q + rng.normal(scale=0.02)),
                                   "noise": float(rng.uniform())},
                        "ratings": {"overall": [1 + 4 * q, 1 + 4 * q + rng.normal(scale=0.1)]}})
    return out


def _write(tmp_path, n_systems: int):
    path = tmp_path / f"sys{n_systems}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in _rows(n_systems)))
    return path


def _correlate(path, capsys, *extra):
    capsys.readouterr()
    assert main(["correlate", str(path), "--human", "overall", "--level", "system",
                 "--n-boot", "100", *extra]) == 0
    return capsys.readouterr()


def _table_rows(out: str) -> list[list[str]]:
    return [line.split() for line in out.splitlines() if " system " in line]


def test_threshold_and_reason():
    from dialeval.meta.system_level import MIN_SYSTEMS, descriptive_reason

    assert MIN_SYSTEMS == 5
    assert 2 / math.factorial(MIN_SYSTEMS - 1) > 0.05 > 2 / math.factorial(MIN_SYSTEMS)
    assert CAVEAT in descriptive_reason(3) and "2/3! = 0.33" in descriptive_reason(3)
    assert "2/4! = 0.083" in descriptive_reason(4)
    assert descriptive_reason(5) is None and descriptive_reason(10) is None


def test_rank_p_never_below_exact_bound_and_never_prints_zero():
    from dialeval.meta.correlation import correlation
    from dialeval.report.html import _fmt_p
    from dialeval.report.tables import fmt_p

    # scipy's Spearman gives p = 0 for a perfect ranking; the exact permutation p is 2/n!
    assert correlation([1, 2, 3], [4, 5, 6], "spearman")[1] == pytest.approx(1 / 3)
    assert correlation([1, 2, 3, 4, 5], [2, 4, 6, 8, 10], "spearman")[1] == pytest.approx(2 / 120)
    assert correlation([1, 2, 3], [4, 5, 6], "kendall")[1] == pytest.approx(1 / 3)
    for fmt in (fmt_p, _fmt_p):
        assert fmt(0.0) == "< 2.2e-16" and fmt(1e-300) == "< 2.2e-16"
        assert fmt(0.5) == "0.5000" and fmt(float("nan") if fmt is fmt_p else None) == "n/a"
    assert fmt_p(3.1e-7) == "3.10e-07"


def test_three_systems_correlate_is_descriptive(tmp_path, capsys):
    path = _write(tmp_path, 3)
    got = _correlate(path, capsys)
    rows = _table_rows(got.out)
    corr = [r for r in rows if len(r) == 8]          # metric quality level method r p CI n
    assert len(corr) == 6
    for r in corr:
        assert r[5] == "n/a" and r[6] == "n/a" and r[7] == "3"     # r printed, p and CI not
        assert float(r[4]) == float(r[4])
    williams = [r for r in rows if len(r) > 8]
    assert williams and all(r[-4:] == ["n/a"] * 4 for r in williams)  # no test, no bootstrap p
    assert "*" not in got.out and "e+00" not in got.out and "[1.0000, 1.0000]" not in got.out
    assert got.err.count(CAVEAT) == 1                # one note, on stderr
    assert CAVEAT not in got.out

    data = json.loads(_correlate(path, capsys, "--json").out)
    assert len(data["caveats"]) == 1 and CAVEAT in data["caveats"][0]
    for row in data["correlations"] + data["comparisons"]:
        assert row["descriptive_only"] is True and CAVEAT in row["descriptive_reason"]
    # the numbers stay for JSON readers; the rank p is the exact bound, not scipy's 0
    sp = next(c for c in data["correlations"] if c["metric"] == "good" and c["method"] == "spearman")
    assert sp["r"] == 1.0 and sp["p"] == pytest.approx(1 / 3)


def test_ten_systems_test_and_mark_as_before(tmp_path, capsys):
    path = _write(tmp_path, 10)
    got = _correlate(path, capsys)
    assert "descriptive only" not in got.err
    corr = {(r[0], r[3]): r for r in _table_rows(got.out) if len(r) == 9}   # CI has 2 tokens
    assert corr[("good", "pearson")][5] != "n/a" and float(corr[("good", "pearson")][5]) < 1e-6
    assert corr[("good", "spearman")][5] == "5.51e-07"   # 2/10!, not scipy's 0
    assert corr[("good", "pearson")][6].startswith("[")
    data = json.loads(_correlate(path, capsys, "--json").out)
    assert "caveats" not in data
    assert all(r["descriptive_only"] is False for r in data["correlations"] + data["comparisons"])
    comp = data["comparisons"][0]
    assert comp["metric_a"] == "good" and comp["williams_p"] < 0.05


def _system_level_html(html: str) -> list[str]:
    return [row for row in re.findall(r"<tr><td>overall</td><td>system</td>.*?</tr>", html, re.S)]


def test_report_three_systems_has_caveat_and_no_marks(tmp_path, capsys):
    from dialeval.report.html import build_report, render_html

    report = build_report(_rows(3), n_boot=50, n_resamples=50)
    system = [c for c in report["correlations"] if c["level"] == "system"]
    assert system and all(not c["top"] and c["p"] is None and c["low"] is None for c in system)
    assert all(c["r"] is not None for c in system)
    html = render_html(report)
    assert 'id="system-level-caveat"' in html and CAVEAT in html
    caveat_at = html.index('id="system-level-caveat"')
    assert html.index('id="correlation"') < caveat_at < html.index('id="table-correlation"')
    rows = _system_level_html(html)
    assert len(rows) == 6 and not any("▲" in r for r in rows)
    assert "e+00" not in html

    path = _write(tmp_path, 3)
    out = tmp_path / "report.html"
    capsys.readouterr()
    assert main(["report", str(path), "-o", str(out), "--n-boot", "50", "--n-resamples", "50"]) == 0
    assert CAVEAT in out.read_text(encoding="utf-8")
    assert capsys.readouterr().err.count(CAVEAT) == 1         # and a note on stderr


def test_report_ten_systems_marks_the_strong_metric():
    from dialeval.report.html import build_report, render_html

    report = build_report(_rows(10), n_boot=50, n_resamples=50)
    assert report["corr"]["caveats"] == []
    got = {(c["method"], c["metric"]): c for c in report["correlations"] if c["level"] == "system"}
    assert got[("pearson", "good")]["top"] and got[("pearson", "good")]["p"] < 1e-6
    assert not got[("pearson", "noise")]["top"] and got[("pearson", "noise")]["beaten_by"] == ["good"]
    html = render_html(report)
    assert "system-level-caveat" not in html
    rows = _system_level_html(html)
    assert any("<td>good</td>" in r and "▲" in r for r in rows)
    assert not any("<td>noise</td>" in r and "▲" in r for r in rows)


def test_report_compare_marks_need_enough_paired_items():
    """bot_c pairs with the baseline on 2 items by context: p = 1/(B+1) but no mark, in the
    report's systems table as in `compare`; bot_a (15 paired items) keeps its mark."""
    from dialeval.meta.systems import min_attainable_p
    from dialeval.report.html import build_report

    rows = [{**r, "scores": {"len": float(len(r["response"].split()))}}
            for r in threebots.records(keys=False)]
    report = build_report(rows, baseline="bot_b", pair_by="context", n_boot=20, n_resamples=200)
    names = [m["name"] for m in report["measures"]]
    cells = {row["system"]: row["cells"][names.index("human:overall")]
             for row in report["system_rows"]}
    assert cells["bot_c"]["n_paired"] == 2 and cells["bot_c"]["p"] < 0.05
    assert min_attainable_p(2, 200) == 0.5 and cells["bot_c"]["mark"] == ""
    assert cells["bot_a"]["n_paired"] == 15 and cells["bot_a"]["mark"] == "**"
