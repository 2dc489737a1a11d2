# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
# distutils: extra_compile_args = -ffp-contract=off
"""METEOR's per-pair work in C: candidate matches, the beam search, statistics and score.

This is the compiled form of `align.pair_stats` + `metric.score_stats`, run on a batch's
sentences packed into flat integer arrays (`packed.pack`), so a (hypothesis, reference) pair
costs no Python objects at all. The pure-Python path in `align` stays the reference: the
tests check that both give the same statistics on random inputs.

What must equal the jar, and how it is kept equal here:

- words and stems are compared as int64 keys (Java String.hashCode(), or ids of the strings
  with `meteor_compare="strings"`): the same equality tests as the Python path;
- candidates come out per reference position in the jar's order: exact, stem, synonym, then
  the two paraphrase passes, each pass sorted on the same tuples as `align.candidates`;
- the search is the bounded beam search of `align._search` (the best 40 extensions kept as
  they are offered; ties in arrival order, as the jar's stable sort leaves them), with the
  used words as bit sets, so memory stays at 40 paths whatever the input;
- the score follows `metric.score_stats` operation by operation in IEEE doubles (division by
  zero gives inf/NaN as in Java; `-ffp-contract=off` keeps the compiler from fusing a
  multiply and an add, which would round differently).
"""

from libc.math cimport isnan, pow
from libc.stdint cimport int64_t, uint8_t, uint64_t
from libc.stdlib cimport free, qsort, realloc
from libc.string cimport memcpy, memset

import numpy as np

cdef enum:
    BEAM = 40

cdef struct Cand:
    int64_t rs      # reference start
    int64_t rl      # reference length
    int64_t hs      # hypothesis start
    int64_t hl      # hypothesis length
    int64_t module  # 0 exact, 1 stem, 2 synonym, 3 paraphrase
    int64_t gain    # what the search counts as matched words (sum of length * weight, as ints)

cdef struct Hit:
    int64_t k[5]

cdef struct Buf:
    void* p
    size_t cap


cdef void* need(Buf* b, size_t nbytes) except NULL:
    """`b`'s memory, grown to at least `nbytes` (never shrunk; freed by `release`)."""
    cdef void* q
    if nbytes == 0:
        nbytes = 8
    if nbytes > b.cap:
        if nbytes < 2 * b.cap:
            nbytes = 2 * b.cap
        q = realloc(b.p, nbytes)
        if q == NULL:
            raise MemoryError()
        b.p = q
        b.cap = nbytes
    return b.p


cdef struct Scratch:
    Buf raw, cand, off, cnt, hits, tmp, cov1, cov2, fixed, at, u1, u2, state, nodes

