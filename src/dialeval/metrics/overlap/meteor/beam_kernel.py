"""The compiled beam search (numba). Imported only through `beam`, which falls back to the
pure-Python search when numba is missing; see `beam` for what it computes."""

import numpy as np
from numba import njit


@njit(cache=True, inline="always")
def _better(g1, c1, d1, a1, g2, c2, d2, a2):
    """(gain, chunks, distance, arrival) of entry 1 sorts before entry 2 (the jar's
    comparator, then arrival: the jar's sort is stable)."""
    if g1 != g2:
        return g1 > g2
    if c1 != c2:
        return c1 < c2
    if d1 != d2:
        return d1 < d2
    return a1 < a2


@njit(cache=True, inline="always")
def _sort_beam(order, count, g, c, d, cur):
    """Stable insertion sort of the first `count` beam slots by the jar's comparator."""
    for a in range(1, count):
        s = order[a]
        b = a - 1
        while b >= 0 and _better(g[cur, s], c[cur, s], d[cur, s], 1, g[cur, order[b]], c[cur, order[b]], d[cur, order[b]], 0):
            order[b + 1] = order[b]
            b -= 1
        order[b + 1] = s


@njit(cache=True, inline="always")
def _take_fixed(g, c, d, idx, last, cur, s, cand, m):
    """Path `s` takes candidate row `m` (a match every path must take: gain, distance, chunk)."""
    g[cur, s] += cand[m, 5]
    d[cur, s] += abs(cand[m, 0] - cand[m, 2])
    if last[cur, s] != -1 and cand[m, 2] != last[cur, s]:
        c[cur, s] += 1
    idx[cur, s] = cand[m, 0] + cand[m, 1]
    last[cur, s] = cand[m, 2] + cand[m, 3]


