"""Distinct-n and n-gram entropy of a system's responses as `score` metrics.

A system's value is a property of all its responses together, not a mean over responses:
distinct-n (Li et al. 2016) is the number of distinct n-grams over the number of n-gram
occurrences in everything the system said, and entropy-n (Zhang et al. 2018; the holistic
paper's eq. 5 on one group) is the Shannon entropy in bits of that n-gram distribution. Both
are functions of one table: each n-gram type with its count. That table merges exactly across
shards (types unite, counts add), whichever way the input is cut, so a sharded, resumed or Dask
run gives the unsharded value: the metrics declare the table as their state (`state_kind =
"counts"`, merged by the engine like any declared state), not a float sum, which could not tell
a type seen in two shards from two types.
Entropy is summed with `math.fsum` over the counts, so its value does not depend on the order
in which types were met either.

Each response's own distinct-n / entropy-n is its sentence value (NaN for a response with
fewer than n tokens). Tokens: lowercased, split by the run's tokenizer (whitespace by default,
as the `diversity` command); n-grams do not cross responses. No references are needed.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import numpy as np

from ...text.tokenizers import tokenize_all
from ..base import Batch, Metric, MetricOutput, MetricState, mean_stats


def response_ngrams(batch: Batch, tokenizer: str, n: int) -> list[list[tuple[str, ...]]]:
    """The n-grams of each response (lowercased tokens), memoised per batch so that distinct-n
    and entropy-n of one order count once."""
    def build():
        tokens = tokenize_all(tokenizer, [h.lower() for h in batch.hyps])
        return [list(zip(*(t[i:] for i in range(n)))) for t in tokens]
    return batch.memo(("diversity-ngrams", tokenizer, n), build)


def _entropy(counts) -> float:
    values = [c for c in counts if c]
    total = sum(values)
    if not total:
        return math.nan
    return -math.fsum(c * math.log2(c / total) for c in values) / total + 0.0   # never -0.0


class _Diversity(Metric):
    needs_references = False
    native_tokenizer = "whitespace"
    score_range = (0.0, None)   # a response with no n-gram has no diversity
    state_kind = "counts"       # the n-gram table: exact across shards, which no float sum is

    def __init__(self, order: int = 2, refs_mode: str = "multi", tokenizer: str | None = None):
        super().__init__(refs_mode=refs_mode, tokenizer=tokenizer)
        self.order = int(order)
        self.name = f"{self.family_name}{self.order}"

    def signature_options(self) -> list[tuple[str, Any]]:
        return [("n", self.order), ("lower", True), ("scope", "system")]

    def sentence_value(self, grams: list[tuple[str, ...]]) -> float:
        raise NotImplementedError

    def compute_batch(self, batch: Batch) -> MetricOutput:
        per_response = response_ngrams(batch, self.tokenizer, self.order)
        sentence = np.fromiter((self.sentence_value(g) for g in per_response), dtype=np.float64,
                               count=len(per_response))
        return MetricOutput(self.name, sentence, mean_stats(sentence),
                            self.corpus_from_counts(self._table(batch)), self.signature())

    def _table(self, batch: Batch) -> dict:
        """The batch's n-gram table, counted once for the corpus value and the shard's state."""
        def build():
            table: Counter = Counter()
            for grams in response_ngrams(batch, self.tokenizer, self.order):
                table.update(grams)
            return dict(table)
        return batch.memo(("diversity-table", self.tokenizer, self.order), build)

    def shard_state(self, batch: Batch, out: MetricOutput) -> MetricState:
        return MetricState("counts", len(batch), self._table(batch))

    def corpus_from_state(self, state: MetricState) -> float:
        return self.corpus_from_counts(state.value)

    def corpus_from_counts(self, counts: dict) -> float:
        raise NotImplementedError

    @classmethod
    def system_value(cls, refs_mode: str = "multi") -> str:
        return "needs-rows"   # the n-gram types of all a system's responses, not a row mean

    def rows_table(self, responses) -> "NGramTable":
        batch = Batch(list(responses), [[] for _ in responses])
        return NGramTable(self, response_ngrams(batch, self.tokenizer, self.order))

    def corpus_from_count_columns(self, counts: np.ndarray) -> np.ndarray:
        """`corpus_from_counts` of each column of `counts` ((types, R) occurrences), vectorised."""
        raise NotImplementedError


class DistinctN(_Diversity):
    """Distinct-n: distinct n-grams over n-gram occurrences of all a system's responses.

    Options:
        tokenizer: tokenizer (default whitespace; tokens are lowercased)
    """

    family_name = "distinct"
    description = "distinct-n of a system's responses (Li et al. 2016), corpus-level"

    def sentence_value(self, grams):
        return len(set(grams)) / len(grams) if grams else 0.0

    def corpus_from_counts(self, counts: dict) -> float:
        total = sum(counts.values())
        return len(counts) / total if total else 0.0

    def corpus_from_count_columns(self, counts: np.ndarray) -> np.ndarray:
        total = counts.sum(axis=0)
        types = np.count_nonzero(counts, axis=0)
        return np.where(total > 0, types / np.where(total > 0, total, 1), 0.0)


class EntropyN(_Diversity):
    """Entropy-n: Shannon entropy (bits) of the n-gram distribution of a system's responses.

    Options:
        tokenizer: tokenizer (default whitespace; tokens are lowercased)
    """

    family_name = "entropy"
    description = "n-gram entropy in bits of a system's responses (Zhang et al. 2018), corpus-level"

    def sentence_value(self, grams):
        return _entropy(Counter(grams).values()) if grams else 0.0

    def corpus_from_counts(self, counts: dict) -> float:
        value = _entropy(counts.values())
        return 0.0 if math.isnan(value) else value

    def corpus_from_count_columns(self, counts: np.ndarray) -> np.ndarray:
        # -sum c log2(c / total) / total = log2(total) - sum c log2(c) / total
        total = counts.sum(axis=0)
        safe = np.where(total > 0, total, 1.0)
        whole = counts.astype(np.int64)
        if whole.size and whole.min() >= 0 and np.array_equal(whole, counts):
            top = int(whole.max())   # whole counts (the AR swaps): c log2 c from a table
            table = np.zeros(top + 1)
            table[1:] = np.arange(1, top + 1) * np.log2(np.arange(1, top + 1))
            clogc = table[whole].sum(axis=0)
        else:
            terms = np.zeros_like(counts)
            np.log2(counts, out=terms, where=counts > 0)
            clogc = (terms * counts).sum(axis=0)
        return np.where(total > 0, np.log2(safe) - clogc / safe, 0.0) + 0.0


class NGramTable:
    """A system value recomputed from score rows (`Metric.rows_table`): each response's n-gram
    counts, once. `value(idx)` merges the rows' tables as a `score` run merges its shards' (the
    same numbers); `weighted` multiplies the sparse (types, rows) occurrence table by the
    weights, a chunk of weight rows at a time, so its memory is about 4 million floats a chunk
    whatever the file's size (an approximate-randomization test of two 2,000-response systems
    with 10,000 trials: about 10 s a metric on one core)."""

    CHUNK = 4_000_000

    def __init__(self, metric: _Diversity, per_row: list[list[tuple[str, ...]]]):
        self.metric = metric
        self.rows = [Counter(grams) for grams in per_row]
        type_ids: dict = {}
        kinds: dict = {}
        entry_type, entry_count, lengths, keys = [], [], [], []
        for table in self.rows:
            for gram, c in table.items():
                entry_type.append(type_ids.setdefault(gram, len(type_ids)))
                entry_count.append(c)
            lengths.append(len(table))
            keys.append(kinds.setdefault(frozenset(table.items()), len(kinds)))
        self.entry_type = np.asarray(entry_type, dtype=np.int64)
        self.entry_count = np.asarray(entry_count, dtype=np.float64)
        self.lengths = np.asarray(lengths, dtype=np.int64)
        self.starts = np.concatenate([[0], np.cumsum(self.lengths)[:-1]]).astype(np.int64)
        self.row_keys = np.asarray(keys, dtype=np.float64)

    def value(self, idx) -> float:
        merged: Counter = Counter()
        for i in np.asarray(idx, dtype=np.int64).tolist():
            merged.update(self.rows[i])
        return self.metric.corpus_from_counts(dict(merged))

    def weighted(self, idx, weights: np.ndarray) -> np.ndarray:
        from scipy import sparse

        idx = np.asarray(idx, dtype=np.int64)
        weights = np.asarray(weights, dtype=np.float64)
        lengths = self.lengths[idx]
        column = np.repeat(np.arange(len(idx)), lengths)          # which idx each entry is of
        first = np.repeat(self.starts[idx] - np.concatenate([[0], np.cumsum(lengths)[:-1]]), lengths)
        entries = np.arange(len(column)) + first                    # positions in the entry list
        types, local = np.unique(self.entry_type[entries], return_inverse=True)
        # (types, rows) occurrences: a chunk's (types, R) counts are table @ weights.T
        table = sparse.csr_matrix((self.entry_count[entries], (local.ravel(), column)),
                                  shape=(max(len(types), 1), len(idx)))
        step = max(1, self.CHUNK // max(len(types), 1))
        out = [self.metric.corpus_from_count_columns(np.asarray(table @ weights[r:r + step].T))
               for r in range(0, len(weights), step)]
        return np.concatenate(out) if out else np.zeros(0)