cdef void release(Scratch* s):
    cdef Buf* b = <Buf*> s
    cdef size_t k
    for k in range(sizeof(Scratch) // sizeof(Buf)):
        free(b[k].p)
        b[k].p = NULL
        b[k].cap = 0


cdef int hit_cmp(const void* a, const void* b) noexcept nogil:
    cdef const Hit* x = <const Hit*> a
    cdef const Hit* y = <const Hit*> b
    cdef int t
    for t in range(5):
        if x.k[t] < y.k[t]:
            return -1
        if x.k[t] > y.k[t]:
            return 1
    return 0


cdef int i64_cmp(const void* a, const void* b) noexcept nogil:
    cdef int64_t x = (<const int64_t*> a)[0]
    cdef int64_t y = (<const int64_t*> b)[0]
    return (x > y) - (x < y)


cdef inline Py_ssize_t lower_i64(const int64_t[::1] a, Py_ssize_t lo, Py_ssize_t hi, int64_t v) noexcept:
    cdef Py_ssize_t mid
    while lo < hi:
        mid = (lo + hi) >> 1
        if a[mid] < v:
            lo = mid + 1
        else:
            hi = mid
    return lo


cdef class Corpus:
    """A batch's analysed sentences as flat arrays (built by `packed.pack`; see there)."""

    cdef const int64_t[::1] tok_off, key, skey, key_sorted, key_pos, skey_sorted, skey_pos
    cdef const uint8_t[::1] func
    cdef const int64_t[::1] tok_type, type_syn_off, type_syn, ssyn_off, ssyn_id, ssyn_pos
    cdef const int64_t[::1] para_off, para_pos, para_len, para_ent, para_plen, ng_off, ng_pos
    cdef const uint64_t[::1] para_key, ng_key

    def __init__(self, a):
        self.tok_off = a["tok_off"]
        self.key = a["key"]
        self.skey = a["skey"]
        self.key_sorted = a["key_sorted"]
        self.key_pos = a["key_pos"]
        self.skey_sorted = a["skey_sorted"]
        self.skey_pos = a["skey_pos"]
        self.func = a["func"]
        self.tok_type = a["tok_type"]
        self.type_syn_off = a["type_syn_off"]
        self.type_syn = a["type_syn"]
        self.ssyn_off = a["ssyn_off"]
        self.ssyn_id = a["ssyn_id"]
        self.ssyn_pos = a["ssyn_pos"]
        self.para_off = a["para_off"]
        self.para_pos = a["para_pos"]
        self.para_len = a["para_len"]
        self.para_ent = a["para_ent"]
        self.para_plen = a["para_plen"]
        self.para_key = a["para_key"]
        self.ng_off = a["ng_off"]
        self.ng_pos = a["ng_pos"]
        self.ng_key = a["ng_key"]


cdef inline int push(Buf* b, Py_ssize_t* n, int64_t rs, int64_t rl, int64_t hs, int64_t hl,
                     int64_t module, int64_t gain) except -1:
    cdef Cand* c = <Cand*> need(b, (n[0] + 1) * sizeof(Cand))
    c += n[0]
    c.rs = rs
    c.rl = rl
    c.hs = hs
    c.hl = hl
    c.module = module
    c.gain = gain
    n[0] += 1
    return 0


cdef inline Hit* add_hit(Buf* b, Py_ssize_t* n) except NULL:
    cdef Hit* h = <Hit*> need(b, (n[0] + 1) * sizeof(Hit))
    n[0] += 1
    return h + n[0] - 1


cdef Py_ssize_t paraphrase_hits(Corpus C, Py_ssize_t phr, Py_ssize_t ngr, bint ref_phrases,
                                Scratch* S) except -1:
    """Merge-join the paraphrase keys of sentence `phr` with the n-gram keys of sentence `ngr`
    into S.hits, one Hit per (phrase, n-gram) pair with equal keys; returns their number. The
    fields are laid out in the order the stage sorts them: (reference position, length, entry,
    hypothesis position, paraphrase length) when `phr` is the reference (`ref_phrases`), else
    (reference position, hypothesis position, length, entry, paraphrase length)."""
    cdef Py_ssize_t nh = 0, t, k, pp, qq
    cdef Py_ssize_t p = C.para_off[phr], pe = C.para_off[phr + 1]
    cdef Py_ssize_t q = C.ng_off[ngr], qe = C.ng_off[ngr + 1]
    cdef uint64_t K
    cdef Hit* x
    while p < pe and q < qe:
        if C.para_key[p] < C.ng_key[q]:
            p += 1
        elif C.para_key[p] > C.ng_key[q]:
            q += 1
        else:
            K = C.para_key[p]
            pp = p
            while pe > pp and C.para_key[pp] == K:
                pp += 1
            qq = q
            while qe > qq and C.ng_key[qq] == K:
                qq += 1
            for t in range(p, pp):
                for k in range(q, qq):
                    x = add_hit(&S.hits, &nh)
                    if ref_phrases:
                        x.k[0] = C.para_pos[t]
                        x.k[1] = C.para_len[t]
                        x.k[2] = C.para_ent[t]
                        x.k[3] = C.ng_pos[k]
                    else:
                        x.k[0] = C.ng_pos[k]
                        x.k[1] = C.para_pos[t]
                        x.k[2] = C.para_len[t]
                        x.k[3] = C.para_ent[t]
                    x.k[4] = C.para_plen[t]
            p, q = pp, qq
    return nh


cdef Py_ssize_t candidates(Corpus C, Py_ssize_t h, Py_ssize_t r, Scratch* S) except -1:
    """`align.candidates` for sentences h and r: fills S.cand (grouped by reference position,
    stage order kept within a position) and S.off; returns the number of candidates."""
    cdef Py_ssize_t h0 = C.tok_off[h], n1 = C.tok_off[h + 1] - h0
    cdef Py_ssize_t r0 = C.tok_off[r], n2 = C.tok_off[r + 1] - r0
    cdef Py_ssize_t n = 0, j, lo, hi, t, nh, nt
    cdef int64_t kj, sk, s, i, ty
    cdef Hit* x
    cdef int64_t* tmp
    cdef Cand* raw
    cdef Cand* out
    cdef int64_t* off
    cdef int64_t* cnt
    cdef bint same
    hi = h0 + n1
    # exact: equal keys
    for j in range(n2):
        kj = C.key[r0 + j]
        lo = lower_i64(C.key_sorted, h0, hi, kj)
        while lo < hi and C.key_sorted[lo] == kj:
            push(&S.raw, &n, j, 1, C.key_pos[lo], 1, 0, 2)
            lo += 1
    same = n1 == n2
    if same:
        for j in range(n2):
            if C.key[r0 + j] != C.key[h0 + j]:
                same = False
                break
    if not same:
        # stem: equal stem keys, different word keys
        for j in range(n2):
            kj = C.key[r0 + j]
            sk = C.skey[r0 + j]
            lo = lower_i64(C.skey_sorted, h0, hi, sk)
            while lo < hi and C.skey_sorted[lo] == sk:
                i = C.skey_pos[lo]
                if C.key[h0 + i] != kj:
                    push(&S.raw, &n, j, 1, i, 1, 1, 0)
                lo += 1
        # synonym: a shared synset, different word keys; hypothesis positions ascending, once
        for j in range(n2):
            ty = C.tok_type[r0 + j]
            if C.type_syn_off[ty] == C.type_syn_off[ty + 1] or C.ssyn_off[h] == C.ssyn_off[h + 1]:
                continue
            kj = C.key[r0 + j]
            nt = 0
            for t in range(C.type_syn_off[ty], C.type_syn_off[ty + 1]):
                s = C.type_syn[t]
                lo = lower_i64(C.ssyn_id, C.ssyn_off[h], C.ssyn_off[h + 1], s)
                while lo < C.ssyn_off[h + 1] and C.ssyn_id[lo] == s:
                    tmp = <int64_t*> need(&S.tmp, (nt + 1) * sizeof(int64_t))
                    tmp[nt] = C.ssyn_pos[lo]
                    nt += 1
                    lo += 1
            if nt == 0:
                continue
            tmp = <int64_t*> S.tmp.p
            if nt > 1:
                qsort(tmp, nt, sizeof(int64_t), i64_cmp)
            for t in range(nt):
                if t > 0 and tmp[t] == tmp[t - 1]:
                    continue
                if C.key[h0 + tmp[t]] != kj:
                    push(&S.raw, &n, j, 1, tmp[t], 1, 2, 0)
        # paraphrases of reference phrases found in the hypothesis:
        # hits (j, length, entry, i, plength), sorted
        nh = paraphrase_hits(C, r, h, True, S)
        if nh:
            x = <Hit*> S.hits.p
            qsort(x, nh, sizeof(Hit), hit_cmp)
            for t in range(nh):
                push(&S.raw, &n, x[t].k[0], x[t].k[1], x[t].k[3], x[t].k[4], 3,
                     x[t].k[1] // 2 + x[t].k[4] // 2)
        # paraphrases of hypothesis phrases found in the reference:
        # hits (j, i, length, entry, plength), sorted
        nh = paraphrase_hits(C, h, r, False, S)
        if nh:
            x = <Hit*> S.hits.p
            qsort(x, nh, sizeof(Hit), hit_cmp)
            for t in range(nh):
                push(&S.raw, &n, x[t].k[0], x[t].k[4], x[t].k[1], x[t].k[2], 3,
                     x[t].k[4] // 2 + x[t].k[2] // 2)
    # group by reference position, keeping the order of generation (stable counting sort)
    off = <int64_t*> need(&S.off, (n2 + 1) * sizeof(int64_t))
    cnt = <int64_t*> need(&S.cnt, (n2 + 1) * sizeof(int64_t))
    memset(off, 0, (n2 + 1) * sizeof(int64_t))
    raw = <Cand*> S.raw.p
    for t in range(n):
        off[raw[t].rs + 1] += 1
    for j in range(n2):
        off[j + 1] += off[j]
    memcpy(cnt, off, (n2 + 1) * sizeof(int64_t))
    out = <Cand*> need(&S.cand, n * sizeof(Cand))
    raw = <Cand*> S.raw.p
    for t in range(n):
        out[cnt[raw[t].rs]] = raw[t]
        cnt[raw[t].rs] += 1
    return n


# -- the beam search ------------------------------------------------------------------------

cdef inline bint better(int64_t g1, int64_t c1, int64_t d1, int64_t a1,
                        int64_t g2, int64_t c2, int64_t d2, int64_t a2) noexcept:
    """Entry 1 sorts before entry 2: more matched words, fewer chunks, smaller distance, then
    earlier arrival (the jar's comparator under its stable sort)."""
    if g1 != g2:
        return g1 > g2
    if c1 != c2:
        return c1 < c2
    if d1 != d2:
        return d1 < d2
    return a1 < a2


cdef struct Beam:
    # paths, double-buffered: slot = cur * BEAM + s
    int64_t g[2 * BEAM]
    int64_t c[2 * BEAM]
    int64_t d[2 * BEAM]
    int64_t idx[2 * BEAM]
    int64_t last[2 * BEAM]
    int64_t node[2 * BEAM]
    int64_t order[BEAM]
    # the best BEAM offers at one position, sorted: keys, arrival, parent slot, kind
    # (kind >= 0: candidate row; -1: the path as it is; -2: the skip branch)
    int64_t sg[BEAM]
    int64_t sc[BEAM]
    int64_t sd[BEAM]
    int64_t sa[BEAM]
    int64_t sp[BEAM]
    int64_t sk[BEAM]


cdef inline void sort_beam(Beam* B, Py_ssize_t count, Py_ssize_t cur) noexcept:
    """Stable insertion sort of the beam order by rank."""
    cdef Py_ssize_t a, b, s, o
    cdef Py_ssize_t base = cur * BEAM
    for a in range(1, count):
        s = B.order[a]
        b = a - 1
        while b >= 0:
            o = B.order[b]
            if not better(B.g[base + s], B.c[base + s], B.d[base + s], 1,
                          B.g[base + o], B.c[base + o], B.d[base + o], 0):
                break
            B.order[b + 1] = o
            b -= 1
        B.order[b + 1] = s


cdef inline Py_ssize_t offer(Beam* B, Py_ssize_t kept, int64_t g, int64_t c, int64_t d, int64_t a,
                             int64_t parent, int64_t kind) noexcept:
    """Insert one offer into the sorted best-BEAM list; returns the new length."""
    cdef Py_ssize_t pos
    if kept == BEAM:
        pos = BEAM - 1
        if not better(g, c, d, a, B.sg[pos], B.sc[pos], B.sd[pos], B.sa[pos]):
            return kept
    else:
        pos = kept
        kept += 1
    while pos > 0 and better(g, c, d, a, B.sg[pos - 1], B.sc[pos - 1], B.sd[pos - 1], B.sa[pos - 1]):
        B.sg[pos] = B.sg[pos - 1]
        B.sc[pos] = B.sc[pos - 1]
        B.sd[pos] = B.sd[pos - 1]
        B.sa[pos] = B.sa[pos - 1]
        B.sp[pos] = B.sp[pos - 1]
        B.sk[pos] = B.sk[pos - 1]
        pos -= 1
    B.sg[pos] = g
    B.sc[pos] = c
    B.sd[pos] = d
    B.sa[pos] = a
    B.sp[pos] = parent
    B.sk[pos] = kind
    return kept


cdef inline bint bit(const uint64_t* u, int64_t k) noexcept:
    return (u[k >> 6] >> (k & 63)) & 1


cdef inline void set_bits(uint64_t* u, int64_t start, int64_t length) noexcept:
    cdef int64_t k
    for k in range(start, start + length):
        u[k >> 6] |= (<uint64_t> 1) << (k & 63)


cdef inline void take_fixed(Beam* B, Py_ssize_t slot, const Cand* m) noexcept:
    """Path `slot` takes a fixed match (one every path must take): gain, distance, chunk."""
    B.g[slot] += m.gain
    B.d[slot] += m.rs - m.hs if m.rs >= m.hs else m.hs - m.rs
    if B.last[slot] != -1 and m.hs != B.last[slot]:
        B.c[slot] += 1
    B.idx[slot] = m.rs + m.rl
    B.last[slot] = m.hs + m.hl


cdef Py_ssize_t search(const Cand* cand, const int64_t* off, const int64_t* fixed, Py_ssize_t n1,
                       Py_ssize_t n2, const uint64_t* used1, const uint64_t* used2, int64_t* chosen,
                       Scratch* S) except -1:
    """The bounded beam search (`align._search`): writes the chosen non-fixed candidate rows
    into `chosen` and returns how many. `fixed[j]` is the row of the fixed match starting at j
    or -1; used1/used2 are the bit sets of the fixed matches' words."""
    cdef Py_ssize_t w1 = (n1 + 63) >> 6, w2 = (n2 + 63) >> 6
    cdef Beam* B = <Beam*> need(&S.state, sizeof(Beam))
    cdef uint64_t* u1 = <uint64_t*> need(&S.u1, 2 * BEAM * w1 * sizeof(uint64_t) + 8)
    cdef uint64_t* u2 = <uint64_t*> need(&S.u2, 2 * BEAM * w2 * sizeof(uint64_t) + 8)
    cdef Py_ssize_t positions = 0, j, a, s, r, count = 1, kept, cur = 0, nxt, nodes = 1, size, k
    cdef int64_t lo, hi, arrival, pg, pc, dist, pl, cc, kind, nd, dd
    cdef uint64_t* pu1
    cdef uint64_t* pu2
    cdef const Cand* m
    cdef bint free_
    cdef int64_t* node_parent
    cdef int64_t* node_cand
    for j in range(n2):
        if off[j + 1] > off[j]:
            positions += 1
    node_parent = <int64_t*> need(&S.nodes, 2 * (1 + positions * BEAM) * sizeof(int64_t))
    node_cand = node_parent + 1 + positions * BEAM
    node_parent[0] = 0
    node_cand[0] = -1
    memcpy(u1, used1, w1 * sizeof(uint64_t))
    memcpy(u2, used2, w2 * sizeof(uint64_t))
    B.g[0] = B.c[0] = B.d[0] = B.idx[0] = B.node[0] = 0
    B.last[0] = -1
    B.order[0] = 0
    for j in range(n2):
        sort_beam(B, count, cur)
        lo, hi = off[j], off[j + 1]
        if lo == hi:
            for a in range(count):
                s = cur * BEAM + B.order[a]
                if bit(u2 + s * w2, j):
                    if j >= B.idx[s]:                      # a fixed match starts here
                        take_fixed(B, s, cand + fixed[j])
                elif B.last[s] != -1:                      # skip: close the open chunk
                    B.c[s] += 1
                    B.last[s] = -1
            continue
        kept = 0
        arrival = 0
        for a in range(count):
            s = cur * BEAM + B.order[a]
            pu1 = u1 + s * w1
            pu2 = u2 + s * w2
            if bit(pu2, j):
                if j >= B.idx[s]:
                    take_fixed(B, s, cand + fixed[j])
                kept = offer(B, kept, B.g[s], B.c[s], B.d[s], arrival, s, -1)
                arrival += 1
                continue
            pg, pc, dist, pl = B.g[s], B.c[s], B.d[s], B.last[s]
            for r in range(lo, hi):
                m = cand + r
                free_ = True
                for k in range(m.hl):
                    if bit(pu1, m.hs + k):
                        free_ = False
                        break
                if free_:
                    for k in range(m.rl):
                        if bit(pu2, m.rs + k):
                            free_ = False
                            break
                if not free_:
                    continue
                cc = pc + 1 if (pl != -1 and m.hs != pl) else pc
                kept = offer(B, kept, pg + m.gain, cc, dist, arrival, s, r)
                arrival += 1
                dist += m.rs - m.hs if m.rs >= m.hs else m.hs - m.rs   # added to the parent, as the jar does
            cc = pc + 1 if pl != -1 else pc
            kept = offer(B, kept, pg, cc, dist, arrival, s, -2)
            arrival += 1
        # build the kept offers into the other buffer
        nxt = 1 - cur
        for a in range(kept):
            s = B.sp[a]
            kind = B.sk[a]
            nd = nxt * BEAM + a
            B.g[nd] = B.sg[a]
            B.c[nd] = B.sc[a]
            B.d[nd] = B.sd[a]
            memcpy(u1 + nd * w1, u1 + s * w1, w1 * sizeof(uint64_t))
            memcpy(u2 + nd * w2, u2 + s * w2, w2 * sizeof(uint64_t))
            if kind >= 0:
                m = cand + kind
                set_bits(u1 + nd * w1, m.hs, m.hl)
                set_bits(u2 + nd * w2, m.rs, m.rl)
                B.idx[nd] = m.rs + m.rl
                B.last[nd] = m.hs + m.hl
                node_parent[nodes] = B.node[s]
                node_cand[nodes] = kind
                B.node[nd] = nodes
                nodes += 1
            else:
                B.idx[nd] = B.idx[s]
                B.last[nd] = B.last[s] if kind == -1 else -1
                B.node[nd] = B.node[s]
            B.order[a] = a
        cur = nxt
        count = kept
    if count > 1:
        # the jar: sort, then close open chunks, then sort again
        sort_beam(B, count, cur)
        for a in range(count):
            s = cur * BEAM + B.order[a]
            if B.last[s] != -1:
                B.c[s] += 1
        sort_beam(B, count, cur)
    size = 0
    dd = B.node[cur * BEAM + B.order[0]]
    while dd > 0:
        chosen[size] = node_cand[dd]
        size += 1
        dd = node_parent[dd]
    return size


# -- one pair ----------------------------------------------------------------------------------

cdef int pair(Corpus C, Py_ssize_t h, Py_ssize_t r, Scratch* S, double* stats) except -1:
    """The jar's 23 statistics of (hypothesis h, reference r) into `stats`."""
    cdef Py_ssize_t h0 = C.tok_off[h], n1 = C.tok_off[h + 1] - h0
    cdef Py_ssize_t r0 = C.tok_off[r], n2 = C.tok_off[r + 1] - r0
    cdef Py_ssize_t n = candidates(C, h, r, S), j, t, k, nchosen, w1, w2
    cdef const Cand* cand = <const Cand*> S.cand.p
    cdef const int64_t* off = <const int64_t*> S.off.p
    cdef int64_t* cov1 = <int64_t*> need(&S.cov1, (n1 + 1) * sizeof(int64_t))
    cdef int64_t* cov2 = <int64_t*> need(&S.cov2, (n2 + 1) * sizeof(int64_t))
    cdef int64_t* fixed = <int64_t*> need(&S.fixed, (n2 + 1) * sizeof(int64_t))
    cdef int64_t* at = <int64_t*> need(&S.at, (n2 + n + 1) * sizeof(int64_t))
    cdef int64_t* chosen = at + n2
    cdef uint64_t* used
    cdef const Cand* m
    cdef bint open_choices = False, ok
    cdef int64_t f1, f2, total1 = 0, total2 = 0, chunks = 0, last_end = -1, ref_end = -1, base
    cand = <const Cand*> S.cand.p
    memset(cov1, 0, n1 * sizeof(int64_t))
    memset(cov2, 0, n2 * sizeof(int64_t))
    for t in range(n):
        m = cand + t
        for k in range(m.hl):
            cov1[m.hs + k] += 1
        for k in range(m.rl):
            cov2[m.rs + k] += 1
    for j in range(n2):
        fixed[j] = -1
        at[j] = -1
        if off[j + 1] - off[j] == 1:
            m = cand + off[j]
            ok = True
            for k in range(m.rl):
                if cov2[j + k] != 1:
                    ok = False
            for k in range(m.hl):
                if cov1[m.hs + k] != 1:
                    ok = False
            if ok:
                fixed[j] = off[j]
                at[j] = off[j]
                continue
        if off[j + 1] > off[j]:
            open_choices = True
    if open_choices:
        w1 = (n1 + 63) >> 6
        w2 = (n2 + 63) >> 6
        used = <uint64_t*> need(&S.tmp, (w1 + w2 + 1) * sizeof(uint64_t))
        memset(used, 0, (w1 + w2) * sizeof(uint64_t))
        for j in range(n2):
            if fixed[j] >= 0:
                m = cand + fixed[j]
                set_bits(used, m.hs, m.hl)
                set_bits(used + w1, m.rs, m.rl)
        nchosen = search(cand, off, fixed, n1, n2, used, used + w1, chosen, S)
        for t in range(nchosen):
            at[cand[chosen[t]].rs] = chosen[t]
    for k in range(23):
        stats[k] = 0.0
    stats[0] = n1
    stats[1] = n2
    for k in range(n1):
        stats[2] += C.func[h0 + k]
    for k in range(n2):
        stats[3] += C.func[r0 + k]
    for j in range(n2):
        if at[j] < 0:
            continue
        m = cand + at[j]
        base = 4 + 4 * m.module
        for k in range(m.hl):
            stats[base + (2 if C.func[h0 + m.hs + k] else 0)] += 1
        for k in range(m.rl):
            stats[base + (3 if C.func[r0 + m.rs + k] else 1)] += 1
        total1 += m.hl
        total2 += m.rl
        if last_end != -1 and (m.rs != ref_end or m.hs != last_end):
            chunks += 1
        last_end = m.hs + m.hl
        ref_end = m.rs + m.rl
    if last_end != -1:
        chunks += 1
    stats[20] = chunks
    stats[21] = total1
    stats[22] = total2
    return 0


# -- the score ---------------------------------------------------------------------------------

cdef double ALPHA = 0.85, BETA = 0.2, GAMMA = 0.6, DELTA = 0.75
cdef double[4] WEIGHTS = [1.0, 0.6, 0.8, 0.6]


cdef double score(const double* s) noexcept:
    """`metric.score_stats`, the same operations in the same order."""
    cdef double lh = DELTA * (s[0] - s[2]) + (1.0 - DELTA) * s[2]
    cdef double lr = DELTA * (s[1] - s[3]) + (1.0 - DELTA) * s[3]
    cdef double mh = 0.0, mr = 0.0, hyp = 0.0, ref = 0.0, p, r, fmean, frag, out
    cdef int m
    for m in range(4):
        mh += s[4 + 4 * m] * WEIGHTS[m] * DELTA
    for m in range(4):
        mr += s[5 + 4 * m] * WEIGHTS[m] * DELTA
    for m in range(4):
        mh += s[6 + 4 * m] * WEIGHTS[m] * (1.0 - DELTA)
    for m in range(4):
        mr += s[7 + 4 * m] * WEIGHTS[m] * (1.0 - DELTA)
    p = mh / lh
    r = mr / lr
    fmean = 1.0 / ((1.0 - ALPHA) / p + ALPHA / r)
    for m in range(4):
        hyp += s[4 + 4 * m] + s[6 + 4 * m]
        ref += s[5 + 4 * m] + s[7 + 4 * m]
    if hyp == s[0] and ref == s[1] and s[20] == 1:
        frag = 0.0
    else:
        frag = s[20] / ((s[21] + s[22]) / 2)
    out = fmean * (1.0 - GAMMA * pow(frag, BETA))
    if isnan(out):
        return 0.0
    return 0.0 if out < 0.0 else out


def score_rows(const double[:, ::1] stats):
    """`metric.score_stats` of every row (23 fields each) as a float64 array."""
    cdef Py_ssize_t k
    out = np.empty(stats.shape[0], dtype=np.float64)
    cdef double[::1] o = out
    for k in range(stats.shape[0]):
        o[k] = score(&stats[k, 0])
    return out


def pair_stats(Corpus corpus, const int64_t[::1] hyps, const int64_t[::1] refs):
    """(scores (n,), stats (n, 23)) of the pairs (hyps[k], refs[k]) of the packed sentences."""
    cdef Py_ssize_t n = hyps.shape[0], k
    cdef Scratch S
    memset(&S, 0, sizeof(Scratch))
    stats = np.zeros((n, 23), dtype=np.float64)
    scores = np.empty(n, dtype=np.float64)
    cdef double[:, ::1] st = stats
    cdef double[::1] sc = scores
    try:
        for k in range(n):
            pair(corpus, hyps[k], refs[k], &S, &st[k, 0])
            sc[k] = score(&st[k, 0])
    finally:
        release(&S)
    return scores, stats


def search_rows(const int64_t[::1] off, const int64_t[:, ::1] cand, const int64_t[::1] fixed,
                const uint8_t[::1] used1, const uint8_t[::1] used2):
    """The beam search alone, on candidate rows laid out as `align._search_compiled` makes
    them (for the tests, which check it against the jar's procedure); returns the chosen rows."""
    cdef Py_ssize_t n1 = used1.shape[0], n2 = used2.shape[0], n = cand.shape[0], k, t
    cdef Scratch S
    memset(&S, 0, sizeof(Scratch))
    cdef Cand* c
    cdef uint64_t* u
    cdef int64_t* ch
    cdef Py_ssize_t w1 = (n1 + 63) >> 6, w2 = (n2 + 63) >> 6, got
    try:
        c = <Cand*> need(&S.cand, (n + 1) * sizeof(Cand))
        for k in range(n):
            c[k].rs, c[k].rl, c[k].hs, c[k].hl, c[k].module, c[k].gain = \
                cand[k, 0], cand[k, 1], cand[k, 2], cand[k, 3], cand[k, 4], cand[k, 5]
        u = <uint64_t*> need(&S.tmp, (w1 + w2 + 1) * sizeof(uint64_t))
        memset(u, 0, (w1 + w2 + 1) * sizeof(uint64_t))
        for k in range(n1):
            if used1[k]:
                set_bits(u, k, 1)
        for k in range(n2):
            if used2[k]:
                set_bits(u + w1, k, 1)
        ch = <int64_t*> need(&S.at, (n + 1) * sizeof(int64_t))
        got = search(c, &off[0], &fixed[0], n1, n2, u, u + w1, ch, &S)
        out = np.empty(got, dtype=np.int64)
        for t in range(got):
            out[got - 1 - t] = ch[t]
    finally:
        release(&S)
    return out


def isin_u64(const uint64_t[::1] values, const uint64_t[::1] pool):
    """`np.isin(values, pool)` for 64-bit keys, through a hash set of `pool` (open addressing):
    one or two memory accesses a value where a binary search over millions makes twenty."""
    cdef Py_ssize_t n = values.shape[0], m = pool.shape[0], k
    cdef int bits = 4
    while (<Py_ssize_t> 1 << bits) < 2 * m:
        bits += 1
    cdef uint64_t mask = ((<uint64_t> 1) << bits) - 1, x, slot
    table_arr = np.zeros(mask + 1, dtype=np.uint64)
    used_arr = np.zeros(mask + 1, dtype=np.uint8)
    out = np.zeros(n, dtype=bool)
    cdef uint64_t[::1] table = table_arr
    cdef uint8_t[::1] used = used_arr
    cdef uint8_t[::1] o = out.view(np.uint8)
    for k in range(m):
        x = pool[k]
        slot = (x * <uint64_t> 0x9E3779B97F4A7C15) >> (64 - bits)
        while used[slot] and table[slot] != x:
            slot = (slot + 1) & mask
        table[slot] = x
        used[slot] = 1
    if m == 0:
        return out
    for k in range(n):
        x = values[k]
        slot = (x * <uint64_t> 0x9E3779B97F4A7C15) >> (64 - bits)
        while used[slot]:
            if table[slot] == x:
                o[k] = 1
                break
            slot = (slot + 1) & mask
    return out


def unique_inverse_u64(const uint64_t[::1] values):
    """`np.unique(values, return_inverse=True)` for 64-bit keys: the distinct keys through a
    hash table (open addressing) in one pass, then only those sorted, where np.unique sorts every
    value with its index (the paraphrase lookup hashes millions of n-grams, a quarter distinct)."""
    cdef Py_ssize_t n = values.shape[0], k, d = 0
    cdef int bits = 4
    while (<Py_ssize_t> 1 << bits) < n + n // 2:
        bits += 1
    cdef uint64_t mask = ((<uint64_t> 1) << bits) - 1, x, slot
    table_arr = np.zeros(mask + 1, dtype=np.uint64)
    slot_id_arr = np.full(mask + 1, -1, dtype=np.int64)
    first_arr = np.empty(n, dtype=np.uint64)
    inverse_arr = np.empty(n, dtype=np.int64)
    cdef uint64_t[::1] table = table_arr
    cdef int64_t[::1] slot_id = slot_id_arr
    cdef uint64_t[::1] first = first_arr
    cdef int64_t[::1] inverse = inverse_arr
    for k in range(n):
        x = values[k]
        slot = (x * <uint64_t> 0x9E3779B97F4A7C15) >> (64 - bits)
        while slot_id[slot] >= 0 and table[slot] != x:
            slot = (slot + 1) & mask
        if slot_id[slot] < 0:
            table[slot] = x
            slot_id[slot] = d
            first[d] = x
            d += 1
        inverse[k] = slot_id[slot]
    del table_arr, slot_id_arr
    distinct = first_arr[:d]
    order = np.argsort(distinct, kind="stable")
    rank = np.empty(d, dtype=np.int64)
    rank[order] = np.arange(d, dtype=np.int64)
    return distinct[order], rank[inverse_arr]
