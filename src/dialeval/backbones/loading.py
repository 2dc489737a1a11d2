"""Loading a transformer from a local path: a sentence-transformers folder, a plain Hugging Face
folder (encoder or causal LM), or a GGUF file read by transformers. Offline always.

For a sentence-transformers folder the SentenceTransformer object is loaded (its module
pipeline is what `pooling="model"` runs, bit for bit) and its underlying transformers model and
tokenizer are the backbone's `.model` and `.tokenizer`: users of the raw token states share the
same weights in memory instead of loading the folder a second time.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Sequence

import numpy as np

from ..errors import DialevalError
from . import cache
from .fingerprint import content_key, model_fingerprint
from .runtime import PRECISIONS, apply_thread_policy, check_precision, offline_environment, resolve_device

KINDS = ("auto", "sentence-transformers", "hf", "gguf")
TASKS = ("base", "causal-lm")


class BackboneError(DialevalError):
    """A model path that cannot be loaded (one line, naming the path)."""


def _gguf_files(path: str) -> list[str]:
    if os.path.isfile(path):
        return [os.path.basename(path)] if path.endswith(".gguf") else []
    return sorted(n for n in os.listdir(path) if n.endswith(".gguf"))


def detect_kind(path: str) -> str:
    if not os.path.exists(path):
        raise BackboneError(f"{path}: no such model folder or file")
    if os.path.isfile(path):
        if path.endswith(".gguf"):
            return "gguf"
        raise BackboneError(f"{path}: not a model folder or a .gguf file")
    if os.path.exists(os.path.join(path, "modules.json")):
        return "sentence-transformers"
    if os.path.exists(os.path.join(path, "config.json")):
        return "hf"
    if _gguf_files(path):
        return "gguf"
    raise BackboneError(f"{path}: not a model folder (no modules.json, config.json or .gguf file)")


def load_backbone(path: str | os.PathLike, kind: str = "auto", device: str | None = "cpu", *,
                  task: str = "base", gguf_file: str | None = None, precision: str = "fp32") -> "Backbone":
    """The backbone at `path`, loaded once per process (see cache.py).

    kind: auto | sentence-transformers | hf | gguf. task: base (AutoModel) or causal-lm
    (AutoModelForCausalLM; a GGUF file is usually a causal LM). device: cpu (default) or cuda.
    precision: fp32 (default) or bf16, a copy of its own whose weights are cast to bfloat16 (the
    fp32 backbone, and so the defaults' numbers, are untouched; the readers return float32)."""
    path = os.path.abspath(os.fspath(path))
    if kind not in KINDS:
        raise BackboneError(f"backbone kind {kind!r}: choose from {', '.join(KINDS)}")
    if task not in TASKS:
        raise BackboneError(f"backbone task {task!r}: choose from {', '.join(TASKS)}")
    if kind == "auto":
        kind = detect_kind(path)
    elif not os.path.exists(path):
        raise BackboneError(f"{path}: no such model folder or file")
    device = resolve_device(device)
    precision = check_precision("precision", precision)
    key = (content_key(path), kind, task, device, gguf_file)
    if precision == "fp32":
        if kind == "hf" and task == "base" and _sentence_transformer_at_root(path):
            st_key = (content_key(path), "sentence-transformers", "base", device, gguf_file)
            return cache.get_or_load(key, lambda: _hf_view(path, device), parent=st_key)
        return cache.get_or_load(key, lambda: _announced_load(path, kind, task, device, gguf_file))
    return cache.get_or_load(key + (precision,),
                             lambda: _cast(_announced_load(path, kind, task, device, gguf_file), precision))


def private_model(path: str | os.PathLike, kind: str = "auto", device: str | None = "cpu", *,
                  task: str = "base") -> "Backbone":
    """A backbone whose weights the caller may change (merge an adapter into, train): a copy of
    the cached one where the process holds it already, else loaded for the caller alone and not
    cached, so that a model derived from it (a merged LoRA) is the only copy the process keeps."""
    import copy

    path = os.path.abspath(os.fspath(path))
    if kind == "auto":
        kind = detect_kind(path)
    device = resolve_device(device)
    held = cache.cached((content_key(path), kind, task, device, None))
    if held is not None:
        return Backbone(held.path, held.kind, held.task, held.device, held.tokenizer, copy.deepcopy(held.model))
    return _announced_load(path, kind, task, device, None)


def _sentence_transformer_at_root(path: str) -> bool:
    """Whether `path` is a sentence-transformers folder whose first module is the transformer
    stored in the folder itself (all-MiniLM-L6-v2's layout): its plain-transformers reading is
    then the same weights as its sentence-transformers one."""
    import json

    try:
        with open(os.path.join(path, "modules.json"), encoding="utf-8") as handle:
            modules = json.load(handle)
    except (OSError, ValueError):
        return False
    first = modules[0] if isinstance(modules, list) and modules else {}
    return (isinstance(first, dict) and first.get("path", None) in ("", ".")
            and str(first.get("type", "")).endswith("models.Transformer"))


def _hf_view(path: str, device: str) -> "Backbone":
    """The plain-transformers backbone of a sentence-transformers folder, sharing the weights of
    its sentence-transformers backbone (`sent_cosine` and `bertscore_f`, or ADEM and MME, in one
    run held two copies of MiniLM). The tokenizer is its own, loaded as a plain folder's is:
    sentence-transformers caps the tokenizer's length at its `max_seq_length` (256 for MiniLM),
    and the plain reading keeps the tokenizer's own 512, so every number stays as it was."""
    st = load_backbone(path, kind="sentence-transformers", device=device)
    offline_environment()
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    return Backbone(path, "hf", "base", device, tokenizer, st.model)


def _cast(backbone: "Backbone", precision: str) -> "Backbone":
    """`backbone` (a fresh load of its own, never the cached fp32 one) with its weights in
    `precision`: the sentence-transformers pipeline, whose first module is `.model`, as a whole."""
    import torch

    dtype = getattr(torch, PRECISIONS[precision])
    (backbone.sentence_model if backbone.sentence_model is not None else backbone.model).to(dtype)
    backbone.precision = precision
    return backbone


def _announced_load(path: str, kind: str, task: str, device: str, gguf_file: str | None) -> "Backbone":
    from ..progress import loading

    parts = os.path.normpath(path).split(os.sep)
    # a package keeps its weights in a folder called model(s): name the package's folder too
    shown = "/".join(parts[-2:]) if len(parts) > 1 and parts[-1].lower() in ("model", "models", "weights") else parts[-1]
    with loading(f"encoder {shown}"):
        return _load(path, kind, task, device, gguf_file)


def _load(path: str, kind: str, task: str, device: str, gguf_file: str | None) -> "Backbone":
    offline_environment()
    from ..optional import require

    require("torch", "a transformer backbone", "embeddings")
    require("transformers", "a transformer backbone", "embeddings")
    apply_thread_policy()
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    if kind == "sentence-transformers":
        if not os.path.exists(os.path.join(path, "modules.json")) and \
                not os.path.exists(os.path.join(path, "config.json")):
            raise BackboneError(f"{path}: not a sentence-transformers model folder (no modules.json or config.json)")
        SentenceTransformer = require("sentence_transformers", "a sentence-transformers backbone",
                                      "embeddings").SentenceTransformer

        st = SentenceTransformer(path, device=device, local_files_only=True)
        model = st[0].auto_model
        _freeze(model)
        limit = int(getattr(st, "max_seq_length", None) or 512)
        return Backbone(path, kind, task, device, st.tokenizer, model, sentence_model=st, max_length=limit)
    if kind == "hf":
        if not os.path.exists(os.path.join(path, "config.json")):
            raise BackboneError(f"{path}: not a transformers model folder (no config.json)")
        from transformers import AutoModel, AutoModelForCausalLM, AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
        auto = AutoModelForCausalLM if task == "causal-lm" else AutoModel
        model = auto.from_pretrained(path, local_files_only=True).to(device)
        _freeze(model)
        return Backbone(path, kind, task, device, tokenizer, model)
    return _load_gguf(path, task, device, gguf_file)


def _load_gguf(path: str, task: str, device: str, gguf_file: str | None) -> "Backbone":
    folder, name = (os.path.dirname(path), os.path.basename(path)) if os.path.isfile(path) else (path, gguf_file)
    if name is None:
        names = _gguf_files(folder)
        if len(names) != 1:
            raise BackboneError(f"{path}: {'no' if not names else len(names)} .gguf files; "
                                "give the file itself (or gguf_file=NAME)")
        name = names[0]
    file = os.path.join(folder, name)
    if not os.path.isfile(file):
        raise BackboneError(f"{file}: no such GGUF file")
    import importlib.util

    missing = [p for p in ("gguf", "accelerate") if importlib.util.find_spec(p) is None]
    if missing:       # transformers' GGUF reader needs both
        raise BackboneError(f"{file}: reading GGUF needs the {' and '.join(missing)} package"
                            f"{'s' if len(missing) > 1 else ''} (pip install {' '.join(missing)})")
    import contextlib
    import io

    from transformers import AutoModel, AutoModelForCausalLM, AutoTokenizer

    auto = AutoModelForCausalLM if task == "causal-lm" else AutoModel
    try:
        # the GGUF reader draws its own de-quantisation bar on stderr: not the user's business
        with contextlib.redirect_stderr(io.StringIO()):
            tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name, local_files_only=True)
            model = auto.from_pretrained(folder, gguf_file=name, local_files_only=True).to(device)
    except (OSError, ValueError, KeyError, RuntimeError, ImportError, AttributeError, TypeError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise BackboneError(f"{file}: not a GGUF model transformers can read ({first})") from None
    _freeze(model)
    return Backbone(file, "gguf", task, device, tokenizer, model)


def _freeze(model) -> None:
    model.eval()
    for p in model.parameters():
        p.requires_grad_(False)


class Backbone:
    """A loaded transformer: `.tokenizer`, `.model` (frozen, eval mode), `.fingerprint`, and the
    ways to read texts through it (`encode`, `token_states`, `text_encoder`)."""

    def __init__(self, path: str, kind: str, task: str, device: str, tokenizer, model, *,
                 sentence_model=None, max_length: int | None = None):
        self.path, self.kind, self.task, self.device = path, kind, task, device
        self.precision = "fp32"       # bf16: load_backbone(..., precision="bf16")
        self.tokenizer, self.model = tokenizer, model
        self.sentence_model = sentence_model
        limit = getattr(tokenizer, "model_max_length", None)
        self.max_length = int(max_length or (limit if limit and limit < 100_000 else 512))
        self.fingerprint = model_fingerprint(path)
        self._views: dict[tuple, Any] = {}
        self._attached: dict[Any, Any] = {}

    def __repr__(self) -> str:
        extra = "" if self.precision == "fp32" else f", precision={self.precision!r}"
        return f"Backbone({self.path!r}, kind={self.kind!r}, device={self.device!r}{extra})"

    @property
    def hidden_size(self) -> int:
        return int(self.model.config.hidden_size)

    # -- reading texts -----------------------------------------------------------------------
    def text_encoder(self, pooling: str = "model", normalize: bool | None = None, batch_size: int = 16,
                     max_length: int | None = None, blank: str | None = None, shared: bool = True):
        """A `TextEncoder` view with these settings. Shared views (the default) are one per
        setting and backbone, so every metric reading the same vectors shares their memory;
        `shared=False` gives a private one (its own memory)."""
        from .encoding import TextEncoder

        key = (pooling, normalize, int(batch_size), max_length, blank)
        if not shared:
            return TextEncoder(self, *key)
        view = self._views.get(key)
        if view is None:
            view = self._views[key] = TextEncoder(self, *key)
        return view

    def encode(self, texts: Sequence[str], pooling: str = "model", normalize: bool | None = None,
               batch_size: int = 16, max_length: int | None = None, blank: str | None = None) -> np.ndarray:
        """(n, d) float32 vectors of `texts` (see `TextEncoder`), remembered per text."""
        return self.text_encoder(pooling, normalize, batch_size, max_length, blank).encode(texts)

    def token_states(self, texts: Sequence[str], layer: int = -1, batch_size: int = 16,
                     max_length: int | None = None):
        """Per text a `TokenStates` (the chosen layer's states, token ids, character offsets,
        special-token mask), in fixed-shape batches. layer: an index into the model's hidden
        states (0 = embeddings, -1 = last layer)."""
        from .encoding import token_states

        return token_states(self, texts, layer, batch_size, max_length)

    def attach(self, key: Any, make: Callable[[], Any]) -> Any:
        """The object a family keeps beside this backbone under `key` (made once by `make`): it
        lives as long as the backbone stays in the process cache, so a family needs no cache of
        its own."""
        if key not in self._attached:
            self._attached[key] = make()
        return self._attached[key]

    def clear_vectors(self) -> None:
        for view in self._views.values():
            view.clear()
