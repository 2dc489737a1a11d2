"""Behavioural probes: does a metric prefer a real response to a degenerate one?

A learned metric can be gamed: an empty reply, the user's last turn parroted back or the
response's words shuffled may score as well as, or better than, the response itself. A probe
measures that directly, for any metric: each item's response gets degenerate variants (one per
*family*), originals and variants are scored in one `dialeval.scoring.score` call (models load
once), and per metric and family we report the share of items where the original scores
strictly better than its variant, with a seeded percentile bootstrap 95% CI over the items.

The rules, chosen so that a share is a plain "how often does the metric get it right":

- a tie is a failure (a metric that cannot tell the two apart has not preferred the original),
  and so is a variant without a value (NaN) where the original has one;
- an item whose original has no value (a reference metric on an item without references) is
  not applicable for that metric: counted apart (`nan`), outside the share;
- an item for which a family cannot make a variant (parrot without context, truncation of a
  response of two words or fewer, a variant that reads as the original, ...) is skipped for that
  family and counted (`skipped`);
- "better" follows the metric class's `higher_is_better`.

Every random choice is seeded and made per family and per item from
`numpy.random.default_rng((seed, family_index, item_index))`, with `family_index` the family's
position in `FAMILIES`, so the same input and seed give the same variants whichever other
families are asked for. Layering: this module uses `scoring` and `metrics`, never `report/` or
`cli/` (tables and pages live in `dialeval.report.probes`).
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Sequence

import numpy as np

from ..data.sample import Sample
from ..data.variants import (FAMILIES, FAMILY_HELP, GENERIC, PUNCTUATION,  # noqa: F401
                             _check_seed, check_families, make_variants, reading, transliterate)
from ..errors import DialevalError
from ..version import __version__

ORIGINAL_SYSTEM = "probe:original"

# Random streams that are not a family's: the --limit subset and the bootstrap.
_LIMIT_STREAM = 1000
_BOOT_STREAM = 2000


def system_name(family: str) -> str:
    """The `system` a family's variants are scored under (each family is its own evaluated set)."""
    return f"probe:{family}"


# --- which items are probed -------------------------------------------------------------------

def parse_top(top: Any) -> tuple[str, float] | None:
    """`"overall:0.4"` or `("overall", 0.4)` -> ("overall", 0.4): the top 40% by mean rating."""
    if top is None:
        return None
    if isinstance(top, str):
        quality, sep, fraction = top.rpartition(":")
        if not sep or not quality:
            raise DialevalError(f"--top {top!r}: expected QUALITY:FRACTION, e.g. overall:0.4")
        try:
            top = (quality, float(fraction))
        except ValueError:
            raise DialevalError(f"--top {top!r}: {fraction!r} is not a number") from None
    quality, fraction = top
    fraction = float(fraction)
    if not 0.0 < fraction <= 1.0:
        raise DialevalError(f"--top {quality}:{fraction:g}: the fraction must be in (0, 1]")
    return str(quality), fraction


def _is_reference_copy(sample: Sample) -> bool:
    own = reading(sample.response)
    return any(reading(r) == own for r in sample.references)


def select_items(samples: Sequence[Sample], *, top: Any = None, limit: int | None = None,
                 seed: int = 0, keep_reference_copies: bool = False) -> tuple[list[Sample], dict]:
    """The items to probe, and how many each step left out. In order: responses equal to one of
    their references are dropped (their reference metrics are trivially perfect; unless
    `keep_reference_copies`), then `top` keeps the items whose mean rating of a quality is in
    the top fraction (ties at the threshold kept; unrated items left out), then `limit` keeps a
    seeded random subset of that many (in input order)."""
    seed = _check_seed(seed)
    counts = {"input": len(samples), "reference_copies_dropped": 0, "not_in_top": 0,
              "left_out_by_limit": 0}
    items = list(samples)
    if not keep_reference_copies:
        kept = [s for s in items if not _is_reference_copy(s)]
        counts["reference_copies_dropped"] = len(items) - len(kept)
        items = kept
    wanted = parse_top(top)
    if wanted is not None and items:
        quality, fraction = wanted
        values = np.array([s.human(quality) for s in items], dtype=np.float64)
        rated = np.isfinite(values)
        if not rated.any():
            known = sorted({q for s in samples for q in s.ratings})
            raise DialevalError(f"--top {quality}: no item has {quality!r} ratings"
                                + (f"; rated qualities: {', '.join(known)}" if known else ""))
        k = max(1, math.ceil(fraction * int(rated.sum()) - 1e-9))
        threshold = np.sort(values[rated])[::-1][k - 1]
        keep = rated & (values >= threshold)
        counts["not_in_top"] = int((~keep).sum())
        items = [s for s, good in zip(items, keep) if good]
    if limit is not None:
        if isinstance(limit, bool) or int(limit) != limit or limit < 1:
            raise DialevalError(f"--limit must be a positive whole number, got {limit!r}")
        limit = int(limit)
        if limit < len(items):
            rng = np.random.default_rng((seed, _LIMIT_STREAM))
            chosen = np.sort(rng.choice(len(items), size=limit, replace=False))
            counts["left_out_by_limit"] = len(items) - limit
            items = [items[int(i)] for i in chosen]
    counts["probed"] = len(items)
    if not items:
        raise DialevalError("no item left to probe (after dropping responses equal to a reference"
                            + (", --top" if wanted else "") + (", --limit" if limit else "") + ")")
    return items, counts


