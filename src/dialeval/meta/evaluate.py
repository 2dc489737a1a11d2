"""Meta-evaluation runs: scored samples in, correlation and comparison tables out.

The inputs are what `dialeval score -o` writes (one row per sample with `scores`,
`ratings`, `system`, `meta`), or the same data in memory. This module only arranges the
statistics of `correlation`, `significance` and `agreement`; the CLI prints its rows.
"""

from __future__ import annotations

import itertools
import math
import os
import warnings
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

import numpy as np

from ..errors import DialevalError, InputError
from .correlation import METHODS, FewPointsWarning, correlate, level_points
from .human import human_value
from .significance import compare

DIALOGUE_ID = "dialogue_id"


def read_scores(path: str | os.PathLike) -> list[dict]:
    """Rows of a `dialeval score -o` file, each checked for a `scores` object."""
    from ..data.readers import iter_json_lines

    rows = []
    for number, row in iter_json_lines(path):
        if not isinstance(row, dict) or not isinstance(row.get("scores"), dict):
            raise InputError("missing (not a `dialeval score` output row)", path=str(path),
                             line=number, field="scores")
        ratings = row.get("ratings") or {}
        if not isinstance(ratings, dict):
            raise InputError("expected an object quality -> scores", path=str(path), line=number,
                             field="ratings")
        row["_line"] = number
        rows.append(row)
    if not rows:
        raise InputError("no rows", path=str(path))
    return rows


def load_rated(name_or_file: str, path: str | os.PathLike | None = None, *,
               exclude_systems: Sequence[str] = ()):
    """What `evaluate` and `agreement` judge: a public data set (a loader name and its folder),
    or the user's own rated JSONL / JSON / CSV / TSV file, read by the reader every command
    uses (`ratings` objects, or `rating:<quality>` columns; a rater is a position in the lists).
    A file's qualities are the ones it rates; its level is turn (`--level` asks for more)."""
    from ..data.datasets import DATASETS, load_dataset
    from ..data.datasets.base import Dataset
    from ..data.readers import read_samples
    from ..data.sample import DatasetInfo

    if path is not None or name_or_file in DATASETS:
        if path is None:
            raise DialevalError(f"{name_or_file}: give the data set's folder too "
                                f"(dialeval evaluate {name_or_file} FOLDER)")
        kwargs = {"exclude_systems": tuple(exclude_systems)} if exclude_systems else {}
        return load_dataset(name_or_file, path, **kwargs)
    if not os.path.isfile(name_or_file):
        raise DialevalError(f"{name_or_file}: neither a data set loader name (`dialeval datasets` "
                            "lists them) nor a rated JSONL/JSON/CSV/TSV file")
    excluded = set(exclude_systems or ())
    samples = [s for s in read_samples(name_or_file) if s.system not in excluded]
    if not samples:
        raise DialevalError(f"{name_or_file}: no samples left")
    qualities = list(dict.fromkeys(q for s in samples for q in s.ratings))
    if not qualities:
        raise InputError("no human ratings (a `ratings` object per row, or `rating:<quality>` "
                         "columns)", path=os.fspath(name_or_file))
    info = DatasetInfo(name=os.path.basename(os.fspath(name_or_file)),
                       qualities={q: "rated in the file" for q in qualities}, level="turn",
                       description=f"rated file {os.fspath(name_or_file)}")
    return Dataset(info, samples)


def columns(rows: Sequence[dict], quality: str, metrics: Sequence[str] | None = None):
    """(metric -> values, human mean, dialogue ids, systems) from score rows."""
    if metrics is None:
        metrics = list(rows[0]["scores"])
    values = {m: np.array([_float(r["scores"].get(m)) for r in rows]) for m in metrics}
    human = np.array([human_value(r, quality) for r in rows])
    if not np.isfinite(human).any():
        known = sorted({q for r in rows for q in (r.get("ratings") or {})})
        raise DialevalError(f"no sample has human ratings for {quality!r}"
                            + (f"; qualities present: {', '.join(known)}" if known else ""))
    dialogues = [(r.get("meta") or {}).get(DIALOGUE_ID) for r in rows]
    systems = [r.get("system") for r in rows]
    return values, human, dialogues, systems


def _float(v: Any) -> float:
    try:
        return float(v) if v is not None else math.nan
    except (TypeError, ValueError):
        return math.nan


