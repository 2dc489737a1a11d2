"""Texts through a backbone: pooled vectors (remembered per text) and per-token states.

Both batch texts of one token length and fill only batches under MIN_POSITIONS positions
(batching.py `pass_rows`), so a text's numbers depend on the text alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..cache import memo
from ..errors import DialevalError
from . import batching
from .batching import length_batches
from .layers import states_reader
from .pooling import POOLINGS, normalize as l2_normalize, pool


class TextEncoder:
    """Vectors of texts under one setting, each distinct text run once.

    pooling "model" runs a sentence-transformers folder's own pipeline (`SentenceTransformer.
    encode`, truncation at its max_seq_length; `normalize` True adds an L2 normalisation on top,
    None/False keeps the pipeline's output: all-MiniLM-L6-v2's pipeline ends with its own Normalize
    module); the other poolings run the transformers model and pool its last layer (`normalize`
    True: L2-normalised). `blank`: what an empty or blank text is read as (None: as it is).
    """

    def __init__(self, backbone, pooling: str = "model", normalize: bool | None = None, batch_size: int = 16,
                 max_length: int | None = None, blank: str | None = None):
        if pooling not in POOLINGS:
            raise DialevalError(f"pooling {pooling!r}: choose from {', '.join(POOLINGS)}")
        if pooling == "model" and backbone.sentence_model is None:
            pooling = "mean"             # a plain folder has no pipeline of its own: mean pooling
        self.backbone, self.pooling, self.normalize = backbone, pooling, normalize
        self.batch_size = max(1, int(batch_size))
        self.max_length = int(max_length or backbone.max_length)
        self.blank = blank
        self.cache = memo(name="text vectors")
        self.encoded = 0   # texts actually run through the model (the rest came from the cache)

    def clear(self) -> None:
        self.cache.clear()

    @property
    def dim(self) -> int:
        return self.backbone.hidden_size * (2 if self.pooling == "mean+max" else 1)

    def inputs(self, texts: Sequence[str]) -> list[str]:
        if self.blank is None:
            return list(texts)
        return [t if t.strip() else self.blank for t in texts]

    def lengths(self, inputs: Sequence[str]) -> list[int]:
        ids = self.backbone.tokenizer(list(inputs), truncation=True, max_length=self.max_length)["input_ids"]
        return [len(x) for x in ids]

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        known = {t: self.cache.get(t) for t in dict.fromkeys(texts)}
        missing = [t for t, v in known.items() if v is None]
        if missing:
            inputs = self.inputs(missing)
            lengths = self.lengths(inputs)
            for rows in length_batches(lengths, self.batch_size):
                full = batching.pass_rows(rows, lengths[rows[0]], self.batch_size, self.backbone.device)
                vectors = self._run([inputs[i] for i in full])
                for r, i in enumerate(rows):
                    known[missing[i]] = self.cache.put(missing[i], vectors[r])
            self.encoded += len(missing)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([known[t] for t in texts])

    def _run(self, batch: list[str]) -> np.ndarray:
        """One batch (all texts of one token length, no padding) -> float32 vectors."""
        bb = self.backbone
        if self.pooling == "model":
            vectors = bb.sentence_model.encode(batch, batch_size=len(batch), convert_to_numpy=True,
                                               show_progress_bar=False, normalize_embeddings=bool(self.normalize))
            return np.asarray(vectors, dtype=np.float32)
        import torch

        enc = bb.tokenizer(batch, padding=True, truncation=True, max_length=self.max_length, return_tensors="pt")
        enc = {k: v.to(bb.device) for k, v in enc.items()}
        with torch.inference_mode():
            hidden = bb.model(**enc).last_hidden_state.float()   # bf16 backbone: pooled in float32
            vectors = pool(hidden, enc["attention_mask"], self.pooling)
            if self.normalize:
                vectors = l2_normalize(vectors)
        return vectors.cpu().numpy().astype(np.float32)


@dataclass
class TokenStates:
    """One text's tokens as the backbone read them: `states` (tokens x dim float32, of the chosen
    layer), `input_ids`, `offsets` (character spans in the text; (0, 0) for special tokens) and
    `special` (True where the tokenizer added the token: [CLS], [SEP], BOS, ...)."""

    states: np.ndarray
    input_ids: list[int]
    offsets: list[tuple[int, int]]
    special: np.ndarray


def token_states(backbone, texts: Sequence[str], layer: int = -1, batch_size: int = 16,
                 max_length: int | None = None, whole: bool = False) -> list[TokenStates]:
    return token_states_at(backbone, texts, [layer], batch_size, max_length, whole)[layer]


def token_states_at(backbone, texts: Sequence[str], layers: Sequence[int], batch_size: int = 16,
                    max_length: int | None = None, whole: bool = False) -> dict[int, list[TokenStates]]:
    """`token_states` of several layers from one forward pass: {layer: per text TokenStates}.
    Only the layers up to the deepest one asked for run (layer 0 alone: the embeddings); `whole`
    runs the full encoder, the reference the cut equals bit for bit (tests/test_bertscore_layers.py,
    benchmarks/bench_bertscore_layers.py)."""
    import torch

    tokenizer = backbone.tokenizer
    if not getattr(tokenizer, "is_fast", False):
        raise DialevalError(f"{backbone.path}: token offsets need a fast tokenizer (tokenizer.json)")
    limit = int(max_length or backbone.max_length)
    texts = list(texts)
    lengths = [len(x) for x in tokenizer(texts, truncation=True, max_length=limit)["input_ids"]]
    out: dict[int, list] = {layer: [None] * len(texts) for layer in layers}
    size = max(1, int(batch_size))
    depth = int(getattr(backbone.model.config, "num_hidden_layers", 0) or 0)
    for layer in layers:
        if depth and not -(depth + 1) <= layer <= depth:
            raise DialevalError(f"{backbone.path}: layer {layer} out of range (the model has "
                                f"{depth} layers; 0 = embeddings)")
    # hidden-state index of each layer asked for; only the layers up to the deepest one are run
    # (a model that does not state its depth runs whole and is checked against what it returns)
    index = {layer: layer % (depth + 1) if depth else layer for layer in layers}
    run = states_reader(backbone.model, max(index.values()) if depth else None, whole)
    for rows in length_batches(lengths, size):
        batch = [texts[i] for i in batching.pass_rows(rows, lengths[rows[0]], size, backbone.device)]
        enc = tokenizer(batch, padding=True, truncation=True, max_length=limit, return_tensors="pt",
                        return_offsets_mapping=True, return_special_tokens_mask=True)
        offsets = enc.pop("offset_mapping")
        special = enc.pop("special_tokens_mask")
        enc = {k: v.to(backbone.device) for k, v in enc.items()}
        with torch.inference_mode():
            hidden = run(enc)
            for layer in layers if not depth else ():
                if not -len(hidden) <= layer < len(hidden):
                    raise DialevalError(f"{backbone.path}: layer {layer} out of range (the model has "
                                        f"{len(hidden) - 1} layers; 0 = embeddings)")
            states = {layer: hidden[index[layer]].float().cpu().numpy() for layer in layers}
        ids = enc["input_ids"].tolist()
        spans = [[tuple(int(v) for v in o) for o in offsets[r].tolist()] for r in range(len(rows))]
        for layer in layers:
            for r, i in enumerate(rows):
                out[layer][i] = TokenStates(states[layer][r].astype(np.float32), ids[r], spans[r],
                                            special[r].numpy().astype(bool))
    return out  # type: ignore[return-value]
