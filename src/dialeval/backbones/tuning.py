"""Tuning the top N layers of a backbone under a caller's loss, and storing the tuned layers.

Why the top N and not the whole model: the lower layers' output for each training text is
computed once and kept (`LowerStates`), so an epoch costs a forward and backward pass through N
layers only (with N = 2 of MiniLM's 6, about a third of a full pass), and the artifact stores
only the N changed layers beside a reference to the base model every install has.

The loop (`tune_top_layers`) is the one MME and ADEM share: AdamW (the tuned layers at their
rate with weight decay 0.01, plus whatever parameter groups the caller's loss adds), a linear
warm-up over the first tenth of the planned steps then linear decay to zero (the usual BERT
fine-tuning schedule: the first updates do not jolt the pretrained layers), gradient norm
clipped at 1 (that step is `models.training.Optimiser`, the one the LM trainers take), checks of a caller's validation score at chosen points, and the best state kept,
the starting state included, so tuning never ends worse than its start on validation.

Storage: one safetensors file of the tuned layers under the base model's tensor names
(`encoder.layer.{i}.{name}`), read back only if it holds exactly the expected layers with the
base model's shapes; `tensors_id` is the content hash a caller records at training and checks
at loading (the manifest's sha256 catches a damaged file, the recorded hash a substituted one).
"""

from __future__ import annotations

import copy
import hashlib
import os
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ..cache import memo
from ..errors import DialevalError
from . import batching
from .batching import length_batches
from .layers import embed, encoder_layers, pad_states, run_layers
from .pooling import normalize as l2_normalize, pool
from .runtime import apply_thread_policy

WEIGHTS_FILE = "encoder.safetensors"


def _ids(backbone, texts: Sequence[str], max_length: int, blank: str | None) -> list[list[int]]:
    inputs = list(texts) if blank is None else [t if t.strip() else blank for t in texts]
    return backbone.tokenizer(inputs, truncation=True, max_length=max_length)["input_ids"]


# -- the lower layers, once ------------------------------------------------------------------------
class LowerStates:
    """Each distinct text's token states below the tuned layers, computed once (texts of one
    token length per batch, so no padding). With `top_pooling`, also each text's pooled output
    of the untouched top layers (`features`: the frozen model's vectors, up to float summation
    order)."""

    def __init__(self, backbone, texts: Sequence[str], layers: int, *, max_length: int | None = None,
                 blank: str | None = None, batch_size: int = 64, top_pooling: str | None = None,
                 layer_range_error: str | None = None):
        import torch

        apply_thread_policy()
        started = time.monotonic()
        self.backbone = backbone
        self.tokenizer, self.base = backbone.tokenizer, backbone.model
        self.n_layers = len(encoder_layers(self.base))
        if not 1 <= layers <= self.n_layers:
            raise DialevalError(layer_range_error or f"finetune_layers must be 1..{self.n_layers}, not {layers}")
        self.n_lower = self.n_layers - layers
        self.texts = list(dict.fromkeys(texts))
        self.position = {t: i for i, t in enumerate(self.texts)}
        ids = _ids(backbone, self.texts, int(max_length or backbone.max_length), blank)
        self.states: list = [None] * len(self.texts)
        self.frozen = None
        all_layers = encoder_layers(self.base)
        self.device = backbone.device        # the states stay there: the tuned layers train there
        with torch.inference_mode():
            for rows in length_batches([len(x) for x in ids], batch_size):
                inp = torch.tensor([ids[i] for i in rows], device=self.device)
                att = torch.ones_like(inp)
                hidden = run_layers(self.base, all_layers[:self.n_lower], embed(self.base, inp), att)
                if top_pooling is not None:
                    feats = pool(run_layers(self.base, all_layers[self.n_lower:], hidden, att), att,
                                 top_pooling).cpu().numpy()
                    if self.frozen is None:
                        self.frozen = np.zeros((len(self.texts), feats.shape[1]), dtype=np.float32)
                for r, i in enumerate(rows):
                    self.states[i] = hidden[r].clone()
                    if top_pooling is not None:
                        self.frozen[i] = feats[r]
        self.seconds = time.monotonic() - started

    def rows(self, column: Sequence[str]) -> np.ndarray:
        return np.array([self.position[t] for t in column], dtype=int)

    def features(self, column: Sequence[str]) -> np.ndarray:
        return self.frozen[self.rows(column)]

    def trainable_top(self):
        """A trainable copy of the top layers (the shared base model is never modified)."""
        top = copy.deepcopy(encoder_layers(self.base)[self.n_lower:])
        for p in top.parameters():
            p.requires_grad_(True)
        return top

    def top_output(self, top, positions: Sequence[int], pooling: str = "mean", normalize: bool = False):
        """Pooled vectors (torch) of the texts at `positions` through the `top` layers."""
        hidden, att = pad_states([self.states[p] for p in positions])
        out = pool(run_layers(self.base, top, hidden, att), att, pooling)
        return l2_normalize(out) if normalize else out


