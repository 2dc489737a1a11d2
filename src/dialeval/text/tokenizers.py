"""Named tokenizers. The name is what a signature records, so two numbers made with different
tokenisation never look alike.

- `whitespace`: `str.split()`, what pycocoevalcap's BLEU and CIDEr do;
- `space`: `str.split(" ")`, what pycocoevalcap's ROUGE-L does (double spaces give empty tokens);
- `ptb-lower`: lowercased Penn-Treebank-style tokens (nltk's regex Treebank tokenizer, which
  needs no downloaded data), for raw, untokenised text.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Callable

Tokenizer = Callable[[str], list[str]]


def _whitespace(text: str) -> list[str]:
    return text.split()


def _space(text: str) -> list[str]:
    return text.split(" ")


@lru_cache(maxsize=1)
def _treebank():
    from nltk.tokenize import TreebankWordTokenizer

    return TreebankWordTokenizer()


def _ptb_lower(text: str) -> list[str]:
    return _treebank().tokenize(text.lower())


_TOKENIZERS: dict[str, tuple[Tokenizer, str]] = {
    "whitespace": (_whitespace, "split on runs of whitespace (str.split()); case kept"),
    "space": (_space, "split on single spaces (str.split(' ')); case kept"),
    "ptb-lower": (_ptb_lower, "lowercase, then Penn-Treebank-style regex tokenisation"),
}


def get_tokenizer(name: str) -> Tokenizer:
    try:
        return _TOKENIZERS[name][0]
    except KeyError:
        from ..errors import DialevalError

        raise DialevalError(f"unknown tokenizer {name!r}; choose from {', '.join(_TOKENIZERS)}") from None


def tokenize_all(name: str, texts: list[str]) -> list[list[str]]:
    """Tokenise many texts; the built-in splitters run without a Python call per text."""
    if name == "whitespace":
        return list(map(str.split, texts))
    tok = get_tokenizer(name)
    return list(map(tok, texts))


def list_tokenizers() -> dict[str, str]:
    return {name: doc for name, (_, doc) in _TOKENIZERS.items()}
