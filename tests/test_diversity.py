"""n-gram entropy (holistic eq. 5-6) and distinct-n, checked by hand."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from conftest import DATA, need

from dialeval.errors import InputError
from dialeval.metrics.diversity import (distinct_n, diversity_report, group_entropy, ngram_entropy,
                                        responses_of_system)
from dialeval.metrics.diversity.groups import read_groups


def test_entropy_by_hand():
    group = ["a b", "a c"]
    # unigrams a:2 b:1 c:1 -> -(1/2 log2 1/2 + 2 * 1/4 log2 1/4) = 1.5 bits
    assert ngram_entropy(group, 1) == pytest.approx(1.5)
    # bigrams (a b), (a c): two equally likely -> 1 bit; n-grams never cross responses
    assert ngram_entropy(group, 2) == pytest.approx(1.0)
    assert math.isnan(ngram_entropy(group, 3))
    # eq. 5 literally: -1/|R| sum over occurrences of log2 p(w)
    tokens = "x y x x z".split()
    p = {w: tokens.count(w) / len(tokens) for w in tokens}
    literal = -sum(math.log2(p[w]) for w in tokens) / len(tokens)
    assert ngram_entropy(["x y x", "X z"], 1) == pytest.approx(literal)  # lower-cased
    assert ngram_entropy(["x y x", "X z"], 1, lower=False) != pytest.approx(literal)


def test_identical_responses_have_zero_entropy_and_low_distinct():
    assert ngram_entropy(["same reply"] * 5, 1) == pytest.approx(1.0)  # two words, equally frequent
    assert ngram_entropy(["yes"] * 5, 1) == 0.0
    assert distinct_n(["same reply"] * 5, 2) == pytest.approx(1 / 5)
    assert distinct_n(["a b c", "d e f"], 1) == 1.0


def test_eq6_mean_over_groups_skips_empty():
    groups = [["a b", "a c"], ["x x"], [""]]
    assert group_entropy(groups, 1) == pytest.approx((1.5 + 0.0) / 2)
    report = diversity_report(groups)
    assert report["groups"] == 3 and report["distinct1"] == pytest.approx((3 / 4 + 1 / 2) / 2)


def test_system_callable_is_asked_for_every_augmented_query():
    augmented = [{"context": ["hi"], "queries": ["q1", "q2"]}, {"queries": ["q3"]}]
    seen = []

    def system(context, query):
        seen.append((tuple(context), query))
        return f"reply to {query}"

    out = responses_of_system(system, augmented)
    assert out == [["reply to q1", "reply to q2"], ["reply to q3"]]
    assert seen[0] == (("hi",), "q1")


def test_readers(tmp_path):
    j = tmp_path / "g.jsonl"
    j.write_text(json.dumps({"id": "a", "responses": ["x", "y"]}) + "\n\n" + json.dumps({"responses": ["z"]}) + "\n")
    assert [g["responses"] for g in read_groups(j)] == [["x", "y"], ["z"]]
    t = tmp_path / "g.txt"
    t.write_text("a\nb\n\nc\n")
    assert [g["responses"] for g in read_groups(t)] == [["a", "b"], ["c"]]
    assert [g["responses"] for g in read_groups(t, group_size=2)] == [["a", "b"], ["c"]]
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"responses": ["x"]}) + "\n" + json.dumps({"responses": "x"}) + "\n")
    with pytest.raises(InputError, match=r"bad.jsonl:2: field 'responses'"):
        read_groups(bad)
    csvf = tmp_path / "g.csv"
    csvf.write_bytes(b"Group Id,Question Group,Answer Group\n1,\"q\",\"I \x92m fine\nok\"\n")
    groups = read_groups(csvf)
    assert groups[0]["responses"] == ["I \u2019m fine", "ok"]


def test_holistic_response_diversity_sets():
    base = need(DATA / "holistic-eval" / "augmented_dataset" / "Response_Diversity")
    for name in ("WS.csv", "CTG.csv"):
        groups = read_groups(base / name)
        assert len(groups) == 100
        assert all(len(g["responses"]) == 5 for g in groups)
        report = diversity_report([g["responses"] for g in groups])
        # five responses: unigram entropy is at most log2 of their token count, distinct-n in (0, 1]
        assert 0 < report["entropy1"] < math.log2(5 * 40)
        assert 0 < report["distinct1"] <= report["distinct2"] <= 1


def test_cli_diversity(tmp_path, capsys):
    from dialeval.cli import main

    g = tmp_path / "g.jsonl"
    g.write_text(json.dumps({"responses": ["a b", "a c"]}) + "\n")
    assert main(["diversity", str(g), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["entropy1"] == pytest.approx(1.5) and report["distinct2"] == 1.0
    aug = tmp_path / "aug.jsonl"
    aug.write_text(json.dumps({"context": [], "queries": ["one two", "three"]}) + "\n")
    (tmp_path / "echo_system.py").write_text("def reply(context, query):\n    return query\n")
    import sys
    sys.path.insert(0, str(tmp_path))
    try:
        assert main(["diversity", str(aug), "--system", "echo_system:reply", "--json"]) == 0
    finally:
        sys.path.remove(str(tmp_path))
    report = json.loads(capsys.readouterr().out)
    assert report["entropy1"] == pytest.approx(np.log2(3))
    assert main(["diversity", str(tmp_path / "missing.csv")]) == 2
