"""The trainable AM-FM model: an estimator in scikit-learn's shape.

`AMFMModel(dims=10, order=2, ...)` does no work; `fit(sentences)` learns the LSI space and
the n-gram LM; `save(dir)` writes an artifact folder (config.json, arrays.npz, lm.arpa,
manifest.json with sha256) and `load(dir)` refuses a folder whose files changed or are
missing. The paper trained the SVD on 10,000 randomly chosen sentences and the LM on all of
its corpus; `lsi_sentences` keeps that split (None: the SVD sees every sentence too).
"""

from __future__ import annotations

import os
import random
import tempfile
import time
from typing import Any, Literal, Sequence

import numpy as np

from ...errors import DialevalError
from ...models.estimator import Estimator
from .lsi import LSI, WEIGHTINGS, fit_lsi
from .ngram import ArpaLM, train_arpa
from .text import TOKENIZATION

KIND = "amfm"
LM_FILE = "lm.arpa"


class AMFMModel(Estimator):
    """AM-FM's two trained parts: the LSI space (AM) and the n-gram language model (FM).

    Options:
      dims: LSI dimension L (default 10, the paper's)
      order: n-gram order n (default 2, the paper's)
      weighting: bag-of-words term weighting for LSI (default tf: raw counts)
      lsi_sentences: random sentences the SVD is trained on (default 10000, the paper's; 0: all)
      seed: random seed of the SVD's sentence sample and of the SVD
    """

    kind = KIND

    def __init__(self, dims: int = 10, order: int = 2, weighting: Literal["tf", "binary", "tfidf"] = "tf",
                 lsi_sentences: int | None = 10000, seed: int = 0):
        self.dims = dims
        self.order = order
        self.weighting = weighting
        self.lsi_sentences = lsi_sentences
        self.seed = seed

    # -- learning ---------------------------------------------------------------------------
    def fit(self, sentences: Sequence[str], *, source: str | None = None) -> "AMFMModel":
        if self.weighting not in WEIGHTINGS:
            raise DialevalError(f"unknown weighting {self.weighting!r}; choose from {', '.join(WEIGHTINGS)}")
        if int(self.dims) < 1:
            raise DialevalError(f"--dims {self.dims}: the LSI dimension must be 1 or more")
        if self.lsi_sentences is not None and int(self.lsi_sentences) < 0:
            raise DialevalError(f"--lsi-sentences {self.lsi_sentences}: give 0 (all sentences) or more")
        sentences = [s for s in sentences if s.strip()]
        if not sentences:
            raise DialevalError("AM-FM training corpus is empty")
        start = time.perf_counter()
        lsi_part = sentences
        if self.lsi_sentences and len(sentences) > self.lsi_sentences:
            lsi_part = random.Random(self.seed).sample(sentences, self.lsi_sentences)
        self.lsi_ = fit_lsi(lsi_part, self.dims, weighting=self.weighting, seed=self.seed)
        # lmplz writes a file; the model keeps its text so that nothing outlives fit() in the
        # temporary directory and save() writes it straight into the artifact
        with tempfile.TemporaryDirectory(prefix="dialeval-amfm-") as tmp:
            arpa = train_arpa(sentences, self.order, os.path.join(tmp, LM_FILE))
            self.lm_ = ArpaLM(arpa)
            with open(arpa, "rb") as handle:
                self._arpa_bytes = handle.read()
        self.info_ = {"sentences": len(sentences), "lsi_sentences_used": len(lsi_part),
                      "vocabulary": len(self.lsi_.vocab), "train_seconds": time.perf_counter() - start,
                      "source": source}
        return self

    def fit_corpus(self, corpus: Sequence[str], corpus_format: str | None = None) -> "AMFMModel":
        """`fit` on the sentences of the corpora `train amfm --corpus` names (read as one),
        recorded as their names joined by commas."""
        return self.fit(corpus_sentences(corpus, corpus_format), source=", ".join(corpus))

    def summary(self) -> dict[str, Any]:
        """What `train amfm` prints beside the folder: the corpus and the sizes it gave."""
        self.check_fitted()
        return {"sentences": self.info_["sentences"], "lsi_sentences_used": self.info_["lsi_sentences_used"],
                "vocabulary": self.info_["vocabulary"], "dims_fitted": self.lsi_.dims, "lm_order": self.lm_.order,
                "train_seconds": round(self.info_["train_seconds"], 1)}

    # -- persistence ------------------------------------------------------------------------
    def config(self) -> dict[str, Any]:
        """The flat description of a fitted model (what `train amfm` prints and config.json held
        before the estimator layout)."""
        return {"dims": self.dims, "dims_fitted": self.lsi_.dims, "order": self.order,
                "lm_order": self.lm_.order, "weighting": self.weighting,
                "lsi_sentences": self.lsi_sentences, "seed": self.seed,
                "tokenization": TOKENIZATION, "estimator": "kenlm-lmplz modified Kneser-Ney",
                **self.info_}

    def _description(self) -> dict[str, Any]:
        info = self.config()
        info["lm_estimator"] = info.pop("estimator")     # "estimator" names the class in config.json
        return info

    def fitted_attributes(self) -> list[str]:
        return [name for name in ("lsi_", "lm_", "info_") if hasattr(self, name)]

    def _state(self):
        arrays = {"vocab": np.asarray(self.lsi_.vocab, dtype=str),
                  "components": self.lsi_.components, "singular_values": self.lsi_.singular_values,
                  "idf": self.lsi_.idf}
        values = {"info_": self.info_, "tokenization": TOKENIZATION, "dims_fitted": self.lsi_.dims,
                  "lm_order": self.lm_.order, "lm_estimator": "kenlm-lmplz modified Kneser-Ney"}
        return values, arrays

    def _write_files(self, staging_dir: str) -> None:
        target = os.path.join(staging_dir, LM_FILE)
        if getattr(self, "_arpa_bytes", None) is not None:
            with open(target, "wb") as handle:
                handle.write(self._arpa_bytes)
        else:       # loaded from a folder: copy the verified file
            import shutil

            shutil.copyfile(self.lm_.path, target)

    def _set_state(self, values, arrays, directory: str) -> None:
        missing = {"vocab", "components", "singular_values", "idf"} - set(arrays)
        if missing:
            raise DialevalError(f"{directory}: AM-FM artifact lacks arrays {sorted(missing)}")
        if values.get("tokenization") != TOKENIZATION:
            raise DialevalError(f"{directory}: made with tokenization {values.get('tokenization')!r}, "
                                f"this version uses {TOKENIZATION!r}")
        self.lsi_ = LSI(vocab=[str(w) for w in arrays["vocab"]], components=arrays["components"],
                        singular_values=arrays["singular_values"], idf=arrays["idf"],
                        weighting=self.weighting)
        self.lm_ = ArpaLM(os.path.join(directory, LM_FILE))
        self._arpa_bytes = None
        info = values.get("info_") or {}
        self.info_ = {k: info.get(k) for k in ("sentences", "lsi_sentences_used", "vocabulary",
                                               "train_seconds", "source")}

    @classmethod
    def load(cls, directory: str | os.PathLike) -> "AMFMModel":
        from ...models.store import load_artifact

        config, arrays, directory = load_artifact(directory, KIND)
        if isinstance(config.get("params"), dict):
            params = cls.params_from_config(config, os.path.join(directory, "config.json"))
            values = dict(config.get("state") or {})
        else:       # the flat layout written before AMFMModel was an Estimator
            params = {k: config.get(k) for k in ("dims", "order", "weighting", "lsi_sentences", "seed")
                      if k in config}
            values = {"tokenization": config.get("tokenization"), "info_": config}
        model = cls(**params)
        model._set_state(values, arrays, directory)
        return model


