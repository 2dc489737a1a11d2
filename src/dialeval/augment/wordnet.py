"""WordNet substitution (WS): four variants of a query, with verbs, nouns, adjectives and
adverbs, or all of them, replaced by a WordNet 3.0 synonym.

A word's synonym is the first lemma, other than the word itself, of its most frequent sense
(WordNet's own sense order) for the tagged part of speech; multi-word lemmas have their
underscores turned into spaces. Words WordNet does not know, single letters, and auxiliaries (tagged
AUX, not VERB), stay as they are. Substitution keeps the lemma's base form: WordNet has no inflection.
"""

from __future__ import annotations

from typing import Sequence

from ..errors import DialevalError

VARIANTS = {"verbs": ("VERB",), "nouns": ("NOUN",), "adjectives+adverbs": ("ADJ", "ADV"),
            "all": ("VERB", "NOUN", "ADJ", "ADV")}
WN_POS = {"VERB": "v", "NOUN": "n", "ADJ": "a", "ADV": "r"}
INSTALL_HINT = ("WordNet 3.0 is not installed for nltk: install the Debian packages wordnet-base and "
                "wordnet-sense-index and run the WordNet step of install.sh (it copies /usr/share/wordnet "
                "into <nltk_data>/corpora/wordnet and writes its lexnames file)")


def wordnet():
    """nltk's WordNet reader, or one clear error naming the install step."""
    from nltk.corpus import wordnet as wn

    try:
        wn.ensure_loaded()
    except LookupError:
        raise DialevalError(INSTALL_HINT) from None
    except (OSError, AssertionError, ValueError) as exc:
        raise DialevalError(f"{INSTALL_HINT} ({type(exc).__name__}: {exc})") from None
    return wn


class WordNetAugmenter:
    def __init__(self, tagger, wn=None):
        self.tagger = tagger
        self.wn = wn or wordnet()
        self._cache: dict[tuple[str, str], str | None] = {}

    def synonym(self, word: str, upos: str) -> str | None:
        key = (word.lower(), upos)
        if key not in self._cache:
            self._cache[key] = self._find(word.lower(), WN_POS[upos])
        return self._cache[key]

    def _find(self, word: str, pos: str) -> str | None:
        if not word.isalpha() or len(word) < 2:  # "t" of "can ' t" is not thymine
            return None
        lemma = self.wn.morphy(word, pos) or word
        for synset in self.wn.synsets(lemma, pos=pos):
            for name in synset.lemma_names():
                if name.lower() not in (word, lemma):
                    return name.replace("_", " ")
        return None

    def variants(self, query: str, names: Sequence[str] = tuple(VARIANTS)) -> dict[str, str]:
        """The query with each variant's parts of speech substituted (tokens split on spaces)."""
        tokens = query.split()
        tags = [t for _, t in self.tagger.tag(tokens)] if tokens else []
        out = {}
        for name in names:
            wanted = VARIANTS[name]
            out[name] = " ".join((self.synonym(tok, tag) or tok) if tag in wanted else tok
                                 for tok, tag in zip(tokens, tags))
        return out

    def augment(self, query: str, history: Sequence[str] = (), k: int = 4) -> list[str]:
        """Up to `k` augmented queries (the four variants, in order)."""
        return list(self.variants(query).values())[:k]
