"""Word-overlap metrics on hand-worked examples and properties that must hold."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dialeval import score
from dialeval.metrics.overlap.rouge import _lcs_python, lcs_lengths
from dialeval.text.ngrams import encode


def one(hyp, refs, metric, mode="multi"):
    return float(score([{"response": hyp, "references": refs}], [metric], refs_mode=mode).sentence[metric][0])


def test_bleu1_hand_computed():
    # hyp "the cat sat on the mat" (6), ref "the cat is on the mat" (6):
    # unigram matches: the x2, cat, on, mat = 5 of 6; brevity: ratio (6+1e-15)/(6+1e-9) < 1
    ratio = (6 + 1e-15) / (6 + 1e-9)
    want = (5 + 1e-15) / (6 + 1e-9) * math.exp(1 - 1 / ratio)
    assert one("the cat sat on the mat", ["the cat is on the mat"], "bleu1") == pytest.approx(want, abs=1e-15)


def test_bleu2_clips_and_uses_closest_reference_length():
    # hyp "a a a a" (4); refs "a a" (2) and "b b b b b" (5): closest length is 5 (|5-4|=1 < |2-4|=2)
    # unigrams: a x4 clipped at max ref count 2 -> 2/4; bigrams: "a a" x3 clipped at 1 -> 1/3
    ratio = (4 + 1e-15) / (5 + 1e-9)
    b = (2 + 1e-15) / (4 + 1e-9) * (1 + 1e-15) / (3 + 1e-9)
    want = b ** 0.5 * math.exp(1 - 1 / ratio)
    assert one("a a a a", ["a a", "b b b b b"], "bleu2") == pytest.approx(want, rel=1e-13)


def test_rouge_l_hand_computed():
    # LCS("police killed the gunman", "police kill the gunman") = 3 ("police the gunman")
    p, r, b2 = 3 / 4, 3 / 4, 1.2 ** 2
    want = ((1 + b2) * p * r) / (r + b2 * p)
    assert one("police killed the gunman", ["police kill the gunman"], "rouge_l") == pytest.approx(want, abs=1e-15)


def test_rouge_multi_combines_best_precision_and_best_recall():
    hyp, refs = "a b c d", ["a b", "a b c d e f g h"]
    multi = one(hyp, refs, "rouge_l", "multi")
    best_single = one(hyp, refs, "rouge_l", "max")
    assert multi >= best_single
    p, r, b2 = 1.0, 1.0, 1.2 ** 2  # P from ref 2 (4/4), R from ref 1 (2/2)
    assert multi == pytest.approx(((1 + b2) * p * r) / (r + b2 * p))


def test_lcs_bitparallel_equals_dynamic_programming():
    rng = np.random.default_rng(0)

    def dp(a, b):
        t = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
        for i in range(1, len(a) + 1):
            for j in range(1, len(b) + 1):
                t[i][j] = t[i - 1][j - 1] + 1 if a[i - 1] == b[j - 1] else max(t[i - 1][j], t[i][j - 1])
        return t[-1][-1]

    hyps, refs = [], []
    for _ in range(300):
        hyps.append([str(x) for x in rng.integers(0, 6, rng.integers(0, 30))])
        refs.append([str(x) for x in rng.integers(0, 6, rng.integers(0, 80))])  # some > 64 tokens
    vocab: dict[str, int] = {}
    got = lcs_lengths(encode(hyps, vocab), encode(refs, vocab))
    assert got.tolist() == [dp(a, b) for a, b in zip(hyps, refs)]
    assert _lcs_python(np.array([1, 2, 3]), np.array([3, 2, 1])) == 1


def test_cider_single_item_is_zero_and_identity_is_maximal():
    assert one("a b c", ["a b c"], "cider_d") == 0.0  # ln N = 0 with one item
    rows = [{"response": "the cat sat down", "references": ["the cat sat down"]},
            {"response": "a dog ran", "references": ["the bird flew"]},
            {"response": "the cat sat", "references": ["the cat sat"]}]
    res = score(rows, ["cider", "cider_d"])
    # identical hypothesis and reference: cosine 1 for every order -> 10 * 1 / 1 = 10 (plain CIDEr)
    # ("the" has df 3 = N, so weight 0, which leaves the cosine of equal vectors at 1)
    assert res.sentence["cider"][0] == pytest.approx(10.0)
    assert res.sentence["cider_d"][0] == pytest.approx(10.0)  # no clipping loss, no length penalty
    assert res.sentence["cider"][1] == 0.0
    # three tokens have no 4-gram: sim_4 = 0, so the mean over n = 1..4 is 3/4 -> 7.5
    assert res.sentence["cider"][2] == pytest.approx(7.5)


def test_reference_modes_order_and_no_reference_samples():
    rows = [{"response": "a b c d", "references": ["a b c d", "x y"]},
            {"response": "p q", "references": []}]
    for metric in ["bleu4", "rouge_l", "cider"]:
        mx = score(rows, [metric], refs_mode="max")
        mean = score(rows, [metric], refs_mode="mean")
        assert mx.sentence[metric][0] >= mean.sentence[metric][0]
        assert math.isnan(mx.sentence[metric][1]) and math.isnan(mean.sentence[metric][1])
        assert not math.isnan(mx.corpus[metric])


def test_empty_hypothesis_values_match_the_original_rules():
    # coco BLEU: brevity factor exp(1 - 1/ratio) underflows to 0 for an empty hypothesis
    assert one("", ["a b"], "bleu4") == 0.0
    # ROUGE-L: "".split(" ") is one empty token; it matches an empty reference
    assert one("", ["a b"], "rouge_l") == 0.0
    assert one("", [""], "rouge_l") == pytest.approx(1.0)


def test_statistics_merge_across_batches():
    """Corpus BLEU from the statistics of two halves equals corpus BLEU of the whole."""
    from dialeval.metrics.registry import build_metric

    rows = [{"response": f"w{i} a b c", "references": [f"w{i} a b", "a b c d"]} for i in range(10)]
    metric = build_metric("bleu4")
    whole = score(rows, [metric])
    halves = [score(rows[:4], [metric]), score(rows[4:], [metric])]
    merged = metric.reduce(np.concatenate([h.stats["bleu4"] for h in halves]))
    assert merged == whole.corpus["bleu4"]


def test_ptb_tokenizer_changes_signature_and_tokens():
    res = score([{"response": "Don't stop.", "references": ["do n't stop ."]}], ["bleu1"], tokenizer="ptb-lower")
    assert "tok:ptb-lower" in res.signatures["bleu1"]
    assert res.sentence["bleu1"][0] == pytest.approx(1.0, abs=1e-8)


@pytest.mark.parametrize("hyp,refs,same", [
    ("a b", ["c d"], True), ("a  b", ["c"], False), (" a", ["b"], False), ("a", [""], False),
    ("a", ["b "], False), ("a\tb", ["c"], False), ("", ["a"], False), ("a", ["b", "c d"], True),
])
def test_rouge_shares_whitespace_tokens_only_when_splitting_agrees(hyp, refs, same):
    from dialeval.metrics.base import Batch
    from dialeval.metrics.overlap.tokens import _space_is_whitespace

    assert _space_is_whitespace(Batch([hyp], [refs])) is same
    assert (hyp.split(" ") == hyp.split() and all(r.split(" ") == r.split() for r in refs)) is same
