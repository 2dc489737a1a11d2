"""The `meteor` metric: METEOR 1.5 as pycocoevalcap/nlg-eval run the jar (`-l en -norm`).

Statistics rows hold the jar's 23 fields of the selected reference plus one column, the chunk
count that enters the corpus sum (the jar leaves out the chunks of perfect segments), so the
corpus score is a function of column sums and rows merge like every other metric's.

Pairs are aligned by the compiled kernel (`kernel.pyx`, built by setup.py) where it is built,
else by the pure-Python aligner (`align`), which gives the same rows and is the tests' reference.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from typing import Any, Literal

import numpy as np

from ...base import Batch, Metric
from .align import Sentence, pair_stats
from .javahash import java_hash
from .normalize import Normalizer, wrapper_fields
from .stemmer import stem

ALPHA, BETA, GAMMA, DELTA = 0.85, 0.2, 0.6, 0.75
WEIGHTS = (1.0, 0.6, 0.8, 0.6)
N_FIELDS = 23
CORPUS_CHUNKS = 23


def _perfect_rows(s: np.ndarray) -> np.ndarray:
    """`_is_perfect` of every row of a (n, 23) array."""
    hyp = s[:, 4:20:4] + s[:, 6:20:4]
    ref = s[:, 5:20:4] + s[:, 7:20:4]
    return (hyp.sum(axis=1) == s[:, 0]) & (ref.sum(axis=1) == s[:, 1]) & (s[:, 20] == 1)


def _kernel_rows(corpus, hs: np.ndarray, rs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    from . import kernel

    return kernel.pair_stats(corpus, np.ascontiguousarray(hs), np.ascontiguousarray(rs))


def _is_perfect(s) -> bool:
    hyp = sum(s[4 + 4 * m] + s[6 + 4 * m] for m in range(4))
    ref = sum(s[5 + 4 * m] + s[7 + 4 * m] for m in range(4))
    return hyp == s[0] and ref == s[1] and s[20] == 1


def _div(a: float, b: float) -> float:
    """Java double division: x/0 is +-inf, 0/0 is NaN."""
    if b != 0:
        return a / b
    if a == 0 or math.isnan(a):
        return math.nan
    return math.copysign(math.inf, a) * math.copysign(1.0, b)


def score_stats(s) -> float:
    """The jar's `computeMetrics` on one stats vector (NaN -> 0, floored at 0)."""
    s = [float(v) for v in s]
    lh = DELTA * (s[0] - s[2]) + (1.0 - DELTA) * s[2]
    lr = DELTA * (s[1] - s[3]) + (1.0 - DELTA) * s[3]
    mh = mr = 0.0
    for m in range(4):
        mh += s[4 + 4 * m] * WEIGHTS[m] * DELTA
    for m in range(4):
        mr += s[5 + 4 * m] * WEIGHTS[m] * DELTA
    for m in range(4):
        mh += s[6 + 4 * m] * WEIGHTS[m] * (1.0 - DELTA)
    for m in range(4):
        mr += s[7 + 4 * m] * WEIGHTS[m] * (1.0 - DELTA)
    p = _div(mh, lh)
    r = _div(mr, lr)
    fmean = _div(1.0, _div(1.0 - ALPHA, p) + _div(ALPHA, r))
    frag = 0.0 if _is_perfect(s) else _div(s[20], (s[21] + s[22]) / 2)
    score = fmean * (1.0 - GAMMA * frag ** BETA)
    if math.isnan(score):
        return 0.0
    return max(score, 0.0)


_FORK_STATE: tuple | None = None
_MIN_PAIRS_PER_WORKER = 2500            # pure-Python alignment
_MIN_PAIRS_PER_WORKER_COMPILED = 50_000  # compiled: ~10 us a pair, forking costs more below


def _kernel():
    """The compiled per-pair kernel (`kernel.pyx`), or None where it is not built."""
    try:
        from . import kernel
    except ImportError:
        return None
    return kernel