# -- the tuned model at scoring time ------------------------------------------------------------------
def scoring_layers(base, layers: Mapping[int, Mapping[str, Any]]):
    """Copies of `base`'s layers at the indices of `layers` holding their tuned weights, in
    evaluation mode and without gradients."""
    import torch

    top = torch.nn.ModuleList()
    for index in sorted(layers):
        layer = copy.deepcopy(encoder_layers(base)[index])
        layer.load_state_dict(dict(layers[index]))
        layer.eval()
        for p in layer.parameters():
            p.requires_grad_(False)
        top.append(layer)
    return top


class TunedBackbone:
    """A backbone with its top layers replaced by tuned ones: `encode(texts)` as the backbone's
    own pooled vectors (one token length per batch, batching.py `pass_rows`; each text run once),
    and `fingerprint()` naming base, tuned layer count and their content hash."""

    def __init__(self, backbone, layers: Mapping[int, Mapping[str, Any]], *, weights_id: str, base_name: str,
                 pooling: str = "mean", normalize: bool = False, max_length: int | None = None,
                 blank: str | None = None, batch_size: int = 16):
        self.backbone, self.base, self.tokenizer = backbone, backbone.model, backbone.tokenizer
        n_layers = len(encoder_layers(self.base))
        self.n_lower = min(layers) if layers else n_layers
        if sorted(layers) != list(range(self.n_lower, n_layers)):
            raise DialevalError(f"tuned layers {sorted(layers)} are not the top layers of a {n_layers}-layer model")
        self.top = scoring_layers(self.base, layers)
        self.weights_id, self.base_name = weights_id, base_name
        self.pooling, self.normalize, self.blank = pooling, normalize, blank
        self.max_length = int(max_length or backbone.max_length)
        self.batch_size = max(1, int(batch_size))
        self.cache = memo(name="tuned vectors")

    def fingerprint(self) -> str:
        return f"{self.base_name}+top{len(self.top)}@{self.weights_id}"

    def tuned_state(self) -> dict[int, dict[str, Any]]:
        """The tuned layers' tensors by layer index, as `scoring_layers` takes them."""
        return {self.n_lower + k: layer.state_dict() for k, layer in enumerate(self.top)}

    def moved(self, backbone) -> "TunedBackbone":
        """This tuned model over another load of the same base (`--adem-device`/`--mme-device`,
        `--adem-precision`/`--mme-precision`): the tuned layers are copied into that backbone's
        layers, so they take its device and dtype, and the memory of vectors starts empty."""
        other = copy.copy(self)
        other.backbone, other.base, other.tokenizer = backbone, backbone.model, backbone.tokenizer
        other.top = scoring_layers(backbone.model, self.tuned_state())
        other.cache = memo(name="tuned vectors")
        return other

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        import torch

        known = {t: self.cache.get(t) for t in dict.fromkeys(texts)}
        missing = [t for t, v in known.items() if v is None]
        if missing:
            apply_thread_policy()
            ids = _ids(self.backbone, missing, self.max_length, self.blank)
            lower = encoder_layers(self.base)[:self.n_lower]
            device = self.backbone.device
            with torch.inference_mode():
                for rows in length_batches([len(x) for x in ids], self.batch_size):
                    full = batching.pass_rows(rows, len(ids[rows[0]]), self.batch_size, device)
                    inp = torch.tensor([ids[i] for i in full], device=device)
                    att = torch.ones_like(inp)
                    hidden = run_layers(self.base, lower, embed(self.base, inp), att)
                    out = pool(run_layers(self.base, self.top, hidden, att).float(), att, self.pooling)
                    if self.normalize:
                        out = l2_normalize(out)
                    vecs = out.cpu().numpy().astype(np.float32)
                    for r, i in enumerate(rows):
                        known[missing[i]] = self.cache.put(missing[i], vecs[r])
        if not texts:
            dim = self.base.config.hidden_size * (2 if self.pooling == "mean+max" else 1)
            return np.zeros((0, dim), dtype=np.float32)
        return np.stack([known[t] for t in texts])


