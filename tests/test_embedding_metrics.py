"""Embedding Average, Vector Extrema, Greedy Matching: hand computations and nlg-eval parity."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from conftest import DATA, GOLDEN, need
from dialeval.cli import main
from dialeval.metrics.base import Batch
from dialeval.metrics.embedding.nlgeval import EmbeddingAverage, GreedyMatching, VectorExtrema
from dialeval.scoring import score

VECS = {"a": [1.0, -2.0, 0.0], "b": [3.0, 2.0, 0.0], "c": [-1.0, 0.5, 1.0], "hello": [0.0, 1.0, 1.0]}


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DIALEVAL_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture
def vecfile(tmp_path):
    path = tmp_path / "tiny.txt"
    path.write_text("".join(f"{w} {' '.join(map(str, v))}\n" for w, v in VECS.items()), encoding="utf-8")
    return str(path)


def cos(u, v):
    u, v = np.asarray(u, float), np.asarray(v, float)
    return float(u @ v / np.linalg.norm(u) / np.linalg.norm(v))


def test_extrema_takes_larger_magnitude_negative_on_tie_zero_when_min_is_zero(vecfile):
    # extrema("a b"): dim0 max 3 (min 1 > 0) -> 3; dim1 max 2, min -2: tie -> -2; dim2 min 0 -> 0.
    out = VectorExtrema(word_vectors=vecfile).compute(Batch(["a b"], [["c"]]))
    assert out.sentence[0] == pytest.approx(cos([3, -2, 0], VECS["c"]), abs=1e-6)


def test_average_is_normalised_sum(vecfile):
    # sum(a, b) = (4, 0, 0); against c: -1 / |c| = -1 / 1.5.
    out = EmbeddingAverage(word_vectors=vecfile).compute(Batch(["a b"], [["c"]]))
    assert out.sentence[0] == pytest.approx(-1 / 1.5, abs=1e-6)


def test_out_of_vocabulary_word_gets_the_mean_vector(vecfile):
    mean = np.mean(list(VECS.values()), axis=0)
    # nlg-eval: even a text of unknown words only is the mean vector.
    out = EmbeddingAverage(word_vectors=vecfile, embedding_rules="nlgeval").compute(Batch(["zzz"], [["c"]]))
    assert out.sentence[0] == pytest.approx(cos(mean, VECS["c"]), abs=1e-6)
    # dialeval rules: inside a partly known text an unknown word is the mean vector too.
    out = EmbeddingAverage(word_vectors=vecfile).compute(Batch(["zzz a"], [["c"]]))
    assert out.sentence[0] == pytest.approx(cos(mean + np.array(VECS["a"]), VECS["c"]), abs=1e-6)


@pytest.mark.parametrize("cls", [EmbeddingAverage, VectorExtrema, GreedyMatching])
def test_a_side_without_known_words_is_nan_with_a_warning(vecfile, cls):
    from dialeval.errors import DialevalWarning

    batch = Batch(["zzz yyy", "a", "a b"], [["qqq"], ["zzz"], ["zzz", "b"]])
    with pytest.warns(DialevalWarning, match="2 sample"):
        out = cls(word_vectors=vecfile).compute(batch)
    assert math.isnan(out.sentence[0]) and math.isnan(out.sentence[1])
    # Sample 3 keeps the reference that has a known word.
    alone = cls(word_vectors=vecfile).compute(Batch(["a b"], [["b"]]))
    assert out.sentence[2] == pytest.approx(alone.sentence[0], abs=1e-6)
    # nlg-eval's rule: two texts of unknown words are both the mean vector, cosine 1.
    nlg = cls(word_vectors=vecfile, embedding_rules="nlgeval").compute(batch)
    assert nlg.sentence[0] == pytest.approx(1.0, abs=1e-6)


def test_out_of_vocabulary_rate_is_reported(vecfile):
    from dialeval.errors import DialevalWarning

    # 5 tokens: a, zzz | b, c, yyy -> 2 unknown = 40.0%
    with pytest.warns(DialevalWarning, match=r"40\.0% of 5 tokens out of vocabulary"):
        EmbeddingAverage(word_vectors=vecfile).compute(Batch(["a zzz"], [["b c yyy"]]))


def test_greedy_matches_both_directions(vecfile):
    a, b, c = (VECS[k] for k in "abc")
    dir1 = (max(cos(a, a), cos(c, a)) + max(cos(a, b), cos(c, b))) / 2    # each hyp word's best ref word
    dir2 = (max(cos(a, a), cos(a, b)) + max(cos(c, a), cos(c, b))) / 2    # each ref word's best hyp word
    out = GreedyMatching(word_vectors=vecfile).compute(Batch(["a b"], [["a c"]]))
    assert out.sentence[0] == pytest.approx((dir1 + dir2) / 2, abs=1e-6)


@pytest.mark.parametrize("cls", [EmbeddingAverage, VectorExtrema, GreedyMatching])
def test_reference_modes(vecfile, cls):
    batch = Batch(["a b", "c a"], [["c", "b a", "hello"], ["a"]])
    single = [[cls(word_vectors=vecfile).compute(Batch([h], [[r]])).sentence[0] for r in refs]
              for h, refs in zip(batch.hyps, batch.refs)]
    multi = cls(word_vectors=vecfile).compute(batch)
    best = cls(word_vectors=vecfile, refs_mode="max").compute(batch)
    mean = cls(word_vectors=vecfile, refs_mode="mean").compute(batch)
    np.testing.assert_allclose(multi.sentence, [max(s) for s in single], atol=1e-6)
    np.testing.assert_allclose(best.sentence, multi.sentence, atol=1e-6)
    np.testing.assert_allclose(mean.sentence, [np.mean(s) for s in single], atol=1e-6)
    assert multi.corpus == pytest.approx(np.mean([max(s) for s in single]), abs=1e-6)


def test_empty_hypothesis_scores_the_floor_and_no_references_nan(vecfile):
    out = EmbeddingAverage(word_vectors=vecfile).compute(Batch(["", "a", "b"], [["a"], [], ["", "a"]]))
    assert out.sentence[0] == -1.0             # a blank response: the bottom of the cosine scale
    assert math.isnan(out.sentence[1])         # no reference: no score, whatever the response
    assert out.sentence[2] == pytest.approx(cos(VECS["b"], VECS["a"]), abs=1e-6)   # the empty reference is skipped
    assert out.corpus == pytest.approx((out.sentence[0] + out.sentence[2]) / 2)


def test_vector_case_option(vecfile):
    batch = Batch(["Hello"], [["hello"]])
    keep = EmbeddingAverage(word_vectors=vecfile, vector_case="keep", embedding_rules="nlgeval").compute(batch)
    lower = EmbeddingAverage(word_vectors=vecfile, vector_case="lower").compute(batch)
    assert lower.sentence[0] == pytest.approx(1.0, abs=1e-6)
    mean = np.mean(list(VECS.values()), axis=0)                     # "Hello" is unknown when case is kept
    assert keep.sentence[0] == pytest.approx(cos(mean, VECS["hello"]), abs=1e-6)
    assert "case:lower" in str(lower.signature) and "case:keep" in str(keep.signature)


def test_case_follows_the_vectors(vecfile, tmp_path):
    # VECS has no uppercase word: auto lowercases, and says so in the signature.
    auto = EmbeddingAverage(word_vectors=vecfile)
    assert auto.compute(Batch(["Hello"], [["hello"]])).sentence[0] == pytest.approx(1.0, abs=1e-6)
    assert "case:auto-lower" in str(auto.signature())
    # A vocabulary with an uppercase entry keeps case: "Hello" and "hello" are different rows.
    cased = tmp_path / "cased.txt"
    cased.write_text("hello 0 1 1\nHello 1 0 0\n", encoding="utf-8")
    metric = EmbeddingAverage(word_vectors=str(cased))
    assert metric.compute(Batch(["Hello"], [["hello"]])).sentence[0] == pytest.approx(0.0, abs=1e-6)
    assert "case:auto-keep" in str(metric.signature())
    # nlg-eval compatibility keeps case whatever the vocabulary.
    assert "case:keep" in str(EmbeddingAverage(word_vectors=vecfile, embedding_rules="nlgeval").signature())


def test_nltk_tokenisation_splits_placeholders_and_contractions(vecfile):
    from dialeval.metrics.embedding.nlgeval import nltk_word_tokenize

    assert nltk_word_tokenize('<URL> don\'t "x"') == ["<", "URL", ">", "do", "n't", "``", "x", "''"]


def test_cli_score_with_word_vectors(vecfile, tmp_path, capsys):
    data = tmp_path / "in.jsonl"
    data.write_text(json.dumps({"response": "a b", "references": ["c"]}) + "\n", encoding="utf-8")
    code = main(["score", str(data), "--metrics", "emb_average,emb_extrema,emb_greedy", "--word-vectors",
                 vecfile, "--vector-case", "lower", "--json"])
    assert code == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["metrics"]["emb_average"]["corpus"] == pytest.approx(-1 / 1.5, abs=1e-6)
    assert "case:lower" in summary["metrics"]["emb_greedy"]["signature"]


NLGEVAL_NAMES = {"emb_average": "EmbeddingAverageCosineSimilarity", "emb_extrema": "VectorExtremaCosineSimilarity",
                 "emb_greedy": "GreedyMatchingScore"}


@pytest.mark.slow
def test_parity_with_nlgeval_on_dstc6():
    """golden/dstc6-embedding-nlgeval.json: nlg-eval's values on S_1, S_5, S_20 with the 50-d vectors."""
    golden = json.loads(need(GOLDEN / "dstc6-embedding-nlgeval.json").read_text(encoding="utf-8"))
    vectors = str(need(GOLDEN / "vectors-dstc6-50d.txt"))
    refs = [[l.strip() for l in need(DATA / p).read_text(encoding="utf-8").split("\n")[:-1]]
            for p in golden["references_in_order"]]
    records = []
    for system in ("S_1", "S_5", "S_20"):
        hyps = need(DATA / "dstc6-eval" / "hypotheses" / f"{system}.txt").read_text(encoding="utf-8").split("\n")[:-1]
        records += [{"response": h.strip(), "references": [r[i] for r in refs], "system": system}
                    for i, h in enumerate(hyps)]
    result = score(records, list(NLGEVAL_NAMES), word_vectors=vectors, embedding_rules="nlgeval",
                   progress=False)
    systems = np.array([r["system"] for r in records])
    for system in ("S_1", "S_5", "S_20"):
        for name, key in NLGEVAL_NAMES.items():
            gold = golden["systems"][system]["float32"][key]
            assert abs(result.systems[system][name] - gold["corpus"]) < 1e-6, (system, name)
            assert f"{result.systems[system][name]:.6f}" == gold["corpus_nlgeval_string"]
            ours = result.sentence[name][systems == system]
            assert np.max(np.abs(ours - np.array(gold["sentence"]))) < 1e-6, (system, name)
