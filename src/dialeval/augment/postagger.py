"""A part-of-speech tagger for WordNet substitution, trained here on UD English-EWT.

nltk's averaged perceptron is trained on the treebank's universal tags (UPOS), which separate
auxiliaries (AUX) from content verbs, so "is" is not swapped for a synonym of "be". The
trained weights are saved as JSON in a verified artifact folder (no pickle) and cached.
"""

from __future__ import annotations

import json
import os
import tempfile
from typing import Iterable

from ..errors import DialevalError, InputError
from ..models import store

KIND = "pos-tagger"
WEIGHTS = "tagger.json"


def read_conllu(path: str, column: int = 3) -> list[list[tuple[str, str]]]:
    """Sentences of (form, tag) from a CoNLL-U file; `column` 3 is UPOS, 4 is XPOS.
    Multi-word token lines (1-2) and empty nodes (1.1) are skipped."""
    sentences, current = [], []
    try:
        handle = open(path, encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", path=path) from None
    with handle:
        for number, line in enumerate(handle, 1):
            line = line.rstrip("\n")
            if not line:
                if current:
                    sentences.append(current)
                    current = []
                continue
            if line.startswith("#"):
                continue
            cols = line.split("\t")
            if len(cols) != 10:
                raise InputError(f"expected 10 tab-separated columns, got {len(cols)}", path=path, line=number)
            if "-" in cols[0] or "." in cols[0]:
                continue
            current.append((cols[1], cols[column]))
    if current:
        sentences.append(current)
    return sentences


def default_cache_dir() -> str:
    from ..models.cache import cache_dir

    return str(cache_dir("pos-tagger-ud-ewt"))


def train_tagger(conllu_files: Iterable[str], out_dir: str, iterations: int = 5, limit: int | None = None,
                 seed: int = 0) -> str:
    """Train the perceptron on the files' sentences and save it as a verified artifact."""
    import random

    from nltk.tag.perceptron import PerceptronTagger

    sentences = [s for f in conllu_files for s in read_conllu(f)]
    if limit:
        sentences = sentences[:limit]
    if not sentences:
        raise DialevalError("no tagged sentences to train the POS tagger on")
    random.seed(seed)  # nltk shuffles with the global generator
    tagger = PerceptronTagger(load=False)
    tagger.train(sentences, nr_iter=iterations)
    weights = {"weights": tagger.model.weights, "tagdict": tagger.tagdict,
               "classes": sorted(tagger.classes)}
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, WEIGHTS)
        with open(path, "w", encoding="utf-8") as handle:
            json.dump(weights, handle)
        store.save_artifact(out_dir, KIND, {"tagset": "UPOS", "sentences": len(sentences),
                                            "iterations": iterations}, files={WEIGHTS: path})
    return out_dir


def load_tagger(directory: str):
    from nltk.tag.perceptron import PerceptronTagger

    config, _, directory = store.load_artifact(directory, KIND)
    with open(os.path.join(directory, WEIGHTS), encoding="utf-8") as handle:
        data = json.load(handle)
    tagger = PerceptronTagger(load=False)
    tagger.model.weights = data["weights"]
    tagger.tagdict = data["tagdict"]
    tagger.classes = set(data["classes"])
    tagger.model.classes = tagger.classes
    return tagger


def ewt_tagger(treebank_dir: str | None = None, cache_dir: str | None = None):
    """The cached UD-EWT tagger, trained on first use from `treebank_dir` (its train split)."""
    cache_dir = cache_dir or default_cache_dir()
    if os.path.exists(os.path.join(cache_dir, store.MANIFEST)):
        return load_tagger(cache_dir)
    if not treebank_dir:
        raise DialevalError(f"no POS tagger cached at {cache_dir}; give the UD English-EWT folder "
                            "(--treebank DIR, e.g. $DATA/ud-english-ewt) to train it once")
    train = os.path.join(treebank_dir, "en_ewt-ud-train.conllu")
    if not os.path.exists(train):
        raise InputError("no en_ewt-ud-train.conllu here (UD English-EWT folder expected)", path=treebank_dir)
    train_tagger([train], cache_dir)
    return load_tagger(cache_dir)
