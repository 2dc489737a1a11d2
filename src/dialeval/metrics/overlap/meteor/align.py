"""METEOR 1.5's aligner: candidate matches in four stages, then a beam search for the best
one-to-one alignment, then the 23 sufficient statistics of a (hypothesis, reference) pair.

Behaviour reproduced from the jar because the numbers depend on it:

- every stage adds its candidates to one list per reference position (exact, then stem, then
  synonym, then paraphrase); stem and synonym candidates skip pairs of identical words, but a
  pair can be both a stem and a synonym candidate; identical sentences use the exact stage only;
- a candidate that is alone at its position and covers words no other candidate touches is
  fixed before the search;
- the search ranks partial alignments by weighted matched words (weights 1, .5, .5, .5, each
  side summed into an int, so a one-word non-exact match adds nothing), then fewer chunks, then
  smaller distance; the sort is stable, so ties keep insertion order (new branches before the
  skip branch); the distance of a new branch is added to its parent instead, as in the jar;
- chunks of the final alignment are recounted over it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

BEAM = 40
N_MODULES = 4
# int(m + length * w) in the jar: exact adds the length, the others add floor(length / 2)
_SEARCH_GAIN = (lambda n: n, lambda n: n // 2, lambda n: n // 2, lambda n: n // 2)


@dataclass
class Sentence:
    """One normalised segment and everything the matchers need from it, computed once."""

    words: tuple[str, ...]
    function: list[bool]
    stems: list[str]
    synsets: list[frozenset[int]]
    para_ids: list[int]
    para_paths: list[list[tuple[int, tuple[int, ...]]]]
    word_pos: dict[str, list[int]] = field(default_factory=dict)
    stem_pos: dict[str, list[int]] = field(default_factory=dict)
    syn_pos: dict[int, list[int]] = field(default_factory=dict)
    ngram_pos: dict[tuple[int, ...], list[int]] = field(default_factory=dict)

    def index(self, max_len: int) -> None:
        for i, w in enumerate(self.words):
            self.word_pos.setdefault(w, []).append(i)
        for i, s in enumerate(self.stems):
            self.stem_pos.setdefault(s, []).append(i)
        for i, sets in enumerate(self.synsets):
            for s in sets:
                self.syn_pos.setdefault(s, []).append(i)
        ids = self.para_ids
        n = len(ids)
        for i in range(n):
            for k in range(1, min(max_len, n - i) + 1):
                if ids[i + k - 1] < 0:
                    break
                self.ngram_pos.setdefault(tuple(ids[i:i + k]), []).append(i)


def candidates(h: Sentence, r: Sentence) -> list[list[tuple]]:
    """Per reference position, the candidate matches in the jar's order.

    A match is (start, length, match_start, match_length, module, hyp_mask, ref_mask):
    reference span, hypothesis span, stage, and the spans as bit masks.
    """
    w1, w2 = h.words, r.words
    n2 = len(w2)
    out: list[list[tuple]] = [[] for _ in range(n2)]

    def add(j: int, length: int, i: int, mlength: int, module: int) -> None:
        out[j].append((j, length, i, mlength, module,
                       ((1 << mlength) - 1) << i, ((1 << length) - 1) << j))

    for j in range(n2):
        for i in h.word_pos.get(w2[j], ()):
            add(j, 1, i, 1, 0)
    if w1 == w2:
        return out
    for j in range(n2):
        wj = w2[j]
        for i in h.stem_pos.get(r.stems[j], ()):
            if w1[i] != wj:
                add(j, 1, i, 1, 1)
    for j in range(n2):
        sets = r.synsets[j]
        if not sets:
            continue
        wj = w2[j]
        found: set[int] = set()
        for s in sets:
            found.update(h.syn_pos.get(s, ()))
        for i in sorted(found):
            if w1[i] != wj:
                add(j, 1, i, 1, 2)
    for j in range(n2):
        for length, para in r.para_paths[j]:
            for i in h.ngram_pos.get(para, ()):
                add(j, length, i, len(para), 3)
    for i in range(len(w1)):
        for mlength, para in h.para_paths[i]:
            for j in r.ngram_pos.get(para, ()):
                add(j, len(para), i, mlength, 3)
    return out


def align(h: Sentence, r: Sentence) -> list[tuple]:
    """The jar's best alignment: the chosen matches, ordered by reference position."""
    n1, n2 = len(h.words), len(r.words)
    cands = candidates(h, r)
    cov1 = [0] * n1
    cov2 = [0] * n2
    for lst in cands:
        for m in lst:
            for k in range(m[3]):
                cov1[m[2] + k] += 1
            for k in range(m[1]):
                cov2[m[0] + k] += 1
    fixed: list[tuple | None] = [None] * n2
    used1 = used2 = 0
    open_choices = False
    for j, lst in enumerate(cands):
        if len(lst) == 1:
            m = lst[0]
            if all(cov2[j + k] == 1 for k in range(m[1])) and all(cov1[m[2] + k] == 1 for k in range(m[3])):
                fixed[j] = m
                used1 |= m[5]
                used2 |= m[6]
                continue
        if lst:
            open_choices = True
    if not open_choices:
        return [m for m in fixed if m is not None]
    best = _search(cands, fixed, used1, used2, n2)
    return best


