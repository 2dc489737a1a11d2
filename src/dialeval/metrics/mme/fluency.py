"""FM, fluency as USL-H's valid-utterance prediction: P(fluent | utterance alone).

Training set: DailyDialog train utterances, each turned into one example by
`data.fluency_example` (half fluent: unchanged or stop-words dropped; half not: shuffled,
words dropped or spans repeated). Features: the frozen encoder's [mean ; max] pooled states.
"""

from __future__ import annotations

import random
import time
from typing import Sequence

import numpy as np

from .data import fluency_example
from .submetric import HeadSubMetric


class FluencyModel(HeadSubMetric):
    kind = "mme-fm"

    def fit(self, utterances: Sequence[str], deadline: float | None = None, say=None,
            checkpoint=None, device: str = "cpu") -> "FluencyModel":
        started = time.monotonic()
        self._train_device = device
        rng = random.Random(self.seed)
        pool = [u for u in utterances if u.strip()]
        rng.shuffle(pool)
        pool = pool[: self.max_examples]
        examples = [fluency_example(u, rng) for u in pool]
        texts = [t for t, _, _ in examples]
        y = np.array([lab for _, lab, _ in examples], dtype=np.float32)
        rules: dict[str, int] = {}
        for _, _, rule in examples:
            rules[rule] = rules.get(rule, 0) + 1
        return self._fit_columns([texts], y, _single, started, {"rules": rules, "source_utterances": len(pool)},
                                 deadline, say, checkpoint)

    def raw(self, responses: Sequence[str], device: str = "cpu", precision: str = "fp32") -> np.ndarray:
        return self.raw_from_features(self._encoder(device, precision).features(list(responses)))


def _single(x):
    return x
