"""End-to-end fine-tuning of MiniLM with a sub-metric's head (`encoder_mode="finetune"`).

The paper fine-tunes its encoder per sub-metric; the frozen variant (`encoder.py`, the default)
only trains a head over fixed features. Here the *top N transformer layers* of all-MiniLM-L6-v2
(`finetune_layers`, default 2 of 6) are trained together with the head; the embeddings and the
lower layers stay as they were. Why the top N and not all six:

- the lower layers' output for each training text is computed once and kept, so an epoch costs
  a forward and a backward pass through N layers only: with N = 2 that is about one frozen
  forward pass per text, against about three for all six layers, so about three times as many
  epochs fit in the same budget on this CPU;
- the stored artifact holds only the N changed layers (about 7 MB per layer as float32), beside
  a reference to the base encoder, which every install has.
`finetune_layers=6` tunes every transformer layer (the embeddings always stay frozen).

Training is in two stages, both judged on the same seeded held-out tenth of the training rows
(DailyDialog train or the engagement labels; never a rated set):
1. the head alone on the frozen features (exactly the frozen variant's head);
2. the top layers and the head together, starting from stage 1 so that the head is not random
   when the encoder starts to move: AdamW, `finetune_lr` for the layers and ten times that for
   the head, linear warm-up over the first tenth of the steps then linear decay, gradient norm
   clipped at 1, batches of 32 rows, no dropout inside the tuned layers. After every epoch (and
   when the time budget runs out) the held-out loss is measured; the best state is kept, the
   stage-2 start included, so fine-tuning never ends worse than its start on the held-out rows.

The split model, the lower states, the training loop and the storage of the tuned layers are
the backbone module's (`dialeval.backbones.tuning`, shared with ADEM); what is MME's own is the
head, the loss (binary cross-entropy) and the floored feature scale below.

At scoring time `TunedEncoder` gives the same [mean ; max] features as `FrozenEncoder`, through
the base encoder with the tuned layers put in; each fine-tuned sub-metric has its own.
"""

from __future__ import annotations

import math
import time
from typing import Callable, Mapping, Sequence

import numpy as np

from ...backbones.tuning import (WEIGHTS_FILE, LowerStates, TunedBackbone, layer_tensors, tune_top_layers)
from ...backbones.tuning import load_layers as _load_layers
from ...backbones.tuning import save_layers as _save_layers
from .encoder import BLANK, MAX_TOKENS, POOLING, backbone, default_encoder_dir, encoder_id

__all__ = ["WEIGHTS_FILE", "Prepared", "TunedEncoder", "finetune", "save_layers", "load_layers"]

SD_FLOOR = 0.05        # below every live feature's sd on DailyDialog (1st percentile 0.17)
WHAT = "a fine-tuned MME sub-metric"


class Prepared(LowerStates):
    """Training texts encoded once: each distinct text's token states below the tuned layers
    and its frozen features (the frozen top layers on those states, the same values
    `FrozenEncoder` gives, up to float summation order)."""

    def __init__(self, texts: Sequence[str], layers: int, base_dir: str | None = None, batch_size: int = 64,
                 device: str = "cpu"):
        self.base_dir = base_dir or default_encoder_dir()
        # on the trainer's --device; training is fp32
        super().__init__(backbone(self.base_dir, device), texts, layers, max_length=MAX_TOKENS, blank=BLANK,
                         batch_size=batch_size, top_pooling=POOLING)


class TunedEncoder(TunedBackbone):
    """The base MiniLM with its top layers replaced by tuned ones; `features()` as FrozenEncoder."""

    def __init__(self, layers: Mapping[int, Mapping[str, "object"]], base_dir: str | None = None,
                 weights_id: str = "", batch_size: int = 16):
        self.model_dir = base_dir or default_encoder_dir()
        super().__init__(backbone(self.model_dir), layers, weights_id=weights_id, base_name=encoder_id(self.model_dir),
                         pooling=POOLING, max_length=MAX_TOKENS, blank=BLANK, batch_size=batch_size)

    def features(self, texts: Sequence[str]) -> np.ndarray:
        return self.encode(texts)


