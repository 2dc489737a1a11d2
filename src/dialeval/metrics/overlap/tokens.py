"""Tokenised views of a batch shared by the word-overlap metrics (memoised per batch).

Two implementations compute the same statistics: the compiled kernel (`kernel.pyx`, built by
setup.py) and the numpy code of this package, which defines the numbers, serves as the
reference in the tests, and runs where the kernel is not built (a source tree without
`python3 setup.py build_ext --inplace`). `compiled()` says which one runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain, repeat

import numpy as np

from ...text.ngrams import TokenTable, count_pairs, encode, encode_flat, ngram_keys
from ...text.tokenizers import tokenize_all
from ..base import Batch

KERNEL_VERSION = 2  # kernel.pyx's VERSION this code calls

try:
    from . import kernel as KERNEL
except ImportError:  # not built: the numpy path computes the same numbers, more slowly
    KERNEL = None
if KERNEL is not None and getattr(KERNEL, "VERSION", None) != KERNEL_VERSION:
    import warnings

    warnings.warn("the compiled word-overlap kernel is out of date (rebuild it: python3 setup.py "
                  "build_ext --inplace); using the numpy path", stacklevel=2)
    KERNEL = None


def compiled():
    """The compiled kernel module, or None (then the numpy path runs)."""
    return KERNEL


@dataclass(frozen=True)
class TokenizedBatch:
    hyp: TokenTable        # one sentence per row of the batch
    ref: TokenTable        # all references, row by row, in order
    ref_item: np.ndarray   # row of the batch each reference belongs to
    vocab_size: int
    vocab: tuple[str, ...] = ()  # token of each id (for keys that must agree across batches)
    tok_hash: np.ndarray | None = None  # 64-bit hash of each id's token, when the kernel made the ids
    space_same: bool = False  # (kernel, whitespace) str.split(" ") gives these same tokens


def take(table: TokenTable, rows: np.ndarray) -> TokenTable:
    """The sentences `rows` of `table`, in that order (rows may repeat)."""
    lengths = table.lengths[rows]
    starts = np.zeros(len(rows), dtype=np.int64)
    if len(rows) > 1:
        np.cumsum(lengths[:-1], out=starts[1:])
    offsets = np.arange(int(lengths.sum()), dtype=np.int64) - np.repeat(starts, lengths)
    ids = table.ids[np.repeat(table.starts[rows], lengths) + offsets]
    return TokenTable(ids=ids, lengths=lengths, starts=starts)


# Every character str.split() splits on, except the plain space.
_OTHER_WHITESPACE = tuple("\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f\x85\xa0\u1680\u2000\u2001\u2002\u2003"
                          "\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000")


def _space_is_whitespace(batch: Batch) -> bool:
    """True when splitting on single spaces gives the same tokens as splitting on whitespace
    (no empty text, no double, leading or trailing space, no other whitespace), so that ROUGE-L
    can share the BLEU/CIDEr tokens. Substring tests on the joined texts keep this cheap."""
    texts = batch.hyps + [r for refs in batch.refs for r in refs]
    joined = "\x00" + "\x00".join(texts) + "\x00"
    if any(not t for t in texts) or "  " in joined or "\x00 " in joined or " \x00" in joined:
        return False
    if joined.isascii():
        return not any(c in joined for c in _OTHER_WHITESPACE[:9])
    return not any(c in joined for c in _OTHER_WHITESPACE)


def _check_unspaced(batch: Batch, tokenizer: str) -> bool:
    from ...text.tokenizers import warn_unspaced

    warn_unspaced(tokenizer, chain(batch.hyps, chain.from_iterable(batch.refs)))
    return True


def _compiled_tokens(batch: Batch, tokenizer: str, kernel) -> TokenizedBatch | None:
    """Tokens and ids of a root batch in one C pass over the UTF-8 bytes (None: text that is not
    valid UTF-8, such as lone surrogates; the numpy path handles it)."""
    if tokenizer == "space":
        ws = tokenized(batch, "whitespace")
        if ws.space_same:
            return ws
    vocab = kernel.Vocab()
    refs = [r for refs in batch.refs for r in refs]
    try:
        hyp_ids, hyp_len, same_h = vocab.encode(batch.hyps, tokenizer == "whitespace")
        ref_ids, ref_len, same_r = vocab.encode(refs, tokenizer == "whitespace")
    except UnicodeEncodeError:
        return None
    counts = np.fromiter(map(len, batch.refs), dtype=np.int64, count=len(batch.refs))
    return TokenizedBatch(hyp=_table(hyp_ids, hyp_len), ref=_table(ref_ids, ref_len),
                          ref_item=np.repeat(np.arange(len(batch), dtype=np.int64), counts),
                          vocab_size=len(vocab), tok_hash=vocab.hashes(),
                          space_same=tokenizer == "whitespace" and same_h and same_r)


def _table(ids: np.ndarray, lengths: np.ndarray) -> TokenTable:
    starts = np.zeros(len(lengths), dtype=np.int64)
    if len(lengths) > 1:
        np.cumsum(lengths[:-1], out=starts[1:])
    return TokenTable(ids=ids, lengths=lengths, starts=starts)


def tokenized(batch: Batch, tokenizer: str) -> TokenizedBatch:
    if tokenizer in ("whitespace", "space") and batch.root is batch:
        batch.memo(("unspaced-checked", tokenizer), lambda: _check_unspaced(batch, tokenizer))
    kernel = compiled()
    if kernel is not None and tokenizer in ("whitespace", "space") and batch.root is batch:
        found = batch.memo(("tokens-compiled", tokenizer), lambda: _compiled_tokens(batch, tokenizer, kernel))
        if found is not None:
            return found
    if tokenizer == "space" and batch.root is batch and batch.memo("space==whitespace",
                                                                   lambda: _space_is_whitespace(batch)):
        tokenizer = "whitespace"

    def build() -> TokenizedBatch:
        if batch.root is not batch and batch.item_of_row is not None:
            root = tokenized(batch.root, tokenizer)
            return TokenizedBatch(hyp=take(root.hyp, batch.item_of_row), ref=root.ref,
                                  ref_item=np.arange(len(batch), dtype=np.int64),
                                  vocab_size=root.vocab_size, vocab=root.vocab)
        vocab: dict[str, int] = {}
        refs = [r for refs in batch.refs for r in refs]
        if tokenizer in ("whitespace", "space") and batch.memo("space==whitespace",
                                                               lambda: _space_is_whitespace(batch)):
            # plain text (single spaces only): one C-level split of all texts at once
            hyp, ref = (encode_flat(" ".join(texts).split(" ") if texts else [],
                                    np.fromiter(map(str.count, texts, repeat(" ")), np.int64, len(texts)) + 1,
                                    vocab) for texts in (batch.hyps, refs))
        else:
            hyp = encode(tokenize_all(tokenizer, batch.hyps), vocab)
            ref = encode(tokenize_all(tokenizer, refs), vocab)
        counts = np.fromiter((len(r) for r in batch.refs), dtype=np.int64, count=len(batch.refs))
        ref_item = np.repeat(np.arange(len(batch), dtype=np.int64), counts)
        return TokenizedBatch(hyp=hyp, ref=ref, ref_item=ref_item, vocab_size=len(vocab), vocab=tuple(vocab))
    return batch.memo(("tokens", tokenizer), build)


@dataclass(frozen=True)
class NgramCounts:
    """Distinct n-grams of one order per hypothesis and per reference, with their counts.

    Gram keys are dense ranks shared by hypotheses and references, below `bound`.
    """

    hyp_item: np.ndarray
    hyp_gram: np.ndarray
    hyp_count: np.ndarray
    ref_index: np.ndarray
    ref_gram: np.ndarray
    ref_count: np.ndarray
    bound: int


def ngram_counts(batch: Batch, tokenizer: str, n: int) -> NgramCounts:
    """Memoised per batch, so BLEU and CIDEr count each order once."""
    def build() -> NgramCounts:
        (h_sent, h_key), (r_sent, r_key) = ngram_occurrences(batch, tokenizer, n)
        bound = int(max(h_key.max(initial=-1), r_key.max(initial=-1))) + 1
        return NgramCounts(*count_pairs(h_sent, h_key, bound), *count_pairs(r_sent, r_key, bound), bound)
    return batch.memo(("ngram-counts", tokenizer, n), build)


def ngram_occurrences(batch: Batch, tokenizer: str, n: int):
    """[(sentence, dense key) of each hypothesis n-gram, the same for references], text order;
    memoised so that CIDEr can map dense keys to batch-independent hashes."""
    def build():
        tb = tokenized(batch, tokenizer)
        return ngram_keys([tb.hyp, tb.ref], n, tb.vocab_size)
    return batch.memo(("ngram-occurrences", tokenizer, n), build)


# --------------------------------------------------------------------------- compiled path

def token_hashes(batch: Batch, tokenizer: str) -> np.ndarray:
    """64-bit hash of each token id of the batch's vocabulary (FNV-1a of the UTF-8 bytes, mixed):
    the same for a token in every batch and process, whichever path made the ids."""
    tb = tokenized(batch, tokenizer)
    if tb.tok_hash is not None:
        return tb.tok_hash
    kernel = compiled()
    if kernel is not None:
        try:
            return batch.memo(("token-hashes", tokenizer), lambda: kernel.token_hashes(list(tb.vocab)))
        except UnicodeEncodeError:
            pass
    return batch.memo(("token-hashes", tokenizer), lambda: token_hashes_numpy(tb.vocab))


FNV_OFFSET = np.uint64(0xCBF29CE484222325)
FNV_PRIME = np.uint64(0x100000001B3)


def mix64(h: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser: spreads the bits of a combined hash."""
    h = h ^ (h >> np.uint64(30))
    h = h * np.uint64(0xBF58476D1CE4E5B9)
    h = h ^ (h >> np.uint64(27))
    h = h * np.uint64(0x94D049BB133111EB)
    return h ^ (h >> np.uint64(31))


