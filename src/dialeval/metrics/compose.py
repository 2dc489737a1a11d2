"""`compose`: one score from several metrics, as a `dialeval fit compose` artifact combines them.

The artifact (`meta.compose.ComposeModel`) records which metrics it composes, the options they
were built with when it was fitted (model folders, reference mode, tokenizer) and their
signatures. This metric rebuilds those metrics itself, runs them on the batch and combines
their sentence scores with the stored scaling and weights, so a user needs only
`--metrics compose --compose-model DIR`. Options given on the command line override the
recorded ones (a model folder moved to another machine: `--amfm-model`, `--lm-model`,
`--mme-model` ...); the reference mode and tokenizer stay the recorded ones, because the
weights were learned on scores made that way. A rebuilt metric whose signature differs from
the recorded one (another model, another version) triggers a warning: the weights may not fit
its scores.
"""

from __future__ import annotations

import os
import warnings
from typing import Any

import numpy as np

from ..errors import DialevalError
from .base import Batch, Metric, MetricOutput, mean_stats

# recorded at fit time but never taken from the command line (see the module docstring)
PINNED = ("refs_mode", "tokenizer")


class ComposeSignatureWarning(UserWarning):
    """A composed metric is now computed differently from when the weights were fitted."""


class Compose(Metric):
    """A composition of other metrics fitted by `dialeval fit compose` (CRS, average or ridge).

    Options:
        compose_model: folder written by `dialeval fit compose` (its metrics are rebuilt from it)
        compose_quality: the fitted quality whose weights to use (default: the first fitted)
    """

    name = "compose"
    description = "composition of other metrics (MME-CRS correlation re-scaling, average or ridge)"
    needs_references = False
    native_tokenizer = "per-metric"

    def __init__(self, compose_model: str | None = None, compose_quality: str | None = None,
                 refs_mode: str = "multi", tokenizer: str | None = None, **metric_options: Any):
        super().__init__(refs_mode="multi", tokenizer=None)
        if not compose_model:
            raise DialevalError("metric 'compose' needs a fitted composition: --compose-model DIR "
                                "(fit one with `dialeval fit compose`)")
        from ..meta.compose import ComposeModel
        from ..models.store import read_manifest
        from .registry import REGISTRY

        self.model_dir = os.fspath(compose_model)
        self.model = ComposeModel.load(self.model_dir)
        quality = compose_quality or self.model.qualities_[0]
        if quality not in self.model.qualities_:
            raise DialevalError(f"{self.model_dir}: no weights for quality {quality!r}; "
                                f"fitted: {', '.join(self.model.qualities_)}")
        self.quality = quality
        unknown = [m for m in self.model.metrics_ if m not in REGISTRY]
        if unknown:
            raise DialevalError(f"{self.model_dir}: composes metric {unknown[0]!r}, which this dialeval "
                                "does not know (`dialeval metrics` lists them); refit the composition")
        nested = [m for m in self.model.metrics_ if REGISTRY[m].passes_options]
        if nested:
            raise DialevalError(f"{self.model_dir}: composes {nested[0]!r}, itself a composition; "
                                "compose the underlying metrics instead")
        recorded = dict(self.model.metric_options_)
        given = {k: v for k, v in metric_options.items() if v is not None and k not in PINNED}
        self.options = {**recorded, **given}
        self.overridden = sorted(k for k in given if recorded.get(k) != given[k])
        self.metrics = [REGISTRY[m].build(**self.options) for m in self.model.metrics_]
        for metric in self.metrics:
            then = self.model.signatures_.get(metric.name)
            now = str(metric.signature())
            if then and then != now:
                warnings.warn(f"compose: {metric.name} is now {now}, fitted as {then}; "
                              "its weights may not fit these scores", ComposeSignatureWarning,
                              stacklevel=2)
        manifest = read_manifest(self.model_dir) or {}
        digest = (manifest.get("files", {}).get("config.json") or {}).get("sha256", "")
        self.fingerprint = digest[:8]

    def components(self, batch: Batch) -> dict[str, np.ndarray]:
        """Each composed metric's sentence scores on `batch` (raw, before scaling)."""
        return batch.memo(("compose-components", id(self)),
                          lambda: {m.name: m.compute(batch).sentence for m in self.metrics})

    def multi_stats(self, batch: Batch) -> np.ndarray:
        return self.model.predict(self.components(batch), self.quality)[:, None]

    def sentence_from_stats(self, stats: np.ndarray) -> np.ndarray:
        return stats[:, 0]

    def compute(self, batch: Batch) -> MetricOutput:
        parts = self.components(batch)
        sentence = self.model.predict(parts, self.quality)
        stats = mean_stats(sentence)
        return MetricOutput(self.name, sentence, stats, self.reduce(stats), self.signature(),
                            extra={"components": parts})

    def signature(self):
        from .base import Signature

        opts: list[tuple[str, Any]] = [
            ("model", f"{os.path.basename(os.path.normpath(self.model_dir))}@{self.fingerprint}"),
            ("method", self.model.method)]
        if self.model.method == "crs":
            opts.append(("p", self.model.p))
        opts += [("q", self.quality), ("scale", self.model.scaling),
                 ("metrics", "+".join(self.model.metrics_))]
        if self.overridden:
            opts.append(("override", "+".join(self.overridden)))
        if self.default_model:
            opts.append(("default", self.default_model))
        return Signature(self.name, tuple(opts))