def save_layers(tensors: Mapping[str, "object"], path: str) -> str:
    return _save_layers(tensors, path, content="dialeval mme tuned MiniLM layers")


def load_layers(path: str, expected_layers: Sequence[int], base_dir: str | None = None
                ) -> dict[int, dict[str, "object"]]:
    return _load_layers(path, expected_layers, backbone(base_dir).model, what=WHAT)


# -- joint training ------------------------------------------------------------------------------------
def finetune(prep: Prepared, columns: Sequence[Sequence[str]], y: np.ndarray, combine: Callable,
             head_arrays: Mapping[str, np.ndarray], valid_idx: np.ndarray, *, epochs: int = 3, lr: float = 3e-5,
             batch_size: int = 32, dropout: float = 0.1, seed: int = 0, deadline: float | None = None,
             say: Callable[[str], None] | None = None, checkpoint=None) -> tuple[dict, dict[str, np.ndarray], dict]:
    """Fine-tune the layers above `prep.n_lower` with a head that starts from `head_arrays`.

    `columns` are the text inputs of each row (one column: the utterance; two: context and
    response); `combine` maps their pooled features (torch tensors, one per column) to the
    head's input. Returns (tuned layer tensors, head arrays, info)."""
    import torch

    started = time.monotonic()
    say = say or (lambda m: None)
    torch.manual_seed(seed)
    n_lower = prep.n_lower
    layers = prep.n_layers - n_lower
    index = [prep.rows(col) for col in columns]
    top = prep.trainable_top()
    # Feature dimensions that were constant on the training texts have sd ~ 1e-6: once the
    # encoder moves, dividing by it blows the head's input up (measured on FM: held-out loss
    # 0.58 -> 1.05 in one epoch). Their standardised value is 0 at the start whatever the
    # divisor, so for them the floor changes nothing at the start. Dimensions that vary a little
    # (sd < SD_FLOOR; RM's products u*v have 133 such of 1,536) are damped by it: RM's held-out
    # loss at the start of stage 2 is 0.4710 against stage 1's 0.4688. The stored head keeps the
    # floored sd, so scoring computes the same function as training.
    sd_floored = np.maximum(np.asarray(head_arrays["sd"], dtype=np.float64), SD_FLOOR)
    dev = prep.device             # the head and the batches live beside the states
    mu = torch.tensor(head_arrays["mu"], dtype=torch.float32, device=dev)
    sd = torch.tensor(sd_floored, dtype=torch.float32, device=dev)
    head = torch.nn.Sequential(torch.nn.Dropout(dropout), torch.nn.Linear(mu.shape[0], head_arrays["w0"].shape[0]),
                               torch.nn.GELU(), torch.nn.Dropout(dropout), torch.nn.Linear(head_arrays["w0"].shape[0], 1))
    head.to(dev)
    with torch.no_grad():
        for name, key in (("1.weight", "w0"), ("1.bias", "b0"), ("4.weight", "w1"), ("4.bias", "b1")):
            head.state_dict()[name].copy_(torch.tensor(head_arrays[key], dtype=torch.float32))
    loss_fn = torch.nn.BCEWithLogitsLoss()
    planned = max(1, epochs * math.ceil(max(len(y) - len(valid_idx), 1) / batch_size))
    yt = torch.tensor(np.asarray(y, dtype=np.float32), device=dev)
    n = len(y)
    valid_idx = np.asarray(valid_idx, dtype=int)
    train_idx = np.setdiff1d(np.arange(n), valid_idx)
    rng = np.random.default_rng(seed)

    def forward(rows: np.ndarray):
        need = list(dict.fromkeys(int(index[c][r]) for c in range(len(columns)) for r in rows))
        where = {t: k for k, t in enumerate(need)}
        feats = prep.top_output(top, need, POOLING)
        cols = [feats[torch.tensor([where[int(index[c][r])] for r in rows], device=dev)] for c in range(len(columns))]
        return head((combine(*cols) - mu) / sd)[:, 0]

    def held_out_loss() -> float:
        if not len(valid_idx):
            return math.nan
        top.eval()
        head.eval()
        total = 0.0
        with torch.no_grad():
            for s in range(0, len(valid_idx), 64):
                rows = valid_idx[s:s + 64]
                total += float(loss_fn(forward(rows), yt[torch.as_tensor(rows, device=dev)])) * len(rows)
        return total / len(valid_idx)

    def snapshot():
        return ({k: v.detach().clone() for k, v in top.state_dict().items()},
                {k: v.detach().clone() for k, v in head.state_dict().items()})

    def before_epoch():
        # the tuned layers run without dropout: dropout before max pooling makes the pooled
        # maxima larger in training than at scoring (a train/score mismatch); the head keeps its own
        top.eval()
        head.train()

    # batches of rows of similar token length (less padding), in a seeded random order
    length = np.array([max(len(prep.states[int(index[c][r])]) for c in range(len(columns))) for r in range(n)])

    def epoch_batches(epoch: int) -> list:
        order = train_idx[np.argsort(length[train_idx] + rng.random(len(train_idx)) * 6, kind="stable")]
        batches = [order[s:s + batch_size] for s in range(0, len(order), batch_size)]
        rng.shuffle(batches)
        return batches

    def on_check(epoch, done, n_batches, vloss, total, result):
        say(f"[mme] fine-tune epoch {epoch}{' (stopped by the budget)' if result.stopped else ''}: "
            f"train loss {total / max(done, 1):.4f}, held-out loss {vloss:.4f} (start {start_loss:.4f}), "
            f"{time.monotonic() - started:.0f} s")

    start_loss = held_out_loss()
    # keep the best held-out state; with no held-out rows (tiny sets), the latest
    result = tune_top_layers(top, lambda rows: loss_fn(forward(rows), yt[torch.as_tensor(rows, device=dev)]),
                             epoch_batches,
                             evaluate=held_out_loss, better=lambda v, best: v < best - 1e-5 or not len(valid_idx),
                             snapshot=snapshot, start=(start_loss, snapshot()), epochs=epochs, lr=lr,
                             planned_steps=planned, extra_groups=[{"params": list(head.parameters()), "lr": lr * 10}],
                             before_epoch=before_epoch, deadline=deadline, on_check=on_check, checkpoint=checkpoint,
                             say=say, label="[mme] fine-tune")
    history = [round(start_loss, 5)] + [round(score, 5) for _, score in result.checks]
    top.load_state_dict(result.best_state[0])
    head.load_state_dict(result.best_state[1])
    hs = head.state_dict()
    arrays = {"mu": np.asarray(head_arrays["mu"], dtype=np.float64), "sd": sd_floored,
              **{key: hs[name].cpu().numpy().astype(np.float64)
                 for name, key in (("1.weight", "w0"), ("1.bias", "b0"), ("4.weight", "w1"), ("4.bias", "b1"))}}
    info = {"finetune_layers": layers, "tuned_layer_indices": list(range(n_lower, prep.n_layers)),
            "finetune_epochs_run": result.epochs_run, "finetune_steps": result.steps,
            "finetune_best_epoch": round(result.best_position, 2),
            "finetune_stopped_by_deadline": result.stopped,
            "sd_floored_dims": int((np.asarray(head_arrays["sd"]) < SD_FLOOR).sum()),
            "finetune_valid_loss_start": round(start_loss, 5),
            "finetune_valid_loss_history": history,
            "finetune_train_loss_history": [round(total / max(done, 1), 5) for total, done in result.train_loss],
            "valid_loss": round(result.best_score, 5),
            "finetune_texts": len(prep.texts), "encode_seconds": round(prep.seconds, 1),
            "finetune_seconds": round(time.monotonic() - started, 1)}
    return layer_tensors(top, n_lower), arrays, info
