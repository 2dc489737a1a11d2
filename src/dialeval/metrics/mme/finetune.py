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

At scoring time `TunedEncoder` gives the same [mean ; max] features as `FrozenEncoder`, through
the base encoder with the tuned layers put in; each fine-tuned sub-metric has its own.
"""

from __future__ import annotations

import copy
import hashlib
import math
import os
import time
from typing import Callable, Mapping, Sequence

import numpy as np

from ...errors import DialevalError
from ..rowwise import filled
from .encoder import FEATURE_DIM, MAX_TOKENS, _load, default_encoder_dir, encoder_id, torch_threads

WEIGHTS_FILE = "encoder.safetensors"
SD_FLOOR = 0.05        # below every live feature's sd on DailyDialog (1st percentile 0.17)


# -- the encoder split at a layer -----------------------------------------------------------------
def _mask(model, hidden, attention_mask):
    """The attention mask in the form the model's layers expect (eager, sdpa, ...)."""
    from transformers.masking_utils import create_bidirectional_mask

    return create_bidirectional_mask(config=model.config, inputs_embeds=hidden, attention_mask=attention_mask)


def run_layers(model, layers, hidden, attention_mask):
    mask = _mask(model, hidden, attention_mask)
    for layer in layers:
        hidden = layer(hidden, mask)
        if isinstance(hidden, tuple):          # older transformers return (hidden, ...)
            hidden = hidden[0]
    return hidden


def pool(hidden, attention_mask):
    """[mean ; max] over the real tokens: the frozen encoder's features, in torch."""
    import torch

    mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
    mean = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1.0)
    maxed = hidden.masked_fill(mask == 0, -1e4).max(1).values
    return torch.cat([mean, maxed], dim=1)


def _length_batches(lengths: Sequence[int], size: int) -> list[list[int]]:
    groups: dict[int, list[int]] = {}
    for i, n in enumerate(lengths):
        groups.setdefault(n, []).append(i)
    return [idx[s:s + size] for n in sorted(groups) for idx in [groups[n]] for s in range(0, len(idx), size)]


def _tokenize(tokenizer, texts: Sequence[str]) -> list[list[int]]:
    inputs = [t if t.strip() else "." for t in texts]
    return tokenizer(inputs, truncation=True, max_length=MAX_TOKENS)["input_ids"]


class Prepared:
    """Training texts encoded once: each distinct text's token states below the tuned layers
    (a (length, 384) tensor) and its frozen features (the frozen top layers on those states,
    the same values `FrozenEncoder` gives, up to float summation order)."""

    def __init__(self, texts: Sequence[str], layers: int, base_dir: str | None = None, batch_size: int = 64):
        import torch

        torch_threads()
        started = time.monotonic()
        self.base_dir = base_dir or default_encoder_dir()
        self.tokenizer, self.base = _load(self.base_dir)
        self.n_layers = len(self.base.encoder.layer)        # 6 for all-MiniLM-L6-v2
        if not 1 <= layers <= self.n_layers:
            raise DialevalError(f"finetune_layers must be 1..{self.n_layers}, not {layers}")
        self.n_lower = self.n_layers - layers
        self.texts = list(dict.fromkeys(texts))
        self.position = {t: i for i, t in enumerate(self.texts)}
        ids = _tokenize(self.tokenizer, self.texts)
        self.states: list = [None] * len(self.texts)
        self.frozen = np.zeros((len(self.texts), FEATURE_DIM), dtype=np.float32)
        model = self.base
        with torch.inference_mode():
            for rows in _length_batches([len(x) for x in ids], batch_size):
                inp = torch.tensor([ids[i] for i in rows])
                att = torch.ones_like(inp)
                hidden = run_layers(model, model.encoder.layer[:self.n_lower], model.embeddings(input_ids=inp), att)
                feats = pool(run_layers(model, model.encoder.layer[self.n_lower:], hidden, att), att).numpy()
                for r, i in enumerate(rows):
                    self.states[i] = hidden[r].clone()
                    self.frozen[i] = feats[r]
        self.seconds = time.monotonic() - started

    def rows(self, column: Sequence[str]) -> np.ndarray:
        return np.array([self.position[t] for t in column], dtype=int)

    def features(self, column: Sequence[str]) -> np.ndarray:
        return self.frozen[self.rows(column)]


