"""ADEM's bilinear head: the PCA projection and score = (c^T M r^ + r^T N r^ - alpha) / beta.

One object holds every number the equation reads, so stage 1 (`training.py`), stage 2
(`finetune.py`), the settings search and scoring all compute it the same way, and a fitted head
is replaced, never edited: a model copied from another (ADEM at initialisation, a search's
winner) cannot change under it. The variant fixes which terms the head has.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from ....errors import DialevalError
from ...rowwise import rows_times

TERMS = {"adem": ("context", "reference"), "c_adem": ("context",), "r_adem": ("reference",)}
ARRAYS = ("M_", "N_", "pca_components_", "pca_mean_")     # their names in a folder's arrays.npz
VALUES = ("alpha_", "beta_")                               # ... and in config.json's state


class BilinearHead:
    """PCA (`pca_mean`, `pca_components`), M (context term), N (reference term), alpha, beta."""

    def __init__(self, variant: str, pca_mean: np.ndarray, pca_components: np.ndarray,
                 M: np.ndarray, N: np.ndarray, alpha: float, beta: float):
        self.variant = variant
        self.pca_mean, self.pca_components = pca_mean, pca_components
        self.M, self.N = M, N
        self.alpha, self.beta = alpha, beta

    @property
    def uses_context(self) -> bool:
        return "context" in TERMS[self.variant]

    @property
    def uses_reference(self) -> bool:
        return "reference" in TERMS[self.variant]

    @property
    def dims(self) -> int:
        """The PCA size M and N act in (the signature's `pca:` field)."""
        return int(self.M.shape[0])

    @classmethod
    def initial(cls, variant: str, pca_mean: np.ndarray, pca_components: np.ndarray,
                C: np.ndarray, R: np.ndarray, H: np.ndarray) -> tuple["BilinearHead", tuple]:
        """(head, projected C, R, H): M = N = I, with alpha and beta putting these rows' scores
        on 1..5 (min -> 1, max -> 5; beta 1 when all are equal), the paper's start from all
        training rows; the projections are what stage 1 then trains on."""
        n = pca_components.shape[0]
        head = cls(variant, pca_mean, pca_components, np.eye(n), np.eye(n), 0.0, 1.0)
        projected = head.project(C, R, H)
        raw0 = head.raw(*projected, np.eye(n), np.eye(n))
        lo, hi = float(raw0.min()), float(raw0.max())
        head.beta = (hi - lo) / 4.0 if hi > lo else 1.0
        head.alpha = lo - head.beta
        return head, projected

    def with_bilinear(self, M: np.ndarray, N: np.ndarray) -> "BilinearHead":
        """The same projection, alpha and beta with other M and N (a training step's candidate)."""
        return BilinearHead(self.variant, self.pca_mean, self.pca_components, M, N, self.alpha, self.beta)

    def at_initialisation(self) -> "BilinearHead":
        return self.with_bilinear(np.eye(self.M.shape[0]), np.eye(self.N.shape[0]))

    # -- the equation ------------------------------------------------------------------------
    def project(self, C, R, H):
        P = self.pca_components.T
        return (rows_times(C - self.pca_mean, P), rows_times(R - self.pca_mean, P),
                rows_times(H - self.pca_mean, P))

    def raw(self, c, r, h, M, N) -> np.ndarray:
        """c^T M r^ + r^T N r^ on projected vectors, with the terms this variant has."""
        raw = np.zeros(len(h))
        if self.uses_context:
            raw = raw + np.einsum("ij,ij->i", rows_times(c, M), h)
        if self.uses_reference:
            raw = raw + np.einsum("ij,ij->i", rows_times(r, N), h)
        return raw

    def predict_projected(self, c, r, h) -> np.ndarray:
        return (self.raw(c, r, h, self.M, self.N) - self.alpha) / self.beta

    def predict(self, C, R, H) -> np.ndarray:
        """Scores on the 1-5 scale from full-size vectors (NaN where a needed reference is missing)."""
        return self.predict_projected(*self.project(C, R, H))

    def predict_with(self, C, R, H, M, N) -> np.ndarray:
        """Scores from full-size vectors with other M, N (stage 2's validation checks)."""
        return (self.raw(*self.project(C, R, H), M, N) - self.alpha) / self.beta

    # -- the folder --------------------------------------------------------------------------
    def state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """(config.json values, npz arrays) under the names ADEM folders have always used."""
        return ({"alpha_": self.alpha, "beta_": self.beta},
                {"M_": self.M, "N_": self.N, "pca_components_": self.pca_components, "pca_mean_": self.pca_mean})

    @classmethod
    def from_state(cls, variant: str, values: Mapping[str, Any], arrays: Mapping[str, np.ndarray],
                   directory: str) -> "BilinearHead":
        """The head a folder holds, refused in one line when a part is missing or the shapes
        disagree (a damaged or foreign folder, not a model that scores wrongly)."""
        missing = set(ARRAYS) - set(arrays)
        if missing or not set(VALUES) <= set(values):
            raise DialevalError(f"{directory}: incomplete ADEM artifact (missing "
                                f"{', '.join(sorted(missing | (set(VALUES) - set(values))))})")
        n = arrays["pca_components_"].shape[0]
        if arrays["M_"].shape != (n, n) or arrays["N_"].shape != (n, n):
            raise DialevalError(f"{directory}: ADEM arrays do not fit together (M {arrays['M_'].shape}, "
                                f"PCA {arrays['pca_components_'].shape})")
        return cls(variant, arrays["pca_mean_"], arrays["pca_components_"], arrays["M_"], arrays["N_"],
                   values["alpha_"], values["beta_"])
