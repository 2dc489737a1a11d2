"""The compiled word-overlap kernel (metrics/overlap/kernel.pyx) against the numpy path, which
defines the numbers: identical statistics on random inputs, and its tokeniser against str.split.

Skipped when the kernel is not built (a source tree without `python3 setup.py build_ext
--inplace`); the numpy path then runs everywhere and the other overlap tests cover it.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dialeval import score
from dialeval.metrics.base import Batch
from dialeval.metrics.overlap import tokens
from dialeval.metrics.overlap.cider import document_frequencies

kernel = tokens.KERNEL
pytestmark = pytest.mark.skipif(kernel is None, reason="overlap kernel not built (python3 setup.py build_ext --inplace)")

METRICS = ["bleu1", "bleu2", "bleu3", "bleu4", "rouge_l", "cider_d", "cider"]
SPACES = [c for c in range(sys.maxunicode + 1) if not 0xD800 <= c <= 0xDFFF and chr(c).isspace()]

# a few words, some sharing prefixes, one non-ASCII, so that n-grams repeat across sentences
words = st.sampled_from(["a", "b", "c", "the", "cat", "ca", "caf\u00e9", "\u00e9", ".", "a b"])
gaps = st.sampled_from([" "] * 8 + ["  ", "\t", "\u3000", "\xa0 "])


@st.composite
def sentences(draw, max_words=14):
    ws = draw(st.lists(words, max_size=max_words))
    text = ""
    for i, w in enumerate(ws):
        text += (draw(gaps) if i else "") + w
    if draw(st.integers(0, 9)) == 0:
        text = draw(gaps) + text + draw(gaps)
    return text


@st.composite
def batches(draw):
    n = draw(st.integers(1, 7))
    rows = []
    for _ in range(n):
        refs = draw(st.lists(sentences(max_words=70 if draw(st.booleans()) else 12), min_size=0, max_size=4))
        rows.append({"response": draw(sentences()), "references": refs})
    return rows


def _both(fn):
    """fn() with the kernel, then with the numpy path."""
    fast = fn()
    saved, tokens.KERNEL = tokens.KERNEL, None
    try:
        slow = fn()
    finally:
        tokens.KERNEL = saved
    return fast, slow


@settings(max_examples=60, deadline=None)
@given(batches(), st.sampled_from(["multi", "max", "mean"]))
def test_kernel_gives_the_numpy_statistics_bit_for_bit(rows, mode):
    fast, slow = _both(lambda: score(rows, METRICS, refs_mode=mode, progress=False))
    for m in METRICS:
        np.testing.assert_array_equal(fast.sentence[m], slow.sentence[m], err_msg=m)
        np.testing.assert_array_equal(fast.stats[m], slow.stats[m], err_msg=m)


@settings(max_examples=40, deadline=None)
@given(batches())
def test_kernel_first_pass_gives_the_numpy_document_frequencies(rows):
    refs = [r["references"] for r in rows]
    fast, slow = _both(lambda: document_frequencies(Batch(["x"] * len(refs), refs), "whitespace"))
    assert fast.n_items == slow.n_items
    for n in range(4):
        assert dict(zip(fast.keys[n].tolist(), fast.counts[n].tolist())) == \
            dict(zip(slow.keys[n].tolist(), slow.counts[n].tolist()))


def test_kernel_and_numpy_agree_on_a_sharded_run():
    rows = [{"response": f"w{i % 5} a b c", "references": [f"w{i % 3} a b", "a b c d", f"c w{i % 4}"]}
            for i in range(23)]
    fast, slow = _both(lambda: score(rows, METRICS, chunk_size=4, progress=False))
    for m in METRICS:
        np.testing.assert_array_equal(fast.sentence[m], slow.sentence[m], err_msg=m)
        assert fast.corpus[m] == slow.corpus[m]


def test_tokeniser_whitespace_is_exactly_str_isspace():
    # every code point str.split() splits on, alone and between two words
    for c in SPACES:
        text = f"a{chr(c)}b{chr(c)}"
        ids, lengths, same = kernel.Vocab().encode([text], True)
        assert lengths.tolist() == [2], hex(c)
        assert same is False  # trailing whitespace: split(" ") differs
    # and nothing else: a sample of other code points, including the bytes near the encodings above
    others = [c for c in list(range(0x3100)) + [0x3001, 0xFEFF, 0x10FFFF]
              if not 0xD800 <= c <= 0xDFFF and not chr(c).isspace()]
    vocab = kernel.Vocab()
    ids, lengths, _ = vocab.encode([f"a{chr(c)}b" for c in others], True)
    assert (lengths == 1).all()


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet=st.sampled_from(["a", "b", "\u00e9", "\u4e00"] + [chr(c) for c in SPACES]),
                        max_size=30), max_size=6))
def test_tokeniser_splits_like_str_split(texts):
    for whitespace in (True, False):
        vocab = kernel.Vocab()
        ids, lengths, same = vocab.encode(texts, whitespace)
        words = vocab.tokens()
        want = [t.split() if whitespace else t.split(" ") for t in texts]
        got, pos = [], 0
        for n in lengths.tolist():
            got.append([words[i] for i in ids[pos:pos + n]])
            pos += n
        assert got == want
        if whitespace:
            assert same == all(t.split(" ") == t.split() for t in texts)


def test_token_hashes_of_kernel_and_numpy_agree():
    toks = ["", "a", "caf\u00e9", "\u4e00\u4e8c", "x" * 40, "\U0001f600"]
    vocab = kernel.Vocab()
    ids, _, _ = vocab.encode([" ".join(toks[1:])], True)
    assert kernel.token_hashes(toks).tolist() == tokens.token_hashes_numpy(toks).tolist()
    assert vocab.hashes()[ids].tolist() == tokens.token_hashes_numpy(toks[1:]).tolist()


def test_lone_surrogates_fall_back_to_the_numpy_path():
    rows = [{"response": "a \ud800 b", "references": ["a \ud800", "b"]}, {"response": "a", "references": ["a b"]}]
    fast, slow = _both(lambda: score(rows, METRICS, progress=False))
    for m in METRICS:
        np.testing.assert_array_equal(fast.sentence[m], slow.sentence[m], err_msg=m)


def _clipped_matches(hyp, refs, n):
    """pycocoevalcap's clipped n-gram matches, written out with Counters."""
    from collections import Counter

    grams = lambda toks: Counter(tuple(toks[i:i + n]) for i in range(len(toks) - n + 1))
    best = Counter()
    for ref in refs:
        for g, c in grams(ref).items():
            best[g] = max(best[g], c)
    return sum(min(c, best[g]) for g, c in grams(hyp).items())


