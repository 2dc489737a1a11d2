"""Scoring: samples in, per-sample / per-system / corpus scores with signatures out.

A thin front over the engine (`dialeval.engine`): the samples are cut into shards, metrics
that need a corpus-wide first pass (CIDEr's document frequencies) get it, shards are scored
(here or on Dask) and merged. Each system's samples are one evaluated set, as the reference
implementations score each system's output file on its own: corpus-level quantities such as
CIDEr's document frequencies come from that set, however it is sharded. The overall corpus
value of a metric reduces the statistics of all samples together.
"""

from __future__ import annotations

import sys
import warnings
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

import numpy as np

from .data.readers import from_records
from .data.sample import Sample
from .engine.rows import _clean, output_row  # noqa: F401  (output_row is public here too)
from .errors import DialevalError
from .metrics.base import Metric

ALL_SYSTEMS = "all"


class DialevalNote(UserWarning):
    """Something the user should know about a run that is not an error (shown once)."""


@dataclass
class ScoreResult:
    samples: list[Sample]
    metrics: list[str]
    sentence: dict[str, np.ndarray]                 # metric -> (n,)
    corpus: dict[str, float]                        # metric -> overall corpus value
    systems: dict[str, dict[str, float]]            # system -> metric -> corpus value of its samples
    signatures: dict[str, str]
    stats: dict[str, np.ndarray] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    scored: dict[str, dict[str, int]] = field(default_factory=dict)   # system -> metric -> scored rows

    def __repr__(self) -> str:
        """A summary, not the fields: the dataclass's own repr printed every sample (80 KB for
        a small set) where a notebook user wanted to see what came back."""
        corpus = ", ".join(f"{m}={self.corpus[m]:.4f}" for m in self.metrics)
        systems = list(self.systems)
        shown = ", ".join(map(repr, systems[:5])) + (f", ... ({len(systems)} in all)" if len(systems) > 5 else "")
        return (f"<ScoreResult: {len(self.samples):,} samples, {len(systems)} system"
                f"{'s' if len(systems) != 1 else ''} [{shown}]; corpus {corpus or 'none'}; "
                ".sentence, .systems, .records(), .to_pandas()>")

    def records(self) -> Iterable[dict[str, Any]]:
        """Per-sample output rows: id, system, response, references, scores, and the input's
        ratings/context/meta (the rows `dialeval score -o` writes)."""
        for i, sample in enumerate(self.samples):
            yield output_row(sample, {m: self.sentence[m][i] for m in self.metrics})

    def summary(self) -> dict[str, Any]:
        return {
            "metrics": {m: {"corpus": _clean(self.corpus[m]), "signature": self.signatures[m]}
                        for m in self.metrics},
            "systems": {s: {m: _clean(v) for m, v in vals.items()} for s, vals in self.systems.items()},
            "rows": {s: len(rows) for s, rows in group_by_system(self.samples).items()},
            "scored": self.scored,
        }

    def to_pandas(self):
        """One row per sample: id, system, response, references, one column per metric (NaN
        where a metric has no value), and a `rating:<quality>` column per rated quality
        (annotators' mean), the column naming the CSV reader accepts."""
        from .optional import require

        pd = require("pandas", ".to_pandas()", "report")
        frame = pd.DataFrame({
            "id": [s.id for s in self.samples],
            "system": [s.system for s in self.samples],
            "response": [s.response for s in self.samples],
            "references": [list(s.references) for s in self.samples],
        })
        for m in self.metrics:
            frame[m] = np.asarray(self.sentence[m], dtype=np.float64)
        qualities = sorted({q for s in self.samples for q in s.ratings})
        for q in qualities:
            frame[f"rating:{q}"] = [s.human(q) for s in self.samples]
        return frame


def group_by_system(samples: Sequence[Sample]) -> dict[str, list[int]]:
    groups: dict[str, list[int]] = {}
    for i, sample in enumerate(samples):
        groups.setdefault(sample.system if sample.system is not None else ALL_SYSTEMS, []).append(i)
    return groups


