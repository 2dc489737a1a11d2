# distutils: extra_compile_args = -O3 -ffp-contract=off
"""Compiled loops of the word-overlap metrics (BLEU-1..4, ROUGE-L, CIDEr / CIDEr-D).

The numpy implementations next to this file (`tokens.py`, `bleu.py`, `rouge.py`, `cider.py`)
define the numbers; this module computes the same statistics in C, one sentence at a time,
where numpy needed several sorts of every n-gram of the batch:

- `Vocab.encode`: split texts (str.split() or str.split(" ")) over their UTF-8 bytes and map
  tokens to ids in one pass, with a 64-bit hash of each distinct token (`token_hash`);
- `ngram_ids`: one id per distinct n-gram of a batch (hash table, ids compared exactly),
  and each n-gram's batch-independent hash (the key of CIDEr's document frequencies);
- `bleu_matches`, `lcs_pairs` (on token ids), `doc_freq`, `cider_sims` (on n-gram ids):
  per-row statistics; `reference_doc_freq`: CIDEr's first pass straight from the texts.

Every statistic is an integer count except CIDEr's similarities, whose sums run over each
sentence's n-grams in ascending hash order, as the numpy path sums them, so both paths give
the same bits. Compiled with -ffp-contract=off so no compiler fuses a multiply and an add.
"""

from cpython.unicode cimport PyUnicode_AsUTF8AndSize
from libc.math cimport sqrt
from libc.stdint cimport int32_t, int64_t, uint8_t, uint64_t
from libc.stdlib cimport free, malloc, qsort, realloc
from libc.string cimport memcmp, memcpy

import numpy as np

# bumped whenever a function's signature or meaning changes; tokens.py refuses a stale build
VERSION = 2

cdef uint64_t FNV_OFFSET = 0xcbf29ce484222325ULL
cdef uint64_t FNV_PRIME = 0x100000001b3ULL
cdef uint64_t MULT = 0x9E3779B97F4A7C15ULL


cdef inline uint64_t mix64(uint64_t h) noexcept nogil:
    """splitmix64's finaliser."""
    h ^= h >> 30
    h *= 0xBF58476D1CE4E5B9ULL
    h ^= h >> 27
    h *= 0x94D049BB133111EBULL
    return h ^ (h >> 31)


cdef inline uint64_t bytes_hash(const char* s, Py_ssize_t n) noexcept nogil:
    """Token hash: FNV-1a over the UTF-8 bytes, then mix64 (cider.token_hashes in numpy)."""
    cdef uint64_t h = FNV_OFFSET
    cdef Py_ssize_t i
    for i in range(n):
        h ^= <uint8_t>s[i]
        h *= FNV_PRIME
    return mix64(h)


def token_hashes(list tokens):
    """Hash of each token string (what `Vocab` stores for the tokens it sees)."""
    cdef Py_ssize_t i, size
    cdef const char* buf
    out = np.empty(len(tokens), dtype=np.uint64)
    cdef uint64_t[::1] o = out
    for i in range(len(tokens)):
        buf = PyUnicode_AsUTF8AndSize(tokens[i], &size)
        o[i] = bytes_hash(buf, size)
    return out


# --------------------------------------------------------------------------- tokens -> ids

cdef inline int ws_len(const uint8_t* s, Py_ssize_t i, Py_ssize_t n) noexcept nogil:
    """Length in bytes of the whitespace character (as str.isspace) starting at s[i], or 0."""
    cdef uint8_t c = s[i]
    if c < 0x80:
        return 1 if (c == 32 or (9 <= c <= 13) or (28 <= c <= 31)) else 0
    if c == 0xC2 and i + 1 < n:
        return 2 if (s[i + 1] == 0x85 or s[i + 1] == 0xA0) else 0
    if c == 0xE1 and i + 2 < n:
        return 3 if (s[i + 1] == 0x9A and s[i + 2] == 0x80) else 0
    if c == 0xE2 and i + 2 < n:
        if s[i + 1] == 0x80:
            c = s[i + 2]
            return 3 if ((0x80 <= c <= 0x8A) or c == 0xA8 or c == 0xA9 or c == 0xAF) else 0
        if s[i + 1] == 0x81:
            return 3 if s[i + 2] == 0x9F else 0
        return 0
    if c == 0xE3 and i + 2 < n:
        return 3 if (s[i + 1] == 0x80 and s[i + 2] == 0x80) else 0
    return 0


cdef bint _ASCII_WS[128]
for _c in range(128):
    _ASCII_WS[_c] = chr(_c).isspace()


cdef inline Py_ssize_t token_end(const uint8_t* s, Py_ssize_t i, Py_ssize_t n, uint64_t* h) noexcept nogil:
    """End of the token starting at s[i] (the next whitespace as str.isspace, or n), with the
    FNV-1a state of its bytes in h (mix64 of it is the token hash)."""
    cdef uint8_t c
    h[0] = FNV_OFFSET
    while i < n:
        c = s[i]
        if c < 0x80:
            if _ASCII_WS[c]:
                break
        elif ws_len(s, i, n):
            break
        h[0] = (h[0] ^ c) * FNV_PRIME
        i += 1
    return i


