"""n-gram entropy (eq. 5-6) and distinct-n of groups of responses.

Diversity is measured per group: the responses a system gave to one query and its augmented
variants. Eq. 5 is the Shannon entropy, in bits, of the group's n-gram distribution,
-1/|R| sum over the n-gram occurrences w of log2 p(w), with p the n-gram's relative frequency
in the group; eq. 6 averages it over groups. distinct-n is the share of a group's n-gram
occurrences that are distinct. Tokens are whitespace-separated words, lower-cased; n-grams do
not cross response boundaries. A group with no n-gram of order n gets NaN and is left out of
the averages.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Callable, Iterable, Sequence

import numpy as np


def _ngrams(responses: Iterable[str], n: int, lower: bool = True) -> Counter:
    counts: Counter = Counter()
    for response in responses:
        tokens = (response.lower() if lower else response).split()
        counts.update(tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1))
    return counts


def ngram_entropy(responses: Sequence[str], n: int, lower: bool = True) -> float:
    """Eq. 5 for one group: entropy in bits of its n-gram distribution."""
    counts = _ngrams(responses, n, lower)
    total = sum(counts.values())
    if total == 0:
        return math.nan
    c = np.fromiter(counts.values(), dtype=np.float64)
    p = c / total
    return float(-(c * np.log2(p)).sum() / total)


def distinct_n(responses: Sequence[str], n: int, lower: bool = True) -> float:
    """Distinct n-grams over n-gram occurrences in one group."""
    counts = _ngrams(responses, n, lower)
    total = sum(counts.values())
    return len(counts) / total if total else math.nan


def _mean(values: list[float]) -> float:
    arr = np.asarray(values, dtype=np.float64)
    arr = arr[~np.isnan(arr)]
    return float(arr.mean()) if len(arr) else math.nan


def group_entropy(groups: Sequence[Sequence[str]], n: int, lower: bool = True) -> float:
    """Eq. 6: mean over groups of eq. 5."""
    return _mean([ngram_entropy(g, n, lower) for g in groups])


def group_distinct(groups: Sequence[Sequence[str]], n: int, lower: bool = True) -> float:
    return _mean([distinct_n(g, n, lower) for g in groups])


def diversity_report(groups: Sequence[Sequence[str]], orders: Sequence[int] = (1, 2, 3),
                     lower: bool = True) -> dict[str, float]:
    """entropy-n and distinct-n for each order, averaged over groups, plus the group count."""
    out: dict[str, float] = {"groups": len(groups), "responses": sum(len(g) for g in groups)}
    for n in orders:
        out[f"entropy{n}"] = group_entropy(groups, n, lower)
    for n in orders:
        out[f"distinct{n}"] = group_distinct(groups, n, lower)
    return out


def responses_of_system(system: Callable[[list[str], str], str],
                        augmented: Sequence[dict]) -> list[list[str]]:
    """Ask a system (a callable `system(context_turns, query) -> response`) for its response to
    every query of every augmented group (`{"context": [...], "queries": [...]}`)."""
    return [[system(list(g.get("context", [])), q) for q in g["queries"]] for g in augmented]
