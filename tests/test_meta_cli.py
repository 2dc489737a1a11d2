"""The meta-evaluation commands end to end: score -> correlate, evaluate, agreement, datasets."""

from __future__ import annotations

import json

import numpy as np
import pytest

from conftest import DATA, need
from dialeval.cli import main


def _scores_file(tmp_path, n=40, seed=0):
    """A `dialeval score -o`-shaped file whose metrics relate to the ratings by construction."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        quality = rng.normal()
        ratings = [int(np.clip(round(3 + quality + rng.normal(scale=0.5)), 1, 5)) for _ in range(3)]
        rows.append({"id": str(i), "system": f"s{i % 4}",
                     "scores": {"good": quality + rng.normal(scale=0.3),
                                "noise": rng.normal(), "missing": None if i == 0 else rng.normal()},
                     "ratings": {"overall": ratings},
                     "meta": {"dialogue_id": f"d{i // 4}"}})
    path = tmp_path / "scores.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path, rows


def test_correlate_json_matches_library(tmp_path, capsys):
    from dialeval.meta.correlation import correlation

    path, rows = _scores_file(tmp_path)
    assert main(["correlate", str(path), "--human", "overall", "--json", "--n-boot", "200"]) == 0
    out = json.loads(capsys.readouterr().out)
    human = [np.mean(r["ratings"]["overall"]) for r in rows]
    good = [r["scores"]["good"] for r in rows]
    row = next(c for c in out["correlations"] if c["metric"] == "good" and c["method"] == "spearman")
    assert row["r"] == pytest.approx(correlation(good, human, "spearman")[0])
    assert row["ci_low"] < row["r"] < row["ci_high"] and row["n"] == 40
    missing = next(c for c in out["correlations"] if c["metric"] == "missing")
    assert missing["n"] == 39  # the null score is left out
    comp = next(c for c in out["comparisons"] if {c["metric_a"], c["metric_b"]} == {"good", "noise"})
    assert comp["metric_a"] == "good" and comp["williams_p"] < 0.01 and comp["bootstrap_p"] < 0.01


def test_correlate_levels_table_and_plots(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    path, _ = _scores_file(tmp_path)
    plots = tmp_path / "plots"
    assert main(["correlate", str(path), "--human", "overall", "--level", "all", "--n-boot", "50",
                 "--plot", str(plots), "--metrics", "good,noise"]) == 0
    captured = capsys.readouterr()
    assert "dialogue" in captured.out and "system" in captured.out
    # 4 systems: said once, by the note on too few systems (not a few-points line per metric)
    assert "system level: only 4 systems" in captured.err and "over only" not in captured.err
    pngs = sorted(p.name for p in plots.iterdir())
    # turn-level scatters; dialogue and system levels draw one point per dialogue / system
    assert pngs == ["dialogue_good_overall.png", "dialogue_noise_overall.png",
                    "heatmap_metrics.png", "scatter_good_overall.png", "scatter_noise_overall.png",
                    "system_good_overall.png", "system_noise_overall.png"]
    assert all((plots / p).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in pngs)


def test_correlate_bad_input(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"scores": {"a": 1}, "ratings": {"overall": [1]}}\n{"id": 2}\n')
    assert main(["correlate", str(bad), "--human", "overall"]) == 2
    assert "bad.jsonl:2: field 'scores'" in capsys.readouterr().err
    path, _ = _scores_file(tmp_path)
    assert main(["correlate", str(path), "--human", "fluency"]) == 2
    assert "qualities present: overall" in capsys.readouterr().err


def test_score_then_correlate(tmp_path, capsys):
    data = tmp_path / "in.jsonl"
    rng = np.random.default_rng(1)
    words = "the a cat dog sat on mat rug ran fast slow big".split()
    lines = []
    for i in range(30):
        ref = " ".join(rng.choice(words, 6))
        hyp = ref if i % 3 == 0 else " ".join(rng.choice(words, 6))
        lines.append(json.dumps({"id": str(i), "response": hyp, "references": [ref],
                                 "ratings": {"overall": [5, 4] if i % 3 == 0 else [1, 2]}}))
    data.write_text("\n".join(lines) + "\n")
    out = tmp_path / "scores.jsonl"
    assert main(["score", str(data), "--metrics", "bleu2,rouge_l", "-o", str(out)]) == 0
    capsys.readouterr()
    assert main(["correlate", str(out), "--human", "overall", "--json", "--n-boot", "0"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert all(c["r"] > 0.8 for c in res["correlations"] if c["method"] == "pearson")


def test_agreement_and_evaluate_on_usr(capsys):
    path = need(DATA / "usr")
    assert main(["agreement", "usr-pc", str(path), "--json", "--n-rep", "10"]) == 0
    rows = json.loads(capsys.readouterr().out)["agreement"]
    overall = next(r for r in rows if r["quality"] == "overall")
    assert overall["items"] == 300 and overall["raters"] == 3
    assert 0 < overall["split_half"] < 1 and overall["loo_mean"] <= overall["loo_max"]
    assert main(["evaluate", "usr-pc", str(path), "--metrics", "bleu2", "--qualities", "overall",
                 "--exclude-system", "Original Ground Truth", "--json", "--n-boot", "100"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert {c["method"] for c in res["correlations"]} == {"pearson", "spearman", "kendall"}
    assert all(c["n"] == 240 for c in res["correlations"])


def test_datasets_command(capsys):
    assert main(["datasets", "--json"]) == 0
    names = {d["name"] for d in json.loads(capsys.readouterr().out)}
    assert {"dstc6", "usr-tc", "fed-turn", "grade-convai2", "gupta", "dstc9"} <= names


def test_evaluate_compare_uses_the_first_method(capsys):
    """`evaluate --compare` without --compare-method compares with the first --method, as
    `correlate` does (it failed with "unknown correlation None")."""
    path = need(DATA / "usr")
    assert main(["evaluate", "usr-pc", str(path), "--metrics", "bleu2,rouge_l", "--qualities", "overall",
                 "--method", "spearman", "--compare", "--level", "turn", "--json", "--n-boot", "50"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["comparisons"] and all(c["method"] == "spearman" for c in res["comparisons"])
