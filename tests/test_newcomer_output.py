"""Output a new user found stale or noisy (issue 55): repeated few-points warnings, a repr that
printed every sample, `score(df)` without metrics, a 207-row correlation list, and a
disagreement list ranked on digits the report does not print."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from dialeval.cli import main
from dialeval.cli.main import DEFAULT_METRICS


def rated_rows(path, systems="ABCD", items=6):
    with open(path, "w", encoding="utf-8") as handle:
        for s in systems:
            for i in range(items):
                handle.write(json.dumps({
                    "id": str(i), "system": s, "response": f"the cat sat on mat {i} {s * (i % 3)}",
                    "references": [f"the cat sat on the mat {i}"],
                    "ratings": {"overall": [(i * 7 + ord(s)) % 5 + 1, (i * 3 + ord(s)) % 5 + 1]},
                    "meta": {"dialogue_id": f"d{i // 2}"}}) + "\n")
    return path


def scored(tmp_path, capsys, metrics="bleu1,bleu2,rouge_l,cider_d,distinct1", **kw):
    data = rated_rows(tmp_path / "in.jsonl", **kw)
    out = tmp_path / "scores.jsonl"
    assert main(["score", str(data), "--metrics", metrics, "-o", str(out), "--with-stats"]) == 0
    capsys.readouterr()
    return out


def test_correlate_all_levels_on_four_systems_says_it_once(tmp_path, capsys):
    scores = scored(tmp_path, capsys)
    assert main(["correlate", str(scores), "--human", "overall", "--level", "all", "--n-boot", "20"]) == 0
    err = capsys.readouterr().err.splitlines()
    # the note on too few systems says why the system level is descriptive; no line per metric
    assert not [line for line in err if "over only" in line], err
    assert sum("system level: only 4 systems: descriptive only" in line for line in err) == 1


def test_few_points_warnings_are_grouped(tmp_path, capsys):
    scores = scored(tmp_path, capsys, systems="A", items=3)
    assert main(["correlate", str(scores), "--human", "overall", "--n-boot", "20"]) == 0
    warned = [line for line in capsys.readouterr().err.splitlines() if "over only" in line]
    assert warned == ["dialeval: warning: turn-level correlation over only 3 points (5 metrics; overall)"]


def test_few_points_lists_a_few_metrics_by_name(tmp_path, capsys):
    scores = scored(tmp_path, capsys, metrics="bleu1,rouge_l", systems="A", items=3)
    assert main(["correlate", str(scores), "--human", "overall", "--n-boot", "20"]) == 0
    warned = [line for line in capsys.readouterr().err.splitlines() if "over only" in line]
    assert warned == ["dialeval: warning: turn-level correlation over only 3 points (bleu1, rouge_l; overall)"]


def test_score_result_repr_is_a_summary():
    import dialeval

    samples = [{"system": "ab"[i % 2], "response": f"reply number {i} " * 20, "references": ["a reply"]}
               for i in range(200)]
    result = dialeval.score(samples, ["bleu2"])
    text = repr(result)
    assert text.startswith("<ScoreResult: 200 samples, 2 systems ['a', 'b']; corpus bleu2=")
    assert f"bleu2={result.corpus['bleu2']:.4f}" in text
    assert "reply number" not in text and len(text) < 300


def test_score_without_metrics_uses_the_command_lines_default(tmp_path, capsys):
    import dialeval

    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"system": ["a", "a", "b", "b"], "response": ["the cat sat", "a dog", "the cat", "dogs"],
                          "reference": ["the cat sat down", "a dog ran", "the cat sat", "a dog"]})
    result = dialeval.score(frame)
    assert result.metrics == DEFAULT_METRICS.split(",")
    again = dialeval.score(frame, DEFAULT_METRICS)   # the comma-separated string `--metrics` takes
    assert again.corpus == result.corpus
    path = tmp_path / "in.csv"
    frame.to_csv(path, index=False)
    assert main(["score", str(path), "--json"]) == 0
    cli = json.loads(capsys.readouterr().out)
    for m in result.metrics:
        assert cli["metrics"][m]["corpus"] == pytest.approx(result.corpus[m], abs=1e-12)


def test_correlation_table_is_grouped_by_metric(tmp_path, capsys):
    from dialeval.meta.evaluate import read_scores
    from dialeval.report.html import build_report, correlation_grid

    scores = scored(tmp_path, capsys, systems="ABCDE")
    report = build_report(read_scores(str(scores)), n_boot=20, n_resamples=20)
    flat = report["correlations"]
    grid = correlation_grid(flat)
    levels = list(dict.fromkeys(c["level"] for c in flat))
    methods = list(dict.fromkeys(c["method"] for c in flat))
    assert [(c["level"], c["method"]) for c in grid["columns"]] == [(lv, m) for lv in levels for m in methods]
    metrics = list(dict.fromkeys(c["metric"] for c in flat))
    assert [g["metric"] for g in grid["rows"]] == metrics          # one quality: a row per metric
    assert len(flat) == len(metrics) * len(grid["columns"])       # 5 metrics x 3 levels x 3 methods
    placed = [cell for g in grid["rows"] for cell in g["cells"] if cell is not None]
    assert sorted(map(id, placed)) == sorted(map(id, flat))        # every row once, none invented
    for g in grid["rows"]:
        for col, cell in zip(grid["columns"], g["cells"]):
            assert (cell["metric"], cell["level"], cell["method"]) == (g["metric"], col["level"], col["method"])
    from dialeval.report.html import render_html

    page = render_html(report)
    table = page[page.index('id="table-correlation"'):page.index("</table>", page.index('id="table-correlation"'))]
    assert table.count("<tr>") == 1 + len(metrics)                  # header + a row per metric
    assert 'id="table-correlation-rows"' in page                     # the flat rows, folded


def test_disagreements_rank_the_metric_as_printed():
    """Smoothed sentence-BLEU floors (all printed 0.0000) are one tie, not five ranks."""
    from dialeval.report.analysis import _disagreements

    floors = [1e-9, 3e-7, 2e-8, 4e-6, 5e-10]
    metric = np.array(floors + [0.25, 0.5, 0.75])
    human = np.array([5.0, 4.0, 3.0, 2.0, 1.0, 2.0, 3.0, 4.0])
    rows = [{"id": str(i), "system": "a", "response": "x"} for i in range(len(metric))]
    items = _disagreements(rows, metric, human, "overall", k=len(metric))
    rank = {item["id"]: item["metric_rank"] for item in items}
    assert len({rank[str(i)] for i in range(5)}) == 1                # one rank for the printed ties
    # the tie's average rank: positions 0..4 of 7 steps, mean 2/7
    assert rank["0"] == pytest.approx(2 / 7)
    top = items[0]
    # the largest gap is now a real disagreement: human rank 1.0 for a row at the tie
    assert top["id"] == "0" and math.isclose(top["human_rank"], 1.0)
