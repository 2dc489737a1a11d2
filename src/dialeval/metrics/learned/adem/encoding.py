"""ADEM's vectors: which encoder a model reads texts with, and the vectors it gives.

A model is tied to the encoder it was trained with: its fingerprint is recorded at training and
checked before any text is encoded, since a changed encoder would feed M and N vectors from
another space without an error. After stage 2 that encoder is MiniLM with the model's own
tuned top layers, stored beside the model (`encoder.safetensors`); a hierarchical encoder is
copied into the model's folder (`encoder/`), so a model moves as one folder. Kept apart from
the estimator so that the bilinear model and its training see only arrays.
"""

from __future__ import annotations

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


def model_encoder(model, device: str = "cpu", precision: str = "fp32"):
    """The encoder `model` scores with, refused when it is not the one it was trained with.
    `device` and `precision` (the metric's `--adem-device`, `--adem-precision`) are those of the
    pretrained MiniLM backbone; see `check_runtime` for what else is refused."""
    from .encoders import make_encoder

    check_runtime(model.encoder, device, precision)
    enc = make_encoder(model.encoder, int(model.context_turns), device, precision)
    if getattr(model, "tuned_layers_", None) is not None:
        enc = tuned_encoder(model, enc)
    expected = getattr(model, "encoder_fingerprint_", None)
    if expected is not None and enc.fingerprint() != expected:
        raise DialevalError(f"ADEM was trained with encoder {expected}, but {model.encoder} is now "
                            f"{enc.fingerprint()}; retrain ADEM or restore its encoder")
    return enc


def tuned_encoder(model, frozen):
    """The MiniLM with `model`'s tuned top layers over `frozen`'s backbone (its device and
    precision), built once per model object and set of layers (it holds a copy of the top
    layers). The one place that decides whether the built one is still `model`'s: it is kept
    with the layers' content hash, so new layers (a fit, a load) are never read through old ones."""
    from .finetune import TunedMiniLM, by_layer, tensors_id

    weights_id = getattr(model, "weights_id_", None) or tensors_id(model.tuned_layers_)
    key = (weights_id, frozen.model_dir, int(model.context_turns))
    cached = model.__dict__.get("_tuned")
    if cached is None or cached[0] != key:
        cached = (key, TunedMiniLM(by_layer(model.tuned_layers_), frozen.model_dir, frozen.fingerprint(),
                                   weights_id, int(model.context_turns)))
        model._tuned = cached
    return cached[1].on(frozen.backbone())


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


def set_tuned_layers(model, tensors: Mapping[str, Any] | None) -> None:
    """See `Adem.set_tuned_layers`."""
    from .encoders import make_encoder

    for name in ("tuned_layers_", "tuned_indices_", "weights_id_"):
        model.__dict__.pop(name, None)
    frozen = make_encoder(model.encoder, int(model.context_turns))
    if tensors is not None:
        from .finetune import tensors_id

        model.tuned_layers_ = dict(tensors)
        model.tuned_indices_ = sorted({int(k.split(".")[2]) for k in tensors})
        model.weights_id_ = tensors_id(model.tuned_layers_)
    model.encoder_fingerprint_ = (tuned_encoder(model, frozen) if model.is_tuned() else frozen).fingerprint()


def write_encoder_files(model, staging_dir: str) -> None:
    """A VHRED encoder travels inside the ADEM folder (`encoder/`), so a model can be moved
    or shared as one folder; its files are in ADEM's manifest too. Fine-tuned MiniLM layers
    are written to `encoder.safetensors` (dialeval.backbones' layout: the base model's tensor names)."""
    from .encoders import parse_encoder_spec

    kind, path = parse_encoder_spec(model.encoder)
    if model.is_tuned():
        from ....backbones.tuning import WEIGHTS_FILE, save_layers

        save_layers(model.tuned_layers_, os.path.join(staging_dir, WEIGHTS_FILE),
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


def read_encoder_files(model, values: Mapping[str, Any], directory: str) -> None:
    """The loading side of `write_encoder_files`: the tuned layers, and the bundled encoder in
    place of the path it was trained from."""
    if "weights_id_" in values:
        load_tuned_layers(model, values, directory)
    bundled = os.path.join(directory, BUNDLED_ENCODER)
    if model.encoder.startswith("hred:") and os.path.isdir(bundled):
        model.encoder = f"hred:{bundled}"     # the copy saved with the model, not the training path


def load_tuned_layers(model, values: Mapping[str, Any], directory: str) -> None:
    """Read `encoder.safetensors` (already checked by the manifest) and check that its
    tensors are the ones recorded at training (the content hash in config.json)."""
    from ....backbones.tuning import WEIGHTS_FILE, load_layers, tensors_id
    from .encoders import make_encoder
    from .finetune import backbone

    path = os.path.join(directory, WEIGHTS_FILE)
    if not os.path.exists(path):
        raise DialevalError(f"{directory}: a fine-tuned ADEM without its {WEIGHTS_FILE}")
    indices = [int(i) for i in values.get("tuned_indices_") or []]
    base = backbone(make_encoder(model.encoder, int(model.context_turns)).model_dir).model
    layers = load_layers(path, indices, base, what="a fine-tuned ADEM model")
    model.tuned_layers_ = {f"encoder.layer.{i}.{k}": v for i, d in layers.items() for k, v in d.items()}
    if tensors_id(model.tuned_layers_) != str(values["weights_id_"]):
        raise DialevalError(f"{directory}/{WEIGHTS_FILE}: its tensors differ from the ones recorded at training")
