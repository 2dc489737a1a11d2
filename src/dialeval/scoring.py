"""Scoring: samples in, per-sample / per-system / corpus scores with signatures out.

Each system's samples are one evaluated set (a `Batch`), as the reference implementations
score each system's output file on its own: corpus-level quantities such as CIDEr's document
frequencies come from that set. The overall corpus value of a metric reduces the statistics of
all samples together (`Metric.reduce`).
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

import numpy as np

from .data.readers import from_records
from .data.sample import Sample
from .errors import DialevalError
from .metrics.base import Batch, Metric
from .metrics.registry import build_metric

ALL_SYSTEMS = "all"


@dataclass
class ScoreResult:
    samples: list[Sample]
    metrics: list[str]
    sentence: dict[str, np.ndarray]                 # metric -> (n,)
    corpus: dict[str, float]                        # metric -> overall corpus value
    systems: dict[str, dict[str, float]]            # system -> metric -> corpus value of its samples
    signatures: dict[str, str]
    stats: dict[str, np.ndarray] = field(default_factory=dict)

    def records(self) -> Iterable[dict[str, Any]]:
        """Per-sample output rows: id, system, scores, and the input's ratings/context/meta."""
        for i, sample in enumerate(self.samples):
            row: dict[str, Any] = {"id": sample.id, "system": sample.system,
                                   "scores": {m: _clean(self.sentence[m][i]) for m in self.metrics}}
            if sample.ratings:
                row["ratings"] = sample.ratings
            if sample.context:
                row["context"] = sample.context
            if sample.meta:
                row["meta"] = sample.meta
            yield row

    def summary(self) -> dict[str, Any]:
        return {
            "metrics": {m: {"corpus": _clean(self.corpus[m]), "signature": self.signatures[m]}
                        for m in self.metrics},
            "systems": {s: {m: _clean(v) for m, v in vals.items()} for s, vals in self.systems.items()},
        }


def _clean(value: float) -> float | None:
    value = float(value)
    return value if math.isfinite(value) else None


def group_by_system(samples: Sequence[Sample]) -> dict[str, list[int]]:
    groups: dict[str, list[int]] = {}
    for i, sample in enumerate(samples):
        groups.setdefault(sample.system if sample.system is not None else ALL_SYSTEMS, []).append(i)
    return groups


def score(samples: Iterable[Any], metrics: Sequence[str | Metric], *, refs_mode: str = "multi",
          tokenizer: str | None = None, progress: bool | None = None,
          **metric_options: Any) -> ScoreResult:
    """Score `samples` (Samples, dicts or a DataFrame) with `metrics` (names or Metric objects).

    `refs_mode` and `tokenizer` apply to every metric (None keeps each metric's native
    tokenizer); other keyword options go to the metrics that accept them.
    """
    from .metrics.registry import check_metric_options

    check_metric_options(metric_options)
    samples = from_records(samples)
    if not samples:
        raise DialevalError("no samples to score")
    built: list[Metric] = [m if isinstance(m, Metric) else
                           build_metric(m, refs_mode=refs_mode, tokenizer=tokenizer, **metric_options)
                           for m in metrics]
    names = [m.name for m in built]
    if len(set(names)) != len(names):
        raise DialevalError(f"metric listed twice: {names}")
    groups = group_by_system(samples)
    n = len(samples)
    sentence = {m.name: np.full(n, np.nan) for m in built}
    stats: dict[str, np.ndarray] = {}
    systems: dict[str, dict[str, float]] = {s: {} for s in groups}
    signatures = {m.name: str(m.signature()) for m in built}

    show = sys.stderr.isatty() if progress is None else progress
    steps = [(s, m) for s in groups for m in built]
    bar = None
    if show and len(steps) > 1:
        from tqdm import tqdm

        bar = tqdm(total=len(steps), unit="metric", file=sys.stderr, leave=False)
    for system, rows in groups.items():
        batch = Batch([samples[i].response for i in rows], [samples[i].references for i in rows],
                      [samples[i].context for i in rows], samples=[samples[i] for i in rows])
        idx = np.asarray(rows)
        for metric in built:
            if bar is not None:
                bar.set_description(f"{system}: {metric.name}")
            out = metric.compute(batch)
            sentence[metric.name][idx] = out.sentence
            if metric.name not in stats:
                stats[metric.name] = np.full((n, out.stats.shape[1]), np.nan)
            stats[metric.name][idx] = out.stats
            systems[system][metric.name] = out.corpus
            if bar is not None:
                bar.update(1)
    if bar is not None:
        bar.close()
    corpus = {m.name: m.reduce(stats[m.name]) for m in built}
    return ScoreResult(samples=samples, metrics=names, sentence=sentence, corpus=corpus,
                       systems=systems, signatures=signatures, stats=stats)
