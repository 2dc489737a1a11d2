"""Java's `String.hashCode()`, which METEOR 1.5 uses to compare words.

The jar turns every word (and every stem) into its 32-bit hash code and compares the codes, so
two different words with the same code (`do` and `f1`, both 3211) are an exact match there.
dialeval reproduces that by default; `meteor_compare="strings"` compares the strings instead.
"""

from __future__ import annotations

_MASK = 0xFFFFFFFF


def java_hash(text: str) -> int:
    """s[0]*31^(n-1) + ... + s[n-1] over UTF-16 code units, as a signed 32-bit int."""
    h = 0
    if text.isascii():
        for c in text.encode("ascii"):
            h = (31 * h + c) & _MASK
    else:
        units = text.encode("utf-16-le", "surrogatepass")
        for k in range(0, len(units), 2):
            h = (31 * h + (units[k] | units[k + 1] << 8)) & _MASK
    return h - (1 << 32) if h >> 31 else h
