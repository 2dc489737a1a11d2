"""Text preparation exactly as METEOR 1.5 sees it through pycocoevalcap (`-l en -norm`).

Two layers act on every segment:

1. the Python wrapper: `|||` is removed from the hypothesis, the `SCORE ||| refs ||| hyp` line
   has each whitespace run (Unicode `\\s+`) replaced by one space, and the jar splits it on
   `|||` (Java `String.split`, which drops trailing empty fields) and trims each field;
2. the jar's English normaliser (a port of the mteval tokeniser with a non-breaking-prefix
   list and contraction splitting), then `toLowerCase`, then `StringTokenizer` word splitting.

Java's regex classes are ASCII unless told otherwise (`\\s`, `\\p{Digit}`, `\\p{Lower}`), so
the classes below spell the characters out instead of using Python's Unicode `\\s`/`\\d`.
"""

from __future__ import annotations

import re

_ALPHA = ("A-Za-z\u0160\u017d\u0161\u017e\u0178\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u017e"
          "\u0400-\u04ff\u0500-\u0527\ua640-\ua66e\ua67e-\ua697\u1d00-\u1d7f")
_ALNUM = "0-9" + _ALPHA
_JAVA_SPACE = " \t\n\x0b\f\r"          # Java regex \s (ASCII)

_SEP_OTHER = re.compile(f"([^{_ALNUM}{_JAVA_SPACE}.'`,\\-\u2018\u2019])")
_MULTI_DOT = re.compile(r"\.([.]+)")
_MULTI_DOT2 = re.compile(r"DOTMULTI\.([^.])")
_COMMA = (re.compile(r"([^0-9])[,]([^0-9])"), re.compile(r"([0-9])[,]([^0-9])"),
          re.compile(r"([^0-9])[,]([0-9])"))
_QUOTE = re.compile("[`\u2018\u2019]")
_QUOTE2 = re.compile("(?:[\u201c\u201d]|'')")
_RM_DASH = re.compile(f"([{_ALNUM}.])[-]([{_ALNUM}])")
_CONT_EN = (
    (re.compile(f"([^{_ALPHA}])[']([^{_ALPHA}])"), r"\1 ' \2"),
    (re.compile(f"([^{_ALPHA}0-9])[']([{_ALPHA}])"), r"\1 ' \2"),
    (re.compile(f"([{_ALPHA}])[']([^{_ALPHA}])"), r"\1 ' \2"),
    (re.compile(f"([{_ALPHA}])[']([{_ALPHA}])"), r"\1 '\2"),
    (re.compile(r"([0-9])[']([s])"), r"\1 '\2"),
)
_DIGIT = re.compile("[0-9]")
_NBP_ALPHA = re.compile(f"[{_ALPHA}]")
_NBP_LOWER = re.compile(r"^[a-z]")
_NBP_DIGITS = re.compile(r"^[0-9]+")
_WHITE = re.compile("[ \u2000-\u200a\u202f\u205f\u3000\u00a0]+")
_TOKEN_SPLIT = re.compile("[ \t\n\r\f]+")  # java.util.StringTokenizer's default delimiters
# ASCII whitespace Python's str.split() cuts at and StringTokenizer does not
_PY_ONLY_SPACE = re.compile("[\x0b\x1c-\x1f]")
# _SEP_OTHER's work on an ASCII text as one str.translate pass (nearly every text is ASCII;
# the regex substitution with its group template cost a fifth of the normaliser's time)
_SEP_ASCII = {c: f" {chr(c)} " for c in range(128) if _SEP_OTHER.match(chr(c))}


_AT_MOST_SPACE = "".join(map(chr, range(0x21)))


def java_trim(text: str) -> str:
    """`String.trim()`: strips code points <= U+0020 at both ends."""
    return text.strip(_AT_MOST_SPACE)


def java_tokens(text: str) -> list[str]:
    """`StringTokenizer` words: str.split() where it cuts at the same characters (ASCII text
    without the separators only Python counts as space), else the delimiter regex."""
    if text.isascii() and not _PY_ONLY_SPACE.search(text):
        return text.split()
    return [t for t in _TOKEN_SPLIT.split(text) if t]


