"""Comparing systems: corpus scores with bootstrap confidence intervals and paired significance.

A system's corpus score is recomputed on every resample from the per-sample statistics rows,
so corpus BLEU is BLEU of the *summed* n-gram statistics of the resampled items, never a mean
of sentence BLEU. Metrics whose corpus score is the mean of sentence scores (ROUGE-L, CIDEr,
embedding metrics, ...) resample those sentence scores. Each metric declares which of these it
is (`Metric.system_value`, read without building it); distinct-n and entropy-n declare
"needs-rows": their system values are recomputed from the rows' responses (`RowsMeasure`, which
has no bootstrap CI but an approximate-randomization test). Human scores are treated as such a
mean: a system's human score is the mean over its items of the items' mean rating.

The tests follow sacreBLEU (`sacrebleu/significance.py`) exactly, so that a p-value printed
here can be checked against `sacrebleu --paired-bs` / `--paired-ar`:

- one `numpy.random.default_rng(seed)` draws the resample index matrix
  `rng.choice(N, size=(n_resamples, N))` once; every system is resampled with the same rows
  (items are paired across systems by their position in the aligned item order);
- bootstrap CI: the resampled scores sorted, the values at ranks `n//40` and `n - n//40 - 1`
  (sacreBLEU's `estimate_ci`; its "mean +- ci" is the bootstrap mean and half that width);
- paired bootstrap (Koehn 2004 as sacreBLEU implements it): `d = |score_sys - score_base|` per
  resample, centred (`d - mean(d)`), p = (#{centred d > observed |difference|} + 1) / (n + 1);
- approximate randomization: `rng.integers(2, size=(n_trials, N))` swaps each item's output
  between the two systems; p = (#{|a - b| > observed |difference|} + 1) / (n + 1).
  sacreBLEU's default is 1,000 resamples for the bootstrap and 10,000 trials for AR, seed 12345.

One deliberate difference: two systems with exactly the same corpus score get p = 1. sacreBLEU
counts `> observed` strictly, so a zero observed difference gives its smallest p, 1/(n+1), and
a "significant" mark on systems that do not differ at all.

Every run carries a signature (`compare|test:bs|n:1000|seed:12345|ci:95|version:...`).

Items are paired per comparison (each system against the baseline, or each pair of systems) by
a key the user chooses (`pair_by`): an `item` field, `dialogue_id` + `turn`, the sample `id`, the
context and references, or the position within the system; `auto` takes the first explicit key
every row has (see `resolve_pair_by`). A paired test uses the items *both* systems of that
comparison have, however many other systems lack, and reports how many (`n_paired`); a
comparison that loses items to pairing gets a note.

No significance mark where the paired set is too small for it. Both tests are symmetric in the
two systems, and under the null hypothesis (the two outputs of an item are exchangeable) each of
the 2^m ways of swapping the m items whose outputs differ is equally likely; the full swap gives
the same |difference| as the data, so a valid test rejects on at least 2 of the 2^m and its p
cannot go below 2^(1-m). With B resamples the p-value itself cannot go below 1/(B+1). The
smallest attainable p is the larger of the two (`min_attainable_p`); a mark is given only where
both the p-value and that bound are under its threshold. A bootstrap on 2 items can print
p = 1/(B+1), but no test on 2 items can honestly reach 0.05.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from ..errors import DialevalError
from ..version import __version__

TESTS = ("bs", "ar")
DEFAULT_RESAMPLES = {"bs": 1000, "ar": 10000}
DEFAULT_SEED = 12345  # sacreBLEU's SACREBLEU_SEED default
CI_BOOTSTRAP = 1000   # resamples for the CIs when the test is AR (sacreBLEU's --paired-ar-confidence-n)

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


def human_value(row: dict, quality: str) -> float:
    """The mean of a row's ratings for `quality` (NaN when it has none)."""
    values = (row.get("ratings") or {}).get(quality)
    if values is None:
        return math.nan
    if not isinstance(values, list):
        values = [values]
    vals = [float(v) for v in values if isinstance(v, (int, float)) and v == v]
    return sum(vals) / len(vals) if vals else math.nan


