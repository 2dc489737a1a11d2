"""`lm_coherence`, `lm_fluency` and their raw variants as metrics.

Raw scores are mean log-probabilities per response token (eq. 1 and 3). The normalised ones
(eq. 2 and 4) map [bound, 0] onto [0, 1], the bound being the `lm_percentile`-th percentile of
the raw scores of a reference set stored with the model. The paper clips everything under the
bound to 0, which is also the floor a blank response scores; so, instead, the unit-scale value
goes through the shared squashing map (`metrics.softfloor`) unclipped: from 0.05 up it is the
paper's exactly, [0, 0.05) is squashed into [0.025, 0.05), and everything under the bound into
(0, 0.025), all in the order of the raw scores. A real reply under the bound therefore still
ranks against a degenerate one under it (a parrot, a loop) instead of tying with it, and only
a log-probability of -inf reaches the blank reply's 0. Coherence uses the
sample's last context turn as the query (the rated data's setting); a sample without context
gets NaN coherence. Raw scores are memoised on the batch, so the four metrics share one pass.
"""

from __future__ import annotations

import math
import os
from typing import Any, Literal

import numpy as np

from ...errors import DialevalError
from ..base import Batch
from ..model_metric import ModelMetric, Runtime
from ..softfloor import SIGNATURE_FIELD, lift
from .checkpoint import LoadedLM, cached_lm, lm_settings, peek
from .logprob import BATCH_SIZE, LMOptions, TOKEN_BUDGET

# the signature entry that tells scores ordered under the bound from the paper's clipped ones
FLOOR_FIELD = ("under", "ordered")

LM_OPTIONS = ("lm_model", "lm_percentile", "lm_batch_size", "lm_token_budget", "lm_precision", "lm_device",
              "lm_context_turns", "lm_layout")


def normalise(raw: np.ndarray, bound: float) -> np.ndarray:
    """Eq. 2 / 4 without the clip: (raw - bound) / -bound, which is 1 at raw = 0 and negative
    under the bound, through `softfloor.lift`, which keeps it in (0, 1] and in order (the
    bottom [0, 0.05) into [0.025, 0.05), everything under the bound into (0, 0.025))."""
    if not bound < 0:
        raise DialevalError(f"normalisation bound must be negative, got {bound}")
    return lift((np.asarray(raw, dtype=np.float64) - bound) / -bound)


class CausalLMMetric(ModelMetric):
    """A metric that scores with the causal LM of `model_dir` (`LMScore`, `deep_fm`). What
    planning needs (the layout, the fingerprint a signature names, the reference scores) comes
    from the folder's small files (`peek`, as `described`), so that building a metric or checking
    a run's signatures loads no weights; the model loads on first use (`model`, also `lm`)."""

    def _init_lm(self, metric: str, lm_model: str | os.PathLike | None, batch_size: int, token_budget: int,
                 precision: str, device: str, layout: str) -> None:
        """The causal-LM options, checked before any model is read."""
        runtime = Runtime.checked("lm", device, precision)     # before any model is read
        if not lm_model:
            from ...models.artifacts import needs_model

            raise needs_model(metric, "lm_model", "a language model", "train one with `dialeval train lm`")
        self.model_dir = os.fspath(lm_model)
        self.batch_size = int(batch_size)
        self.token_budget = int(token_budget)
        if self.batch_size < 1 or self.token_budget < 1:
            raise DialevalError(f"--lm-batch-size and --lm-token-budget must be at least 1, "
                                f"got {batch_size} and {token_budget}")
        self.layout_option, _ = lm_settings(layout, runtime.precision)
        self.runtime = runtime

    def load_model(self) -> LoadedLM:
        return cached_lm(self.model_dir, self.device, self.layout_option, self.precision)

    def describe(self) -> dict:
        return peek(self.model_dir)

    @property
    def lm(self) -> LoadedLM:
        return self.model

    def lm_layout(self) -> str:
        if self.model_loaded:
            return self.model.layout
        return self.layout_option or self.described.get("layout", "plain")

    def model_fields(self) -> list[tuple[str, Any]]:
        """`model:lm@<manifest hash>` for a model trained here, or the backbone rule `name:size`
        for one from elsewhere; an adapter adds `base:` with the weights it was merged into.
        Read from the folder's small files; where they cannot name it (several GGUF files),
        loading gives the refusal."""
        peeked = self.described
        if "tag" not in peeked:
            self.model                           # raises the loader's one-line refusal
        fields: list[tuple[str, Any]] = [("model", peeked["tag"])]
        if peeked.get("base"):
            fields.append(("base", peeked["base"]))
        return fields


