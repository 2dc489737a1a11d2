"""Training a small GPT-2-style LM from scratch, or fine-tuning a checkpoint, on dialogue pairs.

No pretrained GPT-2 can be downloaded here, so the default trains one: a byte-level BPE
tokenizer (`tokenizers`) and a GPT-2 model (`transformers`) on query-response pairs laid out
as the scorer reads them (`<sep> query <sep> response <sep>`, the paper's concatenation).
With `init` the same loop fine-tunes an existing checkpoint with its own tokenizer.

Training stops at whichever comes first: the epochs, `max_steps` or `max_minutes`. A small
held-out share of the pairs is never trained on; after training the raw coherence and fluency
scores of those pairs are stored with the model, so the normalised metrics (eq. 2 and 4) can
take their lower bound at any percentile later. A model without such pairs could not be
normalised, so training refuses to start without them.

`max_minutes` budgets the whole call, not only the loop: reading the corpus and the tokenizer
count, and once a few steps have measured the model's speed, the time the reference pairs'
scoring will take is reserved (their number is cut if scoring them all would take more than
a third of the budget). Everything long logs progress.
"""

from __future__ import annotations

import copy
import json
import math
import os
import random
import time
from dataclasses import asdict, dataclass
from typing import Callable, Sequence

import numpy as np

from ...data.corpus import specs_name
from ...errors import DialevalError
from ...models import store
from ...models.estimator import Estimator
from ...models.training import train_causal_lm
from .checkpoint import INFO_FILE, KIND, REFERENCE_FILE, LoadedLM, load_lm, offline

SEP = "<|endoftext|>"


@dataclass
class LMTrainConfig:
    """`LMTrainer`'s settings as one value (what `train_lm` and `dialeval_lm.json` take)."""

    vocab_size: int = 5000
    n_layer: int = 3
    n_embd: int = 160
    n_head: int = 4
    n_positions: int = 128
    epochs: float = 1.0
    max_steps: int | None = None
    max_minutes: float | None = None
    batch_size: int = 32
    lr: float | None = None          # default: 1e-3 from scratch, 5e-5 fine-tuning
    warmup_steps: int = 200
    weight_decay: float = 0.01
    dropout: float = 0.1
    reference_pairs: int = 2000     # held out, scored for the normalisation bounds
    seed: int = 0
    threads: int | None = None      # default: the idle cores (dialeval.models.threads)
    device: str = "cpu"


def build_tokenizer(texts: Sequence[str], vocab_size: int):
    """A byte-level BPE tokenizer trained on `texts`, wrapped so transformers can save/load it."""
    from tokenizers import ByteLevelBPETokenizer
    from transformers import PreTrainedTokenizerFast

    bpe = ByteLevelBPETokenizer(add_prefix_space=False)
    bpe.train_from_iterator((" " + " ".join(t.split()) for t in texts), vocab_size=vocab_size,
                            min_frequency=2, special_tokens=[SEP], show_progress=False)
    return PreTrainedTokenizerFast(tokenizer_object=bpe._tokenizer, bos_token=SEP, eos_token=SEP,
                                   unk_token=SEP, pad_token=SEP)