def item_keys(rows: Sequence[dict]) -> list[tuple]:
    """A key per row that is equal for the same evaluated item in every system: the context and
    references (and which occurrence of that pair it is); rows without either by position."""
    seen: dict[tuple, int] = {}
    keys = []
    for row in rows:
        context = tuple(row.get("context") or ())
        refs = tuple(row.get("references") or ())
        system = row.get("system")
        base = (context, refs) if (context or refs) else ()
        k = seen.get((system, base), 0)
        seen[(system, base)] = k + 1
        keys.append((base, k))
    return keys


PAIR_BY = ("auto", "item", "dialogue", "id", "context", "position")
PAIR_BY_HELP = {
    "item": "the rows' `item` field",
    "dialogue": "the rows' `dialogue_id` and `turn` fields",
    "id": "the rows' `id`",
    "context": "the context and references",
    "position": "the position of the row within its system",
}


def _field(row: dict, name: str) -> Any:
    """A row's field, top level or (where the readers keep unknown input fields) in `meta`."""
    if row.get(name) is not None:
        return row[name]
    return (row.get("meta") or {}).get(name)


def _explicit_keys(rows: Sequence[dict], system_of: Sequence[str], pair_by: str
                   ) -> tuple[list | None, str | None]:
    """(keys, None), or (None, why not) when a row lacks the field or a system repeats a key."""
    keys: list = []
    seen: set = set()
    for row, system in zip(rows, system_of):
        if pair_by == "item":
            value = _field(row, "item")
            key = None if value is None else ("item", json_key(value))
        elif pair_by == "dialogue":
            d, t = _field(row, "dialogue_id"), _field(row, "turn")
            key = None if d is None or t is None else ("dialogue", json_key(d), json_key(t))
        elif pair_by == "id":
            key = None if row.get("id") is None else ("id", str(row["id"]))
        else:
            raise ValueError(pair_by)
        where = f"line {row['_line']}" if "_line" in row else f"row {len(keys) + 1}"
        if key is None:
            return None, f"{where} has no {PAIR_BY_HELP[pair_by][10:]}"
        if (system, key) in seen:
            return None, f"{where}: system {system!r} has {key[1:]} twice"
        seen.add((system, key))
        keys.append(key)
    return keys, None


def json_key(value: Any) -> Any:
    return value if isinstance(value, (str, int, float, bool)) else repr(value)


def resolve_pair_by(rows: Sequence[dict], pair_by: str = "auto",
                    system_of: Sequence[str] | None = None) -> tuple[str, list]:
    """(the key used, a key per row). `auto`: `item` when every row has one, else `dialogue_id`
    + `turn` when every row has both, else `id` when ids repeat across systems (an id naming the
    item, not the row), each unique within its system; else the context and references."""
    if pair_by not in PAIR_BY:
        raise DialevalError(f"unknown pairing {pair_by!r}; choose from {', '.join(PAIR_BY)}")
    if system_of is None:
        system_of = [r.get("system") if r.get("system") is not None else "all" for r in rows]
    if pair_by == "context":
        return "context", item_keys(rows)
    if pair_by == "position":
        seen: dict[str, int] = {}
        keys = []
        for s in system_of:
            keys.append(("position", seen.get(s, 0)))
            seen[s] = seen.get(s, 0) + 1
        return "position", keys
    if pair_by != "auto":
        keys, why = _explicit_keys(rows, system_of, pair_by)
        if keys is None:
            raise DialevalError(f"--pair-by {pair_by}: {why}")
        return pair_by, keys
    for candidate in ("item", "dialogue", "id"):
        keys, why = _explicit_keys(rows, system_of, candidate)
        if keys is None:
            continue
        if candidate == "id":
            owners: dict = {}
            for k, s in zip(keys, system_of):
                owners.setdefault(k, set()).add(s)
            if not any(len(v) > 1 for v in owners.values()):
                continue        # every id is one row's: ids name rows, not items
        return candidate, keys
    return "context", item_keys(rows)