cdef class Vocab:
    """Token bytes -> dense id (open addressing, ids in order of first appearance), with the
    hash of each token. One Vocab serves all tables of a batch that must share ids."""

    cdef char* arena
    cdef Py_ssize_t arena_used, arena_cap
    cdef int64_t* tok_off
    cdef int64_t* tok_len
    cdef uint64_t* tok_hash
    cdef Py_ssize_t n_tok, tok_cap
    cdef int32_t* slots
    cdef Py_ssize_t n_slots

    def __cinit__(self):
        self.arena_cap = 1 << 16
        self.arena = <char*>malloc(self.arena_cap)
        self.tok_cap = 1 << 12
        self.tok_off = <int64_t*>malloc(self.tok_cap * sizeof(int64_t))
        self.tok_len = <int64_t*>malloc(self.tok_cap * sizeof(int64_t))
        self.tok_hash = <uint64_t*>malloc(self.tok_cap * sizeof(uint64_t))
        self.n_slots = 1 << 13
        self.slots = <int32_t*>malloc(self.n_slots * sizeof(int32_t))
        if not (self.arena and self.tok_off and self.tok_len and self.tok_hash and self.slots):
            raise MemoryError()
        for i in range(self.n_slots):
            self.slots[i] = -1
        self.n_tok = 0
        self.arena_used = 0

    def __dealloc__(self):
        free(self.arena)
        free(self.tok_off)
        free(self.tok_len)
        free(self.tok_hash)
        free(self.slots)

    def __len__(self):
        return self.n_tok

    def hashes(self):
        out = np.empty(self.n_tok, dtype=np.uint64)
        cdef uint64_t[::1] o = out
        for i in range(self.n_tok):
            o[i] = self.tok_hash[i]
        return out

    def tokens(self):
        """The token strings by id (for tests and debugging)."""
        return [self.arena[self.tok_off[i]:self.tok_off[i] + self.tok_len[i]].decode("utf-8")
                for i in range(self.n_tok)]

    cdef int grow_slots(self) except -1:
        cdef Py_ssize_t new_n = self.n_slots * 2, i, s
        cdef int32_t* new_slots = <int32_t*>malloc(new_n * sizeof(int32_t))
        if not new_slots:
            raise MemoryError()
        for i in range(new_n):
            new_slots[i] = -1
        for i in range(self.n_tok):
            s = <Py_ssize_t>(self.tok_hash[i] & <uint64_t>(new_n - 1))
            while new_slots[s] != -1:
                s = (s + 1) & (new_n - 1)
            new_slots[s] = <int32_t>i
        free(self.slots)
        self.slots = new_slots
        self.n_slots = new_n
        return 0

    cdef int64_t lookup(self, const char* s, Py_ssize_t n, uint64_t h) except -1:
        """Id of the token s[:n] whose hash (`bytes_hash`) is h, added when new."""
        cdef Py_ssize_t slot = <Py_ssize_t>(h & <uint64_t>(self.n_slots - 1))
        cdef int32_t t
        while True:
            t = self.slots[slot]
            if t == -1:
                break
            if self.tok_hash[t] == h and self.tok_len[t] == n and memcmp(self.arena + self.tok_off[t], s, n) == 0:
                return t
            slot = (slot + 1) & (self.n_slots - 1)
        # new token
        if self.n_tok == self.tok_cap:
            self.tok_cap *= 2
            self.tok_off = <int64_t*>realloc(self.tok_off, self.tok_cap * sizeof(int64_t))
            self.tok_len = <int64_t*>realloc(self.tok_len, self.tok_cap * sizeof(int64_t))
            self.tok_hash = <uint64_t*>realloc(self.tok_hash, self.tok_cap * sizeof(uint64_t))
            if not (self.tok_off and self.tok_len and self.tok_hash):
                raise MemoryError()
        while self.arena_used + n > self.arena_cap:
            self.arena_cap *= 2
            self.arena = <char*>realloc(self.arena, self.arena_cap)
            if not self.arena:
                raise MemoryError()
        memcpy(self.arena + self.arena_used, s, n)
        t = <int32_t>self.n_tok
        self.tok_off[t] = self.arena_used
        self.tok_len[t] = n
        self.tok_hash[t] = h
        self.arena_used += n
        self.n_tok += 1
        self.slots[slot] = t
        if 2 * self.n_tok > self.n_slots:
            self.grow_slots()
        return t

    def encode(self, list texts, bint whitespace):
        """Token ids of `texts` split as str.split() (`whitespace`) or str.split(" ").

        Returns (ids, lengths, same): `same` is true when, for every text, str.split(" ") gives
        the same tokens as str.split() (only meaningful with `whitespace`). Raises
        UnicodeEncodeError for text that is not valid UTF-8 (lone surrogates)."""
        cdef Py_ssize_t n_texts = len(texts), k, i, n, start, w, n_ids = 0, cap
        cdef const uint8_t* s
        cdef uint8_t c
        cdef uint64_t h
        cdef bint same = True
        lengths = np.zeros(n_texts, dtype=np.int64)
        cdef int64_t[::1] lens = lengths
        cap = 16
        for k in range(n_texts):
            cap += len(<str>texts[k]) // 2 + 1
        ids = np.empty(cap, dtype=np.int64)
        cdef int64_t[::1] out = ids
        for k in range(n_texts):
            s = <const uint8_t*>PyUnicode_AsUTF8AndSize(texts[k], &n)
            if n_ids + n + 1 > out.shape[0]:
                ids = np.resize(ids, max(2 * out.shape[0], n_ids + n + 1))
                out = ids
            start = n_ids
            if not whitespace:
                i = 0
                while True:   # one token per space, empty ones included, as str.split(" ")
                    w = i
                    h = FNV_OFFSET
                    while i < n and s[i] != 32:
                        h = (h ^ s[i]) * FNV_PRIME
                        i += 1
                    out[n_ids] = self.lookup(<const char*>s + w, i - w, mix64(h))
                    n_ids += 1
                    if i >= n:
                        break
                    i += 1
            else:
                if n == 0 or s[0] == 32 or s[n - 1] == 32:
                    same = False
                i = 0
                while i < n:
                    c = s[i]
                    if c < 0x80:
                        if _ASCII_WS[c]:
                            if c != 32 or (i + 1 < n and s[i + 1] == 32):
                                same = False
                            i += 1
                            continue
                    else:
                        w = ws_len(s, i, n)
                        if w:
                            same = False
                            i += w
                            continue
                    w = i
                    i = token_end(s, i, n, &h)
                    out[n_ids] = self.lookup(<const char*>s + w, i - w, mix64(h))
                    n_ids += 1
            lens[k] = n_ids - start
        return ids[:n_ids].copy(), lengths, bool(same)


