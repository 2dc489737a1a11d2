"""The MME model folder: one subfolder per sub-metric (`fm/`, `rm/`, `tcm/`, `em/`, `sm/`), each
its own artifact (config.json, arrays.npz or safetensors, manifest.json), plus a root
`config.json` (what was trained, from what, how long it took) and a root manifest over every
file, so a changed file anywhere in the folder is refused before anything is read.

`train_mme` trains the requested sub-metrics into the folder (keeping the others already
there); `MMEModel.load` opens it for the `mme_*` metrics.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from functools import lru_cache
from typing import Any, Callable, Mapping, Sequence

from ...errors import DialevalError
from ...models.store import read_manifest, verify, write_manifest

KIND = "mme"
SUBMETRICS = ("fm", "rm", "tcm", "em", "sm")
ROOT_CONFIG = "mme.json"


def _classes():
    from .engagement import EngagementModel
    from .fluency import FluencyModel
    from .relevance import RelevanceModel
    from .specificity import SpecificityModel
    from .topic import TopicCoherenceModel

    return {"fm": FluencyModel, "rm": RelevanceModel, "tcm": TopicCoherenceModel, "em": EngagementModel,
            "sm": SpecificityModel}


def parse_only(text: str | None) -> list[str]:
    if not text:
        return list(SUBMETRICS)
    names = [t.strip().lower() for t in text.split(",") if t.strip()]
    bad = [n for n in names if n not in SUBMETRICS]
    if bad:
        raise DialevalError(f"--only: unknown sub-metric {bad[0]!r}; choose from {', '.join(SUBMETRICS)}")
    return names


def train_mme(corpus: str, output: str, *, engagement: str | None = None, only: Sequence[str] = SUBMETRICS,
              max_minutes: float | None = None, max_examples: int = 3000, sm_sentences: int = 10000, seed: int = 0,
              device: str = "cpu", encoder: str | None = None, encoder_mode: str = "frozen",
              finetune_layers: int = 2, finetune_epochs: int = 3, finetune_lr: float = 3e-5,
              say: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Train `only` into `output`; returns the root config. `max_minutes` is a budget for the
    whole run, shared out evenly among the sub-metrics still to train (each stops its epochs
    when its share runs out, keeping its best epoch so far).

    `encoder_mode="finetune"` fine-tunes the top `finetune_layers` MiniLM layers with the head
    of FM, RM and EM (`finetune.py`); TCM and SM have no MiniLM pass to tune (TCM reads only
    MiniLM's input embedding table, SM is its own masked LM, trained end to end already) and
    train as in the frozen mode."""
    from .data import engagement_examples, read_dialogues, sample_dialogues

    if device != "cpu":
        raise DialevalError(f"--device {device}: the MME sub-metrics train on the CPU in this version")
    if encoder_mode not in ("frozen", "finetune"):
        raise DialevalError(f"encoder mode {encoder_mode!r}: choose frozen or finetune")
    if not 1 <= int(finetune_layers) <= 6:
        raise DialevalError(f"--finetune-layers {finetune_layers}: MiniLM has 6 layers; choose 1..6")
    tuning = {"encoder_mode": encoder_mode, "finetune_layers": int(finetune_layers),
              "finetune_epochs": int(finetune_epochs), "finetune_lr": float(finetune_lr)}
    say = say or (lambda m: None)
    if "em" in only and not engagement:
        raise DialevalError("training EM needs --engagement FOLDER (the predictive-engagement data), "
                            "or leave em out with --only")
    dialogues = read_dialogues(corpus)
    trained_on = corpus_record(corpus, dialogues)
    sample = sample_dialogues(dialogues, max_examples, seed)
    utterances = [u for d in sample for u in d]
    classes = _classes()
    os.makedirs(output, exist_ok=True)
    root = _read_root(output)
    started = time.monotonic()
    for k, name in enumerate(only):
        deadline = None
        if max_minutes:
            left = max_minutes * 60 - (time.monotonic() - started)
            deadline = time.monotonic() + max(left / (len(only) - k), 1.0)
        t0, c0 = time.monotonic(), time.process_time()
        say(f"[mme] training {name} ...")
        if name == "fm":
            model = classes[name](max_examples=max_examples, seed=seed, encoder=encoder, **tuning).fit(
                utterances, deadline, say)
        elif name == "rm":
            model = classes[name](max_examples=max_examples, seed=seed, encoder=encoder, **tuning).fit(
                sample, deadline, say)
        elif name == "tcm":
            model = classes[name](max_examples=max_examples, seed=seed, encoder=encoder).fit(
                sample, graph_dialogues=dialogues, deadline=deadline)
        elif name == "em":
            texts, labels, counts = engagement_examples(engagement)
            model = classes[name](seed=seed, encoder=encoder, **tuning).fit(texts, labels, counts, deadline, say)
        else:
            model = classes[name](max_sentences=sm_sentences, seed=seed).fit(
                [u for d in dialogues for u in d], deadline)
        model.save(os.path.join(output, name))
        root.setdefault("submetrics", {})[name] = {
            "estimator": type(model).__name__, "params": model.get_params(), "info": model.info_,
            "encoder_mode": getattr(model, "encoder_mode", "own model (no MiniLM pass)"), "corpus": trained_on,
            "wall_seconds": round(time.monotonic() - t0, 1), "cpu_seconds": round(time.process_time() - c0, 1)}
        say(f"[mme] {name}: {root['submetrics'][name]['wall_seconds']} s wall, "
            f"{root['submetrics'][name]['cpu_seconds']} s CPU")
        if engagement:
            root["engagement"] = os.path.abspath(engagement)
        root.update({"corpus": os.path.abspath(corpus), "seed": seed, "max_examples": max_examples, "sm_sentences": sm_sentences, "sample_dialogues": len(sample),
                     "sample_utterances": len(utterances)})
        _write_root(output, root)
    return root