# --- outcomes and shares ----------------------------------------------------------------------

WIN, TIE, LOSS, VARIANT_NAN, NOT_APPLICABLE, SKIPPED = "win", "tie", "loss", "variant_nan", "n/a", "skipped"


def outcomes(original: np.ndarray, variant: np.ndarray, skipped: np.ndarray,
             higher_is_better: bool = True) -> np.ndarray:
    """Per item, one of WIN / TIE / LOSS / VARIANT_NAN / NOT_APPLICABLE / SKIPPED (see the module
    doc); a win is the original strictly better than its variant."""
    original = np.asarray(original, dtype=np.float64)
    variant = np.asarray(variant, dtype=np.float64)
    better = original > variant if higher_is_better else original < variant
    worse = original < variant if higher_is_better else original > variant
    out = np.full(len(original), TIE, dtype=object)
    out[worse] = LOSS
    out[better] = WIN
    out[np.isnan(variant)] = VARIANT_NAN
    out[np.isnan(original)] = NOT_APPLICABLE
    out[np.asarray(skipped, dtype=bool)] = SKIPPED
    return out


def share_ci(wins: int, n: int, n_boot: int, rng: np.random.Generator) -> tuple[float, float, float]:
    """The share wins/n and its percentile bootstrap 95% CI over items. Resampling n items with
    replacement draws a win with probability wins/n each time, so a resample's win count is
    Binomial(n, wins/n): drawn directly, it is the item bootstrap at O(n_boot) cost."""
    if n == 0:
        return math.nan, math.nan, math.nan
    share = wins / n
    if n_boot <= 0:
        return share, math.nan, math.nan
    shares = rng.binomial(n, share, size=n_boot) / n
    low, high = np.percentile(shares, [2.5, 97.5])
    return share, float(low), float(high)


def _direction(name: str, given: dict[str, Any]) -> bool:
    """`higher_is_better` of a metric: from the object passed, else its registry class."""
    if name in given:
        return bool(getattr(given[name], "higher_is_better", True))
    from ..metrics.registry import REGISTRY

    if name in REGISTRY:
        return bool(getattr(REGISTRY[name].metric_class(), "higher_is_better", True))
    return True


