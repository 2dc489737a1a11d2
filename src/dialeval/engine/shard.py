"""The work on one shard (a run of consecutive samples), the same for every backend.

`first_pass_shard` gathers the corpus-pass states (CIDEr's document frequencies) of each
evaluated set (system) in the shard; `score_shard` scores the shard with the merged states and
returns sentence values plus one mergeable `MetricState` per (system, metric), of the kind the
metric declares (`Metric.state_kind`). Both are plain functions of picklable arguments, so the
local loop and Dask workers run exactly this code.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from ..data.sample import Sample
from ..metrics.base import Batch, MetricState
from .plan import Plan

ALL_SYSTEMS = "all"


def system_of(sample: Sample) -> str:
    return sample.system if sample.system is not None else ALL_SYSTEMS


def group_rows(samples: Sequence[Sample]) -> dict[str, list[int]]:
    """Row indices of each system, systems in order of first appearance."""
    groups: dict[str, list[int]] = {}
    for i, sample in enumerate(samples):
        groups.setdefault(system_of(sample), []).append(i)
    return groups


def first_pass_shard(plan: Plan, samples: Sequence[Sample]) -> dict[str, dict[Any, Any]]:
    """system -> corpus-pass key -> state of this shard. Only references are read: the batch's
    hypotheses are placeholders so the pass costs one tokenisation of the references."""
    metrics = plan.metrics()
    out: dict[str, dict[Any, Any]] = {}
    for system, rows in group_rows(samples).items():
        batch = Batch(["x"] * len(rows), [samples[i].references for i in rows])
        out[system] = {key: metrics[i].corpus_pass_state(batch) for key, i in plan.first_pass.items()}
    return out


def merge_first_pass(plan: Plan, acc: dict[str, dict[Any, Any]] | None,
                     part: dict[str, dict[Any, Any]]) -> dict[str, dict[Any, Any]]:
    """Fold one shard's corpus-pass states into `acc` (shards must come in input order)."""
    metrics = plan.metrics()
    acc = {} if acc is None else acc
    for system, states in part.items():
        have = acc.setdefault(system, {})
        for key, state in states.items():
            have[key] = state if key not in have else metrics[plan.first_pass[key]].merge_corpus_pass(have[key], state)
    return acc


@dataclass
class ShardResult:
    """Scores of one shard: sentence values in input order, and per-system mergeable states."""

    n: int
    sentence: dict[str, np.ndarray]
    states: dict[str, dict[str, MetricState]]
    counts: dict[str, int]
    with_refs: int
    stats: dict[str, np.ndarray] | None = None   # per-sample statistics rows, when asked for
    extra: dict[str, Any] = field(default_factory=dict)
    # metric -> system -> reason -> [count, first ids...]: the rows a metric left without a score
    unscored: dict[str, dict[str, dict[str, list]]] = field(default_factory=dict)


def score_shard(plan: Plan, samples: Sequence[Sample], corpus: dict[str, dict[Any, Any]] | None,
                keep_stats: bool = False) -> ShardResult:
    """Score one shard. Tallies the metrics make (out-of-vocabulary counts) travel in
    `extra["tallies"]`, so that the run can report them once, from any backend."""
    from ..progress import collect_tallies

    with collect_tallies() as tallies:
        result = _score_shard(plan, samples, corpus, keep_stats)
    if tallies:
        result.extra["tallies"] = tallies
    return result


def _score_shard(plan: Plan, samples: Sequence[Sample], corpus: dict[str, dict[Any, Any]] | None,
                 keep_stats: bool = False) -> ShardResult:
    from ..progress import tick

    metrics = plan.metrics()
    n = len(samples)
    sentence = {m.name: np.full(n, np.nan) for m in metrics}
    stats: dict[str, np.ndarray] | None = {} if keep_stats else None
    states: dict[str, dict[str, MetricState]] = {}
    counts: dict[str, int] = {}
    unscored: dict[str, dict[str, dict[str, list]]] = {}
    corpus = corpus or {}
    for system, rows in group_rows(samples).items():
        picked = [samples[i] for i in rows]
        batch = Batch([s.response for s in picked], [s.references for s in picked],
                      [s.context for s in picked], samples=picked, corpus=dict(corpus.get(system, {})))
        idx = np.asarray(rows)
        counts[system] = len(rows)
        states[system] = {}
        slices = _Slices(picked, corpus.get(system, {})) if _ticking() else None
        for metric in metrics:
            if slices is not None and metric.corpus_pass_key() is None:
                out = slices.compute(metric, len(metrics))
            else:
                out = metric.compute(batch)
                tick(len(rows) / len(metrics))   # progress within the shard (this process only)
            sentence[metric.name][idx] = out.sentence
            if stats is not None:
                if metric.name not in stats:
                    stats[metric.name] = np.full((n, out.stats.shape[1]), np.nan)
                stats[metric.name][idx] = out.stats
            states[system][metric.name] = metric.shard_state(batch, out)   # of its declared kind
            missing = np.flatnonzero(np.isnan(out.sentence))
            if len(missing):
                unscored.setdefault(metric.name, {})[system] = unscored_reasons(metric, batch, missing)
    english = tuple(m.name for m in metrics if m.english_only)
    if english:
        from ..metrics.base import in_other_script
        from ..progress import tally
        from ..text.scripts import foreign_script

        floored = tuple(m.name for m in metrics if m.english_only and m.floors_other_script)
        for sample in samples:
            script = foreign_script(sample.response)
            if script is None:
                continue
            # a reply answering Latin text scores the floor on the metrics with the script rule;
            # the warning that scores "mean little" is for the others
            if floored and in_other_script(sample.response, sample.context, sample.references):
                tally(("script-floor", script, floored), 1)
                rest = tuple(m for m in english if m not in floored)
            else:
                rest = english
            if rest:
                tally(("script", script, rest), 1)
    with_refs = sum(1 for s in samples if s.references)
    return ShardResult(n=n, sentence=sentence, states=states, counts=counts, with_refs=with_refs,
                       stats=stats, unscored=unscored)


