"""Composing several metrics into one score per quality: Correlation Re-Scaling and baselines.

MME-CRS (Zhang et al., DSTC10; DESIGN.md eq. 1-3) weighs sub-metrics by how well each agrees
with the humans on development sets, *per quality*:

- on development set d, for quality q and metric m, r[d,q,m] = max(0, Spearman(m, q));
- w[d,q,m] = r^p / sum over m' of r[d,q,m']^p (eq. 1; p = 2 was the paper's best);
- w[q,m] = mean of w[d,q,m] over the sets d that rate q (eq. 2);
- score_q = sum over m of w[q,m] * s_m, each s_m scaled to [0, 1] (eq. 3).

Nothing here is specific to the MME sub-metrics: any metric columns can be composed. The
estimator sees only numbers (`DevSet`: metric columns and human means per quality of one
development set), so the same code serves `dialeval fit compose`, the `compose` metric and
the leave-one-dataset-out benchmark.

Baselines, in the same artifact shape:

- `avg` (MME-Avg): the plain mean of the scaled scores (uniform weights);
- `ridge`: a ridge regression per quality on the scaled scores, trained on the pooled
  development items with each set's human scores z-scored within the set (scales differ
  between sets, and only the ranking within a set is evaluated); alpha is chosen by
  cross-validation on the development data alone (leave-one-set-out when there are at least
  two sets, else 5 folds), maximising the mean within-fold Spearman.

Scaling to [0, 1] is learned from the pooled development scores and stored: `minmax` maps
[min, max] onto [0, 1]; `percentile` maps [P_k, P_(100-k)] (k = `clip_percentile`) and clips,
so a few outliers do not squash everyone else; `none` leaves scores as they are (metrics
already in [0, 1]). Test scores outside the range are clipped.

Missing values. A metric that cannot score an item (NaN: a reference-based metric on a set
without references) is left out of that item's sum and the remaining weights are renormalised;
an item whose every weighted metric is missing takes the pooled weights, and failing those the
plain mean of the metrics it has. On a development set a metric without scores has no
correlation, so r = 0 there. A (set, quality) pair where every
r is 0 carries no information and is left out of the average in eq. 2. A quality asked for at
prediction time that no development set rated gets the pooled weights (the mean over every
(set, quality) pair), and `fallback_used` says so; so does a quality whose every rating set
was uninformative (all r <= 0).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, Mapping, Sequence

import numpy as np

from ...errors import DialevalError
from ...models.estimator import Estimator
from ...stats import spearman_finite

METHODS = ("crs", "avg", "ridge")
SCALINGS = ("minmax", "percentile", "none")
POOLED = "*"                       # the weights row used for a quality no dev set rated
DEFAULT_ALPHAS = tuple(float(a) for a in np.logspace(-3, 3, 13))


@dataclass
class DevSet:
    """One development set: metric columns and human means per quality, item-aligned."""

    name: str
    scores: dict[str, np.ndarray]
    human: dict[str, np.ndarray]
    meta: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        sizes = {len(v) for v in self.scores.values()} | {len(v) for v in self.human.values()}
        if len(sizes) > 1:
            raise DialevalError(f"development set {self.name!r}: columns of different lengths {sorted(sizes)}")
        self.scores = {k: np.asarray(v, dtype=float) for k, v in self.scores.items()}
        self.human = {k: np.asarray(v, dtype=float) for k, v in self.human.items()}

    def __len__(self) -> int:
        for col in (*self.scores.values(), *self.human.values()):
            return len(col)
        return 0

    @classmethod
    def from_samples(cls, name: str, samples: Sequence[Any], scores: Mapping[str, Sequence[float]],
                     qualities: Sequence[str] | None = None) -> "DevSet":
        """Human means (annotators averaged) from `Sample.ratings`, beside metric columns."""
        found = qualities or sorted({q for s in samples for q in s.ratings})
        human = {q: np.array([s.human(q) for s in samples]) for q in found}
        human = {q: v for q, v in human.items() if np.isfinite(v).any()}
        return cls(name, {m: np.asarray(v, dtype=float) for m, v in scores.items()}, human)

    def subset(self, rows: np.ndarray) -> "DevSet":
        return DevSet(self.name, {k: v[rows] for k, v in self.scores.items()},
                      {k: v[rows] for k, v in self.human.items()}, dict(self.meta))


class NegativePool:
    """A set's training negatives, scored on demand: `n` made rows, and `score(indices)` giving
    each member's values on those rows alone ({metric: values}).

    Why: the fit draws `negative_share` x a set's items among its made rows (the shipped 0.25
    against four families of the 60% of items outside the probes' top: about one row in ten),
    so scoring every made row wastes nine passes in ten. That is nothing for a word-overlap
    member and hours for an LLM judge. Scaling is row by row, so the drawn rows scored alone
    give the fit the same numbers, provided no member's score of a row depends on the rows
    scored with it (a metric with a corpus pass, such as CIDEr's IDF, does: `dialeval fit
    compose` scores every made row for such members)."""

    def __init__(self, n: int, score):
        self.n, self._score = int(n), score

    def __len__(self) -> int:
        return self.n

    def take(self, rows: np.ndarray) -> Mapping[str, Sequence[float]]:
        return self._score(rows)

    @classmethod
    def scored(cls, columns: Mapping[str, Sequence[float]]) -> "NegativePool":
        """A pool of rows already scored ({metric: values}, every made row): `take` slices them."""
        arrays = {m: np.asarray(v, dtype=float) for m, v in columns.items()}
        n = min((len(v) for v in arrays.values()), default=0)
        return cls(n, lambda rows: {m: v[rows] for m, v in arrays.items()})


def spearman(x: np.ndarray, y: np.ndarray, min_items: int = 5) -> float:
    """Spearman over the items where both are finite; NaN if fewer than `min_items` or constant."""
    return spearman_finite(x, y, min_items)


def crs_weights(r: np.ndarray, p: float) -> np.ndarray | None:
    """Eq. 1 for one (set, quality): r clipped at 0 (NaN counts as 0), raised to p, normalised.
    None when every r is 0 (the pair says nothing about which metric matters)."""
    r = np.where(np.isfinite(r), np.maximum(r, 0.0), 0.0)
    powered = r ** p
    total = powered.sum()
    if not total > 0:
        return None
    return powered / total


def consistent_weights(weights: np.ndarray, r: np.ndarray) -> np.ndarray:
    """`weights` with every metric dropped whose Spearman is not positive on all the pairs (rows of
    `r`) that measured it, renormalised: a metric that helps on some corpora and hurts on others
    gets nothing, because a new corpus may be one where it hurts. A NaN (a set the metric could
    not score) neither keeps nor drops it. When no metric is consistent, all the weight goes to
    the one with the best mean Spearman over the pairs (then the composite is that member)."""
    finite = np.isfinite(r)
    keep = (np.where(finite, r, 1.0) > 0).all(axis=0) & finite.any(axis=0)
    w = np.where(keep & np.isfinite(weights), weights, 0.0)
    if w.sum() > 0:
        return w / w.sum()
    means = np.array([np.mean(col[np.isfinite(col)]) if np.isfinite(col).any() else -np.inf for col in r.T])
    out = np.zeros(r.shape[1])
    out[int(np.argmax(means))] = 1.0
    return out


class ComposeModel(Estimator):
    """Per-quality composition of metric scores: CRS (MME-CRS eq. 1-3), plain average, or ridge.
    What every method shares lives here (scaling, stand-ins, the Spearman table, persistence);
    what differs is the method's `Weighting` (`CRS`, `Average`, `Ridge` below), chosen by `method`.

    Options:
        method: crs (correlation re-scaling), avg (MME-Avg, uniform weights) or ridge
        p: CRS power on the clipped Spearman correlations (paper: 2; also 1 and 3)
        scaling: how scores are mapped to [0, 1]: minmax or percentile of the pooled development scores, or none
        clip_percentile: k for scaling=percentile: [P_k, P_(100-k)] maps onto [0, 1] (default 5)
        max_items: items drawn at random per development set for the correlations (paper 300; 0 = all)
        min_items: fewest items with a metric and a human score for a correlation to count (default 5)
        seed: seed of the item draw and the ridge cross-validation folds
        alphas: ridge penalties tried by cross-validation (default 1e-3 .. 1e3, 13 values)
        consistent: crs/avg: keep only the metrics whose Spearman is positive on every development
            pair of the quality (set, quality); when none is, the one with the best mean Spearman
        positive: ridge: coefficients held at zero or above, so that a member can add to the
            score but never count against it (a negative weight learned on some corpora is what
            fails to carry over to a new one: docs/compose.md)
        negative_share: ridge: degenerate responses (probe families) per rated item of a set,
            trained at the set's lowest rating (0: none; docs/compose.md)
        stand_in: QUALITY=ALT1,ALT2: a development set that does not rate QUALITY lends its
            first rating among ALT1, ALT2 ... in its place (e.g. overall=coherence,engaging:
            a corpus rated for coherence alone still teaches the overall weights; several
            targets are separated by ';'; default: none)
    """

    kind = "compose"
    schema = 2
    since = {"stand_in": 2}

    def __init__(self, method: Literal["crs", "avg", "ridge"] = "crs", p: float = 2.0,
                 scaling: Literal["minmax", "percentile", "none"] = "minmax",
                 clip_percentile: float = 5.0, max_items: int = 0, min_items: int = 5,
                 seed: int = 0, alphas: Sequence[float] | None = None, consistent: bool = False,
                 positive: bool = False, negative_share: float = 0.0, stand_in: str = ""):
        self.method = method
        self.stand_in = stand_in
        self.negative_share = negative_share
        self.consistent = consistent
        self.positive = positive
        self.p = p
        self.scaling = scaling
        self.clip_percentile = clip_percentile
        self.max_items = max_items
        self.min_items = min_items
        self.seed = seed
        self.alphas = alphas

    # -- checks ------------------------------------------------------------------------------
    def check_params(self) -> None:
        """Refuse bad settings before any data is read (the CLI calls it before scoring)."""
        if self.method not in METHODS:
            raise DialevalError(f"unknown composition method {self.method!r}; choose from {', '.join(METHODS)}")
        if self.scaling not in SCALINGS:
            raise DialevalError(f"unknown scaling {self.scaling!r}; choose from {', '.join(SCALINGS)}")
        if not float(self.p) > 0:
            raise DialevalError(f"CRS power p must be positive, got {self.p}")
        if not 0 <= float(self.clip_percentile) < 50:
            raise DialevalError(f"clip_percentile must lie in [0, 50), got {self.clip_percentile}")
        if not 0 <= float(self.negative_share) <= 10:
            raise DialevalError(f"negative_share must lie in [0, 10], got {self.negative_share}")
        self.weighting().check(self)
        self.stand_ins()

    def weighting(self) -> "Weighting":
        """The method's own part: how development data become weights, and how they score."""
        return WEIGHTINGS[self.method]

    def stand_ins(self) -> list[tuple[str, list[str]]]:
        """`stand_in` parsed: [(quality, [alternatives in order])]."""
        out: list[tuple[str, list[str]]] = []
        for part in (self.stand_in or "").split(";"):
            if not part.strip():
                continue
            target, eq, alts = part.partition("=")
            names = [a.strip() for a in alts.split(",") if a.strip()]
            if not eq or not target.strip() or not names or target.strip() in names:
                raise DialevalError(f"stand_in {part.strip()!r}: expected QUALITY=ALT1,ALT2 "
                                    "(alternatives other than the quality itself)")
            if target.strip() in {t for t, _ in out}:
                raise DialevalError(f"stand_in names {target.strip()!r} twice")
            out.append((target.strip(), names))
        return out

    def _with_stand_ins(self, devsets: Sequence[DevSet]) -> list[DevSet]:
        """The sets with each stand-in rating copied under its target's name, where the set
        does not rate the target; records [set, target, alternative] in `stand_ins_used_`."""
        loans = self.stand_ins()
        if not loans:
            return list(devsets)
        used, out = [], []
        for d in devsets:
            lent = {}
            for target, alts in loans:
                if target in d.human:
                    continue
                alt = next((a for a in alts if a in d.human), None)
                if alt is not None:
                    lent[target] = d.human[alt]
                    used.append([d.name, target, alt])
            out.append(DevSet(d.name, d.scores, {**d.human, **lent}, dict(d.meta)) if lent else d)
        self.stand_ins_used_ = used
        return out

    # -- fitting -----------------------------------------------------------------------------
    def fit(self, devsets: Sequence[DevSet], metrics: Sequence[str] | None = None,
            qualities: Sequence[str] | None = None, *,
            metric_options: Mapping[str, Any] | None = None,
            signatures: Mapping[str, str] | None = None,
            negatives: Mapping[str, Mapping[str, Sequence[float]]] | None = None) -> "ComposeModel":
        """Learn scaling and per-quality weights (or ridge coefficients) from `devsets`.

        `metrics` defaults to the columns every set has; `qualities` to every quality some
        set rates. `metric_options` and `signatures` are recorded in the artifact so that the
        `compose` metric can rebuild the same metrics. `negatives` maps a set's name to its
        members' scores of degenerate responses (used with `negative_share` > 0), or to a
        `NegativePool` that scores only the rows the fit draws."""
        self.check_params()
        if not devsets:
            raise DialevalError("no development sets to fit the composition on")
        for name in self.fitted_attributes():      # a refit starts clean (no stale coef_ etc.)
            delattr(self, name)
        if metrics is None:
            common = set(devsets[0].scores)
            for d in devsets[1:]:
                common &= set(d.scores)
            metrics = [m for m in devsets[0].scores if m in common]
        metrics = list(metrics)
        if not metrics:
            raise DialevalError("no metric columns to compose")
        for d in devsets:
            missing = [m for m in metrics if m not in d.scores]
            if missing:
                raise DialevalError(f"development set {d.name!r} has no scores for {', '.join(missing)}")
        devsets = self._with_stand_ins(devsets)
        rated = sorted({q for d in devsets for q in d.human})
        if qualities is None:
            qualities = rated
        qualities = list(dict.fromkeys(qualities))
        unknown = [q for q in qualities if q not in rated]
        if unknown:
            raise DialevalError(f"no development set rates {unknown[0]!r}; rated qualities: {', '.join(rated)}")
        devsets = [self._draw(d, i) for i, d in enumerate(devsets)]

        self.metrics_ = metrics
        self.qualities_ = qualities
        self.devsets_ = [d.name for d in devsets]
        self.metric_options_ = dict(metric_options or {})
        self.signatures_ = dict(signatures or {})
        self._fit_scaling(devsets)

        # Spearman of every metric with every quality of every set (the CRS statistics; also
        # kept for the other methods, as a report of what the development data said).
        pairs, corr = [], []
        for d in devsets:
            for q in sorted(d.human):
                pairs.append([d.name, q])
                corr.append([spearman(d.scores[m], d.human[q], self.min_items) for m in metrics])
        self.pairs_ = pairs
        self.spearman_ = np.array(corr, dtype=float).reshape(len(pairs), len(metrics))

        self.weighting().fit(self, devsets, qualities, negatives or {})
        return self

    def _draw(self, d: DevSet, index: int) -> DevSet:
        if not self.max_items or len(d) <= self.max_items:
            return d
        rng = np.random.default_rng([int(self.seed), index])
        return d.subset(np.sort(rng.choice(len(d), size=int(self.max_items), replace=False)))

    def _fit_scaling(self, devsets: Sequence[DevSet]) -> None:
        lo, hi = [], []
        for m in self.metrics_:
            pooled = np.concatenate([d.scores[m] for d in devsets])
            pooled = pooled[np.isfinite(pooled)]
            if pooled.size == 0:
                raise DialevalError(f"metric {m!r} scored no development item (all NaN); drop it")
            if self.scaling == "percentile":
                k = float(self.clip_percentile)
                a, b = np.percentile(pooled, [k, 100 - k])
            elif self.scaling == "minmax":
                a, b = pooled.min(), pooled.max()
            else:
                a, b = 0.0, 1.0
            lo.append(a)
            hi.append(b)
        self.scale_low_ = np.array(lo, dtype=float)
        self.scale_high_ = np.array(hi, dtype=float)

    # -- prediction --------------------------------------------------------------------------
    def scale(self, scores: Mapping[str, Sequence[float]]) -> dict[str, np.ndarray]:
        """Each metric's scores mapped to [0, 1] with the stored development range (clipped)."""
        self.check_fitted()
        mat = self._scaled_matrix(scores)
        return {m: mat[:, j] for j, m in enumerate(self.metrics_)}

    def _scaled_matrix(self, scores: Mapping[str, Sequence[float]]) -> np.ndarray:
        missing = [m for m in self.metrics_ if m not in scores]
        if missing:
            raise DialevalError(f"composition needs scores for {', '.join(missing)}")
        raw = np.column_stack([np.asarray(scores[m], dtype=float) for m in self.metrics_])
        if self.scaling == "none":
            return raw
        span = self.scale_high_ - self.scale_low_
        with np.errstate(invalid="ignore", divide="ignore"):
            out = np.where(span > 0, (raw - self.scale_low_) / np.where(span > 0, span, 1.0), 0.5)
        out = np.clip(out, 0.0, 1.0)
        return np.where(np.isfinite(raw), out, np.nan)

    def _impute(self, mat: np.ndarray) -> np.ndarray:
        return np.where(np.isfinite(mat), mat, self.fill_)

    def row_of(self, quality: str | None) -> int:
        """Index of `quality`'s weights row; the pooled row for a quality no dev set rated."""
        self.check_fitted()
        if quality is None:
            return 0
        return self.qualities_.index(quality) if quality in self.qualities_ else len(self.qualities_)

    def fallback_used(self, quality: str | None) -> bool:
        """True when `quality` is scored with the pooled row: no development set rates it, or
        none that does told anything (every correlation <= 0; for ridge, no usable set)."""
        if quality is None:
            quality = self.qualities_[0]
        return quality not in self.qualities_ or self.weight_sets_[self.row_of(quality)] == 0

    def weights_for(self, quality: str | None) -> dict[str, float]:
        """{metric: weight} for `quality` (CRS/avg weights; ridge coefficients)."""
        row = self.row_of(quality)
        table = getattr(self, self.weighting().table)
        return {m: float(table[row, j]) for j, m in enumerate(self.metrics_)}

    def predict(self, scores: Mapping[str, Sequence[float]], quality: str | None = None) -> np.ndarray:
        """Composite score per item for `quality` (default: the first fitted quality)."""
        return self.weighting().predict(self, self._scaled_matrix(scores), self.row_of(quality))

    # -- persistence -------------------------------------------------------------------------
    def _set_state(self, values, arrays, directory):
        super()._set_state(values, arrays, directory)
        for name in ("metrics_", "qualities_", "devsets_"):
            setattr(self, name, list(getattr(self, name)))

    @classmethod
    def recorded(cls, directory: str | os.PathLike) -> "ComposeModel":
        """The fit's parameters and what its config.json records (members, their options and
        signatures, qualities), without the weights: what building, planning and signing the
        metric read. The folder is verified once (`artifacts.check`), as loading would; the
        weights (`load`) are read on first use."""
        from ...models.artifacts import check, read_json
        from ...models.store import verify

        folder = os.path.abspath(os.fspath(directory))
        if check(folder, cls.kind) is None:
            verify(folder, cls.kind)               # its one-line refusal of a folder without a manifest
        config = read_json(folder)
        est = cls(**cls.params_from_config(config, os.path.join(folder, "config.json")))
        est._set_state(config.get("state") or {}, {}, folder)
        return est

    def describe(self) -> dict[str, Any]:
        """What was learned, as JSON-able data (printed by `dialeval fit compose`)."""
        self.check_fitted()
        out: dict[str, Any] = {"method": self.method, "metrics": self.metrics_,
                               "qualities": self.qualities_, "devsets": self.devsets_,
                               "scaling": {"how": self.scaling,
                                           **({"clip_percentile": self.clip_percentile}
                                              if self.scaling == "percentile" else {}),
                                           "low": dict(zip(self.metrics_, self.scale_low_.tolist())),
                                           "high": dict(zip(self.metrics_, self.scale_high_.tolist()))}}
        self.weighting().describe(self, out)
        if getattr(self, "stand_ins_used_", None):
            out["stand_ins"] = [{"set": d, "quality": q, "from": a} for d, q, a in self.stand_ins_used_]
        out["spearman"] = [{"set": d, "quality": q, **{m: float(v) for m, v in zip(self.metrics_, row)}}
                           for (d, q), row in zip(self.pairs_, self.spearman_)]
        return out


class Weighting:
    """One composition method: what its options require, how the development data become its
    per-quality table (`fit`, writing the `*_` attributes of the `ComposeModel` it is given), how
    that table scores an item, and what `describe` adds. The estimator keeps what every method
    shares (scaling, stand-ins, the Spearman table, persistence); a method is chosen by the
    `method` parameter, so an artifact names its method as it always did."""

    name: ClassVar[str] = ""
    table: ClassVar[str] = "weights_"       # the attribute `weights_for` reads

    def check(self, model: "ComposeModel") -> None:
        """Refuse an option that would do nothing under this method (refused, not ignored)."""
        if model.positive:
            raise DialevalError(f"positive applies to ridge coefficients; method {self.name!r} "
                                "weighs with non-negative weights already")
        if float(model.negative_share) > 0:
            raise DialevalError(f"negative_share applies to ridge; method {self.name!r} weighs by "
                                "correlations, which training negatives do not change")

    def fit(self, model: "ComposeModel", devsets: Sequence[DevSet], qualities: Sequence[str],
            negatives: Mapping[str, Mapping[str, Sequence[float]]]) -> None:
        raise NotImplementedError

    def predict(self, model: "ComposeModel", mat: np.ndarray, row: int) -> np.ndarray:
        raise NotImplementedError

    def describe(self, model: "ComposeModel", out: dict[str, Any]) -> None:
        out["weights"] = {q: model.weights_for(q) for q in [*model.qualities_, POOLED]}


class PairWeights(Weighting):
    """Weights per (set, quality) pair averaged per quality (eq. 2), read as a weighted mean of
    the scaled scores (eq. 3): CRS and its uniform baseline differ only in a pair's weights."""

    def pair_weights(self, model: "ComposeModel", r: np.ndarray) -> np.ndarray | None:
        raise NotImplementedError

    def fit(self, model, devsets, qualities, negatives) -> None:
        m = len(model.metrics_)
        per_pair = []
        for r in model.spearman_:
            w = self.pair_weights(model, r)
            per_pair.append(w if w is not None else np.full(m, np.nan))
        per_pair = np.array(per_pair, dtype=float).reshape(len(model.pairs_), m)
        model.pair_weights_ = per_pair
        rows, used = [], []
        for q in [POOLED, *qualities]:
            take = [i for i, (_, pq) in enumerate(model.pairs_)
                    if (q == POOLED or pq == q) and np.isfinite(per_pair[i]).all()]
            used.append(len(take))
            # no informative pair: the pooled weights (and uniform if nothing is informative)
            row = per_pair[take].mean(axis=0) if take else rows[0] if rows else np.full(m, 1.0 / m)
            if model.consistent:
                scope = [i for i, (_, pq) in enumerate(model.pairs_) if q == POOLED or pq == q]
                row = consistent_weights(row, model.spearman_[scope]) if scope else (rows[0] if rows else row)
            rows.append(row)
        model.weights_ = np.array(rows[1:] + rows[:1], dtype=float)
        model.weight_sets_ = used[1:] + used[:1]   # pairs averaged per row (0: the pooled row stands in)

    def predict(self, model, mat, row) -> np.ndarray:
        ok = np.isfinite(mat)
        values = np.where(ok, mat, 0.0)
        out = np.full(len(mat), np.nan)
        todo = ok.any(axis=1)
        # the quality's weights; items whose weighted metrics are all missing fall back to the
        # pooled weights, then to the plain mean of what they have
        for w in (model.weights_[row], model.weights_[-1], np.ones(len(model.metrics_))):
            mass = (ok * w).sum(axis=1)
            take = todo & (mass > 0)
            out[take] = (values[take] * w).sum(axis=1) / mass[take]
            todo &= ~take
        return out


class CRS(PairWeights):
    """MME-CRS: a pair's weights are its clipped Spearman correlations to the power p (eq. 1)."""

    name = "crs"

    def pair_weights(self, model, r):
        return crs_weights(r, float(model.p))

    def describe(self, model, out) -> None:
        out["p"] = model.p
        super().describe(model, out)


class Average(PairWeights):
    """MME-Avg: every metric weighs the same."""

    name = "avg"

    def pair_weights(self, model, r):
        return np.full(len(model.metrics_), 1.0 / len(model.metrics_))


class Ridge(Weighting):
    """A ridge regression per quality on the scaled scores of the pooled development items,
    each set's human scores z-scored within the set, the penalty chosen by cross-validation on
    the development data alone (see the module doc); optionally with training negatives."""

    name = "ridge"
    table = "coef_"

    def check(self, model) -> None:
        if model.consistent:
            raise DialevalError("the consistent rule applies to crs and avg weights, not to ridge "
                                "(use positive to keep ridge coefficients >= 0)")

    def fit(self, model, devsets, qualities, negatives) -> None:
        negative_x = self.negative_rows(model, devsets, negatives)
        scaled = {d.name: model._scaled_matrix(d.scores) for d in devsets}
        stacked = np.concatenate(list(scaled.values()))
        fill = np.nanmean(stacked, axis=0)
        model.fill_ = np.where(np.isfinite(fill), fill, 0.5)
        coefs, intercepts, alphas, used = [], [], [], []
        for q in [POOLED, *qualities]:
            xs, ys, groups, rated = [], [], [], []
            for g, d in enumerate(devsets):
                for dq in sorted(d.human):
                    if q != POOLED and dq != q:
                        continue
                    y = d.human[dq]
                    ok = np.isfinite(y)
                    if ok.sum() < max(2, model.min_items) or np.nanstd(y) == 0:
                        continue
                    z = (y[ok] - y[ok].mean()) / y[ok].std()
                    xs.append(model._impute(scaled[d.name][ok]))
                    ys.append(z)
                    groups.append(np.full(ok.sum(), g))
                    rated.append(np.ones(ok.sum(), dtype=bool))
                    if d.name in negative_x and len(negative_x[d.name]):
                        # a degenerate response is worth the set's lowest rating
                        neg = model._impute(negative_x[d.name])
                        xs.append(neg)
                        ys.append(np.full(len(neg), z.min()))
                        groups.append(np.full(len(neg), g))
                        rated.append(np.zeros(len(neg), dtype=bool))
            used.append(len(xs))
            if not xs:      # the pooled model stands in (zeros if nothing was usable at all)
                coefs.append(coefs[0] if coefs else np.zeros(len(model.metrics_)))
                intercepts.append(intercepts[0] if intercepts else 0.0)
                alphas.append(alphas[0] if alphas else math.nan)
                continue
            coef, icpt, alpha = _ridge_cv(np.concatenate(xs), np.concatenate(ys),
                                          np.concatenate(groups), self.alphas(model), model.seed,
                                          bool(model.positive), np.concatenate(rated))
            coefs.append(coef)
            intercepts.append(icpt)
            alphas.append(alpha)
        # stored in the order of qualities_, the pooled row last
        model.coef_ = np.array(coefs[1:] + coefs[:1], dtype=float)
        model.intercept_ = np.array(intercepts[1:] + intercepts[:1], dtype=float)
        model.alpha_ = np.array(alphas[1:] + alphas[:1], dtype=float)
        model.weight_sets_ = used[1:] + used[:1]

    @staticmethod
    def alphas(model) -> list[float]:
        return [float(a) for a in (model.alphas if model.alphas else DEFAULT_ALPHAS)]

    @staticmethod
    def negative_rows(model, devsets: Sequence[DevSet],
                      negatives: Mapping[str, Mapping[str, Sequence[float]]]) -> dict[str, np.ndarray]:
        """Each set's drawn training negatives, scaled: `negative_share` x its items, seeded.

        Why: a member that a degenerate response games (a parroted context turn is the most
        likely reply to an LM, a word loop looks fluent to a head) is not caught by the rated
        items, which hold no such responses, so ridge gives the members that see through it no
        reason to weigh more. Rows of those responses at the set's lowest rating give it one;
        the penalty is still chosen on the rated items alone (`_ridge_cv`'s `rated`)."""
        share = float(model.negative_share)
        if share <= 0:
            return {}
        out, counts = {}, {}
        for g, d in enumerate(devsets):
            pool = negatives.get(d.name)
            if not pool:
                continue
            if not isinstance(pool, NegativePool):
                pool = NegativePool.scored(pool)
            take = min(len(pool), int(round(share * len(d))))
            rng = np.random.default_rng([int(model.seed), g, 7])
            cols = pool.take(np.sort(rng.choice(len(pool), size=take, replace=False)))
            missing = [m for m in model.metrics_ if m not in cols]
            if missing:
                raise DialevalError(f"training negatives of {d.name!r} have no scores for {', '.join(missing)}")
            # scaling is row by row: the drawn rows scaled alone are the rows of the scaled whole
            out[d.name] = model._scaled_matrix({m: np.asarray(cols[m], dtype=float) for m in model.metrics_})
            counts[d.name] = take
        model.negatives_used_ = counts
        return out

    def predict(self, model, mat, row) -> np.ndarray:
        # a row-wise sum, not a matrix product: BLAS may round a row differently with the
        # number of rows around it, and a sample's score must not depend on its shard
        return (model._impute(mat) * model.coef_[row]).sum(axis=1) + model.intercept_[row]

    def describe(self, model, out) -> None:
        super().describe(model, out)
        out["positive"] = bool(model.positive)
        out["intercept"] = dict(zip([*model.qualities_, POOLED], model.intercept_.tolist()))
        out["alpha"] = dict(zip([*model.qualities_, POOLED], model.alpha_.tolist()))


WEIGHTINGS: dict[str, Weighting] = {w.name: w for w in (CRS(), Average(), Ridge())}


def _ridge_cv(x: np.ndarray, y: np.ndarray, groups: np.ndarray, alphas: Sequence[float],
              seed: int, positive: bool = False, rated: np.ndarray | None = None) -> tuple[np.ndarray, float, float]:
    """(coef, intercept, alpha): alpha maximising the mean held-out Spearman, then a refit on all.

    Folds are the groups (one development set each, all its rated qualities together, so a
    set's items never sit on both sides) when there are at least two, else 5 seeded random
    folds. `rated` marks the rows a held-out Spearman is measured on (the rated items; training
    negatives train but are never what a penalty is chosen by)."""
    from ...optional import require

    Ridge = require("sklearn.linear_model", "the ridge baseline", "compose").Ridge

    uniq = np.unique(groups)
    if len(uniq) >= 2:
        folds = [groups == g for g in uniq]
    else:
        rng = np.random.default_rng(seed)
        assign = rng.permutation(len(y)) % min(5, len(y))
        folds = [assign == k for k in range(min(5, len(y)))]
    best_alpha, best_score = float(alphas[0]), -math.inf
    for alpha in alphas:
        scores = []
        for test in folds:
            if test.all() or not test.any():
                continue
            model = Ridge(alpha=alpha, positive=positive).fit(x[~test], y[~test])
            judged = test if rated is None else test & rated
            r = spearman_finite(model.predict(x[judged]), y[judged], 2)
            scores.append(r if math.isfinite(r) else 0.0)
        score = float(np.mean(scores)) if scores else -math.inf
        if score > best_score + 1e-12:
            best_alpha, best_score = float(alpha), score
    model = Ridge(alpha=best_alpha, positive=positive).fit(x, y)
    return np.asarray(model.coef_, dtype=float), float(model.intercept_), best_alpha
