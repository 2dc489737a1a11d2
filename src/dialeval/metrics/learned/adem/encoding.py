"""ADEM's vectors: which encoder a model reads texts with, and the vectors it gives.

A model is tied to the encoder it was trained with: its fingerprint is recorded at training and
checked before any text is encoded, since a changed encoder would feed M and N vectors from
another space without an error. After stage 2 that encoder is MiniLM with the model's own
tuned top layers, stored beside the model (`encoder.safetensors`); a hierarchical encoder is
copied into the model's folder (`encoder/`), so a model moves as one folder. What a fitted
model knows of its encoder is one object, `EncoderState`, apart from the bilinear head, so that
the head and its training see only arrays.
"""

from __future__ import annotations

import copy
import os
from typing import Any, Mapping, Sequence

import numpy as np

from ....errors import DialevalError

BUNDLED_ENCODER = "encoder"   # subfolder of a saved model holding its hred encoder


def check_runtime(encoder: str, device: str = "cpu", precision: str = "fp32") -> None:
    """Refuse, in one line, a precision this model's encoder cannot run with (`--adem-precision`):
    a hierarchical GRU encoder (small, trained here) runs in fp32 only, on any device. MiniLM,
    frozen or with tuned top layers, takes every device and precision."""
    if str(encoder).startswith("hred:") and precision != "fp32":
        raise DialevalError(f"--adem-precision {precision}: this ADEM reads a hierarchical GRU encoder, "
                            "which runs in fp32 only; use --adem-precision fp32")


