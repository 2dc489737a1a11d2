"""What the encoder-based sub-metrics (FM, RM, EM) share: an Estimator whose learned state is
one MLP head (`heads.py`) plus the normalisation range (`normalise.py`) and a record of how it
was trained (`info_`: sizes, seconds, held-out loss). Subclasses say which texts make a row and
how their features combine (`_fit_columns`), and how the training set is built (`fit`).

`encoder_mode` picks the variant: `frozen` (the default) trains the head over the frozen
MiniLM's features; `finetune` then trains the top `finetune_layers` MiniLM layers together with
the head (`finetune.py`) and stores them beside it as `encoder.safetensors`."""

from __future__ import annotations

import os
import time
from typing import Any, Callable, Literal, Mapping, Sequence

import numpy as np

from ...backbones.tuning import by_layer as _by_layer
from ...backbones.tuning import is_base
from ...backbones.tuning import tensors_id as _tensors_id
from ...models.estimator import Estimator
from .heads import head_forward, sigmoid, train_head
from .normalise import apply_range, fit_range

HEAD_KEYS = ("mu", "sd", "w0", "b0", "w1", "b1")


class HeadSubMetric(Estimator):
    """Base: a head over frozen features; `raw()` is the head's probability, `score()` the
    USL-H-normalised value in [0, 1]."""

    kind = ""

    def __init__(self, max_examples: int = 3000, hidden: int = 256, epochs: int = 30, seed: int = 0,
                 encoder: str | None = None, encoder_mode: Literal["frozen", "finetune"] = "frozen",
                 finetune_layers: int = 2, finetune_epochs: int = 3, finetune_lr: float = 3e-5):
        self.max_examples = max_examples
        self.hidden = hidden
        self.epochs = epochs
        self.seed = seed
        self.encoder = encoder
        self.encoder_mode = encoder_mode
        self.finetune_layers = finetune_layers
        self.finetune_epochs = finetune_epochs
        self.finetune_lr = finetune_lr

    # -- encoder ----------------------------------------------------------------------------
    # where a training reads the encoder (its --device, fp32): set by `fit(..., device=)`
    _train_device = "cpu"

    def _encoder(self, device: str | None = None, precision: str = "fp32"):
        """The frozen shared encoder, or this model's own tuned one once it is fitted, on
        `device` in `precision` (scoring passes its runtime; training leaves the device out and
        reads its own)."""
        device = device or self._train_device
        tuned = getattr(self, "_tuned_encoder", None)
        if tuned is not None:
            from ...backbones.tuning import on_backbone
            from .encoder import backbone

            return on_backbone(tuned, backbone(self.encoder, device, precision))
        from .encoder import shared_encoder

        return shared_encoder(self.encoder, device, precision)

    def _frozen_encoder(self):
        """The frozen shared encoder (word vectors for RM's negatives come from it in both modes)."""
        from .encoder import shared_encoder

        return shared_encoder(self.encoder, self._train_device)

    def _check_mode(self) -> None:
        from ...errors import DialevalError

        if self.encoder_mode not in ("frozen", "finetune"):
            raise DialevalError(f"encoder_mode {self.encoder_mode!r}: choose frozen or finetune")

    def _fit_columns(self, columns: Sequence[Sequence[str]], y: np.ndarray, combine: Callable,
                     started: float, info: dict[str, Any], deadline: float | None = None,
                     say: Callable[[str], None] | None = None, checkpoint=None) -> "HeadSubMetric":
        """Fit on rows made of one text per column (`combine` joins their features); with the
        encoder tuned, `checkpoint` (models.resume) saves and continues the tuning loop."""
        self._check_mode()
        self._tuned_encoder = None
        if self.encoder_mode == "frozen":
            enc = self._encoder()
            x = combine(*[enc.features(list(c)) for c in columns])
            return self._fit_head(x, y, started, {**info, "encoder_mode": "frozen"}, deadline)
        from .finetune import Prepared, finetune

        prep = Prepared([t for c in columns for t in c], self.finetune_layers, self.encoder, device=self._train_device)
        x = combine(*[prep.features(c) for c in columns])
        self._fit_head(x, y, started, {**info, "encoder_mode": "finetune"}, deadline)
        frozen_info = {k: self.info_[k] for k in ("valid_loss", "valid_accuracy", "epochs") if k in self.info_}
        tensors, arrays, ft_info = finetune(prep, columns, y, combine, self.head_, self._valid_idx,
                                            epochs=self.finetune_epochs, lr=self.finetune_lr, seed=self.seed,
                                            deadline=deadline, say=say, checkpoint=checkpoint)
        self.head_ = arrays
        self.tuned_layers_ = tensors
        self.tuned_indices_ = list(ft_info["tuned_layer_indices"])
        self.weights_id_ = _tensors_id(tensors)
        self._tuned_encoder = self._tuned_or_shared(_by_layer(tensors))
        # the normalisation range and accuracy from the tuned model's scores on the held-out rows
        valid = self._valid_idx
        enc = self._encoder()
        xv = combine(*[enc.features([c[i] for i in valid]) for c in columns])
        held = sigmoid(head_forward(arrays, xv))
        self.norm_low_, self.norm_high_ = fit_range(held)
        self.info_.update({**ft_info, "frozen_head": frozen_info,
                           "encoder": f"{enc.fingerprint().split('+')[0]}+top{self.finetune_layers}@{self.weights_id_}",
                           "kept_base_layers": self._tuned_encoder is None,
                           "valid_accuracy": round(float(((held >= 0.5) == (np.asarray(y)[valid] >= 0.5)).mean()), 4),
                           "train_seconds": round(time.monotonic() - started, 1)})
        return self

    # -- shared training tail ---------------------------------------------------------------
    def _fit_head(self, x: np.ndarray, y: np.ndarray, started: float, info: dict[str, Any],
                  deadline: float | None = None) -> "HeadSubMetric":
        arrays, head_info = train_head(x, y, hidden=self.hidden, epochs=self.epochs, seed=self.seed,
                                       deadline=deadline)
        valid_idx = head_info.pop("_valid_idx")
        self._valid_idx = valid_idx
        self.head_ = arrays
        held = sigmoid(head_forward(arrays, x[valid_idx])) if len(valid_idx) else sigmoid(head_forward(arrays, x))
        self.norm_low_, self.norm_high_ = fit_range(held)
        self.info_ = {**info, **head_info, "examples": int(len(y)), "positives": float(np.sum(y)),
                      "encoder": self._encoder().fingerprint(),
                      "norm_from": "held-out training rows", "train_seconds": round(time.monotonic() - started, 1)}
        return self

    def raw_from_features(self, x: np.ndarray) -> np.ndarray:
        self.check_fitted()
        return sigmoid(head_forward(self.head_, x))

    def normalise(self, raw: np.ndarray) -> np.ndarray:
        return apply_range(raw, self.norm_low_, self.norm_high_)

    # -- persistence ------------------------------------------------------------------------
    def signature_options(self) -> list[tuple[str, Any]]:
        """What a metric reading this sub-metric adds to its signature: nothing for the frozen
        default (its signature is as it always was), the mode otherwise (the tuned weights' hash is
        in the `encoder` entry, `BASE+topN@HASH`)."""
        if self.encoder_mode == "frozen":
            return []
        return [("encoder_mode", f"finetune-top{self.finetune_layers}")]

    def _state(self):
        values = {"norm_low_": self.norm_low_, "norm_high_": self.norm_high_, "info_": self.info_}
        if self.encoder_mode == "finetune":
            values.update({"tuned_indices_": self.tuned_indices_, "weights_id_": self.weights_id_})
        arrays = {f"head_{k}": np.asarray(v) for k, v in self.head_.items()}
        return values, arrays

    def _write_files(self, staging_dir: str) -> None:
        if self.encoder_mode != "finetune":
            return
        from .finetune import WEIGHTS_FILE, save_layers

        save_layers(self.tuned_layers_, os.path.join(staging_dir, WEIGHTS_FILE))

    def _set_state(self, values: Mapping[str, Any], arrays: Mapping[str, np.ndarray], directory: str) -> None:
        from ...errors import DialevalError

        missing = [k for k in HEAD_KEYS if f"head_{k}" not in arrays]
        if missing:
            raise DialevalError(f"{directory}: arrays.npz lacks head_{missing[0]}; not a {self.kind} artifact")
        self.head_ = {k: arrays[f"head_{k}"] for k in HEAD_KEYS}
        self.norm_low_ = float(values["norm_low_"])
        self.norm_high_ = float(values["norm_high_"])
        self.info_ = dict(values.get("info_") or {})
        self._tuned_encoder = None
        if self.encoder_mode == "finetune":
            from .finetune import WEIGHTS_FILE, load_layers

            if "tuned_indices_" not in values or "weights_id_" not in values:
                raise DialevalError(f"{directory}/config.json: a fine-tuned {self.kind} without its tuned layer record")
            self.tuned_indices_ = [int(i) for i in values["tuned_indices_"]]
            self.weights_id_ = str(values["weights_id_"])
            layers = load_layers(os.path.join(directory, WEIGHTS_FILE), self.tuned_indices_, self.encoder)
            self.tuned_layers_ = {f"encoder.layer.{i}.{k}": v for i, d in layers.items() for k, v in d.items()}
            if _tensors_id(self.tuned_layers_) != self.weights_id_:
                raise DialevalError(f"{directory}/{WEIGHTS_FILE}: its tensors differ from the ones recorded at training")
            self._tuned_encoder = self._tuned_or_shared(layers)

    def _tuned_or_shared(self, layers: Mapping[int, Mapping[str, Any]]):
        """The tuned encoder; or None (the shared frozen one) when the kept layers are the base
        model's own, which happens when no fine-tuned epoch beat the head-only start on the
        held-out rows: the features are then the frozen ones, bit for bit, and sharing the
        frozen encoder saves a whole encoding pass."""
        from .encoder import backbone
        from .finetune import TunedEncoder

        if is_base(backbone(self.encoder).model, layers, self.weights_id_):
            return None
        return TunedEncoder(layers, self.encoder, self.weights_id_)
