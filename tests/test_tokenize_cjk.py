"""Tokenisation of text without spaces (sacreBLEU's char, zh and intl), the warning for unspaced
text under the default tokenizers, and the empty-response rule of the embedding metrics."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from dialeval import score
from dialeval.errors import DialevalWarning
from dialeval.text import tokenizers as tk


def test_char_zh_intl_tokens_written_out_by_hand():
    zh, char, intl = (tk.get_tokenizer(n) for n in ("zh", "char", "intl"))
    assert char("今天 好。") == ["今", "天", "好", "。"]
    assert zh("今天天气，好！ok") == ["今", "天", "天", "气", "，", "好", "！", "ok"]
    # the non-Chinese rest is split as mteval-13a: punctuation off, 3.14 and 1,000 kept, "-" after a digit
    assert zh('Hello, world! 3.14 and 1,000-2 (ok)') == \
        ["Hello", ",", "world", "!", "3.14", "and", "1,000", "-", "2", "(", "ok", ")"]
    # kana are not Chinese characters: zh keeps the run, char splits it
    assert zh("こんにちは、元気") == ["こんにちは", "、", "元", "気"]
    assert intl("Hello, world! 1,000.5 €5") == ["Hello", ",", "world", "!", "1,000.5", "€", "5"]
    assert intl("我们去吃饭吧。") == ["我们去吃饭吧", "。"]


def test_chinese_scores_with_zh_and_the_tokenizer_in_the_signature():
    samples = [{"response": "我们去吃饭吧", "references": ["我们去吃饭"]}]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plain = score(samples, ["bleu2", "rouge_l"], progress=False)
    zh = score(samples, ["bleu2", "rouge_l"], tokenizer="zh", progress=False)
    assert plain.sentence["bleu2"][0] < 1e-6 and plain.sentence["rouge_l"][0] == 0
    # 6 hypothesis characters, 5 reference ones, all 5 (4 bigrams) matched: precision 5/6 and 4/5,
    # no brevity penalty (hypothesis longer); ROUGE-L: LCS 5, P 5/6, R 1, beta 1.2
    assert zh.sentence["bleu2"][0] == pytest.approx(math.sqrt(5 / 6 * 4 / 5), rel=1e-6)
    p, r, b = 5 / 6, 1.0, 1.2
    assert zh.sentence["rouge_l"][0] == pytest.approx((1 + b * b) * p * r / (r + b * b * p), rel=1e-9)
    assert "tok:zh" in zh.signatures["bleu2"] and "tok:zh" in zh.signatures["rouge_l"]


def test_unspaced_text_warns_once_per_run(monkeypatch):
    monkeypatch.setattr(tk, "_WARNED_UNSPACED", set())
    samples = [{"response": "今天天气很好我们去公园散步吧", "references": ["今天天气不错我们去公园散步吧"]},
               {"response": "我不知道你在说什么东西呢", "references": ["我不明白"]}]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        score(samples, ["bleu2", "rouge_l", "cider_d"], progress=False, chunk_size=1)
        score(samples, ["bleu2"], progress=False)
    mine = [w for w in caught if "no whitespace" in str(w.message)]
    assert len(mine) == 1 and issubclass(mine[0].category, DialevalWarning)
    assert "--tokenize zh" in str(mine[0].message)


@pytest.mark.parametrize("text", ["internationalization", "https://example.com/a/long/path", "你好", "hello world"])
def test_no_warning_for_spaced_short_or_ascii_text(text):
    assert tk.unspaced_example([text]) is None


def test_an_empty_response_scores_the_floor_in_every_embedding_metric(tmp_path):
    """The rule (docs/robustness.md): an empty or blank response scores the floor of the cosine
    scale (-1); a blank reference has nothing to compare: its pairs are left out and a sample is
    the best of its scorable pairs, NaN when none is left."""
    pytest.importorskip("sentence_transformers")
    from dialeval.metrics.embedding.defaults import default_sentence_model

    try:
        default_sentence_model()
    except Exception as exc:  # noqa: BLE001
        pytest.skip(f"no default sentence encoder: {exc}")
    vectors = tmp_path / "v.txt"
    gen = np.random.default_rng(0)
    vectors.write_text("".join(f"{w} {' '.join(f'{x:.4f}' for x in gen.normal(size=6))}\n"
                               for w in ["hello", "there", "here"]), encoding="utf-8")
    samples = [{"response": "", "references": ["hello there"]},
               {"response": "  ", "references": ["hello there"]},
               {"response": "hello there", "references": ["", "hello here"]},
               {"response": "hello there", "references": [" "]},
               {"response": "hello there", "references": ["hello there"]}]
    metrics = ["sent_cosine", "emb_average", "emb_extrema", "emb_greedy"]
    out = score(samples, metrics, word_vectors=str(vectors), progress=False)
    for m in metrics:
        s = out.sentence[m]
        assert (s[[0, 1]] == -1.0).all() and np.isnan(s[3]), m
        assert np.isfinite(s[[2, 4]]).all() and s[4] == pytest.approx(1.0, abs=1e-5), m
    # the empty reference is ignored, not scored: sample 2 equals the same pair alone
    alone = score([{"response": "hello there", "references": ["hello here"]}], ["sent_cosine"], progress=False)
    assert out.sentence["sent_cosine"][2] == alone.sentence["sent_cosine"][0]