class EncoderState:
    """What a fitted model knows of its encoder: the fingerprint of the one it was trained with
    (None before it is recorded) and, after stage 2, its tuned top layers (`encoder.layer.{i}.
    {name}` -> tensor), their indices and content hash. Replaced, never edited (`with_layers`,
    `with_fingerprint`), so models that share one (a copy, ADEM at initialisation) stay apart."""

    def __init__(self, fingerprint: str | None = None, layers: Mapping[str, Any] | None = None,
                 indices: list[int] | None = None, weights_id: str | None = None):
        self.fingerprint = fingerprint
        self.layers, self.indices, self.weights_id = layers, indices, weights_id
        self._built = None        # (key, TunedMiniLM): see `tuned_encoder`

    @property
    def tuned(self) -> bool:
        return self.layers is not None

    @classmethod
    def with_layers(cls, tensors: Mapping[str, Any] | None, spec: str, context_turns: int) -> "EncoderState":
        """The state of a model that reads with `tensors` as its top layers (None: the frozen
        encoder), its fingerprint the one that encoder gives."""
        from .encoders import make_encoder

        state = cls()
        if tensors is not None:
            from .finetune import tensors_id

            state.layers = dict(tensors)
            state.indices = sorted({int(k.split(".")[2]) for k in tensors})
            state.weights_id = tensors_id(state.layers)
        frozen = make_encoder(spec, int(context_turns))
        state.fingerprint = (state.tuned_encoder(frozen, context_turns) if state.tuned else frozen).fingerprint()
        return state

    def with_fingerprint(self, fingerprint: str) -> "EncoderState":
        other = copy.copy(self)
        other.fingerprint = fingerprint
        return other

    def encoder(self, spec: str, context_turns: int, device: str = "cpu", precision: str = "fp32"):
        """The encoder a model with this state scores with, refused when it is not the one it
        was trained with. `device` and `precision` (the metric's `--adem-device`,
        `--adem-precision`) are those of the pretrained MiniLM backbone; see `check_runtime` for
        what else is refused."""
        from .encoders import make_encoder

        check_runtime(spec, device, precision)
        enc = make_encoder(spec, int(context_turns), device, precision)
        if self.tuned:
            enc = self.tuned_encoder(enc, context_turns)
        if self.fingerprint is not None and enc.fingerprint() != self.fingerprint:
            raise DialevalError(f"ADEM was trained with encoder {self.fingerprint}, but {spec} is now "
                                f"{enc.fingerprint()}; retrain ADEM or restore its encoder")
        return enc

    def tuned_encoder(self, frozen, context_turns: int):
        """The MiniLM with the tuned top layers over `frozen`'s backbone (its device and
        precision), built once per state (it holds a copy of the top layers) and kept with the
        layers' content hash, the base folder and the context turns, so it is never read
        through other ones."""
        from .finetune import TunedMiniLM, by_layer

        key = (self.weights_id, frozen.model_dir, int(context_turns))
        if self._built is None or self._built[0] != key:
            self._built = (key, TunedMiniLM(by_layer(self.layers), frozen.model_dir, frozen.fingerprint(),
                                            self.weights_id, int(context_turns)))
        return self._built[1].on(frozen.backbone())

    # -- the folder --------------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        """config.json's values, under the names ADEM folders have always used; the layers'
        tensors go to `encoder.safetensors` (`write_files`)."""
        values: dict[str, Any] = {}
        if self.fingerprint is not None:
            values["encoder_fingerprint_"] = self.fingerprint
        if self.tuned:
            values["tuned_indices_"] = self.indices
            values["weights_id_"] = self.weights_id
        return values

    def write_files(self, spec: str, staging_dir: str) -> None:
        """A VHRED encoder travels inside the ADEM folder (`encoder/`), so a model can be moved
        or shared as one folder; its files are in ADEM's manifest too. Fine-tuned MiniLM layers
        are written to `encoder.safetensors` (dialeval.backbones' layout: the base model's tensor
        names)."""
        from .encoders import parse_encoder_spec

        kind, path = parse_encoder_spec(spec)
        if self.tuned:
            from ....backbones.tuning import WEIGHTS_FILE, save_layers

            save_layers(self.layers, os.path.join(staging_dir, WEIGHTS_FILE),
                        content="dialeval adem tuned MiniLM layers")
            return
        if kind != "hred":
            return
        import shutil

        from ....models.store import files_under

        for rel in [*files_under(path), "manifest.json"]:
            target = os.path.join(staging_dir, BUNDLED_ENCODER, rel)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            shutil.copyfile(os.path.join(path, rel), target)

    @classmethod
    def read(cls, spec: str, context_turns: int, values: Mapping[str, Any], directory: str) -> "EncoderState":
        """The loading side of `state` and `write_files` (`spec` as the folder records it)."""
        state = cls(values.get("encoder_fingerprint_"))
        if "weights_id_" in values:
            state.indices = values.get("tuned_indices_")
            state.weights_id = values["weights_id_"]
            state.layers = load_tuned_layers(spec, context_turns, values, directory)
        return state


def bundled_spec(spec: str, directory: str) -> str:
    """The encoder of a loaded model: the hierarchical encoder copied into its folder, not the
    path it was trained from (which may be gone)."""
    bundled = os.path.join(directory, BUNDLED_ENCODER)
    if spec.startswith("hred:") and os.path.isdir(bundled):
        return f"hred:{bundled}"
    return spec


def encode(enc, contexts: Sequence[Sequence[str]], references: Sequence[Sequence[str]],
           responses: Sequence[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Full-size vectors: contexts, mean reference vectors (NaN rows without references),
    responses. The mean of the references' vectors, because the score is linear in r and the
    PCA affine: it scores as the mean of the single-reference scores."""
    C = enc.encode_contexts(contexts)
    H = enc.encode_texts(list(responses))
    flat = [r for rs in references for r in rs]
    R = np.full_like(H, np.nan)
    if flat:
        V = enc.encode_texts(flat)
        owner = np.repeat(np.arange(len(references)), [len(rs) for rs in references])
        sums = np.zeros_like(H)
        np.add.at(sums, owner, V)
        counts = np.bincount(owner, minlength=len(references))
        has = counts > 0
        R[has] = sums[has] / counts[has, None]
    return C, R, H


def load_tuned_layers(spec: str, context_turns: int, values: Mapping[str, Any], directory: str) -> dict:
    """Read `encoder.safetensors` (already checked by the manifest) and check that its
    tensors are the ones recorded at training (the content hash in config.json)."""
    from ....backbones.tuning import WEIGHTS_FILE, load_layers, tensors_id
    from .encoders import make_encoder
    from .finetune import backbone

    path = os.path.join(directory, WEIGHTS_FILE)
    if not os.path.exists(path):
        raise DialevalError(f"{directory}: a fine-tuned ADEM without its {WEIGHTS_FILE}")
    indices = [int(i) for i in values.get("tuned_indices_") or []]
    base = backbone(make_encoder(spec, int(context_turns)).model_dir).model
    layers = load_layers(path, indices, base, what="a fine-tuned ADEM model")
    tensors = {f"encoder.layer.{i}.{k}": v for i, d in layers.items() for k, v in d.items()}
    if tensors_id(tensors) != str(values["weights_id_"]):
        raise DialevalError(f"{directory}/{WEIGHTS_FILE}: its tensors differ from the ones recorded at training")
    return tensors
