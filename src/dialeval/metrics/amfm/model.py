"""The trainable AM-FM model: an estimator in scikit-learn's shape.

`AMFMModel(dims=10, order=2, ...)` does no work; `fit(sentences)` learns the LSI space and
the n-gram LM; `save(dir)` writes an artifact folder (config.json, arrays.npz, lm.arpa,
manifest.json with sha256) and `load(dir)` refuses a folder whose files changed or are
missing. The paper trained the SVD on 10,000 randomly chosen sentences and the LM on all of
its corpus; `lsi_sentences` keeps that split (None: the SVD sees every sentence too).
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import tempfile
import time
from typing import Any, Sequence

import numpy as np

from ...errors import DialevalError
from .lsi import LSI, WEIGHTINGS, fit_lsi
from .ngram import ArpaLM, train_arpa
from .text import TOKENIZATION

KIND = "amfm"
LM_FILE = "lm.arpa"


class AMFMModel:
    def __init__(self, dims: int = 10, order: int = 2, weighting: str = "tf",
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
        sentences = [s for s in sentences if s.strip()]
        if not sentences:
            raise DialevalError("AM-FM training corpus is empty")
        start = time.perf_counter()
        lsi_part = sentences
        if self.lsi_sentences and len(sentences) > self.lsi_sentences:
            lsi_part = random.Random(self.seed).sample(sentences, self.lsi_sentences)
        self.lsi_ = fit_lsi(lsi_part, self.dims, weighting=self.weighting, seed=self.seed)
        self._tmp = tempfile.TemporaryDirectory(prefix="dialeval-amfm-")
        arpa = train_arpa(sentences, self.order, os.path.join(self._tmp.name, LM_FILE))
        self.lm_ = ArpaLM(arpa)
        self.info_ = {"sentences": len(sentences), "lsi_sentences_used": len(lsi_part),
                      "vocabulary": len(self.lsi_.vocab), "train_seconds": time.perf_counter() - start,
                      "source": source}
        return self

    # -- persistence ------------------------------------------------------------------------
    def config(self) -> dict[str, Any]:
        return {"dims": self.dims, "dims_fitted": self.lsi_.dims, "order": self.order,
                "lm_order": self.lm_.order, "weighting": self.weighting,
                "lsi_sentences": self.lsi_sentences, "seed": self.seed,
                "tokenization": TOKENIZATION, "estimator": "kenlm-lmplz modified Kneser-Ney",
                **self.info_}

    def save(self, directory: str | os.PathLike) -> str:
        from ...models.store import save_artifact

        self._check_fitted()
        arrays = {"vocab": np.asarray(self.lsi_.vocab, dtype=str),
                  "components": self.lsi_.components, "singular_values": self.lsi_.singular_values,
                  "idf": self.lsi_.idf}
        return save_artifact(directory, KIND, self.config(), arrays, {LM_FILE: self.lm_.path})

    @classmethod
    def load(cls, directory: str | os.PathLike) -> "AMFMModel":
        from ...models.store import load_artifact, read_manifest

        config, arrays, directory = load_artifact(directory, KIND)
        missing = {"vocab", "components", "singular_values", "idf"} - set(arrays)
        if missing:
            raise DialevalError(f"{directory}: AM-FM artifact lacks arrays {sorted(missing)}")
        if config.get("tokenization") != TOKENIZATION:
            raise DialevalError(f"{directory}: made with tokenization {config.get('tokenization')!r}, "
                                f"this version uses {TOKENIZATION!r}")
        model = cls(dims=config["dims"], order=config["order"], weighting=config["weighting"],
                    lsi_sentences=config.get("lsi_sentences"), seed=config.get("seed", 0))
        model.lsi_ = LSI(vocab=[str(w) for w in arrays["vocab"]], components=arrays["components"],
                         singular_values=arrays["singular_values"], idf=arrays["idf"],
                         weighting=config["weighting"])
        model.lm_ = ArpaLM(os.path.join(directory, LM_FILE))
        model.info_ = {k: config.get(k) for k in ("sentences", "lsi_sentences_used", "vocabulary",
                                                  "train_seconds", "source")}
        manifest = read_manifest(directory) or {}
        model.fingerprint_ = hashlib.sha256(json.dumps(manifest.get("files", {}), sort_keys=True)
                                            .encode()).hexdigest()[:12]
        return model

    def _check_fitted(self) -> None:
        if not hasattr(self, "lsi_"):
            raise DialevalError("AM-FM model is not trained: call fit() or load()")


_CACHE: dict[tuple[str, str], AMFMModel] = {}


def load_cached(directory: str | os.PathLike) -> AMFMModel:
    """One load per folder and content, shared by am, fm and amfm; every call re-verifies the
    checksums, so a file changed between two calls is still refused."""
    from ...models.store import verify

    directory = os.path.abspath(os.fspath(directory))
    manifest = verify(directory, KIND)
    key = (directory, json.dumps(manifest.get("files", {}), sort_keys=True))
    if key not in _CACHE:
        _CACHE.clear()
        _CACHE[key] = AMFMModel.load(directory)
    return _CACHE[key]
