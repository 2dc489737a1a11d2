"""The registered `mme_*` metrics: each reads one sub-metric of the folder given by `mme_model`
and gives its USL-H-normalised score in [0, 1], a real reply strictly above the 0 of a blank one
(`metrics.softfloor`; `mme_norm=none` gives the raw value instead:
the classifier probability, or the specificity surprisal). None needs references; RM and TCM
read the sample's context. Work is shared through the batch memo, so `mme_sm_nll,mme_sm_nce,
mme_sm_ppl` mask each token once, and the encoder's cache means each distinct text is encoded
once for FM, RM and EM together.

`mme_device` and `mme_precision` are those of the transformers: the pretrained MiniLM encoder
under FM, RM and EM (passed down to the sub-model's `raw`) and SM's small masked LM (its log-softmax stays fp32).
The heads (numpy, float64) and TCM (stored word vectors and a small graph network, no MiniLM pass
when scoring; 375 samples/s already) keep fp32 whatever `mme_precision` says: mme_tcm gives its fp32
values bit for bit and signs no dtype. The device moves MiniLM, SM's masked LM and TCM's network
(the heads are numpy, on the cpu); every sub-metric names a device other than cpu.
"""

from __future__ import annotations

import os
from typing import Any, ClassVar, Literal

import numpy as np

from ...errors import DialevalError
from ..base import Batch
from ..model_metric import ModelMetric, Runtime


