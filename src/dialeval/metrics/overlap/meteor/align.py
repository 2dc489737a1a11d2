"""METEOR 1.5's aligner: candidate matches in four stages, then a beam search for the best
one-to-one alignment, then the 23 sufficient statistics of a (hypothesis, reference) pair.

Behaviour reproduced from the jar because the numbers depend on it:

- words are compared the way the jar compares them: by Java `String.hashCode()` in the exact
  stage, the stem stage (hash of the stems) and the "identical words" tests of the stem and
  synonym stages and of the whole sentence (so `do` and `f1`, both 3211, are an exact match);
  synonym and paraphrase look-ups use the strings themselves. `Sentence.keys`/`stem_keys` hold
  whatever is compared: the hashes by default, the strings with `meteor_compare="strings"`;
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

This module is the pure-Python reference; `metric` runs the same procedure compiled
(`kernel.pyx`) wherever the extension is built, and the tests check that both agree. The search
has three implementations that choose the same alignment (tests/test_meteor_search.py checks
each against the jar's procedure): `_search_small` (segments up to 512 words: every extension
built, used words as int bit masks), `_search` (longer: extensions ranked first and built only
when they enter the best 40, so memory stays bounded) and the kernel's `search_rows` (the same
in C, with bit sets; `_search_compiled` calls it on this module's candidate lists).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from operator import itemgetter

import numpy as np

BEAM = 40


@dataclass
class Sentence:
    """One normalised segment and everything the matchers need from it, computed once."""

    words: tuple[str, ...]
    function: list[bool]
    stems: list[str]
    keys: tuple            # what the exact stage compares (Java hash codes, or the words)
    stem_keys: tuple       # what the stem stage compares (hash codes of the stems, or stems)
    synsets: list[frozenset[int]]
    paraphrases: dict[int, list[tuple[int, int, int, int]]]  # see ParaphraseTable.analyse
    ngrams: dict[int, list[int]]
    _pos: tuple[dict, dict, dict] | None = field(default=None, repr=False)

    def positions(self) -> tuple[dict, dict, dict]:
        """word -> positions, stem -> positions, synset -> positions (built on first use,
        which is only for sentences used as hypotheses)."""
        if self._pos is None:
            words: dict[str, list[int]] = {}
            stems: dict[str, list[int]] = {}
            syns: dict[int, list[int]] = {}
            for i, w in enumerate(self.keys):
                words.setdefault(w, []).append(i)
            for i, st in enumerate(self.stem_keys):
                stems.setdefault(st, []).append(i)
            for i, sets in enumerate(self.synsets):
                for x in sets:
                    syns.setdefault(x, []).append(i)
            self._pos = (words, stems, syns)
        return self._pos


def candidates(h: Sentence, r: Sentence) -> list[list[tuple]]:
    """Per reference position, the candidate matches in the jar's order.

    A match is (start, length, match_start, match_length, module, gain): reference span,
    hypothesis span, stage, and what it adds to the search's match count (the jar sums
    `length * weight` into an int per side, weights 1 for exact and .5 otherwise, so a one-word
    non-exact match adds nothing). Plain tuples of small ints: a long repetitive hypothesis
    has one candidate per word at every reference position that matches it.
    """
    w1, w2 = h.keys, r.keys
    n2 = len(w2)
    out: list[list[tuple]] = [[] for _ in range(n2)]

    word_pos, stem_pos, syn_pos = h.positions()
    for j in range(n2):
        found = word_pos.get(w2[j])
        if found:
            out[j].extend([(j, 1, i, 1, 0, 2) for i in found])
    if w1 == w2:
        return out
    for j in range(n2):
        wj = w2[j]
        for i in stem_pos.get(r.stem_keys[j], ()):
            if w1[i] != wj:
                out[j].append((j, 1, i, 1, 1, 0))
    hyp_synsets = syn_pos.keys()
    for j in range(n2):
        sets = r.synsets[j]
        if not sets or hyp_synsets.isdisjoint(sets):
            continue
        wj = w2[j]
        found: set[int] = set()
        for s in hyp_synsets & sets:
            found.update(syn_pos[s])
        for i in sorted(found):
            if w1[i] != wj:
                out[j].append((j, 1, i, 1, 2, 0))
    # paraphrases of reference phrases found in the hypothesis: per position, the jar's
    # transducer order (phrase length, table entry), then hypothesis position
    hits = []
    for key in r.paraphrases.keys() & h.ngrams.keys():
        found = h.ngrams[key]
        for j, length, entry, plength in r.paraphrases[key]:
            for i in found:
                hits.append((j, length, entry, i, plength))
    hits.sort()
    for j, length, _, i, plength in hits:
        out[j].append((j, length, i, plength, 3, length // 2 + plength // 2))
    # paraphrases of hypothesis phrases found in the reference: hypothesis position first
    hits = []
    for key in h.paraphrases.keys() & r.ngrams.keys():
        found = r.ngrams[key]
        for i, length, entry, plength in h.paraphrases[key]:
            for j in found:
                hits.append((j, i, length, entry, plength))
    hits.sort()
    for j, i, length, _, plength in hits:
        out[j].append((j, plength, i, length, 3, plength // 2 + length // 2))
    return out


def align(h: Sentence, r: Sentence) -> list[tuple]:
    """The jar's best alignment: the chosen matches, ordered by reference position."""
    n1, n2 = len(h.words), len(r.words)
    cands = candidates(h, r)
    cov1 = [0] * n1
    cov2 = [0] * n2
    for lst in cands:
        for m in lst:
            if m[3] == 1:
                cov1[m[2]] += 1
            else:
                for k in range(m[3]):
                    cov1[m[2] + k] += 1
            for k in range(m[1]):
                cov2[m[0] + k] += 1
    fixed: list[tuple | None] = [None] * n2
    found = []
    open_choices = False
    for j, lst in enumerate(cands):
        if len(lst) == 1:
            m = lst[0]
            if all(cov2[j + k] == 1 for k in range(m[1])) and all(cov1[m[2] + k] == 1 for k in range(m[3])):
                fixed[j] = m
                found.append(m)
                continue
        if lst:
            open_choices = True
    if not open_choices:
        return found
    if n1 <= SMALL and n2 <= SMALL:
        used1 = used2 = 0
        for m in found:
            used1 |= ((1 << m[3]) - 1) << m[2]
            used2 |= ((1 << m[1]) - 1) << m[0]
        return _search_small(cands, fixed, used1, used2, n2)
    used1 = bytearray(n1)
    used2 = bytearray(n2)
    for m in found:
        used1[m[2]:m[2] + m[3]] = b"\x01" * m[3]
        used2[m[0]:m[0] + m[1]] = b"\x01" * m[1]
    return _search(cands, fixed, used1, used2, n2)