# --------------------------------------------------------------------------- n-gram ids

def ngram_ids(const int64_t[::1] ids_h, const int64_t[::1] starts_h, const int64_t[::1] lens_h,
              const int64_t[::1] ids_r, const int64_t[::1] starts_r, const int64_t[::1] lens_r,
              const uint64_t[::1] tok_hash, int n):
    """Id of the n-gram starting at every token of two tables (-1 where none starts), equal ids
    exactly for equal token sequences across both tables; and the hash of each id.

    The hash of an n-gram is mix64((t1 * M + t2) * M + ... + tn + n) of its token hashes t,
    independent of the batch (CIDEr's document frequencies are keyed by it)."""
    cdef Py_ssize_t total = ids_h.shape[0] + ids_r.shape[0]
    cdef Py_ssize_t n_slots = 16, slot, t, s, p, k, L, st, pos
    while n_slots < 2 * total:
        n_slots *= 2
    gid_h_arr = np.full(ids_h.shape[0], -1, dtype=np.int64)
    gid_r_arr = np.full(ids_r.shape[0], -1, dtype=np.int64)
    hashes_arr = np.empty(max(total, 1), dtype=np.uint64)
    rep_arr = np.empty(max(total, 1), dtype=np.int64)   # 2 * position + table of a first occurrence
    slots_arr = np.full(n_slots, -1, dtype=np.int64)
    cdef int64_t[::1] gid_h = gid_h_arr, gid_r = gid_r_arr, rep = rep_arr, slots = slots_arr
    cdef uint64_t[::1] hashes = hashes_arr
    cdef const int64_t[::1] ids, starts, lens, other
    cdef int64_t[::1] gid
    cdef int64_t g, n_grams = 0
    cdef uint64_t h
    cdef bint equal
    for t in range(2):
        if t == 0:
            ids, starts, lens, gid = ids_h, starts_h, lens_h, gid_h
        else:
            ids, starts, lens, gid = ids_r, starts_r, lens_r, gid_r
        with nogil:
            for s in range(lens.shape[0]):
                L = lens[s]
                st = starts[s]
                for p in range(st, st + L - n + 1):
                    h = tok_hash[ids[p]]
                    for k in range(1, n):
                        h = h * MULT + tok_hash[ids[p + k]]
                    h = mix64(h + <uint64_t>n)
                    slot = <Py_ssize_t>(h & <uint64_t>(n_slots - 1))
                    while True:
                        g = slots[slot]
                        if g == -1:
                            g = n_grams
                            n_grams += 1
                            slots[slot] = g
                            hashes[g] = h
                            rep[g] = 2 * p + t
                            break
                        if hashes[g] == h:
                            pos = rep[g] >> 1
                            equal = True
                            if rep[g] & 1:
                                for k in range(n):
                                    if ids_r[pos + k] != ids[p + k]:
                                        equal = False
                                        break
                            else:
                                for k in range(n):
                                    if ids_h[pos + k] != ids[p + k]:
                                        equal = False
                                        break
                            if equal:
                                break
                        slot = (slot + 1) & (n_slots - 1)
                    gid[p] = g
    return gid_h_arr, gid_r_arr, hashes_arr[:n_grams].copy()


