"""How dialeval's transformer trainers step: `Optimiser`, the step every one of them takes
(backward, gradient norm clipped at 1, AdamW, the learning-rate schedule, gradients cleared),
and `train_causal_lm`, the whole loop of the causal LMs: the small GPT-2 LM (from scratch or
fine-tuned, `metrics/lm/train.py`) and a LoRA adapter on a pretrained base (`metrics/lm/lora.py`).
The top-layer fine-tuning that ADEM and MME share (`backbones/tuning.py`) steps with the same
`Optimiser` inside its own loop (its batches are rows of cached lower-layer states, with
validation checks within an epoch). The MME heads, the topic and specificity models and the
dialogue encoder train without clipping or a schedule, so they are not this loop.

The two LM trainers used to carry a copy each of the same loop; one copy means a fix to
batching, clipping or the stopping rule reaches both, and a trained number can only differ
between them where their callers say so. What is theirs stays with the callers: which parameters learn, the
learning-rate schedule, the order of the batches in each pass, when time runs out (the LM keeps
a reserve for scoring its reference pairs) and what they log. What is shared, in this order for
every step: pad the batch's sequences (the pad is the separator token, masked out), take the
loss on the tokens from each sequence's `head` on (0: all of them), backward, clip the gradient
norm at 1, AdamW step, schedule step, gradients set to None.

torch is imported when the loop runs, so importing this module costs nothing.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence


@dataclass
class LoopState:
    """What the loop has done so far; the callers' `after_step` reads it (for logging, or the
    LM's time reserve) and `train_causal_lm` returns it."""

    steps: int = 0
    tokens: int = 0                       # real (unpadded) tokens of the batches trained on
    losses: list[float] = field(default_factory=list)
    out_of_time: bool = False             # stopped by `out_of_time()`, not by the step count
    started: float = 0.0                  # time.time() when the loop began
    cpu_started: float = 0.0              # time.process_time() then

    @property
    def seconds(self) -> float:
        return time.time() - self.started

    @property
    def cpu_seconds(self) -> float:
        return time.process_time() - self.cpu_started


class Optimiser:
    """AdamW under a LambdaLR schedule, and the one order of a training step.

    `groups` are parameters or AdamW parameter groups; `lr` None leaves AdamW's own default
    to groups that name none. Gradients are cleared when the optimiser is made and after each
    step (to None): the same as clearing them before each step, which is what some of the
    loops it replaced did."""

    def __init__(self, groups, *, lr: float | None, weight_decay: float, schedule: Callable[[int], float],
                 clip: Sequence[Any]):
        import torch

        kwargs = {"weight_decay": weight_decay} if lr is None else {"lr": lr, "weight_decay": weight_decay}
        self.optimizer = torch.optim.AdamW(groups, **kwargs)
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer, schedule)
        self.clip = list(clip)
        self.optimizer.zero_grad(set_to_none=True)

    def step(self, loss) -> None:
        import torch

        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.clip, 1.0)
        self.optimizer.step()
        self.scheduler.step()
        self.optimizer.zero_grad(set_to_none=True)