# Sentences up to this many words take `_search_small` (used words as int bit masks, every
# extension built, as the jar does: at most 40 x 512 small objects per position). Longer ones
# take `_search`, which builds only the extensions that enter the beam (a repetitive
# 20,000-word response has 20,000 candidates at each matching position).
SMALL = 512


def flags_to_bits(flags: bytearray) -> int:
    """Used-word flags (one byte each) as an int bit mask (bit i = word i)."""
    return sum(1 << i for i, f in enumerate(flags) if f)


def _keep_best(paths: list) -> None:
    """The jar's beam step: paths stably sorted by rank, the best BEAM kept (in place)."""
    if len(paths) > 1:
        paths.sort(key=_rank_of)
        if len(paths) > BEAM:
            del paths[BEAM:]


def _search_small(cands, fixed, used1, used2, n2):
    """`_search` for short sentences: the jar's procedure directly (build every extension,
    stable sort, keep 40), with used words as int bit masks; fastest when extensions are few.
    Paths are [rank, idx, last_end, used1, used2, chosen] as in `_search`."""
    paths = [[0, 0, -1, used1, used2, None]]
    for current in range(n2):
        _keep_best(paths)
        bit = 1 << current
        options = cands[current]
        if not options:
            for path in paths:
                if path[4] & bit:
                    if current >= path[1]:          # a fixed match starts here
                        _fixed_step(path, fixed[current])
                elif path[2] != -1:                  # skip: close the open chunk
                    path[0] += _CHUNK
                    path[2] = -1
            continue
        opts = [(((1 << m[3]) - 1) << m[2], ((1 << m[1]) - 1) << m[0], _MSUM * m[5], m[2], m[0] + m[1],
                 m[2] + m[3], abs(m[0] - m[2]), m) for m in options]
        nxt = []
        append = nxt.append
        for path in paths:
            if path[4] & bit:
                if current >= path[1]:
                    _fixed_step(path, fixed[current])
                append(path)
                continue
            rank, last, u1, u2 = path[0], path[2], path[3], path[4]
            for mask1, mask2, gain, start1, end2, end1, dist, m in opts:
                if u1 & mask1 or u2 & mask2:
                    continue
                if last != -1 and start1 != last:
                    append([rank - gain + _CHUNK, end2, end1, u1 | mask1, u2 | mask2, (m, path[5])])
                else:
                    append([rank - gain, end2, end1, u1 | mask1, u2 | mask2, (m, path[5])])
                rank += dist                     # the jar adds the distance to the parent
            if last != -1:
                rank += _CHUNK
                path[2] = -1
            path[0] = rank
            append(path)
        paths = nxt
    return _best_of(paths, fixed)


