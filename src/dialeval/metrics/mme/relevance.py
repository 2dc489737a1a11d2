"""RM, relevance as next-utterance prediction: P(response follows context).

Positives: DailyDialog train (context, response) pairs, the response kept as is or with its
stop-words dropped (even odds). Negatives, after the paper: for each pair draw 10 random
responses from the pool, rank them by word-vector similarity to the true response and take
the median one (neither an easy random nor a near-paraphrase). The word vectors are the
frozen encoder's own WordPiece input embeddings, averaged over the response's pieces (the
project's default word vectors are the same table; no word2vec is trained).

Features: [u ; v ; u*v ; |u-v|] of the encoder features of context (last turn) and response.
"""

from __future__ import annotations

import random
import time
from typing import Literal, Sequence

import numpy as np

from .data import context_text, drop_stopwords, pairs_of, words
from .submetric import HeadSubMetric

CANDIDATES = 10


def pair_features(ctx, resp):
    """[u ; v ; u*v ; |u-v|] of numpy arrays, or of torch tensors while fine-tuning."""
    if isinstance(ctx, np.ndarray):
        return np.concatenate([ctx, resp, ctx * resp, np.abs(ctx - resp)], axis=1)
    import torch

    return torch.cat([ctx, resp, ctx * resp, (ctx - resp).abs()], dim=1)


def word_vector_means(encoder, texts: Sequence[str]) -> np.ndarray:
    """Unit-length mean of the encoder's input embeddings of each text's WordPiece ids."""
    table = encoder.input_embeddings()
    out = np.zeros((len(texts), table.shape[1]), dtype=np.float32)
    for i, ids in enumerate(encoder.token_ids(texts)):
        if ids:
            out[i] = table[ids].mean(0)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return out / np.maximum(norms, 1e-9)


def median_negatives(responses: Sequence[str], vectors: np.ndarray, rng: random.Random,
                     k: int = CANDIDATES) -> list[int]:
    """For each response i, of k random other responses the one of median cosine to i."""
    n = len(responses)
    chosen = []
    for i in range(n):
        cands = []
        while len(cands) < min(k, n - 1):
            j = rng.randrange(n)
            if j != i and responses[j] != responses[i] and j not in cands:
                cands.append(j)
            if n <= k + 1 and len(cands) >= n - 1:
                break
        sims = vectors[cands] @ vectors[i]
        ranked = [c for _, c in sorted(zip(sims.tolist(), cands))]
        chosen.append(ranked[(len(ranked) - 1) // 2] if ranked else (i + 1) % n)
    return chosen


class RelevanceModel(HeadSubMetric):
    kind = "mme-rm"

    def __init__(self, max_examples: int = 3000, hidden: int = 256, epochs: int = 30, seed: int = 0,
                 encoder: str | None = None, context_turns: int = 1,
                 encoder_mode: Literal["frozen", "finetune"] = "frozen", finetune_layers: int = 2,
                 finetune_epochs: int = 3, finetune_lr: float = 3e-5):
        super().__init__(max_examples=max_examples, hidden=hidden, epochs=epochs, seed=seed, encoder=encoder,
                         encoder_mode=encoder_mode, finetune_layers=finetune_layers,
                         finetune_epochs=finetune_epochs, finetune_lr=finetune_lr)
        self.context_turns = context_turns

    def fit(self, dialogues: Sequence[list[str]], deadline: float | None = None, say=None) -> "RelevanceModel":
        started = time.monotonic()
        rng = random.Random(self.seed)
        pairs = pairs_of(dialogues, self.context_turns)
        rng.shuffle(pairs)
        pairs = pairs[: max(1, self.max_examples // 2)]
        contexts = [context_text(p.context, self.context_turns) for p in pairs]
        responses = [p.response for p in pairs]
        enc = self._frozen_encoder()
        negatives = median_negatives(responses, word_vector_means(enc, responses), rng)
        ctx_texts, resp_texts, labels = [], [], []
        for i, (c, r) in enumerate(zip(contexts, responses)):
            if rng.random() < 0.5:
                r = " ".join(drop_stopwords(words(r), rng))
            ctx_texts += [c, c]
            resp_texts += [r, responses[negatives[i]]]
            labels += [1.0, 0.0]
        return self._fit_columns([ctx_texts, resp_texts], np.array(labels, dtype=np.float32), pair_features,
                                 started, {"pairs": len(pairs),
                                           "negative": f"median of {CANDIDATES} by word-vector cosine"},
                                 deadline, say)

    def raw(self, contexts: Sequence[Sequence[str]], responses: Sequence[str]) -> np.ndarray:
        enc = self._encoder()
        ctx = [context_text(c, self.context_turns) for c in contexts]
        return self.raw_from_features(pair_features(enc.features(ctx), enc.features(list(responses))))
