"""Scoring grids, cross-fitting and cross-validated choice of lambda, L and n.

`score_grid` gives, for every sample, AM at each L of a grid and FM at each LM order, from
either one training corpus or **cross-fitting** on the evaluation set's own references: the
turns (samples sharing one reference list) are split into k folds and each fold is scored by
a model trained on the other folds' references only. No human score is read there.

Hyper-parameters are then chosen to maximise Pearson with human scores, and that choice is
only honest when evaluated on points it did not see: `cross_validate` picks the best candidate
on the training systems of each fold (leave-one-system-out or k folds of systems) and scores
the held-out systems with it; the held-out predictions are then correlated with the humans.
"""

from __future__ import annotations

import random
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Hashable, Mapping, Sequence

import numpy as np

from ...errors import DialevalError
from .lsi import am_scores, fit_lsi
from .metric import fm_scores
from .ngram import ArpaLM, train_arpa


@dataclass
class Grid:
    """Per-sample AM (one row per L) and FM (one row per n) scores."""

    dims: list[int]
    orders: list[int]
    am: np.ndarray                 # (len(dims), n_samples)
    fm: np.ndarray                 # (len(orders), n_samples)
    info: dict[str, Any] = field(default_factory=dict)


def turn_keys(refs: Sequence[Sequence[str]]) -> np.ndarray:
    """Integer id of each sample's turn: samples with the same reference list share a turn."""
    ids: dict[tuple, int] = {}
    return np.array([ids.setdefault(tuple(r), len(ids)) for r in refs], dtype=np.int64)


def _score_part(train: Sequence[str], hyps, refs, dims, orders, *, weighting, am_refs, fm_refs,
                seed, lsi_sentences, progress=None) -> tuple[np.ndarray, np.ndarray, dict]:
    """AM at every L and FM at every n for `hyps`, from one SVD and one LM per order trained on
    `train`; a line per stage (`progress`), since a large corpus takes minutes."""
    start = time.perf_counter()
    say = progress or (lambda _m: None)
    lsi_train = list(train)
    if lsi_sentences and len(lsi_train) > lsi_sentences:
        lsi_train = random.Random(seed).sample(lsi_train, lsi_sentences)
    lsi = fit_lsi(lsi_train, max(dims), weighting=weighting, seed=seed)
    say(f"  LSI of {lsi.dims} dimensions on {len(lsi_train)} sentences ({time.perf_counter() - start:.0f} s)")
    used = [min(d, lsi.dims) for d in dims]
    am = am_scores(lsi, hyps, refs, used, am_refs)
    say(f"  AM at L = {sorted(set(used))} ({time.perf_counter() - start:.0f} s)")
    fm = np.empty((len(orders), len(hyps)))
    with tempfile.TemporaryDirectory(prefix="dialeval-amfm-grid-") as tmp:
        for j, order in enumerate(orders):
            lm = ArpaLM(train_arpa(train, order, f"{tmp}/lm{order}.arpa"))
            fm[j] = fm_scores(lm, hyps, refs, fm_refs)
            say(f"  FM with the {order}-gram LM on {len(train)} sentences ({time.perf_counter() - start:.0f} s)")
    return am, fm, {"lsi_dims": lsi.dims, "vocabulary": len(lsi.vocab), "sentences": len(train),
                    "seconds": time.perf_counter() - start}


def score_grid(hyps: Sequence[str], refs: Sequence[Sequence[str]], dims: Sequence[int],
               orders: Sequence[int], *, corpus: Sequence[str] | None = None, folds: int = 0,
               weighting: str = "tf", am_refs: str = "max", fm_refs: str = "max", seed: int = 0,
               lsi_sentences: int | None = 10000, progress: Callable[[str], None] | None = None) -> Grid:
    """AM/FM of every sample for every L and n; trained on `corpus`, or cross-fitted on the
    samples' own references with `folds` folds of turns (corpus None)."""
    dims, orders = [int(d) for d in dims], [int(o) for o in orders]
    opts = dict(weighting=weighting, am_refs=am_refs, fm_refs=fm_refs, seed=seed,
                lsi_sentences=lsi_sentences, progress=progress)
    if corpus is not None:
        am, fm, info = _score_part(corpus, hyps, refs, dims, orders, **opts)
        return Grid(dims, orders, am, fm, {"training": "corpus", **info})
    if folds < 2:
        raise DialevalError("cross-fitting needs at least 2 folds")
    turns = turn_keys(refs)
    n_turns = int(turns.max()) + 1
    if n_turns < folds:
        raise DialevalError(f"{n_turns} turns cannot make {folds} folds")
    fold_of_turn = np.random.default_rng(seed).permutation(n_turns) % folds
    fold = fold_of_turn[turns]
    first = {}
    for i, t in enumerate(turns):
        first.setdefault(int(t), i)
    am = np.full((len(dims), len(hyps)), np.nan)
    fm = np.full((len(orders), len(hyps)), np.nan)
    infos = []
    for f in range(folds):
        train = [r for t, i in first.items() if fold_of_turn[t] != f for r in refs[i]]
        rows = np.flatnonzero(fold == f)
        if progress:
            progress(f"fold {f + 1}/{folds}: {len(train)} reference sentences, {len(rows)} samples")
        a, b, info = _score_part(train, [hyps[i] for i in rows], [refs[i] for i in rows],
                                 dims, orders, **opts)
        am[:, rows], fm[:, rows] = a, b
        infos.append(info)
    return Grid(dims, orders, am, fm, {"training": f"crossfit-{folds}", "folds": infos})


