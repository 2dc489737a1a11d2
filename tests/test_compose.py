"""Correlation re-scaling (MME-CRS eq. 1-3), MME-Avg and ridge compositions; the `compose`
metric and `dialeval fit compose`."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from dialeval.errors import DialevalError
from dialeval.metrics.compose.model import POOLED, ComposeModel, DevSet, crs_weights
from dialeval.meta.compose_eval import leave_one_set_out, mean_r, paired_mean_difference

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "examples" / "demo.jsonl"


def hand_sets() -> list[DevSet]:
    """Two development sets of five items whose Spearman correlations are easy by hand
    (no ties: rho = 1 - 6 sum d^2 / (n (n^2 - 1)) = 1 - sum d^2 / 20 for n = 5)."""
    up = [1, 2, 3, 4, 5]
    a = DevSet("A", {"m1": [1, 2, 3, 4, 5],        # d = 0            -> rho 1
                     "m2": [2, 1, 4, 3, 5],        # sum d^2 = 4      -> rho 0.8
                     "m3": [5, 4, 3, 2, 1]},       # reversed         -> rho -1, clipped to 0
               {"overall": up})
    b = DevSet("B", {"m1": [1, 3, 2, 5, 4],        # sum d^2 = 4      -> 0.8
                     "m2": [1, 2, 3, 4, 5],        #                  -> 1
                     "m3": [3, 1, 2, 5, 4]},       # d = -2,1,1,-1,1: sum d^2 = 8 -> 0.6
               {"overall": up,
                "fluency": [5, 4, 3, 2, 1]})       # every metric negative: all r clipped to 0
    return [a, b]


def test_crs_weights_by_hand():
    model = ComposeModel(method="crs", p=2).fit(hand_sets(), ["m1", "m2", "m3"])
    # Spearman per (set, quality), in the order pairs_ lists them
    assert model.pairs_ == [["A", "overall"], ["B", "fluency"], ["B", "overall"]]
    np.testing.assert_allclose(model.spearman_, [[1.0, 0.8, -1.0], [-0.8, -1.0, -0.6], [0.8, 1.0, 0.6]])
    # eq. 1, p = 2.  A: r^2 = (1, .64, 0), sum 1.64.  B overall: (.64, 1, .36), sum 2.0.
    w_a = np.array([1 / 1.64, 0.64 / 1.64, 0.0])
    w_b = np.array([0.32, 0.50, 0.18])
    # eq. 2: the mean over the sets that rate `overall`
    w = model.weights_for("overall")
    np.testing.assert_allclose([w["m1"], w["m2"], w["m3"]], (w_a + w_b) / 2)
    np.testing.assert_allclose([w["m1"], w["m2"], w["m3"]], [0.4648780487804878, 0.4451219512195122, 0.09])
    # the pooled row (for a quality no set rates) averages the informative pairs: here the same
    np.testing.assert_allclose(list(model.weights_for(POOLED).values()), (w_a + w_b) / 2)
    # B's fluency: every r <= 0 says nothing -> no pair to average -> the pooled row, flagged
    assert model.weight_sets_[model.row_of("fluency")] == 0 and model.fallback_used("fluency")
    np.testing.assert_allclose(list(model.weights_for("fluency").values()), (w_a + w_b) / 2)
    assert model.fallback_used("engaging") and not model.fallback_used("overall")
    # nothing informative anywhere -> uniform
    flat = ComposeModel().fit([DevSet("C", {"m1": [1, 2, 3, 4, 5], "m2": [1, 2, 3, 5, 4]},
                                          {"q": [5, 4, 3, 2, 1.5]})], ["m1", "m2"])
    assert flat.weights_for("q") == {"m1": 0.5, "m2": 0.5} and flat.fallback_used("q")

    # p = 1: A (1, .8, 0) / 1.8, B (.8, 1, .6) / 2.4
    w1 = ComposeModel(method="crs", p=1).fit(hand_sets(), ["m1", "m2", "m3"]).weights_for("overall")
    np.testing.assert_allclose(list(w1.values()),
                               (np.array([1, 0.8, 0]) / 1.8 + np.array([0.8, 1, 0.6]) / 2.4) / 2)


def test_consistent_rule_by_hand():
    """m3 has r = -1 on A's overall and 0.6 on B's: a metric that hurts on one development corpus
    gets no weight; m1 and m2 keep their CRS weights, renormalised."""
    model = ComposeModel(method="crs", p=2, consistent=True).fit(hand_sets(), ["m1", "m2", "m3"])
    w_a = np.array([1 / 1.64, 0.64 / 1.64, 0.0])
    w_b = np.array([0.32, 0.50, 0.18])
    kept = ((w_a + w_b) / 2)[:2]
    w = model.weights_for("overall")
    assert w["m3"] == 0.0
    np.testing.assert_allclose([w["m1"], w["m2"]], kept / kept.sum())
    # the pooled row also sees B's fluency, where every metric is negative: none is consistent,
    # so the member with the best mean Spearman over the three pairs takes it all
    # (m1: (1 - 0.8 + 0.8) / 3 = 0.333, m2: (0.8 - 1 + 1) / 3 = 0.267, m3: (-1 - 0.6 + 0.6) / 3)
    assert model.weights_for(POOLED) == {"m1": 1.0, "m2": 0.0, "m3": 0.0}
    # B's fluency alone: every r is negative, the least bad member (m3, -0.6) takes it all, and the
    # composite then ranks the items as that member does
    assert model.weights_for("fluency") == {"m1": 0.0, "m2": 0.0, "m3": 1.0}
    sets = hand_sets()
    pred = model.predict(sets[1].scores, "fluency")
    np.testing.assert_array_equal(np.argsort(pred, kind="stable"),
                                  np.argsort(sets[1].scores["m3"], kind="stable"))


def test_crs_prediction_by_hand():
    model = ComposeModel(method="crs", p=2).fit(hand_sets(), ["m1", "m2", "m3"])
    # minmax over the pooled development scores: every metric spans [1, 5] -> (x - 1) / 4
    np.testing.assert_allclose(model.scale_low_, [1, 1, 1])
    np.testing.assert_allclose(model.scale_high_, [5, 5, 5])
    w1, w2, w3 = 0.4648780487804878, 0.4451219512195122, 0.09
    scores = {"m1": [3, 10, 3], "m2": [5, 5, math.nan], "m3": [1, 1, 1]}
    got = model.predict(scores, "overall")
    # item 1: scaled (.5, 1, 0); item 2: m1 = 10 clipped to 1; item 3: m2 missing -> renormalise
    expected = [w1 * 0.5 + w2 * 1.0, w1 * 1.0 + w2 * 1.0, (w1 * 0.5) / (w1 + w3)]
    np.testing.assert_allclose(got, expected)
    # a quality no set rated uses the pooled weights
    np.testing.assert_allclose(model.predict(scores, "engaging"), expected)


def test_crs_all_weighted_metrics_missing_falls_back():
    model = ComposeModel(method="crs", p=2).fit(hand_sets(), ["m1", "m2", "m3"])
    # give m3 zero weight for a quality, then score an item that has only m3
    model.weights_[model.row_of("overall")] = [0.5, 0.5, 0.0]
    got = model.predict({"m1": [math.nan], "m2": [math.nan], "m3": [3.0]}, "overall")
    # pooled row (w3 = 0.09 > 0) applies; with only m3 present the score is m3's scaled value
    np.testing.assert_allclose(got, [0.5])
    assert np.isnan(model.predict({"m1": [math.nan], "m2": [math.nan], "m3": [math.nan]}, "overall"))[0]


def test_crs_weights_function():
    np.testing.assert_allclose(crs_weights(np.array([0.5, -0.2, np.nan, 0.5]), 3), [0.5, 0, 0, 0.5])
    assert crs_weights(np.array([-0.1, 0.0]), 2) is None


def test_percentile_scaling_and_max_items():
    rng = np.random.default_rng(0)
    x = rng.normal(size=400)
    d = DevSet("s", {"m": x}, {"q": x + rng.normal(size=400)})
    model = ComposeModel(scaling="percentile", clip_percentile=10).fit([d])
    assert model.scale_low_[0] == pytest.approx(np.percentile(x, 10))
    assert model.scale_high_[0] == pytest.approx(np.percentile(x, 90))
    scaled = model.scale({"m": x})["m"]
    assert scaled.min() == 0 and scaled.max() == 1 and np.mean(scaled == 0) == pytest.approx(0.1, abs=0.01)
    # the paper's 300-item draw: a different (seeded) correlation, reproducible
    a = ComposeModel(max_items=300, seed=1).fit([d]).spearman_
    b = ComposeModel(max_items=300, seed=1).fit([d]).spearman_
    assert a == b and a != ComposeModel().fit([d]).spearman_


def test_avg_is_plain_mean_of_scaled_scores():
    model = ComposeModel(method="avg").fit(hand_sets(), ["m1", "m2", "m3"])
    for q in ("overall", "fluency", POOLED):
        np.testing.assert_allclose(list(model.weights_for(q).values()), [1 / 3] * 3)
    got = model.predict({"m1": [3, 5], "m2": [5, math.nan], "m3": [1, 2]})
    np.testing.assert_allclose(got, [(0.5 + 1 + 0) / 3, (1 + 0.25) / 2])


def synthetic_sets(seed=0, n=120):
    """Three sets where humans follow 2*m1 - m2 (m3 is noise), on different human scales."""
    rng = np.random.default_rng(seed)
    sets = []
    for k, scale in enumerate((1.0, 5.0, 0.2)):
        m = rng.uniform(size=(n, 3))
        y = scale * (2 * m[:, 0] - m[:, 1] + 0.3 * rng.normal(size=n))
        sets.append(DevSet(f"s{k}", {"m1": m[:, 0], "m2": m[:, 1], "m3": m[:, 2]}, {"overall": y}))
    return sets


def test_ridge_learns_signs_and_alpha_by_cv():
    sets = synthetic_sets()
    model = ComposeModel(method="ridge", alphas=[1e-3, 1e6]).fit(sets)
    coef = model.weights_for("overall")
    assert coef["m1"] > 0 > coef["m2"] and abs(coef["m3"]) < 0.3 * coef["m1"]
    # a huge penalty flattens the prediction's ranking across folds no better than a small one
    assert model.alpha_[0] == 1e-3
    # CRS cannot use a negative relation: it gives m2 (negatively correlated) weight 0
    crs = ComposeModel(method="crs").fit(sets)
    assert crs.weights_for("overall")["m2"] == 0
    # leave one set out: ridge (which uses m2) beats CRS and Avg on these data
    rows = leave_one_set_out(sets, {"ridge": lambda: ComposeModel(method="ridge"),
                                    "crs": lambda: ComposeModel(method="crs"),
                                    "avg": lambda: ComposeModel(method="avg")}, ["m1", "m2", "m3"])
    assert mean_r(rows, "ridge") > mean_r(rows, "crs") > mean_r(rows, "avg")
    diff = paired_mean_difference(rows, "ridge", "avg", n_boot=200, seed=0)
    assert diff.pairs == 3 and diff.wins == 3 and diff.ci_low > 0 and diff.p == 0.0


def test_positive_ridge_never_weighs_a_member_against_the_score(tmp_path):
    """On the same data plain ridge gives m2 (negatively related) a negative coefficient; with
    positive=True every coefficient is >= 0, m2's is 0, m1 still carries the score, and the
    option survives a save and load."""
    sets = synthetic_sets()
    model = ComposeModel(method="ridge", positive=True, alphas=[1e-3, 1e6]).fit(sets)
    coef = model.weights_for("overall")
    assert min(coef.values()) >= 0 and coef["m2"] == 0 and coef["m1"] > 0
    assert model.describe()["positive"] is True
    model.save(tmp_path / "c")
    back = ComposeModel.load(tmp_path / "c")
    assert back.positive is True
    # options that would do nothing under another method are refused, not ignored
    with pytest.raises(DialevalError, match="positive applies to ridge"):
        ComposeModel(method="crs", positive=True).fit(sets)
    with pytest.raises(DialevalError, match="consistent rule applies to crs and avg"):
        ComposeModel(method="ridge", consistent=True).fit(sets)
    from dialeval.cli.main import main

    assert main(["fit", "compose", "--method", "crs", "--positive", "--data", f"demo:{DEMO}",
                 "--metrics", "bleu2", "-o", str(tmp_path / "never")]) == 2
    assert not (tmp_path / "never").exists()
    np.testing.assert_array_equal(back.predict(sets[0].scores, "overall"), model.predict(sets[0].scores, "overall"))


def test_paired_mean_difference_matches_plain_mean():
    sets = synthetic_sets(seed=3, n=60)
    rows = leave_one_set_out(sets, {"crs": lambda: ComposeModel(p=2), "avg": lambda: ComposeModel(method="avg")},
                             ["m1", "m2", "m3"])
    diff = paired_mean_difference(rows, "crs", "avg", n_boot=100, seed=0)
    by = {(r.set, r.method): r.r for r in rows}
    assert diff.mean_diff == pytest.approx(np.mean([by[(s.name, "crs")] - by[(s.name, "avg")] for s in sets]))
    assert diff.ci_low <= diff.mean_diff <= diff.ci_high


def test_save_load_round_trip(tmp_path):
    sets = synthetic_sets()
    for method in ("crs", "avg", "ridge"):
        model = ComposeModel(method=method, p=3, scaling="percentile").fit(
            sets, metric_options={"refs_mode": "max"}, signatures={"m1": "m1|x"})
        folder = model.save(tmp_path / method)
        back = ComposeModel.load(folder)
        assert back.get_params() == model.get_params()
        assert back.describe() == model.describe()
        assert back.metric_options_ == {"refs_mode": "max"} and back.signatures_ == {"m1": "m1|x"}
        np.testing.assert_array_equal(back.predict(sets[0].scores), model.predict(sets[0].scores))
    # a changed file is refused (manifest sha256)
    (Path(folder) / "config.json").write_text((Path(folder) / "config.json").read_text().replace("ridge", "crs"))
    with pytest.raises(DialevalError, match="changed since"):
        ComposeModel.load(folder)


def test_fit_refuses_bad_input():
    sets = hand_sets()
    with pytest.raises(DialevalError, match="no development set rates 'coherence'"):
        ComposeModel().fit(sets, qualities=["coherence"])
    with pytest.raises(DialevalError, match="has no scores for m9"):
        ComposeModel().fit(sets, ["m1", "m9"])
    with pytest.raises(DialevalError, match="unknown composition method"):
        ComposeModel(method="median").fit(sets)


# -- the metric and the command line ------------------------------------------------------------

def _read_jsonl(path):
    return [json.loads(line) for line in Path(path).read_text().splitlines()]


def test_fit_and_score_through_cli(tmp_path, capsys):
    from scipy import stats

    from dialeval.cli.main import main

    model_dir = tmp_path / "crs"
    assert main(["fit", "compose", "--method", "crs", "--data", f"demo:{DEMO}", "--metrics", "bleu2,rouge_l",
                 "--quality", "overall", "-o", str(model_dir), "--p", "2", "--json"]) == 0
    fitted = json.loads(capsys.readouterr().out)
    assert fitted["metrics"] == ["bleu2", "rouge_l"] and fitted["qualities"] == ["overall"]
    out = tmp_path / "scores.jsonl"
    assert main(["score", str(DEMO), "--metrics", "bleu2,rouge_l,compose", "--compose-model", str(model_dir),
                 "-o", str(out)]) == 0
    rows = _read_jsonl(out)
    # the expected composite, from the scored columns and the humans alone (eq. 1-3, p = 2)
    human = np.array([np.mean(r["ratings"]["overall"]) for r in rows])
    cols = {m: np.array([r["scores"][m] for r in rows]) for m in ("bleu2", "rouge_l")}
    r2 = {m: max(0.0, stats.spearmanr(c, human).statistic) ** 2 for m, c in cols.items()}
    expected = sum(r2[m] / sum(r2.values()) * (c - c.min()) / (c.max() - c.min()) for m, c in cols.items())
    np.testing.assert_allclose([r["scores"]["compose"] for r in rows], expected, rtol=1e-12)
    printed = capsys.readouterr().out
    assert "compose|model:compose@" in printed and "metrics:bleu2+rouge_l" in printed


def two_small_compositions(tmp_path) -> tuple[Path, Path]:
    """Two folders fitted on the demo by `fit compose`: CRS over bleu2 and rouge_l, and ridge
    >= 0 over bleu1 and meteor (different members, so their scores differ)."""
    from dialeval.cli.main import main

    a, b = tmp_path / "a", tmp_path / "b"
    assert main(["fit", "compose", "--method", "crs", "--data", f"demo:{DEMO}", "--metrics", "bleu2,rouge_l",
                 "--quality", "overall", "-o", str(a)]) == 0
    assert main(["fit", "compose", "--method", "ridge", "--positive", "--data", f"demo:{DEMO}",
                 "--metrics", "bleu1,meteor", "--quality", "overall", "-o", str(b)]) == 0
    return a, b


def test_compose_ref_has_its_own_model_option(tmp_path):
    """`compose` and `compose_ref` scored in one run, each with its own folder: each gives what
    `compose` gives with that folder alone; and compose_ref declares that it needs references."""
    from dialeval.data.readers import read_samples
    from dialeval.metrics.registry import metric_spec
    from dialeval.scoring import score

    a, b = two_small_compositions(tmp_path)
    samples = read_samples(DEMO)
    both = score(samples, ["compose", "compose_ref"], compose_model=str(a), compose_ref_model=str(b)).sentence
    np.testing.assert_array_equal(both["compose"], score(samples, ["compose"], compose_model=str(a)).sentence["compose"])
    np.testing.assert_array_equal(both["compose_ref"], score(samples, ["compose"], compose_model=str(b)).sentence["compose"])
    assert not np.array_equal(both["compose"], both["compose_ref"])
    assert metric_spec("compose_ref").metric_class().needs_references
    # a sample without references: compose_ref gives NaN (not a score filled from development
    # means); compose, which needs none, still scores it
    bare = [{"context": ["hi there"], "response": "hello , how are you ?", "references": []}]
    got = score(bare, ["compose", "compose_ref"], compose_model=str(b), compose_ref_model=str(b)).sentence
    assert np.isnan(got["compose_ref"][0]) and np.isfinite(got["compose"][0])


def test_compose_judge_has_its_own_model_option(tmp_path):
    """The judge's composition (`compose_judge`) is the same machinery under its own option, so
    the three compositions score in one run, each from its own folder, none reading another's
    (here two small word-overlap folders stand in: the judge is an optional install)."""
    from dialeval.data.readers import read_samples
    from dialeval.metrics.registry import metric_spec
    from dialeval.scoring import score

    a, b = two_small_compositions(tmp_path)
    samples = read_samples(DEMO)
    alone = {f: score(samples, ["compose"], compose_model=str(f)).sentence["compose"] for f in (a, b)}
    got = score(samples, ["compose", "compose_ref", "compose_judge"], compose_model=str(a),
                compose_ref_model=str(b), compose_judge_model=str(b)).sentence
    np.testing.assert_array_equal(got["compose"], alone[a])
    np.testing.assert_array_equal(got["compose_ref"], alone[b])
    np.testing.assert_array_equal(got["compose_judge"], alone[b])
    got = score(samples, ["compose", "compose_judge"], compose_model=str(b), compose_judge_model=str(a)).sentence
    np.testing.assert_array_equal(got["compose_judge"], alone[a])
    np.testing.assert_array_equal(got["compose"], alone[b])
    spec = metric_spec("compose_judge")
    assert (spec.default_model, spec.model_option) == ("compose_judge", "compose_judge_model")
    assert not spec.metric_class().needs_references


def test_compose_metric_keeps_recorded_refs_mode_and_takes_overrides(tmp_path):
    from dialeval.metrics.compose import Compose
    from dialeval.data.readers import read_samples
    from dialeval.scoring import score

    samples = read_samples(DEMO)
    result = score(samples, ["bleu2", "rouge_l"], refs_mode="max")
    dev = DevSet.from_samples("demo", result.samples, result.sentence)
    ComposeModel(method="avg").fit([dev], metric_options={"refs_mode": "max", "vector_case": "lower"},
                                   signatures=result.signatures).save(tmp_path / "m")
    metric = Compose(compose_model=str(tmp_path / "m"), refs_mode="multi", vector_case="keep")
    assert [m.refs_mode for m in metric.metrics] == ["max", "max"]     # pinned to what was fitted
    assert metric.options["vector_case"] == "keep" and metric.overridden == ["vector_case"]
    assert "override:vector_case" in str(metric.signature())
    got = score(samples, [metric, "bleu2", "rouge_l"], refs_mode="max").sentence
    np.testing.assert_allclose(got["compose"], (dev.scores["bleu2"] - dev.scores["bleu2"].min())
                               / np.ptp(dev.scores["bleu2"]) / 2
                               + (dev.scores["rouge_l"] - dev.scores["rouge_l"].min())
                               / np.ptp(dev.scores["rouge_l"]) / 2)


def test_compose_refuses_unknown_recorded_metric(tmp_path, capsys):
    from dialeval.cli.main import main

    d = DevSet("x", {"bleu2": np.arange(6.0), "nosuch_metric": np.arange(6.0)[::-1]}, {"overall": np.arange(6.0)})
    ComposeModel().fit([d]).save(tmp_path / "bad")
    assert main(["score", str(DEMO), "--metrics", "compose", "--compose-model", str(tmp_path / "bad")]) == 2
    err = capsys.readouterr().err
    assert "composes metric 'nosuch_metric', which this dialeval does not know" in err
    # and a composition of a composition
    d2 = DevSet("x", {"compose": np.arange(6.0)}, {"overall": np.arange(6.0)})
    ComposeModel().fit([d2]).save(tmp_path / "nested")
    assert main(["score", str(DEMO), "--metrics", "compose", "--compose-model", str(tmp_path / "nested")]) == 2
    assert "itself a composition" in capsys.readouterr().err
    # no model at all
    assert main(["score", str(DEMO), "--metrics", "compose"]) == 2
    assert "--compose-model" in capsys.readouterr().err


def test_fit_cli_refuses_unrated_data(tmp_path, capsys):
    from dialeval.cli.main import main

    unrated = tmp_path / "u.jsonl"
    unrated.write_text('{"response": "a b", "references": ["a b"]}\n')
    assert main(["fit", "compose", "--data", f"u:{unrated}", "--metrics", "bleu2", "-o", str(tmp_path / "o")]) == 2
    assert "no human ratings" in capsys.readouterr().err
    assert main(["fit", "compose", "--data", "nonsense", "--metrics", "bleu2", "-o", str(tmp_path / "o")]) == 2
    assert "expected NAME:PATH" in capsys.readouterr().err


def test_fit_group_is_shared():
    """A second module adding a `fit` target reuses the group instead of a duplicate parser."""
    import argparse

    from dialeval.cli.compose import _fit_subparsers

    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command")
    first = _fit_subparsers(sub)
    first.add_parser("compose")
    again = _fit_subparsers(sub)
    assert again is first
    again.add_parser("other")
    assert parser.parse_args(["fit", "other"]).what == "other"


def test_refit_with_another_method_leaves_nothing_stale():
    model = ComposeModel(method="ridge").fit(synthetic_sets(n=40))
    assert hasattr(model, "coef_")
    model.set_params(method="crs").fit(hand_sets())
    assert not hasattr(model, "coef_") and model.metrics_ == ["m1", "m2", "m3"]


def test_refit_with_other_weights_signs_differently(tmp_path):
    """The signature's `model:NAME@hash` is the manifest's own hash, which lists every file's
    sha256: two fits whose config.json is the same but whose weights (arrays.npz) differ sign
    differently; the same folder signs the same, and a copy of it too."""
    import shutil

    from dialeval.metrics.compose import Compose

    def sets(seed):
        rng = np.random.default_rng(seed)
        m = rng.uniform(size=(60, 2))
        y = 2 * m[:, 0] - m[:, 1] + 0.3 * rng.normal(size=60)
        return [DevSet("s", {"bleu2": m[:, 0], "rouge_l": m[:, 1]}, {"overall": y})]

    a, b = tmp_path / "a" / "fit", tmp_path / "b" / "fit"
    ComposeModel(method="ridge").fit(sets(0)).save(a)
    ComposeModel(method="ridge").fit(sets(1)).save(b)
    assert (a / "config.json").read_bytes() == (b / "config.json").read_bytes()   # the defect's case
    assert (a / "arrays.npz").read_bytes() != (b / "arrays.npz").read_bytes()
    sig_a, sig_b = str(Compose(compose_model=str(a)).signature()), str(Compose(compose_model=str(b)).signature())
    assert "model:compose@" in sig_a and sig_a != sig_b
    assert str(Compose(compose_model=str(a)).signature()) == sig_a
    shutil.copytree(a, tmp_path / "c" / "fit")
    assert str(Compose(compose_model=str(tmp_path / "c" / "fit")).signature()) == sig_a


def test_training_negatives_teach_ridge_what_no_rated_item_shows():
    """Humans follow m1 alone; m3 is noise on the rated items but a degenerate response games
    m1 (scores it high) while m3 sees through it (scores it 0). Without negatives m3 gets no
    weight and the degenerate response outscores every good one; with negatives at the set's
    lowest rating m3 gets weight and the degenerate response falls below most good ones
    (measured: it outscores 89% of set s0's items without negatives, 18% with them).
    The penalty is chosen on rated items only, and the count drawn per set is share x items."""
    rng = np.random.default_rng(0)
    sets, negs = [], {}
    for k in range(3):
        m = rng.uniform(0.2, 1.0, size=(100, 3))
        y = m[:, 0] + 0.1 * rng.normal(size=100)
        sets.append(DevSet(f"s{k}", {"m1": m[:, 0], "m2": m[:, 1], "m3": m[:, 2]}, {"overall": y}))
        negs[f"s{k}"] = {"m1": np.full(80, 0.95), "m2": rng.uniform(0.2, 1.0, 80), "m3": np.zeros(80)}
    gamed = {"m1": np.array([0.95]), "m2": np.array([0.6]), "m3": np.array([0.0])}
    plain = ComposeModel(method="ridge", positive=True, seed=0).fit(sets)
    taught = ComposeModel(method="ridge", positive=True, seed=0, negative_share=0.5).fit(sets, negatives=negs)
    assert taught.negatives_used_ == {"s0": 50, "s1": 50, "s2": 50}
    assert taught.weights_for("overall")["m3"] > plain.weights_for("overall")["m3"]
    good = sets[0].scores
    assert (plain.predict(good, "overall") < plain.predict(gamed, "overall")[0]).mean() > 0.8
    assert (taught.predict(good, "overall") < taught.predict(gamed, "overall")[0]).mean() < 0.3
    # the option is refused where it would do nothing, and a set's negatives must have every member
    with pytest.raises(DialevalError, match="negative_share applies to ridge"):
        ComposeModel(method="crs", negative_share=0.5).fit(sets)
    with pytest.raises(DialevalError, match="no scores for m3"):
        ComposeModel(method="ridge", negative_share=0.5).fit(
            sets, negatives={"s0": {"m1": [0.9], "m2": [0.5]}})


def test_negatives_scored_on_demand_fit_the_same_as_every_row_scored():
    """A `NegativePool` is asked only for the rows the seeded draw takes (share x items of a
    set, here 30 of 80 and 50 of 80), and the fit it gives equals, array for array, the fit
    over every made row scored: scaling is row by row, and the draw is the same."""
    from dialeval.metrics.compose.model import NegativePool

    rng = np.random.default_rng(1)
    sets, negs, asked = [], {}, {}
    for k, n in enumerate((60, 100)):
        m = rng.uniform(0.2, 1.0, size=(n, 3))
        sets.append(DevSet(f"s{k}", {"m1": m[:, 0], "m2": m[:, 1], "m3": m[:, 2]},
                           {"overall": m[:, 0] + 0.1 * rng.normal(size=n)}))
        negs[f"s{k}"] = {"m1": rng.uniform(0.5, 1.0, 80), "m2": rng.uniform(size=80), "m3": rng.uniform(0, 0.3, 80)}

    def pool(name):
        def score(rows):
            asked[name] = list(rows)
            return {m: np.asarray(v)[rows] for m, v in negs[name].items()}
        return NegativePool(80, score)

    full = ComposeModel(method="ridge", positive=True, seed=0, negative_share=0.5).fit(sets, negatives=negs)
    lazy = ComposeModel(method="ridge", positive=True, seed=0, negative_share=0.5).fit(
        sets, negatives={name: pool(name) for name in negs})
    assert {k: len(v) for k, v in asked.items()} == {"s0": 30, "s1": 50} == lazy.negatives_used_
    assert all(len(set(v)) == len(v) and max(v) < 80 for v in asked.values())
    for name in ("coef_", "intercept_", "alpha_", "fill_"):
        np.testing.assert_array_equal(getattr(full, name), getattr(lazy, name))
    with pytest.raises(DialevalError, match="no scores for m3"):
        ComposeModel(method="ridge", negative_share=0.5).fit(
            sets, negatives={"s0": NegativePool(80, lambda rows: {"m1": np.zeros(len(rows)), "m2": np.zeros(len(rows))})})


def test_fit_cli_scores_only_the_drawn_negatives_and_writes_the_same_folder(tmp_path, capsys, monkeypatch):
    """`fit compose --negative-share` scores only the negatives its draw takes: the demo's rows
    x 2 families are made, share 0.5 takes half as many rows as the set has items. The folder
    is byte for byte the one a fit over every made row writes. A member with a corpus pass
    (CIDEr's IDF) makes it score every made row, as before."""
    import dialeval.cli.compose as fit_cli
    from dialeval.cli.main import main
    from dialeval.data.readers import read_samples
    from dialeval.meta.probes import negative_samples

    common = ["fit", "compose", "--method", "ridge", "--positive", "--data", f"demo:{DEMO}",
              "--negative-share", "0.5", "--negatives", "parrot,loop", "--seed", "0"]
    samples = read_samples(str(DEMO))
    made = len(negative_samples(samples, "parrot,loop", seed=0))
    take = round(0.5 * len(samples))
    assert 0 < take < made
    assert main([*common, "--metrics", "bleu2,rouge_l", "-o", str(tmp_path / "lazy")]) == 0
    assert f"scoring {take} of {made} training negatives of demo " in capsys.readouterr().err
    # every made row scored and handed over whole, as before the pool
    monkeypatch.setattr(fit_cli, "rows_score_alone", lambda *args: False)
    assert main([*common, "--metrics", "bleu2,rouge_l", "-o", str(tmp_path / "whole")]) == 0
    assert f"scoring {made} of {made} training negatives of demo " in capsys.readouterr().err
    assert (tmp_path / "lazy" / "arrays.npz").read_bytes() == (tmp_path / "whole" / "arrays.npz").read_bytes()
    assert (tmp_path / "lazy" / "config.json").read_bytes() == (tmp_path / "whole" / "config.json").read_bytes()
    monkeypatch.undo()
    assert main([*common, "--metrics", "bleu2,cider_d", "-o", str(tmp_path / "idf")]) == 0
    assert f"scoring {made} of {made} training negatives of demo " in capsys.readouterr().err


def test_fit_cli_refuses_bad_negatives_before_scoring(tmp_path, capsys):
    """An unknown family or a share out of range is one line and exit 2, before any set is
    scored, and no folder is written."""
    from dialeval.cli.main import main

    for extra, message in ((["--negative-share", "0.5", "--negatives", "bogus"], "unknown probe family 'bogus'"),
                           (["--negative-share", "-1"], "negative_share must lie in")):
        out = tmp_path / "never"
        assert main(["fit", "compose", "--method", "ridge", "--data", f"demo:{DEMO}", "--metrics", "bleu2",
                     *extra, "-o", str(out)]) == 2
        err = capsys.readouterr().err
        assert message in err and "scoring demo" not in err and not out.exists()


def test_stand_in_lends_a_sets_own_rating_to_a_quality_it_does_not_rate(tmp_path):
    """A set rated for coherence only teaches the overall weights through `stand_in`, and a set
    that rates overall keeps its own overall ratings (its coherence never replaces them)."""
    rated, coh_only = synthetic_sets()[:2]
    flipped = DevSet("coh", coh_only.scores, {"coherence": -coh_only.human["overall"]})
    plain = ComposeModel(method="ridge").fit([rated, flipped], qualities=["overall"])
    assert plain.devsets_ == ["s0", "coh"] and plain.weight_sets_[0] == 1     # only s0 rates overall
    lent = ComposeModel(method="ridge", stand_in="overall=fluency,coherence").fit(
        [rated, flipped], qualities=["overall"])
    assert lent.stand_ins_used_ == [["coh", "overall", "coherence"]]
    assert lent.weight_sets_[0] == 2
    # the lent ratings run against s0's, so m1's coefficient falls towards zero
    assert plain.weights_for("overall")["m1"] > 0.5
    assert abs(lent.weights_for("overall")["m1"]) < 0.5 * plain.weights_for("overall")["m1"]
    # a set that rates overall keeps it; the record survives a save and load
    both = DevSet("both", rated.scores, {"overall": rated.human["overall"], "coherence": -rated.human["overall"]})
    kept = ComposeModel(method="ridge", stand_in="overall=coherence").fit([both], qualities=["overall"])
    assert kept.stand_ins_used_ == []
    np.testing.assert_allclose(kept.weights_for("overall")["m1"],
                               ComposeModel(method="ridge").fit([both], qualities=["overall"]).weights_for("overall")["m1"])
    back = ComposeModel.load(lent.save(tmp_path / "lent"))
    assert back.stand_ins_used_ == [["coh", "overall", "coherence"]]
    assert back.describe()["stand_ins"] == [{"set": "coh", "quality": "overall", "from": "coherence"}]
    # an artifact fitted without stand-ins records neither the option nor its use
    config = json.loads((Path(plain.save(tmp_path / "plain")) / "config.json").read_text())
    assert "stand_in" not in config["params"] and "stand_ins_used_" not in config["state"]
    for bad in ("overall", "overall=", "=coherence", "overall=overall", "overall=a;overall=b"):
        with pytest.raises(DialevalError, match="stand_in"):
            ComposeModel(method="ridge", stand_in=bad).fit([rated])


def test_fit_cli_stand_in_prints_and_records_each_loan(tmp_path, capsys):
    from dialeval.cli.main import main

    coh = tmp_path / "coh.jsonl"
    rows = _read_jsonl(DEMO)
    coh.write_text("".join(json.dumps({**r, "id": "c-" + r["id"], "ratings": {"coherence": r["ratings"]["overall"]}}) + "\n"
                           for r in rows))
    args = ["fit", "compose", "--method", "crs", "--data", f"demo:{DEMO}", "--data", f"coh:{coh}",
            "--metrics", "bleu2,rouge_l", "--quality", "overall", "--stand-in", "overall=coherence"]
    assert main([*args, "-o", str(tmp_path / "m")]) == 0
    printed = capsys.readouterr().out
    assert "stand-in: coh lends its coherence ratings as overall" in printed
    # the lent ratings count as one more (set, overall) pair in the recorded table
    assert main([*args, "-o", str(tmp_path / "m2"), "--json"]) == 0
    fitted = json.loads(capsys.readouterr().out)
    assert fitted["stand_ins"] == [{"set": "coh", "quality": "overall", "from": "coherence"}]
    assert {(p["set"], p["quality"]) for p in fitted["spearman"]} == {("demo", "overall"), ("coh", "coherence"),
                                                                        ("coh", "overall")}