def correlation_rows(values: dict[str, np.ndarray], human: np.ndarray, *, quality: str,
                     levels: Sequence[str] = ("turn",), methods: Sequence[str] = METHODS,
                     dialogues=None, systems=None, n_boot: int = 1000, seed: int = 0,
                     warn=None, measures: dict | None = None) -> list[dict]:
    """One row per (metric, level, method): r, p, CI, n. With `measures` (`systems.Measure`
    per metric), the system level correlates each system's corpus score (`system_level`)."""
    from .system_level import correlate_systems

    rows = []
    for level in levels:
        for metric, x in values.items():
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", FewPointsWarning)
                if level == "system" and measures is not None and metric in measures:
                    results = correlate_systems(measures[metric], human, systems, methods,
                                                n_boot=n_boot, seed=seed)
                else:
                    results = correlate(x, human, methods, level, dialogues=dialogues,
                                        systems=systems, n_boot=n_boot, seed=seed)
            for w in caught:
                if warn is not None and issubclass(w.category, FewPointsWarning):
                    warn(f"{metric}, {quality}: {w.message}")
            for c in results:
                row = {"metric": metric, "quality": quality, **c.to_dict()}
                rows.append(flag_descriptive(row) if level == "system" else row)
    return rows


def flag_descriptive(row: dict, n_systems: int | None = None) -> dict:
    """Mark a system-level row `descriptive_only` (with `descriptive_reason`) when it rests on
    fewer than `system_level.MIN_SYSTEMS` systems: the tables then print its r but no p, CI or
    test (the numbers stay in the row for JSON readers, beside the flag)."""
    from .system_level import descriptive_reason

    why = descriptive_reason(row["n"] if n_systems is None else n_systems)
    row["descriptive_only"] = why is not None
    if why is not None:
        row["descriptive_reason"] = why
    return row


def descriptive_notes(*groups: Sequence[dict]) -> list[str]:
    """The distinct `descriptive_reason`s of some rows, in order: one caveat line each."""
    return list(dict.fromkeys(r["descriptive_reason"] for rows in groups for r in rows
                              if r.get("descriptive_only")))


def comparison_rows(values: dict[str, np.ndarray], human: np.ndarray, *, quality: str,
                    level: str = "turn", method: str = "pearson", dialogues=None, systems=None,
                    n_boot: int = 1000, seed: int = 0, measures: dict | None = None) -> list[dict]:
    """Williams' test and paired bootstrap for every ordered pair of metrics, the one with the
    higher correlation as A (H1: A's correlation is higher). With `measures`, the system level
    compares correlations of the systems' corpus scores."""
    from .system_level import compare_system_level

    def one(a: str, b: str):
        if level == "system" and measures is not None and a in measures and b in measures:
            return compare_system_level(measures[a], measures[b], human, systems, method=method,
                                        n_boot=n_boot, seed=seed, names=(a, b))
        return compare(values[a], values[b], human, method=method, level=level,
                       dialogues=dialogues, systems=systems, n_boot=n_boot, seed=seed, names=(a, b))

    rows = []
    for a, b in itertools.combinations(values, 2):
        c = one(a, b)
        if math.isfinite(c.r_b) and (not math.isfinite(c.r_a) or c.r_b > c.r_a):
            c = one(b, a)
        row = {"quality": quality, **c.to_dict()}
        rows.append(flag_descriptive(row) if level == "system" else row)
    return rows


def system_level_rows(system_values: dict[str, dict[str, float]],
                      system_human: dict[str, float], *, quality: str,
                      methods: Sequence[str] = METHODS) -> list[dict]:
    """Correlation across systems of per-system metric values (e.g. corpus BLEU) with
    per-system human means, for data sets that publish only the means (DSTC6). Without
    per-turn human scores nothing can be resampled, so there is no bootstrap CI."""
    from .correlation import correlation

    names = [s for s in system_human if s in system_values]
    if len(names) < 5:
        warnings.warn(f"system-level correlation over only {len(names)} systems", FewPointsWarning)
    metrics = list(next(iter(system_values.values())))
    y = np.array([system_human[s] for s in names])
    rows = []
    for m in metrics:
        x = np.array([system_values[s][m] for s in names])
        for method in methods:
            r, p = correlation(x, y, method)
            rows.append(flag_descriptive({"metric": m, "quality": quality, "method": method,
                                          "r": r, "p": p, "n": len(names), "ci_low": math.nan,
                                          "ci_high": math.nan, "level": "system", "n_boot": 0,
                                          "seed": None}))
    return rows


