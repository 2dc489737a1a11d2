"""The `adem`, `c_adem` and `r_adem` metrics: score responses with a trained ADEM folder.

A folder holds one trained variant (`dialeval train adem --variant ...`); each metric name
scores only its own variant, so a number printed as `c_adem` always comes from a model that
never read the references. Scores are on the 1-5 scale the model was trained on.

References: `multi` (default) uses the mean of the references' vectors, which equals the mean
of the single-reference scores (the score is linear in r); `max` scores each reference alone
and keeps the best. `c_adem` reads no reference.
"""

from __future__ import annotations

import os
from functools import lru_cache
from typing import Any, ClassVar, Literal

import numpy as np

from ....errors import DialevalError
from ...base import Batch, Metric


@lru_cache(maxsize=4)
def _load(directory: str, stamp: float):
    from ....progress import loading
    from .model import Adem

    with loading(f"ADEM model {directory}"):
        return Adem.load(directory)


def load_model(directory: str | os.PathLike):
    directory = os.path.abspath(os.fspath(directory))
    if not os.path.isdir(directory):
        raise DialevalError(f"{directory}: no such ADEM model folder")
    manifest = os.path.join(directory, "manifest.json")
    stamp = os.path.getmtime(manifest) if os.path.exists(manifest) else 0.0
    return _load(directory, stamp)


class AdemScore(Metric):
    """ADEM (Lowe et al. 2017) with a trained model folder.

    Options:
        adem_model: ADEM model folder from `dialeval train adem`
    """

    name: ClassVar[str] = "adem"
    description: ClassVar[str] = "ADEM: learned (c^T M r^ + r^T N r^ - alpha) / beta on encoder vectors"
    native_tokenizer = "model"
    score_range = (1.0, 5.0)   # the rating scale every training set is mapped onto
    english_only = True

    def __init__(self, refs_mode: Literal["multi", "max", "mean"] = "multi", tokenizer: str | None = None,
                 adem_model: str | os.PathLike | None = None):
        super().__init__(refs_mode=refs_mode, tokenizer="model")
        self.adem_model = os.fspath(adem_model) if adem_model is not None else None
        self._model = None

    @property
    def model(self):
        if self._model is None:
            if self.adem_model is None:
                raise DialevalError(f"metric {self.name} needs a trained model: --adem-model DIR "
                                    "(train one with `dialeval train adem`)")
            model = load_model(self.adem_model)
            if model.variant != self.name:
                raise DialevalError(f"{self.adem_model}: holds a {model.variant} model; score it with "
                                    f"--metrics {model.variant}, or train a {self.name} model "
                                    f"(`dialeval train adem --variant {self.name}`)")
            self._model = model
        return self._model

    def signature_options(self) -> list[tuple[str, Any]]:
        from ....models.store import read_manifest

        m = self.model
        manifest = read_manifest(os.path.abspath(self.adem_model)) or {}
        digest = (manifest.get("files", {}).get("arrays.npz") or {}).get("sha256", "")[:12]
        return [("model", f"{os.path.basename(os.path.normpath(self.adem_model))}:{digest}"),
                ("encoder", getattr(m, "encoder_fingerprint_", m.encoder)), ("preset", m.preset),
                ("pca", int(m.M_.shape[0]))]

    def multi_stats(self, batch: Batch) -> np.ndarray:
        m = self.model
        refs = batch.refs if self.needs_references else [[] for _ in batch.hyps]
        return m.predict(batch.contexts, refs, batch.hyps)[:, None]

    def sentence_from_stats(self, stats: np.ndarray) -> np.ndarray:
        return stats[:, 0]


class CAdemScore(AdemScore):
    """C-ADEM: ADEM's context term only, c^T M r^ (no reference read).

    Options:
        adem_model: ADEM model folder trained with --variant c_adem
    """

    name: ClassVar[str] = "c_adem"
    description: ClassVar[str] = "C-ADEM: ADEM's context term only (reference-free)"
    needs_references: ClassVar[bool] = False


class RAdemScore(AdemScore):
    """R-ADEM: ADEM's reference term only, r^T N r^.

    Options:
        adem_model: ADEM model folder trained with --variant r_adem
    """

    name: ClassVar[str] = "r_adem"
    description: ClassVar[str] = "R-ADEM: ADEM's reference term only"
