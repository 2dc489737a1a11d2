"""Training ADEM's stage 1: the rows made ready (split by context, hard negatives, vectors),
the PCA, alpha and beta, and M and N learned by Adam with early stopping (see `model.py` for
the model and its loss).

Everything here reads a model's settings and arrays and returns what it learned (a
`BilinearHead`, a training record, a scale mapping) for the model to keep; stage 2 (the tuned
MiniLM layers) is `finetune.py`, the settings search `search.py`. Kept apart from the estimator
so that the model reads as the paper's equations and the training as the paper's procedure.
"""

from __future__ import annotations

import math
import time
from typing import Callable, Sequence

import numpy as np

from ....errors import DialevalError
from ....stats import spearman
from .bilinear import TERMS, BilinearHead
from .data import RatedRow, split_by_context

NEGATIVE_SCORE = 1.0   # the bottom of the 1-5 scale every rated set is mapped onto


class PreparedRows:
    """Rows ready for stage 1 (see `Adem.prepare`): `train` is (C, R, H, y, lengths, groups)
    of the training part, `val` is (C, R, H, y) of the validation part."""

    def __init__(self, rows, train_idx, val_idx, train, val):
        self.rows, self.train_idx, self.val_idx, self.train, self.val = rows, train_idx, val_idx, train, val


def prepare(model, rows: Sequence[RatedRow]) -> PreparedRows:
    """See `Adem.prepare` (which first forgets any tuned encoder: a refit starts frozen)."""
    rows = [r for r in rows if r.references or not model.needs_references()]
    if len(rows) < 10:
        raise DialevalError(f"ADEM needs at least 10 rated rows with{'' if model.needs_references() else 'out'} "
                            f"references to train; got {len(rows)}")
    train_idx, val_idx = split_by_context(rows, [1 - model.val_fraction, model.val_fraction], model.seed)
    if not val_idx:
        raise DialevalError("the validation split is empty: give more rows or a larger val_fraction")
    if model.hard_negatives:
        negatives = negative_rows([rows[i] for i in train_idx], model.hard_negatives, model.seed)
        train_idx = list(train_idx) + list(range(len(rows), len(rows) + len(negatives)))
        rows = list(rows) + negatives
    C, R, H = model.encode_rows(rows)
    y = np.array([r.score for r in rows], dtype=np.float64)
    lengths = np.array([len(r.response.split()) for r in rows])
    groups = np.array([r.dataset for r in rows])
    tr, va = np.array(train_idx), np.array(val_idx)
    return PreparedRows(rows, tr, va, (C[tr], R[tr], H[tr], y[tr], lengths[tr], groups[tr]),
                        (C[va], R[va], H[va], y[va]))


def scale_mapping(rows: Sequence[RatedRow], needs_references: bool) -> dict:
    """How each rated set among the training rows was mapped onto 1-5 (`Adem.record_provenance`)."""
    scales = {}
    for r in rows:
        if needs_references and not r.references:
            continue        # not a training row of this variant
        s = r.meta.get("adem_scale")
        if s:
            scales[s["dataset"]] = s
    return {"target": [1, 5], "rule": "1 + 4 (x - low) / (high - low)",
            "datasets": sorted(scales.values(), key=lambda s: s["dataset"])}


