"""BERTScore (Zhang et al., ICLR 2020) on any local transformer encoder, by the rules of the
`bert-score` package (0.3.13), so its numbers can be checked against it on the same folder.

Each text is read by the encoder once (with its special tokens, truncated at the tokenizer's
limit) and the token states of one hidden layer are L2-normalised. For a response h and a
reference r, every token of h takes its best cosine among all tokens of r (precision) and every
token of r its best among h's (recall); the weighted means of those are P and R (the special
tokens weigh 0), and F is their harmonic mean. With `bertscore_idf` the weights are inverse
document frequencies over the references of the evaluated set, log((M + 1) / (df + 1)) with M
references, as bert-score computes them over the references it is given (each system's set here,
the corpus-wide first pass that CIDEr's document frequencies use, so sharding gives the same
numbers). With several references each of P, R and F is the best over them (bert-score's rule).

`bertscore_rescale` maps a score s to (s - b) / (1 - b), b being the mean score of random
unrelated sentence pairs, so that unrelated text scores near 0. bert-score's own baselines come
from Common Crawl for models of the hub; ours are computed on DailyDialog (the `baseline`
function here; `benchmarks/bertscore_baselines.py` writes `bertscore_baselines.json`) and the
signature names the baseline's hash.

Where we differ from bert-score, on purpose: an empty (blank) response or reference has no
tokens to match, and its pairs score NaN rather than 0 (the rule of the other embedding
metrics); token states come from batches of one token length (backbones/batching.py), so a
text's numbers never depend on the other texts of a run, where bert-score pads (about 1e-7).

The default layer is two thirds of the encoder's depth, rounded (4 of MiniLM-L6's 6, 8 of
MPNet-base's 12): bert-score picked its per-model layers on WMT16 and its table lands near
that depth for BERT-style encoders (microsoft/mpnet-base: 8 of 12). We choose no layer on our
rated sets, which are test sets here.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections import Counter
from typing import Any, Literal, Sequence

import numpy as np

from ...cache import memo
from ...errors import DialevalError
from ..base import Batch
from ..model_metric import ModelMetric, Runtime

PACKAGED = ("minilm", "mpnet")     # the encoders of dialeval.models.pretrained.PRETRAINED, as help names them
BASELINE_FILE = os.path.join(os.path.dirname(__file__), "bertscore_baselines.json")
# rows per pass: with no filled-in copies (backbones/batching.py) the largest measured batch was
# fastest (MiniLM layer 4: 0.80x of raw passes at 16 rows, 0.91x at 4; values the same bits)
DEFAULT_BATCH_SIZE = 16


def resolve_model(name: str | os.PathLike | None) -> tuple[str, str]:
    """(folder, name for the signature) of a packaged backbone name or a local folder."""
    from ...models.pretrained import pretrained

    packaged = pretrained("minilm" if name is None else os.fspath(name), role="encoder")
    if packaged is not None and (name is None or name in PACKAGED):
        return os.fspath(packaged.folder()), packaged.shown
    path = os.path.abspath(os.fspath(name))
    if not os.path.isdir(path) or not os.path.exists(os.path.join(path, "config.json")):
        raise DialevalError(f"{path}: not a transformers model folder (no config.json); give a local "
                            f"encoder folder or one of: {', '.join(PACKAGED)}")
    from ...backbones.fingerprint import model_fingerprint

    return path, model_fingerprint(path)


def default_layer(n_layers: int) -> int:
    return max(1, int(round(2 * n_layers / 3)))


class DocumentFrequencies:
    """Token-id document frequencies over M references (bert-score's idf input); adds up over
    shards."""

    def __init__(self, counts: Counter | None = None, docs: int = 0):
        self.counts = counts if counts is not None else Counter()
        self.docs = int(docs)

    def merge(self, other: "DocumentFrequencies") -> "DocumentFrequencies":
        return DocumentFrequencies(self.counts + other.counts, self.docs + other.docs)

    def weights(self, ids: Sequence[int]) -> np.ndarray:
        m = self.docs
        return np.array([math.log((m + 1) / (self.counts.get(i, 0) + 1)) for i in ids])

    def to_arrays(self) -> dict[str, np.ndarray]:
        keys = sorted(self.counts)
        return {"ids": np.array(keys, dtype=np.int64), "df": np.array([self.counts[k] for k in keys], dtype=np.int64),
                "docs": np.array([self.docs], dtype=np.int64)}

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray]) -> "DocumentFrequencies":
        return cls(Counter(dict(zip(arrays["ids"].tolist(), arrays["df"].tolist()))), int(arrays["docs"][0]))


# Token states of texts already read, kept for the run (`--bertscore-memo-mb`): a reference is
# read by every system's rows and, in a sharded run, by every shard (DSTC6, 20,000 rows x 4
# references: BERTScore cost 2.8x the raw passes of its distinct texts without it). A text's states
# do not depend on its batch (backbones/batching.py), so the memo changes no value.
DEFAULT_MEMO_MB = 512


class _Reader:
    """One encoder at one layer: normalised token states and token ids of texts. The encoder runs
    only up to the deepest layer read (backbones.layers.states_reader); `whole` = True runs it all,
    the reference that cut is benchmarked and tested against (same bits)."""

    whole = False

    def __init__(self, folder: str, layer: int | None, batch_size: int, device: str = "cpu",
                 precision: str = "fp32", memo_mb: float = DEFAULT_MEMO_MB):
        from ...backbones import load_backbone

        self.backbone = load_backbone(folder, kind="hf", device=device, precision=precision)
        n_layers = int(self.backbone.model.config.num_hidden_layers)
        self.layer = default_layer(n_layers) if layer is None else int(layer)
        if not 0 <= self.layer <= n_layers:
            raise DialevalError(f"--bertscore-layer {self.layer} outside 0..{n_layers} (0 = embeddings)")
        self.batch_size = int(batch_size)
        tok = self.backbone.tokenizer
        self.special = {i for i in (tok.cls_token_id, tok.sep_token_id) if i is not None}
        self.limit = int(getattr(tok, "model_max_length", 512) or 512)
        if self.limit > 100_000:
            self.limit = 512
        limit = int(float(memo_mb) * 2 ** 20)
        # text -> (float32 token states, token ids), kept beside the backbone so that
        # bertscore_p, _r and _f share one; bounded by --bertscore-memo-mb
        self.memo = self.backbone.attach(("bertscore-states", self.layer, self.limit, limit),
                                         lambda: memo(limit, name="bertscore token states"))

    def ids(self, text: str) -> list[int]:
        return list(self.backbone.tokenizer.encode(text.strip(), add_special_tokens=True,
                                                   max_length=self.limit, truncation=True))

    def read(self, texts: Sequence[str], layers: Sequence[int] | None = None):
        """text -> (unit token states as float64, token ids), each distinct text once; with
        `layers`, {layer: that mapping} from one forward pass."""
        from ...backbones.encoding import token_states_at

        wanted = [self.layer] if layers is None else list(layers)
        distinct = list(dict.fromkeys(t.strip() for t in texts if t.strip()))
        by_layer: dict[int, dict[str, tuple[np.ndarray, list[int]]]] = {layer: {} for layer in wanted}
        todo = distinct
        if layers is None:                      # the metric's own layer: what the memo holds
            todo = []
            for text in distinct:
                known = self.memo.get(text)
                if known is None:
                    todo.append(text)
                else:
                    by_layer[self.layer][text] = _unit(*known)
        if todo:
            states = token_states_at(self.backbone, todo, wanted, self.batch_size, self.limit, self.whole)
            for layer in wanted:
                for text, st in zip(todo, states[layer]):
                    by_layer[layer][text] = _unit(st.states, list(st.input_ids))
                    if layers is None:     # a copy, not a view holding its batch
                        self.memo.put(text, (np.array(st.states, dtype=np.float32, copy=True),
                                             list(st.input_ids)))
        return by_layer[self.layer] if layers is None else by_layer

    def plain_weights(self, ids: Sequence[int]) -> np.ndarray:
        """Weight 1 for every token but the special ones (bert-score without idf)."""
        return np.array([0.0 if i in self.special else 1.0 for i in ids])


def _unit(states: np.ndarray, ids: list[int]) -> tuple[np.ndarray, list[int]]:
    """Token states as unit float64 rows, and the ids."""
    v = states.astype(np.float64)
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    return v / np.where(norms > 0, norms, 1.0), ids


def pair_scores(h: tuple[np.ndarray, np.ndarray], r: tuple[np.ndarray, np.ndarray]) -> tuple[float, float, float]:
    """(P, R, F) of one response and one reference, each given as (unit states, weights)."""
    sim = h[0] @ r[0].T
    wh, wr = h[1], r[1]
    if not wh.sum() > 0 or not wr.sum() > 0:
        return math.nan, math.nan, math.nan
    p = float((sim.max(axis=1) * wh).sum() / wh.sum())
    rec = float((sim.max(axis=0) * wr).sum() / wr.sum())
    f = 2 * p * rec / (p + rec) if p + rec != 0 else 0.0
    return p, rec, f


def load_baselines() -> dict[str, Any]:
    if not os.path.exists(BASELINE_FILE):
        return {}
    with open(BASELINE_FILE, encoding="utf-8") as handle:
        return json.load(handle)


class BertScore(ModelMetric):
    """BERTScore precision, recall or F1 on a local encoder.

    Options:
        bertscore_model: local transformers encoder folder, or minilm (the packaged
            all-MiniLM-L6-v2, default) or mpnet (all-mpnet-base-v2 as install.sh prepares it)
        bertscore_layer: hidden layer whose token states are matched (0 = embeddings; default two
            thirds of the depth: 4 for MiniLM-L6, 8 for MPNet-base)
        bertscore_idf: weight tokens by inverse document frequency over the evaluated set's references
        bertscore_rescale: rescale with the DailyDialog baseline of this encoder and layer
        bertscore_batch_size: texts per forward pass (default 16)
        bertscore_precision: encoder weight dtype, fp32 (default) or bf16 (faster on CPUs with
            AVX512-BF16; scores within 0.01 of fp32: docs/speed.md; named in the signature)
        bertscore_device: torch device of the encoder (default cpu; another is named in the signature)
        bertscore_memo_mb: token states of texts already read kept for the run, in MB (default
            512; 0 keeps none): references repeat across systems and shards; values do not change
    """

    native_tokenizer = "model"
    corpus_pass_type = DocumentFrequencies
    english_only = True
    column = 2
    name = "bertscore_f"
    description = "BERTScore F1, best over references"

    def __init__(self, bertscore_model: str | os.PathLike | None = None, bertscore_layer: int | None = None,
                 bertscore_idf: bool = False, bertscore_rescale: bool = False,
                 bertscore_batch_size: int = DEFAULT_BATCH_SIZE, bertscore_precision: Literal["fp32", "bf16"] = "fp32",
                 bertscore_device: str = "cpu", bertscore_memo_mb: float = DEFAULT_MEMO_MB,
                 refs_mode: str = "multi", tokenizer: str | None = None):
        self.runtime = Runtime.checked("bertscore", bertscore_device, bertscore_precision)
        super().__init__(refs_mode=refs_mode, tokenizer="model")
        self.folder, self.model_name = resolve_model(bertscore_model)
        self.requested_layer = bertscore_layer
        self.idf = bool(bertscore_idf)
        self.rescale = bool(bertscore_rescale)
        self.batch_size = int(bertscore_batch_size)
        if not float(bertscore_memo_mb) >= 0:
            raise DialevalError(f"--bertscore-memo-mb {bertscore_memo_mb}: give a size in MB, 0 or more")
        self.memo_mb = float(bertscore_memo_mb)
        self._baseline: tuple[np.ndarray, str] | None = None

    def floor(self) -> float:
        """0 for an empty candidate, as the bert-score package sets it, rescaled like any score."""
        if not self.rescale:
            return 0.0
        self.reader   # loads the baseline
        base = float(self._baseline[0][self.column])
        return (0.0 - base) / (1.0 - base)

    def load_model(self) -> _Reader:
        reader = _Reader(self.folder, self.requested_layer, self.batch_size, self.device, self.precision, self.memo_mb)
        if self.rescale:
            self._baseline = self._find_baseline(reader.layer)
        return reader

    @property
    def reader(self) -> _Reader:
        return self.model

    def _find_baseline(self, layer: int) -> tuple[np.ndarray, str]:
        entry = load_baselines().get(self.model_name, {})
        values = entry.get("layers", {}).get(str(layer))
        if values is None:
            raise DialevalError(f"no DailyDialog baseline for {self.model_name} at layer {layer}: compute "
                                "one with benchmarks/bertscore_baselines.py, or score without --bertscore-rescale")
        blob = json.dumps([self.model_name, layer, values]).encode()
        return np.asarray(values, dtype=np.float64), hashlib.sha256(blob).hexdigest()[:8]

    # -- corpus-wide first pass: document frequencies of the references (idf only) -----------
    def corpus_pass_key(self):
        return ("bertscore-df", self.folder) if self.idf else None

    def corpus_pass_state(self, batch: Batch) -> DocumentFrequencies:
        reader = self.reader
        df = DocumentFrequencies()
        for refs in batch.refs:
            for ref in refs:
                df.counts.update(set(reader.ids(ref)))
                df.docs += 1
        return df

    # -- scoring -----------------------------------------------------------------------------
    def _weights(self, ids: list[int], df: DocumentFrequencies | None) -> np.ndarray:
        return df.weights(ids) if df is not None else self.reader.plain_weights(ids)

    def _scores(self, batch: Batch) -> np.ndarray:
        """(n, 3) P, R, F of each sample: the best over its references."""
        root = batch.root

        def compute() -> np.ndarray:
            reader = self.reader
            df = None
            if self.idf:
                df = root.corpus.get(self.corpus_pass_key()) or self.corpus_pass_state(root)
            # only samples with a response and a reference to match are read through the encoder
            live = [i for i, (h, rs) in enumerate(zip(batch.hyps, batch.refs)) if h.strip() and any(r.strip() for r in rs)]
            read = reader.read([batch.hyps[i] for i in live] + [r for i in live for r in batch.refs[i]])
            cache: dict[str, tuple[np.ndarray, np.ndarray]] = {}

            def view(text: str):
                key = text.strip()
                if key not in cache:
                    states, ids = read[key]
                    cache[key] = (states, self._weights(ids, df))
                return cache[key]

            out = np.full((len(batch), 3), np.nan)
            for i, (hyp, refs) in enumerate(zip(batch.hyps, batch.refs)):
                if not hyp.strip():
                    continue
                rows = [pair_scores(view(hyp), view(r)) for r in refs if r.strip()]
                rows = [row for row in rows if not math.isnan(row[0])]
                if rows:
                    out[i] = np.max(np.asarray(rows), axis=0)
            if self.rescale:
                base = self._baseline[0]
                out = (out - base) / (1.0 - base)
            return out

        return batch.memo(("bertscore", self.folder, self.reader.layer, self.idf, self.rescale, self.batch_size,
                           self.device, self.precision), compute)

    def multi_stats(self, batch: Batch) -> np.ndarray:
        return self._scores(batch)[:, self.column][:, None]

    def sentence_from_stats(self, stats: np.ndarray) -> np.ndarray:
        return stats[:, 0]

    @property
    def layer(self) -> int:
        """The layer read (the requested one, or two thirds of the depth), checked against the
        folder's config.json: known without loading the encoder, so a run is planned without it."""
        if self.model_loaded:
            return self.model.layer
        n_layers = self.described.get("num_hidden_layers")
        if n_layers is None:
            return self.reader.layer          # an unusual config: loading decides (and refuses)
        layer = default_layer(n_layers) if self.requested_layer is None else int(self.requested_layer)
        if not 0 <= layer <= n_layers:
            raise DialevalError(f"--bertscore-layer {layer} outside 0..{n_layers} (0 = embeddings)")
        if self.rescale and self._baseline is None:
            self._baseline = self._find_baseline(layer)
        return layer

    def describe(self) -> dict:
        """The encoder's depth, from its config.json (nothing when that is unusual)."""
        try:
            with open(os.path.join(self.folder, "config.json"), encoding="utf-8") as handle:
                return {"num_hidden_layers": int(json.load(handle)["num_hidden_layers"])}
        except (OSError, ValueError, KeyError, TypeError):
            return {}

    def model_fields(self) -> list[tuple[str, Any]]:
        return [("model", self.model_name)]

    def option_fields(self) -> list[tuple[str, Any]]:
        opts: list[tuple[str, Any]] = [("layer", self.layer), ("idf", "yes" if self.idf else "no")]
        if self.rescale:
            opts.append(("rescale", f"dailydialog:{self._baseline[1]}"))
        return opts


class BertScoreP(BertScore):
    name = "bertscore_p"
    description = "BERTScore precision, best over references"
    column = 0


class BertScoreR(BertScore):
    name = "bertscore_r"
    description = "BERTScore recall, best over references"
    column = 1


class BertScoreF(BertScore):
    name = "bertscore_f"
    description = "BERTScore F1, best over references"
    column = 2


def baseline(folder: str, sentences: Sequence[str], pairs: int = 2000, seed: int = 0,
             batch_size: int = DEFAULT_BATCH_SIZE) -> dict[str, list[float]]:
    """Mean P, R, F of `pairs` random pairs of different `sentences` at every layer (0..depth):
    the rescaling baseline, computed as bert-score computes its own (random pairs of unrelated
    sentences, no idf), on the corpus we have."""
    import random

    rng = random.Random(seed)
    pool = list(dict.fromkeys(s.strip() for s in sentences if s.strip()))
    if len(pool) < 2:
        raise DialevalError("a baseline needs at least two distinct sentences")
    chosen = []
    while len(chosen) < pairs:
        a, b = rng.sample(range(len(pool)), 2)
        chosen.append((pool[a], pool[b]))
    reader = _Reader(folder, 0, batch_size)
    layers = list(range(int(reader.backbone.model.config.num_hidden_layers) + 1))
    read = reader.read([t for pair in chosen for t in pair], layers)
    out: dict[str, list[float]] = {}
    for layer in layers:
        rows = []
        for h, r in chosen:
            (hs, hi), (rs, ri) = read[layer][h], read[layer][r]
            rows.append(pair_scores((hs, reader.plain_weights(hi)), (rs, reader.plain_weights(ri))))
        out[str(layer)] = [float(v) for v in np.nanmean(np.asarray(rows), axis=0)]
    return out
