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

`encoder_mode="cross"` (RM only) replaces the head over two pooled encodings with a cross-encoder:
context and response read together by a MiniLM whose six layers are all tuned on the same rows
(`cross.py`, where the reasons are). The rows are made as above, from up to three context turns.
"""

from __future__ import annotations

import random
import time
from typing import Any, Literal, Mapping, Sequence

import numpy as np

from ...backbones.tuning import by_layer as _by_layer
from ...backbones.tuning import tensors_id as _tensors_id
from .data import context_text, drop_stopwords, pair_places, pairs_of, words
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
        dialogue_share: the share of training pairs that get one more negative from their own
            dialogue: an utterance neither in the context read nor the one right after the
            response (0: none, as every folder before 2026-11-28)
        written_share: the share of the pairs whose corpus gives replies people wrote to be wrong
            (DailyDialog++'s adversarial negatives) that get one of them as a negative (0: none)
    """

    kind = "mme-rm"
    schema = 3
    since = {"dialogue_share": 2, "written_share": 3}

    def __init__(self, max_examples: int = 3000, hidden: int = 256, epochs: int = 30, seed: int = 0,
                 encoder: str | None = None, context_turns: int = 1,
                 encoder_mode: Literal["frozen", "finetune", "cross"] = "frozen", finetune_layers: int = 2,
                 finetune_epochs: int = 3, finetune_lr: float = 3e-5, hard_negatives: str = "",
                 hard_share: float = 0.2, dialogue_share: float = 0.0, written_share: float = 0.0):
        super().__init__(max_examples=max_examples, hidden=hidden, epochs=epochs, seed=seed, encoder=encoder,
                         encoder_mode=encoder_mode, finetune_layers=finetune_layers,
                         finetune_epochs=finetune_epochs, finetune_lr=finetune_lr)
        self.context_turns = context_turns
        self.hard_negatives = hard_negatives
        self.hard_share = hard_share
        self.dialogue_share = dialogue_share
        self.written_share = written_share

    def _turns(self) -> int:
        from .cross import CONTEXT_TURNS

        return CONTEXT_TURNS if self.encoder_mode == "cross" else self.context_turns

    def _check_mode(self) -> None:
        if self.encoder_mode != "cross":
            super()._check_mode()

    def fit(self, dialogues: Sequence[list[str]], deadline: float | None = None, say=None,
            start: "RelevanceModel | None" = None, checkpoint=None,
            written: Mapping[tuple[str, ...], Sequence[str]] | None = None, device: str = "cpu") -> "RelevanceModel":
        """`start`: a trained cross-encoder RM whose layers and head the training continues from
        (`check_start` says which can be); the rows are this fit's own."""
        started = time.monotonic()
        self._train_device = device
        self._check_mode()
        if start is not None:
            self.check_start(start)
        rng = random.Random(self.seed)
        turns = self._turns()
        # shuffled with their places, the permutation being the one `rng.shuffle(pairs)` drew
        placed = list(zip(pairs_of(dialogues, turns), pair_places(dialogues)))
        rng.shuffle(placed)
        placed = placed[: max(1, self.max_examples // 2)]
        pairs = [p for p, _ in placed]
        contexts = [context_text(p.context, turns) for p in pairs]
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

        def add_negatives(made: list[tuple[int, str]]) -> None:     # (pair index, text) rows, label 0
            for i, text in made:
                ctx_texts.append(contexts[i])
                resp_texts.append(text)
                labels.append(0.0)

        if self.hard_negatives:
            made = self._hard_negatives(pairs, dialogues)
            add_negatives(made)
            info["hard_negatives"] = {f: sum(1 for i, _ in made if self._family_of(i) == f)
                                      for f in self._families()}
        if self.dialogue_share:
            made = self._dialogue_negatives([w for _, w in placed], dialogues, turns)
            add_negatives(made)
            info["dialogue_negatives"] = len(made)
        if self.written_share and written:
            made = self._written_negatives([w for _, w in placed], dialogues, written)
            add_negatives(made)
            info["written_negatives"] = len(made)
        if self.encoder_mode == "cross":
            return self._fit_cross(ctx_texts, resp_texts, np.array(labels, dtype=np.float32), started, info,
                                   deadline, say, start, checkpoint)
        return self._fit_columns([ctx_texts, resp_texts], np.array(labels, dtype=np.float32), pair_features,
                                 started, info, deadline, say, checkpoint)

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

    def _dialogue_negatives(self, places, dialogues, turns: int) -> list[tuple[int, str]]:
        """(pair index, negative text) for a seeded `dialogue_share` of the pairs: another
        utterance of the pair's own dialogue, on the topic but not an answer to the context.
        The context turns read and the utterance right after the response (often a fair reply
        to the same context) are never drawn; a separate random stream, as the hard negatives'."""
        rng = random.Random(f"{self.seed}:dialogue-negatives")
        out = []
        for i, (k, at) in enumerate(places):
            if rng.random() >= self.dialogue_share:
                continue
            turns_of = dialogues[k]
            own = turns_of[at].strip().lower()
            choices = [j for j in range(len(turns_of)) if (j < at - turns or j > at + 1)
                       and turns_of[j].strip() and turns_of[j].strip().lower() != own]
            if choices:
                out.append((i, turns_of[rng.choice(choices)]))
        return out

    def _written_negatives(self, places, dialogues, written) -> list[tuple[int, str]]:
        """(pair index, negative text) for a seeded `written_share` of the pairs whose dialogue
        comes with replies people wrote to be wrong for its last turn (DailyDialog++'s adversarial
        negatives: close to the context in words, no answer to it), one drawn for the pair that
        ends the dialogue; a separate random stream, as the other negatives'."""
        rng = random.Random(f"{self.seed}:written-negatives")
        out = []
        for i, (k, at) in enumerate(places):
            turns_of = dialogues[k]
            if at != len(turns_of) - 1:
                continue
            replies = written.get(tuple(turns_of))
            if replies and rng.random() < self.written_share:
                out.append((i, rng.choice(list(replies))))
        return out

    def raw(self, contexts: Sequence[Sequence[str]], responses: Sequence[str], device: str = "cpu",
            precision: str = "fp32") -> np.ndarray:
        if self.encoder_mode == "cross":
            from .encoder import backbone
            from .heads import sigmoid

            self.check_fitted()
            scorer = self._cross_scorer(backbone(self.encoder, device, precision))
            ctx = [context_text(c, self._turns()) for c in contexts]
            return sigmoid(scorer.logits(ctx, list(responses)))
        enc = self._encoder(device, precision)
        ctx = [context_text(c, self.context_turns) for c in contexts]
        return self.raw_from_features(pair_features(enc.features(ctx), enc.features(list(responses))))

    # -- the cross-encoder variant (cross.py) ------------------------------------------------
    def _fit_cross(self, ctx_texts, resp_texts, y, started, info, deadline, say, start=None,
                   checkpoint=None) -> "RelevanceModel":
        from .cross import CrossScorer, fit_cross
        from .encoder import backbone
        from .heads import sigmoid
        from .normalise import fit_range

        base = backbone(self.encoder, self._train_device)      # the trainer's --device, fp32
        init, first_epoch = None, 0
        if start is not None:
            init, first_epoch = (start.cross_layers_, start.head_), start.epochs_done()
            info["continued_from"] = {"weights_id": start.weights_id_, "epochs_before": first_epoch}
        tensors, head, record = fit_cross(base, ctx_texts, resp_texts, y, seed=self.seed, lr=self.finetune_lr,
                                          epochs=self.finetune_epochs, deadline=deadline, say=say, init=init,
                                          first_epoch=first_epoch, checkpoint=checkpoint)
        valid = record.pop("valid")
        self.cross_layers_ = tensors
        self.head_ = head
        self.weights_id_ = _tensors_id(tensors)
        self._scorer = CrossScorer(base, _by_layer(tensors), head, weights_id=self.weights_id_)
        held = sigmoid(self._scorer.logits([ctx_texts[i] for i in valid], [resp_texts[i] for i in valid]))
        self.norm_low_, self.norm_high_ = fit_range(held)
        self.info_ = {**info, **record, "encoder_mode": "cross", "examples": int(len(y)), "positives": float(np.sum(y)),
                      "valid_accuracy": round(float(((held >= 0.5) == (y[valid] >= 0.5)).mean()), 4),
                      "encoder": f"{self._frozen_encoder().fingerprint().split('+')[0]}+cross@{self.weights_id_}",
                      "norm_from": "held-out training rows", "train_seconds": round(time.monotonic() - started, 1)}
        return self

    def check_start(self, start: "RelevanceModel", what: str = "the starting RM") -> None:
        """Refuse, with one line, a start this fit cannot continue: not a cross-encoder, or one
        read through another encoder (its layers would not fit)."""
        from ...errors import DialevalError

        if self.encoder_mode != "cross":
            raise DialevalError(f"{what}: continuing a training needs --rm-encoder-mode cross")
        if getattr(start, "encoder_mode", None) != "cross":
            raise DialevalError(f"{what}: its rm is a {start.encoder_mode} head, not a cross-encoder")
        if (start.encoder or None) != (self.encoder or None):
            raise DialevalError(f"{what}: its rm was trained over encoder {start.encoder or 'all-MiniLM-L6-v2'}, "
                                f"this training's is {self.encoder or 'all-MiniLM-L6-v2'}")

    def epochs_done(self) -> int:
        """Epochs this cross-encoder has trained, over every training it continued."""
        info = getattr(self, "info_", {}) or {}
        before = (info.get("continued_from") or {}).get("epochs_before", 0)
        return int(before) + int(info.get("epochs_planned", self.finetune_epochs))

    def _cross_scorer(self, bb):
        """The scorer over backbone `bb` (the MiniLM of the scoring metric's device and
        precision): the one training made when it is that backbone's, else one built from the
        stored layers straight onto `bb` (a bf16 run never holds an fp32 copy of the layers),
        kept beside `bb`."""
        from ...backbones.tuning import on_backbone
        from .cross import CrossScorer

        scorer = getattr(self, "_scorer", None)
        if scorer is not None:
            return on_backbone(scorer, bb)
        return bb.attach(("tuned", "CrossScorer", self.weights_id_),
                         lambda: CrossScorer(bb, _by_layer(self.cross_layers_), self.head_, weights_id=self.weights_id_))

    def signature_options(self) -> list[tuple[str, Any]]:
        if self.encoder_mode == "cross":
            return [("encoder_mode", "cross")]
        return super().signature_options()

    def _state(self):
        if self.encoder_mode != "cross":
            return super()._state()
        values = {"norm_low_": self.norm_low_, "norm_high_": self.norm_high_, "info_": self.info_,
                  "weights_id_": self.weights_id_}
        return values, {f"head_{k}": np.asarray(v) for k, v in self.head_.items()}

    def _write_files(self, staging_dir: str) -> None:
        if self.encoder_mode != "cross":
            return super()._write_files(staging_dir)
        import os

        import torch

        from .finetune import WEIGHTS_FILE, save_layers

        save_layers({k: v.to(torch.float16) for k, v in self.cross_layers_.items()},
                    os.path.join(staging_dir, WEIGHTS_FILE))

    def _set_state(self, values, arrays, directory: str) -> None:
        if self.encoder_mode != "cross":
            return super()._set_state(values, arrays, directory)
        import os

        import torch

        from ...errors import DialevalError
        from .encoder import backbone
        from .finetune import WEIGHTS_FILE
        from ...backbones.layers import encoder_layers
        from ...backbones.tuning import load_layers

        if "head_w" not in arrays or "head_b" not in arrays or "weights_id_" not in values:
            raise DialevalError(f"{directory}: a cross-encoder {self.kind} without its head or weights record")
        self.head_ = {"w": arrays["head_w"], "b": arrays["head_b"]}
        self.norm_low_ = float(values["norm_low_"])
        self.norm_high_ = float(values["norm_high_"])
        self.info_ = dict(values.get("info_") or {})
        self.weights_id_ = str(values["weights_id_"])
        # for its layer shapes (the cross-encoder scores on the cpu in fp32 only: mme_rm_cross)
        base = backbone(self.encoder).model
        layers = load_layers(os.path.join(directory, WEIGHTS_FILE), range(len(encoder_layers(base))), base,
                             what=f"a cross-encoder {self.kind}")
        self.cross_layers_ = {f"encoder.layer.{i}.{k}": v.to(torch.float32) for i, d in layers.items()
                              for k, v in d.items()}
        if _tensors_id(self.cross_layers_) != self.weights_id_:
            raise DialevalError(f"{directory}/{WEIGHTS_FILE}: its tensors differ from the ones recorded at training")
        self._scorer = None
