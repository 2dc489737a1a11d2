"""A system's value from score rows, as `score` prints it: one `Measure` per metric.

A system's corpus score is recomputed on every resample from the per-sample statistics rows,
so corpus BLEU is BLEU of the *summed* n-gram statistics of the resampled items, never a mean
of sentence BLEU. Metrics whose corpus score is the mean of sentence scores (ROUGE-L, CIDEr,
embedding metrics, ...) resample those sentence scores. Each metric declares which of these it
is (`Metric.system_value`, read from its class without building it, so no model is loaded);
distinct-n and entropy-n declare "needs-rows": their system values are recomputed from the rows'
responses (`RowsMeasure`, which has no bootstrap CI but an approximate-randomization test).
Nothing here names a metric family: what differs between metrics is in their declarations.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from ..errors import DialevalError

Reducer = Callable[[np.ndarray], np.ndarray]   # (R, k) summed statistics -> (R,) scores


# --- statistics rows ---------------------------------------------------------------------------

def signature_option(signature: str | None, key: str) -> str | None:
    """The value of `key:value` in a signature (`name|key:value|...`), or None."""
    for part in (signature or "").split("|")[1:]:
        k, sep, value = part.partition(":")
        if sep and k == key:
            return value
    return None

def system_value_of(name: str, signature: str | None = None) -> str | None:
    """How metric `name`'s system value is made from score rows (`Metric.system_value`: "mean",
    "summed-stats" or "needs-rows"), read from its class for scores signed `signature` (their
    refs mode) without building it, so no model is loaded; None for a name no installed metric
    has (its system value is then the mean of its rows)."""
    from ..metrics.registry import metric_spec

    try:
        cls = metric_spec(name).metric_class()
    except DialevalError:
        return None
    declared = getattr(cls, "system_value", None)
    if declared is None:
        return None
    return declared(signature_option(signature, "refs") or "multi")

def stats_metrics(result) -> dict[str, Any]:
    """The metrics of a ScoreResult whose corpus score comes from summed statistics rows
    (declared "summed-stats": corpus BLEU, METEOR with `refs_mode multi`), as built Metric
    objects by name; the others are not built."""
    from ..metrics.registry import build_metric

    out = {}
    for name in result.metrics:
        if name not in result.stats or system_value_of(name, result.signatures.get(name, "")) != "summed-stats":
            continue          # a mean (single-reference modes too) or recomputed from the rows
        try:
            out[name] = build_metric(name)
        except DialevalError:
            continue
    return out

def score_rows(result, *, with_stats: bool = True) -> list[dict]:
    """Rows as `dialeval score -o` writes them, plus (with `with_stats`) each sample's response,
    references and the statistics rows of the metrics that reduce summed statistics: what
    `compare` and `report` need to recompute corpus scores on resamples. The first row also
    carries `signatures` (metric -> signature), once per file rather than on every row."""
    rows = list(result.records())
    if not with_stats:
        return rows
    summed = stats_metrics(result)
    if rows:
        rows[0]["signatures"] = dict(result.signatures)   # once per file: how each score was made
    for i, (row, sample) in enumerate(zip(rows, result.samples)):
        row["response"] = sample.response
        row["references"] = list(sample.references)
        if summed:
            row["stats"] = {m: [float(v) for v in result.stats[m][i]] for m in summed}
    return rows

def row_signatures(rows: Sequence[dict]) -> dict[str, str]:
    """The metric signatures recorded in score rows (`signatures` on a file's first row); when
    files were concatenated, a metric signed differently in two of them is refused."""
    out: dict[str, str] = {}
    for row in rows:
        for metric, sig in (row.get("signatures") or {}).items():
            if out.setdefault(metric, sig) != sig:
                raise DialevalError(f"{metric} is scored two ways in this file: {out[metric]!r} "
                                    f"and {sig!r}; compare scores made the same way")
    return out

def _float(v: Any) -> float:
    try:
        return float(v) if v is not None else math.nan
    except (TypeError, ValueError):
        return math.nan


# --- one metric's data ------------------------------------------------------------------------

@dataclass
class Measure:
    """Per-sample statistics of one metric (or of a human quality) and how they reduce."""

    name: str
    stats: np.ndarray          # (n_rows, k); invalid rows are all zeros
    reduce: Reducer
    kind: str                  # "corpus-stats", "mean" or "corpus-rows" (`RowsMeasure`)
    signature: str = ""

    def score(self, idx: np.ndarray) -> float:
        return float(self.reduce(self.stats[idx].sum(axis=0, keepdims=True))[0])

    def resampled(self, idx: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """Scores of the items `idx` under each resample of `counts` (R, len(idx))."""
        return self.reduce(counts @ self.stats[idx])

def _no_reduce(total: np.ndarray) -> np.ndarray:
    return np.full(len(total), np.nan)

@dataclass
class RowsMeasure(Measure):
    """A metric whose system value is recomputed from the rows' responses by the metric itself
    (declared "needs-rows": distinct-n, entropy-n), through `Metric.rows_table`. `score(idx)` is
    exactly what `score` prints for those rows. Its `stats` are (row key, 1) rows: every row
    counts, and two rows differ where their responses count differently.

    Bootstrap resamples give NaN, so such a measure has no bootstrap CI and no paired-bootstrap
    p: resampling with replacement repeats responses, and a repeated response adds n-gram
    occurrences but no new n-gram type, so every resample's distinct-n and entropy-n drop below
    the system's own value by that alone (a percentile interval would not cover it).
    Approximate randomization swaps two systems' responses without repeating any, so
    `compare --paired-ar` gives it a p-value (`approximate_randomization_p`)."""

    table: Any = None

    def score(self, idx: np.ndarray) -> float:
        return float(self.table.value(idx))

    def resampled(self, idx: np.ndarray, counts: np.ndarray) -> np.ndarray:
        return np.full(len(counts), np.nan)

    def swapped(self, idx_a: np.ndarray, idx_b: np.ndarray, selectors: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray]:
        """Values of A and B when `selectors` (T, n) keep each item's response with its own
        system (True) or swap it (False); all-True rows give the observed values."""
        both = np.concatenate([idx_a, idx_b])
        keep = selectors.astype(np.float64)
        return (self.table.weighted(both, np.hstack([keep, 1.0 - keep])),
                self.table.weighted(both, np.hstack([1.0 - keep, keep])))

def scored_mask(measure: "Measure", idx: np.ndarray) -> np.ndarray:
    """Which of the rows `idx` have a score (a statistics row that is not all zeros, or a mean
    row whose count is 1)."""
    rows = measure.stats[idx]
    return rows.any(axis=1) if measure.kind == "corpus-stats" else rows[:, 1] > 0

def _mean_reduce(total: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total[:, 1] > 0, total[:, 0] / np.where(total[:, 1] > 0, total[:, 1], 1),
                        np.nan)

def mean_measure(name: str, values: Sequence[float], signature: str = "") -> Measure:
    v = np.asarray(values, dtype=float)
    ok = np.isfinite(v)
    stats = np.stack([np.where(ok, v, 0.0), ok.astype(float)], axis=1)
    return Measure(name, stats, _mean_reduce, "mean", signature)

def corpus_reducer(metric) -> Reducer:
    """Vectorised corpus score of summed statistics rows for a built Metric (its own
    `corpus_from_summed_rows`: meta/ names no metric family)."""
    return metric.corpus_from_summed_rows

def stats_measure(name: str, rows_stats: Sequence[Sequence[float] | None], metric,
                  signature: str = "") -> Measure:
    width = max((len(r) for r in rows_stats if r is not None), default=0)
    stats = np.zeros((len(rows_stats), width))
    for i, r in enumerate(rows_stats):
        if r is None:
            continue
        arr = np.array([_float(v) for v in r])
        if np.isfinite(arr).all():
            stats[i] = arr
    return Measure(name, stats, corpus_reducer(metric), "corpus-stats", signature)

def rows_measure(rows: Sequence[dict], name: str, signature: str | None) -> RowsMeasure:
    """The Measure of a metric declared "needs-rows": the metric rebuilt with the tokenizer of
    its recorded signature (which must then be the signature it gives), its system values
    recomputed from the rows' `response`s (every `score -o` row has one)."""
    from ..metrics.base import Batch
    from ..metrics.registry import build_metric

    if not all(isinstance(r.get("response"), str) for r in rows):
        raise DialevalError(f"{name}: a system's value is recomputed from its responses, which the "
                            "scores file lacks; write it with `dialeval score -o FILE` (or leave it "
                            "out with --metrics)")
    tok = signature_option(signature, "tok")
    metric = build_metric(name, **({"tokenizer": tok} if tok else {}))
    if signature and signature != str(metric.signature()):
        raise DialevalError(f"{name}: the scores file was scored as {signature!r}, which this "
                            f"dialeval does not rebuild ({metric.signature()}); rescore it")
    responses = [r["response"] for r in rows]
    if not signature:   # nothing says how it was made: its sentence values must be the file's
        got = np.asarray(metric.compute(Batch(responses, [[] for _ in rows])).sentence, dtype=float)
        given = np.array([_float(r["scores"][name]) for r in rows])
        if not np.all((np.isnan(given) & np.isnan(got)) | (np.abs(given - got) <= 1e-9)):
            raise DialevalError(f"{name}: recomputing it from the responses with the default "
                                "options does not give the file's scores; rescore it")
    table = metric.rows_table(responses)
    stats = np.stack([np.asarray(table.row_keys, dtype=float), np.ones(len(rows))], axis=1)
    return RowsMeasure(name, stats, _no_reduce, "corpus-rows", signature or str(metric.signature()),
                       table=table)

def recompute_stats(rows: Sequence[dict], name: str, metric, signature: str | None
                    ) -> np.ndarray | None:
    """The statistics rows of `metric` recomputed from the rows' response and references (a
    plain `score -o` / `evaluate -o` file has no `stats`), or None when the rows lack the texts.

    The metric is built with its default options; that it is the metric that made the file is
    checked: the recorded signature (when the file has one) must be its signature, and the
    recomputed sentence scores must be the file's, else the file was scored another way and
    only `--with-stats` can say how."""
    from ..metrics.base import Batch

    if not all(isinstance(r.get("response"), str) and isinstance(r.get("references"), list)
               for r in rows):
        return None
    if signature and signature != str(metric.signature()):
        raise DialevalError(f"{name}: the scores file has no statistics rows and was scored as "
                            f"{signature!r}, not with the defaults ({metric.signature()}); write "
                            "it with `dialeval score --with-stats -o FILE`")
    out = metric.compute(Batch([r["response"] for r in rows], [r["references"] for r in rows]))
    given = np.array([_float(r["scores"][name]) for r in rows])
    got = np.asarray(out.sentence, dtype=float)
    bad = np.flatnonzero(~((np.isnan(given) & np.isnan(got)) | (np.abs(given - got) <= 1e-9)))
    if bad.size:
        i = int(bad[0])
        where = f"line {rows[i]['_line']}" if "_line" in rows[i] else f"row {i + 1}"
        raise DialevalError(f"{name}: the scores file has no statistics rows, and recomputing "
                            f"them with the default options does not give its scores ({where}: "
                            f"{given[i]!r} in the file, {got[i]!r} recomputed): it was scored "
                            "with other options; write it with `dialeval score --with-stats -o FILE`")
    return np.asarray(out.stats, dtype=float)

def measures_from_rows(rows: Sequence[dict], metrics: Sequence[str] | None = None,
                       signatures: dict[str, str] | None = None,
                       notes: list[str] | None = None) -> dict[str, Measure]:
    """A Measure per metric of score rows, as each metric declares its system value
    (`Metric.system_value`, read without building the metric, so no model is loaded): the mean
    of the rows' scores; corpus BLEU / METEOR from the rows' `stats` (where the rows have no
    statistics rows but their response and references, the statistics are recomputed,
    `recompute_stats`, with a line in `notes`); distinct-n / entropy-n recomputed from the rows'
    responses (`rows_measure`, with a line in `notes`)."""
    from ..metrics.registry import build_metric

    if metrics is None:
        metrics = list(rows[0]["scores"])
    signatures = signatures or {}
    out = {}
    for m in metrics:
        if any(m not in (r.get("scores") or {}) for r in rows):
            raise DialevalError(f"metric {m!r} is not in every row of the scores file")
        how = system_value_of(m, signatures.get(m, ""))
        if how == "needs-rows":
            out[m] = rows_measure(rows, m, signatures.get(m))
            if notes is not None:
                notes.append(f"{m}: each system's value is recomputed from its responses (as "
                             "`score` prints it); no bootstrap CI or paired-bootstrap p: "
                             "resampling repeats responses, which by itself lowers it; "
                             "`compare --paired-ar` gives a p-value")
            continue
        has_stats = all(m in (r.get("stats") or {}) for r in rows)
        metric = None
        if how == "summed-stats":   # built for its reducer; these metrics load no model
            try:
                metric = build_metric(m)
            except DialevalError:
                pass
        if has_stats and metric is not None:
            out[m] = stats_measure(m, [r["stats"][m] for r in rows], metric, signatures.get(m, ""))
        elif metric is not None and not any("stats" in r for r in rows):
            stats = recompute_stats(rows, m, metric, signatures.get(m))
            if stats is not None:
                out[m] = stats_measure(m, list(stats), metric, signatures.get(m) or str(metric.signature()))
                if notes is not None:
                    notes.append(f"{m}: the file has no statistics rows; recomputed from its "
                                 "responses and references with the default options (they give "
                                 "the file's sentence scores)")
                continue
            raise DialevalError(
                f"{m}: its corpus score comes from summed statistics, which the scores file lacks; "
                "write it with `dialeval score --with-stats -o FILE` (or leave it out with --metrics)")
        else:
            out[m] = mean_measure(m, [_float(r["scores"][m]) for r in rows], signatures.get(m, ""))
    return out


__all__ = ["Measure", "RowsMeasure", "Reducer", "measures_from_rows", "mean_measure", "stats_measure",
           "rows_measure", "recompute_stats", "scored_mask", "score_rows", "stats_metrics",
           "row_signatures", "signature_option", "system_value_of"]
