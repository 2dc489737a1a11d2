"""The compiled METEOR kernel (kernel.pyx) gives exactly what the pure-Python aligner gives.

The Python path (`align.pair_stats` + `metric.score_stats`) is the reference that the parity
tests tied to the jar; here random batches, built to reach every stage (Java hash collisions,
stems, WordNet synonyms, phrases and paraphrases from METEOR's own table, function words,
punctuation, repeated words), are scored both ways and the statistics rows and sentence scores
must be identical, bit for bit, in both comparison modes.
"""

from __future__ import annotations

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from dialeval.metrics.base import Batch  # noqa: E402
from dialeval.metrics.overlap.meteor import metric as meteor_metric  # noqa: E402
from dialeval.metrics.overlap.meteor import resources as meteor_resources  # noqa: E402

pytest.importorskip("dialeval.metrics.overlap.meteor.kernel", reason="the Cython kernel is not built")

WORDS = [
    # exact-stage hash collisions: do/f1 = 3211, dn/f0 = 3210; stems colliding ("doing" -> do)
    "do", "f1", "dn", "f0", "doing", "f1s",
    # stems
    "run", "runs", "running", "ran", "play", "played", "playing", "player",
    # synonyms and inflections
    "big", "large", "huge", "car", "cars", "automobile", "happy", "glad", "buy", "bought", "purchase",
    "talk", "speak", "spoke", "film", "movie", "movies",
    # function words and punctuation
    "the", "a", "of", "to", "in", "is", "it", "i", "you", "not", "n't", "'s", ",", ".", "?", "!",
]

# words and forms that meet in the stem and synonym stages (and "doing" ~ "f1s" by stem hash)
VARIANTS = {"run": ["runs", "running", "ran"], "play": ["played", "playing", "player"],
            "car": ["cars", "automobile"], "big": ["large", "huge"], "happy": ["glad"],
            "buy": ["bought", "purchase"], "talk": ["speak", "spoke"], "film": ["movie", "movies"],
            "do": ["doing", "f1", "f1s"], "dn": ["f0"]}


@pytest.fixture(scope="module")
def phrases():
    """Phrases and paraphrases from METEOR's table (every 50,000th entry), as word lists."""
    try:
        res = meteor_resources.load_resources()
    except meteor_resources.MeteorResourceError as exc:
        pytest.skip(str(exc))
    folder = res.cache
    vocab = (folder / "para_vocab.txt").read_text(encoding="utf-8").split("\n")
    out = []
    for side in ("a", "b"):
        off = np.load(folder / f"para_{side}_off.npy", mmap_mode="r")
        ids = np.load(folder / f"para_{side}_ids.npy", mmap_mode="r")
        for e in range(0, len(off) - 1, 50_000):
            out.append(" ".join(vocab[i] for i in ids[off[e]:off[e + 1]]))
    return out


def _both(hyps, refs, compare, monkeypatch):
    """(stats, sentence scores) of the compiled kernel and of the pure-Python aligner."""
    batch = Batch(list(hyps), [list(r) for r in refs])
    metric = meteor_metric.Meteor(meteor_compare=compare, meteor_workers=1)
    stats_c = metric.multi_stats(batch)
    scores_c = metric.sentence_from_stats(stats_c)
    with monkeypatch.context() as m:
        m.setattr(meteor_metric, "_kernel", lambda: None)
        stats_p = metric.multi_stats(batch)
        scores_p = metric.sentence_from_stats(stats_p)
    return (stats_c, scores_c), (stats_p, scores_p)


