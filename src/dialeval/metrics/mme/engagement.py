"""EM, engagement of the response alone (the paper drops the context: relevance is RM's and
TCM's job). A head over the response's frozen features, trained on the Predictive Engagement
labels that are not the rated test set: the ConvAI utterance labels and the DailyDialog
fine-tuning split (`data.engagement_examples`). The labels there are binary; a 1-5 score
would be scaled to [0, 1] first, as the paper prefers over thresholding.
"""

from __future__ import annotations

import time
from typing import Literal, Sequence

import numpy as np

from .submetric import HeadSubMetric


class EngagementModel(HeadSubMetric):
    kind = "mme-em"

    def __init__(self, max_examples: int = 3000, hidden: int = 64, epochs: int = 60, seed: int = 0,
                 encoder: str | None = None, encoder_mode: Literal["frozen", "finetune"] = "frozen",
                 finetune_layers: int = 2, finetune_epochs: int = 3, finetune_lr: float = 3e-5):
        super().__init__(max_examples=max_examples, hidden=hidden, epochs=epochs, seed=seed, encoder=encoder,
                         encoder_mode=encoder_mode, finetune_layers=finetune_layers,
                         finetune_epochs=finetune_epochs, finetune_lr=finetune_lr)

    def fit(self, texts: Sequence[str], labels: Sequence[float], source: dict | None = None,
            deadline: float | None = None, say=None, checkpoint=None,
            device: str = "cpu") -> "EngagementModel":
        started = time.monotonic()
        self._train_device = device
        y = np.asarray(labels, dtype=np.float32)
        if y.max() > 1.0:                       # a 1-5 style scale: min-max to [0, 1]
            y = (y - y.min()) / max(float(y.max() - y.min()), 1e-9)
        texts = list(texts)[: self.max_examples]
        y = y[: len(texts)]
        return self._fit_columns([texts], y, _single, started, {"sources": source or {}}, deadline, say,
                                 checkpoint)

    def raw(self, responses: Sequence[str], device: str = "cpu", precision: str = "fp32") -> np.ndarray:
        return self.raw_from_features(self._encoder(device, precision).features(list(responses)))


def _single(x):
    return x