@settings(max_examples=80, deadline=None)
@given(st.lists(st.lists(st.integers(0, 5), max_size=12), min_size=1, max_size=4),
       st.lists(st.lists(st.integers(0, 5), max_size=15), max_size=6),
       st.data())
def test_bleu_matches_equal_counted_ngrams(hyps, refs, data):
    # rows pick any hypothesis (repeated, not only consecutively) and any run of references
    rows = data.draw(st.lists(st.integers(0, len(hyps) - 1), min_size=1, max_size=6))
    cuts = sorted(data.draw(st.lists(st.integers(0, len(refs)), min_size=len(rows) - 1,
                                     max_size=len(rows) - 1)))
    ref_off = np.array([0, *cuts, len(refs)], dtype=np.int64)

    def table(sents):
        lengths = np.array([len(s) for s in sents], dtype=np.int64)
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64) if len(sents) else lengths
        return np.array([t for s in sents for t in s], dtype=np.int64), starts, lengths

    got = kernel.bleu_matches(np.array(rows, dtype=np.int64), ref_off, *table(hyps), *table(refs), 6, 4)
    for i, h in enumerate(rows):
        these = refs[ref_off[i]:ref_off[i + 1]]
        assert got[i].tolist() == [_clipped_matches(hyps[h], these, n) for n in range(1, 5)]
