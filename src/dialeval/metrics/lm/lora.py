"""LoRA fine-tuning of a pretrained causal LM on dialogue pairs, and loading the adapter back.

The holistic paper fine-tuned GPT-2 on DailyDialog; the pretrained model that can be reached
here is SmolLM2-135M (a packaged GGUF, dequantised once). Fine-tuning all of it would ship
540 MB; a rank-8 LoRA adapter on the attention and MLP projections ships about 5 MB in fp16,
so that is the shape of the default. The adapter folder is a dialeval artifact
(config.json + manifest.json with every file's sha256) holding peft's adapter_config.json and
adapter_model.safetensors (fp16), the layout it was trained in, and the raw scores of held-out
pairs that the normalised metrics' bounds need (arrays.npz).

The base is named in config.json either by a folder path or by the name of a prepared packaged
backbone (`smollm2-135m`), which `resolve_base` turns into the prepared folder; its fingerprint
(name + weight-file size) is recorded at training time and checked at load time, so an adapter
is never applied to a different base without saying so.

Training is deterministic for a seed on one device and thread count: the pairs are shuffled by
a seeded generator, dropout is off, and the batches are fixed by the seed.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import random
import shutil
import tempfile
import time
import warnings
from dataclasses import asdict, dataclass
from typing import Callable, Literal

import numpy as np

from ...data.corpus import specs_name
from ...errors import DialevalError
from ...models import store
from ...models.estimator import Estimator

KIND = "lm-lora"
ADAPTER_CONFIG = "adapter_config.json"
ADAPTER_WEIGHTS = "adapter_model.safetensors"
DEFAULT_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


@dataclass
class LoraTrainConfig:
    """`LoraTrainer`'s settings as one value (what `train_lora` takes)."""

    rank: int = 8
    alpha: float = 16.0
    targets: tuple[str, ...] = DEFAULT_TARGETS
    lr: float = 2e-4
    steps: int = 2000
    max_minutes: float | None = None
    batch_size: int = 16
    max_length: int = 96
    warmup_steps: int = 50
    train_pairs: int | None = None      # a seeded subset of the training pairs
    reference_pairs: int = 500           # held out, scored for the normalisation bounds
    layout: str = "plain"
    lowercase: bool = False
    seed: int = 0
    threads: int | None = None
    device: str = "cpu"
    negatives: str = ""
    negative_share: float = 0.25
    unlikelihood_weight: float = 1.0
    extra: dict | None = None


def is_adapter(path: str) -> bool:
    return os.path.isdir(path) and os.path.exists(os.path.join(path, ADAPTER_CONFIG))


def resolve_base(name: str, adapter_dir: str | None = None) -> str:
    """A base model folder from an adapter's base name: a path (absolute, or relative to the
    adapter folder) or the name of a packaged causal LM (`models.pretrained`'s one table)."""
    from ...models.pretrained import pretrained, pretrained_folder, pretrained_names

    if pretrained(name, role="causal-lm") is not None:
        return pretrained_folder(name, "causal-lm")
    candidates = [name] if os.path.isabs(name) else [os.path.join(adapter_dir or "", name), name]
    for candidate in candidates:
        if os.path.exists(candidate):
            return os.path.abspath(candidate)
    raise DialevalError(f"{adapter_dir or name}: the adapter's base model {name!r} is neither a folder "
                        f"nor a packaged backbone ({', '.join(sorted(pretrained_names('causal-lm')))})")


def base_identity(path: str) -> str:
    from ...backbones.fingerprint import model_fingerprint

    return model_fingerprint(path)


def _prepared_source_hash(base_path: str) -> str:
    """`:<sha256[:12]>` of the packaged file a prepared backbone was made from, when it is one
    (its prepared.json records it), so the signature names the base's content, not only its size."""
    try:
        with open(os.path.join(base_path, "prepared.json"), encoding="utf-8") as handle:
            digests = json.load(handle).get("sha256") or {}
    except (OSError, ValueError):
        return ""
    return f":{sorted(digests.values())[0][:12]}" if digests else ""