def _best_of(paths, fixed):
    """The jar's last step: sort, keep 40, close open chunks, sort again; the best path's
    matches with the fixed ones, by reference position."""
    if len(paths) > 1:
        paths.sort(key=_rank_of)
        del paths[BEAM:]
        for path in paths:
            if path[2] != -1:
                path[0] += _CHUNK
        paths.sort(key=_rank_of)
    best = paths[0]
    chosen = [m for m in fixed if m is not None]
    link = best[5]
    while link is not None:
        chosen.append(link[0])
        link = link[1]
    chosen.sort(key=lambda m: m[0])
    return chosen


def _search_compiled(cands, fixed, used1, used2, n2):
    """The same search by the compiled kernel (`kernel.search_rows`), on the candidates laid
    out flat (used by the tests; the metric runs whole pairs in the kernel)."""
    from . import kernel

    flat = [m for lst in cands for m in lst]
    sizes = np.fromiter(map(len, cands), dtype=np.int64, count=n2)
    off = np.zeros(n2 + 1, dtype=np.int64)
    np.cumsum(sizes, out=off[1:])
    rows = np.array(flat, dtype=np.int64).reshape(-1, 6)
    fixed_row = np.where(np.fromiter((m is not None for m in fixed), dtype=bool, count=n2), off[:-1], -1)
    chosen = kernel.search_rows(off, rows, fixed_row, np.frombuffer(bytes(used1), dtype=np.uint8),
                                np.frombuffer(bytes(used2), dtype=np.uint8))
    out = [m for m in fixed if m is not None]
    out.extend(flat[k] for k in chosen.tolist())
    out.sort(key=lambda m: m[0])
    return out


# The jar ranks partial alignments by more matched words, then fewer chunks, then smaller
# distance; one Python int packs the three with room to spare (distances of a 100,000-word
# pair still fit in the low field), so comparisons are single integer comparisons.
_CHUNK = 1 << 64
_MSUM = 1 << 128


def _fixed_step(path: list, m: tuple) -> None:
    """A fixed match starts at the current position: add it to the path in place."""
    rank = path[0] - _MSUM * m[5] + abs(m[0] - m[2])
    if path[2] != -1 and m[2] != path[2]:
        rank += _CHUNK
    path[0] = rank
    path[1] = m[0] + m[1]
    path[2] = m[2] + m[3]


