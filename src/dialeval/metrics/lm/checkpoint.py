"""Loading a causal-LM checkpoint folder, with one clear line for every way it can be wrong.

Any local Hugging Face causal-LM folder works (GPT-2 or another architecture), and so do a
GGUF file (or a folder holding one), read through the shared backbone loader, and a LoRA
adapter folder (lora.py), applied to a private copy of its base. Folders that
dialeval trained carry a sha256 manifest, which is checked first, and the reference-set scores
that the normalised metrics need (eq. 2 and 4); a foreign checkpoint has neither, so only the
raw metrics work with it until `dialeval train lm --init DIR --max-steps 0` wraps it.
"""

from __future__ import annotations

import json
import os
from typing import Any

import numpy as np

from ...errors import DialevalError
from ...models import store
from .loaded import LAYOUTS, Frame, LoadedLM, make_frame, offline  # noqa: F401  (this module's interface)

KIND = "causal-lm"
INFO_FILE = "dialeval_lm.json"
REFERENCE_FILE = "lm_reference.npz"
WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin",
                "pytorch_model.bin.index.json")


def _fail(path: str, why: str) -> DialevalError:
    return DialevalError(f"{path}: {why}")


def check_causal_config(path: str) -> Any:
    """The folder's transformers config, refused unless it describes a causal LM."""
    offline()
    from transformers import AutoConfig
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    if not os.path.isdir(path):
        raise _fail(path, "no such model folder")
    if not os.path.exists(os.path.join(path, "config.json")):
        raise _fail(path, "not a model checkpoint (no config.json); give a causal-LM folder "
                          "or train one with `dialeval train lm`")
    try:
        config = AutoConfig.from_pretrained(path, local_files_only=True)
    except Exception as exc:  # transformers raises many kinds for a bad config
        raise _fail(path, f"unreadable model config.json ({type(exc).__name__}: {_first_line(exc)})") from None
    causal = set(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES.values())
    if config.model_type not in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES:
        raise _fail(path, f"model type {config.model_type!r} is not a causal language model")
    archs = list(getattr(config, "architectures", None) or [])
    if archs and not any(a in causal for a in archs):
        raise _fail(path, f"checkpoint is a {', '.join(archs)}, not a causal language model "
                          "(coherence and fluency need left-to-right token probabilities)")
    if not any(os.path.exists(os.path.join(path, f)) for f in WEIGHT_FILES):
        raise _fail(path, "no weights (model.safetensors or pytorch_model.bin) in the checkpoint")
    return config


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:200] if text else ""


def load_lm(path: str | os.PathLike, device: str = "cpu") -> LoadedLM:
    offline()
    path = os.fspath(path)
    from ...progress import loading

    with loading(f"language model {path}"):
        return _load_lm(path, device)


def _gguf_target(path: str) -> bool:
    if os.path.isfile(path):
        return path.endswith(".gguf")
    return (os.path.isdir(path) and not os.path.exists(os.path.join(path, "config.json"))
            and any(n.endswith(".gguf") for n in os.listdir(path)))


def _load_gguf(path: str, device: str) -> LoadedLM:
    """A GGUF causal LM through the shared backbone loader (scored as-is, raw metrics only)."""
    from ...backbones import load_backbone

    bb = load_backbone(path, kind="gguf", device=device, task="causal-lm")
    tokenizer = bb.tokenizer
    sep = tokenizer.eos_token_id if tokenizer.eos_token_id is not None else tokenizer.bos_token_id
    if sep is None:
        raise _fail(path, "the tokenizer has neither an end-of-text nor a begin-of-text token")
    max_len = int(getattr(bb.model.config, "max_position_embeddings", None) or 1024)
    return LoadedLM(path=bb.path, model=bb.model, tokenizer=tokenizer, sep_id=int(sep), max_len=max_len,
                    device=device, shared=True)


def _load_lm(path: str, device: str) -> LoadedLM:
    """A causal LM folder: an adapter (merged into a private copy of its base), a GGUF file, or
    a transformers folder, the last two through the shared backbone loader like every other
    transformer (one cache, one thread and device policy); a folder trained here is verified
    against its manifest first."""
    from .lora import is_adapter, load_adapter

    if is_adapter(path):
        return load_adapter(path, device)
    if _gguf_target(path):
        return _load_gguf(path, device)
    if store.read_manifest(path) is not None:
        store.verify(path, KIND)
    config = check_causal_config(path)            # the folder's own refusals, before any weight is read
    from ...backbones import load_backbone
    from ...backbones.loading import BackboneError

    try:
        bb = load_backbone(path, kind="hf", device=device, task="causal-lm")
    except BackboneError:
        raise
    except DialevalError:
        raise
    except Exception as exc:
        raise _fail(path, f"cannot load the weights or the tokenizer, the checkpoint looks corrupted "
                          f"({type(exc).__name__}: {_first_line(exc)})") from None
    tokenizer = bb.tokenizer
    sep = tokenizer.eos_token_id if tokenizer.eos_token_id is not None else tokenizer.bos_token_id
    if sep is None:
        raise _fail(path, "the tokenizer has neither an end-of-text nor a begin-of-text token")
    max_len = int(getattr(config, "n_positions", None) or getattr(config, "max_position_embeddings", None) or 1024)
    info: dict = {}
    info_path = os.path.join(path, INFO_FILE)
    if os.path.exists(info_path):
        with open(info_path, encoding="utf-8") as handle:
            info = json.load(handle)
    return LoadedLM(path=path, model=bb.model, tokenizer=tokenizer, sep_id=int(sep), max_len=max_len,
                    device=device, info=info, reference=_arrays(os.path.join(path, REFERENCE_FILE)),
                    shared=True)