def token_hashes_numpy(tokens) -> np.ndarray:
    """The kernel's token hash in numpy: FNV-1a over the UTF-8 bytes (lone surrogates passed
    through), one byte column at a time, then `mix64`."""
    data = [t.encode("utf-8", "surrogatepass") for t in tokens]
    lengths = np.fromiter(map(len, data), dtype=np.int64, count=len(data))
    width = int(lengths.max(initial=0))
    flat = np.frombuffer(b"".join(data), dtype=np.uint8)
    grid = np.zeros((len(data), width), dtype=np.uint8)
    grid[np.arange(width)[None, :] < lengths[:, None]] = flat
    h = np.full(len(data), FNV_OFFSET, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for c in range(width):
            live = lengths > c
            h[live] = (h[live] ^ grid[live, c].astype(np.uint64)) * FNV_PRIME
        return mix64(h)


def grams(root: Batch, tokenizer: str, n: int):
    """(kernel) Id of the n-gram starting at each hypothesis and reference token (-1: none), and
    the hash of each id; ids are equal exactly when the token sequences are."""
    gid_h, gid_r, _, hashes = _grams(root, tokenizer, n)
    return gid_h, gid_r, hashes


def _grams(root: Batch, tokenizer: str, n: int):
    """`grams` with the raw (unmixed) hash of each id. Unigram ids are the token ids; order n
    extends the ids of order n - 1 (`kernel.ngram_ids_next`)."""
    def build():
        kernel = compiled()
        tb = tokenized(root, tokenizer)
        tok_hash = token_hashes(root, tokenizer)
        if n == 1:
            return tb.hyp.ids, tb.ref.ids, tok_hash, kernel.mixed_hashes(tok_hash, 1)
        prev_h, prev_r, raw_prev, _ = _grams(root, tokenizer, n - 1)
        return kernel.ngram_ids_next(prev_h, tb.hyp.starts, tb.hyp.lengths, tb.hyp.ids,
                                     prev_r, tb.ref.starts, tb.ref.lengths, tb.ref.ids, raw_prev, tok_hash, n)
    return root.memo(("grams", tokenizer, n), build)


def rows_view(batch: Batch, tokenizer: str):
    """(root tokens, hypothesis of each row, reference range of each row): a root batch's rows
    are its items with all their references; a `pairs()` batch's row j is root hypothesis
    `item_of_row[j]` with root reference j alone."""
    root = batch.root
    tb = tokenized(root, tokenizer)
    if root is batch:
        hyp_index = np.arange(len(batch), dtype=np.int64)
        counts = np.bincount(tb.ref_item, minlength=len(batch))
        ref_off = np.zeros(len(batch) + 1, dtype=np.int64)
        np.cumsum(counts, out=ref_off[1:])
    else:
        hyp_index = np.ascontiguousarray(batch.item_of_row, dtype=np.int64)
        ref_off = np.arange(len(batch) + 1, dtype=np.int64)
    return tb, hyp_index, ref_off