def _pad(states: Sequence) -> tuple:
    import torch

    width = max(s.shape[0] for s in states)
    hidden = torch.zeros(len(states), width, states[0].shape[1])
    att = torch.zeros(len(states), width, dtype=torch.long)
    for r, s in enumerate(states):
        hidden[r, :s.shape[0]] = s
        att[r, :s.shape[0]] = 1
    return hidden, att


def top_features(model, top, states: Sequence):
    """Pooled features of texts given their lower states, through the trainable `top` layers."""
    hidden, att = _pad(states)
    return pool(run_layers(model, top, hidden, att), att)


# -- the tuned encoder at scoring time ---------------------------------------------------------------
def scoring_layers(base, layers: Mapping[int, Mapping[str, "object"]]):
    """Copies of `base`'s layers at the indices of `layers` holding their tuned weights, in
    evaluation mode and without gradients: the top of an encoder that only scores (MME's and
    ADEM's fine-tuned MiniLM)."""
    import torch

    top = torch.nn.ModuleList()
    for index in sorted(layers):
        layer = copy.deepcopy(base.encoder.layer[index])
        layer.load_state_dict(dict(layers[index]))
        layer.eval()
        for p in layer.parameters():
            p.requires_grad_(False)
        top.append(layer)
    return top


class TunedEncoder:
    """The base MiniLM with its top layers replaced by tuned ones; `features()` as FrozenEncoder."""

    def __init__(self, layers: Mapping[int, Mapping[str, "object"]], base_dir: str | None = None,
                 weights_id: str = "", batch_size: int = 16):
        self.model_dir = base_dir or default_encoder_dir()
        tokenizer, base = _load(self.model_dir)
        self.tokenizer = tokenizer
        self.n_lower = min(layers) if layers else len(base.encoder.layer)
        self.top = scoring_layers(base, layers)
        self.base = base
        self.weights_id = weights_id
        self.batch_size = batch_size
        self.cache: dict[str, np.ndarray] = {}

    def fingerprint(self) -> str:
        return f"{encoder_id(self.model_dir)}+top{len(self.top)}@{self.weights_id}"

    def features(self, texts: Sequence[str]) -> np.ndarray:
        import torch

        missing = [t for t in dict.fromkeys(texts) if t not in self.cache]
        if missing:
            torch_threads()
            ids = _tokenize(self.tokenizer, missing)
            with torch.inference_mode():
                # one token length per batch (no padding): a text's features never depend on
                # the other texts of the run
                for rows in _length_batches([len(x) for x in ids], self.batch_size):
                    inp = torch.tensor([ids[i] for i in filled(rows, self.batch_size)])
                    att = torch.ones_like(inp)
                    hidden = self.base.embeddings(input_ids=inp)
                    hidden = run_layers(self.base, self.base.encoder.layer[:self.n_lower], hidden, att)
                    hidden = run_layers(self.base, self.top, hidden, att)
                    feats = pool(hidden, att).numpy().astype(np.float32)
                    for r, i in enumerate(rows):
                        self.cache[missing[i]] = feats[r]
        if not texts:
            return np.zeros((0, FEATURE_DIM), dtype=np.float32)
        return np.stack([self.cache[t] for t in texts])


# -- storage -----------------------------------------------------------------------------------------
def layer_tensors(top, n_lower: int) -> dict[str, "object"]:
    """Flat safetensors dict `encoder.layer.{i}.{name}` of the tuned layers (the base model's names)."""
    return {f"encoder.layer.{n_lower + k}.{name}": t.detach().contiguous().clone()
            for k, layer in enumerate(top) for name, t in layer.state_dict().items()}


