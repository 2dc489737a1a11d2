"""`turn_novelty` (metrics/novelty.py): 1 - word-set F1 of the response with the context's last
turn, by hand, and what it does at the edges (no context, a blank reply, another tokenizer)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import dialeval
from dialeval.metrics.novelty import last_turn_f1


def _score(rows, **options):
    records = [{"id": str(i), "context": c, "response": r} for i, (c, r) in enumerate(rows)]
    with pytest.warns(Warning) if any(not c for c, _ in rows) else _nothing():
        return dialeval.score(records, ["turn_novelty"], **options)


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_values_by_hand():
    rows = [
        # {how, are, you} against {hi, how, are, you}: F1 = 2 * 3 / (3 + 4) = 6/7
        (["an older turn", "Hi, how are you?"], "How are you"),
        # the turn said back, in another order and case: F1 = 1
        (["We need to talk."], "talk to we NEED"),
        # ptb-lower splits "i'm" into "i" and "'m"; {i, 'm, fine, thanks, and, you} against
        # {hi, how, are, you}: one word shared, F1 = 2 * 1 / (6 + 4) = 0.2
        (["Hi, how are you?"], "I'm fine, thanks. And you?"),
        # punctuation alone is no word: no word shared, F1 = 0
        (["Really?"], "? ! ."),
    ]
    got = _score(rows).sentence["turn_novelty"]
    np.testing.assert_allclose(got, [1 - 6 / 7, 0.0, 0.8, 1.0])


def test_no_context_no_value_and_a_blank_reply_scores_the_floor():
    got = _score([([], "hello"), (["", " "], "hello"), (["how was it ?"], "")]).sentence["turn_novelty"]
    assert math.isnan(got[0]) and math.isnan(got[1])
    assert got[2] == 0.0           # the blank rule: as low as a parrot, never above a real reply


def test_the_tokenizer_decides_the_words():
    # whitespace keeps "you?" whole, so it no longer matches "you": 2 * 2 / (3 + 3)
    assert last_turn_f1([["how are you?"]], ["how are you"], "whitespace")[0] == pytest.approx(2 / 3)
    assert last_turn_f1([["how are you?"]], ["how are you"])[0] == 1.0
    result = _score([(["how are you?"], "how are you")], tokenizer="whitespace")
    assert "tok:whitespace" in str(result.signatures["turn_novelty"])
