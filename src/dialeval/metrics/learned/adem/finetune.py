"""ADEM stage 2: the top N MiniLM layers trained together with M and N under the ADEM loss.

With a frozen encoder the learned M, N barely leave the identity (ADEM at initialisation ties
the trained model), because the PCA'd MiniLM vectors are all ADEM can reshape. Here the top
`finetune_layers` transformer layers of all-MiniLM-L6-v2 move too. The machinery is the
backbone module's (`dialeval.backbones.tuning`, shared with MME: the model split at a layer, the
lower layers' token states computed once per distinct text and kept, the training loop, the
tuned layers stored as safetensors under the base model's tensor names, a content hash of them
in the signature); what differs is ADEM's own:

- **Vectors as the frozen encoder makes them.** sentence-transformers' pipeline for this model
  is Transformer (truncation at its `max_seq_length`, 256) -> mean pooling over the real tokens
  -> L2 normalisation; `sentence_vectors` is that in torch, so stage 2 with zero steps gives the
  frozen vectors (up to float summation order, ~1e-7). A context is its last k turns joined by
  spaces; several references are the mean of their vectors, as in `Adem.encode`.
- **The PCA stays the constant linear map fitted in stage 1** (mean and components from the
  frozen vectors). Learning it would add 384 x n free weights on top of the layers, and the
  bilinear forms c^T M r^ already absorb any linear change of basis that M, N can express; a
  fixed map also keeps alpha and beta (set from the stage-1 projections) meaningful.
- **The loss is stage 1's**: the squared error to the human score summed over the batch, plus
  gamma times the preset's L1 or squared-L2 norm of the M, N the variant uses; alpha and beta
  stay fixed. AdamW: `finetune_lr` for the layers (weight decay 0.01), stage 1's `lr` for M and
  N (no decay: they have their own penalty); linear warm-up over the first tenth of the steps
  then linear decay, gradient norm clipped at 1, no dropout in the tuned layers (as MME).
- **Early stopping on stage 1's validation split**, by its Spearman, measured four times per epoch
  (and when the time budget runs out) with float64 arithmetic as at scoring. The best state is
  kept and the stage-1 model counts as a candidate with its own validation Spearman, so stage 2
  never ends worse than stage 1 on validation; when nothing beat it, the model *is* the stage-1
  model (no tuned layers stored).
"""

from __future__ import annotations

import copy
import math
import time
from typing import Callable, Mapping, Sequence

import numpy as np

from ....backbones import load_backbone
from ....backbones.tuning import LowerStates as _LowerStates
from ....backbones.tuning import (TunedBackbone, by_layer, layer_tensors, on_backbone, tensors_id,
                                  tune_top_layers)
from dialeval.stats import spearman

from .bilinear import BilinearHead

__all__ = ["TunedMiniLM", "LowerStates", "RowTexts", "finetune_adem", "finetune_rows", "base_model", "top_vectors",
           "context_text", "max_tokens", "tensors_id", "by_layer"]


def backbone(model_dir: str, device: str = "cpu"):
    return load_backbone(model_dir, kind="sentence-transformers", device=device)


def max_tokens(model_dir: str) -> int:
    """The truncation length sentence-transformers applies for this model folder."""
    return backbone(model_dir).max_length


def context_text(context: Sequence[str], k: int) -> str:
    """A context as the frozen MiniLM encoder reads it: its last k turns joined by spaces."""
    return " ".join(list(context)[-k:]) if k > 0 else ""


def base_model(model_dir: str):
    """(tokenizer, frozen transformers model, number of layers) of a sentence-transformers folder."""
    bb = backbone(model_dir)
    return bb.tokenizer, bb.model, len(bb.model.encoder.layer)


