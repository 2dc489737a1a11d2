"""The encoders ADEM can use, behind one interface: vectors for contexts and for single texts.

- `minilm` / `minilm:DIR`: a frozen sentence-transformers encoder (all-MiniLM-L6-v2 by default);
  a context is its last k turns joined by spaces into one text;
- `hred:DIR`: our VHRED-pre-trained hierarchical encoder (`hred.py`); a context is fed as a
  dialogue and a response or reference as a one-utterance dialogue, and the context encoder's
  last state is the vector (the paper's rule).

Vectors are remembered per distinct input, so a reference shared by many candidates, or a
context shared by all systems, is encoded once. They live as long as their model stays loaded:
MiniLM's with its backbone (dialeval.backbones), the hierarchical encoder's with the encoder in
the one cache of trained models (dialeval.models.artifacts); `clear_vectors` forgets both.
"""

from __future__ import annotations

import os
from typing import Sequence

import numpy as np

from ....cache import memo
from ....errors import DialevalError


class MiniLMEncoder:
    """A sentence-transformers backbone's own vectors (mean pooling + L2 normalisation for
    all-MiniLM-L6-v2), shared with sent_cosine: the same model object and the same remembered
    vectors (dialeval.backbones)."""

    def __init__(self, model_dir: str | None = None, context_turns: int = 3, device: str = "cpu",
                 precision: str = "fp32"):
        from ....backbones import default_sentence_model

        if model_dir is None:
            model_dir = default_sentence_model()
            self.spec = "minilm"
        else:
            model_dir = os.path.abspath(model_dir)
            self.spec = f"minilm:{model_dir}"
        self.model_dir = model_dir
        self.context_turns = int(context_turns)
        # device and precision of the backbone (`--adem-device`, `--adem-precision`): bf16 is a
        # bf16 copy of its own (dialeval.backbones); the vectors come back as float32 either way
        self.device, self.precision = device or "cpu", precision
        self.backbone()       # a bad folder fails here, not at scoring

    def backbone(self):
        from ....backbones import load_backbone

        return load_backbone(self.model_dir, kind="sentence-transformers", device=self.device,
                             precision=self.precision)

    def encode_texts(self, texts: Sequence[str]) -> np.ndarray:
        view = self.backbone().text_encoder("model", batch_size=16)
        return view.encode(list(texts)).astype(np.float64)

    def encode_contexts(self, contexts: Sequence[Sequence[str]]) -> np.ndarray:
        k = self.context_turns
        return self.encode_texts([" ".join(list(c)[-k:]) if k > 0 else "" for c in contexts])

    def fingerprint(self) -> str:
        from ....backbones import model_fingerprint

        return "all-MiniLM-L6-v2" if self.spec == "minilm" else model_fingerprint(self.model_dir)


class HredEncoder:
    def __init__(self, directory: str, device: str | None = None):
        from .hred import load_encoder

        self.directory = os.path.abspath(directory)
        self.spec = f"hred:{self.directory}"
        self.model = load_encoder(self.directory, device)
        self._cache = memo(name="hred context vectors")

    def clear_vectors(self) -> None:
        self._cache.clear()

    def encode_contexts(self, contexts: Sequence[Sequence[str]]) -> np.ndarray:
        keys = [tuple(list(c)[-self.model.max_turns:]) for c in contexts]
        known = {k: self._cache.get(k) for k in dict.fromkeys(keys)}
        missing = [k for k, v in known.items() if v is None]
        if missing:
            for k, v in zip(missing, self.model.encode([list(k) for k in missing])):
                known[k] = self._cache.put(k, v.astype(np.float64))
        if not keys:
            return np.zeros((0, self.model.ctx_dim))
        return np.stack([known[k] for k in keys])

    def encode_texts(self, texts: Sequence[str]) -> np.ndarray:
        return self.encode_contexts([[t] for t in texts])

    def fingerprint(self) -> str:
        from ....models.store import read_manifest

        manifest = read_manifest(self.directory) or {}
        digest = (manifest.get("files", {}).get("arrays.npz") or {}).get("sha256", "")
        return f"hred:{digest[:12]}"


def parse_encoder_spec(spec: str) -> tuple[str, str | None]:
    kind, _, path = spec.partition(":")
    if kind not in ("minilm", "hred"):
        raise DialevalError(f"encoder {spec!r}: give minilm, minilm:DIR or hred:DIR")
    if kind == "hred" and not path:
        raise DialevalError("encoder hred needs a folder: hred:DIR (from `dialeval train dialogue-encoder`)")
    return kind, path or None


def make_encoder(spec: str, context_turns: int = 3, device: str | None = None, precision: str = "fp32"):
    """The encoder named by `spec`; the loaded model behind it is shared (a backbone, or the
    hierarchical encoder held by the one cache of trained models). `precision` bf16 is MiniLM's
    alone: the hierarchical GRU encoder (trained here, small) runs in fp32 only, and is refused."""
    kind, path = parse_encoder_spec(spec)
    if kind == "minilm":
        return MiniLMEncoder(path, context_turns, device or "cpu", precision)
    if precision != "fp32":
        raise DialevalError(f"--adem-precision {precision}: this ADEM reads a hierarchical GRU encoder "
                            f"({spec}), which runs in fp32 only; use --adem-precision fp32")
    from ....models.artifacts import open_model

    device = None if device == "cpu" else device     # cpu: the encoder as stored (today's one cache entry)
    return open_model(path, None, lambda folder: HredEncoder(folder, device), key=("hred-encoder", device))


def clear_vectors() -> None:
    """Forget every remembered vector (MiniLM's and the hierarchical encoders'); models stay."""
    from ....backbones import clear_vectors as clear_backbone_vectors
    from ....models.artifacts import clear_vectors as clear_model_vectors

    clear_backbone_vectors()
    clear_model_vectors()