class _MMEBase(ModelMetric):
    """A sub-metric of a trained MME folder.

    Options:
        mme_model: trained MME folder (`dialeval train mme`)
        mme_norm: usl (clip to the training scores' 25th-75th percentiles, min-max to [0,1], the
            bottom [0, 0.05) squashed into [0.025, 0.05) above a blank response's 0; the default)
            or none (raw)
        mme_precision: weight dtype of the MiniLM encoder (FM, RM, EM) and of SM's masked LM, fp32
            (default) or bf16 (faster on CPUs with AVX512-BF16; the heads and TCM stay fp32:
            docs/speed.md; named in the signature)
        mme_device: torch device of MiniLM, SM's masked LM and TCM's network (default cpu;
            another is named in the signature)
    """

    needs_references = False
    english_only = True
    # a reply in another script than its context scores the floor (metrics/base.py)
    floors_other_script = True
    sub: ClassVar[str] = ""
    # relevance and topic coherence score (context, response); the others the response alone
    reads_context: ClassVar[bool] = False
    # whether --mme-precision applies (FM, RM, EM: MiniLM; SM: its masked LM; not TCM)
    takes_precision: ClassVar[bool] = True
    # the option naming the folder (mme_rm_cross reads its own folder, beside the frozen one)
    folder_option: ClassVar[str] = "mme_model"

    def __init__(self, mme_model: str | None = None, mme_norm: Literal["usl", "none"] = "usl",
                 refs_mode: str = "multi", tokenizer: str | None = None,
                 mme_precision: Literal["fp32", "bf16"] = "fp32", mme_device: str = "cpu"):
        self.runtime = Runtime.checked("mme", mme_device, mme_precision)
        super().__init__(refs_mode=refs_mode, tokenizer=None)
        if not mme_model:
            from ...models.artifacts import needs_model

            raise needs_model(self.name, self.folder_option, how="make one with `dialeval train mme`")
        if mme_norm not in ("usl", "none"):
            raise DialevalError(f"unknown --mme-norm {mme_norm!r}; choose from usl, none")
        self.mme_model = os.path.abspath(os.fspath(mme_model))
        self.mme_norm = mme_norm
        self._sub_model = None

    # the folder loads on first use (scoring), never while a run is planned: see `model_fields`
    def load_model(self):
        from .model import load_cached

        return load_cached(self.mme_model)

    @property
    def sub_model(self):
        if self._sub_model is None:
            self._sub_model = self.model.get(self.sub)
        return self._sub_model

    def describe(self) -> dict:
        """The folder's root record (mme.json), read without loading it; refuses a folder that
        is not an MME folder or lacks this sub-metric, as loading would."""
        from .model import _read_root, check_folder

        check_folder(self.mme_model)
        root = _read_root(self.mme_model)
        if self.sub not in (root.get("submetrics") or {}):
            raise DialevalError(f"{self.mme_model}: no {self.sub} sub-metric trained "
                                f"(train it with `dialeval train mme ... --only {self.sub}`)")
        return root

    def _root(self) -> dict:
        return self.model.root if self.model_loaded else self.described

    @property
    def needs_context(self) -> bool:
        return self.reads_context

    def floor(self) -> float:
        """0: the bottom of the normalised [0, 1], and of every raw score (probabilities,
        surprisals) but pseudo-perplexity, whose bottom is 1."""
        return 1.0 if self.mme_norm == "none" and getattr(self, "variant", "") == "ppl" else 0.0

    @property
    def precision_applied(self) -> str:
        """The precision this sub-metric's numbers are computed in (fp32 for TCM always)."""
        return self.precision if self.takes_precision else "fp32"

    def _raw(self, batch: Batch) -> np.ndarray:
        if self.reads_context:
            return self.sub_model.raw(batch.contexts, batch.hyps, device=self.device, precision=self.precision)
        return self.sub_model.raw(batch.hyps, device=self.device, precision=self.precision)

    def _normalised(self, raw: np.ndarray) -> np.ndarray:
        return self.sub_model.normalise(raw)

    def multi_stats(self, batch: Batch) -> np.ndarray:
        if len(batch) == 0:
            return np.zeros((0, 1))
        raw = batch.memo(("mme", self.model.tag, self.name, self.device, self.precision_applied),
                         lambda: self._raw(batch))
        return (raw if self.mme_norm == "none" else self._normalised(raw))[:, None]

    def sentence_from_stats(self, stats: np.ndarray) -> np.ndarray:
        return stats[:, 0]

    def model_fields(self) -> list[tuple[str, Any]]:
        from ...models.artifacts import model_field

        return [("model", model_field("mme", self.mme_model))]

    def option_fields(self) -> list[tuple[str, Any]]:
        if self._sub_model is None:     # from the folder's small files: nothing is loaded
            from .model import sub_signature

            self._root()
            enc, own = sub_signature(self.mme_model, self.sub)
        else:
            enc = (self.sub_model.info_ or {}).get("encoder")
            own = list(self.sub_model.signature_options()) if hasattr(self.sub_model, "signature_options") else []
        opts: list[tuple[str, Any]] = [("norm", self.mme_norm)]
        if self.mme_norm == "usl":      # its bottom goes through the shared squashing map
            from ..softfloor import SIGNATURE_FIELD

            opts.append(SIGNATURE_FIELD)
        if enc:
            opts.append(("encoder", enc))
        # the fine-tuned variant adds its mode and tuned weights; the frozen default adds nothing
        opts.extend(own)
        self._check_mode(dict(own).get("encoder_mode", "frozen"))
        return opts + self._own_options()

    def runtimes(self):
        """TCM computes in fp32 whatever --mme-precision says (its own network, no MiniLM pass)."""
        return {"model": Runtime(self.device, self.precision_applied)}

    def _own_options(self) -> list[tuple[str, Any]]:
        """What a sub-metric adds to the signature after the common fields (TCM, SM)."""
        return []

    def _check_mode(self, mode: str) -> None:
        """Refuse a folder whose sub-metric is not the kind this metric reads (mme_rm_cross)."""


class MMEFluency(_MMEBase):
    name = "mme_fm"
    description = "MME fluency: P(valid utterance) of the response alone"
    sub = "fm"


class MMERelevance(_MMEBase):
    name = "mme_rm"
    description = "MME relevance: P(response follows context), next-utterance prediction"
    sub = "rm"
    reads_context = True