# -- the tuned encoder at scoring time ----------------------------------------------------------------
class TunedMiniLM:
    """MiniLM with its top layers replaced by tuned ones; the interface of `MiniLMEncoder`
    (`encode_texts`, `encode_contexts`, `fingerprint`): sentence-transformers' pipeline (mean
    pooling, L2 normalisation, truncation at its max_seq_length) through the tuned layers."""

    def __init__(self, layers: Mapping[int, Mapping[str, object]], model_dir: str, base_name: str,
                 weights_id: str, context_turns: int = 3, batch_size: int = 16):
        self.tuned = TunedBackbone(backbone(model_dir), layers, weights_id=weights_id, base_name=base_name,
                                   pooling="mean", normalize=True, batch_size=batch_size)
        self.base, self.top = self.tuned.base, self.tuned.top
        self.base_name, self.weights_id = base_name, weights_id
        self.context_turns = int(context_turns)

    def fingerprint(self) -> str:
        return self.tuned.fingerprint()

    def on(self, bb) -> "TunedMiniLM":
        """This encoder over `bb`, another load of the base (`--adem-device`, `--adem-precision`);
        the tuned copy is made once per backbone and kept beside it."""
        if bb is self.tuned.backbone:
            return self
        other = copy.copy(self)
        other.tuned = on_backbone(self.tuned, bb)
        other.base, other.top = other.tuned.base, other.tuned.top
        return other

    def encode_texts(self, texts: Sequence[str]) -> np.ndarray:
        return self.tuned.encode(texts).astype(np.float64)

    def encode_contexts(self, contexts: Sequence[Sequence[str]]) -> np.ndarray:
        return self.encode_texts([context_text(c, self.context_turns) for c in contexts])


# -- the lower layers, once ---------------------------------------------------------------------------
class LowerStates(_LowerStates):
    """Each distinct text's token states below the tuned layers, computed once."""

    def __init__(self, texts: Sequence[str], layers: int, model_dir: str, batch_size: int = 64,
                 device: str = "cpu"):
        bb = backbone(model_dir, device)
        n = len(bb.model.encoder.layer)
        super().__init__(bb, texts, layers, batch_size=batch_size,
                         layer_range_error=f"finetune_layers must be 0..{n}, not {layers}")


def top_vectors(prep: LowerStates, top, positions: Sequence[int]):
    """Sentence vectors (torch, float32) of the texts at `positions` through the `top` layers."""
    return prep.top_output(top, positions, "mean", normalize=True)


# -- stage 2 -------------------------------------------------------------------------------------------
class RowTexts:
    """The texts of rated rows as stage 2 reads them: a context text, reference texts, a response."""

    def __init__(self, contexts: Sequence[str], references: Sequence[Sequence[str]], responses: Sequence[str]):
        self.contexts, self.references, self.responses = list(contexts), [list(r) for r in references], list(responses)

    def all_texts(self) -> list[str]:
        return self.contexts + [t for rs in self.references for t in rs] + self.responses