def _ticking() -> bool:
    """Whether someone shows this process's progress (the CLI, or `score(progress=True)`)."""
    from .. import progress

    return progress._TICK is not None


class _Slices:
    """One system's part of a shard scored in consecutive slices of rows, so that progress can
    count rows inside a shard: a metric that needs minutes for a shard (a judge, a large
    encoder) otherwise left the line at "0 of N" until it finished.

    Only what moves the line changes. A metric without a corpus-wide first pass gives every
    row the same value in a slice as in the whole (the engine's sharding rule, held for every
    registered metric by tests/test_engine_shards.py); the slices' outputs are joined row by
    row into the one output the whole part would give, and its state is taken from that, as
    before, so no corpus value is summed in another order. Each metric's first slice is small;
    a metric that would finish the part within `progress.EVERY` seconds then takes the rest at
    once (no cost for the fast ones), a slower one slices of a third of that. Metrics that cut
    the part alike share each slice's batch, and so the work they share through its memo."""

    FIRST = 16

    def __init__(self, samples: Sequence[Sample], corpus: dict[Any, Any]):
        self.samples = samples
        self.corpus = corpus
        self.batches: dict[tuple[int, int], Batch] = {}

    def _batch(self, a: int, b: int) -> Batch:
        if (a, b) not in self.batches:
            part = self.samples[a:b]
            self.batches[(a, b)] = Batch([s.response for s in part], [s.references for s in part],
                                         [s.context for s in part], samples=part, corpus=dict(self.corpus))
        return self.batches[(a, b)]

    def compute(self, metric, n_metrics: int):
        import time

        from ..metrics.base import MetricOutput
        from ..progress import EVERY, tick

        n = len(self.samples)
        outs = []
        start, seconds_per_row = 0, None
        while start < n:
            if seconds_per_row is None:
                size = self.FIRST
            elif (n - start) * seconds_per_row <= EVERY:
                size = n - start
            else:   # a third of a line's interval: each progress line finds the count moved
                size = max(self.FIRST, int(EVERY / 3 / max(seconds_per_row, 1e-9)))
            end = min(n, start + size)
            began = time.perf_counter()
            outs.append(metric.compute(self._batch(start, end)))
            seconds_per_row = (time.perf_counter() - began) / (end - start)
            tick((end - start) / n_metrics)
            start = end
        if len(outs) == 1:
            return outs[0]
        sentence = np.concatenate([o.sentence for o in outs])
        stats = np.concatenate([o.stats for o in outs])
        return MetricOutput(outs[0].name, sentence, stats, metric.reduce(stats), outs[0].signature,
                            outs[0].extra)


UNSCORED_IDS = 5   # ids named per (metric, system, reason)


def unscored_reasons(metric, batch: Batch, missing: np.ndarray) -> dict[str, list]:
    """reason -> [count, first ids] of the rows of `batch` that `metric` left NaN."""
    from ..metrics.base import undefined_reasons

    reasons = undefined_reasons(metric, batch)
    out: dict[str, list] = {}
    for i in missing.tolist():
        reason = next((why for why, rows in reasons.items() if rows[i]), "no value")
        have = out.setdefault(reason, [0])
        have[0] += 1
        if len(have) <= UNSCORED_IDS:
            sample = batch.samples[i] if batch.samples is not None else None
            have.append(str(sample.id) if sample is not None and sample.id is not None else f"#{i}")
    return out
