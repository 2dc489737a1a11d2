"""`compose`: one score from several metrics, as a `dialeval fit compose` artifact combines them.

The artifact (`metrics.compose.model.ComposeModel`) records which metrics it composes, the options they
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

from ...errors import DialevalError
from ..base import Batch, Metric, MetricOutput, mean_stats
from ..model_metric import ModelMetric, without_default_runtime

# recorded at fit time but never taken from the command line (see the module docstring)
PINNED = ("refs_mode", "tokenizer")


def _without_rules(signature: str) -> str:
    """`signature` without the fields of the rules that move only rows no fit reads: the squash
    map's (under the knee, where the clip gave the floor) and the script rule's."""
    from ..base import SCRIPT_FIELD, without_fields
    from ..softfloor import SIGNATURE_FIELD

    return without_fields(signature, SIGNATURE_FIELD[0], SCRIPT_FIELD[0])


class ComposeSignatureWarning(UserWarning):
    """A composed metric is now computed differently from when the weights were fitted."""


class Compose(ModelMetric):
    """A composition of other metrics fitted by `dialeval fit compose` (CRS, average or ridge).

    Options:
        compose_model: folder written by `dialeval fit compose` (its metrics are rebuilt from it)
        compose_quality: the fitted quality whose weights to use (default: the first fitted)
    """

    name = "compose"
    description = "composition of other metrics (MME-CRS correlation re-scaling, average or ridge)"
    needs_references = False
    native_tokenizer = "per-metric"
    english_only = True
    floor_is_native = True
    # a reply in another script than its context scores the composition's floor (metrics/base.py)
    floors_other_script = True
    model_option = "compose_model"

    def __init__(self, compose_model: str | None = None, compose_quality: str | None = None,
                 refs_mode: str = "multi", tokenizer: str | None = None, **metric_options: Any):
        super().__init__(refs_mode="multi", tokenizer=None)
        from ...models.artifacts import model_field, needs_model

        if not compose_model:
            raise needs_model(self.name, self.model_option, "a fitted composition", "fit one with `dialeval fit compose`")
        from .model import ComposeModel
        from ..registry import REGISTRY

        self.model_dir = os.fspath(compose_model)
        # the members and their recorded options and signatures, from config.json: the members
        # are built here from it; the weights load on first use (`model`), as every model does
        self.record = ComposeModel.recorded(self.model_dir)
        quality = compose_quality or self.record.qualities_[0]
        if quality not in self.record.qualities_:
            raise DialevalError(f"{self.model_dir}: no weights for quality {quality!r}; "
                                f"fitted: {', '.join(self.record.qualities_)}")
        self.quality = quality
        unknown = [m for m in self.record.metrics_ if m not in REGISTRY]
        if unknown:
            raise DialevalError(f"{self.model_dir}: composes metric {unknown[0]!r}, which this dialeval "
                                "does not know (`dialeval metrics` lists them); refit the composition")
        nested = [m for m in self.record.metrics_ if REGISTRY[m].passes_options]
        if nested:
            raise DialevalError(f"{self.model_dir}: composes {nested[0]!r}, itself a composition; "
                                "compose the underlying metrics instead")
        recorded = dict(self.record.metric_options_)
        given = {k: v for k, v in metric_options.items() if v is not None and k not in PINNED}
        self.options = {**recorded, **given}
        self.overridden = sorted(k for k in given if recorded.get(k) != given[k])
        self.metrics = [REGISTRY[m].build(**self.options) for m in self.record.metrics_]
        from ..softfloor import without_field

        self.squashed = False
        for metric in self.metrics:
            then = self.record.signatures_.get(metric.name)
            now = str(metric.signature())
            # a member fitted before its scale's bottom went through the squashing map differs
            # only under the map's knee, where its old clip gave the floor: the weights still fit
            # (the composite names the map in its own signature)
            self.squashed |= now != without_field(now)
            # and one signed before the one runtime rule wrote the default runtime as it was then
            # (`device:cpu`, `prec:fp32`), which the rule now leaves out: the same numbers
            then = then and without_default_runtime(then)
            # and one fitted before the script rule (metrics/base.py) differs only on replies in
            # another script than their context, which no fit's rows hold
            if then and then != now and _without_rules(then) != _without_rules(now):
                warnings.warn(f"compose: {metric.name} is now {now}, fitted as {then}; "
                              "its weights may not fit these scores", ComposeSignatureWarning,
                              stacklevel=2)
        # the manifest's own hash: it lists every file's sha256 (config.json and the weights in
        # arrays.npz), so a refit with other weights signs differently
        self.model_tag = model_field(self.name, self.model_dir)   # loading refused a folder without a manifest

    def load_model(self):
        """The fitted weights, read through the one door for trained models on first use."""
        from ...models.artifacts import open_model
        from .model import ComposeModel

        return open_model(self.model_dir, ComposeModel.kind, ComposeModel.load)

    # -- the composed metrics' corpus-wide first passes, forwarded ----------------------------
    # The engine gathers the passes its plan's metrics name (`corpus_pass_key`); the metrics
    # composed here are not in the plan, so `compose` names one pass standing for all of theirs
    # (CIDEr-D's document frequencies, ...) and hands the merged states back to them in
    # `components`. Without this each shard would be scored with its own document frequencies
    # and the sentence values would depend on --chunk-size.
    def _pass_owners(self) -> dict[Any, Metric]:
        owners: dict[Any, Metric] = {}
        for metric in self.metrics:
            key = metric.corpus_pass_key()
            if key is not None:
                owners.setdefault(key, metric)
        return owners

    def corpus_pass_key(self) -> Any:
        keys = tuple(self._pass_owners())
        return ("compose",) + keys if keys else None

    def corpus_pass_state(self, batch: Batch) -> dict[Any, Any]:
        return {key: metric.corpus_pass_state(batch) for key, metric in self._pass_owners().items()}

    def merge_corpus_pass(self, a: dict[Any, Any], b: dict[Any, Any]) -> dict[Any, Any]:
        owners = self._pass_owners()
        return {key: owners[key].merge_corpus_pass(a[key], b[key]) for key in owners}

    def corpus_pass_arrays(self, state: dict[Any, Any]) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        for k, (key, metric) in enumerate(self._pass_owners().items()):
            out.update({f"{k}:{name}": a for name, a in metric.corpus_pass_arrays(state[key]).items()})
        return out

    def corpus_pass_from_arrays(self, arrays: dict[str, np.ndarray]) -> dict[Any, Any]:
        state = {}
        for k, (key, metric) in enumerate(self._pass_owners().items()):
            prefix = f"{k}:"
            state[key] = metric.corpus_pass_from_arrays(
                {name[len(prefix):]: a for name, a in arrays.items() if name.startswith(prefix)})
        return state

    def components(self, batch: Batch) -> dict[str, np.ndarray]:
        """Each composed metric's sentence scores on `batch` (raw, before scaling), with the
        merged first passes of the whole evaluated set when the engine gathered them."""
        def compute() -> dict[str, np.ndarray]:
            forwarded = batch.corpus.get(self.corpus_pass_key()) if batch.corpus else None
            for key, state in (forwarded or {}).items():
                batch.corpus.setdefault(key, state)
            return {m.name: m.compute(batch).sentence for m in self.metrics}

        return batch.memo(("compose-components", id(self)), compute)

    def floor(self) -> float:
        """The composite of its members' floors: what it gives a blank response anyway, since
        every member scores that at its floor (with weights >= 0 the lowest it can give)."""
        parts = {m.name: np.array([m.floor()], dtype=np.float64) for m in self.metrics}
        return float(self.model.predict(parts, self.quality)[0])

    def predict(self, batch: Batch, parts: dict[str, np.ndarray]) -> np.ndarray:
        """The composite of `parts`; NaN where the composition needs references and the sample
        has none (the model would otherwise fill the missing members with development means)."""
        out = self.model.predict(parts, self.quality)
        if self.needs_references:
            without = np.array([not any(r.strip() for r in refs) for refs in batch.refs], dtype=bool)
            out = np.where(without, np.nan, out)
        return out

    def multi_stats(self, batch: Batch) -> np.ndarray:
        return self.predict(batch, self.components(batch))[:, None]

    def sentence_from_stats(self, stats: np.ndarray) -> np.ndarray:
        return stats[:, 0]

    def compute_batch(self, batch: Batch) -> MetricOutput:
        parts = self.components(batch)
        sentence = self.predict(batch, parts)
        stats = mean_stats(sentence)
        return MetricOutput(self.name, sentence, stats, self.reduce(stats), self.signature(),
                            extra={"components": parts})

    def signature(self):
        """Its own fields, without the members' reference mode and tokenizer (each member keeps
        the recorded ones, which its own signature names)."""
        from ..base import Signature

        return Signature(self.name, tuple(self.signature_options()))

    def model_fields(self) -> list[tuple[str, Any]]:
        return [("model", self.model_tag)]

    def option_fields(self) -> list[tuple[str, Any]]:
        opts: list[tuple[str, Any]] = [("method", self.record.method)]
        if self.record.method == "crs":
            opts.append(("p", self.record.p))
        if getattr(self.record, "consistent", False):
            opts.append(("rule", "consistent"))
        if self.record.method == "ridge" and getattr(self.record, "positive", False):
            opts.append(("coef", ">=0"))
        opts += [("q", self.quality), ("scale", self.record.scaling),
                 ("metrics", "+".join(self.record.metrics_))]
        if self.overridden:
            opts.append(("override", "+".join(self.overridden)))
        if self.squashed:
            from ..softfloor import SIGNATURE_FIELD

            opts.append(SIGNATURE_FIELD)
        return opts

    def runtimes(self):
        """Its members' runtimes (a bf16 member makes a bf16 composite), named by member."""
        out = {}
        for metric in self.metrics:
            if isinstance(metric, ModelMetric):
                for key, runtime in metric.runtimes().items():
                    out[metric.name if key == "model" else f"{metric.name}.{key}"] = runtime
        return out


