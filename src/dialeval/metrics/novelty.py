"""`turn_novelty`: how little of a reply is the turn it answers said back.

Why a metric of its own. A reply that repeats the user's last turn is close to the context by
every measure of relevance a model has, so learned metrics reward it (ADEM preferred such a copy
to the real reply on most probe items until its copy term, `learned/adem/copy.py`). Copying is a
question of words, not of meaning, and a cheap, exact answer to it is useful twice: to a user who
asks how often a bot parrots, and to a composition (`fit compose`), which can weigh it against
the members that read relevance.

What. 1 minus the F1 of the response's word set against the word set of the context's last turn
(lowercased tokens of the run's tokenizer that hold a letter or a digit): 1 for a reply that
shares no word with the turn, 0 for the turn said back (in any order). A sample without a context
has no value (NaN); a blank response scores the floor, 0, by the blank rule, as a copy does.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from ..text.tokenizers import tokenize_all
from .base import Batch, Metric


def _word_sets(texts: list[str], tokenizer: str) -> list[set[str]]:
    return [{t for t in tokens if any(c.isalnum() for c in t)}
            for tokens in tokenize_all(tokenizer, [t.lower() for t in texts])]


def last_turn_f1(contexts, responses, tokenizer: str = "ptb-lower") -> np.ndarray:
    """Word-set F1 of each response with its context's last turn (NaN without a context, i.e.
    no turn that is not blank; 0 when either side has no word)."""
    last = [c[-1] if c else "" for c in contexts]
    out = np.zeros(len(responses))
    for i, (a, b) in enumerate(zip(_word_sets(list(responses), tokenizer), _word_sets(last, tokenizer))):
        if not any(t.strip() for t in contexts[i]):
            out[i] = np.nan
        elif a and b:
            out[i] = 2.0 * len(a & b) / (len(a) + len(b))
    return out


class TurnNovelty(Metric):
    """1 - word-set F1 of the response with the context's last turn (see the module doc).

    Options:
        tokenizer: tokenizer of the word sets (default ptb-lower: punctuation split off and
            dropped, case folded)
    """

    name: ClassVar[str] = "turn_novelty"
    description: ClassVar[str] = "1 - word-set F1 of the response with the context's last turn (0: a parrot)"
    needs_references: ClassVar[bool] = False
    needs_context: ClassVar[bool] = True
    native_tokenizer: ClassVar[str] = "ptb-lower"
    score_range = (0.0, 1.0)

    def multi_stats(self, batch: Batch) -> np.ndarray:
        return (1.0 - last_turn_f1(batch.contexts, batch.hyps, self.tokenizer))[:, None]

    def sentence_from_stats(self, stats: np.ndarray) -> np.ndarray:
        return stats[:, 0]
