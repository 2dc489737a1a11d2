"""The METEOR beam search keeps only the best 40 extensions as it goes (bounded memory); the
jar builds all of them, sorts them stably and keeps 40. A direct version of the jar's rule,
written out here, must choose the same alignment on random candidate sets, including wide
ones (many candidates per position, ties everywhere) where the heap does the pruning."""

from __future__ import annotations

import random

import pytest

from dialeval.metrics.overlap.meteor import align
from dialeval.metrics.overlap.meteor.align import BEAM, _CHUNK, _MSUM


def jar_rule_search(cands, fixed, used1, used2, n2):
    """Every extension materialised, stable sort by rank, keep BEAM (the jar's procedure)."""
    paths = [[0, 0, -1, bytes(used1), bytes(used2), ()]]

    def fixed_step(p, m):
        rank = p[0] - _MSUM * m[5] + abs(m[0] - m[2])
        if p[2] != -1 and m[2] != p[2]:
            rank += _CHUNK
        return [rank, m[0] + m[1], m[2] + m[3], p[3], p[4], p[5]]

    for current in range(n2):
        paths.sort(key=lambda p: p[0])
        del paths[BEAM:]
        nxt = []
        for p in paths:
            if p[4][current]:
                nxt.append(fixed_step(p, fixed[current]) if current >= p[1] else p)
                continue
            rank = p[0]
            for m in cands[current]:
                if any(p[3][m[2]:m[2] + m[3]]) or any(p[4][m[0]:m[0] + m[1]]):
                    continue
                child = rank - _MSUM * m[5] + (_CHUNK if p[2] != -1 and m[2] != p[2] else 0)
                u1, u2 = bytearray(p[3]), bytearray(p[4])
                u1[m[2]:m[2] + m[3]] = b"\x01" * m[3]
                u2[m[0]:m[0] + m[1]] = b"\x01" * m[1]
                nxt.append([child, m[0] + m[1], m[2] + m[3], bytes(u1), bytes(u2), p[5] + (m,)])
                rank += abs(m[0] - m[2])
            if p[2] != -1:
                rank += _CHUNK
            nxt.append([rank, p[1], -1, p[3], p[4], p[5]])
        paths = nxt
    paths.sort(key=lambda p: p[0])
    del paths[BEAM:]
    if len(paths) > 1:
        for p in paths:
            if p[2] != -1:
                p[0] += _CHUNK
        paths.sort(key=lambda p: p[0])
    chosen = [m for m in fixed if m is not None] + list(paths[0][5])
    return sorted(chosen, key=lambda m: m[0])


def random_case(rng, n1, n2, density):
    cands = [[] for _ in range(n2)]
    for j in range(n2):
        for i in range(n1):
            if rng.random() < density:
                module = rng.choice([0, 0, 1, 2])
                cands[j].append((j, 1, i, 1, module, 2 if module == 0 else 0))
        if rng.random() < 0.2 and j + 2 <= n2 and n1 > 2:       # a two-word paraphrase
            i = rng.randrange(n1 - 1)
            cands[j].append((j, 2, i, rng.choice([1, 2]), 3, 1 + (1 if rng.random() < .5 else 0)))
    return cands


def _compiled(*args):
    pytest.importorskip("dialeval.metrics.overlap.meteor.kernel", reason="the Cython kernel is not built")
    return align._search_compiled(*args)


def _small(cands, fixed, used1, used2, n2):
    return align._search_small(cands, fixed, align.flags_to_bits(used1), align.flags_to_bits(used2), n2)


SEARCHES = {"python": align._search, "compiled": _compiled, "small": _small}


@pytest.mark.parametrize("kind", sorted(SEARCHES))
@pytest.mark.parametrize("seed", range(24))
def test_bounded_search_equals_the_jars_rule(seed, kind):
    rng = random.Random(seed)
    n1, n2 = rng.randrange(1, 60), rng.randrange(1, 25)
    cands = random_case(rng, n1, n2, rng.choice([0.05, 0.2, 0.6]))
    fixed = [None] * n2
    used1, used2 = bytearray(n1), bytearray(n2)
    # fixed matches, as `align` makes them: the only candidate at their position, on words no
    # other candidate touches; they stay in the candidate list and are marked used
    for j in rng.sample(range(n2), min(n2, rng.randrange(0, 4))):
        i = rng.randrange(n1)
        if used1[i] or used2[j]:
            continue
        for k in range(n2):
            cands[k] = [m for m in cands[k] if not (m[2] <= i < m[2] + m[3] or m[0] <= j < m[0] + m[1])]
        m = (j, 1, i, 1, 0, 2)
        cands[j] = [m]
        fixed[j] = m
        used1[i] = used2[j] = 1
    assert SEARCHES[kind](cands, fixed, bytearray(used1), bytearray(used2), n2) == \
        jar_rule_search(cands, fixed, used1, used2, n2)


@pytest.mark.parametrize("kind", sorted(SEARCHES))
def test_repetitive_hypothesis_keeps_forty_paths(kind):
    # 800 identical hypothesis words against a reference that has the word three times:
    # 800 candidates at three positions, 32,000 extensions at each, 40 built
    n1, n2 = 800, 6
    cands = [[(j, 1, i, 1, 0, 2) for i in range(n1)] if j in (1, 3, 4) else [] for j in range(n2)]
    got = SEARCHES[kind](cands, [None] * n2, bytearray(n1), bytearray(n2), n2)
    assert got == jar_rule_search(cands, [None] * n2, bytearray(n1), bytearray(n2), n2)
    assert [(m[0], m[2]) for m in got] == [(1, 0), (3, 1), (4, 2)]