def _split_pairs(pairs: list[tuple[str, str]], n_ref: int, seed: int):
    order = list(range(len(pairs)))
    random.Random(seed).shuffle(order)
    n_ref = min(n_ref, len(pairs) // 10) if len(pairs) >= 20 else 0
    held = sorted(order[:n_ref])
    held_set = set(held)
    train = [pairs[i] for i in range(len(pairs)) if i not in held_set]
    return train, [pairs[i] for i in held]


MIN_REFERENCE_PAIRS = 200   # fewer, and a 10th-percentile bound rests on a handful of pairs
_REFERENCE_CHUNK = 100


def reference_scores(lm, ref_pairs, log=None, batch_size: int = 32,
                     deadline: float | None = None) -> tuple[dict, float, int]:
    """Raw coherence and fluency of the reference pairs (the normalisation bounds' data), their
    per-token perplexity, and how many pairs were scored.

    Three forward passes per pair (q+r, r alone, q alone; the first serves both coherence and
    perplexity), in chunks of pairs; with a `deadline`, scoring stops after the chunk that
    passes it, once at least MIN_REFERENCE_PAIRS pairs are scored."""
    from .logprob import token_logprob_sums

    q_ids = [lm.encode(q) for q, _ in ref_pairs]
    r_ids = [lm.encode(r) for _, r in ref_pairs]
    parts = []
    began = shown = time.time()
    done = 0
    for start in range(0, len(ref_pairs), _REFERENCE_CHUNK):
        q, r = q_ids[start:start + _REFERENCE_CHUNK], r_ids[start:start + _REFERENCE_CHUNK]
        none = [None] * len(q)
        parts.append((token_logprob_sums(lm, q, r, batch_size), token_logprob_sums(lm, none, r, batch_size),
                      token_logprob_sums(lm, none, q, batch_size)))
        done += len(q)
        now = time.time()
        if log is not None and (now - shown >= 10 or done == len(ref_pairs)):
            shown = now
            log(f"train lm: scoring reference pairs for the normalisation bounds: {done}/{len(ref_pairs)}, "
                f"{now - began:.0f} s")
        if deadline is not None and now >= deadline and done >= MIN_REFERENCE_PAIRS and done < len(ref_pairs):
            if log is not None:
                log(f"train lm: --max-minutes reached: normalisation bounds from {done} of "
                    f"{len(ref_pairs)} reference pairs")
            break

    def joined(k: int, j: int) -> np.ndarray:
        return np.concatenate([p[k][j] for p in parts]) if parts else np.zeros(0)
    s_qr, c_qr, s_r, c_r, s_q, c_q = (joined(k, j) for k in range(3) for j in range(2))
    with np.errstate(invalid="ignore", divide="ignore"):
        coherence = np.where(c_qr > 0, s_qr / np.maximum(c_qr, 1), math.nan)
        fluency = np.where(c_r > 0, s_r / np.maximum(c_r, 1), math.nan)
    count = int(c_q.sum() + c_qr.sum())
    ppl = math.exp(-float(s_q.sum() + s_qr.sum()) / count) if count else math.nan
    reference = {"coherence_raw": coherence[~np.isnan(coherence)], "fluency_raw": fluency[~np.isnan(fluency)]}
    return reference, ppl, done


def _batches(sequences: list[list[int]], batch_size: int, rng: random.Random) -> list[list[int]]:
    """Shuffled batches of similar-length sequences (sorted within chunks of 50 batches)."""
    order = list(range(len(sequences)))
    rng.shuffle(order)
    chunk = batch_size * 50
    batches = []
    for start in range(0, len(order), chunk):
        part = sorted(order[start:start + chunk], key=lambda i: len(sequences[i]))
        batches.extend(part[k:k + batch_size] for k in range(0, len(part), batch_size))
    rng.shuffle(batches)
    return batches


class LMTrainer(Estimator):
    """A small GPT-2-style causal LM trained on dialogue pairs (or a checkpoint fine-tuned), with
    the raw scores of held-out reference pairs that normalise lm_coherence and lm_fluency.

    The saved folder is a transformers checkpoint (its config.json is the model's) plus
    `dialeval_lm.json` (what was trained, with these settings under "config"), the reference
    scores and a manifest: the layout `--lm-model` reads.

    Options:
      vocab_size: BPE vocabulary size
      n_layer: transformer layers
      n_embd: hidden size
      n_head: attention heads
      n_positions: tokens per sequence
      epochs: passes over the training pairs
      max_steps: stop after this many optimiser steps
      max_minutes: stop after this many minutes of training (the whole call: reading, training
        and scoring the reference pairs)
      batch_size: sequences per optimiser step
      lr: peak learning rate (default 1e-3 from scratch, 5e-5 with --init)
      warmup_steps: linear warm-up steps (at most a tenth of the run)
      weight_decay: AdamW weight decay
      dropout: GPT-2 dropout (residual, embedding and attention)
      reference_pairs: held-out pairs scored for the normalisation bounds (at most a tenth of
        the corpus)
      seed: random seed
      threads: CPU threads (default: $OMP_NUM_THREADS, else the idle cores: cores minus the
        1-minute load average, at least 1)
      device: torch device
    """

    kind = KIND

    def __init__(self, vocab_size: int = 5000, n_layer: int = 3, n_embd: int = 160, n_head: int = 4,
                 n_positions: int = 128, epochs: float = 1.0, max_steps: int | None = None,
                 max_minutes: float | None = None, batch_size: int = 32, lr: float | None = None,
                 warmup_steps: int = 200, weight_decay: float = 0.01, dropout: float = 0.1,
                 reference_pairs: int = 2000, seed: int = 0, threads: int | None = None, device: str = "cpu"):
        self.vocab_size = vocab_size
        self.n_layer = n_layer
        self.n_embd = n_embd
        self.n_head = n_head
        self.n_positions = n_positions
        self.epochs = epochs
        self.max_steps = max_steps
        self.max_minutes = max_minutes
        self.batch_size = batch_size
        self.lr = lr
        self.warmup_steps = warmup_steps
        self.weight_decay = weight_decay
        self.dropout = dropout
        self.reference_pairs = reference_pairs
        self.seed = seed
        self.threads = threads
        self.device = device

    def fit(self, corpus: str, *, init: str | None = None, corpus_format: str | None = None,
            reference_corpus: str | None = None, log: Callable[[str], None] = print, checkpoint=None) -> "LMTrainer":
        """Train (or fine-tune `init`) on `corpus`'s query-response pairs; keeps `model_`,
        `tokenizer_`, `reference_` (raw scores of the held-out pairs) and `info_`."""
        started = time.time()
        plain_log = log
        log = lambda message: plain_log(f"[{time.time() - started:5.0f} s] {message}")  # noqa: E731
        offline()
        log("train lm: loading torch")
        import torch

        from ...data.corpus import pairs as corpus_pairs, read_corpus, read_specs

        from ...backbones.runtime import check_device

        cfg = LMTrainConfig(**{**self.get_params(), "device": check_device("device", self.device)})
        torch.manual_seed(cfg.seed)
        if cfg.device == "cpu":
            from ...models.threads import default_threads

            threads = cfg.threads if cfg.threads else default_threads()
            torch.set_num_threads(max(1, threads))
            log(f"train lm: {threads} CPU thread(s)" + ("" if cfg.threads else " (the idle cores; --threads N to choose)"))
        all_pairs = corpus_pairs(read_specs(corpus, corpus_format))
        if not all_pairs:
            raise DialevalError(f"{corpus}: no query-response pairs (every dialogue has one utterance)")
        if reference_corpus:
            train_pairs = all_pairs
            ref_pairs = corpus_pairs(read_corpus(reference_corpus))[: cfg.reference_pairs]
        else:
            train_pairs, ref_pairs = _split_pairs(all_pairs, cfg.reference_pairs, cfg.seed)
        if cfg.reference_pairs <= 0 or not ref_pairs:
            raise DialevalError(
                "no reference pairs for the normalisation bounds of lm_coherence/lm_fluency: "
                + (f"{reference_corpus} has no query-response pairs" if reference_corpus else
                   f"{corpus} has {len(all_pairs)} pairs and a tenth is held out only from 20 pairs on")
                + "; give a larger corpus or --reference-corpus FILE")
        log(f"train lm: read {len(all_pairs)} pairs in {time.time() - started:.1f} s")
        self.model_, self.tokenizer_, self.reference_, self.info_ = _train(
            cfg, train_pairs, ref_pairs, started, init, corpus, reference_corpus, log, checkpoint)
        return self

    # -- persistence: a transformers checkpoint folder ------------------------------------------
    def fitted_attributes(self) -> list[str]:
        return [n for n in ("model_", "tokenizer_", "reference_", "info_") if hasattr(self, n)]

    def save(self, directory) -> str:
        self.check_fitted()
        return store.save_artifact(directory, KIND, None, write=self._write_files)

    def _write_files(self, staging_dir: str) -> None:
        self.model_.save_pretrained(staging_dir, safe_serialization=True)
        self.tokenizer_.save_pretrained(staging_dir)
        with open(os.path.join(staging_dir, INFO_FILE), "w", encoding="utf-8") as handle:
            json.dump(self.info_, handle, indent=1)
        np.savez(os.path.join(staging_dir, REFERENCE_FILE), **self.reference_)

    @classmethod
    def load(cls, directory, device: str = "cpu") -> "LMTrainer":
        """A trained LM folder; its settings come from its training record (`dialeval_lm.json`).
        A checkpoint dialeval did not train has no record and cannot be refitted from here:
        retrain it with `dialeval train lm`."""
        lm = load_lm(directory, device)
        settings = (lm.info or {}).get("config")
        if not isinstance(settings, dict):
            raise DialevalError(f"{directory}: no dialeval training record ({INFO_FILE}); "
                                "retrain with `dialeval train lm`, or use it directly as --lm-model")
        known = set(cls._param_names())
        trainer = cls(**{k: v for k, v in settings.items() if k in known})
        trainer.model_, trainer.tokenizer_ = lm.model, lm.tokenizer
        trainer.reference_, trainer.info_ = dict(lm.reference), dict(lm.info)
        return trainer


def train_lm(corpus: str, out_dir: str, config: LMTrainConfig | None = None, *, init: str | None = None,
             corpus_format: str | None = None, reference_corpus: str | None = None,
             log: Callable[[str], None] = print) -> dict:
    """Train (or fine-tune `init`) and save a verified artifact folder; returns its info (the
    one-call form of `LMTrainer`)."""
    trainer = LMTrainer(**asdict(config or LMTrainConfig()))
    trainer.fit(corpus, init=init, corpus_format=corpus_format, reference_corpus=reference_corpus, log=log)
    trainer.save(out_dir)
    return trainer.info_


def _train(cfg, train_pairs, ref_pairs, started, init, corpus, reference_corpus, log, checkpoint=None) -> tuple:
    """The training proper: (model, tokenizer, reference scores, info)."""
    log("train lm: loading transformers")
    from transformers import GPT2Config, GPT2LMHeadModel

    if init:
        base = load_lm(init, cfg.device)
        # a private, trainable copy: the loaded model is the backbone cache's, frozen and shared
        model = copy.deepcopy(base.model) if base.shared else base.model
        model.requires_grad_(True)
        tokenizer = base.tokenizer
        lr = cfg.lr if cfg.lr is not None else 5e-5
        arch = {"init": os.path.abspath(init)}
    else:
        texts = [t for p in train_pairs for t in p]
        if cfg.max_minutes and time.time() - started > 0.3 * cfg.max_minutes * 60 and len(texts) > 20000:
            log(f"train lm: --max-minutes: {time.time() - started:.0f} s already spent (loading torch and "
                "transformers); the tokenizer learns from the first 20000 texts")
            texts = texts[:20000]
        log(f"train lm: training a {cfg.vocab_size}-token BPE tokenizer on {len(texts)} texts")
        tokenizer = build_tokenizer(texts, cfg.vocab_size)
        gconf = GPT2Config(vocab_size=len(tokenizer), n_positions=cfg.n_positions, n_embd=cfg.n_embd,
                           n_layer=cfg.n_layer, n_head=cfg.n_head, resid_pdrop=cfg.dropout,
                           embd_pdrop=cfg.dropout, attn_pdrop=cfg.dropout,
                           bos_token_id=tokenizer.eos_token_id, eos_token_id=tokenizer.eos_token_id)
        model = GPT2LMHeadModel(gconf).to(cfg.device)
        lr = cfg.lr if cfg.lr is not None else 1e-3
        arch = {"n_layer": cfg.n_layer, "n_embd": cfg.n_embd, "n_head": cfg.n_head,
                "n_positions": cfg.n_positions, "vocab_size": len(tokenizer)}
    lm = LoadedLM(path="(training)", model=model, tokenizer=tokenizer, sep_id=int(tokenizer.eos_token_id),
                  max_len=int(getattr(model.config, "n_positions", None) or model.config.max_position_embeddings),
                  device=cfg.device)
    sequences = []
    deadline = started + cfg.max_minutes * 60 if cfg.max_minutes else None
    for k, (q, r) in enumerate(train_pairs):
        if deadline is not None and k % 2000 == 0 and k and time.time() >= deadline - 0.25 * cfg.max_minutes * 60:
            # Encoding alone has eaten most of the budget: train on what is encoded.
            log(f"train lm: --max-minutes: encoded {k} of {len(train_pairs)} training pairs; training on those")
            train_pairs = train_pairs[:k]
            break
        ids = [lm.sep_id] + lm.encode(q) + [lm.sep_id] + lm.encode(r) + [lm.sep_id]
        sequences.append(ids[-lm.max_len:])
    # Tokens the reference scoring will run through (three forward passes: q+r, r, q).
    ref_cost = [2 * (len(lm.encode(q)) + len(lm.encode(r))) + 4 for q, r in ref_pairs]
    n_params = sum(p.numel() for p in model.parameters())
    log(f"train lm: {len(train_pairs)} pairs ({sum(map(len, sequences))} tokens), "
        f"{len(ref_pairs)} reference pairs held out, {n_params / 1e6:.2f}M parameters")

    steps_per_epoch = math.ceil(len(sequences) / cfg.batch_size)
    total = int(math.ceil(cfg.epochs * steps_per_epoch))
    if cfg.max_steps is not None:
        total = min(total, cfg.max_steps)
    warmup = min(cfg.warmup_steps, max(1, total // 10))

    def schedule(step: int) -> float:  # linear warm-up, cosine decay to 10%
        if step < warmup:
            return (step + 1) / warmup
        progress = (step - warmup) / max(1, total - warmup)
        return 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, progress)))

    rng = random.Random(cfg.seed)
    budget = cfg.max_minutes * 60 if cfg.max_minutes else None
    deadline = started + budget if budget else None
    reserve = 0.0          # seconds kept for scoring the reference pairs and saving

    from ...progress import Heartbeat

    beat = Heartbeat(log)

    def after_step(state) -> None:
        nonlocal ref_pairs, ref_cost, reserve
        step = state.steps
        if deadline is not None and step in (3, 20, 100) or (deadline is not None and step % 200 == 0):
            # A forward pass costs about a third of a training step per token; keep 40%
            # of that as a margin, plus a few seconds for saving.
            per_token = 0.4 * state.seconds / state.tokens
            if step == 3 and per_token * sum(ref_cost) > budget / 3:
                keep = max(min(100, len(ref_pairs)), int(len(ref_pairs) * budget / 3
                                                       / (per_token * sum(ref_cost))))
                if keep < len(ref_pairs):
                    log(f"train lm: scoring {len(ref_pairs)} reference pairs would take about "
                        f"{per_token * sum(ref_cost):.0f} s of the {budget:.0f} s budget; keeping {keep}")
                    ref_pairs, ref_cost = ref_pairs[:keep], ref_cost[:keep]
            reserve = per_token * sum(ref_cost) + 3.0
        line = (lambda: f"step {step}/{total} loss {np.mean(state.losses[-50:]):.3f} "
                        f"{state.seconds / step:.3f}s/step wall, {state.cpu_seconds / step:.3f} CPU-s/step, "
                        f"{state.seconds / 60:.1f} min")
        if step == total:
            log(line())
        else:
            beat(line)

    loop = train_causal_lm(
        model, model.parameters(), [(ids, 0) for ids in sequences], pad_id=lm.sep_id,
        passes=lambda: _batches(sequences, cfg.batch_size, rng), total_steps=total, lr=lr,
        weight_decay=cfg.weight_decay, schedule=schedule, device=cfg.device,
        out_of_time=None if deadline is None else lambda: time.time() + reserve >= deadline,
        after_step=after_step, checkpoint=checkpoint)
    step = loop.steps
    stopped_by = "max_minutes" if loop.out_of_time else "epochs"
    if cfg.max_steps is not None and step >= cfg.max_steps and step < int(math.ceil(cfg.epochs * steps_per_epoch)):
        stopped_by = "max_steps"
    train_seconds, cpu_seconds = loop.seconds, loop.cpu_seconds
    model.eval()

    reference, ref_ppl, scored = reference_scores(lm, ref_pairs, log,
                                                  deadline=deadline - 3.0 if deadline else None)
    ref_pairs = ref_pairs[:scored]
    if any(len(v) == 0 for v in reference.values()):
        raise DialevalError(f"the {len(ref_pairs)} reference pairs have no response tokens: no "
                            "normalisation bounds; give --reference-corpus FILE")
    info = {
        "kind": KIND, "corpus": specs_name(corpus), "init": arch.get("init"),
        "architecture": arch, "parameters": n_params, "train_pairs": len(train_pairs),
        "reference_pairs": len(ref_pairs), "reference_source": os.path.basename(reference_corpus)
        if reference_corpus else "held-out share of the training corpus",
        "steps": step, "steps_per_epoch": steps_per_epoch, "epochs_done": step / max(1, steps_per_epoch),
        "stopped_by": stopped_by, "train_seconds": round(train_seconds, 1),
        "train_cpu_seconds": round(cpu_seconds, 1), "lr": lr,
        "reference_perplexity": ref_ppl, "config": asdict(cfg),
        "layout": "<sep> query <sep> response <sep>, <sep> = tokenizer eos",
    }
    if step == 0 and not init:
        log("train lm: warning: no training step fitted in --max-minutes; the model is untrained "
            "(give more minutes or fewer --reference-pairs)")
    log(f"trained {step} steps in {train_seconds / 60:.1f} min ({stopped_by}); "
        f"held-out perplexity {ref_ppl:.2f}")
    return model, tokenizer, reference, info