# Weight dtypes (`--lm-precision`): fp32, the default, or bfloat16 (half the weights' memory; 1.8x
# faster on a CPU with AVX512-BF16; raw values within 0.05 of fp32, Spearman 0.9998 on the holistic
# fluency set: docs/speed.md). Log-softmax runs in fp32 either way.
PRECISIONS = {"fp32": "float32", "bf16": "bfloat16"}


def lm_settings(layout: str | None, precision: str) -> tuple[str | None, str]:
    """`--lm-layout` and `--lm-precision` checked, the layout None for the model's own ("auto"):
    the one check every LM metric and the loader make."""
    layout = None if layout in (None, "", "auto") else layout
    if layout is not None and layout not in LAYOUTS:
        raise DialevalError(f"--lm-layout {layout!r}: choose from auto, {', '.join(LAYOUTS)}")
    if precision not in PRECISIONS:
        raise DialevalError(f"--lm-precision {precision!r}: choose from {', '.join(PRECISIONS)}")
    return layout, precision


def cached_lm(path: str | os.PathLike, device: str = "cpu", layout: str | None = None,
              precision: str = "fp32") -> LoadedLM:
    """One loaded copy per (folder, device, layout, precision) per process: coherence and fluency
    share it. layout: None or "auto" keeps the model's own (an adapter's stored frame, else plain)."""
    layout, precision = lm_settings(layout, precision)
    from ...models.artifacts import open_model

    def load(folder: str) -> LoadedLM:
        import dataclasses

        lm = load_lm(folder, device)
        if layout is not None and layout != lm.layout:
            lm = dataclasses.replace(lm, layout=layout, _frame=None)
        if precision != "fp32":
            import copy

            import torch

            model = copy.deepcopy(lm.model) if lm.shared else lm.model   # never the shared backbone
            model.to(dtype=getattr(torch, PRECISIONS[precision]))
            lm = dataclasses.replace(lm, model=model, precision=precision, _split=None)
        return lm

    path = os.fspath(path)
    if not os.path.exists(path):
        raise _fail(path, "no such model folder")
    # the loaders verify (an adapter and a trained checkpoint are artifacts of different kinds);
    # inside the door each file is hashed once
    return open_model(path, None, load, key=("causal-lm", device, layout, precision))


# the kind of model the signature's `model:` field names (a full checkpoint or an adapter alike)
SIGNATURE_NAME = "lm"


def peek(path: str | os.PathLike) -> dict[str, Any]:
    """What the LM metrics' signatures and option checks read of a model (its `model:` tag, an
    adapter's base, layout, reference scores), from its manifest and small files: a run is
    planned without loading it."""
    path = os.fspath(path)
    from .lora import _prepared_source_hash, base_identity, is_adapter, resolve_base

    from ...models.artifacts import check, model_field

    if is_adapter(path):
        manifest = check(path, "lm-lora")       # verified once per process
        if manifest is None:
            store.verify(path, "lm-lora")        # its one-line refusal
        from ...models.artifacts import read_json

        info = read_json(path)
        base_name = info.get("base") or read_json(path, "adapter_config.json").get("base_model_name_or_path")
        if not base_name:
            raise DialevalError(f"{path}: the adapter names no base model")
        base_path = resolve_base(base_name, path)
        return {"tag": model_field(SIGNATURE_NAME, path),
                "base": f"{base_identity(base_path)}{_prepared_source_hash(base_path)}",
                "layout": info.get("layout", "plain"), "reference": _arrays(os.path.join(path, store.ARRAYS))}
    if _gguf_target(path):
        from ...backbones.fingerprint import model_fingerprint

        if os.path.isfile(path):
            file = path
        else:
            names = sorted(n for n in os.listdir(path) if n.endswith(".gguf"))
            if len(names) != 1:
                return {}          # loading gives the refusal
            file = os.path.join(path, names[0])
        return {"tag": model_fingerprint(os.path.abspath(file)), "layout": "plain", "reference": {}}
    manifest = store.read_manifest(path) if os.path.isdir(path) else None
    if manifest is not None:
        check(path, KIND)                         # verified once per process
    check_causal_config(path)                     # the folder's refusals, from config.json alone
    if manifest is not None:                      # trained here: named by its manifest
        tag = model_field(SIGNATURE_NAME, path)
    else:                                         # from elsewhere: the backbone rule, name and size
        from ...backbones.fingerprint import model_fingerprint

        tag = model_fingerprint(path)
    return {"tag": tag, "layout": "plain", "reference": _arrays(os.path.join(path, REFERENCE_FILE))}


def _arrays(path: str) -> dict[str, np.ndarray]:
    if not os.path.exists(path):
        return {}
    with np.load(path, allow_pickle=False) as data:
        return {k: data[k] for k in data.files}
