"""Building word vectors offline, when no GloVe file is at hand.

Three ways, each ending in a vectors artifact (config.json, arrays.npz, vocab.txt, manifest.json):

- `encoder-input` (the default's method): the sentence encoder's own input embedding matrix,
  one row per whole-word wordpiece. Read straight from the model's safetensors in about a
  second; on DSTC6 it correlated best of the offline options overall (README, "Embedding metrics");

- `word2vec`: gensim's skip-gram trained on a dialogue corpus, tokenised the way the metrics
  tokenise (nltk word_tokenize), seeded and single-threaded so that a rerun gives the same
  vectors;
- `distill`: static vectors taken from the sentence encoder (all-MiniLM-L6-v2 by default):
  every word of a vocabulary is encoded on its own and its pooled embedding becomes its
  vector. The vocabulary is the encoder's own whole-word pieces, plus a corpus's words when
  one is given. It needs no corpus, so it can be built on any machine that has the encoder.
"""

from __future__ import annotations

import os
from collections import Counter

import numpy as np

from ...errors import DialevalError
from ...models.estimator import Estimator
from .tokens import tokenize_texts
from .vectors import ARTIFACT_KIND, load_vectors_artifact, save_vectors_artifact

METHODS = ("encoder-input", "distill", "word2vec")


def corpus_sentences(path: str, lower: bool) -> list[list[str]]:
    from ...data.corpus import read_corpus_spec

    utterances = [u for dialogue in read_corpus_spec(path) for u in dialogue]
    tokens = tokenize_texts("nltk-word", utterances)
    if lower:
        tokens = [[t.lower() for t in sent] for sent in tokens]
    return [t for t in tokens if t]


class Word2VecVectors(Estimator):
    """Word vectors trained with gensim's word2vec on a dialogue corpus, saved as a vectors
    artifact (config.json, arrays.npz `vectors`, vocab.txt, manifest.json) that the embedding
    metrics read with `--word-vectors DIR`. gensim runs on one worker so a rerun with the same
    seed gives the same vectors.

    Options:
      dim: word2vec dimension
      window: word2vec context window
      min_count: ignore words seen fewer times
      epochs: passes over the corpus
      seed: random seed
      lower: lowercase the corpus (the metrics look words up lowercased when the vectors have
        no uppercase word)
      sg: skip-gram (True) or CBOW (False)
    """

    kind = ARTIFACT_KIND

    def __init__(self, dim: int = 300, window: int = 5, min_count: int = 2, epochs: int = 10, seed: int = 1,
                 lower: bool = True, sg: bool = True):
        self.dim = dim
        self.window = window
        self.min_count = min_count
        self.epochs = epochs
        self.seed = seed
        self.lower = lower
        self.sg = sg

    def fit(self, sentences: list[list[str]], *, corpus: str | None = None) -> "Word2VecVectors":
        """Train on tokenised sentences (`corpus_sentences` tokenises a corpus file the way the
        metrics tokenise); `corpus` names the source in the artifact."""
        from ...optional import require

        Word2Vec = require("gensim.models", "training word2vec", "embeddings").Word2Vec
        if not sentences:
            raise DialevalError(f"{corpus or 'word2vec'}: no sentences to train on")
        model = Word2Vec(sentences=sentences, vector_size=self.dim, window=self.window, min_count=self.min_count,
                         epochs=self.epochs, seed=self.seed, workers=1, sg=int(self.sg))
        words = list(model.wv.index_to_key)
        if any("\n" in w or w == "" for w in words):
            raise DialevalError("a word holds a newline or is empty; cannot store it in vocab.txt")
        self.words_ = words
        self.vectors_ = np.asarray(model.wv.vectors, dtype=np.float32)
        self.info_ = {"corpus": corpus, "sentences": len(sentences)}
        return self

    def fit_corpus(self, path: str) -> "Word2VecVectors":
        return self.fit(corpus_sentences(path, self.lower), corpus=os.path.basename(path))

    # -- persistence: the vectors-artifact layout the metrics read -----------------------------
    def _description(self) -> dict:
        return {"method": "word2vec", "corpus": self.info_.get("corpus"), "dim": int(self.vectors_.shape[1]),
                "window": self.window, "min_count": self.min_count, "epochs": self.epochs, "seed": self.seed,
                "lowercased": self.lower, "skip_gram": self.sg, "tokenizer": "nltk-word",
                "sentences": self.info_.get("sentences"), "rows": len(self.words_)}

    def _state(self):
        return {"info_": self.info_}, {"vectors": np.asarray(self.vectors_, dtype=np.float32)}

    def _write_files(self, staging_dir: str) -> None:
        with open(os.path.join(staging_dir, "vocab.txt"), "w", encoding="utf-8") as handle:
            handle.write("\n".join(self.words_) + "\n")

    def _set_state(self, values, arrays, directory: str) -> None:
        vectors = load_vectors_artifact(directory)      # checks vocab.txt against the matrix
        self.words_ = list(vectors.words)
        self.vectors_ = np.asarray(arrays["vectors"], dtype=np.float32)
        self.info_ = dict(values.get("info_") or {})

    @classmethod
    def load(cls, directory) -> "Word2VecVectors":
        """A word2vec vectors folder, also one written before this class (flat config.json)."""
        from ...models.store import load_artifact

        config, arrays, folder = load_artifact(directory, ARTIFACT_KIND)
        if config.get("method") != "word2vec":
            raise DialevalError(f"{folder}: vectors made by {config.get('method')!r}, not word2vec")
        if isinstance(config.get("params"), dict):
            params = cls.params_from_config(config, os.path.join(folder, "config.json"))
            values = config.get("state") or {}
        else:
            params = {"dim": config.get("dim"), "window": config.get("window"), "min_count": config.get("min_count"),
                      "epochs": config.get("epochs"), "seed": config.get("seed"),
                      "lower": config.get("lowercased"), "sg": config.get("skip_gram")}
            values = {"info_": {"corpus": config.get("corpus"), "sentences": config.get("sentences")}}
        model = cls(**{k: v for k, v in params.items() if v is not None})
        model._set_state(values, arrays, folder)
        return model