def _python_rows(sentences: list[Sentence], hs: np.ndarray, rs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(scores, stats rows) of the pairs (hs[k], rs[k]) by the pure-Python aligner (the reference)."""
    stats = np.zeros((len(hs), N_FIELDS))
    scores = np.zeros(len(hs))
    for k, (h, r) in enumerate(zip(hs.tolist(), rs.tolist())):
        row = pair_stats(sentences[h], sentences[r])
        stats[k] = row
        scores[k] = score_stats(row)
    return scores, stats


def _forked_chunk(bounds: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    fn, data, hs, rs = _FORK_STATE
    return fn(data, hs[bounds[0]:bounds[1]], rs[bounds[0]:bounds[1]])


def _score_pairs(fn, data, hs: np.ndarray, rs: np.ndarray, workers: int | None,
                 min_per_worker: int) -> tuple[np.ndarray, np.ndarray]:
    """`fn(data, hs, rs)` -> (scores, stats) over every pair; with `workers` > 1 (default: 2
    where the machine has them and the set is large), in forked processes that share the
    analysed sentences instead of pickling them."""
    import multiprocessing
    import os

    if workers is None:
        workers = min(2, os.cpu_count() or 1)
    workers = max(1, min(int(workers), len(hs) // min_per_worker))
    # a daemonic process (a Dask worker, a multiprocessing pool's child) may not fork children:
    # there the pairs are aligned in-process, which gives the same numbers
    daemon = multiprocessing.current_process().daemon
    if workers == 1 or daemon or "fork" not in multiprocessing.get_all_start_methods():
        return fn(data, hs, rs)
    global _FORK_STATE
    _FORK_STATE = (fn, data, hs, rs)
    try:
        step = -(-len(hs) // (workers * 4))
        bounds = [(a, min(a + step, len(hs))) for a in range(0, len(hs), step)]
        with multiprocessing.get_context("fork").Pool(workers) as pool:
            parts = pool.map(_forked_chunk, bounds, chunksize=1)
    finally:
        _FORK_STATE = None
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


class Meteor(Metric):
    """METEOR 1.5 (Denkowski & Lavie 2014), English, rank task, exact/stem/synonym/paraphrase.

    Options:
        meteor_resources: folder holding METEOR 1.5's meteor-1.5.jar and data/paraphrase-en.gz
            (default: $DIALEVAL_METEOR_RESOURCES, else the installed pycocoevalcap)
        meteor_workers: processes that align METEOR pairs (default: 2 where the machine has 2
            cores and the set has at least 100,000 pairs, else 1; 5,000 pairs where the
            compiled kernel is not built)
        meteor_compare: how the exact and stem stages compare words: "hash" (default) as the
            jar does, by Java String.hashCode(), so words with equal hash codes ("do" and "f1")
            match; "strings" compares the words themselves (collision-free, not the jar's
            numbers; the signature says compare:strings)
    """

    name = "meteor"
    description = "METEOR 1.5 as pycocoevalcap runs the jar (-l en -norm), without Java"
    native_tokenizer = "meteor-norm"
    corpus_from_summed_stats = True
    score_range = (0.0, 1.0)

    def __init__(self, refs_mode: str = "multi", tokenizer: str | None = None,
                 meteor_resources: str | None = None, meteor_workers: int | None = None,
                 meteor_compare: Literal["hash", "strings"] = "hash"):
        # METEOR always tokenises with its own normaliser; the signature says so
        super().__init__(refs_mode=refs_mode, tokenizer=None)
        if meteor_compare not in ("hash", "strings"):
            from ....errors import DialevalError
            raise DialevalError(f"meteor_compare must be 'hash' or 'strings', not {meteor_compare!r}")
        self.meteor_resources = meteor_resources
        self.meteor_workers = meteor_workers
        self.meteor_compare = meteor_compare

    def signature_options(self) -> list[tuple[str, Any]]:
        return [("lang", "en"), ("norm", "yes"), ("task", "rank"), ("modules", "exact+stem+synonym+paraphrase"),
                ("compare", self.meteor_compare), ("meteor", "1.5")]

    # -- statistics ---------------------------------------------------------------------------
    def multi_stats(self, batch: Batch) -> np.ndarray:
        from .resources import load_resources

        res = load_resources(self.meteor_resources)
        fields = [wrapper_fields(h, refs) if refs else None for h, refs in zip(batch.hyps, batch.refs)]
        texts = {t for f in fields if f for t in [f[0], *f[1]]}
        pairs = {(f[0], r) for f in fields if f for r in f[1]}
        kernel = _kernel()
        number, data = self._analyse(res, texts, pairs, compiled=kernel is not None)
        todo = dict.fromkeys((number[f[0]], number[r]) for f in fields if f for r in f[1])
        flat = np.fromiter(itertools.chain.from_iterable(todo), dtype=np.int64, count=2 * len(todo)).reshape(-1, 2)
        if kernel is not None:
            scores, stats = _score_pairs(_kernel_rows, kernel.Corpus(data), flat[:, 0], flat[:, 1],
                                         self.meteor_workers, _MIN_PAIRS_PER_WORKER_COMPILED)
        else:
            scores, stats = _score_pairs(_python_rows, data, flat[:, 0], flat[:, 1], self.meteor_workers,
                                         _MIN_PAIRS_PER_WORKER)
        at = dict(zip(todo, range(len(todo))))
        score_of = scores.tolist()
        best = np.full(len(batch), -1, dtype=np.int64)
        for row, f in enumerate(fields):
            if f is None:
                continue
            h = number[f[0]]
            top = -1
            for ref in f[1]:
                k = at[(h, number[ref])]
                if top < 0 or score_of[k] > score_of[top]:   # the first best reference wins ties
                    top = k
            best[row] = top
        out = np.full((len(batch), N_FIELDS + 1), np.nan)
        rows = np.flatnonzero(best >= 0)
        chosen = stats[best[rows]]
        out[rows, :N_FIELDS] = chosen
        out[rows, CORPUS_CHUNKS] = np.where(_perfect_rows(chosen), 0.0, chosen[:, 20])
        return out

    def _analyse(self, res, texts: set[str], pairs: set[tuple[str, str]], compiled: bool):
        """Normalise and analyse every segment text of one batch once: (text -> sentence
        number, the sentences), as `packed` arrays for the compiled kernel or as `Sentence`
        objects for the pure-Python aligner.

        Paraphrase candidates are filtered against the batch's own n-grams, so the result is
        only valid for pairs within this batch.
        """
        norm = Normalizer(res.nonbreaking)
        words = {t: norm.words(t) for t in texts}
        uniq = list(dict.fromkeys(words.values()))
        para = res.paraphrases
        number = {w: k for k, w in enumerate(uniq)}
        pair_idx = np.array([(number[words[a]], number[words[b]]) for a, b in pairs], dtype=np.int64).reshape(-1, 2)
        stems: dict[str, str] = {}
        for tok in {t for w in uniq for t in w}:
            stems[tok] = stem(tok)
        distinct = {*stems, *stems.values()}
        if self.meteor_compare == "hash":
            # the jar compares words and stems by String.hashCode(): hash each distinct one once
            keys = {t: java_hash(t) for t in distinct}
        else:
            keys = dict(zip(distinct, range(len(distinct))))   # ids: equal exactly when the strings are
        fw = res.function_words
        syn = res.synonyms.all_synsets
        text_number = {t: number[words[t]] for t in texts}
        if not compiled:
            sentences = []
            analysed = para.analyse([para.ids(w) for w in uniq], pair_idx)
            for w, (paraphrases, ngrams) in zip(uniq, analysed):
                st = [stems[t] for t in w]
                sentences.append(Sentence(words=w, function=[t in fw for t in w], stems=st,
                                          keys=tuple(map(keys.__getitem__, w)),
                                          stem_keys=tuple(map(keys.__getitem__, st)),
                                          synsets=[syn(t) for t in w], paraphrases=paraphrases,
                                          ngrams=ngrams))
            return text_number, sentences
        from .packed import pack

        # per distinct word ("type") once, then gathered to the tokens
        types = list(stems)
        tokens = list(itertools.chain.from_iterable(uniq))
        tok_type = np.fromiter(map(dict(zip(types, range(len(types)))).__getitem__, tokens),
                               dtype=np.int64, count=len(tokens))
        synsets = [syn(t) for t in types]
        # a synset held by one distinct word only can match nothing (a word is never a synonym
        # match of itself): leaving such synsets out changes no candidate and shrinks the arrays
        held = Counter(itertools.chain.from_iterable(synsets))
        n = len(types)
        lengths = np.fromiter(map(len, uniq), dtype=np.int64, count=len(uniq))
        paraphrases, ngrams = para.rows(lengths, np.asarray(para.ids(types), dtype=np.int64)[tok_type], pair_idx)
        hyps = np.zeros(len(uniq), dtype=bool)
        hyps[pair_idx[:, 0]] = True
        return text_number, pack(
            lengths, tok_type, hyps,
            key=np.fromiter(map(keys.__getitem__, types), dtype=np.int64, count=n),
            skey=np.fromiter((keys[stems[t]] for t in types), dtype=np.int64, count=n),
            func=np.fromiter((t in fw for t in types), dtype=np.uint8, count=n),
            synsets=[sorted(x for x in s if held[x] > 1) for s in synsets],
            para=paraphrases, ngrams=ngrams)

    # -- scores -------------------------------------------------------------------------------
    def sentence_from_stats(self, stats: np.ndarray) -> np.ndarray:
        out = np.full(len(stats), np.nan)
        rows = np.flatnonzero(~np.isnan(stats[:, 0]))
        kernel = _kernel()
        if kernel is not None:
            out[rows] = kernel.score_rows(np.ascontiguousarray(stats[rows, :N_FIELDS], dtype=np.float64))
        else:
            for k in rows.tolist():
                out[k] = score_stats(stats[k, :N_FIELDS])
        return out

    def corpus_from_stats(self, total: np.ndarray) -> float:
        stats = total[:N_FIELDS].copy()
        stats[20] = total[CORPUS_CHUNKS]
        return score_stats(stats)