def fit_bilinear(model, C: np.ndarray, R: np.ndarray, H: np.ndarray, y: np.ndarray,
                 lengths: np.ndarray | None = None, groups: np.ndarray | None = None, *,
                 val: tuple | None = None, progress: Callable[[str], None] | None = None
                 ) -> tuple[BilinearHead, dict]:
    """Stage 1 on full-size vectors (see `Adem.fit_vectors`): (the fitted head, the training record)."""
    started = time.time()
    use_c, use_r = ("context" in TERMS[model.variant]), ("reference" in TERMS[model.variant])
    groups = np.zeros(len(y), dtype=int) if groups is None else np.asarray(groups)
    if use_r:   # rows without a reference cannot train a variant that reads one
        keep = np.isfinite(R).all(axis=1)
        C, R, H, y, groups = C[keep], R[keep], H[keep], y[keep], groups[keep]
        lengths = lengths[keep] if lengths is not None else None
    if len(y) < 2:
        raise DialevalError(f"ADEM ({model.variant}) has {len(y)} usable training rows")
    if model.standardise:
        y = 3.0 + standardise_per_set(y, groups)
    _, group_ids = np.unique(groups, return_inverse=True)
    rank_weight, margin = float(model.rank_weight or 0.0), float(model.rank_margin)
    stack = [H] + ([C] if use_c else []) + ([R] if use_r else [])
    X = np.concatenate(stack)
    n = min(model.n_dims(), X.shape[1], X.shape[0])
    pca_mean = X.mean(axis=0) if model.centre else np.zeros(X.shape[1])
    _, _, vt = np.linalg.svd(X - pca_mean, full_matrices=False)
    head, (c, r, h) = BilinearHead.initial(model.variant, pca_mean, vt[:n], C, R, H)
    rng = np.random.default_rng(model.seed)
    idx = oversampled(y, lengths, rng, model.max_oversample) if model.oversample and lengths is not None \
        else np.arange(len(y))
    # The gradient of c^T M h over a batch is C^T diag(w) H: two n x n products per step,
    # without materialising the n^2 features of each row (which needs rows x 2n^2 memory).
    c, r = np.nan_to_num(c), np.nan_to_num(r)
    M, N = np.eye(n), np.eye(n)
    penalty = model.penalty()
    gamma = model.gamma_value()
    alpha, beta = head.alpha, head.beta
    adam = Adam([M, N], model.lr)
    val_proj = head.project(*val[:3]) if val is not None else None
    best = (-math.inf, head, 0)
    curve = []
    if val_proj is not None:
        best = (val_score(head, val_proj, val[3]), head, 0)
        curve.append({"epoch": 0, "val_spearman": best[0]})
    bad = 0
    epoch = 0
    for epoch in range(1, model.max_epochs + 1):
        order = rng.permutation(idx)
        for start in range(0, len(order), model.batch_size):
            b = order[start:start + model.batch_size]
            cb, rb, hb = c[b], r[b], h[b]
            raw = (np.einsum("ij,ij->i", cb @ M, hb) if use_c else 0.0) + \
                  (np.einsum("ij,ij->i", rb @ N, hb) if use_r else 0.0)
            d_raw = (2.0 / beta) * ((raw - alpha) / beta - y[b])                    # d loss / d raw
            if rank_weight:
                d_raw = d_raw + (rank_weight / beta) * pairwise_hinge((raw - alpha) / beta, y[b],
                                                                      group_ids[b], margin)[1]
            wh = d_raw[:, None] * hb                                                  # times h
            grads = [cb.T @ wh if use_c else None, rb.T @ wh if use_r else None]
            for g, p in zip(grads, (M, N)):
                if g is not None:
                    g += gamma * np.sign(p) if penalty == "l1" else (2 * gamma) * p
            adam.step(grads)
        head = head.with_bilinear(M.copy(), N.copy())
        if val_proj is None:
            continue
        score = val_score(head, val_proj, val[3])
        curve.append({"epoch": epoch, "val_spearman": score})
        if score > best[0] + 1e-6:
            best, bad = (score, head, epoch), 0
        else:
            bad += 1
            if bad >= model.patience:
                break
        if progress and epoch % 10 == 0:
            progress(f"epoch {epoch}: validation Spearman {score:.4f} (best {best[0]:.4f} at {best[2]})")
    if val_proj is not None:
        head = best[1]
    record = {"epochs": epoch, "best_epoch": best[2] if val_proj is not None else epoch,
              "val_spearman": best[0] if val_proj is not None else None,
              "train_rows": int(len(y)), "oversampled_rows": int(len(idx)),
              "seconds": round(time.time() - started, 2), "curve": curve}
    return head, record


def oversampled(y: np.ndarray, lengths: np.ndarray, rng: np.random.Generator, max_oversample: float) -> np.ndarray:
    """Row indices of an epoch: every row, plus, inside each length tercile, each score class
    resampled up to the bin's largest class (at most `max_oversample` times its own size), so
    that length does not predict the score (paper section 5)."""
    cuts = np.quantile(lengths, [1 / 3, 2 / 3]) if len(lengths) >= 3 else []
    length_bin = np.searchsorted(cuts, lengths, side="right") if len(cuts) else np.zeros(len(y), int)
    cls = np.clip(np.rint(y), 1, 5).astype(int)
    out = [np.arange(len(y))]
    for b in np.unique(length_bin):
        in_bin = length_bin == b
        sizes = {k: int(np.sum(in_bin & (cls == k))) for k in np.unique(cls[in_bin])}
        target = max(sizes.values())
        for k, size in sizes.items():
            extra = min(target, int(max_oversample * size)) - size
            if extra > 0:
                out.append(rng.choice(np.flatnonzero(in_bin & (cls == k)), size=extra, replace=True))
    return np.concatenate(out)