def min_attainable_p(n_differing: int, n_resamples: int) -> float:
    """The smallest p a paired test can give on items of which `n_differing` have different
    outputs in the two systems, with `n_resamples` resamples (see the module docstring)."""
    exact = 1.0 if n_differing < 1 else min(1.0, 2.0 ** (1 - n_differing))
    return max(exact, 1.0 / (n_resamples + 1))


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


# --- resampling --------------------------------------------------------------------------------

def resample_counts(n: int, n_resamples: int, seed: int | None) -> np.ndarray:
    """(R, n) counts of each item in each bootstrap resample, drawn as sacreBLEU draws them."""
    rng = np.random.default_rng(seed)
    idxs = rng.choice(n, size=(n_resamples, n), replace=True)
    flat = (np.arange(n_resamples)[:, None] * n + idxs).ravel()
    return np.bincount(flat, minlength=n_resamples * n).reshape(n_resamples, n).astype(np.float64)


def ar_selectors(n: int, n_trials: int, seed: int | None) -> np.ndarray:
    """(T, n) booleans: True keeps the item's output with its own system (sacreBLEU's pos_sel)."""
    rng = np.random.default_rng(seed)
    return rng.integers(2, size=(n_trials, n), dtype=bool)


def resampled_scores(measure: Measure, idx: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Scores of the items `idx` of `measure` under each resample of `counts` (R, len(idx))."""
    return measure.resampled(idx, counts)


def estimate_ci(scores: np.ndarray) -> tuple[float, float, float]:
    """(bootstrap mean, low, high): the order statistics sacreBLEU's estimate_ci uses."""
    s = np.sort(scores[np.isfinite(scores)])
    if len(s) == 0:
        return math.nan, math.nan, math.nan
    lower = len(s) // 40
    return float(s.mean()), float(s[lower]), float(s[len(s) - lower - 1])


def p_value(samples: np.ndarray, observed: float) -> float:
    """(#{samples > observed} + 1) / (n + 1), as sacreBLEU (after multeval) counts."""
    return (int(np.sum(samples > observed)) + 1) / (len(samples) + 1)


def paired_bootstrap_p(base: np.ndarray, other: np.ndarray, observed: float) -> float:
    if observed == 0:
        return 1.0          # no difference to explain (see the module docstring)
    diffs = np.abs(other - base)
    if not np.isfinite(diffs).any():
        return math.nan     # no resampled value at all (a `RowsMeasure`): no test
    return p_value(diffs - diffs.mean(), abs(observed))


def approximate_randomization_p(measure_a: Measure, idx_a: np.ndarray, measure_b: Measure,
                                idx_b: np.ndarray, selectors: np.ndarray) -> float:
    if isinstance(measure_a, RowsMeasure) and measure_b is measure_a:
        shuf_a, shuf_b = [], []
        for start in range(0, len(selectors), 1000):
            sa, sb = measure_a.swapped(idx_a, idx_b, selectors[start:start + 1000])
            shuf_a.append(sa)
            shuf_b.append(sb)
        # the observed difference from the same vectorised sums as the swaps
        keep_a, keep_b = measure_a.swapped(idx_a, idx_b, np.ones((1, len(idx_a)), dtype=bool))
        observed = abs(float(keep_a[0]) - float(keep_b[0]))
        if observed == 0:
            return 1.0
        return p_value(np.abs(np.concatenate(shuf_a) - np.concatenate(shuf_b)), observed)
    a, b = measure_a.stats[idx_a], measure_b.stats[idx_b]
    sum_a, sum_b, diff = a.sum(axis=0), b.sum(axis=0), a - b
    shuf_a, shuf_b = [], []
    for start in range(0, len(selectors), 1000):   # chunks keep memory at ~16 MB per 2,000 items
        moved = selectors[start:start + 1000].astype(np.float64) @ diff
        shuf_a.append(measure_a.reduce(moved + sum_b))   # pos @ a + neg @ b
        shuf_b.append(measure_b.reduce(sum_a - moved))   # neg @ a + pos @ b
    shuf_a, shuf_b = np.concatenate(shuf_a), np.concatenate(shuf_b)
    observed = abs(measure_a.score(idx_a) - measure_b.score(idx_b))
    if observed == 0:
        return 1.0
    return p_value(np.abs(shuf_a - shuf_b), observed)


# --- the comparison --------------------------------------------------------------------------

@dataclass
class Comparison:
    """System scores with CIs and paired tests for every metric (and human quality)."""

    test: str
    n_resamples: int
    seed: int | None
    baseline: str | None
    systems: list[str]
    rows: list[dict] = field(default_factory=list)        # one per (measure, system)
    pairs: list[dict] = field(default_factory=list)       # one per (measure, a, b) when no baseline
    rank: list[dict] = field(default_factory=list)        # Kendall tau metric vs human ranking
    measures: dict[str, dict] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    pair_by: str = "context"
    warnings: list[str] = field(default_factory=list)     # notes a CLI also shouts on stderr
    remarks: list[str] = field(default_factory=list)      # notes a CLI also says on stderr

    @property
    def signature(self) -> str:
        parts = ["compare", f"test:{self.test}", f"n:{self.n_resamples}",
                 f"seed:{'none' if self.seed is None else self.seed}", "ci:95"]
        if self.test == "ar":
            parts.append(f"bs:{CI_BOOTSTRAP}")
        return "|".join(parts + [f"version:{__version__}"])

    def to_dict(self) -> dict:
        return {"signature": self.signature, "test": self.test, "n_resamples": self.n_resamples,
                "seed": self.seed, "baseline": self.baseline, "systems": self.systems,
                "measures": self.measures, "scores": self.rows, "pairs": self.pairs,
                "rank_agreement": self.rank, "notes": self.notes, "pair_by": self.pair_by}


def compare_systems(rows: Sequence[dict], *, metrics: Sequence[str] | None = None,
                    humans: Sequence[str] = (), system_human: dict[str, dict[str, float]] | None = None,
                    baseline: str | None = None, test: str = "bs", n_resamples: int | None = None,
                    seed: int | None = DEFAULT_SEED, signatures: dict[str, str] | None = None,
                    measures: dict[str, Measure] | None = None,
                    rank_methods: Sequence[str] = ("kendall",), pair_by: str = "auto") -> Comparison:
    """Compare the systems of score `rows` on every metric and human quality.

    `humans`: qualities in the rows' `ratings` to treat like metrics. `system_human`: published
    system means (system -> quality -> value) for data sets without per-item ratings (DSTC6):
    they get no CI or test, but enter the rank agreement. `baseline`: compare every system with
    it; None compares all pairs. `measures` overrides what is built from the rows. `pair_by`:
    how items pair across systems (`PAIR_BY`; see the module docstring).
    """
    if test not in TESTS:
        raise DialevalError(f"unknown test {test!r}; choose from {', '.join(TESTS)}")
    n_resamples = n_resamples or DEFAULT_RESAMPLES[test]
    if n_resamples < 1:
        raise DialevalError("--n-resamples must be at least 1")
    rows = list(rows)
    if not rows:
        raise DialevalError("no rows to compare")
    system_of = [r.get("system") if r.get("system") is not None else "all" for r in rows]
    systems = list(dict.fromkeys(system_of))
    if baseline is not None and baseline not in systems:
        raise DialevalError(f"--baseline {baseline!r} is not a system of the file "
                            f"(systems: {', '.join(systems[:10])}{' ...' if len(systems) > 10 else ''})")
    recompute_notes: list[str] = []
    if measures is None:
        signatures = {**row_signatures(rows), **(signatures or {})}
        measures = measures_from_rows(rows, metrics, signatures, notes=recompute_notes)
    measures = dict(measures)
    metric_names = list(measures)
    human_names = []
    for q in humans:
        values = [human_value(r, q) for r in rows]
        if not np.isfinite(values).any():
            raise DialevalError(f"no row has ratings for {q!r}")
        name = f"human:{q}"
        measures[name] = mean_measure(name, values, f"human|quality:{q}|mean of raters")
        human_names.append(name)

    pair_by, keys = resolve_pair_by(rows, pair_by, system_of)
    # each system's row per key, and one order of keys (the first system's row order, then the
    # keys only later systems have): a pair's items are its common keys in that order
    index: dict[str, dict[Any, int]] = {s: {} for s in systems}
    for i, (s, k) in enumerate(zip(system_of, keys)):
        index[s][k] = i
    global_order: dict[Any, None] = {}
    for s in systems:
        global_order.update(dict.fromkeys(index[s]))
    key_sets = [set(index[s]) for s in systems]
    common = set.intersection(*key_sets)
    aligned = all(len(ks) == len(common) for ks in key_sets)
    order = [k for k in global_order if k in common]
    cmp = Comparison(test=test, n_resamples=n_resamples, seed=seed, baseline=baseline,
                     systems=systems, pair_by=pair_by, notes=list(recompute_notes),
                     remarks=list(recompute_notes))
    cmp.measures = {m: {"kind": measures[m].kind, "signature": measures[m].signature}
                    for m in measures}
    idx_of = {s: np.array([index[s][k] for k in order], dtype=np.int64) for s in systems}
    own_idx = {s: np.array(list(index[s].values()), dtype=np.int64) for s in systems}
    n_common = len(order)
    ci_n = n_resamples if test == "bs" else CI_BOOTSTRAP
    counts_cache: dict[tuple[int, int], np.ndarray] = {}

    def counts(n: int, r: int) -> np.ndarray:
        if (n, r) not in counts_cache:
            counts_cache[(n, r)] = resample_counts(n, r, seed)
        return counts_cache[(n, r)]

    selectors_cache: dict[int, np.ndarray] = {}

    def selectors(n: int) -> np.ndarray:
        if n not in selectors_cache:
            selectors_cache[n] = ar_selectors(n, n_resamples, seed)
        return selectors_cache[n]

    resampled: dict[tuple[str, str], np.ndarray] = {}   # (measure, system) -> aligned resamples
    for name, measure in measures.items():
        for s in systems:
            idx = own_idx[s]
            valid = scored_mask(measure, idx)
            score = measure.score(idx)
            if aligned:
                boot = resampled_scores(measure, idx_of[s], counts(n_common, ci_n))
                resampled[(name, s)] = boot
            else:
                boot = resampled_scores(measure, idx, counts(len(idx), ci_n))
            mean, low, high = estimate_ci(boot)
            row = {"measure": name, "system": s, "n": int(valid.sum()), "score": score,
                   "bs_mean": mean, "ci_low": low, "ci_high": high}
            cmp.rows.append(row)
    # paired tests: per comparison, on the items both of its systems have
    pairs = ([(baseline, s) for s in systems if s != baseline] if baseline is not None
             else [(a, b) for i, a in enumerate(systems) for b in systems[i + 1:]])
    by_key = {(r["measure"], r["system"]): r for r in cmp.rows}
    how = PAIR_BY_HELP.get(pair_by, pair_by)
    for a, b in pairs:
        keys_ab = [k for k in global_order if k in index[a] and k in index[b]]
        n_pair = len(keys_ab)
        ia = np.array([index[a][k] for k in keys_ab], dtype=np.int64)
        ib = np.array([index[b][k] for k in keys_ab], dtype=np.int64)
        same_as_aligned = aligned and n_pair == n_common
        lost_a, lost_b = len(index[a]) - n_pair, len(index[b]) - n_pair
        if lost_a or lost_b:
            lost = (f"PAIRING LOST ITEMS: {b} vs {a}: only {n_pair} items pair by {how} "
                    f"({a} has {len(index[a])}, {b} has {len(index[b])}); its delta and test use "
                    f"those {n_pair} only" + ("" if pair_by != "context" else
                                              "; if the items are the same, give them an `item` "
                                              "field or use --pair-by id|dialogue|position"))
            cmp.notes.append(lost)
            cmp.warnings.append(lost)
        limited: dict[str, float] = {}
        for name, measure in measures.items():
            xa, xb, m = ia, ib, n_pair
            if n_pair:   # a paired test compares the items both systems have a score for
                both = scored_mask(measure, ia) & scored_mask(measure, ib)
                if not both.all():
                    xa, xb, m = ia[both], ib[both], int(both.sum())
                    uneven = (f"{name}: {b} vs {a}: the two systems have scores for different items; "
                              f"the delta and test use the {m} of {n_pair} paired items both have "
                              f"({int((~scored_mask(measure, ia)).sum())} unscored in {a}, "
                              f"{int((~scored_mask(measure, ib)).sum())} in {b})")
                    cmp.notes.append(uneven)
                    cmp.warnings.append(uneven)
            if m == 0:
                sa = sb = p = p_min = math.nan
            else:
                sa, sb = measure.score(xa), measure.score(xb)
                differing = int(np.any(measure.stats[xa] != measure.stats[xb], axis=1).sum())
                p_min = min_attainable_p(differing, n_resamples)
                if not (math.isfinite(sa) and math.isfinite(sb)):
                    p = math.nan
                elif test == "bs":
                    c = counts(m, n_resamples)
                    reuse = same_as_aligned and m == n_pair and ci_n == n_resamples
                    ra = resampled.get((name, a)) if reuse else None
                    rb = resampled.get((name, b)) if reuse else None
                    ra = ra if ra is not None else resampled_scores(measure, xa, c)
                    rb = rb if rb is not None else resampled_scores(measure, xb, c)
                    p = paired_bootstrap_p(ra, rb, sb - sa)
                else:
                    p = approximate_randomization_p(measure, xa, measure, xb, selectors(m))
                if math.isfinite(p) and p < 0.05 and p_min >= 0.01:
                    limited[name] = p_min
            fields = {"delta": sb - sa, "p": p, "n_paired": m, "p_min": p_min,
                      "mark": significance_mark(p, p_min)}
            if baseline is not None:
                by_key[(name, b)].update(fields)
            else:
                cmp.pairs.append({"measure": name, "a": a, "b": b, "score_a": sa,
                                  "score_b": sb, **fields})
        if limited:
            bounds = ", ".join(f"{fmt_bound(v)} ({m})" for m, v in limited.items())
            cmp.notes.append(
                f"{b} vs {a}: {n_pair} paired items: the smallest p a paired test can reach on "
                f"them is {bounds}, so no mark below that (2^(1-m), m the items whose outputs "
                "differ, or 1/(resamples+1))")
    # published system means (no per-item data: no CI, no test)
    for q, means in _by_quality(system_human or {}).items():
        name = f"human:{q}"
        if name in measures:
            continue
        cmp.measures[name] = {"kind": "published-system-means",
                              "signature": f"human|quality:{q}|published system means"}
        human_names.append(name)
        for s in systems:
            cmp.rows.append({"measure": name, "system": s, "n": None,
                             "score": means.get(s, math.nan), "bs_mean": math.nan,
                             "ci_low": math.nan, "ci_high": math.nan})
        cmp.notes.append(f"{name}: only system means are published, so it has no CI and no "
                         "significance test; its ranking enters the Kendall tau as fixed")
    cmp.rank = _rank_agreement(cmp, measures, metric_names, human_names, idx_of if aligned else None,
                               counts(n_common, ci_n) if aligned and n_common else None,
                               rank_methods)
    return cmp


def _by_quality(system_human: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for s, vals in system_human.items():
        for q, v in vals.items():
            out.setdefault(q, {})[s] = float(v)
    return out


def _rank_agreement(cmp: Comparison, measures, metric_names, human_names, idx_of, counts,
                    methods: Sequence[str] = ("kendall",)):
    """Correlation across systems between each metric's corpus scores and each human quality's
    system scores (Kendall tau by default), with a percentile bootstrap CI from the same item
    resamples (metric and human resampled together; published system means stay fixed)."""
    from .correlation import correlation, percentile_ci, rowwise

    systems = cmp.systems
    if len(systems) < 3:
        return []
    score = {(r["measure"], r["system"]): r["score"] for r in cmp.rows}
    boot: dict[str, np.ndarray] = {}

    def resampled(name: str) -> np.ndarray:
        if name not in boot:
            boot[name] = np.stack([resampled_scores(measures[name], idx_of[s], counts)
                                   for s in systems], 1)
        return boot[name]

    out = []
    for h in human_names:
        y = np.array([score[(h, s)] for s in systems], dtype=float)
        for m in metric_names:
            x = np.array([score[(m, s)] for s in systems], dtype=float)
            ok = np.isfinite(x) & np.isfinite(y)
            for method in methods:
                r, p = correlation(x[ok], y[ok], method) if ok.sum() >= 3 else (math.nan, math.nan)
                low = high = math.nan
                if counts is not None and idx_of is not None and ok.sum() >= 3:
                    xb = resampled(m)[:, ok]
                    yb = resampled(h)[:, ok] if h in measures else np.broadcast_to(y[ok], xb.shape)
                    low, high = percentile_ci(kendall_rows(xb, yb) if method == "kendall"
                                              else rowwise(xb, yb, method))
                out.append({"metric": m, "human": h, "method": method, "r": r, "p": p,
                            "ci_low": low, "ci_high": high, "n_systems": int(ok.sum())})
    return out


def kendall_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Kendall tau-b of each row of `x` with the same row of `y`, vectorised over rows: the
    O(n^2) pair signs are cheap for the few points of a system ranking (scipy per row is not)."""
    x = np.asarray(x, float)
    y = np.asarray(y, float)
    i, j = np.triu_indices(x.shape[1], 1)
    sx = np.sign(x[:, i] - x[:, j])
    sy = np.sign(y[:, i] - y[:, j])
    concord = (sx * sy).sum(axis=1)
    untied_x = (sx != 0).sum(axis=1)
    untied_y = (sy != 0).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return concord / np.sqrt(untied_x * untied_y.astype(float))


def significance_mark(p: float | None, p_min: float | None = None) -> str:
    """`**` p < 0.01, `*` p < 0.05 (no correction for multiple comparisons), each only where the
    smallest attainable p (`p_min`, see `min_attainable_p`) is under the threshold too."""
    if p is None or not isinstance(p, float) or not math.isfinite(p):
        return ""
    if p_min is not None and isinstance(p_min, (int, float)) and math.isfinite(p_min):
        p = max(p, float(p_min))
    return "**" if p < 0.01 else "*" if p < 0.05 else ""


def fmt_bound(p: float) -> str:
    return f"{p:.4g}"


__all__ = ["Comparison", "Measure", "compare_systems", "score_rows", "measures_from_rows",
           "mean_measure", "stats_measure", "RowsMeasure", "rows_measure", "system_value_of", "resample_counts", "ar_selectors", "estimate_ci",
           "paired_bootstrap_p", "approximate_randomization_p", "p_value", "item_keys",
           "resolve_pair_by", "min_attainable_p", "PAIR_BY",
           "significance_mark", "human_value", "TESTS", "DEFAULT_SEED", "DEFAULT_RESAMPLES"]
