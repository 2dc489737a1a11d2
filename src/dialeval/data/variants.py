"""Degenerate variants of a response: the families of the behavioural probes.

One place for them because two users need the same texts: `meta.probes` scores a metric on
them (does it prefer the original?), and a learned evaluator's training takes some families as
negatives (ADEM's `hard_negatives`), keeping the others out of training so that the probes can
show whether what it learned carries over. Each variant is seeded per family and item; an item
is anything with `response`, `context`, `references` (a `Sample`, ADEM's `RatedRow`).
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any, Iterable, Sequence

import numpy as np

from ..errors import DialevalError
from .sample import Sample


def _record(record: Any):
    from .readers import from_records

    return from_records([record])[0]


# The families, in their fixed order (the order also seeds each family's random stream).
FAMILIES = ("empty", "punct", "generic", "parrot", "shuffle", "other_item", "loop", "truncate",
            "script", "gibberish", "marks")

FAMILY_HELP = {
    "empty": "the empty string",
    "punct": "punctuation only (a seeded choice of '...', '?', '!!', '. . .', '?!')",
    "generic": "a bland reply (a seeded choice of ten, e.g. \"i don't know.\")",
    "parrot": "the last context turn, verbatim",
    "shuffle": "the response's whitespace tokens in another, seeded order",
    "other_item": "the response of another item with a different context (seeded derangement)",
    "loop": "the response's first two words repeated to its length (at least 8 words)",
    "truncate": "the response's first two words (a mark, or a clitic split off its word, is no word)",
    "script": "the response transliterated letter by letter into Cyrillic",
    "gibberish": "as many made-up lower-case Latin letter strings as the response has words (at most 16)",
    "marks": "the response with every letter and digit taken out: its own punctuation marks alone",
}

PUNCTUATION = ("...", "?", "!!", ". . .", "?!")
GENERIC = ("i don't know.", "ok.", "that's nice.", "yes.", "i'm not sure.", "what do you mean?",
           "that is interesting.", "me too.", "thank you.", "sounds good.")

_CLITIC = re.compile(r"^(?:'[^\W\d_]*|n't)$", re.IGNORECASE)
LOOP_MIN_WORDS = 8
GIBBERISH_MAX_WORDS = 16
_LETTERS = np.array(list("abcdefghijklmnopqrstuvwxyz"))
_PARTNER_TRIES = 200   # other_item: swap partners tried for a position that breaks a constraint

# One Cyrillic letter per Latin letter (one code point each: the variant keeps the length).
_CYRILLIC = dict(zip("abcdefghijklmnopqrstuvwxyz", "абцдефгхийклмнопярстувшжыз"))
_CYRILLIC.update({k.upper(): v.upper() for k, v in _CYRILLIC.items()})


def check_families(families: Iterable[str] | str | None) -> list[str]:
    """The asked families in `FAMILIES` order (None or "all": all of them); an unknown name is
    a one-line error listing the valid ones."""
    if families is None:
        return list(FAMILIES)
    if isinstance(families, str):
        families = [f.strip() for f in families.split(",") if f.strip()]
    families = list(families)
    if families == ["all"]:
        return list(FAMILIES)
    from ..options import closest_hint

    for name in families:
        if name not in FAMILIES:
            raise DialevalError(f"unknown probe family {name!r}{closest_hint(name, FAMILIES)} "
                                f"(valid: {', '.join(FAMILIES)})")
    if not families:
        raise DialevalError(f"no probe family given (valid: {', '.join(FAMILIES)})")
    return [f for f in FAMILIES if f in families]


def _check_seed(seed: Any) -> int:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise DialevalError(f"probe seed must be a non-negative integer, got {seed!r}")
    return int(seed)


def _norm(text: str) -> str:
    """Whitespace-normalised text (how training's draws compare texts; see `_spaced`)."""
    return " ".join(text.split())


def reading(text: str) -> str:
    """How a text reads: lower case, single spaces, no space before a mark or an apostrophe.
    A tokenised corpus writes "i 'm not sure ." where a bland list writes "i'm not sure.";
    both read the same, so neither is a degenerate variant of the other."""
    out = " ".join(text.lower().split())
    for mark in ".,!?;:'":
        out = out.replace(" " + mark, mark)
    return out


def _spaced(text: str) -> str:
    """The comparison training's bland draws were made with (whitespace and case only): kept
    there because the shipped folders were trained on those draws and rebuild from them."""
    return _norm(text).lower()


def _rng(seed: int, family: str, item: int) -> np.random.Generator:
    return np.random.default_rng((seed, FAMILIES.index(family), item))


# --- one variant per family -----------------------------------------------------------------
# Each returns the variant text, or None when the family cannot make one for this response.

def _choice(options: Sequence[str], response: str, rng: np.random.Generator, key=reading) -> str:
    """A seeded choice among `options` that do not read as the response itself (so "ok." is
    never probed against "ok ."); `key` is what "reads as" compares."""
    own = key(response)
    left = [o for o in options if key(o) != own]
    return left[int(rng.integers(len(left)))]


def _parrot(sample: Sample) -> str | None:
    return sample.context[-1] if sample.context else None


def _shuffle(response: str, rng: np.random.Generator) -> str | None:
    tokens = response.split()
    if len(set(tokens)) < 2:        # one word (or one word repeated): no other order exists
        return None
    for _ in range(100):
        order = [tokens[i] for i in rng.permutation(len(tokens))]
        if order != tokens:
            return " ".join(order)
    return " ".join(tokens[1:] + tokens[:1])   # a rotation differs when two tokens differ


def _loop(response: str) -> str | None:
    words = response.split()
    if not words:
        return None
    head = words[:2]
    length = max(len(words), LOOP_MIN_WORDS)
    return " ".join((head * length)[:length])


def word_starts(tokens: Sequence[str]) -> list[int]:
    """Where each word begins among whitespace tokens: a token with a letter or digit, unless it
    is a clitic a tokeniser split off its word ("i 'm", "do n't"). Marks are not words, so in a
    tokenised corpus "thank you ." has two words, as "Thank you." has."""
    return [i for i, t in enumerate(tokens) if any(ch.isalnum() for ch in t) and not _CLITIC.match(t)]


def _truncate(response: str) -> str | None:
    """The response's first two words (with the marks between them, none after), or None when
    it has no third word to cut."""
    tokens = response.split()
    starts = word_starts(tokens)
    if len(starts) <= 2:
        return None
    kept = tokens[:starts[2]]
    while not any(ch.isalnum() for ch in kept[-1]):
        kept.pop()
    return " ".join(kept)


def _gibberish(response: str, rng: np.random.Generator) -> str | None:
    """Text shaped like a reply (one made-up word per word of the response, 2 to 7 letters each)
    with no word in it: a content-free negative built from letters alone, so that neither the
    `punct` strings nor another script is among what a trainer sees of it."""
    count = min(len(response.split()), GIBBERISH_MAX_WORDS)
    if count == 0:
        return None
    lengths = rng.integers(2, 8, size=count)
    return " ".join("".join(rng.choice(_LETTERS, size=int(n))) for n in lengths)


def _marks(response: str) -> str | None:
    """The response's words taken away and its punctuation kept ("yes , i do ." -> ", ."): a
    content-free reply made from each response's own marks, where `punct` draws from a fixed list."""
    kept = " ".join("".join(ch for ch in token if not ch.isalnum()) for token in response.split())
    return " ".join(kept.split()) or None


def transliterate(text: str) -> str:
    """`text` with every Latin letter (accents dropped) replaced by one Cyrillic letter; other
    characters (punctuation, digits, spaces) kept, so the length is the same."""
    out = []
    for ch in text:
        mapped = _CYRILLIC.get(ch)
        if mapped is None and not ch.isascii():
            mapped = _CYRILLIC.get(unicodedata.normalize("NFD", ch)[:1])
        out.append(mapped if mapped is not None else ch)
    return "".join(out)


def _context_key(sample: Sample) -> tuple:
    """What "a different context" compares: the context; for an item without one, its
    references (the item is then defined by them); without either, its id."""
    if sample.context:
        return ("context",) + tuple(_norm(t) for t in sample.context)
    if sample.references:
        return ("references",) + tuple(_norm(t) for t in sample.references)
    return ("id", sample.id, sample.system)


def _other_items(samples: Sequence[Sample], seed: int) -> list[str | None]:
    """A seeded derangement under constraints: item i receives the response of item perm[i],
    whose context differs and whose response reads differently. A random permutation is drawn,
    then every position that breaks a constraint is repaired by a swap that leaves both
    positions valid, trying up to `_PARTNER_TRIES` partners in a seeded order (all of them in a
    small set; the cap keeps a set dominated by one context linear); a position that no tried
    swap repairs is skipped."""
    n = len(samples)
    keys = [_context_key(s) for s in samples]
    texts = [_norm(s.response) for s in samples]
    rng = np.random.default_rng((seed, FAMILIES.index("other_item")))
    perm = rng.permutation(n)

    def ok(i: int, j: int) -> bool:
        return keys[i] != keys[j] and texts[i] != texts[j]

    for i in range(n):
        if ok(i, int(perm[i])):
            continue
        for k in rng.choice(n, size=min(n, _PARTNER_TRIES), replace=False):
            k = int(k)
            if k != i and ok(i, int(perm[k])) and ok(k, int(perm[i])):
                perm[i], perm[k] = perm[k], perm[i]
                break
    return [samples[int(j)].response if ok(i, int(j)) else None for i, j in enumerate(perm)]


def make_variants(samples: Iterable[Any], families: Iterable[str] | str | None = None,
                  seed: int = 0, *, as_trained: bool = False) -> dict[str, list[str | None]]:
    """The degenerate variants of each sample's response: family -> one entry per sample, the
    variant text or None where the family cannot make one (then the item is skipped for that
    family). A variant that reads as the original (`reading`: case, spacing and a tokeniser's
    space before a mark aside) is None too, and a bland or punctuation reply is drawn among
    those that do not read as it.

    samples: `Sample`s or records (as `dialeval.score` takes them).
    families: names from `FAMILIES` (default: all), kept in `FAMILIES` order.
    seed: a non-negative integer; each family draws from its own per-item stream, so a family's
        variants do not depend on which other families are asked for.
    as_trained: compare texts by whitespace alone, as the training negatives of the shipped
        compositions were drawn before the probes compared readings (2026-11-28), so that
        those folders rebuild byte for byte (`meta.probes.negative_samples` passes it).
    """
    samples = [s if hasattr(s, "response") else _record(s) for s in samples]
    families = check_families(families)
    seed = _check_seed(seed)
    choose, same = (_spaced, _norm) if as_trained else (reading, reading)
    out: dict[str, list[str | None]] = {}
    for family in families:
        if family == "other_item":
            made = _other_items(samples, seed)
        else:
            made = [_variant(family, s, seed, i, choose) for i, s in enumerate(samples)]
        out[family] = [v if v is not None and same(v) != same(s.response) else None
                       for v, s in zip(made, samples)]
    return out


# --- training negatives ---------------------------------------------------------------------
# Families that a trainer can make for one item on its own (other_item needs the whole set, and
# a trainer has its own random negatives for it).
TRAINABLE = tuple(f for f in FAMILIES if f != "other_item")


def bland_replies(responses: Iterable[str], top: int = 50, max_words: int = 4) -> list[str]:
    """The `top` most frequent short responses of a training corpus (ties in first-seen order),
    leaving out every reply that reads as one of the probes' `GENERIC` ones: a learned metric
    trained on "generic" negatives learns them from its own corpus, so that the probe's generic
    column is a test of what it learned and not of texts it saw."""
    probe = {reading(g) for g in GENERIC}
    counts: dict[str, int] = {}
    first: dict[str, str] = {}
    for text in responses:
        if not text.strip() or len(text.split()) > max_words:
            continue
        key = reading(text)
        if key in probe:
            continue
        counts[key] = counts.get(key, 0) + 1
        first.setdefault(key, text.strip())
    ranked = sorted(counts, key=lambda k: -counts[k])     # stable: ties keep first-seen order
    return [first[k] for k in ranked[:top]]


def training_variant(family: str, context: Sequence[str], response: str, seed: int, item: int,
                     bland: Sequence[str] = ()) -> str | None:
    """One training negative of `family` for a (context, response) pair, or None where the
    family cannot make one or the result reads as the response. As the probes make them, except
    "generic", drawn from `bland` (a corpus's own bland replies, `bland_replies`), never from
    the probes' list."""
    if family not in TRAINABLE:
        raise DialevalError(f"{family!r} is not a training-negative family (valid: {', '.join(TRAINABLE)})")
    sample = Sample(id=str(item), response=response, context=list(context))
    if family == "generic":
        if not bland:
            raise DialevalError("generic training negatives need a corpus's bland replies (bland_replies)")
        made = _choice(bland, response, _rng(seed, family, item), key=_spaced)
    else:
        made = _variant(family, sample, seed, item, _spaced)
    if made is None or reading(made) == reading(response):
        return None
    return made


def _variant(family: str, sample: Sample, seed: int, item: int, key=reading) -> str | None:
    """`key`: what a bland or punctuation reply must not read as (`_choice`)."""
    response = sample.response
    if family == "empty":
        return ""
    if family == "punct":
        return _choice(PUNCTUATION, response, _rng(seed, family, item), key)
    if family == "generic":
        return _choice(GENERIC, response, _rng(seed, family, item), key)
    if family == "parrot":
        return _parrot(sample)
    if family == "shuffle":
        return _shuffle(response, _rng(seed, family, item))
    if family == "loop":
        return _loop(response)
    if family == "truncate":
        return _truncate(response)
    if family == "script":
        return transliterate(response)
    if family == "gibberish":
        return _gibberish(response, _rng(seed, family, item))
    if family == "marks":
        return _marks(response)
    raise DialevalError(f"unknown probe family {family!r}")   # unreachable after check_families