@dataclass
class ProbeResult:
    """What `probe` measured. `results[metric][family]` holds the counts (wins, ties, losses,
    variant_nan: failures; nan: original without a value, not applicable; skipped: no variant),
    n (= wins + ties + losses + variant_nan), share (wins / n) and its 95% CI."""

    metrics: list[str]
    families: list[str]
    results: dict[str, dict[str, dict[str, Any]]]
    signatures: dict[str, str]
    higher_is_better: dict[str, bool]
    settings: dict[str, Any]
    items: dict[str, int]
    samples: list[Sample]                      # the probed items, in order
    variants: dict[str, list[str | None]]      # family -> variant per item (None: skipped)
    item_outcomes: dict[str, dict[str, np.ndarray]] = field(repr=False, default_factory=dict)
    # metric -> "original" or a family -> its score per item (NaN: skipped or no value)
    item_scores: dict[str, dict[str, np.ndarray]] = field(repr=False, default_factory=dict)
    scores: Any = field(repr=False, default=None)   # the ScoreResult of the one scoring call
    notes: list[str] = field(default_factory=list)

    def table(self) -> list[dict[str, Any]]:
        """One row per (metric, family), metrics in run order, families in `FAMILIES` order."""
        return [{"metric": m, "family": f, **self.results[m][f]}
                for m in self.metrics for f in self.families]

    def signature(self) -> str:
        """How the probe was made, in the style of the metric signatures."""
        s = self.settings
        parts = [f"probes|families:{','.join(self.families)}", f"seed:{s['seed']}",
                 f"boot:{s['n_boot']}", f"top:{s['top'] or 'none'}", f"limit:{s['limit'] or 'none'}",
                 f"refcopies:{'kept' if s['keep_reference_copies'] else 'dropped'}",
                 # since 2026-11-28 a variant that *reads* as the original is skipped (before:
                 # whitespace alone); the field tells the two instruments' outputs apart
                 "same:reading", f"version:{__version__}"]
        return "|".join(parts)

    def failures(self) -> Iterator[dict[str, Any]]:
        """Every (metric, family, item) the original did not win, with both texts and scores:
        what a user reads to see *why* a share is low (a bland original against a bland
        variant, say, is a different failure from a real answer beaten by another item's)."""
        for metric in self.metrics:
            original = self.item_scores[metric]["original"]
            for family in self.families:
                got = self.item_outcomes[metric][family]
                variant = self.item_scores[metric][family]
                for i in np.flatnonzero(np.isin(got, (TIE, LOSS, VARIANT_NAN))):
                    sample = self.samples[i]
                    yield {"metric": metric, "family": family, "outcome": str(got[i]), "item": int(i),
                           "id": sample.id, "system": sample.system,
                           "last_turn": sample.context[-1] if sample.context else "",
                           "response": sample.response, "variant": self.variants[family][i],
                           "score": float(original[i]), "variant_score": float(variant[i])}

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (NaN stays a float here; the project's JSON writers make it null)."""
        skipped = {f: int(sum(v is None for v in self.variants[f])) for f in self.families}
        return {
            "kind": "dialeval-probes", "version": __version__, "signature": self.signature(),
            "settings": dict(self.settings), "items": dict(self.items), "skipped": skipped,
            "metrics": list(self.metrics), "families": list(self.families),
            "signatures": dict(self.signatures), "higher_is_better": dict(self.higher_is_better),
            "results": {m: {f: dict(self.results[m][f]) for f in self.families} for m in self.metrics},
            "notes": list(self.notes),
        }


def probe(samples: Iterable[Any], metrics: Sequence[Any] | str, *, families: Iterable[str] | str | None = None,
          seed: int = 0, n_boot: int = 1000, top: Any = None, limit: int | None = None,
          keep_reference_copies: bool = False, **metric_options: Any) -> ProbeResult:
    """Probe `metrics` with degenerate variants of each item's response; see the module doc.

    samples: `Sample`s or records with contexts (and references, for reference metrics).
    metrics: registry names (or "all"), `Metric` objects, or a comma-separated string.
    families: probe families (default: all of `FAMILIES`).
    seed: seeds the variants, the --limit subset and the bootstrap (non-negative integer).
    n_boot: bootstrap resamples for the 95% CIs (0: no CI).
    top: "QUALITY:FRACTION" (or a pair): only items whose mean rating is in the top fraction.
    limit: a seeded random subset of this many items (after `top`).
    keep_reference_copies: keep items whose response equals one of their references.
    metric_options: whatever `dialeval.score` takes (refs_mode, tokenizer, each metric's options,
        backend, progress, ...), passed to its one call.
    """
    from ..data.readers import from_records
    from ..metrics.base import Metric
    from ..scoring import score

    seed = _check_seed(seed)
    if isinstance(n_boot, bool) or int(n_boot) != n_boot or n_boot < 0:
        raise DialevalError(f"n_boot must be a non-negative whole number, got {n_boot!r}")
    n_boot = int(n_boot)
    families = check_families(families)
    if isinstance(metrics, str):
        metrics = [m.strip() for m in metrics.split(",") if m.strip()]
    metrics = list(metrics)
    if not metrics:
        raise DialevalError("no metric to probe")
    wanted_top = parse_top(top)
    items, counts = select_items(from_records(samples), top=wanted_top, limit=limit, seed=seed,
                                 keep_reference_copies=keep_reference_copies)
    variants = make_variants(items, families, seed)
    scored = [_probe_sample(s, i, s.response, ORIGINAL_SYSTEM) for i, s in enumerate(items)]
    where: dict[str, list[tuple[int, int]]] = {}   # family -> (item, row in `scored`)
    for family in families:
        where[family] = []
        for i, (s, text) in enumerate(zip(items, variants[family])):
            if text is not None:
                where[family].append((i, len(scored)))
                scored.append(_probe_sample(s, i, text, system_name(family)))
    result = score(scored, metrics, **metric_options)

    given = {m.name: m for m in metrics if isinstance(m, Metric)}
    n = len(items)
    results: dict[str, dict[str, dict[str, Any]]] = {}
    directions: dict[str, bool] = {}
    item_outcomes: dict[str, dict[str, np.ndarray]] = {}
    item_scores: dict[str, dict[str, np.ndarray]] = {}
    for metric in result.metrics:
        values = np.asarray(result.sentence[metric], dtype=np.float64)
        higher = directions[metric] = _direction(metric, given)
        original = values[:n]
        results[metric], item_outcomes[metric] = {}, {}
        item_scores[metric] = {"original": original}
        for family in families:
            variant = np.full(n, np.nan)
            skipped = np.ones(n, dtype=bool)
            for i, row in where[family]:
                variant[i] = values[row]
                skipped[i] = False
            got = outcomes(original, variant, skipped, higher)
            item_outcomes[metric][family] = got
            item_scores[metric][family] = variant
            tally = {k: int((got == k).sum()) for k in (WIN, TIE, LOSS, VARIANT_NAN, NOT_APPLICABLE, SKIPPED)}
            applicable = tally[WIN] + tally[TIE] + tally[LOSS] + tally[VARIANT_NAN]
            rng = np.random.default_rng((seed, _BOOT_STREAM + FAMILIES.index(family),
                                         zlib.crc32(metric.encode("utf-8"))))
            share, low, high = share_ci(tally[WIN], applicable, n_boot, rng)
            results[metric][family] = {
                "wins": tally[WIN], "ties": tally[TIE], "losses": tally[LOSS],
                "variant_nan": tally[VARIANT_NAN], "nan": tally[NOT_APPLICABLE],
                "skipped": tally[SKIPPED], "n": applicable, "share": share,
                "ci_low": low, "ci_high": high}
    settings = {"metrics": [m if isinstance(m, str) else m.name for m in metrics],
                "families": list(families), "seed": seed, "n_boot": n_boot,
                "top": None if wanted_top is None else f"{wanted_top[0]}:{wanted_top[1]:g}",
                "limit": limit, "keep_reference_copies": bool(keep_reference_copies),
                "options": {k: v for k, v in metric_options.items()
                            if v is not None and isinstance(v, (str, int, float, bool))},
                "ci": "percentile bootstrap over items, 95%"}
    return ProbeResult(metrics=list(result.metrics), families=list(families), results=results,
                       signatures=dict(result.signatures), higher_is_better=directions,
                       settings=settings, items=counts, samples=items, variants=variants,
                       item_outcomes=item_outcomes, item_scores=item_scores, scores=result,
                       notes=list(result.notes))


# --- training negatives for a fit on rated data -------------------------------------------------

TRAINING_FAMILIES = ("empty", "parrot", "other_item", "loop")
DEFAULT_PROBED_TOP = "overall:0.4"


def negative_samples(samples: Sequence[Sample], families: Iterable[str] | str = TRAINING_FAMILIES, *,
                     keep_out_top: Any = DEFAULT_PROBED_TOP, seed: int = 0) -> list[Sample]:
    """Degenerate variants of rated items, to train a learned metric against (`fit compose
    --negative-share`). They are made only from the items *outside* `keep_out_top` (by default
    the top 40% by overall, the items `dialeval probe` tests; a set that does not rate the
    quality gives all its items), so a probe never meets a variant of an item whose variants
    were trained on. Each variant keeps its item's id, context and references; its system
    names the family (`probe:<family>`)."""
    items = list(samples)
    wanted = parse_top(keep_out_top)
    if wanted is not None and items:
        quality, fraction = wanted
        values = np.array([s.human(quality) for s in items], dtype=np.float64)
        rated = np.isfinite(values)
        if rated.any():
            k = max(1, math.ceil(fraction * int(rated.sum()) - 1e-9))
            threshold = np.sort(values[rated])[::-1][k - 1]
            items = [s for s, v, r in zip(items, values, rated) if r and v < threshold]
    made = make_variants(items, families, seed, as_trained=True)
    out = []
    for family, texts in made.items():
        out += [_probe_sample(s, i, text, system_name(family)) for i, (s, text) in enumerate(zip(items, texts))
                if text is not None]
    return out


def _probe_sample(sample: Sample, item: int, response: str, system: str) -> Sample:
    """A sample to score: the item's id, context and references with `response`."""
    return Sample(id=sample.id, response=response, context=list(sample.context),
                  references=list(sample.references), system=system,
                  meta={"probe_item": item, "probe_system": sample.system})


__all__ = ["FAMILIES", "FAMILY_HELP", "GENERIC", "PUNCTUATION", "ProbeResult", "TRAINING_FAMILIES",
           "check_families", "make_variants", "negative_samples", "outcomes", "parse_top", "probe", "select_items", "share_ci",
           "system_name", "transliterate"]
