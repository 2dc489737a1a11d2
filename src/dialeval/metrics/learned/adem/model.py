"""ADEM proper (paper eq. 1-2): score = (c^T M r^ + r^T N r^ - alpha) / beta.

c, r and r^ are the encoder vectors of the context, the reference and the candidate response
after a PCA to `pca_dims` dimensions, fitted on the stacked training vectors (contexts,
references and responses together). M and N start as the identity. alpha and beta are
constants fixed before training so that the initial predictions (M = N = I) of the training
rows span the human range 1-5 (min -> 1, max -> 5), computed from *all* training rows (the
released code used only the first n rows; a deliberate deviation). Only M and N are learned.

Loss: the squared error to the human score (1-5) summed over a batch, plus gamma times the L1
norm of M and N (`preset="paper"`, PCA 7, gamma 0.02, lr 0.01, batch 16, the paper's App. D)
or their squared L2 norm (`preset="released"`, PCA 50, as the released code). Adam; early
stopping on the Spearman correlation of a validation split (its own contexts), keeping the best
epoch's M and N.

Training rows are oversampled (paper §5): rows are binned by response length (terciles) and,
inside each bin, every score class (the human score rounded to 1..5) is resampled with
replacement up to the size of the bin's largest class, at most `max_oversample` times its own
size, so that length does not predict the score. Every original row is kept (the original code
silently dropped the rows that did not fill a last batch; we do not).

Variants: `adem` (both terms), `c_adem` (context term only), `r_adem` (reference term only).
With several references the reference vector is their mean, which (the score being linear in r
and the PCA affine) equals the mean of the single-reference scores.

Fine-tuned variant (`finetune_layers` N > 0, encoder `minilm` only): after the fit above (stage
1, with its settings search when asked), the top N MiniLM layers are trained together with M
and N under the same loss, early-stopped on the same validation split (`finetune.py`). The
tuned layers are stored in the folder as `encoder.safetensors` and scoring encodes with them.
"""

from __future__ import annotations

import math
import os
import time
from typing import Any, Callable, Literal, Mapping, Sequence

import numpy as np

from ....errors import DialevalError
from ....models.estimator import Estimator
from ...rowwise import rows_times
from .data import RatedRow, split_by_context
from ....stats import average_ranks, spearman  # noqa: F401  (part of this module's interface)

KIND = "adem"
VARIANTS = ("adem", "c_adem", "r_adem")
BUNDLED_ENCODER = "encoder"   # subfolder of a saved model holding its hred encoder
# the settings `dialeval train adem --search` tries (pca_dims 0: all dimensions)
SEARCH_GRID = {"pca_dims": [7, 50, 0], "lr": [0.01, 0.001]}
PRESETS = {"paper": {"pca_dims": 7, "gamma": 0.02, "penalty": "l1"},
           "released": {"pca_dims": 50, "gamma": 0.02, "penalty": "l2"}}


