"""System comparison: corpus scores recomputed on resamples, sacreBLEU's paired tests, CLI."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dialeval.errors import DialevalError
from dialeval.meta import systems as C

REFS = [["the cat sat on the mat", "a cat was on the mat"], ["i like green tea a lot", "green tea is nice"],
        ["we will go to the park today", "let us go to the park"], ["it is raining again", "rain again today"],
        ["my phone is broken", "the phone does not work"], ["see you tomorrow then", "see you tomorrow"],
        ["that movie was great fun", "the film was fun"], ["dinner is ready now", "come eat dinner"]]
HYPS = {"A": ["the cat sat on a mat", "i like tea", "we go to the park", "it is raining",
              "my phone broke", "see you", "the movie was fun", "dinner is ready"],
        "B": ["a cat on the mat", "green tea is nice a lot", "go to park today", "rain rain",
              "phone is broken", "see you tomorrow then", "movie great", "come eat"]}


def records():
    return [{"id": f"{s}-{i}", "system": s, "response": h, "references": REFS[i],
             "context": [f"turn {i}"], "ratings": {"overall": [i % 3 + (s == "B"), (i + 1) % 3]}}
            for s, hyps in HYPS.items() for i, h in enumerate(hyps)]


@pytest.fixture(scope="module")
def scored():
    from dialeval.scoring import score

    result = score(records(), ["bleu4", "rouge_l"])
    return result, C.score_rows(result)


def test_corpus_bleu_on_a_resample_equals_scoring_the_resampled_set(scored):
    """The resampled corpus BLEU comes from summed statistics: it equals BLEU-4 of the
    resampled samples scored from scratch (a mean of sentence BLEU would not)."""
    from dialeval.scoring import score

    result, rows = scored
    measures = C.measures_from_rows(rows)
    assert measures["bleu4"].kind == "corpus-stats" and measures["rouge_l"].kind == "mean"
    idx = np.arange(8)                       # system A's rows
    counts = C.resample_counts(8, 5, seed=3)
    got = C.resampled_scores(measures["bleu4"], idx, counts)
    for r in range(5):
        picked = [rec for rec, k in zip(records()[:8], counts[r]) for _ in range(int(k))]
        want = score(picked, ["bleu4"]).corpus["bleu4"]
        assert got[r] == pytest.approx(want, rel=1e-12)
        sentence_mean = np.mean([result.sentence["bleu4"][i] for i in np.repeat(idx, counts[r].astype(int))])
        assert abs(got[r] - sentence_mean) > 1e-6
    rouge = C.resampled_scores(measures["rouge_l"], idx, counts)
    assert rouge[0] == pytest.approx(np.average(result.sentence["rouge_l"][:8], weights=counts[0]))


def test_resample_counts_are_sacrebleus_index_draw():
    rng = np.random.default_rng(12345)
    idxs = rng.choice(7, size=(4, 7), replace=True)
    want = np.stack([np.bincount(row, minlength=7) for row in idxs])
    assert np.array_equal(C.resample_counts(7, 4, 12345), want)


def test_p_values_by_hand():
    # (#{sample > observed} + 1) / (n + 1)
    assert C.p_value(np.array([0.1, 0.5, -0.2, 0.3]), 0.2) == pytest.approx(3 / 5)
    # paired bootstrap: |diffs| = [1, 0, 2], centred [0, -1, 1]; one exceeds 0.5 -> 2/4
    assert C.paired_bootstrap_p(np.array([1.0, 2, 3]), np.array([2.0, 2, 5]), -0.5) == pytest.approx(0.5)
    mean, low, high = C.estimate_ci(np.random.default_rng(0).permutation(np.arange(1000.0)))
    assert (mean, low, high) == (499.5, 25.0, 974.0)    # ranks n//40 and n - n//40 - 1


def test_kendall_rows_is_scipys_tau_b():
    from scipy.stats import kendalltau

    rng = np.random.default_rng(1)
    x = rng.integers(0, 4, (30, 8)).astype(float)
    y = rng.normal(size=(30, 8))
    want = [kendalltau(a, b, variant="b").statistic for a, b in zip(x, y)]
    assert np.allclose(C.kendall_rows(x, y), want)


def test_compare_systems_baseline_and_pairs(scored):
    result, rows = scored
    cmp = C.compare_systems(rows, baseline="A", humans=["overall"], n_resamples=300, seed=7)
    by = {(r["measure"], r["system"]): r for r in cmp.rows}
    assert by[("bleu4", "A")]["score"] == pytest.approx(result.systems["A"]["bleu4"])
    assert by[("bleu4", "B")]["score"] == pytest.approx(result.systems["B"]["bleu4"])
    assert by[("bleu4", "B")]["delta"] == pytest.approx(result.systems["B"]["bleu4"] - result.systems["A"]["bleu4"])
    assert 1 / 301 <= by[("bleu4", "B")]["p"] <= 1
    human_a = np.mean([np.mean(r["ratings"]["overall"]) for r in records()[:8]])
    assert by[("human:overall", "A")]["score"] == pytest.approx(human_a)
    assert cmp.signature.startswith("compare|test:bs|n:300|seed:7|ci:95|version:")
    # same seed, same numbers; the order of rows does not matter (items are aligned by key)
    again = C.compare_systems(rows[:8] + rows[8:][::-1], baseline="A", humans=["overall"],
                              n_resamples=300, seed=7)
    assert [(r["score"], r.get("p")) for r in again.rows] == [(r["score"], r.get("p")) for r in cmp.rows]
    pairs = C.compare_systems(rows, n_resamples=100).pairs
    assert {(p["a"], p["b"]) for p in pairs} == {("A", "B")}


def test_approximate_randomization():
    """Swapping outputs between a system and a near copy of it changes little (large p);
    against a system that is better on every item it always loses (smallest p)."""
    rng = np.random.default_rng(0)
    base = rng.uniform(0, 1, 200)
    near = C.mean_measure("m", np.concatenate([base, base + rng.normal(0, 0.01, 200)]))
    far = C.mean_measure("m", np.concatenate([base, base + 0.5]))
    a, b = np.arange(200), np.arange(200, 400)
    sel = C.ar_selectors(200, 999, seed=1)
    assert C.approximate_randomization_p(near, a, near, b, sel) > 0.05
    assert C.approximate_randomization_p(far, a, far, b, sel) == pytest.approx(1 / 1000)
    # identical systems: p = 1 (sacreBLEU's strict count would give its smallest p)
    same = C.mean_measure("m", np.concatenate([base, base]))
    assert C.approximate_randomization_p(same, a, same, b, sel) == 1.0
    assert C.paired_bootstrap_p(np.ones(5), np.ones(5), 0.0) == 1.0


def test_corpus_bleu_needs_statistics_rows(scored):
    """Without statistics rows, corpus BLEU is recomputed from the rows' texts (issue 21 item
    11, tests/test_compare_plain_rows.py); rows without their texts still need --with-stats."""
    _, rows = scored
    bare = [{k: v for k, v in r.items() if k not in ("stats", "response")} for r in rows]
    with pytest.raises(DialevalError, match="--with-stats"):
        C.compare_systems(bare)
    assert C.compare_systems(bare, metrics=["rouge_l"], n_resamples=50).rows
    no_stats = [{k: v for k, v in r.items() if k != "stats"} for r in rows]
    assert [r["score"] for r in C.compare_systems(no_stats, n_resamples=50).rows] == \
        [r["score"] for r in C.compare_systems(rows, n_resamples=50).rows]


def test_compare_cli(tmp_path, capsys):
    from dialeval.cli.main import main

    data = tmp_path / "samples.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in records()), encoding="utf-8")
    scores = tmp_path / "scores.jsonl"
    assert main(["score", str(data), "--metrics", "bleu4,rouge_l", "--with-stats", "-o", str(scores)]) == 0
    row = json.loads(scores.read_text().splitlines()[0])
    assert set(row["stats"]) == {"bleu4"} and len(row["stats"]["bleu4"]) == 10
    assert row["response"] == HYPS["A"][0] and row["references"] == REFS[0]
    assert row["signatures"]["bleu4"].startswith("bleu4|refs:multi|tok:whitespace|smooth:coco")
    assert "signatures" not in json.loads(scores.read_text().splitlines()[1])   # once per file
    capsys.readouterr()
    assert main(["compare", str(scores), "--baseline", "A", "--n-resamples", "200", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["measures"]["bleu4"]["signature"] == row["signatures"]["bleu4"]
    lib = C.compare_systems([json.loads(line) for line in scores.read_text().splitlines()],
                            baseline="A", n_resamples=200)
    assert [r.get("p") for r in out["scores"]] == [r.get("p") for r in lib.rows]
    assert main(["compare", str(scores), "--paired-ar", "--n-resamples", "500", "--format", "latex"]) == 0
    text = capsys.readouterr().out
    assert text.count("\\begin{tabular}") == 3   # bleu4, rouge_l, pairwise
    assert "compare|test:ar|n:500|seed:12345" in text
    report = tmp_path / "cmp.html"
    assert main(["compare", str(scores), "--baseline", "B", "--n-resamples", "100",
                 "--human", "overall", "--report", str(report)]) == 0
    html = report.read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>") and '<section id="systems">' in html
    page = tmp_path / "report.html"
    assert main(["report", str(scores), "--human", "overall", "-o", str(page), "--n-boot", "50",
                 "--n-resamples", "50"]) == 0
    import hashlib

    html = page.read_text(encoding="utf-8")
    assert hashlib.sha256(scores.read_bytes()).hexdigest() in html      # input hash in the page
    assert row["signatures"]["bleu4"] in html
    assert main(["report", str(scores), "-o", str(tmp_path / "report.md")]) == 2
    assert main(["compare", str(scores), "--baseline", "Z"]) == 2
    assert "not a system" in capsys.readouterr().err


def test_score_report_extension_picks_the_format(tmp_path):
    from dialeval.cli.main import main

    data = tmp_path / "samples.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in records()), encoding="utf-8")
    for name, start in [("r.html", "<!DOCTYPE html>"), ("r.md", "### systems"),
                        ("r.tex", "% systems\n\\begin{tabular}"), ("r.json", "{")]:
        path = tmp_path / name
        assert main(["score", str(data), "--metrics", "bleu4,rouge_l", "--report", str(path)]) == 0
        assert path.read_text(encoding="utf-8").startswith(start), name


def test_evaluate_dataset_correlates_what_it_scored():
    """The library behind `dialeval evaluate`: its turn-level Pearson r is scipy's on the
    sentence scores and the raters' means, and its rows feed `compare`."""
    from scipy.stats import pearsonr

    from conftest import DATA, need
    from dialeval.meta.evaluate import evaluate_dataset

    need(DATA / "usr" / "tc_usr_data.json")
    ev = evaluate_dataset("usr-tc", DATA / "usr", ["bleu1"], qualities=["overall"],
                          methods=["pearson"], exclude_systems=["Original Ground Truth"], n_boot=50)
    human = [np.mean(s.ratings["overall"]) for s in ev.dataset.samples]
    row = ev.correlations[0]
    assert (row["metric"], row["level"], row["n"]) == ("bleu1", "turn", 300)
    assert row["r"] == pytest.approx(pearsonr(ev.result.sentence["bleu1"], human).statistic)
    cmp = C.compare_systems(ev.rows(), n_resamples=50, baseline="Argmax Decoding")
    assert {r["system"] for r in cmp.rows} == set(ev.result.systems)
