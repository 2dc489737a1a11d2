"""METEOR compares words the way the jar does: by Java String.hashCode() in the exact and stem
stages. The pairs below were scored by the METEOR 1.5 jar (pycocoevalcap 1.2, one reference
each); the first one is the held-out sentence of issue 14 that exposed the difference."""

from __future__ import annotations

import pytest

from dialeval.metrics.base import Batch
from dialeval.metrics.overlap.meteor import resources as meteor_resources
from dialeval.metrics.overlap.meteor.javahash import java_hash
from dialeval.metrics.overlap.meteor.metric import Meteor

# (hypothesis, reference, jar score)
JAR_PAIRS = [
    ("this is a winner, mercedes f1 car racing.", "Now is the time to do it .", 0.17079143672423533),
    ("do", "f1", 1.0),
    ("... on dn", "... on f0", 1.0),
]


@pytest.fixture(scope="module")
def real_resources():
    try:
        meteor_resources.locate(None)
    except meteor_resources.MeteorResourceError as exc:
        pytest.skip(str(exc))


def test_java_hash_by_hand():
    # 'd'=100 'o'=111 -> 100*31+111 = 3211; 'f'=102 '1'=49 -> 102*31+49 = 3211
    assert java_hash("do") == java_hash("f1") == 3211
    assert java_hash("dn") == java_hash("f0") == 3210
    assert java_hash("") == 0
    # wraps to a signed 32-bit value like Java's int arithmetic
    big = 0
    for c in "hello world":
        big = big * 31 + ord(c)
    big %= 1 << 32
    assert java_hash("hello world") == (big - (1 << 32) if big >= 1 << 31 else big)
    # UTF-16 code units: U+1F600 is the surrogate pair D83D DE00
    assert java_hash("\U0001F600") == 0xD83D * 31 + 0xDE00


def _scores(compare, pairs):
    metric = Meteor(meteor_compare=compare)
    stats = metric.multi_stats(Batch([h for h, _, _ in pairs], [[r] for _, r, _ in pairs]))
    return metric.sentence_from_stats(stats)


def test_hash_collisions_match_like_the_jar(real_resources):
    got = _scores("hash", JAR_PAIRS)
    for (hyp, ref, want), value in zip(JAR_PAIRS, got):
        assert value == pytest.approx(want, abs=1e-12), (hyp, ref)


def test_strings_mode_does_not_match_colliding_words(real_resources):
    got = _scores("strings", JAR_PAIRS)
    assert got[0] < JAR_PAIRS[0][2] - 0.05      # "do" ~ "f1" is no longer an exact match
    assert got[1] == 0.0
    assert got[2] < 1.0
    # without collisions both modes agree
    plain = [("the cat sat on the mat", "a cat was sitting on the mat", None)]
    assert _scores("strings", plain)[0] == _scores("hash", plain)[0]


def test_compare_option_is_in_the_signature_and_checked():
    assert "compare:hash" in str(Meteor().signature())
    assert "compare:strings" in str(Meteor(meteor_compare="strings").signature())
    from dialeval.errors import DialevalError
    with pytest.raises(DialevalError):
        Meteor(meteor_compare="bytes")


def test_corpus_value_with_a_collision_equals_the_jars(real_resources):
    # jar, both pairs as one corpus (pycocoevalcap compute_score): 0.23196470239991504
    metric = Meteor()
    stats = metric.multi_stats(Batch(["do", JAR_PAIRS[0][0]], [["f1"], [JAR_PAIRS[0][1]]]))
    assert metric.corpus_from_stats(stats.sum(axis=0)) == pytest.approx(0.23196470239991504, abs=1e-12)
