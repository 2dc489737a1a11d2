"""Metric names -> how to build them.

Entries name their class by import path so that `import dialeval` and the word-overlap
metrics never import a heavy family's dependencies. Each entry lists the options it accepts;
options meant for other metrics (one CLI call passes one set of options to all metrics) are
ignored, so `--word-vectors` does not trouble BLEU.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any

from ..errors import DialevalError
from .base import Metric

COMMON_OPTIONS = ("refs_mode", "tokenizer")


@dataclass(frozen=True)
class MetricSpec:
    name: str
    target: str                      # "module:Class"
    family: str
    description: str
    fixed: dict[str, Any] = field(default_factory=dict)
    options: tuple[str, ...] = COMMON_OPTIONS
    extra: str | None = None         # pip extra that provides its dependencies

    def build(self, **options: Any) -> Metric:
        module_name, cls_name = self.target.split(":")
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            hint = f" (pip install 'dialeval[{self.extra}]')" if self.extra else ""
            raise DialevalError(f"metric {self.name!r} needs a missing dependency: {exc.name}{hint}") from None
        cls = getattr(module, cls_name)
        kwargs = {k: v for k, v in options.items() if k in self.options and v is not None}
        return cls(**self.fixed, **kwargs)


_OVERLAP = "dialeval.metrics.overlap"
_SPECS: list[MetricSpec] = [
    *[MetricSpec(f"bleu{k}", f"{_OVERLAP}.bleu:Bleu", "overlap",
                 f"BLEU-{k}, pycocoevalcap rules (closest reference length, 1e-15/1e-9 floors)",
                 fixed={"order": k}) for k in range(1, 5)],
    MetricSpec("rouge_l", f"{_OVERLAP}.rouge:RougeL", "overlap",
               "ROUGE-L F (beta 1.2), pycocoevalcap rules"),
    MetricSpec("cider_d", f"{_OVERLAP}.cider:Cider", "overlap",
               "CIDEr-D (pycocoevalcap `Cider`, nlg-eval's CIDEr)", fixed={"variant": "d"}),
    MetricSpec("cider", f"{_OVERLAP}.cider:Cider", "overlap",
               "plain CIDEr (Vedantam et al. 2015), corpus document frequencies",
               fixed={"variant": "plain"}),
    MetricSpec("meteor", f"{_OVERLAP}.meteor.metric:Meteor", "overlap",
               "METEOR 1.5 as pycocoevalcap runs the jar (-l en -norm), without Java",
               options=COMMON_OPTIONS + ("meteor_resources", "meteor_workers"), extra="meteor"),
    *[MetricSpec(name, f"dialeval.metrics.embedding.nlgeval:{cls}", "embedding", desc,
                 options=COMMON_OPTIONS + ("word_vectors", "vector_case"), extra="embeddings")
      for name, cls, desc in [
          ("emb_average", "EmbeddingAverage", "Embedding Average cosine, nlg-eval rules (max over references)"),
          ("emb_extrema", "VectorExtrema", "Vector Extrema cosine, nlg-eval rules (max over references)"),
          ("emb_greedy", "GreedyMatching", "Greedy Matching, nlg-eval rules (max over references)")]],
    MetricSpec("sent_cosine", "dialeval.metrics.embedding.sentence:SentenceCosine", "embedding",
               "sentence-encoder cosine (all-MiniLM-L6-v2 by default), best over references",
               options=("refs_mode", "sentence_model"), extra="embeddings"),
    *[MetricSpec(name, f"dialeval.metrics.lm.metric:{cls}", "lm", desc,
                 options=("lm_model", "lm_percentile", "lm_batch_size", "lm_device", "lm_context_turns"),
                 extra="lm")
      for name, cls, desc in [
          ("lm_coherence", "LMCoherence", "context coherence c(r|q), causal LM, normalised (holistic eq. 2)"),
          ("lm_fluency", "LMFluency", "fluency f(r), causal LM, normalised (holistic eq. 4)"),
          ("lm_coherence_raw", "LMCoherenceRaw", "mean log P(response | query) per token (holistic eq. 1)"),
          ("lm_fluency_raw", "LMFluencyRaw", "mean log P(response) per token (holistic eq. 3)")]],
    *[MetricSpec(name, f"dialeval.metrics.amfm.metric:{cls}", "amfm", desc,
                 options=COMMON_OPTIONS + ("amfm_model", "amfm_lambda", "am_dims", "am_refs", "fm_refs"),
                 extra="amfm")
      for name, cls, desc in [
          ("am", "AM", "AM-FM adequacy: LSI cosine, max over references (eq. 1); needs --amfm-model"),
          ("fm", "FM", "AM-FM fluency: n-gram LM probability ratio, max over references (eq. 2-3)"),
          ("fm_abs", "FMAbs", "AM-FM absolute fluency: n-gram LM probability of the response (eq. 2)"),
          ("amfm", "AMFM", "AM-FM: lambda*AM + (1-lambda)*FM, lambda 0.8 (eq. 4); needs --amfm-model")]],
]

REGISTRY: dict[str, MetricSpec] = {spec.name: spec for spec in _SPECS}


def register(spec: MetricSpec) -> None:
    REGISTRY[spec.name] = spec


def metric_spec(name: str) -> MetricSpec:
    try:
        return REGISTRY[name]
    except KeyError:
        raise DialevalError(f"unknown metric {name!r}; `dialeval metrics` lists them") from None


def build_metric(name: str, **options: Any) -> Metric:
    return metric_spec(name).build(**options)


def list_metrics() -> list[MetricSpec]:
    return list(REGISTRY.values())