def _search(cands, fixed, used1, used2, n2):
    # a path: [m1, m2, chunks, idx, last_end, distance, used1, used2, chosen]
    # chosen is a linked list (match, rest) of the matches picked during the search
    next_paths = [[0, 0, 0, 0, -1, 0, used1, used2, None]]
    key = lambda p: (-(p[0] + p[1]), p[2], p[5])  # noqa: E731
    for current in range(n2 + 1):
        paths = next_paths
        paths.sort(key=key)
        next_paths = []
        bit = 1 << current
        for path in paths[:BEAM]:
            if current == n2:
                if path[4] != -1:
                    path[2] += 1
                next_paths.append(path)
                continue
            if path[7] & bit:
                if current < path[3]:
                    next_paths.append(path)
                else:
                    m = fixed[path[3]]
                    if m is not None:
                        gain = _SEARCH_GAIN[m[4]]
                        path[0] += gain(m[3])
                        path[1] += gain(m[1])
                        if path[4] != -1 and m[2] != path[4]:
                            path[2] += 1
                        path[3] = m[0] + m[1]
                        path[4] = m[2] + m[3]
                        path[5] += abs(m[0] - m[2])
                        next_paths.append(path)
                continue
            for m in cands[current]:
                if path[6] & m[5] or path[7] & m[6]:
                    continue
                gain = _SEARCH_GAIN[m[4]]
                new = [path[0] + gain(m[3]), path[1] + gain(m[1]), path[2], m[0] + m[1],
                       m[2] + m[3], path[5], path[6] | m[5], path[7] | m[6], (m, path[8])]
                if path[4] != -1 and m[2] != path[4]:
                    new[2] += 1
                path[5] += abs(m[0] - m[2])      # the jar adds it to the parent
                next_paths.append(new)
            if path[4] != -1:
                path[2] += 1
                path[4] = -1
            path[3] += 1
            next_paths.append(path)
        if not next_paths:
            next_paths.append(paths[0])
    next_paths.sort(key=key)
    best = next_paths[0]
    chosen = [m for m in fixed if m is not None]
    link = best[8]
    while link is not None:
        chosen.append(link[0])
        link = link[1]
    chosen.sort(key=lambda m: m[0])
    return chosen


def pair_stats(h: Sentence, r: Sentence) -> list[float]:
    """The jar's 23 statistics for one (hypothesis, reference) pair."""
    matches = align(h, r)
    stats = [0.0] * 23
    stats[0] = len(h.words)
    stats[1] = len(r.words)
    stats[2] = sum(h.function)
    stats[3] = sum(r.function)
    f1, f2 = h.function, r.function
    total1 = total2 = 0
    for m in matches:
        base = 4 + 4 * m[4]
        for k in range(m[3]):
            stats[base + (2 if f1[m[2] + k] else 0)] += 1
        for k in range(m[1]):
            stats[base + (3 if f2[m[0] + k] else 1)] += 1
        total1 += m[3]
        total2 += m[1]
    stats[20] = _chunks(matches)
    stats[21] = total1
    stats[22] = total2
    return stats


def _chunks(matches: list[tuple]) -> int:
    """Runs of matches contiguous and in order on both sides (matches sorted by reference)."""
    chunks = 0
    last_end = -1
    ref_end = -1
    for m in matches:
        if last_end != -1 and (m[0] != ref_end or m[2] != last_end):
            chunks += 1
        last_end = m[2] + m[3]
        ref_end = m[0] + m[1]
    if last_end != -1:
        chunks += 1
    return chunks
