"""ADEM's copy term (metrics/learned/adem/copy.py): the feature and the penalty by hand, the
choice of weight and knee on validation rows, and a model that learns it and keeps it."""

from __future__ import annotations

import numpy as np
import pytest

from dialeval.metrics.learned.adem import copy


def test_overlap_is_the_word_set_f1_with_the_last_turn():
    contexts = [["an older turn", "Hi there, how are you?"], [], ["hello"]]
    got = copy.overlap(contexts, ["How are you", "how are you", ""])
    # {how, are, you} against {hi, there, how, are, you}: 2 * 3 / (3 + 5); no context; no words
    assert got.tolist() == [0.75, 0.0, 0.0]
    assert copy.overlap([["We need to talk ."]], ["we need to TALK"]).tolist() == [1.0]


def test_penalty_is_zero_below_the_knee_and_the_weight_at_a_copy():
    x = np.array([0.4, 0.5, 0.75, 1.0])
    assert copy.penalty(x, 2.0, 0.5).tolist() == [0.0, 0.0, 1.0, 2.0]
    assert copy.penalty(x, 0.0, 0.5).tolist() == [0.0] * 4


def test_choose_turns_the_term_on_only_when_copies_outrank_real_replies():
    rng = np.random.default_rng(0)
    y = np.repeat([1.0, 2.0, 3.0, 4.0, 5.0], 8)
    scores = y + rng.normal(scale=0.1, size=len(y))     # the model already orders the replies
    x = np.full(len(y), 0.1)
    groups = np.array(["a", "b"] * 20)
    above = copy.choose(scores, x, y, groups, np.full(len(y), 5.5), np.ones(len(y)))
    assert above["weight"] > 0 and above["val_spearman_with_copies"] > above["grid"][0]["spearman"]
    below = copy.choose(scores, x, y, groups, np.full(len(y), 0.5), np.ones(len(y)))
    assert below["weight"] == 0.0      # nothing to gain: the term stays off


def test_a_model_learns_the_term_saves_it_and_a_parrot_pays(tmp_path):
    pytest.importorskip("torch")
    from test_adem import rows_for, tiny_encoder

    from dialeval.metrics.learned.adem.model import Adem

    encoder = tmp_path / "hred"
    tiny_encoder().save(encoder)
    rows = rows_for(80)
    model = Adem(encoder=f"hred:{encoder}", pca_dims=4, max_epochs=20, copy_term=True).fit(rows)
    record = model.training_["copy_term"]
    assert model.copy_term_.weight > 0        # the toy model ranks its rows' questions above their answers
    assert record["weight"] == model.copy_term_.weight and record["knee"] == model.copy_term_.knee
    model.save(tmp_path / "adem")
    again = Adem.load(tmp_path / "adem")
    ctx = [r.context for r in rows[:6]]
    refs = [r.references for r in rows[:6]]
    parrots = [c[-1] for c in ctx]
    np.testing.assert_array_equal(again.predict(ctx, refs, parrots), model.predict(ctx, refs, parrots))
    without = model.predict_vectors(*model.encode(ctx, refs, parrots))
    lost = without - model.predict(ctx, refs, parrots)
    np.testing.assert_allclose(lost, np.full(6, model.copy_term_.weight))     # a copy loses the whole weight


def test_r_adem_takes_the_term_and_its_metric_reads_the_last_turn_for_it(tmp_path):
    """r_adem's bilinear part reads the reference alone, but a parroted turn is only known by the
    turn it repeats: the term reads the context, and the `r_adem` metric must hand it over."""
    pytest.importorskip("torch")
    from test_adem import rows_for, tiny_encoder

    import dialeval
    from dialeval.metrics.learned.adem.model import Adem
    from dialeval.metrics.softfloor import lift_range

    encoder = tmp_path / "hred"
    tiny_encoder().save(encoder)
    rows = rows_for(80)
    model = Adem(encoder=f"hred:{encoder}", variant="r_adem", pca_dims=4, max_epochs=20, copy_term=True).fit(rows)
    assert "copy_term" in model.training_          # chosen on the validation rows like the others'
    model.set_copy_term({"weight": 2.0, "knee": 0.5})
    model.save(tmp_path / "r_adem")
    rows = rows[:6]
    ctx, refs = [r.context for r in rows], [r.references for r in rows]
    parrots = [c[-1] for c in ctx]
    without = model.predict_vectors(*model.encode(ctx, refs, parrots))
    samples = [{"id": r.id, "context": r.context, "response": p, "references": r.references}
               for r, p in zip(rows, parrots)]
    got = np.array([rec["scores"]["r_adem"] for rec in
                    dialeval.score(samples, ["r_adem"], adem_model=str(tmp_path / "r_adem")).records()])
    # every parrot loses the whole weight (word-set F1 1 > knee), then the floor is squashed
    np.testing.assert_allclose(got, lift_range(without - 2.0, 1.0, 5.0, top=False))
    alone = [dict(s, context=[]) for s in samples]      # without a context nothing is a copy
    got = np.array([rec["scores"]["r_adem"] for rec in
                    dialeval.score(alone, ["r_adem"], adem_model=str(tmp_path / "r_adem")).records()])
    np.testing.assert_allclose(got, lift_range(without, 1.0, 5.0, top=False))