class ComposeRef(Compose):
    """The reference-based composition: the same machinery as `compose`, its own model option
    and default (a pool with reference-based members such as `sent_cosine` and BERTScore), so
    that both can be scored in one run.

    Options:
        compose_ref_model: folder written by `dialeval fit compose` over reference-based metrics
        compose_quality: the fitted quality whose weights to use (default: the first fitted)
    """

    name = "compose_ref"
    description = "composition of reference-based and reference-free metrics (ridge); needs references"
    needs_references = True
    model_option = "compose_ref_model"

    def __init__(self, compose_ref_model: str | None = None, compose_quality: str | None = None,
                 refs_mode: str = "multi", tokenizer: str | None = None, compose_model: str | None = None,
                 compose_judge_model: str | None = None, **metric_options: Any):
        # the other compositions' folders are theirs; taken here so they never reach the members
        super().__init__(compose_ref_model, compose_quality, refs_mode, tokenizer, **metric_options)


class ComposeJudge(Compose):
    """The composition with the packaged 1.5B LLM judge among its members: the same machinery
    as `compose`, its own model option and default, so that both can be scored in one run.

    Why a third composition and not the default: held out, the judge adds +0.057 to `compose`
    (docs/results/published_scorecard.md), but it costs about 1.5 CPU s a row, ten times the
    whole `compose`, and it is an optional 1.07 GB install; so it is asked for by name.

    Options:
        compose_judge_model: folder written by `dialeval fit compose` with `judge` among its members
        compose_quality: the fitted quality whose weights to use (default: the first fitted)
    """

    name = "compose_judge"
    description = "composition of the MME sub-metrics, the cross-encoder and the 1.5B LLM judge (ridge)"
    needs_references = False
    model_option = "compose_judge_model"

    def __init__(self, compose_judge_model: str | None = None, compose_quality: str | None = None,
                 refs_mode: str = "multi", tokenizer: str | None = None, compose_model: str | None = None,
                 compose_ref_model: str | None = None, **metric_options: Any):
        # the other compositions' folders are theirs; taken here so they never reach the members
        super().__init__(compose_judge_model, compose_quality, refs_mode, tokenizer, **metric_options)
