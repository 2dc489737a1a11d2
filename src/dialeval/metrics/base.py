"""The shape every metric has.

A metric turns a `Batch` (the hypotheses and references of one evaluated set) into per-sample
**sufficient statistics**: a float array with one row per sample. Rows of different batches
concatenate, and column sums reduce them, so the same code serves one process, a pool, a
stream and a distributed run. Sentence scores come from single rows and the corpus score from
the column sums (corpus BLEU, METEOR) or, for most metrics, from a (sum, count) pair that makes
it the mean of the sentence scores.

Reference handling is one mechanism for all reference-based metrics (`refs_mode`):

- `multi`: the metric's own multi-reference rule, as the original implementation applies it;
- `max` / `mean`: the sample is scored against each reference alone, and the best / average of
  those single-reference scores is its sentence score (the AM-FM and nlg-eval papers' rule);
  the corpus score is then the mean of sentence scores.

Metrics that need corpus-wide knowledge (CIDEr's document frequencies) get it from
`Batch.root`, the full multi-reference batch, also when scoring single-reference pairs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Literal, Sequence

import numpy as np

from ..errors import DialevalError
from ..version import __version__

REFS_MODES = ("multi", "max", "mean")


class Batch:
    """Hypotheses and references of one evaluated set, with a memo for shared work.

    Several metrics often need the same derived data (tokens, n-gram counts); `memo` computes
    each once per batch. `pairs()` gives the single-reference view used by `max` and `mean`.
    """

    def __init__(self, hyps: Sequence[str], refs: Sequence[Sequence[str]],
                 contexts: Sequence[Sequence[str]] | None = None, root: "Batch | None" = None,
                 item_of_row: np.ndarray | None = None, samples: Sequence[Any] | None = None):
        if len(hyps) != len(refs):
            raise DialevalError(f"{len(hyps)} hypotheses but {len(refs)} reference lists")
        self.hyps = list(hyps)
        self.refs = [list(r) for r in refs]
        self.contexts = [list(c) for c in contexts] if contexts is not None else [[] for _ in self.hyps]
        self.root = root if root is not None else self
        self.item_of_row = item_of_row
        self.samples = list(samples) if samples is not None else None  # full Samples, if a metric needs more
        self._memo: dict[Any, Any] = {}

    def __len__(self) -> int:
        return len(self.hyps)

    def memo(self, key: Any, compute: Callable[[], Any]) -> Any:
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]

    def pairs(self) -> "Batch":
        """One row per (sample, reference): the reference alone. `item_of_row` maps rows back."""
        def build() -> Batch:
            counts = np.fromiter((len(r) for r in self.refs), dtype=np.int64, count=len(self.refs))
            hyps = [h for h, n in zip(self.hyps, counts) for _ in range(n)]
            ctxs = [c for c, n in zip(self.contexts, counts) for _ in range(n)]
            refs = [[r] for rs in self.refs for r in rs]
            rows = np.repeat(np.arange(len(self.hyps)), counts)
            samples = [self.samples[i] for i in rows] if self.samples is not None else None
            return Batch(hyps, refs, ctxs, root=self.root, item_of_row=rows, samples=samples)
        return self.memo("__pairs__", build)


@dataclass(frozen=True)
class Signature:
    """How a number was made, printed like sacreBLEU's: `name|key:value|...|version:x`."""

    metric: str
    options: tuple[tuple[str, Any], ...] = ()

    def __str__(self) -> str:
        parts = [self.metric] + [f"{k}:{_fmt_opt(v)}" for k, v in self.options]
        parts.append(f"version:{__version__}")
        return "|".join(parts)

    def as_dict(self) -> dict[str, Any]:
        return {"metric": self.metric, **dict(self.options), "version": __version__}


