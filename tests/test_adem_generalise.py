"""The ADEM options aimed at new data sets: pairwise ranking loss, per-set standardisation of
the human scores, and the uncentred start that equals the cosine baseline."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))
from dialeval.metrics.learned.adem.model import Adem, pairwise_hinge, standardise_per_set  # noqa: E402


def test_standardise_per_set_gives_mean_0_sd_1_within_each_set():
    y = np.array([1.0, 2.0, 3.0, 10.0, 20.0, 30.0, 40.0, 4.0, 4.0])
    g = np.array(["a", "a", "a", "b", "b", "b", "b", "c", "c"])
    z = standardise_per_set(y, g)
    for s in ("a", "b"):
        assert z[g == s].mean() == pytest.approx(0.0, abs=1e-12)
        assert z[g == s].std() == pytest.approx(1.0)
    # set a by hand: mean 2, population sd sqrt(2/3)
    assert z[0] == pytest.approx(-1 / np.sqrt(2 / 3))
    # a set whose scores are all equal carries no order: 0, not a division by zero
    assert z[g == "c"].tolist() == [0.0, 0.0]


def test_ranking_loss_is_zero_when_the_order_holds_with_the_margin():
    y = np.array([3.0, 2.0, 1.0])
    g = np.zeros(3, int)
    loss, grad = pairwise_hinge(np.array([2.0, 1.0, 0.0]), y, g, margin=0.5)
    assert loss == 0.0 and not grad.any()
    # gaps of 0.2 < 0.5: each of the three ordered pairs costs 0.5 - gap
    # pairs (0,1): 0.3, (1,2): 0.3, (0,2): 0.5 - 0.4 = 0.1 -> 0.7
    loss, grad = pairwise_hinge(np.array([0.4, 0.2, 0.0]), y, g, margin=0.5)
    assert loss == pytest.approx(0.7)
    # d/ds0 = -2 (better than two), d/ds1 = -1 + 1, d/ds2 = +2
    assert grad.tolist() == [-2.0, 0.0, 2.0]


def test_ranking_loss_ignores_ties_and_pairs_across_sets():
    s = np.array([0.0, 1.0, 0.0, 1.0])
    y = np.array([5.0, 1.0, 3.0, 3.0])
    g = np.array([0, 1, 2, 2])
    assert pairwise_hinge(s, y, g, margin=1.0)[0] == 0.0


def test_ranking_gradient_matches_finite_differences():
    rng = np.random.default_rng(1)
    s, y, g = rng.normal(size=8), rng.integers(1, 6, 8).astype(float), rng.integers(0, 2, 8)
    _, grad = pairwise_hinge(s, y, g, 0.7)
    for i in range(8):
        e = np.zeros(8)
        e[i] = 1e-6
        num = (pairwise_hinge(s + e, y, g, 0.7)[0] - pairwise_hinge(s - e, y, g, 0.7)[0]) / 2e-6
        assert num == pytest.approx(grad[i], abs=1e-4)


def test_uncentred_start_with_all_dimensions_is_the_cosine():
    rng = np.random.default_rng(0)
    unit = lambda a: a / np.linalg.norm(a, axis=1, keepdims=True)  # noqa: E731
    C, R, H = (unit(rng.normal(size=(60, 10))) for _ in range(3))
    y = rng.uniform(1, 5, 60)
    m = Adem(pca_dims=0, centre=False, max_epochs=1).fit_vectors(C, R, H, y).at_initialisation()
    cos = np.einsum("ij,ij->i", R, H) + np.einsum("ij,ij->i", C, H)
    assert np.allclose(m.predict_vectors(C, R, H), (cos - m.head_.alpha) / m.head_.beta)


def test_ranking_and_standardised_training_run_and_keep_the_defaults_unchanged():
    rng = np.random.default_rng(0)
    C, R, H = (rng.normal(size=(120, 6)) for _ in range(3))
    y = np.clip(3 + np.einsum("ij,ij->i", R, H) + rng.normal(size=120) * 0.1, 1, 5)
    g = np.repeat([0, 1], 60)
    base = Adem(pca_dims=6, max_epochs=5).fit_vectors(C, R, H, y)
    same = Adem(pca_dims=6, max_epochs=5).fit_vectors(C, R, H, y, None, g)   # groups alone change nothing
    assert np.array_equal(base.head_.M, same.head_.M)
    ranked = Adem(pca_dims=6, max_epochs=5, rank_weight=1.0, standardise=True).fit_vectors(C, R, H, y, None, g)
    assert not np.array_equal(base.head_.M, ranked.head_.M) and np.isfinite(ranked.head_.M).all()


def test_hard_negatives_are_made_from_training_rows_only():
    from dialeval.metrics.learned.adem.data import RatedRow, split_by_context
    from dialeval.metrics.learned.adem.model import NEGATIVE_SCORE, negative_rows

    rows = [RatedRow(id=f"r{i}", dataset="a" if i % 2 else "b", context=[f"hello number {i // 3}", f"how are you {i}"],
                     response=f"fine thanks {i} and you", references=[f"good {i}"], score=1 + i % 5)
            for i in range(40)]
    negs = negative_rows(rows, "parrot,generic,other_item", seed=0)
    by_family = {f: [n for n in negs if n.meta["negative"] == f] for f in ("parrot", "generic", "other_item")}
    assert all(len(v) == 40 for v in by_family.values())
    assert all(n.score == NEGATIVE_SCORE and n.response == r.context[-1]            # parrot: the last turn
               for n, r in zip(by_family["parrot"], rows))
    responses = {r.response for r in rows}
    assert all(n.response in responses and n.response != r.response                  # another row's answer
               for n, r in zip(by_family["other_item"], rows))
    assert all(n.dataset == r.dataset for n, r in zip(by_family["generic"], rows))   # ranked within its set
    with pytest.raises(Exception, match="unknown probe family"):
        negative_rows(rows, "parroting", seed=0)
    # in a fit, the split is made on the real rows first: validation gets no negatives, and each
    # training row one per family
    pytest.importorskip("sentence_transformers")
    try:
        prepared = Adem(encoder="minilm", hard_negatives="parrot,generic").prepare(rows)
    except Exception as exc:  # noqa: BLE001  (no packaged MiniLM where the tests run)
        pytest.skip(f"no MiniLM encoder: {exc}")
    real_train, real_val = split_by_context(rows, [0.85, 0.15], 0)
    assert all("negative" not in prepared.rows[i].meta for i in prepared.val_idx)
    assert sorted(i for i in prepared.train_idx if i < len(rows)) == sorted(real_train)
    assert len(prepared.train_idx) == 3 * len(real_train)