def _base_model(base: str, device: str):
    """The base LM's weights for peft to change: never the backbone cache's copy (the judge may
    read it), and a copy of it only where it is cached already; otherwise loaded for the adapter
    alone, so that the merged model is the one copy of the base the process holds."""
    from ...backbones.loading import private_model

    bb = private_model(base, kind="auto", device=device, task="causal-lm")
    return bb.model, bb.tokenizer


class LoraTrainer(Estimator):
    """A LoRA adapter fine-tuned on dialogue pairs over a pretrained causal LM, with the raw
    scores of held-out pairs that normalise lm_coherence and lm_fluency.

    The base is a `fit` argument, as `LMTrainer`'s `init` is: it is the starting point, not a
    setting of the training. The saved folder is the adapter artifact `--lm-model` reads
    (config.json is the training record, not the estimator layout, so that adapters trained
    before this class load unchanged).

    Options:
      rank: adapter rank
      alpha: adapter scale alpha
      targets: comma-separated module names to adapt (default: attention and MLP projections)
      lr: peak learning rate
      steps: optimiser steps
      max_minutes: stop after this many minutes of training
      batch_size: sequences per optimiser step
      max_length: tokens per training sequence
      warmup_steps: linear warm-up steps
      train_pairs: train on a seeded subset of this many pairs
      reference_pairs: held-out pairs scored for the normalisation bounds
      layout: sequence frame (plain: <sep> q <sep> r); chosen on validation likelihood
      lowercase: lowercase every utterance (training and scoring)
      seed: random seed
      threads: CPU threads (default: torch's own count)
      device: torch device
      negatives: comma-separated probe families (parrot, loop, ...) trained as unlikely replies
      negative_share: the share of training pairs that also give one such negative
      unlikelihood_weight: the weight of the negatives' unlikelihood loss beside the likelihood one
      extra: entries added to the training record as they are
    """

    kind = KIND

    def __init__(self, rank: int = 8, alpha: float = 16.0, targets: tuple[str, ...] | str = DEFAULT_TARGETS,
                 lr: float = 2e-4, steps: int = 2000, max_minutes: float | None = None, batch_size: int = 16,
                 max_length: int = 96, warmup_steps: int = 50, train_pairs: int | None = None,
                 reference_pairs: int = 500, layout: Literal["plain", "chat"] = "plain", lowercase: bool = False,
                 seed: int = 0, threads: int | None = None, device: str = "cpu", negatives: str = "",
                 negative_share: float = 0.25, unlikelihood_weight: float = 1.0, extra: dict | None = None):
        self.rank = rank
        self.alpha = alpha
        self.targets = targets
        self.lr = lr
        self.steps = steps
        self.max_minutes = max_minutes
        self.batch_size = batch_size
        self.max_length = max_length
        self.warmup_steps = warmup_steps
        self.train_pairs = train_pairs
        self.reference_pairs = reference_pairs
        self.layout = layout
        self.lowercase = lowercase
        self.seed = seed
        self.threads = threads
        self.device = device
        self.negatives = negatives
        self.negative_share = negative_share
        self.unlikelihood_weight = unlikelihood_weight
        self.extra = extra

    def _targets(self) -> tuple[str, ...]:
        """The command line gives the module names as one comma-separated text."""
        if isinstance(self.targets, str):
            return tuple(t.strip() for t in self.targets.split(",") if t.strip())
        return tuple(self.targets)

    def fit(self, corpus: str, base: str, *, base_name: str | None = None, reference_corpus: str | None = None,
            log: Callable[[str], None] | None = None, checkpoint=None) -> "LoraTrainer":
        """Fine-tune an adapter on `base` (a causal-LM folder, a GGUF file or a packaged
        backbone name) with `corpus`'s query-response pairs; keeps `model_` (the peft model),
        `reference_` (raw scores of the held-out pairs) and `info_` (the training record)."""
        import torch
        from peft import LoraConfig, get_peft_model

        from ...data.corpus import pairs as corpus_pairs, read_corpus, read_specs
        from ...models.training import train_causal_lm
        from .loaded import LoadedLM, offline
        from .logprob import layout as frame_layout

        offline()
        targets = self._targets()
        if self.negatives:
            self._negative_families()      # a bad family or share stops before the corpus and base load
        log = log or (lambda _m: None)
        if self.threads:
            torch.set_num_threads(self.threads)
        started = time.time()
        cpu0 = time.process_time()
        deadline = started + 60 * self.max_minutes if self.max_minutes else None
        random.seed(self.seed)
        np.random.seed(self.seed)
        torch.manual_seed(self.seed)
        base_path = resolve_base(base)
        all_pairs = corpus_pairs(read_specs(corpus))
        rng = random.Random(self.seed)
        order = list(range(len(all_pairs)))
        rng.shuffle(order)
        if reference_corpus:
            ref_pairs = corpus_pairs(read_corpus(reference_corpus))
            random.Random(self.seed).shuffle(ref_pairs)
            ref_pairs = ref_pairs[: self.reference_pairs]
            train_idx = order
        else:
            ref_pairs = [all_pairs[i] for i in order[: self.reference_pairs]]
            train_idx = order[self.reference_pairs:]
        if self.train_pairs:
            train_idx = train_idx[: self.train_pairs]
        train_pairs = [all_pairs[i] for i in train_idx]
        if not ref_pairs or not train_pairs:
            raise DialevalError(f"{corpus}: too few query-response pairs for training and reference scores")

        model, tokenizer = _base_model(base_path, self.device)
        sep = tokenizer.eos_token_id if tokenizer.eos_token_id is not None else tokenizer.bos_token_id
        max_len = int(getattr(model.config, "max_position_embeddings", None) or 1024)
        lm = LoadedLM(path=base_path, model=model, tokenizer=tokenizer, sep_id=int(sep), max_len=self.max_length,
                      device=self.device, layout=self.layout, lowercase=self.lowercase)
        # training sequences: the scoring frame plus the end token, cut to max_length
        sequences = []
        for q, r in train_pairs:
            ids, _ = frame_layout(lm, lm.encode(q), lm.encode(r))
            ids = (ids + lm.frame.end)[: self.max_length]
            sequences.append((ids, len(lm.frame.head)))
        unlikely = self._negative_sequences(lm, train_pairs, sequences)
        n_tokens = sum(len(s) for s, _ in sequences)
        log(f"train lm --lora: {len(sequences)} pairs ({n_tokens} tokens), {len(ref_pairs)} reference pairs, "
            f"base {base_path}, layout {self.layout}{' lowercased' if self.lowercase else ''}")

        for p in model.parameters():
            p.requires_grad_(False)
        peft_config = LoraConfig(r=self.rank, lora_alpha=self.alpha, target_modules=list(targets),
                                 lora_dropout=0.0, bias="none", task_type="CAUSAL_LM")
        with _quiet_peft():
            model = get_peft_model(model, peft_config)
        model.train()
        params = [p for p in model.parameters() if p.requires_grad]
        n_params = sum(p.numel() for p in params)
        warmup, steps = self.warmup_steps, self.steps

        def lr_at(step: int) -> float:
            if step < warmup:
                return (step + 1) / warmup
            return max(0.05, 1 - (step - warmup) / max(1, steps - warmup))

        # batches of similar length (little padding), their order fixed by the seed
        by_len = sorted(range(len(sequences)), key=lambda i: (len(sequences[i][0]), i))
        batches = [by_len[k:k + self.batch_size] for k in range(0, len(by_len), self.batch_size)]

        def one_pass() -> list[list[int]]:
            rng.shuffle(batches)
            return batches

        from ...progress import Heartbeat

        beat = Heartbeat(log)

        def after_step(state) -> None:
            beat(lambda: f"train lm --lora: step {state.steps}/{steps}, loss {np.mean(state.losses[-50:]):.4f}, "
                         f"{state.tokens / state.seconds:.0f} tokens/s, {state.seconds / 60:.1f} min")

        loop = train_causal_lm(model, params, sequences, pad_id=lm.sep_id, passes=one_pass, total_steps=steps,
                               lr=self.lr, weight_decay=0.0, schedule=lr_at, device=self.device,
                               out_of_time=None if deadline is None else lambda: time.time() >= deadline,
                               after_step=after_step, unlikely=unlikely, unlikelihood_weight=self.unlikelihood_weight,
                               checkpoint=checkpoint)
        step, losses, tokens_seen = loop.steps, loop.losses, loop.tokens
        stopped = "max_minutes" if loop.out_of_time else "steps"
        train_seconds = loop.seconds
        log(f"train lm --lora: stopped after {step} steps ({stopped}), {tokens_seen} tokens in {train_seconds:.0f} s")
        model.eval()
        info = {
            "base": base_name or base, "base_fingerprint": base_identity(base_path), "layout": self.layout,
            "lowercase": self.lowercase, "rank": self.rank, "alpha": self.alpha, "targets": list(targets),
            "lr": self.lr, "steps_done": step, "steps": self.steps, "stopped_by": stopped,
            "batch_size": self.batch_size, "max_length": self.max_length, "seed": self.seed, "device": self.device,
            "train_pairs": len(sequences), "train_tokens_seen": tokens_seen, "trainable_parameters": n_params,
            "final_loss": float(np.mean(losses[-50:])) if losses else math.nan,
            "train_seconds": round(train_seconds, 1), "torch_threads": torch.get_num_threads(),
            "corpus": specs_name(corpus), **(self.extra or {}),
        }
        if unlikely is not None:
            info.update(negatives=self.negatives, negative_share=self.negative_share,
                        unlikelihood_weight=self.unlikelihood_weight, negative_sequences=int(sum(unlikely)))
        # reference scores for the normalised metrics, with the adapter merged in
        from .logprob import token_logprob_sums

        lm.model = model
        lm.max_len = max_len
        q_ids = [lm.encode(q) for q, _ in ref_pairs]
        r_ids = [lm.encode(r) for _, r in ref_pairs]
        with torch.inference_mode():
            # one sequence per pass: held-out pairs rarely share a length, and filling every
            # batch to a fixed row count would multiply the work on CPU
            cs, cc = token_logprob_sums(lm, q_ids, r_ids, 1)
            fs, fc = token_logprob_sums(lm, [None] * len(r_ids), r_ids, 1)
        with np.errstate(invalid="ignore", divide="ignore"):
            reference = {"coherence_raw": (cs / np.maximum(cc, 1))[cc > 0],
                         "fluency_raw": (fs / np.maximum(fc, 1))[fc > 0]}
        info["reference_pairs"] = len(ref_pairs)
        info["cpu_seconds"] = round(time.process_time() - cpu0, 1)
        info["wall_seconds"] = round(time.time() - started, 1)
        self.model_, self.reference_, self.info_ = model, reference, info
        return self

    def _negative_families(self) -> list[str]:
        """The `negatives` asked for, checked (with `negative_share`) before anything is read."""
        from ...data.variants import TRAINABLE, check_families

        families = check_families(self.negatives)
        for f in families:
            if f not in TRAINABLE or f == "empty":
                raise DialevalError(f"negatives: {f!r} cannot be trained as an unlikely reply "
                                    f"(valid: {', '.join(x for x in TRAINABLE if x != 'empty')})")
        if not 0 < self.negative_share <= 1:
            raise DialevalError(f"negative_share must be in (0, 1], got {self.negative_share}")
        return families

    def _negative_sequences(self, lm, train_pairs, sequences) -> list[bool] | None:
        """Append to `sequences` one degenerate reply (a probe family's variant, `negatives`) for
        a seeded `negative_share` of the pairs, each framed after its query with the loss on the
        reply's tokens alone and no end token; returns which sequences are such negatives (None
        without `negatives`: the plain likelihood training, bit for bit).

        Why: a language model's likelihood of a reply given the context (`lm_coherence`) is
        highest for a copy of the context's last turn or a repeated phrase, the replies that
        copying makes likely. Unlikelihood training (Welleck et al. 2019) lowers the
        probability of the tokens of such replies, so the adapter learns to find them unlikely."""
        if not self.negatives:
            return None
        from ...data.variants import bland_replies, training_variant
        from .logprob import layout as frame_layout

        families = self._negative_families()
        bland = bland_replies([r for _, r in train_pairs]) if "generic" in families else ()
        rng = random.Random(f"{self.seed}:unlikely")
        unlikely = [False] * len(sequences)
        for i, (q, r) in enumerate(train_pairs):
            if rng.random() >= self.negative_share:
                continue
            text = training_variant(families[i % len(families)], [q], r, self.seed, i, bland)
            if not text:
                continue
            ids, start = frame_layout(lm, lm.encode(q), lm.encode(text))
            ids = ids[: self.max_length]
            if start < len(ids):
                sequences.append((ids, start))
                unlikely.append(True)
        return unlikely

    # -- persistence: the adapter folder ------------------------------------------------------------
    def fitted_attributes(self) -> list[str]:
        return [n for n in ("model_", "reference_", "info_") if hasattr(self, n)]

    def save(self, directory) -> str:
        self.check_fitted()
        return save_adapter(self.model_, os.fspath(directory), self.info_, self.reference_)

    @classmethod
    def load(cls, directory, device: str = "cpu") -> "LoraTrainer":
        """A trained adapter, unmerged on a private copy of its base (so it can be saved again);
        the settings are those its training record keeps. Scoring reads adapters through
        `load_adapter`, which merges them."""
        from peft import PeftModel

        path = os.fspath(directory)
        info, base_path = _adapter_record(path)
        model, _tokenizer = _base_model(base_path, device)
        with _quiet_peft():
            model = PeftModel.from_pretrained(model, path, is_trainable=False)
        kept = {k: info[k] for k in ("rank", "alpha", "targets", "lr", "steps", "batch_size", "max_length",
                                    "layout", "lowercase", "seed") if k in info}
        trainer = cls(**{**kept, "device": device})
        if "targets" in kept:
            trainer.targets = tuple(kept["targets"])
        trainer.model_, trainer.info_ = model, info
        trainer.reference_ = _read_reference(path)
        return trainer


