"""The one tokenisation AM and FM share, so that LSI and the LM see the same words.

AM-FM compares surface words. Training corpora and evaluation sets tokenise differently
(DSTC6 and DailyDialog split punctuation off, Topical-Chat does not: "fan?" vs "fan ?"), so
text is lowercased and cut into runs of word characters and single punctuation marks; every
source then yields the same words. The name goes into the signature and the model.
"""

from __future__ import annotations

import re

TOKENIZATION = "lower-wordpunct"

_WORD = re.compile(r"\w+|[^\w\s]")


def tokens(text: str) -> list[str]:
    """Lowercased word and punctuation tokens. KenLM's reserved `<s>`, `</s>`, `<unk>` cannot
    come out of this (the angle brackets are split off), so no corpus word collides with them."""
    return _WORD.findall(text.lower())