def finetune_adem(model, head: BilinearHead, train: RowTexts, y: np.ndarray, order_pool: np.ndarray, val: RowTexts,
                  y_val: np.ndarray, *, layers: int, epochs: int, lr: float, model_dir: str,
                  deadline: float | None = None, say: Callable[[str], None] | None = None,
                  checkpoint=None) -> tuple[dict, BilinearHead, dict | None]:
    """Train the top `layers` layers with the M, N of `head`, the stage-1 head of `model` (an
    `Adem`, whose settings and stage-1 record are read).

    `order_pool` lists the training row indices of an epoch (stage 1's oversampled rows).
    Returns (record, head, tuned layers): the stage-2 head and layers when a stage-2 state won,
    else `head` itself and None."""
    import torch

    from ....backbones.batching import length_batches

    started = time.monotonic()
    say = say or (lambda m: None)
    torch.manual_seed(model.seed)
    rng = np.random.default_rng(model.seed + 1)
    prep = LowerStates(train.all_texts() + val.all_texts(), layers, model_dir, device=model.device)
    dev = prep.device             # the tuned layers, M, N and the batches live beside the states
    say(f"[adem] stage 2: {len(prep.texts)} texts below layer {prep.n_lower} encoded in {prep.seconds:.0f} s")
    n_lower = prep.n_lower
    top = prep.trainable_top()
    top.eval()                                 # no dropout in the tuned layers (as MME)
    use_c, use_r = head.uses_context, head.uses_reference
    mu = torch.tensor(head.pca_mean, dtype=torch.float32, device=dev)
    P = torch.tensor(head.pca_components.T, dtype=torch.float32, device=dev)
    M = torch.nn.Parameter(torch.tensor(head.M, dtype=torch.float32, device=dev))
    N = torch.nn.Parameter(torch.tensor(head.N, dtype=torch.float32, device=dev))
    used = [p for p, u in ((M, use_c), (N, use_r)) if u]
    alpha, beta = float(head.alpha), float(head.beta)
    gamma, penalty = model.gamma_value(), model.penalty()
    batch_size = int(model.batch_size)
    per_epoch = math.ceil(len(order_pool) / batch_size)
    yt = torch.tensor(np.asarray(y, dtype=np.float32), device=dev)

    def batch_loss(rows: np.ndarray):
        need: dict[int, int] = {}
        for r in rows:
            for t in [train.contexts[r], train.responses[r], *train.references[r]]:
                need.setdefault(prep.position[t], len(need))
        V = top_vectors(prep, top, list(need))
        at = lambda texts: torch.tensor([need[prep.position[t]] for t in texts], device=dev)   # noqa: E731
        h = (V[at([train.responses[r] for r in rows])] - mu) @ P
        raw = torch.zeros(len(rows), device=dev)
        if use_c:
            c = (V[at([train.contexts[r] for r in rows])] - mu) @ P
            raw = raw + ((c @ M) * h).sum(1)
        if use_r:
            W = torch.zeros(len(rows), len(need), device=dev)
            for k, r in enumerate(rows):
                refs = train.references[r]
                for t in refs:
                    W[k, need[prep.position[t]]] += 1.0 / len(refs)
            rr = (W @ V - mu) @ P
            raw = raw + ((rr @ N) * h).sum(1)
        err = ((raw - alpha) / beta - yt[torch.as_tensor(rows, device=dev)]).pow(2).sum()
        reg = sum(p.abs().sum() if penalty == "l1" else p.pow(2).sum() for p in used)
        return err + gamma * reg

    def val_vectors() -> dict[str, np.ndarray]:
        texts = list(dict.fromkeys(val.all_texts()))
        pos = [prep.position[t] for t in texts]
        out: dict[str, np.ndarray] = {}
        with torch.no_grad():
            for rows in length_batches([len(prep.states[p]) for p in pos], 64):
                vecs = top_vectors(prep, top, [pos[i] for i in rows]).cpu().numpy().astype(np.float64)
                for k, i in enumerate(rows):
                    out[texts[i]] = vecs[k]
        return out

    def val_spearman() -> float:
        vec = val_vectors()
        C = np.stack([vec[t] for t in val.contexts])
        H = np.stack([vec[t] for t in val.responses])
        R = np.stack([np.mean([vec[t] for t in rs], axis=0) if rs else np.full(H.shape[1], np.nan)
                      for rs in val.references])
        pred = head.predict_with(C, R, H, M.detach().double().cpu().numpy(), N.detach().double().cpu().numpy())
        ok = np.isfinite(pred)
        return spearman(pred[ok], y_val[ok]) if ok.sum() >= 3 and np.std(pred[ok]) > 0 else -math.inf

    def snapshot():
        return ({n: v.detach().clone() for n, v in top.state_dict().items()},
                M.detach().double().cpu().numpy().copy(), N.detach().double().cpu().numpy().copy())

    def epoch_batches(epoch: int) -> list:
        order = rng.permutation(order_pool)
        return [order[s:s + batch_size] for s in range(0, len(order), batch_size)]

    checks = {max(1, round(per_epoch * q / 4)) for q in (1, 2, 3, 4)}

    def on_check(epoch, k, n_batches, score, total, result):
        position = epoch - 1 + k / n_batches
        say(f"[adem] stage 2 epoch {position:.2f}: validation Spearman {score:.4f} "
            f"(best {previous_best[0]:.4f}), train loss/row {total / max(1, k * batch_size):.4f}, "
            f"{time.monotonic() - started:.0f} s")
        previous_best[0] = result.best_score

    stage1 = float(model.training_["val_spearman"])
    start = val_spearman()     # the stage-1 model through the torch pipeline (= stage1 up to ~1e-7)
    previous_best = [stage1]
    say(f"[adem] stage 2 start: validation Spearman {start:.4f} (stage 1: {stage1:.4f})")
    result = tune_top_layers(top, batch_loss, epoch_batches, evaluate=val_spearman,
                             better=lambda score, best: score > best + 1e-6, snapshot=snapshot, start=(stage1, None),
                             epochs=epochs, lr=lr, planned_steps=max(1, epochs * per_epoch),
                             extra_groups=[{"params": used, "lr": float(model.lr), "weight_decay": 0.0}],
                             check_after=lambda n: checks, deadline=deadline, on_check=on_check,
                             checkpoint=checkpoint, say=say, label="[adem] stage 2")
    curve = [{"epoch": 0.0, "val_spearman": round(start, 5)}] + [
        {"epoch": round(position, 2), "val_spearman": round(score, 5)} for position, score in result.checks]
    info = {"finetune_layers": layers, "tuned_layer_indices": list(range(n_lower, prep.n_layers)),
            "epochs_run": result.epochs_run, "steps": result.steps, "steps_per_epoch": per_epoch,
            "stopped_by_deadline": result.stopped, "val_spearman_stage1": round(stage1, 5),
            "val_spearman_start_torch": round(start, 5), "val_spearman": round(result.best_score, 5),
            "best_step": result.best_step, "kept_stage1": result.best_state is None, "curve": curve,
            "texts": len(prep.texts), "encode_seconds": round(prep.seconds, 1),
            "seconds": round(time.monotonic() - started, 1)}
    if result.best_state is None:
        return info, head, None
    top.load_state_dict(result.best_state[0])
    return info, head.with_bilinear(result.best_state[1], result.best_state[2]), layer_tensors(top, n_lower)


