"""ADEM stage 2: the top N MiniLM layers trained together with M and N under the ADEM loss.

With a frozen encoder the learned M, N barely leave the identity (ADEM at initialisation ties
the trained model), because the PCA'd MiniLM vectors are all ADEM can reshape. Here the top
`finetune_layers` transformer layers of all-MiniLM-L6-v2 move too. The machinery is MME's
(`metrics/mme/finetune.py`: the model split at a layer, the lower layers' token states computed
once per distinct text and kept, the tuned layers stored as safetensors under the base model's
tensor names, a content hash of them in the signature); what differs is ADEM's own:

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
import json
import math
import os
import time
from typing import Callable, Mapping, Sequence

import numpy as np

from ....errors import DialevalError
from ...rowwise import filled

DEFAULT_MAX_TOKENS = 256     # all-MiniLM-L6-v2's sentence_bert_config.json


def max_tokens(model_dir: str) -> int:
    """The truncation length sentence-transformers applies for this model folder."""
    path = os.path.join(model_dir, "sentence_bert_config.json")
    try:
        with open(path) as handle:
            return int(json.load(handle).get("max_seq_length") or DEFAULT_MAX_TOKENS)
    except (OSError, ValueError):
        return DEFAULT_MAX_TOKENS


def context_text(context: Sequence[str], k: int) -> str:
    """A context as the frozen MiniLM encoder reads it: its last k turns joined by spaces."""
    return " ".join(list(context)[-k:]) if k > 0 else ""


def base_model(model_dir: str):
    """(tokenizer, frozen transformers model, number of layers) of a sentence-transformers folder."""
    from ...mme.encoder import _load

    tokenizer, model = _load(model_dir)
    return tokenizer, model, len(model.encoder.layer)


def tokenize(tokenizer, texts: Sequence[str], limit: int) -> list[list[int]]:
    return tokenizer(list(texts), truncation=True, max_length=limit)["input_ids"]


def sentence_vectors(hidden, attention_mask):
    """Mean pooling over the real tokens, then L2 normalisation: sentence-transformers' Pooling
    (mean, mask sum clamped at 1e-9) and Normalize modules, in torch."""
    import torch

    mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
    mean = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
    return torch.nn.functional.normalize(mean, p=2, dim=1)


# -- the tuned encoder at scoring time ----------------------------------------------------------------
class TunedMiniLM:
    """MiniLM with its top layers replaced by tuned ones; the interface of `MiniLMEncoder`
    (`encode_texts`, `encode_contexts`, `fingerprint`). Texts are batched by token length with a
    fixed batch shape (as `SentenceEncoder`), so a vector depends on its text alone."""

    def __init__(self, layers: Mapping[int, Mapping[str, object]], model_dir: str, base_name: str,
                 weights_id: str, context_turns: int = 3, batch_size: int = 16):
        from ...mme.finetune import scoring_layers

        self.tokenizer, self.base, n_layers = base_model(model_dir)
        self.limit = max_tokens(model_dir)
        self.n_lower = min(layers)
        if sorted(layers) != list(range(self.n_lower, n_layers)):
            raise DialevalError(f"tuned layers {sorted(layers)} are not the top layers of a {n_layers}-layer model")
        self.top = scoring_layers(self.base, layers)
        self.base_name, self.weights_id = base_name, weights_id
        self.context_turns = int(context_turns)
        self.batch_size = batch_size
        self.cache: dict[str, np.ndarray] = {}

    def fingerprint(self) -> str:
        return f"{self.base_name}+top{len(self.top)}@{self.weights_id}"

    def encode_texts(self, texts: Sequence[str]) -> np.ndarray:
        import torch

        from ...mme.encoder import torch_threads
        from ...mme.finetune import _length_batches, run_layers

        missing = [t for t in dict.fromkeys(texts) if t not in self.cache]
        if missing:
            torch_threads()
            ids = tokenize(self.tokenizer, missing, self.limit)
            with torch.inference_mode():
                for rows in _length_batches([len(x) for x in ids], self.batch_size):
                    inp = torch.tensor([ids[i] for i in filled(rows, self.batch_size)])
                    att = torch.ones_like(inp)
                    hidden = run_layers(self.base, self.base.encoder.layer[:self.n_lower],
                                        self.base.embeddings(input_ids=inp), att)
                    vecs = sentence_vectors(run_layers(self.base, self.top, hidden, att), att).numpy()
                    for r, i in enumerate(rows):
                        self.cache[missing[i]] = vecs[r]
        if not texts:
            return np.zeros((0, self.base.config.hidden_size))
        return np.stack([self.cache[t] for t in texts]).astype(np.float64)

    def encode_contexts(self, contexts: Sequence[Sequence[str]]) -> np.ndarray:
        return self.encode_texts([context_text(c, self.context_turns) for c in contexts])


# -- the lower layers, once ---------------------------------------------------------------------------
class LowerStates:
    """Each distinct text's token states below the tuned layers, computed once (no padding:
    texts of one token length per batch)."""

    def __init__(self, texts: Sequence[str], layers: int, model_dir: str, batch_size: int = 64):
        import torch

        from ...mme.encoder import torch_threads
        from ...mme.finetune import _length_batches, run_layers

        torch_threads()
        started = time.monotonic()
        self.tokenizer, self.base, self.n_layers = base_model(model_dir)
        if not 1 <= layers <= self.n_layers:
            raise DialevalError(f"finetune_layers must be 0..{self.n_layers}, not {layers}")
        self.n_lower = self.n_layers - layers
        self.texts = list(dict.fromkeys(texts))
        self.position = {t: i for i, t in enumerate(self.texts)}
        ids = tokenize(self.tokenizer, self.texts, max_tokens(model_dir))
        self.states: list = [None] * len(self.texts)
        with torch.inference_mode():
            for rows in _length_batches([len(x) for x in ids], batch_size):
                inp = torch.tensor([ids[i] for i in rows])
                att = torch.ones_like(inp)
                hidden = run_layers(self.base, self.base.encoder.layer[:self.n_lower],
                                    self.base.embeddings(input_ids=inp), att)
                for r, i in enumerate(rows):
                    self.states[i] = hidden[r].clone()
        self.seconds = time.monotonic() - started


def top_vectors(prep: LowerStates, top, positions: Sequence[int]):
    """Sentence vectors (torch, float32) of the texts at `positions` through the `top` layers."""
    from ...mme.finetune import _pad, run_layers

    hidden, att = _pad([prep.states[p] for p in positions])
    return sentence_vectors(run_layers(prep.base, top, hidden, att), att)


# -- stage 2 -------------------------------------------------------------------------------------------
class RowTexts:
    """The texts of rated rows as stage 2 reads them: a context text, reference texts, a response."""

    def __init__(self, contexts: Sequence[str], references: Sequence[Sequence[str]], responses: Sequence[str]):
        self.contexts, self.references, self.responses = list(contexts), [list(r) for r in references], list(responses)

    def all_texts(self) -> list[str]:
        return self.contexts + [t for rs in self.references for t in rs] + self.responses


def finetune_adem(model, train: RowTexts, y: np.ndarray, order_pool: np.ndarray, val: RowTexts, y_val: np.ndarray,
                  *, layers: int, epochs: int, lr: float, model_dir: str, deadline: float | None = None,
                  say: Callable[[str], None] | None = None) -> dict:
    """Train the top `layers` layers with M, N of a stage-1-fitted `model` (an `Adem`).

    `order_pool` lists the training row indices of an epoch (stage 1's oversampled rows).
    Returns a record; the model's M_, N_ and (when a stage-2 state won) `tuned_layers_` are set."""
    import torch

    from ...mme.encoder import torch_threads
    from ...mme.finetune import layer_tensors
    from .model import PRESETS, spearman

    torch_threads()
    started = time.monotonic()
    say = say or (lambda m: None)
    torch.manual_seed(model.seed)
    rng = np.random.default_rng(model.seed + 1)
    prep = LowerStates(train.all_texts() + val.all_texts(), layers, model_dir)
    say(f"[adem] stage 2: {len(prep.texts)} texts below layer {prep.n_lower} encoded in {prep.seconds:.0f} s")
    base, n_lower = prep.base, prep.n_lower
    top = copy.deepcopy(base.encoder.layer[n_lower:])
    top.eval()                                 # no dropout in the tuned layers (as MME)
    for p in top.parameters():
        p.requires_grad_(True)
    use_c, use_r = model.variant in ("adem", "c_adem"), model.variant in ("adem", "r_adem")
    mu = torch.tensor(model.pca_mean_, dtype=torch.float32)
    P = torch.tensor(model.pca_components_.T, dtype=torch.float32)
    M = torch.nn.Parameter(torch.tensor(model.M_, dtype=torch.float32))
    N = torch.nn.Parameter(torch.tensor(model.N_, dtype=torch.float32))
    used = [p for p, u in ((M, use_c), (N, use_r)) if u]
    alpha, beta = float(model.alpha_), float(model.beta_)
    gamma, penalty = model.gamma_value(), PRESETS[model.preset]["penalty"]
    batch_size = int(model.batch_size)
    opt = torch.optim.AdamW([{"params": top.parameters(), "lr": lr, "weight_decay": 0.01},
                             {"params": used, "lr": float(model.lr), "weight_decay": 0.0}])
    per_epoch = math.ceil(len(order_pool) / batch_size)
    planned = max(1, epochs * per_epoch)
    warm = max(1, planned // 10)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda step: min((step + 1) / warm, max(0.0, (planned - step) / max(planned - warm, 1))))
    yt = torch.tensor(np.asarray(y, dtype=np.float32))

    def batch_loss(rows: np.ndarray):
        need: dict[int, int] = {}
        for r in rows:
            for t in [train.contexts[r], train.responses[r], *train.references[r]]:
                need.setdefault(prep.position[t], len(need))
        V = top_vectors(prep, top, list(need))
        at = lambda texts: torch.tensor([need[prep.position[t]] for t in texts])   # noqa: E731
        h = (V[at([train.responses[r] for r in rows])] - mu) @ P
        raw = torch.zeros(len(rows))
        if use_c:
            c = (V[at([train.contexts[r] for r in rows])] - mu) @ P
            raw = raw + ((c @ M) * h).sum(1)
        if use_r:
            W = torch.zeros(len(rows), len(need))
            for k, r in enumerate(rows):
                refs = train.references[r]
                for t in refs:
                    W[k, need[prep.position[t]]] += 1.0 / len(refs)
            rr = (W @ V - mu) @ P
            raw = raw + ((rr @ N) * h).sum(1)
        err = ((raw - alpha) / beta - yt[rows]).pow(2).sum()
        reg = sum(p.abs().sum() if penalty == "l1" else p.pow(2).sum() for p in used)
        return err + gamma * reg

    def val_vectors() -> dict[str, np.ndarray]:
        from ...mme.finetune import _length_batches

        texts = list(dict.fromkeys(val.all_texts()))
        pos = [prep.position[t] for t in texts]
        out: dict[str, np.ndarray] = {}
        with torch.no_grad():
            for rows in _length_batches([len(prep.states[p]) for p in pos], 64):
                vecs = top_vectors(prep, top, [pos[i] for i in rows]).numpy().astype(np.float64)
                for k, i in enumerate(rows):
                    out[texts[i]] = vecs[k]
        return out

    def val_spearman() -> float:
        vec = val_vectors()
        C = np.stack([vec[t] for t in val.contexts])
        H = np.stack([vec[t] for t in val.responses])
        R = np.stack([np.mean([vec[t] for t in rs], axis=0) if rs else np.full(H.shape[1], np.nan)
                      for rs in val.references])
        pred = model._predict_with(C, R, H, M.detach().double().numpy(), N.detach().double().numpy())
        ok = np.isfinite(pred)
        return spearman(pred[ok], y_val[ok]) if ok.sum() >= 3 and np.std(pred[ok]) > 0 else -math.inf

    stage1 = float(model.training_["val_spearman"])
    start = val_spearman()     # the stage-1 model through the torch pipeline (= stage1 up to ~1e-7)
    best = {"score": stage1, "step": 0, "state": None}
    curve = [{"epoch": 0.0, "val_spearman": round(start, 5)}]
    say(f"[adem] stage 2 start: validation Spearman {start:.4f} (stage 1: {stage1:.4f})")
    checks = sorted({max(1, round(per_epoch * q / 4)) for q in (1, 2, 3, 4)})
    steps, stopped, epoch = 0, False, 0
    for epoch in range(1, epochs + 1):
        order = rng.permutation(order_pool)
        batches = [order[s:s + batch_size] for s in range(0, len(order), batch_size)]
        train_loss = 0.0
        for k, rows in enumerate(batches, start=1):
            opt.zero_grad()
            loss = batch_loss(rows)
            train_loss += float(loss.detach())
            loss.backward()
            torch.nn.utils.clip_grad_norm_(list(top.parameters()) + used, 1.0)
            opt.step()
            sched.step()
            steps += 1
            stopped = deadline is not None and time.monotonic() > deadline
            if k in checks or stopped:
                score = val_spearman()
                curve.append({"epoch": round(epoch - 1 + k / len(batches), 2), "val_spearman": round(score, 5)})
                say(f"[adem] stage 2 epoch {epoch - 1 + k / len(batches):.2f}: validation Spearman {score:.4f} "
                    f"(best {best['score']:.4f}), train loss/row {train_loss / max(1, k * batch_size):.4f}, "
                    f"{time.monotonic() - started:.0f} s")
                if score > best["score"] + 1e-6:
                    best = {"score": score, "step": steps,
                            "state": ({n: v.detach().clone() for n, v in top.state_dict().items()},
                                      M.detach().double().numpy().copy(), N.detach().double().numpy().copy())}
            if stopped:
                break
        if stopped:
            break
    info = {"finetune_layers": layers, "tuned_layer_indices": list(range(n_lower, prep.n_layers)),
            "epochs_run": epoch, "steps": steps, "steps_per_epoch": per_epoch, "stopped_by_deadline": stopped,
            "val_spearman_stage1": round(stage1, 5), "val_spearman_start_torch": round(start, 5),
            "val_spearman": round(best["score"], 5), "best_step": best["step"],
            "kept_stage1": best["state"] is None, "curve": curve, "texts": len(prep.texts),
            "encode_seconds": round(prep.seconds, 1), "seconds": round(time.monotonic() - started, 1)}
    if best["state"] is not None:
        top.load_state_dict(best["state"][0])
        model.M_, model.N_ = best["state"][1], best["state"][2]
        model.tuned_layers_ = layer_tensors(top, n_lower)
    return info


def tensors_id(tensors: Mapping[str, object]) -> str:
    """MME's content hash of tuned tensors (names, shapes, float32 bytes)."""
    from ...mme.submetric import _tensors_id

    return _tensors_id(tensors)


def by_layer(tensors: Mapping[str, object]) -> dict[int, dict[str, object]]:
    from ...mme.submetric import _by_layer

    return _by_layer(tensors)
