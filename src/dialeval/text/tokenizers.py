"""Named tokenizers. The name is what a signature records, so two numbers made with different
tokenisation never look alike.

- `whitespace`: `str.split()`, what pycocoevalcap's BLEU and CIDEr do;
- `space`: `str.split(" ")`, what pycocoevalcap's ROUGE-L does (double spaces give empty tokens);
- `ptb-lower`: lowercased Penn-Treebank-style tokens (nltk's regex Treebank tokenizer, which
  needs no downloaded data), for raw, untokenised text.

For text written without spaces between words (Chinese, Japanese, Thai), whitespace splitting
makes a whole sentence one token, so BLEU and ROUGE-L of such text are about 0 whatever the
response. Three tokenizers follow sacreBLEU's of the same names (their behaviour, not their code):

- `char`: every character that is not whitespace is a token (sacreBLEU `char`);
- `zh`: each Chinese character (CJK ideographs, radicals, CJK and full-width punctuation) is a
  token, and the rest is split as mteval-13a splits punctuation (sacreBLEU `zh`);
- `intl`: punctuation and symbols (Unicode classes P and S) split off, except a punctuation mark
  between digits (1,000.5), as mteval-v14's international tokenisation does (sacreBLEU `intl`).

Case is kept by all three, as by the defaults.
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


def _char(text: str) -> list[str]:
    return [c for c in text if not c.isspace()]


# Code points `zh` isolates, as sacreBLEU's `zh` does so that scores compare with its own: CJK
# ideographs (the basic block, extension A, compatibility ideographs), radicals, strokes,
# bopomofo, CJK punctuation and symbols, enclosed and compatibility CJK, vertical and small
# forms, full-width and half-width forms, and two spans that sacreBLEU's table gives with
# five-digit escapes in four-digit syntax: they read as U+2001..U+2A6D (general punctuation,
# arrows, mathematical symbols, ...) and U+2F81..U+2FA1, not as extension B and its
# supplement, which are therefore not isolated either.
_ZH_RANGES = ((0x3400, 0x4DB5), (0x4E00, 0x9FBB), (0xF900, 0xFA2D), (0xFA30, 0xFA6A), (0xFA70, 0xFAD9),
              (0x2001, 0x2A6D), (0x2F81, 0x2FA1), (0xFF00, 0xFFEF), (0x2E80, 0x2EFF), (0x3000, 0x303F),
              (0x31C0, 0x31EF), (0x2F00, 0x2FDF), (0x2FF0, 0x2FFF), (0x3100, 0x312F), (0x31A0, 0x31BF),
              (0xFE10, 0xFE1F), (0xFE30, 0xFE4F), (0x2600, 0x26FF), (0x2700, 0x27BF), (0x3200, 0x32FF),
              (0x3300, 0x33FF))


@lru_cache(maxsize=1)
def _zh_pattern():
    import re

    spans = "".join(f"{chr(a)}-{chr(b)}" for a, b in _ZH_RANGES)
    return re.compile(f"([{spans}])")


@lru_cache(maxsize=1)
def _mteval_rules():
    """mteval-13a's punctuation rules: ASCII punctuation other than . , ' and - always splits
    off; . and , split off unless a digit is on that side; - splits off after a digit."""
    import re

    return [(re.compile(r"""([!"#$%&()*+/:;<=>?@\[\\\]^_`{|}~])"""), r" \1 "),
            (re.compile(r"([^0-9])([.,])"), r"\1 \2 "),
            (re.compile(r"([.,])([^0-9])"), r" \1 \2"),
            (re.compile(r"([0-9])(-)"), r"\1 \2 ")]


def _zh(text: str) -> list[str]:
    text = _zh_pattern().sub(r" \1 ", text.strip())
    for pattern, replacement in _mteval_rules():
        text = pattern.sub(replacement, text)
    return text.split()


@lru_cache(maxsize=1)
def _intl_rules():
    import regex   # nltk's dependency: Unicode classes (\p{P}) that `re` lacks

    return [(regex.compile(r"(\P{N})(\p{P})"), r"\1 \2 "),
            (regex.compile(r"(\p{P})(\P{N})"), r" \1 \2"),
            (regex.compile(r"(\p{S})"), r" \1 ")]


def _intl(text: str) -> list[str]:
    for pattern, replacement in _intl_rules():
        text = pattern.sub(replacement, text)
    return text.split()


_TOKENIZERS: dict[str, tuple[Tokenizer, str]] = {
    "whitespace": (_whitespace, "split on runs of whitespace (str.split()); case kept"),
    "space": (_space, "split on single spaces (str.split(' ')); case kept"),
    "ptb-lower": (_ptb_lower, "lowercase, then Penn-Treebank-style regex tokenisation"),
    "char": (_char, "every non-whitespace character (sacreBLEU char): Japanese, Thai, any unspaced text"),
    "zh": (_zh, "each Chinese character, the rest split as mteval-13a (sacreBLEU zh)"),
    "intl": (_intl, "Unicode punctuation and symbols split off (sacreBLEU intl, mteval-v14)"),
}

# A text with no whitespace, more than this many characters and some non-ASCII character is, in
# practice, a sentence of a language written without spaces: a Chinese sentence is typically 10
# to 30 characters, and the warning needs one such text in the whole run, not every one. The
# non-ASCII test keeps long English words, URLs and code out; a long single word of a spaced
# language with accents ("Geschwindigkeitsübertretung") is the rare false alarm, and it costs
# one line. Whitespace tokenisation makes such a text one token, so the default tokenizers warn
# once per process (`warn_unspaced`).
UNSPACED_CHARS = 10
_WARNED_UNSPACED: set[str] = set()


def unspaced_example(texts) -> str | None:
    """The first text of more than `UNSPACED_CHARS` characters, no whitespace and some non-ASCII
    character, or None (cheap tests first: ordinary text costs a length and a substring test)."""
    for text in texts:
        if len(text) > UNSPACED_CHARS and " " not in text and not text.isascii() and \
                len(text.split()) == 1 and len(text.strip()) > UNSPACED_CHARS:
            return text
    return None


def warn_unspaced(tokenizer: str, texts) -> None:
    """Once per process: a whitespace-split text that looks unspaced (see
    `UNSPACED_CHARS`), with the tokenizers that would split it."""
    if _WARNED_UNSPACED or tokenizer not in ("whitespace", "space"):
        return
    example = unspaced_example(texts)
    if example is None:
        return
    _WARNED_UNSPACED.add(tokenizer)
    import warnings

    from ..errors import DialevalWarning

    shown = example.strip()
    shown = shown[:12] + "…" if len(shown) > 12 else shown
    warnings.warn(DialevalWarning(
        f"a text has no whitespace and more than {UNSPACED_CHARS} characters ({shown!r}): the "
        "whitespace tokenisation makes it one token, so word-overlap scores are near 0; for Chinese "
        "use --tokenize zh, for Japanese, Thai or other unspaced text --tokenize char (or intl)"),
        stacklevel=3)


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
