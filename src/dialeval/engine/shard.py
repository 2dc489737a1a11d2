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
        for metric in metrics:
            out = metric.compute(batch)
            sentence[metric.name][idx] = out.sentence
            if stats is not None:
                if metric.name not in stats:
                    stats[metric.name] = np.full((n, out.stats.shape[1]), np.nan)
                stats[metric.name][idx] = out.stats
            states[system][metric.name] = metric.shard_state(batch, out)   # of its declared kind
            missing = np.flatnonzero(np.isnan(out.sentence))
            if len(missing):
                unscored.setdefault(metric.name, {})[system] = unscored_reasons(metric, batch, missing)
            tick(len(rows) / len(metrics))   # progress within the shard (this process only)
    english = tuple(m.name for m in metrics if m.english_only)
    if english:
        from ..progress import tally
        from ..text.scripts import foreign_script

        for sample in samples:
            script = foreign_script(sample.response)
            if script is not None:
                tally(("script", script, english), 1)
    with_refs = sum(1 for s in samples if s.references)
    return ShardResult(n=n, sentence=sentence, states=states, counts=counts, with_refs=with_refs,
                       stats=stats, unscored=unscored)


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
