"""Word tokens for the embedding metrics and for training word vectors, remembered per process.

Its own module so that the vector trainer and the metrics share one tokenizer without the
trainer importing the metrics (which import the default vectors, which may build the MiniLM
vectors through the trainer).
"""

from __future__ import annotations

NLTK_WORD = "nltk-word"


def nltk_word_tokenize(text: str) -> list[str]:
    """nltk `word_tokenize(text, preserve_line=True)`: regex only, needs no punkt data."""
    from nltk.tokenize import word_tokenize

    return word_tokenize(text, preserve_line=True)


_TOKEN_CACHE: dict[tuple[str, str], list[str]] = {}
_TOKEN_CACHE_LIMIT = 500_000


def tokenize_texts(name: str, texts: list[str]) -> list[list[str]]:
    """Tokens of each text. nltk's tokenizer costs ~0.2 ms a line and evaluation sets share
    their references across systems, so tokens are remembered process-wide (bounded)."""
    missing = [t for t in dict.fromkeys(texts) if (name, t) not in _TOKEN_CACHE]
    if missing:
        if name == NLTK_WORD:
            tokens = [nltk_word_tokenize(t) for t in missing]
        else:
            from ...text.tokenizers import tokenize_all

            tokens = tokenize_all(name, missing)
        if len(_TOKEN_CACHE) + len(missing) > _TOKEN_CACHE_LIMIT:
            _TOKEN_CACHE.clear()
        _TOKEN_CACHE.update(zip(((name, t) for t in missing), tokens))
        if len(missing) == len(texts):
            return tokens
    return [_TOKEN_CACHE[(name, t)] for t in texts]