def ngram_ids_next(const int64_t[::1] prev_h, const int64_t[::1] starts_h, const int64_t[::1] lens_h,
                   const int64_t[::1] ids_h,
                   const int64_t[::1] prev_r, const int64_t[::1] starts_r, const int64_t[::1] lens_r,
                   const int64_t[::1] ids_r,
                   const uint64_t[::1] raw_prev, const uint64_t[::1] tok_hash, int n):
    """`ngram_ids` for order n from the ids of order n - 1: an n-gram is the pair (its first
    n - 1 tokens' id, its last token), packed in one 64-bit key, so equality is exact without
    comparing tokens. Returns (ids of both tables, raw hash of each id, hash of each id); the
    raw hash (before mix64) extends to order n + 1."""
    cdef Py_ssize_t total = ids_h.shape[0] + ids_r.shape[0]
    cdef Py_ssize_t n_slots = 16, slot, t, s, p, L, st
    if total >= 2 ** 31:
        raise OverflowError("a batch this large does not fit the kernel's 32-bit tables")
    while n_slots < 2 * total:
        n_slots *= 2
    gid_h_arr = np.full(ids_h.shape[0], -1, dtype=np.int64)
    gid_r_arr = np.full(ids_r.shape[0], -1, dtype=np.int64)
    raw_arr = np.empty(max(total, 1), dtype=np.uint64)
    key_arr = np.empty(max(total, 1), dtype=np.uint64)
    slots_arr = np.full(n_slots, -1, dtype=np.int32)
    cdef int64_t[::1] gid_h = gid_h_arr, gid_r = gid_r_arr
    cdef uint64_t[::1] raw = raw_arr, keys = key_arr
    cdef int32_t[::1] slots = slots_arr
    cdef const int64_t[::1] ids, starts, lens, prev
    cdef int64_t[::1] gid
    cdef int64_t n_grams = 0, pg
    cdef int32_t g
    cdef uint64_t key
    for t in range(2):
        if t == 0:
            ids, starts, lens, prev, gid = ids_h, starts_h, lens_h, prev_h, gid_h
        else:
            ids, starts, lens, prev, gid = ids_r, starts_r, lens_r, prev_r, gid_r
        with nogil:
            for s in range(lens.shape[0]):
                L = lens[s]
                st = starts[s]
                for p in range(st, st + L - n + 1):
                    pg = prev[p]
                    key = (<uint64_t>pg << 32) | <uint64_t>ids[p + n - 1]
                    slot = <Py_ssize_t>(mix64(key) & <uint64_t>(n_slots - 1))
                    while True:
                        g = slots[slot]
                        if g == -1:
                            slots[slot] = <int32_t>n_grams
                            keys[n_grams] = key
                            raw[n_grams] = raw_prev[pg] * MULT + tok_hash[ids[p + n - 1]]
                            gid[p] = n_grams
                            n_grams += 1
                            break
                        if keys[g] == key:
                            gid[p] = g
                            break
                        slot = (slot + 1) & (n_slots - 1)
    raw_out = raw_arr[:n_grams].copy()
    return gid_h_arr, gid_r_arr, raw_out, mixed_hashes(raw_out, n)


def mixed_hashes(const uint64_t[::1] raw, int n):
    """mix64(raw + n) of each raw n-gram hash."""
    out = np.empty(raw.shape[0], dtype=np.uint64)
    cdef uint64_t[::1] o = out
    cdef Py_ssize_t i
    with nogil:
        for i in range(raw.shape[0]):
            o[i] = mix64(raw[i] + <uint64_t>n)
    return out


# --------------------------------------------------------------------------- BLEU