def separate_other(line: str) -> str:
    """The mteval rule that isolates every character other than letters, digits, spaces and
    . ' ` , - and the curly single quotes, on `line` padded with a space each side."""
    padded = " " + line + " "
    if padded.isascii():
        return padded.translate(_SEP_ASCII)
    return _SEP_OTHER.sub(r" \1 ", padded)


def wrapper_fields(hyp: str, refs: list[str]) -> tuple[str, list[str]]:
    """What the jar receives from pycocoevalcap's wrapper: (hypothesis, references), trimmed."""
    line = " ||| ".join(["SCORE", " ||| ".join(refs), hyp.replace("|||", "")])
    # the wrapper's re.sub(r"\s+", " ", line): str.split() cuts at the same characters (both are
    # Python's isspace); the line starts with SCORE, so only a trailing run needs its space back
    spaced = " ".join(line.split()) + (" " if line[-1].isspace() else "")
    parts = spaced.split("|||")
    while parts and parts[-1] == "":          # Java's split drops trailing empty strings
        parts.pop()
    fields = [java_trim(p) for p in parts[1:]]
    return fields[-1], fields[:-1]


class Normalizer:
    """The jar's English `-norm` normaliser followed by lower-casing and word splitting."""

    def __init__(self, nonbreaking: dict[str, int]):
        self.nonbreaking = nonbreaking  # prefix -> 1 (any) or 2 (only before digits)

    def words(self, text: str) -> tuple[str, ...]:
        return tuple(java_tokens(self.normalize(text).lower()))

    def normalize(self, line: str) -> str:
        # each rule is skipped when its trigger character is absent (same result, faster)
        s = separate_other(line)
        if ".." in s:
            s = _MULTI_DOT.sub(r" DOTMULTI\1", s)
        while "DOTMULTI." in s:
            s = _MULTI_DOT2.sub(r"DOTDOTMULTI \1", s)
            s = s.replace("DOTMULTI.", "DOTDOTMULTI")
        digits = _DIGIT.search(s) is not None    # the rules that need a digit can match only then
        if "," in s:
            for pattern in _COMMA if digits else _COMMA[:1]:
                s = pattern.sub(r"\1 , \2", s)
        if "`" in s or "\u2018" in s or "\u2019" in s:
            s = _QUOTE.sub("'", s)
        if "''" in s or "\u201c" in s or "\u201d" in s:
            s = _QUOTE2.sub(' " ', s)
        if "-" in s or "\u2013" in s:
            s = s.replace("\u2013", "-").replace("--", "-")
            s = _RM_DASH.sub(r"\1 \2", s)
        if "'" in s:
            for pattern, repl in _CONT_EN if digits else _CONT_EN[:4]:
                s = pattern.sub(repl, s)
        s = self._split_final_dots(s)
        while "DOTDOTMULTI" in s:
            s = s.replace("DOTDOTMULTI", "DOTMULTI.")
        s = s.replace("DOTMULTI", ".")
        if not s.isascii():     # ASCII text has single spaces here already: nothing to collapse
            s = _WHITE.sub(" ", s)
        return java_trim(s)

    def _split_final_dots(self, s: str) -> str:
        """A word-final '.' becomes its own token unless the word is a known abbreviation.
        Returns the tokens of `s` each followed by one space (only words ending in '.' are
        looked at)."""
        tokens = java_tokens(s)
        dotted = [k for k, word in enumerate(tokens) if word[-1] == "." and len(word) > 1] if "." in s else []
        if not dotted:
            return " ".join(tokens) + " " if tokens else ""
        out = list(tokens)
        last = len(tokens) - 1
        for k in dotted:
            word = tokens[k]
            pre = word[:-1]
            kind = self.nonbreaking.get(pre)
            if "." in pre and _NBP_ALPHA.search(pre):
                out[k] = word.replace(".", "")
            elif kind == 1 or (k < last and _NBP_LOWER.match(tokens[k + 1])):
                pass
            elif kind == 2 and k < last and _NBP_DIGITS.match(tokens[k + 1]):
                pass
            else:
                out[k] = pre + " ."
        return "".join([word + " " for word in out])


def parse_nonbreaking(text: str) -> dict[str, int]:
    table: dict[str, int] = {}
    for line in text.split("\n"):
        toks = java_tokens(line)
        if not toks or toks[0].startswith("#"):
            continue
        table[toks[0]] = 2 if len(toks) > 1 and toks[1] == "#NUMERIC_ONLY#" else 1
    return table