def val_score(head: BilinearHead, proj, y) -> float:
    """The early-stopping criterion: Spearman of the head's predictions on projected validation
    vectors (-inf when fewer than 3 are finite or they are constant)."""
    pred = head.predict_projected(*proj)
    ok = np.isfinite(pred)
    if ok.sum() < 3 or np.std(pred[ok]) == 0:
        return -math.inf
    return spearman(pred[ok], y[ok])


def standardise_per_set(y: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """Each set's scores as z-scores within the set (mean 0, population sd 1; a set whose
    scores are all equal becomes 0): raters of different sets use the scale differently, and an
    evaluator is judged by the order it gives inside one set."""
    y = np.asarray(y, dtype=np.float64)
    groups = np.asarray(groups)
    out = np.zeros_like(y)
    for g in np.unique(groups):
        sel = groups == g
        sd = y[sel].std()
        out[sel] = (y[sel] - y[sel].mean()) / sd if sd > 0 else 0.0
    return out


def pairwise_hinge(s: np.ndarray, y: np.ndarray, groups: np.ndarray, margin: float) -> tuple[float, np.ndarray]:
    """(loss, d loss / d s) of sum over pairs i, j of one group with y_i > y_j of
    max(0, margin - (s_i - s_j)): zero once every such pair is ordered with the margin; pairs
    across groups (sets rated on different scales) and ties in y are not compared."""
    s = np.asarray(s, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    groups = np.asarray(groups)
    better = (y[:, None] > y[None, :]) & (groups[:, None] == groups[None, :])
    gap = margin - (s[:, None] - s[None, :])
    active = better & (gap > 0)
    loss = float(gap[active].sum())
    grad = -active.sum(axis=1).astype(np.float64) + active.sum(axis=0)
    return loss, grad


class Adam:
    """Adam (Kingma & Ba) on numpy arrays, updated in place; a None gradient skips a parameter."""

    def __init__(self, params: list[np.ndarray], lr: float, betas=(0.9, 0.999), eps: float = 1e-8):
        self.params, self.lr, self.b1, self.b2, self.eps = params, lr, betas[0], betas[1], eps
        self.m = [np.zeros_like(p) for p in params]
        self.v = [np.zeros_like(p) for p in params]
        self.scratch = [(np.empty_like(p), np.empty_like(p)) for p in params]
        self.t = 0

    def step(self, grads: list[np.ndarray | None]) -> None:
        """One update, in place and through two scratch buffers per parameter: the arithmetic
        (and so every bit) is that of the textbook formula, without its eight temporaries."""
        self.t += 1
        c1, c2 = 1 - self.b1 ** self.t, 1 - self.b2 ** self.t
        for p, g, m, v, (a, b) in zip(self.params, grads, self.m, self.v, self.scratch):
            if g is None:
                continue
            m *= self.b1
            m += np.multiply(g, 1 - self.b1, out=a)
            v *= self.b2
            np.multiply(g, 1 - self.b2, out=a)
            a *= g
            v += a
            np.divide(v, c2, out=b)       # p -= lr (m / c1) / (sqrt(v / c2) + eps)
            np.sqrt(b, out=b)
            b += self.eps
            np.divide(m, c1, out=a)
            a *= self.lr
            a /= b
            p -= a


def negative_rows(rows: Sequence[RatedRow], families: str, seed: int) -> list[RatedRow]:
    """Training negatives: for each row and family, the row with its response replaced by the
    family's variant (`dialeval.data.variants`), scored `NEGATIVE_SCORE`, in the row's own rated
    set (so the ranking loss compares it with that set's real responses)."""
    from ....data.variants import check_families, make_variants

    made = make_variants(rows, check_families(families), seed)
    out = []
    for family, variants in made.items():
        for row, text in zip(rows, variants):
            if text is not None:
                out.append(RatedRow(id=f"{row.id}:{family}", dataset=row.dataset, context=list(row.context),
                                    response=text, references=list(row.references), score=NEGATIVE_SCORE,
                                    system=f"negative:{family}", dialogue=row.dialogue, meta={"negative": family}))
    return out