def levels_available(rows: Iterable[dict]) -> list[str]:
    rows = list(rows)
    out = ["turn"]
    if all((r.get("meta") or {}).get(DIALOGUE_ID) is not None for r in rows):
        out.append("dialogue")
    if all(r.get("system") is not None for r in rows) and len({r.get("system") for r in rows}) > 1:
        out.append("system")
    return out


@dataclass
class Evaluation:
    """What `evaluate_dataset` found: the data set, its scores, and the meta-evaluation rows."""

    dataset: Any
    result: Any                          # scoring.ScoreResult
    qualities: list[str]
    correlations: list[dict] = field(default_factory=list)
    comparisons: list[dict] = field(default_factory=list)
    extra: dict = field(default_factory=dict)

    def rows(self, with_stats: bool = True) -> list[dict]:
        """Score rows (with statistics rows for corpus BLEU/METEOR) for `compare` and reports."""
        from .measures import score_rows

        return score_rows(self.result, with_stats=with_stats)


def evaluate_dataset(name: str, path: str | os.PathLike, metrics: Sequence[str], *,
                     qualities: Sequence[str] | None = None, levels: Sequence[str] | None = None,
                     methods: Sequence[str] = METHODS, exclude_systems: Sequence[str] = (),
                     refs_mode: str = "multi", tokenizer: str | None = None,
                     compare_metrics: bool = False, compare_method: str = "pearson",
                     n_boot: int = 1000, seed: int = 0, warn=None,
                     **metric_options: Any) -> Evaluation:
    """Load a public data set, score it with `metrics`, and correlate every quality
    (`evaluate_scored` does the last step for a data set already loaded and scored)."""
    from ..data.datasets import load_dataset
    from ..scoring import score

    kwargs = {"exclude_systems": tuple(exclude_systems)} if exclude_systems else {}
    dataset = load_dataset(name, path, **kwargs)
    result = score(dataset.samples, list(metrics), refs_mode=refs_mode, tokenizer=tokenizer,
                   **metric_options)
    return evaluate_scored(dataset, result, qualities=qualities, levels=levels, methods=methods,
                           compare_metrics=compare_metrics, compare_method=compare_method,
                           n_boot=n_boot, seed=seed, warn=warn)


def evaluate_scored(dataset, result, *, qualities: Sequence[str] | None = None,
                    levels: Sequence[str] | None = None, methods: Sequence[str] = METHODS,
                    compare_metrics: bool = False, compare_method: str = "pearson",
                    n_boot: int = 1000, seed: int = 0, warn=None) -> Evaluation:
    """Correlate every quality of a loaded `dataset` with its scores `result`.

    Data sets that publish only system means (DSTC6) are correlated at system level: each
    system's corpus score against its mean (no CI: nothing to resample on the human side).
    Otherwise every level in `levels` (default: the data set's own level) is correlated, and
    with `compare_metrics` every pair of metrics is tested (Williams + paired bootstrap)."""
    qualities = list(qualities or dataset.info.qualities)
    out = Evaluation(dataset=dataset, result=result, qualities=qualities,
                     extra={"dataset": dataset.info.name, "samples": len(dataset.samples),
                            "signatures": result.signatures})
    if dataset.system_ratings:
        for q in qualities:
            human = {s: v[q] for s, v in dataset.system_ratings.items() if q in v}
            out.correlations += system_level_rows(result.systems, human, quality=q,
                                                  methods=methods)
        out.extra["systems"] = result.systems
        return out
    rows = list(result.records())
    levels = list(levels or [dataset.info.level])
    measures = None
    if "system" in levels:
        from .measures import measures_from_rows, score_rows

        measures = measures_from_rows(score_rows(result), list(result.metrics), result.signatures)
    for q in qualities:
        values, human, dialogues, systems = columns(rows, q)
        out.correlations += correlation_rows(values, human, quality=q, levels=levels,
                                             methods=methods, dialogues=dialogues,
                                             systems=systems, n_boot=n_boot, seed=seed, warn=warn,
                                             measures=measures)
        if compare_metrics and len(values) > 1:
            for level in levels:
                out.comparisons += comparison_rows(values, human, quality=q, level=level,
                                                   method=compare_method, dialogues=dialogues,
                                                   systems=systems, n_boot=n_boot, seed=seed,
                                                   measures=measures)
    return out


__all__ = ["Evaluation", "load_rated", "evaluate_dataset", "evaluate_scored", "read_scores", "columns", "correlation_rows", "comparison_rows", "system_level_rows",
           "flag_descriptive", "descriptive_notes",
           "level_points", "levels_available"]