def bleu_matches(const int64_t[::1] hyp_index, const int64_t[::1] ref_off,
                 const int64_t[::1] ids_h, const int64_t[::1] starts_h, const int64_t[::1] lens_h,
                 const int64_t[::1] ids_r, const int64_t[::1] starts_r, const int64_t[::1] lens_r,
                 Py_ssize_t vocab_size, int max_order):
    """Clipped n-gram matches of each row for orders 1..max_order (a rows x max_order array):
    hypothesis `hyp_index[row]` against references ref_off[row]..ref_off[row+1]-1, each
    n-gram's count clipped at its largest count in one reference (pycocoevalcap's rule).

    One pass over the references serves every order. Per row, the hypothesis's tokens are
    marked in a vocabulary-sized array and its n-grams of order >= 2 go in small hash tables
    (compared token by token) that stay in cache. A reference token the hypothesis lacks starts
    no matching n-gram, which rejects most positions with one array read; from a position that
    matches, order n is looked up only while order n - 1 matched (an n-gram's prefix is an
    (n-1)-gram of the same position). Consecutive rows of one hypothesis (a `pairs()` batch:
    one reference per row) re-use its tables."""
    cdef Py_ssize_t rows = hyp_index.shape[0], i, j, p, q, h, st, sr, er, L, n, k, slot, size, size_n, off
    cdef Py_ssize_t prev_h = -1, nd_all = 0
    cdef int64_t gen = -1   # number of the hypothesis whose tables are loaded (marks are compared to it)
    cdef int64_t longest = 1
    if max_order < 1 or max_order > 8:
        raise ValueError("max_order must be 1..8")
    for i in range(lens_h.shape[0]):
        longest = max(longest, lens_h[i])
    size = 16
    while size < 2 * longest:
        size *= 2
    out_arr = np.zeros((rows, max_order), dtype=np.float64)
    cdef double[:, ::1] out = out_arr
    # unigrams by token id: the row that marked the token, and its slot (index into the tables)
    mark_arr = np.full(max(vocab_size, 1), -1, dtype=np.int64)
    uslot_arr = np.zeros(max(vocab_size, 1), dtype=np.int64)
    # per order n (table n - 1, `size` slots each; order 1 uses slots 0..distinct tokens - 1):
    # position of the n-gram in ids_h (-1 empty), its hash, hypothesis count, max over refs,
    # count in the current reference
    pos_arr = np.full(max_order * size, -1, dtype=np.int64)
    hsh_arr = np.zeros(max_order * size, dtype=np.uint64)
    cnt_arr = np.zeros(max_order * size, dtype=np.int64)
    mx_arr = np.zeros(max_order * size, dtype=np.int64)
    cur_arr = np.zeros(max_order * size, dtype=np.int64)
    used_arr = np.empty(max_order * longest, dtype=np.int64)    # occupied slots (all orders)
    touch_arr = np.empty(max_order * longest, dtype=np.int64)   # slots counted in this reference
    masks_arr = np.zeros(max_order + 1, dtype=np.int64)
    cdef int64_t[::1] mark = mark_arr, uslot = uslot_arr, pos = pos_arr, cnt = cnt_arr, mx = mx_arr
    cdef int64_t[::1] cur = cur_arr, used = used_arr, touch = touch_arr, masks = masks_arr
    cdef uint64_t[::1] hsh = hsh_arr
    cdef uint64_t raw, hv
    cdef int64_t total, t, nt, n_uni
    cdef bint equal, found
    with nogil:
        for i in range(rows):
            h = hyp_index[i]
            st = starts_h[h]
            L = lens_h[h]
            if h != prev_h:
                # clear the previous hypothesis's tables, then fill them with this one's n-grams
                for k in range(nd_all):
                    slot = used[k]
                    pos[slot] = -1
                    cnt[slot] = 0
                    mx[slot] = 0
                prev_h = h
                gen += 1
                nd_all = 0
                n_uni = 0
                for q in range(st, st + L):
                    t = ids_h[q]
                    if mark[t] != gen:
                        mark[t] = gen
                        uslot[t] = n_uni
                        pos[n_uni] = q
                        used[nd_all] = n_uni
                        nd_all += 1
                        n_uni += 1
                    cnt[uslot[t]] += 1
                for n in range(2, max_order + 1):
                    size_n = 16
                    while size_n < 2 * (L - n + 1):
                        size_n *= 2
                    masks[n] = size_n - 1
                    off = (n - 1) * size
                    for q in range(st, st + L - n + 1):
                        raw = <uint64_t>ids_h[q]
                        for k in range(1, n):
                            raw = raw * MULT + <uint64_t>ids_h[q + k]
                        hv = mix64(raw)
                        slot = <Py_ssize_t>(hv & <uint64_t>masks[n])
                        while True:
                            p = pos[off + slot]
                            if p == -1:
                                pos[off + slot] = q
                                hsh[off + slot] = hv
                                cnt[off + slot] = 1
                                used[nd_all] = off + slot
                                nd_all += 1
                                break
                            if hsh[off + slot] == hv:
                                equal = True
                                for k in range(n):
                                    if ids_h[p + k] != ids_h[q + k]:
                                        equal = False
                                        break
                                if equal:
                                    cnt[off + slot] += 1
                                    break
                            slot = (slot + 1) & masks[n]
            else:
                for k in range(nd_all):
                    mx[used[k]] = 0
            if L == 0:
                continue
            for j in range(ref_off[i], ref_off[i + 1]):
                sr = starts_r[j]
                er = sr + lens_r[j]
                nt = 0
                for p in range(sr, er):
                    t = ids_r[p]
                    if mark[t] != gen:
                        continue
                    slot = uslot[t]
                    if cur[slot] == 0:
                        touch[nt] = slot
                        nt += 1
                    cur[slot] += 1
                    raw = <uint64_t>t
                    for n in range(2, max_order + 1):
                        if p + n > er or n > L:
                            break
                        raw = raw * MULT + <uint64_t>ids_r[p + n - 1]
                        hv = mix64(raw)
                        off = (n - 1) * size
                        slot = <Py_ssize_t>(hv & <uint64_t>masks[n])
                        found = False
                        while True:
                            q = pos[off + slot]
                            if q == -1:
                                break
                            if hsh[off + slot] == hv:
                                equal = True
                                for k in range(n):
                                    if ids_h[q + k] != ids_r[p + k]:
                                        equal = False
                                        break
                                if equal:
                                    found = True
                                    break
                            slot = (slot + 1) & masks[n]
                        if not found:
                            break   # no longer n-gram from p can match either
                        slot = off + slot
                        if cur[slot] == 0:
                            touch[nt] = slot
                            nt += 1
                        cur[slot] += 1
                for k in range(nt):
                    slot = touch[k]
                    if cur[slot] > mx[slot]:
                        mx[slot] = cur[slot]
                    cur[slot] = 0
            for k in range(nd_all):
                slot = used[k]
                total = cnt[slot] if cnt[slot] < mx[slot] else mx[slot]
                out[i, slot // size] += <double>total
    return out_arr


# --------------------------------------------------------------------------- CIDEr

def doc_freq(const int64_t[::1] ref_off, const int64_t[::1] starts_r, const int64_t[::1] lens_r,
             const int64_t[::1] gid_r, Py_ssize_t n_grams, int n):
    """Number of rows whose references contain each n-gram."""
    df_arr = np.zeros(n_grams, dtype=np.int64)
    last_arr = np.full(n_grams, -1, dtype=np.int64)
    cdef int64_t[::1] df = df_arr, last = last_arr
    cdef Py_ssize_t i, j, p, st
    cdef int64_t g
    with nogil:
        for i in range(ref_off.shape[0] - 1):
            for j in range(ref_off[i], ref_off[i + 1]):
                st = starts_r[j]
                for p in range(st, st + lens_r[j] - n + 1):
                    g = gid_r[p]
                    if last[g] != i:
                        last[g] = i
                        df[g] += 1
    return df_arr


cdef const uint64_t* _sort_keys


cdef int _cmp_by_hash(const void* a, const void* b) noexcept nogil:
    cdef uint64_t x = _sort_keys[(<const int64_t*>a)[0]], y = _sort_keys[(<const int64_t*>b)[0]]
    if x < y:
        return -1
    if x > y:
        return 1
    return 0


cdef inline void sort_by_hash(int64_t* g, Py_ssize_t m, const uint64_t* key) noexcept nogil:
    """Sort gram ids by their hash (insertion sort for short sentences)."""
    global _sort_keys
    cdef Py_ssize_t a, b
    cdef int64_t x
    cdef uint64_t kx
    if m > 48:
        _sort_keys = key
        qsort(g, m, sizeof(int64_t), _cmp_by_hash)
        return
    for a in range(1, m):
        x = g[a]
        kx = key[x]
        b = a - 1
        while b >= 0 and key[g[b]] > kx:
            g[b + 1] = g[b]
            b -= 1
        g[b + 1] = x


cdef inline Py_ssize_t distinct_counts(const int64_t[::1] gid, Py_ssize_t start, Py_ssize_t m,
                                       int32_t[::1] cnt, int64_t[::1] dist,
                                       const uint64_t[::1] hashes) noexcept nogil:
    """Counts of the m n-gram ids gid[start:start+m] added into cnt (which the caller zeroes
    again); their distinct ids into dist, in ascending hash order; returns how many."""
    cdef Py_ssize_t nd = 0, p
    cdef int64_t g
    for p in range(start, start + m):
        g = gid[p]
        if cnt[g] == 0:
            dist[nd] = g
            nd += 1
        cnt[g] += 1
    if nd:
        sort_by_hash(&dist[0], nd, &hashes[0])
    return nd


def cider_sims(const int64_t[::1] hyp_index, const int64_t[::1] ref_off,
               const int64_t[::1] starts_h, const int64_t[::1] lens_h, const int64_t[::1] gid_h,
               const int64_t[::1] starts_r, const int64_t[::1] lens_r, const int64_t[::1] gid_r,
               const uint64_t[::1] hashes, const double[::1] idf, int n, bint clipped):
    """sim_n of every (row, reference) pair, before CIDEr-D's length penalty: the (clipped, for
    CIDEr-D) dot product of tf-idf vectors over the product of their norms; every sum runs over a
    sentence's distinct n-grams in ascending hash order."""
    cdef Py_ssize_t rows = hyp_index.shape[0], n_grams = hashes.shape[0], i, j, h, nd, nr, k
    out_arr = np.zeros(ref_off[rows] if rows else 0, dtype=np.float64)
    cdef double[::1] out = out_arr
    cnt_arr = np.zeros(n_grams + 1, dtype=np.int32)
    rc_arr = np.zeros(n_grams + 1, dtype=np.int32)
    cdef int32_t[::1] cnt = cnt_arr, rc = rc_arr
    cdef int64_t longest = 1
    for i in range(lens_r.shape[0]):
        longest = max(longest, lens_r[i])
    for i in range(lens_h.shape[0]):
        longest = max(longest, lens_h[i])
    dist_arr = np.empty(longest, dtype=np.int64)
    rd_arr = np.empty(longest, dtype=np.int64)
    cdef int64_t[::1] dist = dist_arr, rd = rd_arr
    cdef int64_t g
    cdef double norm_h, norm_r, val, v, vh
    with nogil:
        for i in range(rows):
            h = hyp_index[i]
            nd = distinct_counts(gid_h, starts_h[h], lens_h[h] - n + 1, cnt, dist, hashes)
            norm_h = 0.0
            for k in range(nd):
                v = <double>cnt[dist[k]] * idf[dist[k]]
                norm_h += v * v
            norm_h = sqrt(norm_h)
            for j in range(ref_off[i], ref_off[i + 1]):
                nr = distinct_counts(gid_r, starts_r[j], lens_r[j] - n + 1, rc, rd, hashes)
                norm_r = 0.0
                val = 0.0
                for k in range(nr):
                    g = rd[k]
                    v = <double>rc[g] * idf[g]
                    norm_r += v * v
                    vh = <double>cnt[g] * idf[g] if cnt[g] != 0 else 0.0
                    if clipped:
                        val += (vh if vh < v else v) * v
                    else:
                        val += vh * v
                    rc[g] = 0
                norm_r = sqrt(norm_r)
                if norm_h != 0.0 and norm_r != 0.0:
                    val /= norm_h * norm_r
                out[j] = val
            for k in range(nd):
                cnt[dist[k]] = 0
    return out_arr


# --------------------------------------------------------------------------- ROUGE-L

def lcs_pairs(const int64_t[::1] ids_h, const int64_t[::1] starts_h, const int64_t[::1] lens_h,
              const int64_t[::1] hyp_of_ref,
              const int64_t[::1] ids_r, const int64_t[::1] starts_r, const int64_t[::1] lens_r):
    """LCS length of every reference j and hypothesis hyp_of_ref[j]: the bit-parallel algorithm
    (Allison & Dix, Hyyro) over as many 64-bit words as the reference needs.

    The algorithm needs, for each hypothesis token, the bit mask of the reference positions
    holding that token. For a reference of up to 64 tokens the masks are set once per reference
    in a token-indexed array (and cleared after), so a pair costs O(hypothesis + reference)
    besides the word updates; longer references build each mask by a scan of the reference."""
    cdef Py_ssize_t n_refs = lens_r.shape[0], j, i, w, q, W, a, b, Lr, Lh, sh, sr
    out_arr = np.zeros(n_refs, dtype=np.int64)
    cdef int64_t[::1] out = out_arr
    cdef int64_t longest = 1, top = 0
    for j in range(n_refs):
        longest = max(longest, lens_r[j])
    for j in range(ids_r.shape[0]):
        top = max(top, ids_r[j])
    for j in range(ids_h.shape[0]):
        top = max(top, ids_h[j])
    cdef Py_ssize_t max_w = (longest + 63) // 64
    v_arr = np.empty(max_w, dtype=np.uint64)
    m_arr = np.empty(max_w, dtype=np.uint64)
    mask_arr = np.zeros(top + 1, dtype=np.uint64)   # token -> positions in the reference (<= 64 tokens)
    cdef uint64_t[::1] V = v_arr, M = m_arr, mask = mask_arr
    cdef uint64_t x, u, s1, s2, d1, d2, carry, borrow, c1, c2, b1, b2, v1
    cdef int64_t tok, zeros
    with nogil:
        for j in range(n_refs):
            Lr = lens_r[j]
            a = hyp_of_ref[j]
            Lh = lens_h[a]
            if Lr == 0 or Lh == 0:
                continue
            sh = starts_h[a]
            sr = starts_r[j]
            if Lr <= 64:
                for q in range(Lr):
                    mask[ids_r[sr + q]] |= (<uint64_t>1) << q
                v1 = 0xFFFFFFFFFFFFFFFFULL
                for i in range(Lh):
                    u = v1 & mask[ids_h[sh + i]]
                    v1 = (v1 + u) | (v1 - u)
                for q in range(Lr):
                    mask[ids_r[sr + q]] = 0
                zeros = 0
                for q in range(Lr):
                    if not (v1 >> q) & 1:
                        zeros += 1
                out[j] = zeros
                continue
            W = (Lr + 63) >> 6
            for w in range(W):
                V[w] = 0xFFFFFFFFFFFFFFFFULL
            for i in range(Lh):
                tok = ids_h[sh + i]
                for w in range(W):
                    M[w] = 0
                for q in range(Lr):
                    if ids_r[sr + q] == tok:
                        M[q >> 6] |= (<uint64_t>1) << (q & 63)
                carry = 0
                borrow = 0
                for w in range(W):
                    x = V[w]
                    u = x & M[w]
                    s1 = x + u
                    c1 = s1 < x
                    s2 = s1 + carry
                    c2 = s2 < s1
                    carry = c1 | c2
                    d1 = x - u
                    b1 = x < u
                    d2 = d1 - borrow
                    b2 = d1 < borrow
                    borrow = b1 | b2
                    V[w] = s2 | d2
            zeros = 0
            for q in range(Lr):
                if not (V[q >> 6] >> (q & 63)) & 1:
                    zeros += 1
            out[j] = zeros
    return out_arr


# --------------------------------------------------------------------------- look-ups

def lookup_counts(const uint64_t[::1] keys, const int64_t[::1] counts, const uint64_t[::1] queries):
    """counts[k] where keys[k] == query, else 0, for each query (as float64): an open-addressing
    table on the keys, which are already well-mixed hashes. The first of equal keys wins, as
    with searchsorted on the sorted keys."""
    cdef Py_ssize_t n_keys = keys.shape[0], n_slots = 16, i, slot
    while n_slots < 2 * n_keys:
        n_slots *= 2
    slots_arr = np.full(n_slots, -1, dtype=np.int32)
    out_arr = np.zeros(queries.shape[0], dtype=np.float64)
    cdef int32_t[::1] slots = slots_arr
    cdef double[::1] out = out_arr
    cdef int32_t k
    cdef uint64_t q
    with nogil:
        for i in range(n_keys):
            slot = <Py_ssize_t>(keys[i] & <uint64_t>(n_slots - 1))
            while slots[slot] != -1 and keys[slots[slot]] != keys[i]:
                slot = (slot + 1) & (n_slots - 1)
            if slots[slot] == -1:
                slots[slot] = <int32_t>i
        for i in range(queries.shape[0]):
            q = queries[i]
            slot = <Py_ssize_t>(q & <uint64_t>(n_slots - 1))
            while True:
                k = slots[slot]
                if k == -1:
                    break
                if keys[k] == q:
                    out[i] = <double>counts[k]
                    break
                slot = (slot + 1) & (n_slots - 1)
    return out_arr


# --------------------------------------------------------------------------- CIDEr's first pass

cdef class _Counter:
    """hash -> number of rows it occurs in (open addressing; keys in order of first appearance;
    a key counts once per row: `last` holds the row that counted it last). The slot table
    starts small and doubles at half load, so that it stays in cache for small vocabularies."""
    cdef object keys_arr, counts_arr, slots_arr, last_arr
    cdef uint64_t[::1] keys
    cdef int64_t[::1] counts
    cdef int32_t[::1] slots, last
    cdef Py_ssize_t n, n_slots

    def __cinit__(self, Py_ssize_t expect):
        self.n_slots = 1 << 12
        self.keys_arr = np.empty(max(expect, 1), dtype=np.uint64)
        self.counts_arr = np.zeros(max(expect, 1), dtype=np.int64)
        self.last_arr = np.empty(max(expect, 1), dtype=np.int32)
        self.slots_arr = np.full(self.n_slots, -1, dtype=np.int32)
        self.keys = self.keys_arr
        self.counts = self.counts_arr
        self.last = self.last_arr
        self.slots = self.slots_arr
        self.n = 0

    cdef void grow(self) noexcept nogil:
        cdef Py_ssize_t i, slot, mask
        with gil:
            self.n_slots *= 2
            self.slots_arr = np.full(self.n_slots, -1, dtype=np.int32)
            self.slots = self.slots_arr
        mask = self.n_slots - 1
        for i in range(self.n):
            slot = <Py_ssize_t>(self.keys[i] & <uint64_t>mask)
            while self.slots[slot] != -1:
                slot = (slot + 1) & mask
            self.slots[slot] = <int32_t>i

    cdef inline void add(self, uint64_t h, int64_t row) noexcept nogil:
        cdef Py_ssize_t slot = <Py_ssize_t>(h & <uint64_t>(self.n_slots - 1))
        cdef int32_t k
        while True:
            k = self.slots[slot]
            if k == -1:
                self.slots[slot] = <int32_t>self.n
                self.keys[self.n] = h
                self.counts[self.n] = 1
                self.last[self.n] = <int32_t>row
                self.n += 1
                if 2 * self.n > self.n_slots:
                    self.grow()
                return
            if self.keys[k] == h:
                if self.last[k] != <int32_t>row:
                    self.last[k] = <int32_t>row
                    self.counts[k] += 1
                return
            slot = (slot + 1) & (self.n_slots - 1)

    def result(self):
        return self.keys_arr[:self.n].copy(), self.counts_arr[:self.n].copy()


def reference_doc_freq(list refs, const int64_t[::1] ref_off, int max_order):
    """CIDEr's first-pass state straight from reference texts (str.split() tokens): for each
    order n <= max_order, the distinct n-gram hashes of the references (`ngram_ids`' hashes)
    and the number of rows whose references contain each. Nothing else is kept, so no ids.
    Raises UnicodeEncodeError for text that is not valid UTF-8."""
    cdef Py_ssize_t n_rows = ref_off.shape[0] - 1, i, j, k, p, L, size, pos, n, m, total_tokens = 0
    cdef const uint8_t* s
    cdef uint8_t c
    cdef uint64_t raw, h
    # token hashes of all references, laid end to end
    cap = 16
    for j in range(len(refs)):
        cap += len(<str>refs[j]) // 2 + 1
    tok_arr = np.empty(cap, dtype=np.uint64)
    lens_arr = np.zeros(len(refs), dtype=np.int64)
    cdef uint64_t[::1] tok = tok_arr
    cdef int64_t[::1] lens = lens_arr
    for j in range(len(refs)):
        s = <const uint8_t*>PyUnicode_AsUTF8AndSize(refs[j], &size)
        if total_tokens + size + 1 > tok.shape[0]:
            tok_arr = np.resize(tok_arr, max(2 * tok.shape[0], total_tokens + size + 1))
            tok = tok_arr
        p = 0
        L = 0
        with nogil:
            while p < size:
                c = s[p]
                if c < 0x80:
                    if _ASCII_WS[c]:
                        p += 1
                        continue
                else:
                    k = ws_len(s, p, size)
                    if k:
                        p += k
                        continue
                p = token_end(s, p, size, &h)
                tok[total_tokens] = mix64(h)
                total_tokens += 1
                L += 1
        lens[j] = L
    if total_tokens >= 2 ** 31 or n_rows >= 2 ** 31:
        raise OverflowError("a shard this large does not fit the kernel's 32-bit tables")
    counters = [_Counter(total_tokens) for _ in range(max_order)]
    cdef _Counter counter
    starts_arr = np.zeros(len(refs) + 1, dtype=np.int64)
    cdef int64_t[::1] starts = starts_arr
    for j in range(len(refs)):
        starts[j + 1] = starts[j] + lens[j]
    for n in range(1, max_order + 1):
        counter = counters[n - 1]
        with nogil:
            for i in range(n_rows):
                for j in range(ref_off[i], ref_off[i + 1]):
                    for p in range(starts[j], starts[j + 1] - n + 1):
                        raw = tok[p]
                        for k in range(1, n):
                            raw = raw * MULT + tok[p + k]
                        counter.add(mix64(raw + <uint64_t>n), i)
    return [counter_.result() for counter_ in counters]
