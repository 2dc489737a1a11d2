"""Adequacy (eq. 1): cosine of response and reference in an LSI space.

Sentences become bag-of-words vectors over the training vocabulary (words never seen in
training are dropped: LSI has no coordinate for them), weighted as `weighting` says, and are
projected by the top-L right singular vectors of the training term-sentence matrix
(scikit-learn's TruncatedSVD, as the paper used). The singular vectors are kept sorted by
singular value, so a model trained with L_max dimensions also gives every L <= L_max by
taking a prefix: that is how the paper's Figure 1 was drawn, and how `sweep` draws it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ...errors import DialevalError
from .text import tokens

WEIGHTINGS = ("tf", "binary", "tfidf")
AM_REFS = ("max", "mean", "centroid")


@dataclass
class LSI:
    vocab: list[str]
    components: np.ndarray      # (L, M) right singular vectors, by decreasing singular value
    singular_values: np.ndarray  # (L,)
    idf: np.ndarray             # (M,) ones unless weighting is tfidf
    weighting: str = "tf"

    def __post_init__(self) -> None:
        self._index = {w: i for i, w in enumerate(self.vocab)}

    @property
    def dims(self) -> int:
        return int(self.components.shape[0])

    def bow(self, texts: Sequence[str]):
        """Sparse (n, M) weighted bag-of-words matrix."""
        return bag_of_words(texts, self._index, self.idf, self.weighting)

    def project(self, texts: Sequence[str], dims: int | None = None) -> np.ndarray:
        """(n, L) projections r^T U of eq. 1 (not normalised)."""
        dims = self.dims if dims is None else dims
        if not 1 <= dims <= self.dims:
            raise DialevalError(f"AM dimension {dims} outside 1..{self.dims} (the model's L)")
        if len(texts) == 0:
            return np.zeros((0, dims))
        return np.asarray(self.bow(texts) @ self.components[:dims].T)


def bag_of_words(texts: Sequence[str], index: dict[str, int], idf: np.ndarray, weighting: str):
    from scipy.sparse import csr_matrix

    rows, cols = [], []
    for i, text in enumerate(texts):
        ids = [index[t] for t in tokens(text) if t in index]
        rows.extend([i] * len(ids))
        cols.extend(ids)
    data = np.ones(len(rows))
    matrix = csr_matrix((data, (np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64))),
                        shape=(len(texts), len(index)))
    matrix.sum_duplicates()
    if weighting == "binary":
        matrix.data[:] = 1.0
    if weighting == "tfidf":
        matrix = matrix.multiply(idf[None, :]).tocsr()
    return matrix


def fit_lsi(sentences: Sequence[str], dims: int, *, weighting: str = "tf", seed: int = 0,
            n_iter: int | None = None) -> LSI:
    """Learn the vocabulary and the top-`dims` singular vectors (capped by the matrix rank)."""
    from ...optional import require

    TruncatedSVD = require("sklearn.decomposition", "AM-FM's LSI (training amfm)", "amfm").TruncatedSVD

    if weighting not in WEIGHTINGS:
        raise DialevalError(f"unknown AM term weighting {weighting!r}; choose from {', '.join(WEIGHTINGS)}")
    vocab = sorted({t for s in sentences for t in tokens(s)})
    if len(vocab) < 2:
        raise DialevalError("AM training corpus has fewer than 2 distinct words")
    index = {w: i for i, w in enumerate(vocab)}
    ones = np.ones(len(vocab))
    counts = bag_of_words(sentences, index, ones, "tf")
    df = np.bincount(counts.indices, minlength=len(vocab))
    n = counts.shape[0]
    idf = np.log((1.0 + n) / (1.0 + df)) + 1.0 if weighting == "tfidf" else ones
    matrix = bag_of_words(sentences, index, idf, weighting)
    cap = min(matrix.shape) - 1
    if cap < 1:
        raise DialevalError("AM training corpus too small for an SVD (needs 2+ sentences and words)")
    k = min(int(dims), cap)
    if n_iter is None:  # scikit-learn's own "auto" rule, made explicit so the model records it
        n_iter = 7 if k < 0.1 * min(matrix.shape) else 4
    svd = TruncatedSVD(n_components=k, algorithm="randomized", n_iter=n_iter, random_state=seed)
    svd.fit(matrix)
    order = np.argsort(-svd.singular_values_, kind="stable")
    components = svd.components_[order]
    # Fix each vector's sign (SVD leaves it free) so that training is reproducible bit for bit.
    signs = np.sign(components[np.arange(k), np.abs(components).argmax(axis=1)])
    signs[signs == 0] = 1.0
    return LSI(vocab=vocab, components=components * signs[:, None],
               singular_values=svd.singular_values_[order], idf=idf, weighting=weighting)


def cosine_prefix(a: np.ndarray, b: np.ndarray, dims: Sequence[int]) -> np.ndarray:
    """Cosines of row pairs (a[i], b[i]) in the first L coordinates, for every L in `dims`:
    shape (len(dims), n). A zero vector has cosine 0 with everything. Negative values are
    truncated to 0 (the paper restricts AM to [0, 1])."""
    dot = np.cumsum(a * b, axis=1)
    na = np.cumsum(a * a, axis=1)
    nb = np.cumsum(b * b, axis=1)
    cols = np.asarray(dims) - 1
    d, x, y = dot[:, cols].T, na[:, cols].T, nb[:, cols].T
    denom = np.sqrt(x * y)
    with np.errstate(invalid="ignore", divide="ignore"):
        cos = np.where(denom > 0, d / np.where(denom > 0, denom, 1.0), 0.0)
    return np.clip(cos, 0.0, 1.0)


def am_scores(lsi: LSI, hyps: Sequence[str], refs: Sequence[Sequence[str]], dims: Sequence[int],
              refs_rule: str = "max") -> np.ndarray:
    """AM of every hypothesis for every L in `dims`: shape (len(dims), n), NaN where a
    hypothesis has no reference. `refs_rule`: max / mean over references, or the cosine with
    the centroid of the references' unit-length projections (section 3.2)."""
    if refs_rule not in AM_REFS:
        raise DialevalError(f"unknown AM reference rule {refs_rule!r}; choose from {', '.join(AM_REFS)}")
    dims = [int(d) for d in dims]
    top = max(dims)
    n = len(hyps)
    out = np.full((len(dims), n), np.nan)
    counts = np.array([len(r) for r in refs], dtype=np.int64)
    if n == 0 or counts.sum() == 0:
        return out
    unique = {}
    for text in list(hyps) + [r for rs in refs for r in rs]:
        unique.setdefault(text, len(unique))
    proj = lsi.project(list(unique), top)
    h = proj[[unique[t] for t in hyps]]
    flat = [unique[r] for rs in refs for r in rs]
    owner = np.repeat(np.arange(n), counts)
    has = counts > 0
    if refs_rule == "centroid":
        for j, d in enumerate(dims):
            r = proj[flat, :d]
            norms = np.linalg.norm(r, axis=1, keepdims=True)
            unit = np.divide(r, norms, out=np.zeros_like(r), where=norms > 0)
            cent = np.zeros((n, d))
            np.add.at(cent, owner, unit)
            out[j, has] = cosine_prefix(h[has, :d], cent[has], [d])[0]
        return out
    # (len(dims), pairs), in chunks of pairs: whole (pairs x L) copies would not fit in memory
    # at L = 2500 (440,000 DSTC6 pairs would need ~9 GB per array)
    flat = np.asarray(flat, dtype=np.int64)
    pair_cos = np.empty((len(dims), len(flat)))
    step = max(1, 4_000_000 // top)
    for lo in range(0, len(flat), step):
        sl = slice(lo, lo + step)
        pair_cos[:, sl] = cosine_prefix(h[owner[sl]], proj[flat[sl]], dims)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])[has]
    if refs_rule == "max":
        out[:, has] = np.maximum.reduceat(pair_cos, starts, axis=1)
    else:
        out[:, has] = np.add.reduceat(pair_cos, starts, axis=1) / counts[has]
    return out


def log_grid(low: int, high: int, per_decade: int = 4) -> list[int]:
    """Integers from low to high, evenly spaced in log scale (the paper's Figure 1 axis)."""
    steps = max(1, int(round(per_decade * math.log10(high / low))))
    values = {int(round(low * (high / low) ** (i / steps))) for i in range(steps + 1)}
    return sorted(values)
