"""What the frozen-encoder sub-metrics (FM, RM, EM) share: an Estimator whose learned state is
one MLP head (`heads.py`) plus the normalisation range (`normalise.py`) and a record of how it
was trained (`info_`: sizes, seconds, held-out loss). Subclasses say how examples become
features (`_features`) and how the training set is built (`fit`)."""

from __future__ import annotations

import time
from typing import Any, Mapping

import numpy as np

from ...models.estimator import Estimator
from .heads import head_forward, sigmoid, train_head
from .normalise import apply_range, fit_range

HEAD_KEYS = ("mu", "sd", "w0", "b0", "w1", "b1")


class HeadSubMetric(Estimator):
    """Base: a head over frozen features; `raw()` is the head's probability, `score()` the
    USL-H-normalised value in [0, 1]."""

    kind = ""

    def __init__(self, max_examples: int = 3000, hidden: int = 256, epochs: int = 30, seed: int = 0,
                 encoder: str | None = None):
        self.max_examples = max_examples
        self.hidden = hidden
        self.epochs = epochs
        self.seed = seed
        self.encoder = encoder

    # -- encoder ----------------------------------------------------------------------------
    def _encoder(self):
        from .encoder import shared_encoder

        return shared_encoder(self.encoder)

    # -- shared training tail ---------------------------------------------------------------
    def _fit_head(self, x: np.ndarray, y: np.ndarray, started: float, info: dict[str, Any],
                  deadline: float | None = None) -> "HeadSubMetric":
        arrays, head_info = train_head(x, y, hidden=self.hidden, epochs=self.epochs, seed=self.seed,
                                       deadline=deadline)
        valid_idx = head_info.pop("_valid_idx")
        self.head_ = arrays
        held = sigmoid(head_forward(arrays, x[valid_idx])) if len(valid_idx) else sigmoid(head_forward(arrays, x))
        self.norm_low_, self.norm_high_ = fit_range(held)
        self.info_ = {**info, **head_info, "examples": int(len(y)), "positives": float(np.sum(y)),
                      "encoder": self._encoder().fingerprint(),
                      "norm_from": "held-out training rows", "train_seconds": round(time.monotonic() - started, 1)}
        return self

    def raw_from_features(self, x: np.ndarray) -> np.ndarray:
        self.check_fitted()
        return sigmoid(head_forward(self.head_, x))

    def normalise(self, raw: np.ndarray) -> np.ndarray:
        return apply_range(raw, self.norm_low_, self.norm_high_)

    # -- persistence ------------------------------------------------------------------------
    def _state(self):
        values = {"norm_low_": self.norm_low_, "norm_high_": self.norm_high_, "info_": self.info_}
        arrays = {f"head_{k}": np.asarray(v) for k, v in self.head_.items()}
        return values, arrays

    def _set_state(self, values: Mapping[str, Any], arrays: Mapping[str, np.ndarray], directory: str) -> None:
        from ...errors import DialevalError

        missing = [k for k in HEAD_KEYS if f"head_{k}" not in arrays]
        if missing:
            raise DialevalError(f"{directory}: arrays.npz lacks head_{missing[0]}; not a {self.kind} artifact")
        self.head_ = {k: arrays[f"head_{k}"] for k in HEAD_KEYS}
        self.norm_low_ = float(values["norm_low_"])
        self.norm_high_ = float(values["norm_high_"])
        self.info_ = dict(values.get("info_") or {})