def finetune_rows(model, head: BilinearHead, rows: Sequence, train_idx: Sequence[int], val_idx: Sequence[int], *,
                  progress: Callable[[str], None] | None = None,
                  checkpoint=None) -> tuple[dict, BilinearHead, dict | None]:
    """See `Adem.finetune_rows`: the rated rows as stage 2 reads them (stage 1's split, its
    oversampled epoch), then `finetune_adem` from `head`, what it returns being for the model
    to keep."""
    from .encoders import make_encoder
    from .training import oversampled

    layers = int(model.finetune_layers)
    use_r = model.needs_references()
    k = int(model.context_turns)
    pick = lambda idx: [rows[i] for i in idx if rows[i].references or not use_r]   # noqa: E731

    def texts(part):
        return RowTexts([context_text(r.context, k) for r in part],
                        [list(r.references) if use_r else [] for r in part], [r.response for r in part])

    tr, va = pick(train_idx), pick(val_idx)
    y = np.array([r.score for r in tr], dtype=np.float64)
    lengths = np.array([len(r.response.split()) for r in tr])
    rng = np.random.default_rng(model.seed)
    pool = oversampled(y, lengths, rng, model.max_oversample) if model.oversample else np.arange(len(y))
    deadline = time.monotonic() + 60 * float(model.finetune_minutes) if model.finetune_minutes else None
    return finetune_adem(model, head, texts(tr), y, pool, texts(va), np.array([r.score for r in va]),
                         layers=layers, epochs=int(model.finetune_epochs), lr=float(model.finetune_lr),
                         model_dir=make_encoder(model.encoder, k).model_dir, deadline=deadline, say=progress,
                         checkpoint=checkpoint)