def train_lora(corpus: str, out_dir: str, base: str, config: LoraTrainConfig | None = None, *,
               base_name: str | None = None, reference_corpus: str | None = None,
               log: Callable[[str], None] | None = None) -> dict:
    """Fine-tune a LoRA adapter on `corpus`'s query-response pairs and save it; returns the
    training info (the one-call form of `LoraTrainer`)."""
    trainer = LoraTrainer(**asdict(config or LoraTrainConfig()))
    trainer.fit(corpus, base, base_name=base_name, reference_corpus=reference_corpus, log=log)
    trainer.save(out_dir)
    info = trainer.info_
    (log or (lambda _m: None))(f"train lm --lora: wrote {out_dir} ({info['wall_seconds']:.0f} s wall, "
                               f"{info['cpu_seconds']:.0f} s CPU)")
    return info


def save_adapter(peft_model, out_dir: str, info: dict, reference: dict[str, np.ndarray]) -> str:
    """peft's adapter files with the weights cast to fp16, as a dialeval artifact."""
    import torch
    from safetensors.torch import load_file, save_file

    tmp = tempfile.mkdtemp(prefix="lora-")
    try:
        peft_model.save_pretrained(tmp, safe_serialization=True)
        weights = load_file(os.path.join(tmp, ADAPTER_WEIGHTS))
        save_file({k: v.to(torch.float16).contiguous() for k, v in sorted(weights.items())},
                  os.path.join(tmp, ADAPTER_WEIGHTS), metadata={"format": "pt"})
        with open(os.path.join(tmp, ADAPTER_CONFIG), encoding="utf-8") as handle:
            adapter_config = json.load(handle)
        adapter_config["base_model_name_or_path"] = info["base"]
        with open(os.path.join(tmp, ADAPTER_CONFIG), "w", encoding="utf-8") as handle:
            json.dump(adapter_config, handle, indent=1, sort_keys=True)
        return store.save_artifact(out_dir, KIND, info, reference,
                                   files={ADAPTER_CONFIG: os.path.join(tmp, ADAPTER_CONFIG),
                                          ADAPTER_WEIGHTS: os.path.join(tmp, ADAPTER_WEIGHTS)})
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def load_adapter(path: str, device: str = "cpu"):
    """(LoadedLM with the adapter merged into a private copy of its base, info). Refuses a
    damaged adapter (manifest check) or one whose base is not the one it was trained on."""
    from .loaded import LoadedLM

    manifest = store.verify(path, KIND)
    info, base_path = _adapter_record(path, manifest)
    model, tokenizer = _base_model(base_path, device)
    from peft import PeftModel

    try:
        with _quiet_peft():
            model = PeftModel.from_pretrained(model, path, is_trainable=False).merge_and_unload()
    except Exception as exc:  # peft raises many kinds for a bad adapter
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
        raise DialevalError(f"{path}: cannot apply the LoRA adapter ({type(exc).__name__}: {first})") from None
    model.eval()
    sep = tokenizer.eos_token_id if tokenizer.eos_token_id is not None else tokenizer.bos_token_id
    max_len = int(getattr(model.config, "max_position_embeddings", None) or 1024)
    reference = _read_reference(path)
    lm = LoadedLM(path=path, model=model, tokenizer=tokenizer, sep_id=int(sep), max_len=max_len, device=device,
                  info=info, reference=reference,
                  layout=info.get("layout", "plain"), lowercase=bool(info.get("lowercase", False)))
    return lm