class LMScore(CausalLMMetric, LMOptions):
    """Causal-LM coherence and fluency (holistic paper eq. 1-4).

    The causal-LM options are those of `logprob.LMOptions`; its own:

    Options:
        lm_percentile: percentile of the stored reference scores used as the lower bound (default 5)
        lm_context_turns: context turns that form the query for lm_coherence (default 1, the paper's)
    """

    needs_references = False
    native_tokenizer = "lm"
    english_only = True
    kind = "coherence"
    raw = False

    def __init__(self, lm_model: str | None = None, lm_percentile: float = 5.0, lm_batch_size: int = BATCH_SIZE,
                 lm_token_budget: int = TOKEN_BUDGET, lm_precision: Literal["fp32", "bf16"] = "fp32",
                 lm_device: str = "cpu", lm_context_turns: int = 1, lm_layout: str = "auto", refs_mode: str = "multi",
                 tokenizer: str | None = None):
        super().__init__(refs_mode=refs_mode, tokenizer=None)
        self._init_lm(self.name, lm_model, lm_batch_size, lm_token_budget, lm_precision, lm_device, lm_layout)
        if not 0 < float(lm_percentile) < 100:
            raise DialevalError(f"--lm-percentile must lie strictly between 0 and 100, got {lm_percentile}")
        self.percentile = float(lm_percentile)
        self.context_turns = max(1, int(lm_context_turns))
        self._bound: float | None = None

    # The model loads on first use (scoring); its signature and the bound come from the folder's
    # manifest and small files (`checkpoint.peek`), so planning a run loads nothing.

    @property
    def bound(self) -> float | None:
        if self.raw:
            return None
        if self._bound is None:
            reference = self.model.reference if self.model_loaded else self.described.get("reference", {})
            ref = reference.get(f"{self.kind}_raw")
            if ref is None or len(ref) == 0:
                raise DialevalError(f"{self.model_dir}: no reference scores for the normalised {self.name}; "
                                    f"use {self.name}_raw, or wrap the checkpoint with "
                                    "`dialeval train lm --init DIR --max-steps 0 --corpus REFERENCE -o NEW_DIR`")
            self._bound = float(np.percentile(ref, self.percentile))
        return self._bound

    @property
    def needs_context(self) -> bool:   # coherence reads the last context turn; fluency does not
        return self.kind == "coherence"

    def floor(self) -> float:
        """Normalised: 0, the bottom of [0, 1]. Raw (a mean log-probability, unbounded below):
        log(1 / V), the per-token log-likelihood of guessing uniformly over the V tokens of the
        vocabulary, the score of a model that knows nothing about the text."""
        if not self.raw:
            return 0.0
        return -math.log(len(self.lm.tokenizer))

    def raw_scores(self, batch: Batch) -> np.ndarray:
        from .logprob import mean_logprobs

        key = ("lm_raw", os.path.realpath(self.model_dir), self.device, self.kind, self.context_turns,
               self._layout(), self.precision)

        def compute() -> np.ndarray:
            if self.kind == "fluency":
                return mean_logprobs(self.lm, batch.hyps, batch_size=self.batch_size, token_budget=self.token_budget)
            has = [i for i, c in enumerate(batch.contexts) if c]
            out = np.full(len(batch), math.nan)
            if has:
                queries = [" ".join(batch.contexts[i][-self.context_turns:]) for i in has]
                out[has] = mean_logprobs(self.lm, [batch.hyps[i] for i in has], queries, self.batch_size,
                                         self.token_budget)
            return out

        return batch.memo(key, compute)

    def multi_stats(self, batch: Batch) -> np.ndarray:
        raw = self.raw_scores(batch)
        score = raw if self.raw else normalise(raw, self.bound)
        return score[:, None]

    def sentence_from_stats(self, stats: np.ndarray) -> np.ndarray:
        return stats[:, 0]

    def _layout(self) -> str:
        return self.lm_layout()

    def option_fields(self):
        opts = []
        if self.kind == "coherence":
            opts.append(("ctx", self.context_turns))
        if self._layout() != "plain":
            opts.append(("layout", self._layout()))
        if not self.raw:
            opts.append(("pct", self.percentile))
            opts.append(("bound", round(self.bound, 4)))
            opts.append(SIGNATURE_FIELD)
            opts.append(FLOOR_FIELD)
        return opts


class LMCoherence(LMScore):
    name = "lm_coherence"
    score_range = (0.0, 1.0)
    description = "context coherence c(r|q), eq. 2: normalised mean log P(response | query)"
    kind, raw = "coherence", False


class LMCoherenceRaw(LMScore):
    name = "lm_coherence_raw"
    score_range = (None, 0.0)
    description = "raw context coherence c_raw(r|q), eq. 1"
    kind, raw = "coherence", True


class LMFluency(LMScore):
    name = "lm_fluency"
    score_range = (0.0, 1.0)
    description = "fluency f(r), eq. 4: normalised mean log P(response)"
    kind, raw = "fluency", False


class LMFluencyRaw(LMScore):
    name = "lm_fluency_raw"
    score_range = (None, 0.0)
    description = "raw fluency f_raw(r), eq. 3"
    kind, raw = "fluency", True