def causal_lm_batch(sequences: Sequence[tuple[Sequence[int], int]], rows: Sequence[int], pad_id: int):
    """(input ids, attention mask, labels) of `rows`: sequences padded to the longest with
    `pad_id`, the loss on each sequence's tokens from its `head` on (-100 elsewhere)."""
    import torch

    width = max(len(sequences[i][0]) for i in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    labels = torch.full((len(rows), width), -100, dtype=torch.long)
    for k, i in enumerate(rows):
        seq, head = sequences[i]
        ids[k, :len(seq)] = torch.tensor(seq)
        mask[k, :len(seq)] = 1
        labels[k, head:len(seq)] = torch.tensor(seq[head:])
    return ids, mask, labels


def unlikelihood_loss(logits, labels, unlikely: Sequence[bool], weight: float):
    """Mean next-token negative log-likelihood over the labelled tokens of the likely rows, plus
    `weight` times the mean of -log(1 - p) over those of the unlikely rows (each part 0 when its
    rows are absent). Labels are the inputs, -100 where no loss is taken, shifted here as the
    models' own loss shifts them."""
    import torch

    logp = torch.log_softmax(logits[:, :-1].float(), dim=-1)
    target = labels[:, 1:]
    valid = target != -100
    token = logp.gather(-1, target.clamp(min=0).unsqueeze(-1)).squeeze(-1)
    bad = torch.tensor(list(unlikely), dtype=torch.bool, device=logits.device).unsqueeze(1)
    good_tokens, bad_tokens = valid & ~bad, valid & bad
    nll = -(token * good_tokens).sum() / good_tokens.sum().clamp(min=1)
    # log(1 - p) from log p, kept finite where p rounds to 1
    away = torch.log1p(-token.exp().clamp(max=1 - 1e-6))
    ul = -(away * bad_tokens).sum() / bad_tokens.sum().clamp(min=1)
    return nll + weight * ul


def train_causal_lm(model, params: Sequence[Any], sequences: Sequence[tuple[Sequence[int], int]], *,
                    pad_id: int, passes: Callable[[], Iterable[Sequence[int]]], total_steps: int,
                    lr: float, weight_decay: float, schedule: Callable[[int], float], device: str = "cpu",
                    out_of_time: Callable[[], bool] | None = None,
                    after_step: Callable[[LoopState], None] | None = None,
                    unlikely: Sequence[bool] | None = None, unlikelihood_weight: float = 1.0,
                    checkpoint=None) -> LoopState:
    """Train `params` of `model` (a transformers causal LM) for `total_steps` optimiser steps.

    `passes()` gives one pass's batches (lists of indices into `sequences`, each an
    `(ids, head)` pair); it is called again for every further pass, so the caller decides
    whether batches are rebuilt or only reshuffled. `schedule(step)` multiplies `lr`
    (LambdaLR). `out_of_time()`, asked before each step, ends the run early. The model is in
    training mode during the loop; the caller switches it back. `unlikely` marks sequences
    whose labelled tokens are to be made unlikely (`unlikelihood_loss`); None: the model's own
    likelihood loss alone.

    `checkpoint` (a `models.resume.TrainingCheckpoint` scope) saves the loop every few minutes
    (the model's trainable state, optimiser, schedule, random states, the pass's batches and the
    position in it) and continues a saved one; `passes()` is called again once for every pass
    already begun, so a caller's own shuffling generator advances as it did the first time."""
    params = list(params)
    optimiser = Optimiser(params, lr=lr, weight_decay=weight_decay, schedule=schedule, clip=params)
    state = LoopState(started=time.time(), cpu_started=time.process_time())
    model.train()
    loop = checkpoint.loop() if checkpoint is not None else None
    saved = loop.restore() if loop is not None else None
    passes_begun, resume_pass, skip = 0, None, 0
    if saved is not None:
        from .resume import set_rng_state

        for _ in range(saved["passes"]):
            resume_pass = list(passes())
        passes_begun = saved["passes"]
        resume_pass, skip = saved["batches"], saved["k"]
        for p, value in zip(params, saved["params"]):
            p.data.copy_(value)
        optimiser.optimizer.load_state_dict(saved["optimizer"])
        optimiser.scheduler.load_state_dict(saved["scheduler"])
        state.steps, state.tokens, state.losses = saved["steps"], saved["tokens"], list(saved["losses"])
        set_rng_state(saved["rng"])
        if saved["done"]:
            state.out_of_time = saved["out_of_time"]
            return state

    def snapshot(batches, k):
        return {"passes": passes_begun, "batches": batches, "k": k, "steps": state.steps, "tokens": state.tokens,
                "losses": list(state.losses), "params": [p.detach().clone() for p in params],
                "optimizer": optimiser.optimizer.state_dict(), "scheduler": optimiser.scheduler.state_dict(),
                "out_of_time": state.out_of_time}

    batches = []
    while state.steps < total_steps:
        trained = state.steps
        if resume_pass is not None:
            batches, resume_pass = resume_pass, None
        else:
            batches, skip = list(passes()), 0
            passes_begun += 1
        for k, rows in enumerate(batches, start=1):
            if k <= skip:
                continue
            if state.steps >= total_steps:
                break
            if out_of_time is not None and out_of_time():
                state.out_of_time = True
                break
            ids, mask, labels = causal_lm_batch(sequences, rows, pad_id)
            if unlikely is None:
                loss = model(input_ids=ids.to(device), attention_mask=mask.to(device), labels=labels.to(device)).loss
            else:
                logits = model(input_ids=ids.to(device), attention_mask=mask.to(device)).logits
                loss = unlikelihood_loss(logits, labels.to(device), [unlikely[i] for i in rows], unlikelihood_weight)
            optimiser.step(loss)
            state.losses.append(float(loss.detach()))
            state.tokens += int(mask.sum())
            state.steps += 1
            if after_step is not None:
                after_step(state)
            if loop is not None:
                loop.maybe_save(lambda: snapshot(batches, k))
        if state.out_of_time or (state.steps == trained and not skip):   # a pass without a batch would loop forever
            break
        skip = 0
    if loop is not None:
        loop.save(snapshot(batches, len(batches)), done=True)
    return state