def _sentence(phrases):
    """Half single words of WORDS, half phrases of the table."""
    item = st.one_of(st.sampled_from(WORDS), st.sampled_from(phrases))
    return st.lists(item, min_size=0, max_size=25).map(" ".join)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_kernel_equals_python_on_random_batches(data, phrases, monkeypatch):
    n = data.draw(st.integers(1, 4))
    hyps = [data.draw(_sentence(phrases)) for _ in range(n)]
    refs = [[data.draw(_sentence(phrases)) for _ in range(data.draw(st.integers(1, 3)))] for _ in range(n)]
    # some references share text with their hypothesis (identical-sentence shortcut, repeats)
    if data.draw(st.booleans()):
        refs[0].append(hyps[0])
    # some hypotheses are a reference with words inflected or swapped for synonyms
    if data.draw(st.booleans()):
        words = refs[-1][0].split()
        hyps[-1] = " ".join(data.draw(st.sampled_from([w, *VARIANTS[w]])) if w in VARIANTS else w
                            for w in words)
    compare = data.draw(st.sampled_from(["hash", "strings"]))
    (stats_c, scores_c), (stats_p, scores_p) = _both(hyps, refs, compare, monkeypatch)
    np.testing.assert_array_equal(stats_c, stats_p)
    np.testing.assert_array_equal(scores_c, scores_p)


def test_kernel_equals_python_on_long_repetitive_segments(phrases, monkeypatch):
    # beyond 512 words the Python path switches to its bounded search (`_search`); the kernel
    # has one search for every length
    rng = np.random.default_rng(7)
    pool = WORDS[:12] + phrases[:20]
    long_hyp = " ".join(rng.choice(pool, size=700))
    long_ref = " ".join(rng.choice(pool, size=560))
    hyps = [long_hyp, " ".join(["do"] * 900), "the car"]
    refs = [[long_ref, "f1 do the"], ["i do it , f1 do , do"], [" ".join(["the car"] * 300)]]
    (stats_c, scores_c), (stats_p, scores_p) = _both(hyps, refs, "hash", monkeypatch)
    np.testing.assert_array_equal(stats_c, stats_p)
    np.testing.assert_array_equal(scores_c, scores_p)
    # four of the 900 "do" align exactly: with the reference's three "do" and its "f1" (same hash)
    assert stats_c[1, 4] == 4 and stats_c[1, 0] == 900


def test_score_rows_equals_score_stats():
    from dialeval.metrics.overlap.meteor import kernel

    rng = np.random.default_rng(3)
    rows = rng.integers(0, 6, size=(500, 23)).astype(np.float64)
    rows[:50] = 0.0                              # empty segments: 0/0 -> NaN -> 0
    rows[50:60, 20] = 1                          # one chunk: the perfect-segment rule
    got = kernel.score_rows(rows)
    want = np.array([meteor_metric.score_stats(r) for r in rows])
    np.testing.assert_array_equal(got, want)


def test_forked_workers_give_the_same_rows(phrases, monkeypatch):
    hyps = ["the big car runs", "do it", "a film of public"] * 3
    refs = [["a large automobile is running", "f1 it"], ["do it ."], [phrases[3], "the movie"]] * 3
    batch = Batch(hyps, refs)
    one = meteor_metric.Meteor(meteor_workers=1).multi_stats(batch)
    monkeypatch.setattr(meteor_metric, "_MIN_PAIRS_PER_WORKER_COMPILED", 1)
    two = meteor_metric.Meteor(meteor_workers=2).multi_stats(batch)
    np.testing.assert_array_equal(one, two)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from([0, 1, 2, 7, 2**32, 2**63, 2**64 - 1, 12345678901234567]) | st.integers(0, 2**64 - 1),
                max_size=300))
def test_unique_inverse_equals_numpys(keys):
    """The paraphrase lookup's distinct n-gram keys and where each key goes, as np.unique gives them."""
    from dialeval.metrics.overlap.meteor.kernel import unique_inverse_u64

    values = np.array(keys, dtype=np.uint64)
    want, where = np.unique(values, return_inverse=True)
    got, back = unique_inverse_u64(values)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(back, where.reshape(-1))
    assert got.dtype == np.uint64 and back.dtype == np.int64