def train_word2vec(corpus: str, output: str, **params) -> str:
    """`Word2VecVectors(**params)` fitted on `corpus` and saved to `output`."""
    return Word2VecVectors(**params).fit_corpus(corpus).save(output)


def encoder_vocabulary(model_dir: str) -> list[str]:
    """The encoder's whole-word wordpieces: alphabetic or punctuation, no `##` pieces, no specials."""
    path = os.path.join(model_dir, "vocab.txt")
    if not os.path.exists(path):
        raise DialevalError(f"{model_dir}: no vocab.txt; give the vocabulary with --corpus")
    with open(path, encoding="utf-8") as handle:
        pieces = [line.rstrip("\n") for line in handle]
    return [p for p in pieces if p and not p.startswith("##") and not (p.startswith("[") and p.endswith("]"))]


def distill_encoder(output: str, *, model_dir: str | None = None, corpus: str | None = None,
                    min_count: int = 2, batch_size: int = 256, lower: bool = True) -> str:
    from ...backbones.defaults import default_sentence_model
    from .sentence import SentenceEncoder

    model_dir = os.path.abspath(model_dir) if model_dir else default_sentence_model()
    words = encoder_vocabulary(model_dir)
    if corpus:
        counts = Counter(t for sent in corpus_sentences(corpus, lower) for t in sent)
        known = set(words)
        words += sorted(w for w, c in counts.items() if c >= min_count and w not in known and "\n" not in w)
    encoder = SentenceEncoder(model_dir, batch_size=batch_size)
    matrix = encoder.encode(words)
    config = {"method": "distill", "encoder": _model_name(model_dir),
              "corpus": os.path.basename(corpus) if corpus else None, "min_count": min_count,
              "lowercased": lower, "tokenizer": "nltk-word"}
    return save_vectors_artifact(output, words, np.asarray(matrix, dtype=np.float32), config)


def encoder_input_vectors(output: str, *, model_dir: str | None = None) -> str:
    """Rows of the encoder's input embedding matrix for its whole-word pieces."""
    from safetensors.numpy import load_file

    from ...backbones.defaults import default_sentence_model

    model_dir = os.path.abspath(model_dir) if model_dir else default_sentence_model()
    weights = os.path.join(model_dir, "model.safetensors")
    if not os.path.exists(weights):
        raise DialevalError(f"{model_dir}: no model.safetensors to take the input embeddings from")
    tensors = load_file(weights)
    keys = [k for k in tensors if k.endswith("word_embeddings.weight")]
    if len(keys) != 1:
        raise DialevalError(f"{weights}: expected one '*word_embeddings.weight' tensor, found {len(keys)}")
    table = tensors[keys[0]]
    with open(os.path.join(model_dir, "vocab.txt"), encoding="utf-8") as handle:
        row_of = {line.rstrip("\n"): i for i, line in enumerate(handle)}
    if len(row_of) > table.shape[0]:
        raise DialevalError(f"{model_dir}: vocab.txt has more pieces than the embedding matrix has rows")
    words = encoder_vocabulary(model_dir)
    matrix = table[[row_of[w] for w in words]].astype(np.float32)
    config = {"method": "encoder-input", "encoder": _model_name(model_dir), "tensor": keys[0],
              "lowercased": True}
    return save_vectors_artifact(output, words, matrix, config)


def _model_name(model_dir: str) -> str:
    from ...backbones.defaults import default_sentence_model

    try:
        if os.path.samefile(model_dir, default_sentence_model()):
            return "all-MiniLM-L6-v2"
    except (OSError, DialevalError):
        pass
    return os.path.basename(os.path.normpath(model_dir))