def corpus_sentences(corpus: Sequence[str], corpus_format: str | None = None) -> list[str]:
    """The sentences of the corpora `--corpus` names, read as one (what `train amfm` and
    `sweep amfm` train on)."""
    from ...data.corpus import read_specs, sentences

    if not corpus:
        raise DialevalError("give at least one --corpus FILE")
    return sentences(read_specs(list(corpus), corpus_format))


def load_cached(directory: str | os.PathLike) -> AMFMModel:
    """The folder through the one door for trained models: one load per folder and content,
    shared by am, fm, fm_abs and amfm, verified once."""
    from ...models.artifacts import open_model

    return open_model(directory, KIND, AMFMModel.load)


def arpa_order(path: str) -> int:
    """The n-gram order an ARPA file declares in its \\data\\ header (`ngram N=count` lines)."""
    order = 0
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            line = line.strip()
            if line.startswith("ngram ") and "=" in line:
                order = max(order, int(line[6:line.index("=")]))
            elif line.endswith("-grams:"):
                break
    return order


def described(directory: str | os.PathLike) -> dict[str, Any]:
    """What the metrics' signatures read of a folder (its `model:` field, LSI dims, weighting,
    LM order), from its manifest, config.json, one array header and the ARPA header: nothing is
    loaded."""
    from ...models.artifacts import array_shape, check, model_field, read_json
    from ...models.store import verify

    directory = os.path.abspath(os.fspath(directory))
    manifest = check(directory, KIND) if os.path.isdir(directory) else None    # verified once per process
    if manifest is None:
        verify(directory, KIND)     # its one-line refusal
    config = read_json(directory)
    params = config["params"] if isinstance(config.get("params"), dict) else config
    return {"model": model_field(KIND, directory),
            "dims": array_shape(directory, "components")[0],
            "weighting": params.get("weighting", "tf"),
            "order": arpa_order(os.path.join(directory, LM_FILE))}
