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

What a shard contributes to a corpus value is a **declared state** (`Metric.state_kind`, the
name of a registered `StateKind`, which says how two states merge and how one is written to a
checkpoint; the set is open, `register_state_kind`). The kinds every installed metric uses:

- `"sum"` (the base class's declaration): the corpus value is a function of the column sums of
  the statistics rows, so a shard keeps one (count, sums) pair (`partial_state`), pairs add
  (`MetricState.merge`) and `corpus_from_state` finishes;
- `"concat"`: the rows are kept and `reduce` sees all of them (a median needs them); a plug-in
  that overrides `reduce` without declaring a kind gets this one, as it always has;
- `"counts"`: a table of hashable keys with integer counts, merged exactly (types unite, counts
  add): distinct-n and entropy-n keep their n-gram table in it (`Metric.shard_state`).

The engine merges by the declaration alone, so a metric whose state is none of these registers
its kind and gives `shard_state` and `corpus_from_state`; nothing else changes. Besides:

- a **corpus-wide first pass** (`corpus_pass_key` not None, as CIDEr's document frequencies
  need): the engine first runs `corpus_pass_state` over every shard of an evaluated set, merges
  with `merge_corpus_pass`, and hands the merged state to the scoring pass in `Batch.corpus`,
  so any sharding gives the unsharded numbers. Without it (a batch scored alone), a metric
  takes its corpus knowledge from `Batch.root`, the full multi-reference batch. A metric that
  also writes its merged state as arrays (`corpus_pass_arrays` / `corpus_pass_from_arrays`)
  lets `--resume` restore the pass from the checkpoint instead of redoing it.

A sample without references has no reference-based score: its sentence value is NaN and it
adds nothing to the corpus value, for every metric with `needs_references` (and likewise a
sample without context for a metric with `needs_context`).

A **blank response** (empty or whitespace only) is never NaN: it scores the low end of the
metric's scale (`Metric.floor()`, from the declared `score_range`), so that a system cannot raise its
mean by answering nothing where a model has no opinion (docs/robustness.md). `compute` applies
that rule to what `compute_batch` (the metric's own computation) gives; metrics whose own
statistics already give the floor (the word-overlap family) are left as they are, which a test
checks for every registered metric.

A **reply in another script** than the text it answers scores that floor too, on a metric that
declares `floors_other_script`: written mostly outside the Latin alphabet (`text/scripts.py`)
while its context (or, without one, its references) is mostly Latin. Such a metric's models read
English alone, so its number for the reply is noise (a Cyrillic transliteration of a good answer
outscored the answer on a fifth of the probe items), and a user who wrote in Latin letters is
not answered by it. Text in one other script throughout is left to the English-only warning: the
rule judges a mismatch, not a language. Its signature says `script:floor`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Literal, Sequence

import numpy as np

from ..errors import DialevalError
from ..text.scripts import foreign_script
from ..version import __version__

REFS_MODES = ("multi", "max", "mean")


class Batch:
    """Hypotheses and references of one evaluated set, with a memo for shared work.

    Several metrics often need the same derived data (tokens, n-gram counts); `memo` computes
    each once per batch. `pairs()` gives the single-reference view used by `max` and `mean`.
    """

    def __init__(self, hyps: Sequence[str], refs: Sequence[Sequence[str]],
                 contexts: Sequence[Sequence[str]] | None = None, root: "Batch | None" = None,
                 item_of_row: np.ndarray | None = None, samples: Sequence[Any] | None = None,
                 corpus: dict[Any, Any] | None = None):
        if len(hyps) != len(refs):
            raise DialevalError(f"{len(hyps)} hypotheses but {len(refs)} reference lists")
        self.hyps = list(hyps)
        self.refs = [list(r) for r in refs]
        self.contexts = [list(c) for c in contexts] if contexts is not None else [[] for _ in self.hyps]
        self.root = root if root is not None else self
        self.item_of_row = item_of_row
        self.samples = list(samples) if samples is not None else None  # full Samples, if a metric needs more
        # merged first-pass states of the whole evaluated set, by `Metric.corpus_pass_key()`
        self.corpus: dict[Any, Any] = corpus if corpus is not None else (root.corpus if root is not None else {})
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
            return _PairsBatch(self, np.repeat(np.arange(len(self.hyps)), counts))
        return self.memo("__pairs__", build)


class _PairsBatch(Batch):
    """`Batch.pairs()`: its text lists (22,000 rows for 2,000 samples with 11 references) are
    built on first use only, since metrics that work on the root's tokens (the compiled
    word-overlap kernel) never read them."""

    def __init__(self, parent: Batch, rows: np.ndarray):
        self._parent = parent
        self.root = parent.root
        self.item_of_row = rows
        self.corpus = parent.root.corpus
        self._memo = {}
        self._lists: dict[str, list] = {}

    def __len__(self) -> int:
        return len(self.item_of_row)

    def _list(self, name: str) -> list | None:
        if name not in self._lists:
            parent, rows = self._parent, self.item_of_row.tolist()
            if name == "refs":
                value = [[r] for rs in parent.refs for r in rs]
            elif name == "samples":
                value = [parent.samples[i] for i in rows] if parent.samples is not None else None
            else:
                source = parent.hyps if name == "hyps" else parent.contexts
                value = [source[i] for i in rows]
            self._lists[name] = value
        return self._lists[name]

    hyps = property(lambda self: self._list("hyps"))
    refs = property(lambda self: self._list("refs"))
    contexts = property(lambda self: self._list("contexts"))
    samples = property(lambda self: self._list("samples"))


@dataclass(frozen=True)
class Signature:
    """How a number was made, printed like sacreBLEU's: `name|key:value|...|version:x`."""

    metric: str
    options: tuple[tuple[str, Any], ...] = ()

    def __str__(self) -> str:
        parts = [self.metric] + [f"{k}:{_fmt_opt(v)}" for k, v in self.options]
        parts.append(f"version:{__version__}")
        return "|".join(parts)


def without_fields(signature: str, *keys: str) -> str:
    """`signature` (as `str(Signature)` prints it) without its entries named `keys`: what it read
    before a rule that adds them existed, so that a record made then compares with one made now."""
    drop = tuple(f"{key}:" for key in keys)
    return "|".join(part for part in signature.split("|") if not part.startswith(drop))


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
    # the declared mergeable state: a key of `STATE_KINDS` (see the module doc); None is "sum",
    # or "concat" for a subclass that overrides `reduce` (plug-ins written before declarations)
    state_kind: ClassVar[str | None] = None
    # a sample without context has no score (NaN), as one without references for needs_references
    needs_context: ClassVar[bool] = False
    # (low, high) of the sentence score, None for an end without a bound; `floor()` (what a blank
    # response scores) is the low end. A metric with an unbounded low end overrides `floor()`.
    score_range: ClassVar[tuple[float | None, float | None] | None] = None
    # the model only knows English text: a response in another script gets a warning (once a run)
    english_only: ClassVar[bool] = False
    # its own computation already gives a blank response its floor (a composition of metrics
    # that do): the rule leaves it alone, so its values stay independent of batch shapes
    floor_is_native: ClassVar[bool] = False
    # a reply in another script than the text it answers scores the floor (see the module doc)
    floors_other_script: ClassVar[bool] = False

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

    def corpus_from_summed_rows(self, totals: np.ndarray) -> np.ndarray:
        """`corpus_from_stats` of each row of `totals` ((R, k) summed statistics, one per
        resample): what `compare` and `report` call thousands of times. A metric with a
        vectorised form overrides it (BLEU)."""
        return np.array([self.corpus_from_stats(row) for row in np.atleast_2d(totals)], dtype=np.float64)

    # -- corpus-wide first pass (optional; CIDEr's document frequencies) ----------------------
    def corpus_pass_key(self) -> Any:
        """A hashable key naming the first-pass state this metric needs, or None (no first pass).
        Metrics whose states are the same (CIDEr and CIDEr-D with one tokenizer) share a key,
        so the pass runs once for both."""
        return None

    def corpus_pass_state(self, batch: "Batch") -> Any:
        """First-pass state of one shard of an evaluated set (its references, usually)."""
        raise NotImplementedError

    # A first-pass state class with `merge(other)`, `to_arrays()` and a `from_arrays(arrays)`
    # classmethod (document frequencies, say) makes the three methods below work unchanged.
    corpus_pass_type: ClassVar[type | None] = None

    def merge_corpus_pass(self, a: Any, b: Any) -> Any:
        """Merge two first-pass states; must be associative so that any sharding agrees."""
        if self.corpus_pass_type is None:
            raise NotImplementedError
        return a.merge(b)

    def corpus_pass_arrays(self, state: Any) -> dict[str, np.ndarray]:
        """A merged first-pass state as named arrays, exactly, so that `--resume` restores it
        from the checkpoint instead of reading the input again. Optional: without it a resumed
        run redoes the first pass (same numbers, more time)."""
        if self.corpus_pass_type is None:
            raise NotImplementedError
        return state.to_arrays()

    def corpus_pass_from_arrays(self, arrays: dict[str, np.ndarray]) -> Any:
        """The state `corpus_pass_arrays` wrote."""
        if self.corpus_pass_type is None:
            raise NotImplementedError
        return self.corpus_pass_type.from_arrays(arrays)

    # -- shared machinery -------------------------------------------------------------------
    def signature(self) -> Signature:
        opts: list[tuple[str, Any]] = []
        if self.needs_references:
            opts.append(("refs", self.refs_mode))
        opts.append(("tok", self.tokenizer))
        opts.extend(self.signature_options())
        opts.extend(f for f in self.rule_fields() if f not in opts)
        return Signature(self.name, tuple(opts))

    def rule_fields(self) -> list[tuple[str, Any]]:
        """The signature's fields of the rules `compute` applies beyond the blank one (after the
        metric's own options; a model-backed metric puts them before its runtime fields, which
        come last)."""
        return [SCRIPT_FIELD] if self.floors_other_script else []

    def floor(self) -> float | None:
        """What a blank response scores: the low end of `score_range` (None: the rule does not apply,
        for a plug-in that declares no scale)."""
        low = self.score_range[0] if isinstance(self.score_range, tuple) else None
        return None if low is None else float(low)

    def compute(self, batch: Batch) -> MetricOutput:
        """The metric's output on `batch`, blank responses (and, where the metric says so,
        replies in another script) at the floor (see the module doc)."""
        return apply_script_rule(self, batch, apply_blank_rule(self, batch, self.compute_batch(batch)))

    def compute_batch(self, batch: Batch) -> MetricOutput:
        """The metric's own computation (what a family overrides)."""
        if self.refs_mode == "multi" or not self.needs_references:
            stats = np.asarray(self.multi_stats(batch), dtype=np.float64)
            sentence = np.asarray(self.sentence_from_stats(stats), dtype=np.float64)
            if self.needs_references:
                no_refs = batch.memo("no-refs", lambda: np.fromiter((not r for r in batch.refs), dtype=bool,
                                                                    count=len(batch)))
                if no_refs.any():  # no reference, no reference-based score (NaN, not 0)
                    sentence = sentence.copy()
                    sentence[no_refs] = np.nan
                    if self.corpus_from_summed_stats:
                        stats = stats.copy()
                        stats[no_refs] = np.nan
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

    # -- how a system's value is made from its score rows ---------------------------------------
    # `compare`, `report` and `correlate --level system` read this declaration from the class,
    # without building the metric (building may load a model), and rebuild each system's value
    # as `score` prints it (`meta.measures.measures_from_rows`):
    # - "mean": the mean of the rows' sentence scores (most metrics);
    # - "summed-stats": `corpus_from_stats` of the summed statistics rows that
    #   `score --with-stats` writes (corpus BLEU, METEOR with refs_mode multi); the metric is built
    #   for its reducer, so it must build without a model;
    # - "needs-rows": recomputed from the rows' responses by the metric itself
    #   (`rows_table`), as diversity needs the n-gram types of all a system's responses.
    SYSTEM_VALUES: ClassVar[tuple[str, ...]] = ("mean", "summed-stats", "needs-rows")

    @classmethod
    def system_value(cls, refs_mode: str = "multi") -> str:
        """How a system's value comes from its score rows, one of `SYSTEM_VALUES` (see above);
        `refs_mode` is the one the scores were made with (from their signature)."""
        if cls.corpus_from_summed_stats and (refs_mode == "multi" or not cls.needs_references):
            return "summed-stats"
        return "mean"

    def rows_table(self, responses: Sequence[str]) -> Any:
        """For `system_value() == "needs-rows"`: an object over the rows' `responses` with
        `value(idx)` (the system value of the responses `idx`, exactly as `score` gives it),
        `weighted(idx, weights)` ((R,) values of those responses taken `weights[r, j]` times
        each, vectorised: the approximate-randomization swaps) and `row_keys` ((n,) floats,
        equal for two responses that count the same)."""
        raise NotImplementedError

    # -- mergeable state ----------------------------------------------------------------------
    def reduction(self) -> str:
        """The kind of this metric's state (`state_kind`, or its default; see the module doc)."""
        if self.state_kind is not None:
            return self.state_kind
        return "concat" if type(self).reduce is not Metric.reduce else "sum"

    def _summed_rows(self) -> bool:
        """Whether this instance's corpus value reduces summed statistics rows: the one rule,
        `system_value`, asked with the reference mode it was built with."""
        return self.system_value(self.refs_mode) == "summed-stats"

    def shard_state(self, batch: Batch, out: MetricOutput) -> "MetricState":
        """The state of the declared kind that one shard (`batch`, scored as `out`) contributes.
        The row kinds come from the statistics rows; a metric of another kind overrides this."""
        return self.partial_state(out.stats)

    def partial_state(self, stats: np.ndarray) -> "MetricState":
        """The "sum" or "concat" state of some statistics rows (one shard of an evaluated set)."""
        stats = np.asarray(stats, dtype=np.float64)
        kind = self.reduction()
        if kind == "concat":
            return MetricState("concat", len(stats), stats)
        if kind != "sum":
            raise NotImplementedError(f"{self.name}: a {kind!r} state is not made from statistics "
                                      "rows; the metric gives `shard_state`")
        if self._summed_rows():   # rows with NaN (no references) take no part; n counts the others
            valid = stats[~np.isnan(stats).any(axis=1)] if stats.ndim == 2 else stats
            return MetricState("sum", len(valid), valid.sum(axis=0))
        return MetricState("sum", len(stats), np.nansum(stats, axis=0))

    def corpus_from_state(self, state: "MetricState") -> float:
        """Corpus value of a (merged) state; for the row kinds, `reduce` of all its rows. A metric
        of another kind overrides this."""
        if state.kind == "concat":
            return self.reduce(state.value)
        if state.kind != "sum":
            raise NotImplementedError(f"{self.name}: no corpus value for a {state.kind!r} state")
        if state.n == 0:
            return math.nan
        total = state.value
        if self._summed_rows():
            return self.corpus_from_stats(total)
        return float(total[0] / total[1]) if total[1] else math.nan


def blank_rows(batch: Batch) -> np.ndarray:
    """Rows whose response is empty or whitespace only."""
    return batch.memo("blank", lambda: np.fromiter((not h.strip() for h in batch.hyps), dtype=bool,
                                                   count=len(batch)))


def undefined_reasons(metric: "Metric", batch: Batch) -> dict[str, np.ndarray]:
    """Why rows cannot be scored whatever the response, reason -> rows: "no references" for a
    reference-based metric, "no context" for a context-based one (in that order)."""
    out: dict[str, np.ndarray] = {}
    if metric.needs_references:
        out["no references"] = batch.memo("no-live-refs", lambda: np.fromiter(
            (not any(r.strip() for r in rs) for rs in batch.refs), dtype=bool, count=len(batch)))
    if metric.needs_context:
        out["no context"] = batch.memo("no-context", lambda: np.fromiter(
            (not any(t.strip() for t in c) for c in batch.contexts), dtype=bool, count=len(batch)))
    return out


def undefined_rows(metric: "Metric", batch: Batch) -> np.ndarray:
    """Rows the metric cannot score whatever the response (any of `undefined_reasons`)."""
    out = np.zeros(len(batch), dtype=bool)
    for rows in undefined_reasons(metric, batch).values():
        out |= rows
    return out


SCRIPT_FIELD = ("script", "floor")


def _mostly_latin(text: str) -> bool:
    """`text` has letters, and most of them are Latin."""
    return any(c.isalpha() for c in text) and (text.isascii() or foreign_script(text) is None)


def in_other_script(response: str, context: Sequence[str], refs: Sequence[str]) -> bool:
    """Whether `response` is written mostly in another script than Latin while the text it
    answers (its context's turns, or else its references) is mostly Latin."""
    if response.isascii() or foreign_script(response) is None:
        return False
    answered = " ".join(context)
    if not any(c.isalpha() for c in answered):
        answered = " ".join(refs)
    return _mostly_latin(answered)


def other_script_rows(batch: Batch) -> np.ndarray:
    """The rows of `batch` `in_other_script`."""
    return batch.memo("other-script", lambda: np.fromiter(
        (in_other_script(h, c, r) for h, c, r in zip(batch.hyps, batch.contexts, batch.refs)),
        dtype=bool, count=len(batch)))


def apply_blank_rule(metric: "Metric", batch: Batch, out: MetricOutput) -> MetricOutput:
    """`out` with every blank response that the metric could otherwise score set to its floor.
    Metrics that reduce summed statistics (corpus BLEU, METEOR) keep their own rows: their
    statistics of a blank response already give the floor and the reference length still counts."""
    if metric.floor_is_native or not len(batch):
        return out
    return _at_floor(metric, batch, out, blank_rows(batch))


def apply_script_rule(metric: "Metric", batch: Batch, out: MetricOutput) -> MetricOutput:
    """`out` with every reply in another script than the text it answers (`other_script_rows`)
    set to the floor, for a metric that declares `floors_other_script`. Unlike the blank rule it
    also sets a composition's rows (`floor_is_native`): members without the rule (`sent_cosine`
    in `compose_ref`) keep such a reply above the composition's floor."""
    if not metric.floors_other_script or not len(batch):
        return out
    return _at_floor(metric, batch, out, other_script_rows(batch))


def _at_floor(metric: "Metric", batch: Batch, out: MetricOutput, rows: np.ndarray) -> MetricOutput:
    """`out` with `rows` (those the metric can score at all) set to the metric's floor."""
    floor = metric.floor()
    if floor is None or metric._summed_rows():
        return out
    if not rows.any():
        return out
    rows = rows & ~undefined_rows(metric, batch)
    if not rows.any() or np.all(out.sentence[rows] == floor) or np.ndim(out.stats) != 2 or out.stats.shape[1] != 2:
        return out   # (a plug-in whose rows are not (score, 1) pairs keeps its own rule)
    sentence = np.array(out.sentence, dtype=np.float64)
    sentence[rows] = floor
    stats = mean_stats(sentence)
    corpus = metric.reduce(stats) if metric.reduction() in ROW_KINDS else out.corpus
    return MetricOutput(out.name, sentence, stats, corpus, out.signature, out.extra)


def scored_rows(state: "MetricState", metric: "Metric") -> int:
    """How many rows of a (merged) state have a score."""
    value = state.value
    if state.kind == "sum" and not metric._summed_rows() and value is not None and len(value) == 2:
        return int(round(value[1]))
    if state.kind == "concat" and value is not None and len(value):
        rows = value if value.ndim == 2 else value[:, None]
        return int((~np.isnan(rows).any(axis=1)).sum())
    return state.n


class StateKind:
    """How one kind of state merges and is written.

    `merge(a, b)` is b's shard appended to a's; the engine folds shards in input order whatever
    the backend, so a kind need not be commutative, and float sums come out the same bits on
    every run. `dump` / `load` are the checkpoint's form of a value (JSON-safe and exact: floats
    round-trip through repr), so that `--resume` gives the uninterrupted run's numbers."""

    name: ClassVar[str] = ""

    def merge(self, a: Any, b: Any) -> Any:
        raise NotImplementedError

    def dump(self, value: Any) -> dict[str, Any]:
        raise NotImplementedError

    def load(self, data: dict[str, Any]) -> Any:
        raise NotImplementedError


STATE_KINDS: dict[str, StateKind] = {}


def register_state_kind(kind: "type[StateKind] | StateKind") -> Any:
    """Make a state kind known by its `name` (usable as a class decorator): a metric declares it
    with `state_kind`, and checkpoints name it. A name is registered once."""
    instance = kind() if isinstance(kind, type) else kind
    if not instance.name:
        raise DialevalError("a state kind needs a name")
    have = STATE_KINDS.get(instance.name)
    if have is not None and type(have) is not type(instance):
        raise DialevalError(f"state kind {instance.name!r} is registered already ({type(have).__name__})")
    STATE_KINDS[instance.name] = instance
    return kind


def state_kind(name: str) -> StateKind:
    try:
        return STATE_KINDS[name]
    except KeyError:
        raise DialevalError(f"unknown state kind {name!r} (known: {', '.join(STATE_KINDS)}); "
                            "the metric that declares it registers it") from None


@register_state_kind
class SumState(StateKind):
    """Column sums of statistics rows (a float array)."""

    name = "sum"

    def merge(self, a, b):
        return a + b

    def dump(self, value):
        return {"total": [float(v) for v in value]}

    def load(self, data):
        return np.asarray(data["total"], dtype=np.float64)


@register_state_kind
class ConcatState(StateKind):
    """The statistics rows themselves, for a corpus value that no sum gives (a median)."""

    name = "concat"

    def merge(self, a, b):
        return np.concatenate([a, b])

    def dump(self, value):
        return {"rows": np.asarray(value, dtype=np.float64).tolist(),
                "width": int(value.shape[1]) if value.ndim == 2 else 0}

    def load(self, data):
        return np.asarray(data["rows"], dtype=np.float64).reshape(-1, int(data.get("width", 0)))


@register_state_kind
class CountTable(StateKind):
    """Key (a tuple of strings: an n-gram) -> integer count. Merging is exact: a float sum could
    not tell a type seen in two shards from two types."""

    name = "counts"

    def merge(self, a, b):
        merged = dict(a)
        for key, c in b.items():
            merged[key] = merged.get(key, 0) + c
        return merged

    def dump(self, value):
        return {"counts": [[list(k), int(c)] for k, c in value.items()]}

    def load(self, data):
        return {tuple(k): int(c) for k, c in data["counts"]}


ROW_KINDS = ("sum", "concat")   # the kinds made from statistics rows (`Metric.partial_state`)


@dataclass
class MetricState:
    """What a shard contributes to a corpus value: its row count `n` and a `value` of a declared
    kind (`STATE_KINDS`). `merge` appends shards in the order given; the engine always merges in
    input order, so a run's numbers do not depend on scheduling."""

    kind: str
    n: int
    value: Any = None

    def merge(self, other: "MetricState") -> "MetricState":
        if self.kind != other.kind:
            raise DialevalError(f"cannot merge a {self.kind!r} state with a {other.kind!r} state")
        if other.n == 0:
            return self
        if self.n == 0:
            return other
        return MetricState(self.kind, self.n + other.n, state_kind(self.kind).merge(self.value, other.value))

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form, for resumable checkpoints."""
        return {"kind": self.kind, "n": self.n, **state_kind(self.kind).dump(self.value)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "MetricState":
        return cls(data["kind"], int(data["n"]), state_kind(data["kind"]).load(data))


def mean_stats(sentence: np.ndarray) -> np.ndarray:
    """(score, 1) rows, or (0, 0) for a sample that could not be scored (NaN)."""
    ok = ~np.isnan(sentence)
    return np.stack([np.where(ok, sentence, 0.0), ok.astype(np.float64)], axis=1)


def reduce_pairs(pair_scores: np.ndarray, item_of_row: np.ndarray, n_items: int, mode: str) -> np.ndarray:
    """Per-item max or mean of single-reference scores over the references that could be scored
    (a pair is NaN when its reference has nothing the metric reads); NaN for an item without one.
    One unreadable reference among several leaves the item scored by the others, as `multi` does."""
    out = np.full(n_items, np.nan)
    if len(pair_scores) == 0:
        return out
    counts = np.bincount(item_of_row, minlength=n_items)
    has = counts > 0
    if mode == "max":
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        out[has] = np.fmax.reduceat(pair_scores, starts[has])     # NaN only where every pair is
    else:
        ok = ~np.isnan(pair_scores)
        sums = np.bincount(item_of_row, weights=np.where(ok, pair_scores, 0.0), minlength=n_items)
        scored = np.bincount(item_of_row, weights=ok.astype(np.float64), minlength=n_items)
        some = scored > 0
        out[some] = sums[some] / scored[some]
    return out
