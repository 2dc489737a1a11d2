"""The MME model folder: one subfolder per sub-metric (`fm/`, `rm/`, `tcm/`, `em/`, `sm/`), each
its own artifact (config.json, arrays.npz or safetensors, manifest.json), plus a root
`config.json` (what was trained, from what, how long it took) and a root manifest over every
file, so a changed file anywhere in the folder is refused before anything is read.

`MMETrainer` (an estimator; `train_mme` is its one-call form) trains the requested sub-metrics
into the folder (keeping the others already there); `MMEModel` opens it for the `mme_*` metrics.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from typing import Any, Callable, Literal, Mapping, Sequence

from ...data.corpus import spec_abspath, spec_name
from ...errors import DialevalError
from ...models.estimator import Estimator
from ...models import store
from ...models.store import read_manifest, verify

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


class MMETrainer(Estimator):
    """The MME sub-metrics trained together into one folder (an estimator whose learned state is
    the fitted sub-metric estimators, `submetrics_`).

    `encoder_mode="finetune"` fine-tunes the top `finetune_layers` MiniLM layers with the head
    of FM, RM and EM (`finetune.py`); TCM and SM have no MiniLM pass to tune (TCM reads only
    MiniLM's input embedding table, SM is its own masked LM, trained end to end already) and
    train as in the frozen mode.

    Options:
      only: the sub-metrics to train, a subset of fm, rm, tcm, em, sm (default: all)
      max_minutes: time budget for the whole run, shared among the sub-metrics (each stops its
        epochs when its share runs out, keeping its best epoch so far)
      max_examples: DailyDialog train utterances sampled for FM/RM/TCM
      sm_sentences: DailyDialog train sentences the specificity masked LM trains on
      seed: random seed
      device: torch device of the MiniLM passes (the frozen features; with finetune or cross,
        the tuned layers and their heads), cpu or cuda[:N]; the small networks trained here
        (FM/RM/EM's heads over frozen features, TCM's graph network, SM's masked LM) stay on
        the CPU
      encoder: sentence-transformers folder to use instead of all-MiniLM-L6-v2
      encoder_mode: frozen (heads only, the default) or finetune (the top MiniLM layers with the
        FM, RM and EM heads; the tuned layers are stored in each sub-metric's folder)
      finetune_layers: with finetune: how many top MiniLM layers to train, 1..6
      finetune_epochs: with finetune: epochs over the training rows after the head-only stage
      finetune_lr: with finetune: AdamW learning rate of the MiniLM layers; the head gets 10x
      rm_max_examples: DailyDialog train utterances sampled for RM alone (default: max_examples)
      rm_hard_negatives: probe families RM trains against besides its random negatives
        (parrot, loop, generic, ...; empty: none, the paper's recipe)
      rm_hard_share: the share of RM's training pairs that get one hard negative
      rm_written_share: the share of RM's pairs from a corpus with replies people wrote to be wrong
        (DailyDialog++'s adversarial negatives, `dailydialog-pp:`) that get one as a negative
      rm_dialogue_share: the share of RM's training pairs that get one more negative drawn from
        their own dialogue (an utterance outside the context read and not the next one; 0: none)
      rm_encoder_mode: RM's own encoder mode, when not the others': cross (one MiniLM reads
        context and response together, all six layers tuned), frozen or finetune
      rm_init: with rm_encoder_mode cross: an MME folder whose cross-encoder RM the training
        continues from, a shipped default or one's own (its layers and head; the rows are this
        run's, so give the corpora, sample size and seed it was trained with to keep its
        held-out rows held out)
    """

    kind = KIND
    schema = 5
    since = {"rm_encoder_mode": 2, "rm_init": 3, "rm_dialogue_share": 4, "rm_written_share": 5}

    def __init__(self, only: Sequence[str] = SUBMETRICS, max_minutes: float | None = None, max_examples: int = 3000,
                 sm_sentences: int = 10000, seed: int = 0, device: str = "cpu", encoder: str | None = None,
                 encoder_mode: Literal["frozen", "finetune"] = "frozen", finetune_layers: int = 2,
                 finetune_epochs: int = 3, finetune_lr: float = 3e-5, rm_max_examples: int | None = None,
                 rm_hard_negatives: str = "", rm_hard_share: float = 0.2, rm_encoder_mode: str | None = None,
                 rm_init: str | None = None, rm_dialogue_share: float = 0.0, rm_written_share: float = 0.0):
        self.rm_encoder_mode = rm_encoder_mode
        self.rm_init = rm_init
        self.rm_max_examples = rm_max_examples
        self.rm_hard_negatives = rm_hard_negatives
        self.rm_hard_share = rm_hard_share
        self.rm_dialogue_share = rm_dialogue_share
        self.rm_written_share = rm_written_share
        self.only = only
        self.max_minutes = max_minutes
        self.max_examples = max_examples
        self.sm_sentences = sm_sentences
        self.seed = seed
        self.device = device
        self.encoder = encoder
        self.encoder_mode = encoder_mode
        self.finetune_layers = finetune_layers
        self.finetune_epochs = finetune_epochs
        self.finetune_lr = finetune_lr

    def _check(self) -> None:
        from ...backbones.runtime import check_device

        check_device("device", self.device)
        if self.encoder_mode not in ("frozen", "finetune"):
            raise DialevalError(f"encoder mode {self.encoder_mode!r}: choose frozen or finetune")
        if self.rm_encoder_mode not in (None, "frozen", "finetune", "cross"):
            raise DialevalError(f"--rm-encoder-mode {self.rm_encoder_mode!r}: choose frozen, finetune or cross")
        if not 1 <= int(self.finetune_layers) <= 6:
            raise DialevalError(f"--finetune-layers {self.finetune_layers}: MiniLM has 6 layers; choose 1..6")
        parse_only(",".join(self.only))
        if self.rm_hard_negatives and "rm" in self.only:     # refused before the corpus is read
            from .relevance import RelevanceModel

            RelevanceModel(hard_negatives=self.rm_hard_negatives)._families()
        for flag, share in (("--rm-hard-share", self.rm_hard_share), ("--rm-dialogue-share", self.rm_dialogue_share),
                            ("--rm-written-share", self.rm_written_share)):
            if not 0 <= float(share) <= 1:
                raise DialevalError(f"{flag} {share}: a share of the pairs, 0..1")
        if self.rm_init:                               # refused before the corpus is read
            self._rm_start()

    def _rm_start(self):
        """The cross-encoder RM of the `rm_init` folder, checked against this run's RM."""
        from .relevance import RelevanceModel

        start = load_cached(self.rm_init).get("rm")
        RelevanceModel(encoder=self.encoder, encoder_mode=self.rm_encoder_mode or self.encoder_mode).check_start(
            start, f"--rm-init {self.rm_init}")
        return start

    def fit(self, corpus: str | Sequence[str], *, engagement: str | None = None,
            say: Callable[[str], None] | None = None, save_to: str | None = None,
            checkpoint=None) -> "MMETrainer":
        """Train `only` on `corpus`, one corpus spec or several read as one (`read_dialogues`;
        EM on the `engagement` folder). With `save_to` (the output folder), the folder is saved
        after each sub-metric, so a long run that stops keeps what it finished; with
        `checkpoint` too (models.resume), a resumed run skips the sub-metrics it finished and
        continues the tuning loop it was in."""
        self._check()
        return self._fit(corpus, engagement=engagement, say=say, save_to=save_to, checkpoint=checkpoint)

    def _fit(self, corpus: str | Sequence[str], *, engagement: str | None, say: Callable[[str], None] | None,
             save_to: str | None, checkpoint=None) -> "MMETrainer":
        from .data import engagement_examples, read_dialogues, sample_dialogues, written_negatives

        only = list(self.only)
        tuning = {"encoder_mode": self.encoder_mode, "finetune_layers": int(self.finetune_layers),
                  "finetune_epochs": int(self.finetune_epochs), "finetune_lr": float(self.finetune_lr)}
        say = say or (lambda m: None)
        if "em" in only and not engagement:
            raise DialevalError("training EM needs --engagement FOLDER (the predictive-engagement data), "
                                "or leave em out with --only")
        specs = [corpus] if isinstance(corpus, str) else list(corpus)
        if not specs:
            raise DialevalError("no training corpus given")
        dialogues = [d for spec in specs for d in read_dialogues(spec)]
        trained_on = corpus_record(specs, dialogues)
        sample = sample_dialogues(dialogues, self.max_examples, self.seed)
        utterances = [u for d in sample for u in d]
        classes = _classes()
        seed, max_examples, encoder = self.seed, self.max_examples, self.encoder
        self.submetrics_: dict[str, Any] = {}
        self.records_: dict[str, Any] = {}
        where = [spec_abspath(spec) for spec in specs]
        self.root_ = {"corpus": where[0] if len(where) == 1 else where, "seed": seed, "max_examples": max_examples,
                      "sm_sentences": self.sm_sentences, "sample_dialogues": len(sample),
                      "sample_utterances": len(utterances)}
        if engagement:
            self.root_["engagement"] = os.path.abspath(engagement)
        started = time.monotonic()
        for k, name in enumerate(only):
            deadline = None
            if self.max_minutes:
                left = self.max_minutes * 60 - (time.monotonic() - started)
                deadline = time.monotonic() + max(left / (len(only) - k), 1.0)
            if checkpoint is not None and save_to is not None and checkpoint.stage_done(name):
                say(f"[mme] {name}: finished before the stop, kept in {save_to}")
                continue
            part = checkpoint.scope(name) if checkpoint is not None else None
            t0, c0 = time.monotonic(), time.process_time()
            say(f"[mme] training {name} ...")
            if name == "fm":
                model = classes[name](max_examples=max_examples, seed=seed, encoder=encoder, **tuning).fit(
                    utterances, deadline, say, checkpoint=part, device=self.device)
            elif name == "rm":
                rm_examples = int(self.rm_max_examples or max_examples)
                rm_sample = sample if rm_examples == max_examples else sample_dialogues(dialogues, rm_examples, seed)
                rm_tuning = {**tuning, "encoder_mode": self.rm_encoder_mode or self.encoder_mode}
                model = classes[name](max_examples=rm_examples, seed=seed, encoder=encoder,
                                      hard_negatives=self.rm_hard_negatives, hard_share=self.rm_hard_share,
                                      dialogue_share=float(self.rm_dialogue_share),
                                      written_share=float(self.rm_written_share),
                                      **rm_tuning).fit(rm_sample, deadline, say,
                                                       start=self._rm_start() if self.rm_init else None,
                                                       checkpoint=part, device=self.device,
                                                       written=written_negatives(specs) if self.rm_written_share else None)
            elif name == "tcm":
                model = classes[name](max_examples=max_examples, seed=seed, encoder=encoder).fit(
                    sample, graph_dialogues=dialogues, deadline=deadline)
            elif name == "em":
                texts, labels, counts = engagement_examples(engagement)
                model = classes[name](seed=seed, encoder=encoder, **tuning).fit(texts, labels, counts, deadline, say,
                                                                                checkpoint=part, device=self.device)
            else:
                model = classes[name](max_sentences=self.sm_sentences, seed=seed).fit(
                    [u for d in dialogues for u in d], deadline)
            self.submetrics_[name] = model
            self.records_[name] = {
                "estimator": type(model).__name__, "params": model.recorded_params(), "info": model.info_,
                "encoder_mode": getattr(model, "encoder_mode", "own model (no MiniLM pass)"), "corpus": trained_on,
                "wall_seconds": round(time.monotonic() - t0, 1), "cpu_seconds": round(time.process_time() - c0, 1)}
            say(f"[mme] {name}: {self.records_[name]['wall_seconds']} s wall, "
                f"{self.records_[name]['cpu_seconds']} s CPU")
            if save_to is not None:
                self.save(save_to)
                if checkpoint is not None:
                    checkpoint.mark_stage(name)
        return self

    # -- persistence ---------------------------------------------------------------------------
    # The folder keeps the layout the `mme_*` metrics read (`MMEModel`): one artifact per
    # sub-metric, the root record mme.json, a manifest over everything; config.json adds the
    # trainer's parameters. Sub-metrics already in the folder and not retrained are kept.
    def fitted_attributes(self) -> list[str]:
        return [n for n in ("submetrics_", "records_", "root_") if hasattr(self, n)]

    def _state(self):
        return {"trained": sorted(self.submetrics_)}, {}

    def save(self, directory) -> str:
        self._saving_over = os.path.abspath(os.fspath(directory))
        try:
            return super().save(directory)
        finally:
            del self._saving_over

    def _root(self) -> dict[str, Any]:
        root = _read_root(self._saving_over) if os.path.isdir(self._saving_over) else {"kind": KIND}
        root.setdefault("submetrics", {}).update(self.records_)
        root.update(self.root_)
        return root

    def _write_files(self, staging_dir: str) -> None:
        import shutil

        root = self._root()
        for name in root["submetrics"]:
            target = os.path.join(staging_dir, name)
            if name in self.submetrics_:
                self.submetrics_[name].save(target)
            else:                               # trained earlier into this folder: kept as it is
                shutil.copytree(os.path.join(self._saving_over, name), target)
        with open(os.path.join(staging_dir, ROOT_CONFIG), "w", encoding="utf-8") as handle:
            json.dump(root, handle, indent=1, sort_keys=True, default=str)

    def _set_state(self, values, arrays, directory: str) -> None:
        folder = MMEModel(directory)
        names = sorted((folder.root.get("submetrics") or {}))
        self.submetrics_ = {name: folder.get(name) for name in names}
        self.records_ = {name: folder.root["submetrics"][name] for name in names}
        self.root_ = {k: v for k, v in folder.root.items() if k not in ("submetrics", "kind")}

    @classmethod
    def load(cls, directory) -> "MMETrainer":
        """A trained MME folder with every sub-metric loaded; folders written before this class
        (no config.json) load with the settings their mme.json recorded."""
        directory = os.fspath(directory)
        if os.path.exists(os.path.join(directory, "config.json")):
            return super().load(directory)
        verify(directory, KIND)
        root = _read_root(directory)
        model = cls(only=sorted(root.get("submetrics") or {}),
                    **{k: root[k] for k in ("seed", "max_examples", "sm_sentences") if k in root})
        model._set_state({}, {}, directory)
        return model


def train_mme(corpus: str | Sequence[str], output: str, *, engagement: str | None = None,
              say: Callable[[str], None] | None = None, checkpoint=None, **params: Any) -> dict[str, Any]:
    """Train `MMETrainer(**params)` into `output`, saving after each sub-metric; returns the
    folder's root record (mme.json)."""
    MMETrainer(**params).fit(corpus, engagement=engagement, say=say, save_to=output, checkpoint=checkpoint)
    return _read_root(output)


def corpus_record(path: str | Sequence[str], dialogues: Sequence[Sequence[str]]) -> dict[str, Any]:
    """What a sub-metric was trained on, for its signature: the corpus files' names (joined by
    `+`) and a hash of the dialogues as read (so a zip and its unpacked text give the same hash,
    and another corpus never passes for DailyDialog)."""
    specs = [path] if isinstance(path, str) else list(path)
    digest = hashlib.sha256()
    for dialogue in dialogues:
        digest.update("\x1f".join(dialogue).encode("utf-8", "surrogatepass"))
        digest.update(b"\x1e")
    return {"name": "+".join(spec_name(s) for s in specs), "sha256": digest.hexdigest()[:12],
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


class MMEModel:
    """A verified MME folder; sub-metric models load on first use."""

    def __init__(self, folder: str):
        self.folder = os.path.abspath(folder)
        with store.verified() as checked:
            verify(self.folder, KIND)
            self._checked = dict(checked)     # the sub-metrics' files, hashed here once
        self.root = _read_root(self.folder)
        from ...models.artifacts import model_field

        self.tag = model_field(KIND, self.folder)     # the signature's `model:` field; memo keys
        self._models: dict[str, Any] = {}

    def has(self, name: str) -> bool:
        return name in (self.root.get("submetrics") or {})

    def get(self, name: str):
        if name not in self._models:
            if not self.has(name):
                raise DialevalError(f"{self.folder}: no {name} sub-metric trained "
                                    f"(train it with `dialeval train mme ... --only {name}`)")
            with store.verified(self._checked):
                self._models[name] = _classes()[name].load(os.path.join(self.folder, name))
        return self._models[name]


def check_folder(folder: str) -> dict:
    """The folder's manifest, refused with one line when it is not an MME folder or is damaged."""
    from ...models.artifacts import check

    manifest = read_manifest(folder) if os.path.isdir(folder) else None
    if manifest is None:
        raise DialevalError(f"{folder}: not an MME model folder (no manifest.json); "
                            "make one with `dialeval train mme`")
    return check(folder, KIND)      # every file hashed once per process; loading hashes nothing again


def load_cached(folder: str) -> MMEModel:
    """The MME folder through the one door for trained models (verified once per content)."""
    from ...models.artifacts import open_model

    folder = os.path.abspath(folder)
    if not os.path.isfile(os.path.join(folder, "manifest.json")):
        check_folder(folder)        # its one-line refusal
    return open_model(folder, KIND, MMEModel, what=f"MME-CRS model {folder}")


def sub_signature(folder: str, sub: str) -> tuple[str | None, list[tuple[str, Any]]]:
    """(encoder entry, the sub-metric's own signature options) as a loaded sub-metric gives them,
    read from its config.json: a run is planned without loading MME."""
    from ...models.artifacts import read_json

    config = read_json(os.path.join(folder, sub))
    params, state = config.get("params") or {}, config.get("state") or {}
    encoder = (state.get("info_") or {}).get("encoder")
    opts: list[tuple[str, Any]] = []
    if hasattr(_classes()[sub], "signature_options"):
        import inspect

        defaults = {k: p.default for k, p in inspect.signature(_classes()[sub]).parameters.items()}
        mode = params.get("encoder_mode", defaults.get("encoder_mode", "frozen"))
        if mode == "cross":
            opts.append(("encoder_mode", "cross"))
        elif mode != "frozen":
            layers = params.get("finetune_layers", defaults.get("finetune_layers"))
            opts.append(("encoder_mode", f"finetune-top{layers}"))
    return encoder, opts