def score(samples: Iterable[Any], metrics: Sequence[str | Metric] | str | None = None, *, refs_mode: str = "multi",
          tokenizer: str | None = None, progress: bool | None = None, backend: str = "local",
          workers: int | None = None, scheduler: str | None = None, chunk_size: int | None = None,
          **metric_options: Any) -> ScoreResult:
    """Score `samples` with `metrics`; returns a `ScoreResult` (`.sentence`, `.corpus`,
    `.systems`, `.signatures`, `.records()`, `.to_pandas()`).

    samples: `Sample`s, dicts (`response`, `references`, `context`, `id`, `system`, `ratings`)
        or a pandas DataFrame with those columns (`rating:<quality>` columns become ratings).
    metrics: registry names (`dialeval metrics` lists them; `"all"` means every metric that can
        be built with the given options), a comma-separated string of them, or `Metric` objects;
        None: the command line's default list (`dialeval score` without --metrics), so that
        `score(df)` gives what `dialeval score` gives.

    Options for every metric:
        refs_mode: how several references combine: multi (each metric's original rule), max or mean
        tokenizer: one tokenizer for every metric (default: each metric's original)

    Engine options:
        backend: "local" (this process) or "dask" (needs `pip install -e '.[dask]'` in the repository)
        workers: Dask workers of a local cluster (backend "dask")
        scheduler: address of an existing Dask scheduler (backend "dask")
        chunk_size: samples per shard (default 5000); any value gives the same numbers
        progress: show a progress bar (default: when stderr is a terminal)

    Metric options: each metric takes the ones it declares (its constructor's keyword
    parameters); an unknown name is an error that names the closest valid one.
    `help(dialeval.score)` lists every registered option, generated from the registry.

    A sample without references gets NaN from every reference-based metric; when no sample
    has references, a `DialevalNote` warning says so once.
    """
    from .engine import make_backend, make_plan, run_plan
    from .engine.plan import DEFAULT_CHUNK_SIZE

    samples = from_records(samples)
    if not samples:
        raise DialevalError("no samples to score")
    if metrics is None:
        from .metrics.registry import DEFAULT_METRICS   # the CLI's default list too

        metrics = DEFAULT_METRICS
    if isinstance(metrics, str):
        metrics = [m.strip() for m in metrics.split(",") if m.strip()]
    notes: list[str] = []
    plan = make_plan(metrics, refs_mode=refs_mode, tokenizer=tokenizer,
                     chunk_size=chunk_size or DEFAULT_CHUNK_SIZE, notes=notes, **metric_options)
    size = plan.chunk_size

    def shards():
        for start in range(0, len(samples), size):
            yield samples[start:start + size]

    n = len(samples)
    sentence = {name: np.full(n, np.nan) for name in plan.names}
    stats: dict[str, np.ndarray] = {}
    from . import progress as progress_module
    from .progress import Progress, default_mode, ticking

    # the library stays quiet unless on a terminal or asked (progress=True: lines when not a
    # terminal); a command line (`evaluate`, `probe`, ...) asks, as `score` does: a log then gets
    # a line every 15 s instead of minutes of silence
    if progress is None and progress_module.ANNOUNCE:
        progress = True
    mode = default_mode(True) if progress else ("bar" if progress is None and sys.stderr.isatty() else None)
    bar = Progress(n, mode)

    def collect(index, chunk, result, totals):
        start = index * size
        for name in plan.names:
            sentence[name][start:start + result.n] = result.sentence[name]
            rows = result.stats[name]
            if name not in stats:
                stats[name] = np.full((n, rows.shape[1]), np.nan)
            stats[name][start:start + result.n] = rows
        bar.set(min(start + result.n, n))

    engine = make_backend(backend, workers=workers, scheduler=scheduler)
    try:
        with ticking(bar.advance if mode else None):   # nobody watching: shards are not sliced
            totals = run_plan(plan, shards, engine, keep_stats=True, on_shard=collect)
    finally:
        engine.close()
        bar.close()
    from .engine.merge import no_reference_note, unscored_notes

    note = no_reference_note(plan, totals)
    for line in ([note] if note else []) + unscored_notes(plan, totals):
        notes.append(line)
        warnings.warn(line, DialevalNote, stacklevel=3)
    corpus, systems = totals.corpus_values(plan)
    return ScoreResult(samples=samples, metrics=list(plan.names), sentence=sentence, corpus=corpus,
                       systems=systems, signatures=dict(plan.signatures), stats=stats, notes=notes,
                       scored=totals.scored(plan))