def on_backbone(tuned, backbone):
    """`tuned` (a tuned model built over the process's fp32 cpu backbone: `TunedBackbone`, MME's
    `CrossScorer`) over `backbone`, another load of its base on a device or in a precision a
    user asked for; made once by `tuned.moved(backbone)` and kept beside that backbone."""
    if backbone is tuned.backbone:
        return tuned
    return backbone.attach(("tuned", type(tuned).__name__, tuned.weights_id), lambda: tuned.moved(backbone))


# -- the training loop --------------------------------------------------------------------------------
@dataclass
class TuneResult:
    best_score: float
    best_state: Any
    best_step: int
    best_position: float            # epochs (fractional) at the kept state; 0 for the start
    steps: int
    epochs_run: int
    stopped: bool                   # by the deadline
    steps_per_epoch: int
    checks: list = field(default_factory=list)          # (epoch position, score) per check
    train_loss: list = field(default_factory=list)      # per epoch: summed batch losses, batches done


def linear_schedule(planned: int) -> Callable[[int], float]:
    """Warm-up over the first tenth of `planned` steps, then linear decay to zero."""
    warm = max(1, planned // 10)
    return lambda step: min((step + 1) / warm, max(0.0, (planned - step) / max(planned - warm, 1)))


def tune_top_layers(top, loss: Callable[[Any], Any], epoch_batches: Callable[[int], list], *,
                    evaluate: Callable[[], float], better: Callable[[float, float], bool],
                    snapshot: Callable[[], Any], start: tuple[float, Any], epochs: int, lr: float,
                    planned_steps: int, extra_groups: Sequence[Mapping[str, Any]] = (),
                    check_after: Callable[[int], set] = lambda n: {n}, before_epoch: Callable[[], None] | None = None,
                    deadline: float | None = None,
                    on_check: Callable[[int, int, int, float, float, "TuneResult"], None] | None = None,
                    checkpoint=None, say: Callable[[str], None] | None = None, label: str = "tuning") -> TuneResult:
    """Train `top` (and the caller's `extra_groups`, AdamW parameter groups such as a head or a
    bilinear form) to lower `loss(rows)`.

    epoch_batches(epoch) gives that epoch's batches of row indices (the caller's order and
    randomness); evaluate() the validation score, checked after the batches `check_after(n)`
    names (1-based, n batches in the epoch) and whenever the deadline stops the run; a checked
    state replaces the best when better(score, best_score). `start` is the (score, state) to
    beat; snapshot() captures a state. The caller restores `best_state` (None: the start won).

    `checkpoint` (a `models.resume.TrainingCheckpoint` scope) saves the loop every few minutes
    and continues a saved one: the weights of `top` and of the extra groups, the optimiser and
    schedule, the random states, the epoch's batches and the result so far. A caller's own
    randomness in `before_epoch` / `epoch_batches` is replayed by calling them again for the
    epochs already begun, so `loss`, `evaluate` and `on_check` must draw only from the global
    generators (which are saved), and a caller's record of the checks is best read from
    `result.checks` (a resumed run calls `on_check` only for the checks it makes itself).

    `say`: between the checks, a line at most every 15 s (`progress.Heartbeat`) with `label`, the
    batch and the mean training loss so far, so that a long epoch on a CPU is never silent."""
    from ..models.training import Optimiser

    apply_thread_policy()
    top_params = list(top.parameters())
    extra = [dict(g) for g in extra_groups]
    # weight decay 0.01 unless a caller's group says otherwise (a head or a penalised form); a
    # group without its own rate keeps AdamW's default
    optimiser = Optimiser([{"params": top_params, "lr": lr}] + extra, lr=None, weight_decay=0.01,
                          schedule=linear_schedule(max(1, planned_steps)),
                          clip=top_params + [p for g in extra for p in g["params"]])
    result = TuneResult(best_score=start[0], best_state=start[1], best_step=0, best_position=0.0, steps=0,
                        epochs_run=0, stopped=False, steps_per_epoch=0)
    params = [p for g in optimiser.optimizer.param_groups for p in g["params"]]
    loop = checkpoint.loop() if checkpoint is not None else None
    saved = loop.restore() if loop is not None else None
    if saved is not None:
        # the caller's per-epoch randomness, advanced as the first run advanced it; the global
        # generators it may also have drawn from are set back with the rest below
        for e in range(1, saved["epoch"] + 1):
            if before_epoch is not None:
                before_epoch()
            epoch_batches(e)
        top.load_state_dict(saved["top"])
        _set_flags(top, saved["training"])
        for p, value in zip(params, saved["params"]):
            p.data.copy_(value)
        optimiser.optimizer.load_state_dict(saved["optimizer"])
        optimiser.scheduler.load_state_dict(saved["scheduler"])
        result = saved["result"]
        from ..models.resume import set_rng_state

        set_rng_state(saved["rng"])
    first = saved["epoch"] if saved is not None else 1
    epoch, batches, done, total = first, [], 0, 0.0
    started = time.monotonic()
    beat = None
    if say is not None:
        from ..progress import Heartbeat

        beat = Heartbeat(say)

    def state(epoch, batches, k, total):
        return {"epoch": epoch, "batches": batches, "k": k, "total": total, "steps": result.steps,
                "top": top.state_dict(), "training": [m.training for m in top.modules()],
                "params": [p.detach().clone() for p in params], "optimizer": optimiser.optimizer.state_dict(),
                "scheduler": optimiser.scheduler.state_dict(), "result": result}

    for epoch in range(first, epochs + 1):
        if saved is not None and epoch == saved["epoch"]:
            batches, skip, total, done = saved["batches"], saved["k"], saved["total"], saved["k"]
            if saved["done"] or skip == len(batches):
                if saved["done"]:
                    break
                result.train_loss.append((total, done))
                continue
        else:
            result.epochs_run = epoch
            if before_epoch is not None:
                before_epoch()
            batches = epoch_batches(epoch)
            skip, total, done = 0, 0.0, 0
        result.steps_per_epoch = len(batches)
        checks = check_after(len(batches))
        for k, rows in enumerate(batches, start=1):
            if k <= skip:
                continue
            value = loss(rows)
            total += float(value.detach())
            optimiser.step(value)
            result.steps += 1
            done = k
            result.stopped = deadline is not None and time.monotonic() > deadline
            if beat is not None:
                beat(lambda: f"{label}: epoch {epoch} batch {k}/{len(batches)}: train loss "
                             f"{total / max(k, 1):.4f} ({time.monotonic() - started:.0f} s)")
            if k in checks or result.stopped:
                if beat is not None:
                    beat.reset()
                score = evaluate()
                position = epoch - 1 + k / max(len(batches), 1)
                result.checks.append((position, score))
                if better(score, result.best_score):
                    result.best_score, result.best_state = score, snapshot()
                    result.best_step, result.best_position = result.steps, position
                if on_check is not None:
                    on_check(epoch, k, len(batches), score, total, result)
            if result.stopped:
                break
            if loop is not None:
                loop.maybe_save(lambda: state(epoch, batches, k, total))
        result.train_loss.append((total, done))
        if result.stopped:
            break
    if loop is not None and not (saved is not None and saved["done"]):
        loop.save(state(epoch, batches, done, total), done=True)
    return result


def _set_flags(module, flags) -> None:
    """Training/evaluation mode of every submodule, as saved."""
    for m, flag in zip(module.modules(), flags):
        m.training = flag


# -- storage --------------------------------------------------------------------------------------
def layer_tensors(top, n_lower: int) -> dict[str, Any]:
    """Flat safetensors dict `encoder.layer.{i}.{name}` of the tuned layers (the base model's names)."""
    return {f"encoder.layer.{n_lower + k}.{name}": t.detach().cpu().contiguous().clone()
            for k, layer in enumerate(top) for name, t in layer.state_dict().items()}


def by_layer(tensors: Mapping[str, Any]) -> dict[int, dict[str, Any]]:
    out: dict[int, dict[str, Any]] = {}
    for key, value in tensors.items():
        _, _, index, name = key.split(".", 3)
        out.setdefault(int(index), {})[name] = value
    return out


def tensors_id(tensors: Mapping[str, Any]) -> str:
    """A content hash of the tuned tensors (names, shapes, float32 bytes), independent of the
    file's layout: the identity that goes into a metric's signature."""
    digest = hashlib.sha256()
    for name in sorted(tensors):
        arr = tensors[name].detach().cpu().numpy().astype(np.float32)
        digest.update(f"{name}:{arr.shape}".encode())
        digest.update(arr.tobytes())
    return digest.hexdigest()[:12]


def save_layers(tensors: Mapping[str, Any], path: str, content: str = "dialeval tuned backbone layers") -> str:
    """Write the tensors to `path` (safetensors); returns the file's short sha256."""
    from safetensors.torch import save_file

    save_file(dict(tensors), path, metadata={"format": "pt", "content": content})
    sort_metadata(path)
    with open(path, "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest()[:12]


def sort_metadata(path: str) -> None:
    """Put the `__metadata__` keys of a safetensors file's header in sorted order, in place.

    safetensors writes its metadata from a Rust hash map, whose order changes from one process
    to the next: two keys made the same weights two different files half the time, and a
    rebuild then failed its byte check. Reordering keys of the same text keeps the header's
    length, so no tensor moves; a header that does not read back to its own bytes is left alone."""
    import json
    import struct

    with open(path, "r+b") as handle:
        size = struct.unpack("<Q", handle.read(8))[0]
        raw = handle.read(size)
        text = raw.decode("utf-8").rstrip(" ")
        header = json.loads(text)
        meta = header.get("__metadata__")
        if not meta or list(meta) == sorted(meta):
            return
        if json.dumps(header, separators=(",", ":"), ensure_ascii=False) != text:
            return
        header["__metadata__"] = {k: meta[k] for k in sorted(meta)}
        fixed = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        handle.seek(8)
        handle.write(fixed.ljust(size, b" "))


def load_layers(path: str, expected_layers: Sequence[int], base, what: str = "a tuned backbone"
                ) -> dict[int, dict[str, Any]]:
    """Tensors of `path` by layer index, checked against `base`'s own layer shapes: exactly the
    expected layers, every parameter, nothing else. `what` names the artifact in errors."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    if not os.path.exists(path):
        raise DialevalError(f"{path}: missing; not {what}")
    try:
        flat = load_file(path)
    except (SafetensorError, OSError, ValueError) as exc:
        raise DialevalError(f"{path}: unreadable safetensors ({exc}); {what} is damaged") from None
    model_layers = encoder_layers(base)
    layers: dict[int, dict[str, Any]] = {}
    for index in expected_layers:
        want = model_layers[index].state_dict()
        got = {}
        for name, ref in want.items():
            key = f"encoder.layer.{index}.{name}"
            if key not in flat or tuple(flat[key].shape) != tuple(ref.shape):
                raise DialevalError(f"{path}: {key} missing or misshapen; the file does not match the "
                                    f"base model of {what}")
            got[name] = flat.pop(key)
        layers[index] = got
    if flat:
        raise DialevalError(f"{path}: unexpected tensor {sorted(flat)[0]}; the file does not match {what}'s config")
    return layers


def is_base(base, layers: Mapping[int, Mapping[str, Any]], weights_id: str) -> bool:
    """Whether the tuned layers are the base model's own (no tuned state beat the start)."""
    return tensors_id({f"encoder.layer.{i}.{k}": v for i in layers
                       for k, v in encoder_layers(base)[i].state_dict().items()}) == weights_id