def corpus_record(path: str, dialogues: Sequence[Sequence[str]]) -> dict[str, Any]:
    """What a sub-metric was trained on, for its signature: the corpus file's name and a hash of
    the dialogues as read (so a zip and its unpacked text give the same hash, and another
    corpus never passes for DailyDialog)."""
    digest = hashlib.sha256()
    for dialogue in dialogues:
        digest.update("\x1f".join(dialogue).encode("utf-8", "surrogatepass"))
        digest.update(b"\x1e")
    return {"name": os.path.basename(os.path.normpath(path)), "sha256": digest.hexdigest()[:12],
            "dialogues": len(dialogues)}


def corpus_id(root: Mapping[str, Any], sub: str) -> str:
    """`NAME#HASH` of the corpus `sub` was trained on; folders trained before the hash was
    recorded give `NAME#unrecorded`."""
    record = ((root.get("submetrics") or {}).get(sub) or {}).get("corpus")
    if record:
        return f"{record['name']}#{record['sha256']}"
    name = os.path.basename(os.path.normpath(str(root.get("corpus") or "unknown-corpus")))
    return f"{name}#unrecorded"


def _read_root(folder: str) -> dict[str, Any]:
    path = os.path.join(folder, ROOT_CONFIG)
    if os.path.exists(path):
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    return {"kind": KIND}


def _write_root(folder: str, root: dict[str, Any]) -> None:
    from ...data.writers import atomic_write

    with atomic_write(os.path.join(folder, ROOT_CONFIG)) as handle:
        json.dump(root, handle, indent=1, sort_keys=True, default=str)
    write_manifest(folder, KIND)


class MMEModel:
    """A verified MME folder; sub-metric models load on first use."""

    def __init__(self, folder: str):
        self.folder = os.path.abspath(folder)
        manifest = verify(self.folder, KIND)
        self.root = _read_root(self.folder)
        self.fingerprint = hashlib.sha256(json.dumps(manifest["files"], sort_keys=True).encode()).hexdigest()[:12]
        self._models: dict[str, Any] = {}

    def has(self, name: str) -> bool:
        return name in (self.root.get("submetrics") or {})

    def get(self, name: str):
        if name not in self._models:
            if not self.has(name):
                raise DialevalError(f"{self.folder}: no {name} sub-metric trained "
                                    f"(train it with `dialeval train mme ... --only {name}`)")
            self._models[name] = _classes()[name].load(os.path.join(self.folder, name))
        return self._models[name]


@lru_cache(maxsize=4)
def _load_cached(folder: str, stamp: str) -> MMEModel:
    from ...progress import loading

    with loading(f"MME-CRS model {folder}"):
        return MMEModel(folder)


def load_cached(folder: str) -> MMEModel:
    """One MMEModel per folder and manifest state per process (re-verified when it changes)."""
    manifest = os.path.join(os.path.abspath(folder), "manifest.json")
    stamp = str(os.path.getmtime(manifest)) if os.path.exists(manifest) else ""
    if not os.path.isdir(folder) or read_manifest(folder) is None:
        raise DialevalError(f"{folder}: not an MME model folder (no manifest.json); "
                            "make one with `dialeval train mme`")
    return _load_cached(os.path.abspath(folder), stamp)