class Adem(Estimator):
    """ADEM, a scikit-learn-shaped estimator: `fit(rows)`, `predict(...)`, `save`/`load`.

    Options:
        encoder: minilm (frozen all-MiniLM-L6-v2), minilm:DIR (a sentence-transformers folder) or
            hred:DIR (a `train dialogue-encoder` folder)
        variant: adem (context and reference), c_adem (context term only) or r_adem (reference
            term only)
        preset: paper (L1 on M, N, PCA 7) or released (squared L2, PCA 50)
        pca_dims: PCA dimensions (default: 7 paper, 50 released; 0: all)
        gamma: weight of the penalty on M, N (default 0.02)
        lr: Adam step size for M and N
        batch_size: rows per training step
        max_epochs: most passes over the training rows
        patience: epochs without a better validation Spearman before stopping (the best epoch's
            M and N are kept)
        val_fraction: share of the rows (split by context) held out for early stopping and the
            settings search
        context_turns: minilm: the last k context turns, joined
        oversample: length-binned oversampling by score class (paper section 5)
        max_oversample: a score class is resampled to at most this many times its own size
        seed: random seed
        finetune_layers: minilm only: after the frozen fit, fine-tune the top N of MiniLM's 6
            layers with M and N under the ADEM loss, early-stopped on the same validation split
            (default 0: frozen, as the paper)
        finetune_lr: AdamW step size of the tuned layers (M and N keep lr)
        finetune_epochs: passes over the (oversampled) training rows when fine-tuning
        finetune_minutes: stop fine-tuning after this many minutes, keeping the best validation
            state (default: no limit)
        rank_weight: weight of a pairwise hinge loss beside the squared error, over the pairs of
            a batch from the same rated set whose human scores differ (default 0: squared error
            only, as the paper); rewards ordering a set's responses, which is what Spearman on
            a new set measures, rather than matching each set's absolute scale
        rank_margin: the hinge's margin on the 1-5 score scale
        standardise: train on each rated set's scores standardised within the set (3 + z-score),
            so sets whose raters used the scale differently do not pull M and N apart
        centre: subtract the PCA mean before the bilinear terms (default, the paper's PCA); with
            centre false and all dimensions kept, M = N = I scores cos(r^, r) + cos(r^, c) for
            L2-normalised encoders, so training starts from (and can fall back on) sent_cosine
        hard_negatives: comma-separated probe families (`dialeval probe`: parrot, generic,
            other_item, ...) whose variants of each training row join the training rows at the
            bottom of the scale (1), so that the ranking loss puts them below every real
            response of their set; validation rows get none. The families left out are what the
            probes then test for generalisation (default: none)
    """

    kind = KIND

    def __init__(self, encoder: str = "minilm", variant: Literal["adem", "c_adem", "r_adem"] = "adem",
                 preset: Literal["paper", "released"] = "paper", pca_dims: int | None = None,
                 gamma: float | None = None, lr: float = 0.01, batch_size: int = 16, max_epochs: int = 100,
                 patience: int = 10, val_fraction: float = 0.15, context_turns: int = 3,
                 oversample: bool = True, max_oversample: float = 10.0, seed: int = 0,
                 finetune_layers: int = 0, finetune_lr: float = 1e-4, finetune_epochs: int = 1,
                 finetune_minutes: float | None = None, rank_weight: float = 0.0, rank_margin: float = 0.5,
                 standardise: bool = False, centre: bool = True, hard_negatives: str = ""):
        self.encoder = encoder
        self.variant = variant
        self.preset = preset
        self.pca_dims = pca_dims
        self.gamma = gamma
        self.lr = lr
        self.batch_size = batch_size
        self.max_epochs = max_epochs
        self.patience = patience
        self.val_fraction = val_fraction
        self.context_turns = context_turns
        self.oversample = oversample
        self.max_oversample = max_oversample
        self.seed = seed
        self.finetune_layers = finetune_layers
        self.finetune_lr = finetune_lr
        self.finetune_epochs = finetune_epochs
        self.finetune_minutes = finetune_minutes
        self.rank_weight = rank_weight
        self.rank_margin = rank_margin
        self.standardise = standardise
        self.centre = centre
        self.hard_negatives = hard_negatives

    # -- settings ------------------------------------------------------------------------
    def _check(self) -> None:
        if self.variant not in VARIANTS:
            raise DialevalError(f"ADEM variant {self.variant!r}: choose from {', '.join(VARIANTS)}")
        if self.preset not in PRESETS:
            raise DialevalError(f"ADEM preset {self.preset!r}: choose from {', '.join(PRESETS)}")
        if int(self.finetune_layers or 0):
            if not str(self.encoder).startswith("minilm"):
                raise DialevalError(f"finetune_layers needs the minilm encoder; {self.encoder} is not a "
                                    "transformer to fine-tune (use finetune_layers=0)")
            if not 0 <= int(self.finetune_layers) <= 6:
                raise DialevalError(f"finetune_layers {self.finetune_layers}: MiniLM has 6 layers; choose 0..6")

    def n_dims(self) -> int:
        """PCA dimensions; `pca_dims=0` keeps them all (the PCA then only centres and rotates)."""
        if self.pca_dims == 0:
            return 1 << 30
        return int(self.pca_dims or PRESETS[self.preset]["pca_dims"])

    def penalty(self) -> str:
        """The preset's norm on M and N: "l1" (paper) or "l2" (released, squared)."""
        return PRESETS[self.preset]["penalty"]

    def gamma_value(self) -> float:
        return float(PRESETS[self.preset]["gamma"] if self.gamma is None else self.gamma)

    def needs_references(self) -> bool:
        return self.variant != "c_adem"

    # -- encoding ------------------------------------------------------------------------
    def encoder_object(self):
        from .encoders import make_encoder

        enc = make_encoder(self.encoder, int(self.context_turns))
        if getattr(self, "tuned_layers_", None) is not None:
            enc = self._tuned_encoder(enc)
        expected = getattr(self, "encoder_fingerprint_", None)
        if expected is not None and enc.fingerprint() != expected:
            raise DialevalError(f"ADEM was trained with encoder {expected}, but {self.encoder} is now "
                                f"{enc.fingerprint()}; retrain ADEM or restore its encoder")
        return enc

    def _tuned_encoder(self, frozen):
        """The MiniLM with this model's tuned top layers (built once per model object)."""
        cached = getattr(self, "_tuned", None)
        if cached is None:
            from .finetune import TunedMiniLM, by_layer, tensors_id

            cached = TunedMiniLM(by_layer(self.tuned_layers_), frozen.model_dir, frozen.fingerprint(),
                                 tensors_id(self.tuned_layers_), int(self.context_turns))
            self._tuned = cached
        return cached

    def encode(self, contexts: Sequence[Sequence[str]], references: Sequence[Sequence[str]],
               responses: Sequence[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Full-size vectors: contexts, mean reference vectors (NaN rows without references),
        responses."""
        enc = self.encoder_object()
        C = enc.encode_contexts(contexts)
        H = enc.encode_texts(list(responses))
        flat = [r for rs in references for r in rs]
        R = np.full_like(H, np.nan)
        if flat:
            V = enc.encode_texts(flat)
            owner = np.repeat(np.arange(len(references)), [len(rs) for rs in references])
            sums = np.zeros_like(H)
            np.add.at(sums, owner, V)
            counts = np.bincount(owner, minlength=len(references))
            has = counts > 0
            R[has] = sums[has] / counts[has, None]
        return C, R, H

    def encode_rows(self, rows: Sequence[RatedRow]):
        return self.encode([r.context for r in rows], [r.references for r in rows], [r.response for r in rows])

    # -- fitting -------------------------------------------------------------------------
    def fit(self, rows: Sequence[RatedRow], *, progress: Callable[[str], None] | None = None) -> "Adem":
        """Encode `rows`, split off a validation part by context, and train (stage 1, then stage
        2 when `finetune_layers` > 0). A settings search is `dialeval.models.search.SettingsSearch`
        over `fit_vectors` on `prepare(rows)`, then `finish` on its best estimator (what
        `train adem --search` does, see `search_rows`)."""
        prepared = self.prepare(rows)
        self.fit_vectors(*prepared.train, val=prepared.val, progress=progress)
        return self.finish(prepared, progress=progress)

    def prepare(self, rows: Sequence[RatedRow]) -> "PreparedRows":
        """The usable rows, their training/validation split (by context) and their encoder
        vectors: what every stage-1 fit on `rows` starts from, computed once."""
        self._check()
        for name in ("tuned_layers_", "tuned_indices_", "weights_id_", "encoder_fingerprint_"):
            self.__dict__.pop(name, None)       # a refit starts from the frozen encoder
        self._tuned = None
        rows = [r for r in rows if r.references or not self.needs_references()]
        if len(rows) < 10:
            raise DialevalError(f"ADEM needs at least 10 rated rows with{'' if self.needs_references() else 'out'} "
                                f"references to train; got {len(rows)}")
        train_idx, val_idx = split_by_context(rows, [1 - self.val_fraction, self.val_fraction], self.seed)
        if not val_idx:
            raise DialevalError("the validation split is empty: give more rows or a larger val_fraction")
        if self.hard_negatives:
            negatives = negative_rows([rows[i] for i in train_idx], self.hard_negatives, self.seed)
            train_idx = list(train_idx) + list(range(len(rows), len(rows) + len(negatives)))
            rows = list(rows) + negatives
        C, R, H = self.encode_rows(rows)
        y = np.array([r.score for r in rows], dtype=np.float64)
        lengths = np.array([len(r.response.split()) for r in rows])
        groups = np.array([r.dataset for r in rows])
        tr, va = np.array(train_idx), np.array(val_idx)
        return PreparedRows(rows, tr, va, (C[tr], R[tr], H[tr], y[tr], lengths[tr], groups[tr]),
                            (C[va], R[va], H[va], y[va]))

    def finish(self, prepared: "PreparedRows", *, progress: Callable[[str], None] | None = None) -> "Adem":
        """After stage 1 on `prepared`: stage 2 when asked, then the provenance record."""
        if int(self.finetune_layers or 0):
            self.finetune_rows(prepared.rows, prepared.train_idx, prepared.val_idx, progress=progress)
        self.record_provenance(prepared.rows)
        self.training_["rows_split"] = {"train": len(prepared.train_idx), "validation": len(prepared.val_idx)}
        return self

    def finetune_rows(self, rows: Sequence[RatedRow], train_idx: Sequence[int], val_idx: Sequence[int], *,
                      progress: Callable[[str], None] | None = None) -> "Adem":
        """Stage 2 (`finetune.py`) on a model fitted by `fit_vectors`/`search_vectors` on the same
        training and validation rows: the top `finetune_layers` MiniLM layers with M and N.
        Keeps the stage-1 model when no stage-2 state beats its validation Spearman."""
        from .encoders import make_encoder
        from .finetune import RowTexts, context_text, finetune_adem

        self._check()
        layers = int(self.finetune_layers or 0)
        if layers < 1:
            raise DialevalError("finetune_rows needs finetune_layers >= 1")
        self.check_fitted()
        use_r = self.variant in ("adem", "r_adem")
        k = int(self.context_turns)
        pick = lambda idx: [rows[i] for i in idx if rows[i].references or not use_r]   # noqa: E731

        def texts(part):
            return RowTexts([context_text(r.context, k) for r in part],
                            [list(r.references) if use_r else [] for r in part], [r.response for r in part])

        tr, va = pick(train_idx), pick(val_idx)
        y = np.array([r.score for r in tr], dtype=np.float64)
        lengths = np.array([len(r.response.split()) for r in tr])
        rng = np.random.default_rng(self.seed)
        pool = self._oversampled(y, lengths, rng) if self.oversample else np.arange(len(y))
        deadline = time.monotonic() + 60 * float(self.finetune_minutes) if self.finetune_minutes else None
        self.tuned_layers_ = None
        self._tuned = None
        info = finetune_adem(self, texts(tr), y, pool, texts(va), np.array([r.score for r in va]),
                             layers=layers, epochs=int(self.finetune_epochs), lr=float(self.finetune_lr),
                             model_dir=make_encoder(self.encoder, k).model_dir, deadline=deadline, say=progress)
        tuned = self.__dict__.pop("tuned_layers_")
        self.training_["finetune"] = info
        return self.set_tuned_layers(tuned)

    def set_tuned_layers(self, tensors: Mapping[str, Any] | None) -> "Adem":
        """Make `tensors` (`encoder.layer.{i}.{name}` -> torch tensor, the top layers) the
        encoder's tuned layers, or go back to the frozen encoder with None; records their
        indices, content hash and the encoder fingerprint that scoring checks."""
        from .encoders import make_encoder

        for name in ("tuned_layers_", "tuned_indices_", "weights_id_"):
            self.__dict__.pop(name, None)
        self._tuned = None
        frozen = make_encoder(self.encoder, int(self.context_turns))
        if tensors is not None:
            from .finetune import tensors_id

            self.tuned_layers_ = dict(tensors)
            self.tuned_indices_ = sorted({int(k.split(".")[2]) for k in tensors})
            self.weights_id_ = tensors_id(self.tuned_layers_)
        self.encoder_fingerprint_ = (self._tuned_encoder(frozen) if self.is_tuned() else frozen).fingerprint()
        return self

    def is_tuned(self) -> bool:
        """Whether scoring goes through fine-tuned MiniLM layers (a stage-2 state won)."""
        return getattr(self, "tuned_layers_", None) is not None

    def record_provenance(self, rows: Sequence[RatedRow]) -> None:
        """Store the per-dataset scale mapping of `rows` and the encoder's fingerprint (called by
        `fit`; callers of `fit_vectors` call it themselves)."""
        scales = {}
        for r in rows:
            if self.needs_references() and not r.references:
                continue        # not a training row of this variant
            s = r.meta.get("adem_scale")
            if s:
                scales[s["dataset"]] = s
        self.scale_mapping_ = {"target": [1, 5], "rule": "1 + 4 (x - low) / (high - low)",
                               "datasets": sorted(scales.values(), key=lambda s: s["dataset"])}
        self.encoder_fingerprint_ = self.encoder_object().fingerprint()

    def fit_vectors(self, C: np.ndarray, R: np.ndarray, H: np.ndarray, y: np.ndarray,
                    lengths: np.ndarray | None = None, groups: np.ndarray | None = None, *,
                    val: tuple | None = None, progress: Callable[[str], None] | None = None) -> "Adem":
        """Fit on full-size encoder vectors (the benchmark encodes once and calls this);
        `groups` names each row's rated set (for `standardise` and `rank_weight`; None: one set)."""
        self._check()
        started = time.time()
        use_c, use_r = self.variant in ("adem", "c_adem"), self.variant in ("adem", "r_adem")
        groups = np.zeros(len(y), dtype=int) if groups is None else np.asarray(groups)
        if use_r:   # rows without a reference cannot train a variant that reads one
            keep = np.isfinite(R).all(axis=1)
            C, R, H, y, groups = C[keep], R[keep], H[keep], y[keep], groups[keep]
            lengths = lengths[keep] if lengths is not None else None
        if len(y) < 2:
            raise DialevalError(f"ADEM ({self.variant}) has {len(y)} usable training rows")
        if self.standardise:
            y = 3.0 + standardise_per_set(y, groups)
        _, group_ids = np.unique(groups, return_inverse=True)
        rank_weight, margin = float(self.rank_weight or 0.0), float(self.rank_margin)
        stack = [H] + ([C] if use_c else []) + ([R] if use_r else [])
        X = np.concatenate(stack)
        n = min(self.n_dims(), X.shape[1], X.shape[0])
        self.pca_mean_ = X.mean(axis=0) if self.centre else np.zeros(X.shape[1])
        _, _, vt = np.linalg.svd(X - self.pca_mean_, full_matrices=False)
        self.pca_components_ = vt[:n]
        c, r, h = self._project(C, R, H)
        raw0 = self._raw(c, r, h, np.eye(n), np.eye(n))
        lo, hi = float(raw0.min()), float(raw0.max())
        self.beta_ = (hi - lo) / 4.0 if hi > lo else 1.0
        self.alpha_ = lo - self.beta_
        self.M_ = np.eye(n)
        self.N_ = np.eye(n)
        rng = np.random.default_rng(self.seed)
        idx = self._oversampled(y, lengths, rng) if self.oversample and lengths is not None else np.arange(len(y))
        # The gradient of c^T M h over a batch is C^T diag(w) H: two n x n products per step,
        # without materialising the n^2 features of each row (which needs rows x 2n^2 memory).
        c, r = np.nan_to_num(c), np.nan_to_num(r)
        M, N = np.eye(n), np.eye(n)
        penalty = PRESETS[self.preset]["penalty"]
        gamma = self.gamma_value()
        alpha, beta = self.alpha_, self.beta_
        adam = _Adam([M, N], self.lr)
        val_proj = self._project(*val[:3]) if val is not None else None
        best = (-math.inf, self.M_.copy(), self.N_.copy(), 0)
        curve = []
        if val_proj is not None:
            best = (self._val_score(val_proj, val[3]), self.M_.copy(), self.N_.copy(), 0)
            curve.append({"epoch": 0, "val_spearman": best[0]})
        bad = 0
        epoch = 0
        for epoch in range(1, self.max_epochs + 1):
            order = rng.permutation(idx)
            for start in range(0, len(order), self.batch_size):
                b = order[start:start + self.batch_size]
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
            self.M_, self.N_ = M.copy(), N.copy()
            if val_proj is None:
                continue
            score = self._val_score(val_proj, val[3])
            curve.append({"epoch": epoch, "val_spearman": score})
            if score > best[0] + 1e-6:
                best, bad = (score, self.M_, self.N_, epoch), 0
            else:
                bad += 1
                if bad >= self.patience:
                    break
            if progress and epoch % 10 == 0:
                progress(f"epoch {epoch}: validation Spearman {score:.4f} (best {best[0]:.4f} at {best[3]})")
        if val_proj is not None:
            self.M_, self.N_ = best[1], best[2]
        self.training_ = {"epochs": epoch, "best_epoch": best[3] if val_proj is not None else epoch,
                          "val_spearman": best[0] if val_proj is not None else None,
                          "train_rows": int(len(y)), "oversampled_rows": int(len(idx)),
                          "seconds": round(time.time() - started, 2), "curve": curve}
        return self

    def search_vectors(self, grid: Mapping[str, Sequence], C: np.ndarray, R: np.ndarray, H: np.ndarray,
                       y: np.ndarray, lengths: np.ndarray | None = None, groups: np.ndarray | None = None, *,
                       val: tuple, progress: Callable[[str], None] | None = None) -> "Adem":
        """Shorthand kept for the benchmark: run `vector_search` and become its best model (its
        settings included), with the table of candidates in `training_["search"]`."""
        search = vector_search(self, grid, val, progress=progress).fit(C, R, H, y, lengths, groups, val=val)
        best = search.best_estimator_
        self.set_params(**search.best_params_)
        for name in best.fitted_attributes():
            setattr(self, name, getattr(best, name))
        self.training_ = {**best.training_, "search": search.results_, "search_seconds": search.seconds_}
        return self

    def _oversampled(self, y: np.ndarray, lengths: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        cuts = np.quantile(lengths, [1 / 3, 2 / 3]) if len(lengths) >= 3 else []
        length_bin = np.searchsorted(cuts, lengths, side="right") if len(cuts) else np.zeros(len(y), int)
        cls = np.clip(np.rint(y), 1, 5).astype(int)
        out = [np.arange(len(y))]
        for b in np.unique(length_bin):
            in_bin = length_bin == b
            sizes = {k: int(np.sum(in_bin & (cls == k))) for k in np.unique(cls[in_bin])}
            target = max(sizes.values())
            for k, size in sizes.items():
                extra = min(target, int(self.max_oversample * size)) - size
                if extra > 0:
                    out.append(rng.choice(np.flatnonzero(in_bin & (cls == k)), size=extra, replace=True))
        return np.concatenate(out)

    def _val_score(self, proj, y) -> float:
        pred = self._predict_projected(*proj)
        ok = np.isfinite(pred)
        if ok.sum() < 3 or np.std(pred[ok]) == 0:
            return -math.inf
        return spearman(pred[ok], y[ok])

    # -- prediction ----------------------------------------------------------------------
    def _project(self, C, R, H):
        P = self.pca_components_.T
        return (rows_times(C - self.pca_mean_, P), rows_times(R - self.pca_mean_, P),
                rows_times(H - self.pca_mean_, P))

    def _raw(self, c, r, h, M, N) -> np.ndarray:
        raw = np.zeros(len(h))
        if self.variant in ("adem", "c_adem"):
            raw = raw + np.einsum("ij,ij->i", rows_times(c, M), h)
        if self.variant in ("adem", "r_adem"):
            raw = raw + np.einsum("ij,ij->i", rows_times(r, N), h)
        return raw

    def _predict_projected(self, c, r, h) -> np.ndarray:
        return (self._raw(c, r, h, self.M_, self.N_) - self.alpha_) / self.beta_

    def _predict_with(self, C, R, H, M, N) -> np.ndarray:
        """Scores from full-size vectors with other M, N (stage 2's validation checks)."""
        return (self._raw(*self._project(C, R, H), M, N) - self.alpha_) / self.beta_

    def predict_vectors(self, C, R, H) -> np.ndarray:
        """Scores on the 1-5 scale from full-size vectors; NaN where a needed reference is missing."""
        self.check_fitted()
        return self._predict_projected(*self._project(C, R, H))

    def predict(self, contexts: Sequence[Sequence[str]], references: Sequence[Sequence[str]],
                responses: Sequence[str]) -> np.ndarray:
        return self.predict_vectors(*self.encode(contexts, references, responses))

    def at_initialisation(self) -> "Adem":
        """The same PCA, alpha and beta with M = N = I (the paper's 'ADEM at initialisation')."""
        other = Adem(**self.get_params())
        for name in self.fitted_attributes():
            setattr(other, name, getattr(self, name))
        other.M_ = np.eye(self.M_.shape[0])
        other.N_ = np.eye(self.N_.shape[0])
        return other

    # -- persistence ---------------------------------------------------------------------
    def _state(self):
        """Every fitted value as the base class stores it, except the tuned layers' tensors,
        which go to `encoder.safetensors` (their indices and content hash stay in config.json)."""
        values, arrays = super()._state()
        values.pop("tuned_layers_", None)
        return values, arrays

    def _write_files(self, staging_dir: str) -> None:
        """A VHRED encoder travels inside the ADEM folder (`encoder/`), so a model can be moved
        or shared as one folder; its files are in ADEM's manifest too. Fine-tuned MiniLM layers
        are written to `encoder.safetensors` (dialeval.backbones' layout: the base model's tensor names)."""
        from .encoders import parse_encoder_spec

        kind, path = parse_encoder_spec(self.encoder)
        if self.is_tuned():
            from ....backbones.tuning import WEIGHTS_FILE, save_layers

            save_layers(self.tuned_layers_, os.path.join(staging_dir, WEIGHTS_FILE),
                        content="dialeval adem tuned MiniLM layers")
            return
        if kind != "hred":
            return
        import shutil

        from ....models.store import files_under

        for rel in [*files_under(path), "manifest.json"]:
            target = os.path.join(staging_dir, BUNDLED_ENCODER, rel)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            shutil.copyfile(os.path.join(path, rel), target)

    def _set_state(self, values: Mapping[str, Any], arrays: Mapping[str, np.ndarray], directory: str) -> None:
        missing = {"M_", "N_", "pca_mean_", "pca_components_"} - set(arrays)
        if missing or "alpha_" not in values or "beta_" not in values:
            raise DialevalError(f"{directory}: incomplete ADEM artifact (missing "
                                f"{', '.join(sorted(missing | ({'alpha_', 'beta_'} - set(values))))})")
        n = arrays["pca_components_"].shape[0]
        if arrays["M_"].shape != (n, n) or arrays["N_"].shape != (n, n):
            raise DialevalError(f"{directory}: ADEM arrays do not fit together (M {arrays['M_'].shape}, "
                                f"PCA {arrays['pca_components_'].shape})")
        super()._set_state(values, arrays, directory)
        self._tuned = None
        if "weights_id_" in values:
            self._load_tuned_layers(values, directory)
        bundled = os.path.join(directory, BUNDLED_ENCODER)
        if self.encoder.startswith("hred:") and os.path.isdir(bundled):
            self.encoder = f"hred:{bundled}"     # the copy saved with the model, not the training path
        self._check()

    def _load_tuned_layers(self, values: Mapping[str, Any], directory: str) -> None:
        """Read `encoder.safetensors` (already checked by the manifest) and check that its
        tensors are the ones recorded at training (the content hash in config.json)."""
        from ....backbones.tuning import WEIGHTS_FILE, load_layers, tensors_id
        from .encoders import make_encoder
        from .finetune import backbone

        path = os.path.join(directory, WEIGHTS_FILE)
        if not os.path.exists(path):
            raise DialevalError(f"{directory}: a fine-tuned ADEM without its {WEIGHTS_FILE}")
        indices = [int(i) for i in values.get("tuned_indices_") or []]
        base = backbone(make_encoder(self.encoder, int(self.context_turns)).model_dir).model
        layers = load_layers(path, indices, base, what="a fine-tuned ADEM model")
        self.tuned_layers_ = {f"encoder.layer.{i}.{k}": v for i, d in layers.items() for k, v in d.items()}
        if tensors_id(self.tuned_layers_) != str(values["weights_id_"]):
            raise DialevalError(f"{directory}/{WEIGHTS_FILE}: its tensors differ from the ones recorded at training")


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


class PreparedRows:
    """Rows ready for stage 1 (see `Adem.prepare`): `train` is (C, R, H, y, lengths) of the
    training part, `val` is (C, R, H, y) of the validation part."""

    def __init__(self, rows, train_idx, val_idx, train, val):
        self.rows, self.train_idx, self.val_idx, self.train, self.val = rows, train_idx, val_idx, train, val


def validation_spearman(model: Adem, val: tuple) -> float:
    """Spearman correlation of a fitted model's predictions on (C, R, H, y) validation vectors
    (the early-stopping criterion, so it equals `training_["val_spearman"]`)."""
    return model._val_score(model._project(*val[:3]), val[3])


def vector_search(model: Adem, grid: Mapping[str, Sequence], val: tuple, *,
                  progress: Callable[[str], None] | None = None):
    """The settings search of ADEM's stage 1: one `fit_vectors` per combination of `grid`,
    judged by validation Spearman.

    Why: the best PCA size and step size depend on the encoder and the data (with frozen
    MiniLM the paper's lr 0.01 leaves M, N worse than the identity after one epoch), and the
    only fair judge is the validation split, never a test set. Every candidate sees the same
    training and validation rows."""
    from ....models.search import SettingsSearch

    if val is None:
        raise DialevalError("a settings search needs a validation split")
    return SettingsSearch(model, grid, scoring=validation_spearman, validation=val, method="fit_vectors",
                          score_name="val_spearman", describe=lambda m: {"best_epoch": m.training_["best_epoch"]},
                          progress=progress)


def search_rows(model: Adem, rows: Sequence[RatedRow], grid: Mapping[str, Sequence], *,
                progress: Callable[[str], None] | None = None):
    """(search, best model): the rows encoded once, stage 1 searched over `grid`, then the best
    candidate finished (stage 2 when asked, provenance); its training record keeps the table of
    candidates under "search" as `train adem --search` always reported it."""
    prepared = model.prepare(rows)
    search = vector_search(model, grid, prepared.val, progress=progress).fit(*prepared.train, val=prepared.val)
    best = search.best_estimator_
    best.training_ = {**best.training_, "search": search.results_, "search_seconds": search.seconds_}
    return search, best.finish(prepared, progress=progress)


class _Adam:
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


NEGATIVE_SCORE = 1.0   # the bottom of the 1-5 scale every rated set is mapped onto


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
