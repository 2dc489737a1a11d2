"""One place that loads, caches, runs and tunes pretrained transformers for every metric family.

Before this package each learned family loaded its own copy of MiniLM, kept its own caches,
wrote its own fixed-shape batching and its own top-layer training loop; ADEM borrowed MME's
private helpers. Families now import from here and never from each other.

Public API (all heavy imports are lazy: importing this package loads neither torch nor
transformers)::

    from dialeval.backbones import load_backbone
    bb = load_backbone(path, kind="auto", device="cpu")   # cached per process (LRU, see cache.py)
    bb.tokenizer, bb.model, bb.fingerprint                 # HF tokenizer, torch module, short id
    bb.encode(texts, pooling="model", normalize=None)      # (n, d) float32, one token length a batch
    bb.token_states(texts, layer=-1)                       # per text: states, ids, offsets, special mask
    bb.text_encoder(pooling=..., ...)                      # a view remembering each text's vector

- `kind`: "auto" (a sentence-transformers folder if it has modules.json, else a plain HF
  folder), "sentence-transformers", "hf", "causal-lm" (AutoModelForCausalLM) or "gguf"
  (transformers' GGUF reader; give `gguf_file=` or a folder with exactly one .gguf file, or the
  .gguf file itself). Loading is always offline (`local_files_only`, HF_HUB_OFFLINE).
- `pooling` (`pooling.py`): "model" (the folder's own sentence-transformers pipeline, bit for
  bit), "mean", "max", "mean+max", "cls".
- batching (`batching.py`): texts of one token length per batch (no padding), batches sorted by
  length, copies added only to a batch under 8 positions, so a text's vector never depends on
  the other texts of a run.
- threads and device (`runtime.py`): one torch-thread policy (the idle cores, or
  $OMP_NUM_THREADS), `device` "cpu" (default) or "cuda"; `check_device(option, value)`, the one
  refusal of a device that is not here (every model metric's constructor calls it), and
  `precision` "fp32" (default) or "bf16" (`load_backbone(..., precision="bf16")`: a bf16 copy).
- tuning (`tuning.py`): `LowerStates` (token states below the tuned layers, computed once),
  `TunedBackbone` (the base with tuned top layers, for scoring), `tune_top_layers` (the one
  training loop: AdamW, warm-up then linear decay, clipping, keep-best), and
  `save_layers`/`load_layers`/`tensors_id` (the one way tuned layers are stored: safetensors
  under the base model's tensor names, with a content hash recorded by the caller).

See docs/backbones.md for the rules and the reasons behind them.
"""

from __future__ import annotations

from typing import Any

_LAZY = {
    "Backbone": "loading", "load_backbone": "loading", "BackboneError": "loading",
    "TextEncoder": "encoding", "TokenStates": "encoding",
    "clear_backbones": "cache", "clear_vectors": "cache", "cached_backbones": "cache",
    "model_fingerprint": "fingerprint", "default_sentence_model": "defaults",
    "pool": "pooling", "POOLINGS": "pooling",
    "length_batches": "batching", "filled": "batching", "min_filled": "batching", "pass_rows": "batching",
    "default_threads": "runtime", "apply_thread_policy": "runtime", "resolve_device": "runtime",
    "check_device": "runtime", "check_precision": "runtime", "available_devices": "runtime",
    "LowerStates": "tuning", "TunedBackbone": "tuning", "tune_top_layers": "tuning", "TuneResult": "tuning",
    "save_layers": "tuning", "load_layers": "tuning", "tensors_id": "tuning", "by_layer": "tuning",
    "layer_tensors": "tuning", "scoring_layers": "tuning", "run_layers": "layers", "WEIGHTS_FILE": "tuning",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'dialeval.backbones' has no attribute {name!r}")
    from importlib import import_module

    return getattr(import_module(f".{module}", __name__), name)
