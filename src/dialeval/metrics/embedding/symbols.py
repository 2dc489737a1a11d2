"""Emoji and other symbols read by their Unicode names, for word vectors that lack them.

Word vectors trained on news and encyclopaedias (GloVe 6B, the default) hold no emoji, so a
reply such as `😍 😍 😍` has no known word. On a customer-service or chat corpus such a reply is
often apt, and neither nlg-eval's reading (every unknown token is the one mean vector, so the
reply means nothing in particular) nor the floor of a reply with no known word says what it
means. Its characters' names do: U+1F60D is SMILING FACE WITH HEART-SHAPED EYES, whose words the
vectors know. A symbol token's vector is the mean of the vectors of those words.

What counts: a token every character of which is a symbol (Unicode categories So, Sm, Sc, Sk)
or a character that only modifies another (variation selectors, joiners, skin-tone modifiers,
combining marks). The modifiers carry no words of their own: `❤️` (heart + variation selector
16) reads as the heart, and a token of modifiers alone (nltk splits `❤ ️` into two tokens) is
silent. Letters, digits and punctuation are never read this way: a word in another script is
not a symbol, and unknown punctuation keeps nlg-eval's mean vector.

Names come from the `unicodedata` of the running Python, whose Unicode version the signature
records: an emoji newer than that version has no name and stays unknown.
"""

from __future__ import annotations

import re
import unicodedata

SYMBOL_CATEGORIES = frozenset({"So", "Sm", "Sc", "Sk"})
# characters that change how the one before them looks but name nothing themselves
SILENT_CATEGORIES = frozenset({"Mn", "Me", "Cf"})
SKIN_TONES = range(0x1F3FB, 0x1F400)   # EMOJI MODIFIER FITZPATRICK TYPE-1-2 .. TYPE-6
SILENT = ()   # what `name_words` gives a token of modifiers alone
_SPLIT = re.compile(r"[\s-]+")

UNICODE_VERSION = unicodedata.unidata_version


def name_words(token: str) -> tuple[str, ...] | None:
    """The lowercase words of the names of the symbols in `token`, in order; `SILENT` (empty)
    for a token of modifiers alone; None when `token` is not made of symbols (it has a letter,
    digit, punctuation mark or space, or a symbol without a name in this Python's Unicode)."""
    words: list[str] = []
    for ch in token:
        category = unicodedata.category(ch)
        if category in SILENT_CATEGORIES or ord(ch) in SKIN_TONES:
            continue
        if category not in SYMBOL_CATEGORIES:
            return None
        name = unicodedata.name(ch, "")
        if not name:
            return None
        words.extend(w for w in _SPLIT.split(name.lower()) if w)
    return tuple(words)