def _adapter_record(path: str, manifest: dict | None = None) -> tuple[dict, str]:
    """(training record, base folder) of a verified adapter whose base is the one it was
    trained on."""
    if manifest is None:
        store.verify(path, KIND)
    try:
        with open(os.path.join(path, store.CONFIG), encoding="utf-8") as handle:
            info = json.load(handle)
        with open(os.path.join(path, ADAPTER_CONFIG), encoding="utf-8") as handle:
            adapter_config = json.load(handle)
    except (OSError, ValueError) as exc:
        raise DialevalError(f"{path}: unreadable adapter config ({exc})") from None
    base_name = info.get("base") or adapter_config.get("base_model_name_or_path")
    if not base_name:
        raise DialevalError(f"{path}: the adapter names no base model")
    base_path = resolve_base(base_name, path)
    expected = info.get("base_fingerprint")
    if expected and base_identity(base_path).split(":")[-1] != expected.split(":")[-1]:
        raise DialevalError(f"{path}: trained on base {expected}, but {base_path} is {base_identity(base_path)}")
    return info, base_path


def _read_reference(path: str) -> dict[str, np.ndarray]:
    arrays = os.path.join(path, store.ARRAYS)
    if not os.path.exists(arrays):
        return {}
    with np.load(arrays, allow_pickle=False) as data:
        return {k: data[k] for k in data.files}


@contextlib.contextmanager
def _quiet_peft():
    """peft asks transformers' deprecated `is_gradient_checkpointing`, which warns on every
    adapter load; the warning is about the two libraries, not about anything a user can change."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing.*", category=FutureWarning)
        yield