def _search(cands, fixed, used1, used2, n2):
    """Beam search over the open candidates, left to right over the reference.

    A path is [rank, idx, last_end, used1, used2, chosen]: `rank` packs the jar's comparator,
    `idx` is the end of the path's last match (the jar's cursor is max(idx, current): it moves
    one position per skip, so it is only ahead of `current` inside a match), `used1/used2` are
    bytearrays of used words, `chosen` a linked list (match, rest).

    At a position with candidates the jar builds every extension of every path, sorts them
    (stably: new branches in candidate order, then the skip branch) and keeps the best 40.
    Here each extension is first only ranked; an extension is built (its used-word arrays
    copied) only when it enters the best 40 seen so far, kept in a heap ordered by (rank,
    arrival). The result is the jar's, and memory stays at 40 paths whatever the number of
    candidates (a 20,000-word repetitive hypothesis has 20,000 at a matching position).
    Positions without candidates update the paths in place: each path then yields exactly
    itself, so the order is unchanged.
    """
    paths = [[0, 0, -1, used1, used2, None]]
    for current in range(n2):
        _keep_best(paths)
        options = cands[current]
        if not options:
            for path in paths:
                if path[4][current]:
                    if current >= path[1]:          # a fixed match starts here
                        _fixed_step(path, fixed[current])
                elif path[2] != -1:                  # skip: close the open chunk
                    path[0] += _CHUNK
                    path[2] = -1
            continue
        # best BEAM offers as a max-heap on (rank, arrival): entries (-rank, -arrival, offer)
        heap: list = []
        worst = None                                 # rank of heap[0] once the heap is full
        arrival = 0
        for path in paths:
            if path[4][current]:
                if current >= path[1]:
                    _fixed_step(path, fixed[current])
                arrival += 1
                if worst is None or path[0] < worst:
                    _offer(heap, (-path[0], -arrival, path, None))
                    worst = -heap[0][0] if len(heap) == BEAM else None
                continue
            rank, last, u1, u2 = path[0], path[2], path[3], path[4]
            for m in options:
                s1, l1, s2, l2 = m[2], m[3], m[0], m[1]
                if l1 == 1:
                    if u1[s1]:
                        continue
                elif any(u1[s1:s1 + l1]):
                    continue
                if l2 == 1:
                    if u2[s2]:
                        continue
                elif any(u2[s2:s2 + l2]):
                    continue
                child = rank - _MSUM * m[5]
                if last != -1 and s1 != last:
                    child += _CHUNK
                arrival += 1
                if worst is None or child < worst:
                    _offer(heap, (-child, -arrival, path, m))
                    worst = -heap[0][0] if len(heap) == BEAM else None
                rank += abs(s2 - s1)                 # the jar adds the distance to the parent
            if last != -1:
                rank += _CHUNK
            arrival += 1
            if worst is None or rank < worst:
                # the skip branch: the parent itself, with its new rank and its chunk closed
                _offer(heap, (-rank, -arrival, path, _SKIP))
                worst = -heap[0][0] if len(heap) == BEAM else None
        heap.sort(reverse=True)                      # best rank first, earlier arrival first
        paths = [_build(-neg_rank, parent, m) for neg_rank, _, parent, m in heap]
    return _best_of(paths, fixed)


_SKIP = ()


_rank_of = itemgetter(0)     # a path's rank (C-level sort key)


def _offer(heap: list, item: tuple) -> None:
    if len(heap) < BEAM:
        heapq.heappush(heap, item)
    else:
        heapq.heapreplace(heap, item)


def _build(rank: int, parent: list, m: tuple | None) -> list:
    """The path an accepted offer stands for: the parent as it is (in-place step), the parent
    with its chunk closed (skip), or a copy extended by match `m`."""
    if m is None:
        return parent
    if m is _SKIP:
        return [rank, parent[1], -1, parent[3], parent[4], parent[5]]
    s1, l1, s2, l2 = m[2], m[3], m[0], m[1]
    u1 = bytearray(parent[3])
    u2 = bytearray(parent[4])
    u1[s1:s1 + l1] = b"\x01" * l1
    u2[s2:s2 + l2] = b"\x01" * l2
    return [rank, s2 + l2, s1 + l1, u1, u2, (m, parent[5])]


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
