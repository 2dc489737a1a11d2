"""The `am`, `fm`, `fm_abs` and `amfm` metrics over a trained AM-FM model folder.

`refs_mode=multi` (the default) is the paper's own multi-reference rule, set per component:
AM takes the max over references (or mean, or the centroid's cosine: `am_refs`), FM the max
(or mean: `fm_refs`), and AM-FM combines the two reduced scores (eq. 4). `max` / `mean`
instead score each (response, reference) pair alone and reduce the pair scores, as for every
other metric. The corpus value of a set is the mean of the sentence scores (the paper's
system score). AM and FM share their work through the batch memo, so `am,fm,amfm` projects
and queries each sentence once.
"""

from __future__ import annotations

import os
from typing import Any, Literal, Sequence

import numpy as np

from ...errors import DialevalError
from ..base import Batch
from ..model_metric import ModelMetric
from .lsi import AM_REFS, am_scores
from .model import described, load_cached
from .text import TOKENIZATION

FM_REFS = ("max", "mean")
DEFAULT_LAMBDA = 0.8


def fm_ratio(hyp_log10: np.ndarray, ref_log10: np.ndarray) -> np.ndarray:
    """Eq. 3, min/max of the two eq.-2 probabilities, computed in log space (no underflow)."""
    return np.power(10.0, -np.abs(hyp_log10 - ref_log10))


def fm_scores(lm, hyps: Sequence[str], refs: Sequence[Sequence[str]], refs_rule: str = "max") -> np.ndarray:
    if refs_rule not in FM_REFS:
        raise DialevalError(f"unknown FM reference rule {refs_rule!r}; choose from {', '.join(FM_REFS)}")
    n = len(hyps)
    counts = np.array([len(r) for r in refs], dtype=np.int64)
    out = np.full(n, np.nan)
    if n == 0 or counts.sum() == 0:
        return out
    h = lm.mean_log10(list(hyps))
    r = lm.mean_log10([x for rs in refs for x in rs])
    owner = np.repeat(np.arange(n), counts)
    pair = fm_ratio(h[owner], r)
    has = counts > 0
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])[has]
    if refs_rule == "max":
        out[has] = np.maximum.reduceat(pair, starts)
    else:
        out[has] = np.add.reduceat(pair, starts) / counts[has]
    return out


class _AMFMBase(ModelMetric):
    """AM-FM's metrics over one trained model folder.

    Options:
        amfm_model: trained AM-FM folder (`dialeval train amfm`)
        amfm_lambda: weight of AM in amfm (eq. 4; default 0.8, the paper's)
        am_dims: LSI dimensions used by AM (default: the model's L)
        am_refs: AM over several references (default max, the paper's)
        fm_refs: FM over several references (default max, the paper's)
    """

    native_tokenizer = TOKENIZATION
    score_range = (0.0, 1.0)   # AM's cosine is clipped at 0; FM is a ratio of probabilities
    english_only = True

    def __init__(self, amfm_model: str | None = None, amfm_lambda: float = DEFAULT_LAMBDA,
                 am_dims: int | None = None, am_refs: Literal["max", "mean", "centroid"] = "max",
                 fm_refs: Literal["max", "mean"] = "max",
                 refs_mode: str = "multi", tokenizer: str | None = None):
        super().__init__(refs_mode=refs_mode, tokenizer=None)
        if not amfm_model:
            from ...models.artifacts import needs_model

            raise needs_model(self.name, "amfm_model", how="make one with `dialeval train amfm`")
        if am_refs not in AM_REFS:
            raise DialevalError(f"unknown --am-refs {am_refs!r}; choose from {', '.join(AM_REFS)}")
        if fm_refs not in FM_REFS:
            raise DialevalError(f"unknown --fm-refs {fm_refs!r}; choose from {', '.join(FM_REFS)}")
        if not 0.0 <= float(amfm_lambda) <= 1.0:
            raise DialevalError(f"--amfm-lambda {amfm_lambda} outside [0, 1]")
        self.amfm_model = os.path.abspath(os.fspath(amfm_model))
        self.amfm_lambda = float(amfm_lambda)
        self._am_dims = int(am_dims) if am_dims else None
        self.am_refs = am_refs
        self.fm_refs = fm_refs

    # The folder loads on first use (scoring); what the signature and the option checks need is
    # read from its small files (`model.described`), so planning a run loads nothing.
    def load_model(self):
        return load_cached(self.amfm_model)

    def describe(self) -> dict[str, Any]:
        return described(self.amfm_model)

    @property
    def am_dims(self) -> int:
        dims = self.described["dims"]
        chosen = self._am_dims if self._am_dims else dims
        if not 1 <= chosen <= dims:
            raise DialevalError(f"--am-dims {chosen} outside 1..{dims} (the model's L)")
        return chosen

    def _am(self, batch: Batch) -> np.ndarray:
        key = ("amfm:am", self.described["model"], self.am_dims, self.am_refs)
        return batch.memo(key, lambda: am_scores(self.model.lsi_, batch.hyps, batch.refs,
                                                 [self.am_dims], self.am_refs)[0])

    def _fm(self, batch: Batch) -> np.ndarray:
        key = ("amfm:fm", self.described["model"], self.fm_refs)
        return batch.memo(key, lambda: fm_scores(self.model.lm_, batch.hyps, batch.refs, self.fm_refs))

    def sentence_from_stats(self, stats: np.ndarray) -> np.ndarray:
        return stats[:, 0]

    def model_fields(self) -> list[tuple[str, Any]]:
        return [("model", self.described["model"])]


class AM(_AMFMBase):
    name = "am"
    description = "AM-FM adequacy: LSI cosine with the references"

    def multi_stats(self, batch: Batch) -> np.ndarray:
        return self._am(batch)[:, None]

    def option_fields(self):
        return [("dims", self.am_dims), ("weight", self.described["weighting"]),
                                        ("amrefs", self.am_refs)]


class FM(_AMFMBase):
    name = "fm"
    description = "AM-FM fluency: min/max ratio of n-gram LM probabilities (eq. 3)"

    def multi_stats(self, batch: Batch) -> np.ndarray:
        return self._fm(batch)[:, None]

    def option_fields(self):
        return [("order", self.described["order"]), ("fmrefs", self.fm_refs)]


class FMAbs(_AMFMBase):
    name = "fm_abs"
    description = "absolute fluency: eq.-2 probability of the response alone (no references)"
    needs_references = False

    def multi_stats(self, batch: Batch) -> np.ndarray:
        return np.power(10.0, self.model.lm_.mean_log10(batch.hyps))[:, None]

    def option_fields(self):
        return [("order", self.described["order"]), ("eos", True)]


class AMFM(_AMFMBase):
    name = "amfm"
    description = "AM-FM: lambda * AM + (1 - lambda) * FM (eq. 4)"

    def multi_stats(self, batch: Batch) -> np.ndarray:
        lam = self.amfm_lambda
        return (lam * self._am(batch) + (1.0 - lam) * self._fm(batch))[:, None]

    def option_fields(self):
        return [("lambda", self.amfm_lambda), ("dims", self.am_dims),
                                        ("order", self.described["order"]), ("weight", self.described["weighting"]),
                                        ("amrefs", self.am_refs), ("fmrefs", self.fm_refs)]