class MMERelevanceCross(MMERelevance):
    """RM as a cross-encoder (docs/mme.md, "RM as a cross-encoder"): the `rm` of its own folder,
    trained with `--rm-encoder-mode cross`; a folder whose RM is another kind is refused.

    Options:
        mme_cross_model: MME folder whose rm is a cross-encoder (`dialeval train mme --only rm
            --rm-encoder-mode cross`)
        mme_norm: usl (clip to the training scores' 25th-75th percentiles, min-max to [0,1], the
            bottom [0, 0.05) squashed into [0.025, 0.05) above a blank response's 0; the default)
            or none (raw)
        mme_precision: fp32 only (a tuned MiniLM runs in fp32; bf16 is refused)
        mme_device: cpu only (another is refused)
    """

    name = "mme_rm_cross"
    description = "MME relevance read by a cross-encoder: P(response follows context)"
    folder_option = "mme_cross_model"

    def __init__(self, mme_cross_model: str | None = None, mme_norm: Literal["usl", "none"] = "usl",
                 refs_mode: str = "multi", tokenizer: str | None = None,
                 mme_precision: Literal["fp32", "bf16"] = "fp32", mme_device: str = "cpu"):
        super().__init__(mme_model=mme_cross_model, mme_norm=mme_norm, refs_mode=refs_mode, tokenizer=tokenizer,
                         mme_precision=mme_precision, mme_device=mme_device)
        self.mme_cross_model = self.mme_model

    def _check_mode(self, mode: str) -> None:
        if mode != "cross":
            raise DialevalError(f"--mme-cross-model {self.mme_model}: its rm is a {mode} head, not a cross-encoder "
                                "(train one with `dialeval train mme --only rm --rm-encoder-mode cross`)")


class MMETopicCoherence(_MMEBase):
    name = "mme_tcm"
    description = "MME topic coherence: graph attention over context/response keywords"
    sub = "tcm"
    reads_context = True
    takes_precision = False   # stored word vectors and a small graph network trained here: fp32 always

    def _raw(self, batch):
        return self.sub_model.raw(batch.contexts, batch.hyps, device=self.device)

    def _own_options(self):
        from .model import corpus_id
        from .topic import GRAPH_SIGNATURE

        # the graph is built from the training corpus: its recipe and that corpus's hash
        return [("graph", f"{GRAPH_SIGNATURE}@{corpus_id(self._root(), 'tcm')}")]


class MMEEngagement(_MMEBase):
    name = "mme_em"
    description = "MME engagement of the response alone"
    sub = "em"


class _MMESpecificity(_MMEBase):
    sub = "sm"
    variant: ClassVar[str] = ""

    def _raw(self, batch):
        all_raw = batch.memo(("mme-sm", self.model.tag, self.device, self.precision),
                             lambda: self.sub_model.raw_all(batch.hyps, device=self.device, precision=self.precision))
        return all_raw[self.variant]

    def _normalised(self, raw):
        return self.sub_model.normalise(self.variant, raw)

    def _own_options(self):
        from .model import corpus_id

        # the masked LM is trained on the training corpus: named by that corpus's hash
        return [("mlm", f"tiny-bert@{corpus_id(self._root(), 'sm')}"), ("variant", self.variant)]


class MMESpecificityNLL(_MMESpecificity):
    name = "mme_sm_nll"
    description = "MME specificity: summed masked-LM surprisal of the response's tokens"
    variant = "nll"


class MMESpecificityNCE(_MMESpecificity):
    name = "mme_sm_nce"
    description = "MME specificity: mean masked-LM surprisal (cross-entropy) per token"
    variant = "nce"


class MMESpecificityPPL(_MMESpecificity):
    name = "mme_sm_ppl"
    description = "MME specificity: masked-LM pseudo-perplexity"
    variant = "ppl"
