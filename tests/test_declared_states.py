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


def test_meta_names_no_metric_family():
    """`compare`, `report` and `correlate` read a system's value from the declarations, so no
    module of meta/ imports a metric family (the leave-one-set-out evaluation of compositions
    is handed its models and sets by the caller)."""
    import ast
    from pathlib import Path

    import dialeval.meta as meta

    families = ("overlap", "embedding", "lm", "learned", "mme", "amfm", "diversity", "compose", "judge")
    for path in sorted(Path(meta.__file__).parent.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imported = {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
        assert not [m for m in imported if any(f"metrics.{f}" in m for f in families)], (path.name, imported)


def test_demo_distinct2_is_what_score_prints_in_compare_report_and_correlate(capsys):
    """On examples/demo.jsonl (every response's own distinct-2 is 1.0): the command line's
    `compare`, `correlate --level system` and the report give each system the `score` value."""
    from pathlib import Path

    from dialeval.meta.evaluate import read_scores
    from dialeval.report.html import build_report

    demo = str(Path(__file__).resolve().parents[1] / "examples" / "demo.jsonl")
    scored = _json(["score", demo, "--metrics", "distinct2,bleu4"], capsys)["systems"]
    assert scored["seq2seq"]["distinct2"] < 1.0            # the old per-row mean printed 1.0
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        out = str(Path(tmp) / "scores.jsonl")
        from dialeval.cli.main import main

        assert main(["score", demo, "--metrics", "distinct2,bleu4", "-o", out]) == 0
        cmp = _json(["compare", out, "--n-resamples", "20"], capsys)
        corr = _json(["correlate", out, "--human", "overall", "--level", "system", "--n-boot", "10"],
                     capsys)
        report = build_report(read_scores(out), n_boot=10, n_resamples=10)
    names = [m["name"] for m in report["measures"]]
    cells = {row["system"]: row["cells"] for row in report["system_rows"]}
    for system, values in scored.items():
        for m in ("distinct2", "bleu4"):
            want = values[m]
            assert next(r["score"] for r in cmp["scores"] if r["measure"] == m and r["system"] == system) == want
            assert corr["system_points"][system][m] == want
            assert cells[system][names.index(m)]["score"] == want


from dialeval.metrics.base import StateKind  # noqa: E402


class _MaxState(StateKind):
    name = "test-max"

    def merge(self, a, b):
        return max(a, b)

    def dump(self, value):
        return {"max": float(value)}

    def load(self, data):
        return float(data["max"])


def _plugin_with_its_own_state_kind():
    """A plug-in whose corpus value is the longest response (no sum or row list needed): it
    registers a "max" kind and declares it; the engine merges it by that declaration alone."""
    from dialeval.metrics.base import Metric, MetricState, register_state_kind

    register_state_kind(_MaxState())

    class Longest(Metric):
        name = "longest"
        needs_references = False
        state_kind = "test-max"

        def multi_stats(self, batch):
            return np.array([[float(len(h.split()))] for h in batch.hyps])

        def sentence_from_stats(self, stats):
            return stats[:, 0]

        def shard_state(self, batch, out):
            return MetricState("test-max", len(batch), float(np.max(out.sentence)) if len(batch) else 0.0)

        def corpus_from_state(self, state):
            return state.value

    return Longest()


def test_a_plugin_state_kind_merges_by_its_declaration_and_survives_a_checkpoint():
    import dialeval
    from dialeval.data.sample import Sample
    from dialeval.engine import make_plan
    from dialeval.engine.merge import Totals
    from dialeval.engine.shard import score_shard

    metric = _plugin_with_its_own_state_kind()
    samples = [Sample(id=str(i), response=" ".join("w" * (i % 7 + 1)), references=[], system="AB"[i % 2])
               for i in range(30)]
    whole = dialeval.score(samples, [metric])
    assert whole.systems["A"]["longest"] == 7.0 and whole.corpus["longest"] == 7.0
    for chunk in (1, 4, 7):
        assert dialeval.score(samples, [metric], chunk_size=chunk).systems == whole.systems
    # a checkpoint writes the declared kind and reads it back (as --resume does)
    plan = make_plan([metric])
    totals = Totals().add(score_shard(plan, samples[:13], None))
    back = Totals.from_dict(json.loads(json.dumps(totals.to_dict())))
    back.add(score_shard(plan, samples[13:], None))
    assert back.corpus_values(plan) == Totals().add(score_shard(plan, samples, None)).corpus_values(plan)


def test_diversity_declares_its_ngram_table():
    """distinct-n / entropy-n declare the exact "counts" kind; the engine merges it like any
    declared state and a checkpoint round trip keeps it exactly."""
    from dialeval.data.sample import Sample
    from dialeval.engine import make_plan
    from dialeval.engine.merge import Totals
    from dialeval.engine.shard import score_shard
    from dialeval.metrics.base import STATE_KINDS
    from dialeval.metrics.registry import build_metric

    metric = build_metric("distinct2")
    assert metric.reduction() == "counts" and "counts" in STATE_KINDS
    samples = [Sample(id=f"{s}{i}", response=t, references=[], system=s)
               for s, texts in threebots.RESPONSES.items() for i, t in enumerate(texts)]
    plan = make_plan([metric, build_metric("entropy2"), build_metric("bleu1")])
    part = score_shard(plan, samples[:8], None)
    assert part.states["bot_a"]["distinct2"].kind == "counts"
    totals = Totals.from_dict(json.loads(json.dumps(Totals().add(part).to_dict())))
    totals.add(score_shard(plan, samples[8:], None))
    whole = Totals().add(score_shard(plan, samples, None))
    assert totals.corpus_values(plan) == whole.corpus_values(plan)
    assert json.dumps(totals.to_dict()) == json.dumps(whole.to_dict()).replace('"shards": 1', '"shards": 2')
