"""The `adem`, `c_adem` and `r_adem` metrics: score responses with a trained ADEM folder.

A folder holds one trained variant (`dialeval train adem --variant ...`); each metric name
scores only its own variant, so a number printed as `c_adem` always comes from a model that
never read the references. Scores are on the 1-5 scale the model was trained on; the linear
score has no bottom, so what would fall under 1.2 is squashed into (1, 1.2) by the shared map
of `metrics.softfloor`, above the 1 that a blank response scores.

References: `multi` (default) uses the mean of the references' vectors, which equals the mean
of the single-reference scores (the score is linear in r); `max` scores each reference alone
and keeps the best. `c_adem` reads no reference.
"""

from __future__ import annotations

import os
from typing import Any, ClassVar, Literal

import numpy as np

from ....errors import DialevalError
from ...base import Batch
from ...model_metric import ModelMetric, Runtime
from ...softfloor import SIGNATURE_FIELD, lift_range


def load_model(directory: str | os.PathLike):
    """The ADEM model in `directory`, through the one door for trained models."""
    from ....models.artifacts import open_model
    from .model import Adem

    directory = os.path.abspath(os.fspath(directory))
    if not os.path.isdir(directory):
        raise DialevalError(f"{directory}: no such ADEM model folder")
    return open_model(directory, Adem.kind, Adem.load, what=f"ADEM model {directory}")


def signature_of(directory: str, name: str, config: dict | None = None) -> list[tuple[str, Any]]:
    """What a loaded model's signature names (the model's manifest hash, encoder, preset, PCA
    size), read from its manifest, config.json and one array header: a run is planned without
    loading ADEM. `name` is the variant (adem, c_adem, r_adem)."""
    from ....models import artifacts

    directory = os.path.abspath(directory)
    config = config if config is not None else artifacts.read_json(directory)
    params, state = config.get("params") or {}, config.get("state") or {}
    encoder = state.get("encoder_fingerprint_")
    if encoder is None:
        from .model import BUNDLED_ENCODER

        encoder = str(params.get("encoder", "minilm"))
        if encoder.startswith("hred:") and os.path.isdir(os.path.join(directory, BUNDLED_ENCODER)):
            encoder = f"hred:{os.path.join(directory, BUNDLED_ENCODER)}"
    return [("model", artifacts.model_field(name, directory)),
            ("encoder", encoder), ("preset", params.get("preset", "paper")), ("pca", artifacts.array_shape(directory, "M_")[0])]


class AdemScore(ModelMetric):
    """ADEM (Lowe et al. 2017) with a trained model folder.

    Options:
        adem_model: ADEM model folder from `dialeval train adem`
        adem_precision: MiniLM encoder weight dtype, fp32 (default) or bf16 (faster on CPUs with
            AVX512-BF16; M, N and the PCA stay float64: docs/speed.md; named in the signature)
        adem_device: torch device of the encoder (default cpu; another is named in the signature)
    """

    name: ClassVar[str] = "adem"
    description: ClassVar[str] = "ADEM: learned (c^T M r^ + r^T N r^ - alpha) / beta on encoder vectors"
    native_tokenizer = "model"
    score_range = (1.0, 5.0)   # the rating scale every training set is mapped onto
    english_only = True

    def __init__(self, refs_mode: Literal["multi", "max", "mean"] = "multi", tokenizer: str | None = None,
                 adem_model: str | os.PathLike | None = None, adem_precision: Literal["fp32", "bf16"] = "fp32",
                 adem_device: str = "cpu"):
        self.runtime = Runtime.checked("adem", adem_device, adem_precision)
        super().__init__(refs_mode=refs_mode, tokenizer="model")
        self.adem_model = os.fspath(adem_model) if adem_model is not None else None

    def load_model(self):
        self._check_given()
        model = load_model(self.adem_model)
        self._check_variant(model.variant)
        return model

    def _check_given(self) -> None:
        if self.adem_model is None:
            from ....models.artifacts import needs_model

            raise needs_model(self.name, "adem_model", how="train one with `dialeval train adem`")

    def describe(self) -> dict:
        """The folder's config.json, after the refusals loading would give (no folder, no
        manifest, another variant), from the folder's small files alone."""
        from ....models.artifacts import check, read_json
        from .model import KIND

        self._check_given()
        directory = os.path.abspath(self.adem_model)
        if not os.path.isdir(directory):
            raise DialevalError(f"{directory}: no such ADEM model folder")
        manifest = check(directory, KIND)         # verified once for the process; loading hashes nothing again
        if manifest is None:
            from ....models.store import verify

            verify(directory, KIND)               # its one-line refusal of a folder without a manifest
        config = read_json(directory)
        variant = (config.get("params") or {}).get("variant")
        if variant is not None:
            self._check_variant(variant)
        return config

    def _check_variant(self, variant: str) -> None:
        if variant != self.name:
            raise DialevalError(f"{self.adem_model}: holds a {variant} model; score it with "
                                f"--metrics {variant}, or train a {self.name} model "
                                f"(`dialeval train adem --variant {self.name}`)")

    def model_fields(self) -> list[tuple[str, Any]]:
        """The model's manifest hash, its encoder, preset and PCA size: from the folder's small
        files while the model is not loaded, from the model once it is."""
        from .encoding import check_runtime

        if not self.model_loaded:
            config = self.described
            check_runtime(str((config.get("params") or {}).get("encoder", "minilm")), self.device, self.precision)
            return signature_of(self.adem_model, self.name, config)
        m = self.model
        check_runtime(m.encoder, self.device, self.precision)
        fingerprint = m.encoder_state_.fingerprint
        return signature_of(self.adem_model, self.name)[:1] + [
            ("encoder", m.encoder if fingerprint is None else fingerprint), ("preset", m.preset),
            ("pca", m.head_.dims)]

    def option_fields(self) -> list[tuple[str, Any]]:
        return [SIGNATURE_FIELD]

    def multi_stats(self, batch: Batch) -> np.ndarray:
        from . import encoding

        m = self.model
        refs = batch.refs if self.needs_references else [[] for _ in batch.hyps]
        # `m.predict` with the encoder on this metric's device and precision (the same steps)
        enc = m.encoder_object(self.device, self.precision)
        # with the copy term, what a reply loses for repeating the last turn (adem/copy.py)
        score = m.predict_vectors(*encoding.encode(enc, batch.contexts, refs, batch.hyps),
                                  copy=m.copy_overlap(batch.contexts, batch.hyps))
        # the linear score has no bottom: what falls under 1.2 is squashed into (1, 1.2), above
        # the 1 a blank response scores, in its own order (metrics.softfloor)
        low, high = self.score_range
        return lift_range(score, low, high, top=False)[:, None]

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
