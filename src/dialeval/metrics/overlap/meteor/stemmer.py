"""The Snowball English ("Porter2") stemmer, as METEOR 1.5's bundled Java stemmer applies it.

Written here rather than imported from nltk because importing nltk pulls in scipy and takes
seconds, which would cost more than METEOR's whole scoring run; the test suite checks it
against the jar's own stems.
"""

from __future__ import annotations

_V = frozenset("aeiouy")
_V_WXY = _V | frozenset("wxY")
_VALID_LI = frozenset("cdeghkmnrt")
_EXCEPTION1 = {"skis": "ski", "skies": "sky", "dying": "die", "lying": "lie", "tying": "tie",
               "idly": "idl", "gently": "gentl", "ugly": "ugli", "early": "earli", "only": "onli",
               "singly": "singl", "sky": "sky", "news": "news", "howe": "howe", "atlas": "atlas",
               "cosmos": "cosmos", "bias": "bias", "andes": "andes"}
_EXCEPTION2 = frozenset(("inning", "outing", "canning", "herring", "earring", "proceed", "exceed",
                         "succeed"))
_STEP2 = {"tional": "tion", "enci": "ence", "anci": "ance", "abli": "able", "entli": "ent",
          "izer": "ize", "ization": "ize", "ational": "ate", "ation": "ate", "ator": "ate",
          "alism": "al", "aliti": "al", "alli": "al", "fulness": "ful", "ousli": "ous",
          "ousness": "ous", "iveness": "ive", "iviti": "ive", "biliti": "ble", "bli": "ble",
          "ogi": "og", "fulli": "ful", "lessli": "less", "li": ""}
_STEP3 = {"tional": "tion", "ational": "ate", "alize": "al", "icate": "ic", "iciti": "ic",
          "ical": "ic", "ful": "", "ness": "", "ative": ""}
_STEP4 = ("al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment", "ent", "ism",
          "ate", "iti", "ous", "ive", "ize", "ion")


class _Suffixes:
    """A step's suffixes, longest first: `first(word)` is the longest one `word` ends with.
    Two suffixes of one length cannot both end a word, so looking each length up in a set
    gives what trying the suffixes in order gives, with one slice per length instead of one
    `endswith` per suffix (the stemmer runs once per distinct word of a batch)."""

    def __init__(self, suffixes):
        self.by_length = [(n, frozenset(s for s in suffixes if len(s) == n))
                          for n in sorted({len(s) for s in suffixes}, reverse=True)]

    def first(self, word: str) -> str | None:
        for n, group in self.by_length:
            end = word[-n:]
            if end in group:
                return end
        return None


_STEP0 = _Suffixes(("'s'", "'s", "'"))
_STEP1A = _Suffixes(("sses", "ied", "ies", "us", "ss", "s"))
_STEP1B = _Suffixes(("eed", "eedly", "ed", "edly", "ing", "ingly"))
_STEP2_BY_LEN = _Suffixes(_STEP2)
_STEP3_BY_LEN = _Suffixes(_STEP3)
_STEP4_BY_LEN = _Suffixes(_STEP4)



def _regions(w: str) -> tuple[int, int]:
    n = len(w)

    def past_vc(start: int) -> int:
        i = start
        while i < n and w[i] not in _V:
            i += 1
        while i < n and w[i] in _V:
            i += 1
        if i >= n:
            return n
        return i + 1

    for prefix in ("gener", "commun", "arsen"):
        if w.startswith(prefix):
            p1 = len(prefix)
            break
    else:
        p1 = past_vc(0)
    p2 = past_vc(p1) if p1 < n else n
    return p1, p2


def _shortv(w: str, c: int) -> bool:
    """Does w[:c] end in a short syllable?"""
    if c >= 3 and w[c - 1] not in _V_WXY and w[c - 2] in _V and w[c - 3] not in _V:
        return True
    return c == 2 and w[1] not in _V and w[0] in _V


def stem(word: str) -> str:
    if word in _EXCEPTION1:
        return _EXCEPTION1[word]
    if len(word) < 3:
        return word
    w = word
    if w.startswith("'"):
        w = w[1:]
    chars = list(w)
    if chars and chars[0] == "y":
        chars[0] = "Y"
    for i in range(1, len(chars)):
        if chars[i] == "y" and chars[i - 1] in _V:
            chars[i] = "Y"
    w = "".join(chars)
    p1, p2 = _regions(w)

    # Step 0
    s = _STEP0.first(w)
    if s:
        w = w[:-len(s)]
    # Step 1a
    s = _STEP1A.first(w)
    if s == "sses":
        w = w[:-2]
    elif s in ("ied", "ies"):
        w = w[:-3] + ("i" if len(w) - 3 > 1 else "ie")
    elif s == "s":
        if any(ch in _V for ch in w[:-2]):
            w = w[:-1]
    if w in _EXCEPTION2:
        return w.replace("Y", "y")
    # Step 1b
    s = _STEP1B.first(w)
    if s in ("eed", "eedly"):
        if len(w) - len(s) >= p1:
            w = w[:-len(s)] + "ee"
    elif s:
        stem_part = w[:-len(s)]
        if any(ch in _V for ch in stem_part):
            w = stem_part
            if w.endswith(("at", "bl", "iz")):
                w += "e"
            elif len(w) >= 2 and w[-1] == w[-2] and w[-2:] in ("bb", "dd", "ff", "gg", "mm", "nn", "pp", "rr", "tt"):
                w = w[:-1]
            elif p1 >= len(w) and _shortv(w, len(w)):
                w += "e"
    # Step 1c
    if len(w) > 2 and w[-1] in "yY" and w[-2] not in _V:
        w = w[:-1] + "i"
    # Step 2
    s = _STEP2_BY_LEN.first(w)
    if s and len(w) - len(s) >= p1:
        before = w[:-len(s)]
        if s == "ogi":
            if before.endswith("l"):
                w = before + "og"
        elif s == "li":
            if before and before[-1] in _VALID_LI:
                w = before
        else:
            w = before + _STEP2[s]
    # Step 3
    s = _STEP3_BY_LEN.first(w)
    if s and len(w) - len(s) >= p1:
        if s == "ative":
            if len(w) - len(s) >= p2:
                w = w[:-len(s)]
        else:
            w = w[:-len(s)] + _STEP3[s]
    # Step 4
    s = _STEP4_BY_LEN.first(w)
    if s and len(w) - len(s) >= p2:
        if s == "ion":
            if len(w) > 3 and w[-4] in "st":
                w = w[:-3]
        else:
            w = w[:-len(s)]
    # Step 5
    if w.endswith("e"):
        c = len(w) - 1
        if c >= p2 or (c >= p1 and not _shortv(w, c)):
            w = w[:-1]
    elif w.endswith("l"):
        c = len(w) - 1
        if c >= p2 and w[c - 1:c] == "l":
            w = w[:-1]
    return w.replace("Y", "y")
