"""Which writing system a text is in, so that English-only models can say when they are handed
text they never saw (a Chinese reply gets a confident relevance score from a model trained on
English dialogue, which is noise presented as a number)."""

from __future__ import annotations

import unicodedata
from collections import Counter


def script_of(char: str) -> str:
    """The script of one letter, as the first word of its Unicode name (LATIN, CYRILLIC, CJK,
    HIRAGANA, ARABIC, ...)."""
    try:
        return unicodedata.name(char).split(" ", 1)[0]
    except ValueError:
        return "UNKNOWN"


def foreign_script(text: str, known: str = "LATIN") -> str | None:
    """The main script of `text` when most of its letters are not in `known`; None for a text
    mostly in `known` or without letters (digits, punctuation, emoji)."""
    scripts = Counter(script_of(c) for c in text if c.isalpha())
    letters = sum(scripts.values())
    if not letters or scripts.get(known, 0) * 2 >= letters:
        return None
    return max((s for s in scripts if s != known), key=lambda s: (scripts[s], s))
