"""Word tokens for the embedding metrics and for training word vectors, remembered per process.

Its own module so that the vector trainer and the metrics share one tokenizer without the
trainer importing the metrics (which import the default vectors, which may build the MiniLM
vectors through the trainer).
"""

from __future__ import annotations

from ...cache import memo

NLTK_WORD = "nltk-word"


def nltk_word_tokenize(text: str) -> list[str]:
    """nltk `word_tokenize(text, preserve_line=True)`: regex only, needs no punkt data."""
    from nltk.tokenize import word_tokenize

    return word_tokenize(text, preserve_line=True)


# (tokenizer, text) -> tokens, bounded like every per-text memo (dialeval.cache.memo)
_TOKEN_CACHE = memo(sizeof=lambda tokens: 56 + sum(57 + len(t) for t in tokens), name="tokens")


def tokenize_texts(name: str, texts: list[str]) -> list[list[str]]:
    """Tokens of each text. nltk's tokenizer costs ~0.2 ms a line and evaluation sets share
    their references across systems, so tokens are remembered process-wide (bounded)."""
    known = {t: _TOKEN_CACHE.get((name, t)) for t in dict.fromkeys(texts)}
    missing = [t for t, v in known.items() if v is None]
    if missing:
        if name == NLTK_WORD:
            tokens = [nltk_word_tokenize(t) for t in missing]
        else:
            from ...text.tokenizers import tokenize_all

            tokens = tokenize_all(name, missing)
        for text, toks in zip(missing, tokens):
            known[text] = _TOKEN_CACHE.put((name, text), toks)
        if len(missing) == len(texts):
            return tokens
    return [known[t] for t in texts]