def _fmt_opt(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return repr(value)
    return str(value)


@dataclass
class MetricOutput:
    """What one metric gives for one batch."""

    name: str
    sentence: np.ndarray   # (n,) float64, NaN where a sample cannot be scored
    stats: np.ndarray      # (n, k) mergeable statistics
    corpus: float
    signature: Signature
    extra: dict[str, Any] = field(default_factory=dict)


class Metric:
    """Base class: subclasses give `name`, `multi_stats` and `sentence_from_stats`.

    `corpus_from_summed_stats = True` means the corpus score is a function of the summed
    statistics (`corpus_from_stats`); otherwise the statistics are (score, 1) rows and the corpus
    score is their mean. A subclass's constructor keyword arguments are its options
    (`dialeval.options`); it documents them in an `Options:` block like this one.

    Options:
        refs_mode: how several references combine: multi (the original rule), max or mean
        tokenizer: tokenizer for every metric (default: each metric's original)
    """

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    needs_references: ClassVar[bool] = True
    native_tokenizer: ClassVar[str] = "whitespace"
    corpus_from_summed_stats: ClassVar[bool] = False
    higher_is_better: ClassVar[bool] = True

    def __init__(self, refs_mode: Literal["multi", "max", "mean"] = "multi", tokenizer: str | None = None):
        if refs_mode not in REFS_MODES:
            raise DialevalError(f"unknown reference mode {refs_mode!r}; choose from {', '.join(REFS_MODES)}")
        self.refs_mode = refs_mode
        self.tokenizer = tokenizer or self.native_tokenizer

    # -- to be provided by subclasses ------------------------------------------------------
    def multi_stats(self, batch: Batch) -> np.ndarray:
        """Statistics of each row of `batch` against all of that row's references."""
        raise NotImplementedError

    def sentence_from_stats(self, stats: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def corpus_from_stats(self, total: np.ndarray) -> float:
        return float(total[0] / total[1]) if total[1] else math.nan

    def signature_options(self) -> list[tuple[str, Any]]:
        return []

    # -- shared machinery -------------------------------------------------------------------
    def signature(self) -> Signature:
        opts: list[tuple[str, Any]] = []
        if self.needs_references:
            opts.append(("refs", self.refs_mode))
        opts.append(("tok", self.tokenizer))
        opts.extend(self.signature_options())
        return Signature(self.name, tuple(opts))

    def compute(self, batch: Batch) -> MetricOutput:
        if self.refs_mode == "multi" or not self.needs_references:
            stats = self.multi_stats(batch)
            sentence = self.sentence_from_stats(stats)
            if not self.corpus_from_summed_stats:
                stats = mean_stats(sentence)
        else:
            pairs = batch.pairs()
            pair_scores = self.sentence_from_stats(self.multi_stats(pairs)) if len(pairs) else np.zeros(0)
            sentence = reduce_pairs(pair_scores, pairs.item_of_row, len(batch), self.refs_mode)
            stats = mean_stats(sentence)
        return MetricOutput(self.name, sentence, stats, self.reduce(stats), self.signature())

    def reduce(self, stats: np.ndarray) -> float:
        """Corpus score from the statistics rows of any number of samples (mergeable)."""
        if len(stats) == 0:
            return math.nan
        if self.corpus_from_summed_stats and (self.refs_mode == "multi" or not self.needs_references):
            valid = ~np.isnan(stats).any(axis=1)
            return self.corpus_from_stats(stats[valid].sum(axis=0))
        total = np.nansum(stats, axis=0)
        return float(total[0] / total[1]) if total[1] else math.nan


def mean_stats(sentence: np.ndarray) -> np.ndarray:
    """(score, 1) rows, or (0, 0) for a sample that could not be scored (NaN)."""
    ok = ~np.isnan(sentence)
    return np.stack([np.where(ok, sentence, 0.0), ok.astype(np.float64)], axis=1)


def reduce_pairs(pair_scores: np.ndarray, item_of_row: np.ndarray, n_items: int, mode: str) -> np.ndarray:
    """Per-item max or mean of single-reference scores; NaN for items without references."""
    out = np.full(n_items, np.nan)
    if len(pair_scores) == 0:
        return out
    counts = np.bincount(item_of_row, minlength=n_items)
    has = counts > 0
    if mode == "max":
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        out[has] = np.maximum.reduceat(pair_scores, starts[has])
    else:
        sums = np.bincount(item_of_row, weights=pair_scores, minlength=n_items)
        out[has] = sums[has] / counts[has]
    return out