def save_layers(tensors: Mapping[str, "object"], path: str) -> str:
    from safetensors.torch import save_file

    save_file(dict(tensors), path, metadata={"format": "pt", "content": "dialeval mme tuned MiniLM layers"})
    with open(path, "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest()[:12]


def load_layers(path: str, expected_layers: Sequence[int], base_dir: str | None = None
                ) -> dict[int, dict[str, "object"]]:
    """Tensors of `path` by layer index, checked against the base encoder's own layer shapes:
    exactly the expected layers, every parameter, nothing else."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    if not os.path.exists(path):
        raise DialevalError(f"{path}: missing; not a fine-tuned MME sub-metric")
    try:
        flat = load_file(path)
    except (SafetensorError, OSError, ValueError) as exc:
        raise DialevalError(f"{path}: unreadable safetensors ({exc})") from None
    _, base = _load(base_dir or default_encoder_dir())
    layers: dict[int, dict[str, object]] = {}
    for index in expected_layers:
        want = base.encoder.layer[index].state_dict()
        got = {}
        for name, ref in want.items():
            key = f"encoder.layer.{index}.{name}"
            if key not in flat or tuple(flat[key].shape) != tuple(ref.shape):
                raise DialevalError(f"{path}: {key} missing or misshapen; the file does not match the encoder")
            got[name] = flat.pop(key)
        layers[index] = got
    if flat:
        raise DialevalError(f"{path}: unexpected tensor {sorted(flat)[0]}; the file does not match its config")
    return layers


# -- joint training ------------------------------------------------------------------------------------
def finetune(prep: Prepared, columns: Sequence[Sequence[str]], y: np.ndarray, combine: Callable,
             head_arrays: Mapping[str, np.ndarray], valid_idx: np.ndarray, *, epochs: int = 3, lr: float = 3e-5,
             batch_size: int = 32, dropout: float = 0.1, seed: int = 0, deadline: float | None = None,
             say: Callable[[str], None] | None = None) -> tuple[dict, dict[str, np.ndarray], dict]:
    """Fine-tune the layers above `prep.n_lower` with a head that starts from `head_arrays`.

    `columns` are the text inputs of each row (one column: the utterance; two: context and
    response); `combine` maps their pooled features (torch tensors, one per column) to the
    head's input. Returns (tuned layer tensors, head arrays, info)."""
    import torch

    torch_threads()
    started = time.monotonic()
    say = say or (lambda m: None)
    torch.manual_seed(seed)
    base, n_lower, states = prep.base, prep.n_lower, prep.states
    layers = prep.n_layers - n_lower
    index = [prep.rows(col) for col in columns]
    top = copy.deepcopy(base.encoder.layer[n_lower:])
    for p in top.parameters():
        p.requires_grad_(True)
    # Feature dimensions that were constant on the training texts have sd ~ 1e-6: once the
    # encoder moves, dividing by it blows the head's input up (measured on FM: held-out loss
    # 0.58 -> 1.05 in one epoch). Their standardised value is 0 at the start whatever the
    # divisor, so for them the floor changes nothing at the start. Dimensions that vary a little
    # (sd < SD_FLOOR; RM's products u*v have 133 such of 1,536) are damped by it: RM's held-out
    # loss at the start of stage 2 is 0.4710 against stage 1's 0.4688. The stored head keeps the
    # floored sd, so scoring computes the same function as training.
    sd_floored = np.maximum(np.asarray(head_arrays["sd"], dtype=np.float64), SD_FLOOR)
    mu = torch.tensor(head_arrays["mu"], dtype=torch.float32)
    sd = torch.tensor(sd_floored, dtype=torch.float32)
    head = torch.nn.Sequential(torch.nn.Dropout(dropout), torch.nn.Linear(mu.shape[0], head_arrays["w0"].shape[0]),
                               torch.nn.GELU(), torch.nn.Dropout(dropout), torch.nn.Linear(head_arrays["w0"].shape[0], 1))
    with torch.no_grad():
        for name, key in (("1.weight", "w0"), ("1.bias", "b0"), ("4.weight", "w1"), ("4.bias", "b1")):
            head.state_dict()[name].copy_(torch.tensor(head_arrays[key], dtype=torch.float32))
    opt = torch.optim.AdamW([{"params": top.parameters(), "lr": lr}, {"params": head.parameters(), "lr": lr * 10}],
                            weight_decay=0.01)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    # linear warm-up over the first tenth of the planned steps, then linear decay to zero (the
    # usual BERT fine-tuning schedule): the first updates do not jolt the pretrained layers
    planned = max(1, epochs * math.ceil(max(len(y) - len(valid_idx), 1) / batch_size))
    warm = max(1, planned // 10)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda step: min((step + 1) / warm, max(0.0, (planned - step) / max(planned - warm, 1))))
    yt = torch.tensor(np.asarray(y, dtype=np.float32))
    n = len(y)
    valid_idx = np.asarray(valid_idx, dtype=int)
    train_idx = np.setdiff1d(np.arange(n), valid_idx)
    rng = np.random.default_rng(seed)

    def forward(rows: np.ndarray):
        need = list(dict.fromkeys(int(index[c][r]) for c in range(len(columns)) for r in rows))
        where = {t: k for k, t in enumerate(need)}
        feats = top_features(base, top, [states[t] for t in need])
        cols = [feats[torch.tensor([where[int(index[c][r])] for r in rows])] for c in range(len(columns))]
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
                total += float(loss_fn(forward(rows), yt[rows])) * len(rows)
        return total / len(valid_idx)

    def snapshot():
        return ({k: v.detach().clone() for k, v in top.state_dict().items()},
                {k: v.detach().clone() for k, v in head.state_dict().items()})

    best_loss = held_out_loss()
    start_loss = best_loss
    best = snapshot()
    best_epoch = 0.0
    history = [round(best_loss, 5)]
    train_history: list[float] = []
    steps, stopped, epoch = 0, False, 0
    # batches of rows of similar token length (less padding), in a seeded random order
    length = np.array([max(len(states[int(index[c][r])]) for c in range(len(columns))) for r in range(n)])
    for epoch in range(1, epochs + 1):
        # the tuned layers run without dropout: dropout before max pooling makes the pooled
        # maxima larger in training than at scoring (a train/score mismatch); the head keeps its own
        top.eval()
        head.train()
        order = train_idx[np.argsort(length[train_idx] + rng.random(len(train_idx)) * 6, kind="stable")]
        batches = [order[s:s + batch_size] for s in range(0, len(order), batch_size)]
        rng.shuffle(batches)
        done, train_loss = 0, 0.0
        for rows in batches:
            opt.zero_grad()
            loss = loss_fn(forward(rows), yt[rows])
            train_loss += float(loss.detach())
            loss.backward()
            torch.nn.utils.clip_grad_norm_(list(top.parameters()) + list(head.parameters()), 1.0)
            opt.step()
            sched.step()
            steps += 1
            done += 1
            if deadline is not None and time.monotonic() > deadline:
                stopped = True
                break
        vloss = held_out_loss()
        history.append(round(vloss, 5))
        say(f"[mme] fine-tune epoch {epoch}{' (stopped by the budget)' if stopped else ''}: "
            f"train loss {train_loss / max(done, 1):.4f}, held-out loss {vloss:.4f} (start {start_loss:.4f}), "
            f"{time.monotonic() - started:.0f} s")
        train_history.append(round(train_loss / max(done, 1), 5))
        # keep the best held-out state; with no held-out rows (tiny sets), the latest
        if vloss < best_loss - 1e-5 or not len(valid_idx):
            best_loss, best, best_epoch = vloss, snapshot(), epoch - 1 + done / max(len(batches), 1)
        if stopped:
            break
    top.load_state_dict(best[0])
    head.load_state_dict(best[1])
    hs = head.state_dict()
    arrays = {"mu": np.asarray(head_arrays["mu"], dtype=np.float64), "sd": sd_floored,
              "w0": hs["1.weight"].numpy().astype(np.float64), "b0": hs["1.bias"].numpy().astype(np.float64),
              "w1": hs["4.weight"].numpy().astype(np.float64), "b1": hs["4.bias"].numpy().astype(np.float64)}
    info = {"finetune_layers": layers, "tuned_layer_indices": list(range(n_lower, prep.n_layers)),
            "finetune_epochs_run": epoch, "finetune_steps": steps, "finetune_best_epoch": round(best_epoch, 2),
            "finetune_stopped_by_deadline": stopped, "sd_floored_dims": int((np.asarray(head_arrays["sd"]) < SD_FLOOR).sum()), "finetune_valid_loss_start": round(start_loss, 5),
            "finetune_valid_loss_history": history, "finetune_train_loss_history": train_history, "valid_loss": round(best_loss, 5),
            "finetune_texts": len(prep.texts), "encode_seconds": round(prep.seconds, 1),
            "finetune_seconds": round(time.monotonic() - started, 1)}
    return layer_tensors(top, n_lower), arrays, info
