"""RM, relevance as next-utterance prediction: P(response follows context).

Positives: DailyDialog train (context, response) pairs, the response kept as is or with its
stop-words dropped (even odds). Negatives, after the paper: for each pair draw 10 random
responses from the pool, rank them by word-vector similarity to the true response and take
the median one (neither an easy random nor a near-paraphrase). The word vectors are the
frozen encoder's own WordPiece input embeddings, averaged over the response's pieces (the
project's default word vectors are the same table; no word2vec is trained).

Hard negatives (`hard_negatives`, off by default, on in the shipped default): for a share
`hard_share` of the pairs, one more negative of a probe family (`dialeval.data.variants`:
the last context turn parroted, a word loop, a bland reply drawn from the corpus's own frequent
short replies, never the probes' list), one family per pair in turn. The median random negative
above already stands for `other_item`. Which families stay out of training is the probes'
test of whether the head learned relevance or the families' look.

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
    """RM: P(response follows context), a head over [u ; v ; u*v ; |u-v|].

    Options:
        hard_negatives: comma-separated probe families made as extra negatives (parrot, loop,
            generic, ...; empty: none, the paper's recipe)
        hard_share: the share of training pairs that get one hard negative
    """

    kind = "mme-rm"

    def __init__(self, max_examples: int = 3000, hidden: int = 256, epochs: int = 30, seed: int = 0,
                 encoder: str | None = None, context_turns: int = 1,
                 encoder_mode: Literal["frozen", "finetune"] = "frozen", finetune_layers: int = 2,
                 finetune_epochs: int = 3, finetune_lr: float = 3e-5, hard_negatives: str = "",
                 hard_share: float = 0.2):
        super().__init__(max_examples=max_examples, hidden=hidden, epochs=epochs, seed=seed, encoder=encoder,
                         encoder_mode=encoder_mode, finetune_layers=finetune_layers,
                         finetune_epochs=finetune_epochs, finetune_lr=finetune_lr)
        self.context_turns = context_turns
        self.hard_negatives = hard_negatives
        self.hard_share = hard_share

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
        info = {"pairs": len(pairs), "negative": f"median of {CANDIDATES} by word-vector cosine"}
        if self.hard_negatives:
            made = self._hard_negatives(pairs, dialogues)
            for i, text in made:
                ctx_texts.append(contexts[i])
                resp_texts.append(text)
                labels.append(0.0)
            info["hard_negatives"] = {f: sum(1 for i, _ in made if self._family_of(i) == f)
                                      for f in self._families()}
        return self._fit_columns([ctx_texts, resp_texts], np.array(labels, dtype=np.float32), pair_features,
                                 started, info, deadline, say)

    def _families(self) -> list[str]:
        from ...data.variants import TRAINABLE, check_families

        families = check_families(self.hard_negatives)
        from ...errors import DialevalError

        for f in families:
            if f not in TRAINABLE:
                raise DialevalError(f"hard_negatives: {f!r} cannot be made per pair "
                                    f"(the median random negative stands for other_item); valid: {', '.join(TRAINABLE)}")
        return families

    def _family_of(self, i: int) -> str:
        families = self._families()
        return families[i % len(families)]

    def _hard_negatives(self, pairs, dialogues) -> list[tuple[int, str]]:
        """(pair index, negative text) for a seeded `hard_share` of the pairs; a separate random
        stream, so the paper's negatives are the same with or without these."""
        from ...data.variants import bland_replies, training_variant

        families = self._families()
        bland = bland_replies([u for d in dialogues for u in d]) if "generic" in families else ()
        rng = random.Random(f"{self.seed}:hard-negatives")
        out = []
        for i, p in enumerate(pairs):
            if rng.random() >= self.hard_share:
                continue
            text = training_variant(self._family_of(i), p.context, p.response, self.seed, i, bland)
            if text is not None:
                out.append((i, text))
        return out

    def raw(self, contexts: Sequence[Sequence[str]], responses: Sequence[str]) -> np.ndarray:
        enc = self._encoder()
        ctx = [context_text(c, self.context_turns) for c in contexts]
        return self.raw_from_features(pair_features(enc.features(ctx), enc.features(list(responses))))