@njit(cache=True, nogil=True)
def search_arrays(off, cand, fixed, used1, used2, beam):
    n2 = used2.shape[0]
    n1 = used1.shape[0]
    # path state, double-buffered: slot arrays + the beam order over slots
    g = np.zeros((2, beam), np.int64)
    c = np.zeros((2, beam), np.int64)
    d = np.zeros((2, beam), np.int64)
    idx = np.zeros((2, beam), np.int64)
    last = np.full((2, beam), -1, np.int64)
    node = np.zeros((2, beam), np.int64)
    u1 = np.zeros((2, beam, n1), np.uint8)
    u2 = np.zeros((2, beam, n2), np.uint8)
    u1[0, 0, :] = used1
    u2[0, 0, :] = used2
    cur = 0
    count = 1
    order = np.zeros(beam, np.int64)
    # history of chosen candidates: node -> (parent node, candidate row); node 0 is the root
    positions = 0
    for j in range(n2):
        if off[j + 1] > off[j]:
            positions += 1
    node_parent = np.zeros(1 + positions * beam, np.int64)
    node_cand = np.full(1 + positions * beam, -1, np.int64)
    nodes = 1
    # the best `beam` offers of one position, sorted: keys, arrival, parent slot, kind
    sg = np.zeros(beam, np.int64)
    sc = np.zeros(beam, np.int64)
    sd = np.zeros(beam, np.int64)
    sa = np.zeros(beam, np.int64)
    sp = np.zeros(beam, np.int64)
    sk = np.zeros(beam, np.int64)   # >= 0: candidate row; -1: the path as it is; -2: skip
    for j in range(n2):
        # stable sort of the beam by rank (in-place steps may have changed ranks)
        _sort_beam(order, count, g, c, d, cur)
        lo, hi = off[j], off[j + 1]
        if lo == hi:
            for a in range(count):
                s = order[a]
                if u2[cur, s, j]:
                    if j >= idx[cur, s]:                       # a fixed match starts here
                        _take_fixed(g, c, d, idx, last, cur, s, cand, fixed[j])
                elif last[cur, s] != -1:                        # skip: close the open chunk
                    c[cur, s] += 1
                    last[cur, s] = -1
            continue
        kept = 0
        arrival = 0
        for a in range(count):
            s = order[a]
            if u2[cur, s, j]:
                if j >= idx[cur, s]:
                    _take_fixed(g, c, d, idx, last, cur, s, cand, fixed[j])
                kept = _offer(sg, sc, sd, sa, sp, sk, kept, beam, g[cur, s], c[cur, s], d[cur, s], arrival, s, -1)
                arrival += 1
                continue
            pg, pc, dist, pl = g[cur, s], c[cur, s], d[cur, s], last[cur, s]
            for r in range(lo, hi):
                s1, l1, s2, l2 = cand[r, 2], cand[r, 3], cand[r, 0], cand[r, 1]
                free = True
                for k in range(l1):
                    if u1[cur, s, s1 + k]:
                        free = False
                        break
                if free:
                    for k in range(l2):
                        if u2[cur, s, s2 + k]:
                            free = False
                            break
                if not free:
                    continue
                cc = pc + 1 if (pl != -1 and s1 != pl) else pc
                kept = _offer(sg, sc, sd, sa, sp, sk, kept, beam, pg + cand[r, 5], cc, dist, arrival, s, r)
                arrival += 1
                dist += abs(s2 - s1)                            # the jar adds it to the parent
            cc = pc + 1 if pl != -1 else pc
            kept = _offer(sg, sc, sd, sa, sp, sk, kept, beam, pg, cc, dist, arrival, s, -2)
            arrival += 1
        # build the kept offers into the other buffer
        nxt = 1 - cur
        for a in range(kept):
            s = sp[a]
            kind = sk[a]
            g[nxt, a] = sg[a]
            c[nxt, a] = sc[a]
            d[nxt, a] = sd[a]
            u1[nxt, a, :] = u1[cur, s, :]
            u2[nxt, a, :] = u2[cur, s, :]
            if kind >= 0:
                s1, l1, s2, l2 = cand[kind, 2], cand[kind, 3], cand[kind, 0], cand[kind, 1]
                for k in range(l1):
                    u1[nxt, a, s1 + k] = 1
                for k in range(l2):
                    u2[nxt, a, s2 + k] = 1
                idx[nxt, a] = s2 + l2
                last[nxt, a] = s1 + l1
                node_parent[nodes] = node[cur, s]
                node_cand[nodes] = kind
                node[nxt, a] = nodes
                nodes += 1
            else:
                idx[nxt, a] = idx[cur, s]
                last[nxt, a] = last[cur, s] if kind == -1 else -1
                node[nxt, a] = node[cur, s]
            order[a] = a
        cur = nxt
        count = kept
    if count > 1:
        # the jar: sort, then close open chunks, then sort again
        _sort_beam(order, count, g, c, d, cur)
        for a in range(count):
            s = order[a]
            if last[cur, s] != -1:
                c[cur, s] += 1
        _sort_beam(order, count, g, c, d, cur)
    best = order[0]
    size = 0
    n = node[cur, best]
    while n > 0:
        size += 1
        n = node_parent[n]
    out = np.empty(size, np.int64)
    n = node[cur, best]
    while n > 0:
        size -= 1
        out[size] = node_cand[n]
        n = node_parent[n]
    return out


@njit(cache=True)
def _offer(sg, sc, sd, sa, sp, sk, kept, beam, g, c, d, a, parent, kind):
    """Insert one offer into the sorted best-`beam` list; returns the new length."""
    if kept == beam:
        w = beam - 1
        if not _better(g, c, d, a, sg[w], sc[w], sd[w], sa[w]):
            return kept
        pos = w
    else:
        pos = kept
        kept += 1
    while pos > 0 and _better(g, c, d, a, sg[pos - 1], sc[pos - 1], sd[pos - 1], sa[pos - 1]):
        sg[pos] = sg[pos - 1]
        sc[pos] = sc[pos - 1]
        sd[pos] = sd[pos - 1]
        sa[pos] = sa[pos - 1]
        sp[pos] = sp[pos - 1]
        sk[pos] = sk[pos - 1]
        pos -= 1
    sg[pos] = g
    sc[pos] = c
    sd[pos] = d
    sa[pos] = a
    sp[pos] = parent
    sk[pos] = kind
    return kept