# -- system level ------------------------------------------------------------------------------
def system_means(values: np.ndarray, systems: Sequence[str], order: Sequence[str]) -> np.ndarray:
    """Mean over each system's samples, for every row of `values`: shape (rows, len(order))."""
    values = np.atleast_2d(values)
    index = {s: k for k, s in enumerate(order)}
    cols = np.array([index[s] for s in systems])
    sums = np.zeros((values.shape[0], len(order)))
    counts = np.bincount(cols, minlength=len(order)).astype(float)
    for k in range(values.shape[0]):
        sums[k] = np.bincount(cols, weights=np.nan_to_num(values[k]), minlength=len(order))
    return sums / counts


def pearson(x: Sequence[float], y: Sequence[float]) -> tuple[float, float]:
    from scipy.stats import pearsonr

    x, y = np.asarray(x, float), np.asarray(y, float)
    if len(x) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return float("nan"), float("nan")
    r, p = pearsonr(x, y)
    return float(r), float(p)


def combine(am: np.ndarray, fm: np.ndarray, lam: float) -> np.ndarray:
    """Eq. 4. At system level the mean of combined scores is the combination of the means."""
    return lam * am + (1.0 - lam) * fm


def system_folds(n_systems: int, scheme: str = "loso", k: int = 5, seed: int = 0) -> list[np.ndarray]:
    """Held-out system indices per fold: `loso` (one system each) or `kfold` (k folds)."""
    if scheme == "loso":
        return [np.array([i]) for i in range(n_systems)]
    if scheme == "kfold":
        if not 2 <= k <= n_systems:
            raise DialevalError(f"k-fold over {n_systems} systems needs 2 <= k <= {n_systems}")
        perm = np.random.default_rng(seed).permutation(n_systems)
        return [np.sort(perm[f::k]) for f in range(k)]
    raise DialevalError(f"unknown cross-validation scheme {scheme!r}; choose loso or kfold")


@dataclass
class CVResult:
    pearson: float
    p_value: float
    predicted: np.ndarray                  # held-out score of every system
    chosen: list[Hashable]                 # candidate chosen in each fold
    folds: list[np.ndarray]


def cross_validate(candidates: Mapping[Hashable, np.ndarray], human: np.ndarray, *,
                   scheme: str = "loso", k: int = 5, seed: int = 0) -> CVResult:
    """Choose, on each fold's training systems only, the candidate (a system-level score
    vector, e.g. one per lambda or per (L, n, lambda)) with the highest Pearson; score the
    held-out systems with it; correlate all held-out scores with `human`.

    Held-out values are the chosen candidate's raw scores: AM, FM and every eq.-4 mixture live
    on the same [0, 1] scale, so values chosen in different folds stay comparable, as they are
    when the metric is used. (Re-scaling each fold by a line fitted to 19 weakly correlated
    systems would instead flatten an outlying held-out system such as DSTC6's S_20.)"""
    human = np.asarray(human, float)
    keys = list(candidates)
    if not keys:
        raise DialevalError("no candidates to choose from")
    matrix = np.stack([np.asarray(candidates[key], float) for key in keys])
    folds = system_folds(len(human), scheme, k, seed)
    predicted = np.full(len(human), np.nan)
    chosen: list[Hashable] = []
    for held in folds:
        train = np.setdiff1d(np.arange(len(human)), held)
        scores = [pearson(row[train], human[train])[0] for row in matrix]
        scores = [-np.inf if s != s else s for s in scores]
        best = int(np.argmax(scores))
        chosen.append(keys[best])
        predicted[held] = matrix[best][held]
    r, p = pearson(predicted, human)
    return CVResult(r, p, predicted, chosen, folds)
