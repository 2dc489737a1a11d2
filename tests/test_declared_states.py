"""Issue 31: each metric declares how a system's value is made from its score rows
(`Metric.system_value`: "mean", "summed-stats" or "needs-rows"), and `compare`, `report` and
`correlate --level system` read that declaration, without building a model-backed metric, to
print the value `score` prints: distinct-n / entropy-n are corpus values there too, recomputed
from the rows' responses, not the mean of per-row values."""

from __future__ import annotations

import json

import numpy as np
import pytest

import threebots

DIVERSITY = ["distinct1", "distinct2", "entropy2"]


@pytest.fixture(scope="module")
def scored(tmp_path_factory):
    from dialeval.cli.main import main

    tmp = tmp_path_factory.mktemp("declared")
    data = threebots.write(tmp / "bots.jsonl")
    plain, stats = tmp / "plain.jsonl", tmp / "stats.jsonl"
    metrics = ",".join(DIVERSITY + ["bleu4"])
    assert main(["score", str(data), "--metrics", metrics, "-o", str(plain)]) == 0
    assert main(["score", str(data), "--metrics", metrics, "--with-stats", "-o", str(stats)]) == 0
    return plain, stats


def _json(args, capsys):
    from dialeval.cli.main import main

    capsys.readouterr()
    assert main(args + ["--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_diversity_is_the_score_value_in_compare_report_and_correlate(scored, capsys):
    from dialeval.meta.evaluate import read_scores
    from dialeval.report.html import build_report
    from dialeval.scoring import score

    table = score(threebots.records(), DIVERSITY + ["bleu4"]).systems   # what `score` prints
    for path in scored:
        cmp = _json(["compare", str(path), "--baseline", "bot_a", "--n-resamples", "50"], capsys)
        got = {(r["measure"], r["system"]): r["score"] for r in cmp["scores"]}
        corr = _json(["correlate", str(path), "--human", "overall", "--level", "system",
                      "--n-boot", "20"], capsys)
        report = build_report(read_scores(path), n_boot=20, n_resamples=20)
        names = [m["name"] for m in report["measures"]]
        for row in report["system_rows"]:
            s = row["system"]
            for m in DIVERSITY + ["bleu4"]:
                assert got[(m, s)] == table[s][m]
                assert corr["system_points"][s][m] == table[s][m]
                assert row["cells"][names.index(m)]["score"] == table[s][m]
        assert cmp["measures"]["distinct2"]["kind"] == "corpus-rows"
    # the old number was the mean of per-row values, which the test tells apart
    rows = read_scores(scored[0])
    bot_b = [r["scores"]["distinct2"] for r in rows if r["system"] == "bot_b"]
    assert abs(np.mean(bot_b) - table["bot_b"]["distinct2"]) > 0.05


def test_diversity_has_no_bootstrap_ci_but_an_ar_test(scored, capsys):
    cmp = _json(["compare", str(scored[0]), "--baseline", "bot_a", "--n-resamples", "100"], capsys)
    for r in cmp["scores"]:
        if r["measure"] in DIVERSITY:
            assert r["ci_low"] is None or not np.isfinite(r["ci_low"])
            assert r["system"] == "bot_a" or r.get("mark", "") == ""
            assert r["n"] == 15
    assert any("distinct2: each system's value is recomputed" in n for n in cmp["notes"])
    ar = _json(["compare", str(scored[0]), "--baseline", "bot_a", "--paired-ar",
                "--n-resamples", "200", "--metrics", "distinct2"], capsys)
    by = {r["system"]: r for r in ar["scores"]}
    assert 0 < by["bot_b"]["p"] < 0.05 and by["bot_c"]["p"] == 1.0   # equal values: p = 1


def test_ar_swaps_responses_exactly():
    """The vectorised swaps give what swapping the responses and recomputing gives."""
    from dialeval.meta.systems import approximate_randomization_p, ar_selectors, p_value, rows_measure
    from dialeval.version import __version__

    rows = [{"system": s, "response": t, "scores": {"distinct2": 0.0}}
            for s, texts in threebots.RESPONSES.items() for t in texts]
    measure = rows_measure(rows, "distinct2", "distinct2|tok:whitespace|n:2|lower:yes|scope:system|"
                                              f"version:{__version__}")
    a, b = np.arange(15), np.arange(15, 30)
    sel = ar_selectors(15, 300, 7)
    p = approximate_randomization_p(measure, a, measure, b, sel)
    value = measure.table.value
    shuffled = np.array([abs(value(np.where(s, a, b)) - value(np.where(s, b, a))) for s in sel])
    assert p == p_value(shuffled, abs(value(a) - value(b)))


def test_weighted_rows_equal_repeated_responses():
    from dialeval.metrics.registry import build_metric

    texts = ["a b c a b", "a b", "x y z", "", "Hi there hi there", "a b c"]
    rng = np.random.default_rng(0)
    weights = rng.integers(0, 3, size=(9, len(texts))).astype(float)
    for name in ("distinct1", "distinct2", "entropy1", "entropy3"):
        metric = build_metric(name)
        got = metric.rows_table(texts).weighted(np.arange(len(texts)), weights)
        for w, g in zip(weights, got):
            repeated = [t for t, k in zip(texts, w) for _ in range(int(k))]
            want = metric.rows_table(repeated).value(np.arange(len(repeated)))
            assert g == pytest.approx(want, abs=1e-12)


def test_tokenizer_is_read_from_the_signature():
    from dialeval.meta.systems import measures_from_rows, score_rows
    from dialeval.scoring import score

    records = [{"system": s, "response": t + " , ok ?", "references": ["x"]}
               for s, texts in threebots.RESPONSES.items() for t in texts]
    result = score(records, ["distinct2"], tokenizer="char")
    measures = measures_from_rows(score_rows(result), ["distinct2"], result.signatures)
    idx = np.arange(15)
    assert measures["distinct2"].score(idx) == result.systems["bot_a"]["distinct2"]


def test_declarations():
    from dialeval.metrics.base import Metric
    from dialeval.meta.systems import system_value_of
    from dialeval.metrics.registry import REGISTRY

    for name in REGISTRY:
        how = system_value_of(name)
        assert how is None or how in Metric.SYSTEM_VALUES, name
    assert system_value_of("bleu4") == "summed-stats"
    assert system_value_of("bleu4", "bleu4|refs:max|tok:whitespace") == "mean"
    assert system_value_of("meteor") == "summed-stats"
    assert system_value_of("rouge_l") == system_value_of("adem") == system_value_of("compose") == "mean"
    assert system_value_of("distinct2") == system_value_of("entropy3") == "needs-rows"
    assert system_value_of("no_such_metric") is None


def test_compare_builds_only_summed_statistics_metrics(monkeypatch):
    """Reading a scores file builds BLEU (for its reducer), never a model-backed metric."""
    from dialeval.meta.systems import compare_systems
    from dialeval.metrics.registry import MetricSpec

    built = []
    real = MetricSpec.build

    def spy(self, **options):
        built.append(self.name)
        return real(self, **options)

    monkeypatch.setattr(MetricSpec, "build", spy)
    rows = [{"system": s, "id": f"{s}{i}", "response": t, "references": threebots.REFERENCES[i],
             "scores": {"adem": 3.0 + i / 10, "sent_cosine": 0.5, "lm_coherence": 0.4,
                        "bertscore_f": 0.6, "compose": 0.1 * i, "bleu4": 0.0, "distinct1": 1.0}}
            for s, texts in threebots.RESPONSES.items() for i, t in enumerate(texts)]
    from dialeval.scoring import score

    stats = score(rows, ["bleu4"]).stats["bleu4"]
    for row, st in zip(rows, stats):
        row["stats"] = {"bleu4": [float(v) for v in st]}
    from dialeval.version import __version__

    sig = f"distinct1|tok:whitespace|n:1|lower:yes|scope:system|version:{__version__}"
    cmp = compare_systems(rows, baseline="bot_a", n_resamples=20, signatures={"distinct1": sig})
    assert set(built) <= {"bleu4", "distinct1"}
    assert {m for m in cmp.measures} >= {"adem", "compose", "bleu4", "distinct1"}


def test_system_comparison_names_no_metric_family():
    """compare/report/correlate get a system's value from the metric's declaration
    (`system_value`, `corpus_from_summed_rows`), never from a family's own code."""
    import ast
    from pathlib import Path

    import dialeval.meta.systems as systems

    tree = ast.parse(Path(systems.__file__).read_text(encoding="utf-8"))
    imported = {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    families = ("overlap", "embedding", "lm", "learned", "mme", "amfm", "diversity", "compose", "judge")
    assert not [m for m in imported if any(f"metrics.{f}" in m for f in families)], imported


def test_bleu_corpus_from_summed_rows_is_corpus_from_stats_row_by_row():
    import numpy as np

    from dialeval.metrics.registry import build_metric

    bleu = build_metric("bleu4")
    rng = np.random.default_rng(0)
    # summed rows: test length, reference length, n-gram candidates of orders 1-4, matches of 1-4
    guesses = rng.integers(5, 40, size=(6, 4)).astype(float)
    totals = np.column_stack([guesses[:, 0], rng.integers(5, 40, size=6), guesses,
                              np.floor(guesses * rng.uniform(0, 1, size=(6, 4)))])
    rows = bleu.corpus_from_summed_rows(totals)
    assert np.allclose(rows, [bleu.corpus_from_stats(t) for t in totals], rtol=0, atol=1e-15)
