"""Issue 21, items 2 and 3: one definition of a system's score (its corpus score, as `score`'s
table and the report print it) at `correlate --level system`, and dialogue-level points per
(system, dialogue) stated in the output and present in the report."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.stats import pearsonr

import threebots


@pytest.fixture(scope="module")
def scored(tmp_path_factory):
    from dialeval.cli.main import main

    tmp = tmp_path_factory.mktemp("syslevel")
    data = threebots.write(tmp / "bots.jsonl")
    plain = tmp / "scores.jsonl"
    assert main(["score", str(data), "--metrics", "bleu4,meteor,rouge_l", "-o", str(plain)]) == 0
    return data, plain


def _correlate(args, capsys):
    from dialeval.cli.main import main

    capsys.readouterr()
    assert main(["correlate"] + args + ["--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_system_level_is_the_score_tables_and_the_reports(scored, capsys):
    from dialeval.meta.evaluate import read_scores
    from dialeval.report.html import build_report
    from dialeval.scoring import score

    data, plain = scored
    out = _correlate([str(plain), "--human", "overall", "--level", "system", "--n-boot", "100"], capsys)
    assert out["system_level"].startswith("system level: each system's corpus score")
    points = out["system_points"]
    table = score(threebots.records(), ["bleu4", "meteor", "rouge_l"]).systems   # score's table
    rows = read_scores(plain)
    report = build_report(rows, n_boot=20, n_resamples=20)
    names = [m["name"] for m in report["measures"]]
    for row in report["system_rows"]:
        s = row["system"]
        for m in ("bleu4", "meteor", "rouge_l"):
            assert points[s][m] == pytest.approx(table[s][m], abs=1e-12)
            assert points[s][m] == pytest.approx(row["cells"][names.index(m)]["score"], abs=1e-12)
        assert points[s]["human"] == pytest.approx(row["cells"][names.index("human:overall")]["score"])
    human = {s: np.mean(threebots.RATINGS[s]) for s in threebots.RATINGS}
    for c in out["correlations"]:
        m = c["metric"]
        rep = next(r for r in report["correlations"] if r["level"] == "system" and
                   r["metric"] == m and r["method"] == c["method"])
        assert c["r"] == pytest.approx(rep["r"], abs=1e-12) and c["n"] == 3
        if c["method"] == "pearson":
            want = pearsonr([table[s][m] for s in human], list(human.values())).statistic
            assert c["r"] == pytest.approx(want, abs=1e-12)
    # a mean of sentence BLEU is another number (the old definition): the test can tell them apart
    sentence_mean = {s: np.mean([r["scores"]["bleu4"] for r in rows if r["system"] == s]) for s in human}
    assert abs(sentence_mean["bot_a"] - table["bot_a"]["bleu4"]) > 0.05


def test_system_level_ci_and_comparison_resample_corpus_scores(scored, capsys):
    _, plain = scored
    out = _correlate([str(plain), "--human", "overall", "--level", "system", "--n-boot", "200",
                      "--method", "pearson"], capsys)
    again = _correlate([str(plain), "--human", "overall", "--level", "system", "--n-boot", "200",
                        "--method", "pearson"], capsys)
    assert out["correlations"] == again["correlations"]
    for c in out["correlations"]:
        assert c["ci_low"] <= c["r"] + 1e-12 and c["ci_high"] <= 1 + 1e-12
    assert {c["level"] for c in out["comparisons"]} == {"system"}
    assert all(c["n"] == 3 for c in out["comparisons"])


def test_dialogue_level_is_per_system_and_dialogue(scored, capsys, tmp_path):
    from dialeval.cli.main import main
    from dialeval.meta.evaluate import read_scores
    from dialeval.report.html import build_report

    _, plain = scored
    out = _correlate([str(plain), "--human", "overall", "--level", "dialogue", "--n-boot", "0",
                      "--method", "pearson"], capsys)
    assert "one point per (system, dialogue_id) pair" in out["dialogue_level"]
    assert "5 of 5 dialogue ids are answered by several systems" in out["dialogue_level"]
    rows = read_scores(plain)
    groups: dict = {}
    for r in rows:
        key = (r["system"], r["meta"]["dialogue_id"])
        groups.setdefault(key, []).append((r["scores"]["bleu4"], r["ratings"]["overall"][0]))
    x = [np.mean([a for a, _ in g]) for g in groups.values()]
    y = [np.mean([b for _, b in g]) for g in groups.values()]
    c = next(c for c in out["correlations"] if c["metric"] == "bleu4")
    assert c["n"] == 15 and c["r"] == pytest.approx(pearsonr(x, y).statistic, abs=1e-12)
    # averaging across systems (the old rule) gives 5 points and another r
    report = build_report(rows, n_boot=20, n_resamples=20)
    assert "dialogue" in report["corr"]["levels"]
    rep = next(r for r in report["correlations"] if r["level"] == "dialogue"
               and r["metric"] == "bleu4" and r["method"] == "pearson")
    assert rep["n"] == 15 and rep["r"] == pytest.approx(c["r"], abs=1e-12)
    capsys.readouterr()
    assert main(["correlate", str(plain), "--human", "overall", "--level", "dialogue",
                 "--n-boot", "0"]) == 0
    assert "systems sharing a dialogue_id are never averaged together" in capsys.readouterr().out
