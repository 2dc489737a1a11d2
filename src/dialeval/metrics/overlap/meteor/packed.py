"""A batch's analysed sentences as flat integer arrays, the input of the compiled kernel.

`kernel.pair_stats` aligns (hypothesis, reference) pairs without touching Python objects, so
everything the four matching stages compare is laid out here once per batch, per token in
sentence order (`tok_off[s]:tok_off[s + 1]` are sentence s's tokens):

- `key`, `skey`: what the exact and stem stages compare (Java hash codes of the word and of
  its stem, or ids of the strings), `func`: function-word flags;
- `key_sorted`/`key_pos` (and `skey_...`): each sentence's keys sorted with their positions,
  so a hypothesis is searched by binary search (the Python path uses a dict per sentence);
- `tok_type`: each token's distinct word; `type_syn_off`/`type_syn`: each distinct word's
  synsets, ascending; `ssyn_off`/`ssyn_id`/`ssyn_pos`: per hypothesis sentence (empty for
  the others), (synset, position) rows sorted, for looking its words up by synset;
- `para_*` (rows of `ParaphraseTable.rows`) and `ng_*`: per sentence, sorted by paraphrase
  key (then position, length, table entry), so a pair's paraphrase stage is a merge join.
"""

from __future__ import annotations

import itertools

import numpy as np


def _csr(sent: np.ndarray, n_sent: int) -> np.ndarray:
    """Offsets of each sentence's run in rows sorted by sentence."""
    off = np.zeros(n_sent + 1, dtype=np.int64)
    np.cumsum(np.bincount(sent, minlength=n_sent), out=off[1:])
    return off


def pack(lengths: np.ndarray, tok_type: np.ndarray, hyps: np.ndarray, *, key: np.ndarray, skey: np.ndarray,
         func: np.ndarray, synsets: list[list[int]], para: dict, ngrams: dict) -> dict[str, np.ndarray]:
    """Arrays for `kernel.Corpus`. Sentences are `lengths` long and made of the distinct words
    `tok_type` (one per token); `hyps` flags the sentences used as hypotheses; key, skey,
    func and synsets (ascending) are per distinct word; para and ngrams are the rows of
    `ParaphraseTable.rows`."""
    n_sent = len(lengths)
    tok_off = np.zeros(n_sent + 1, dtype=np.int64)
    np.cumsum(lengths, out=tok_off[1:])
    sent = np.repeat(np.arange(n_sent, dtype=np.int64), lengths)
    pos = np.arange(len(sent), dtype=np.int64) - tok_off[sent]
    a: dict[str, np.ndarray] = {"tok_off": tok_off, "tok_type": tok_type, "key": key[tok_type],
                                "skey": skey[tok_type], "func": func.astype(np.uint8)[tok_type]}
    for name in ("key", "skey"):
        values = a[name]
        order = np.lexsort((pos, values, sent))
        a[f"{name}_sorted"] = values[order]
        a[f"{name}_pos"] = pos[order]
    counts = np.fromiter(map(len, synsets), dtype=np.int64, count=len(synsets))
    a["type_syn_off"] = np.zeros(len(synsets) + 1, dtype=np.int64)
    np.cumsum(counts, out=a["type_syn_off"][1:])
    a["type_syn"] = np.fromiter(itertools.chain.from_iterable(synsets), dtype=np.int64, count=int(counts.sum()))
    # (synset, position) rows of the hypotheses' tokens
    tok = np.flatnonzero(hyps[sent])
    per_tok = counts[tok_type[tok]]
    row_tok = np.repeat(tok, per_tok)
    first = np.repeat(np.cumsum(per_tok) - per_tok, per_tok)
    syn_id = a["type_syn"][np.repeat(a["type_syn_off"][tok_type[tok]], per_tok) + np.arange(len(row_tok)) - first]
    order = np.lexsort((pos[row_tok], syn_id, sent[row_tok]))
    a["ssyn_off"] = _csr(sent[row_tok], n_sent)
    a["ssyn_id"] = syn_id[order]
    a["ssyn_pos"] = pos[row_tok][order]
    order = np.lexsort((para["entry"], para["len"], para["pos"], para["key"], para["sent"]))
    a["para_off"] = _csr(para["sent"], n_sent)
    for k in ("pos", "len", "plen"):
        a[f"para_{k}"] = np.ascontiguousarray(para[k][order], dtype=np.int64)
    a["para_ent"] = np.ascontiguousarray(para["entry"][order], dtype=np.int64)
    a["para_key"] = np.ascontiguousarray(para["key"][order], dtype=np.uint64)
    order = np.lexsort((ngrams["pos"], ngrams["key"], ngrams["sent"]))
    a["ng_off"] = _csr(ngrams["sent"], n_sent)
    a["ng_pos"] = np.ascontiguousarray(ngrams["pos"][order], dtype=np.int64)
    a["ng_key"] = np.ascontiguousarray(ngrams["key"][order], dtype=np.uint64)
    return a
