"""The `meteor` metric: METEOR 1.5 as pycocoevalcap/nlg-eval run the jar (`-l en -norm`).

Statistics rows hold the jar's 23 fields of the selected reference plus one column, the chunk
count that enters the corpus sum (the jar leaves out the chunks of perfect segments), so the
corpus score is a function of column sums and rows merge like every other metric's.
"""

from __future__ import annotations

import math
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


_FORK_STATE: tuple[list[Sentence], list[tuple[int, int]]] | None = None
_MIN_PAIRS_PER_WORKER = 2500


def _pair_results(sentences: list[Sentence], todo: list[tuple[int, int]]) -> list[tuple[float, list[float]]]:
    out = []
    for h, r in todo:
        stats = pair_stats(sentences[h], sentences[r])
        out.append((score_stats(stats), stats))
    return out


def _forked_chunk(bounds: tuple[int, int]) -> list[tuple[float, list[float]]]:
    sentences, todo = _FORK_STATE
    return _pair_results(sentences, todo[bounds[0]:bounds[1]])


def _score_pairs(sentences, todo, workers: int | None) -> list[tuple[float, list[float]]]:
    """Align every (hypothesis, reference) pair; with `workers` > 1 (default: 2 where the
    machine has them and the set is large), in forked processes that share the analysed
    sentences instead of pickling them."""
    import multiprocessing
    import os

    if workers is None:
        workers = min(2, os.cpu_count() or 1)
    workers = max(1, min(int(workers), len(todo) // _MIN_PAIRS_PER_WORKER))
    # a daemonic process (a Dask worker, a multiprocessing pool's child) may not fork children:
    # there the pairs are aligned in-process, which gives the same numbers
    daemon = multiprocessing.current_process().daemon
    if workers == 1 or daemon or "fork" not in multiprocessing.get_all_start_methods():
        return _pair_results(sentences, todo)
    global _FORK_STATE
    _FORK_STATE = (sentences, todo)
    try:
        step = -(-len(todo) // (workers * 4))
        bounds = [(a, min(a + step, len(todo))) for a in range(0, len(todo), step)]
        with multiprocessing.get_context("fork").Pool(workers) as pool:
            parts = pool.map(_forked_chunk, bounds, chunksize=1)
    finally:
        _FORK_STATE = None
    return [x for part in parts for x in part]


class Meteor(Metric):
    """METEOR 1.5 (Denkowski & Lavie 2014), English, rank task, exact/stem/synonym/paraphrase.

    Options:
        meteor_resources: folder holding METEOR 1.5's meteor-1.5.jar and data/paraphrase-en.gz
            (default: $DIALEVAL_METEOR_RESOURCES, else the installed pycocoevalcap)
        meteor_workers: processes that align METEOR pairs (default: 2 where the machine has 2
            cores and the set has at least 5,000 pairs, else 1)
        meteor_compare: how the exact and stem stages compare words: "hash" (default) as the
            jar does, by Java String.hashCode(), so words with equal hash codes ("do" and "f1")
            match; "strings" compares the words themselves (collision-free, not the jar's
            numbers; the signature says compare:strings)
    """

    name = "meteor"
    description = "METEOR 1.5 as pycocoevalcap runs the jar (-l en -norm), without Java"
    native_tokenizer = "meteor-norm"
    corpus_from_summed_stats = True

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
        number, sentences = self._analyse(res, texts, {(f[0], r) for f in fields if f for r in f[1]})
        todo = list(dict.fromkeys((number[f[0]], number[r]) for f in fields if f for r in f[1]))
        done = dict(zip(todo, _score_pairs(sentences, todo, self.meteor_workers)))
        out = np.full((len(batch), N_FIELDS + 1), np.nan)
        for row, f in enumerate(fields):
            if f is None:
                continue
            h = number[f[0]]
            best = None
            for ref in f[1]:
                got = done[(h, number[ref])]
                if best is None or got[0] > best[0]:   # the first best reference wins ties
                    best = got
            stats = best[1]
            out[row, :N_FIELDS] = stats
            out[row, CORPUS_CHUNKS] = 0.0 if _is_perfect(stats) else stats[20]
        return out

    def _analyse(self, res, texts: set[str], pairs: set[tuple[str, str]]) -> tuple[dict[str, int], list[Sentence]]:
        """Normalise and analyse every segment text of one batch once.

        Paraphrase candidates are filtered against the batch's own n-grams, so the result is
        only valid for pairs within this batch.
        """
        norm = Normalizer(res.nonbreaking)
        words = {t: norm.words(t) for t in texts}
        uniq = list(dict.fromkeys(words.values()))
        para = res.paraphrases
        number = {w: k for k, w in enumerate(uniq)}
        pair_idx = np.array([(number[words[a]], number[words[b]]) for a, b in pairs], dtype=np.int64)
        analysed = para.analyse([para.ids(w) for w in uniq], pair_idx)
        stems: dict[str, str] = {}
        for tok in {t for w in uniq for t in w}:
            stems[tok] = stem(tok)
        if self.meteor_compare == "hash":
            # the jar compares words and stems by String.hashCode(): hash each distinct one once
            hashes = {t: java_hash(t) for t in {*stems, *stems.values()}}
            key = hashes.__getitem__
        else:
            key = str
        fw = res.function_words
        syn = res.synonyms.all_synsets
        sentences: list[Sentence] = []
        for w, (paraphrases, ngrams) in zip(uniq, analysed):
            st = [stems[t] for t in w]
            sentences.append(Sentence(words=w, function=[t in fw for t in w], stems=st,
                                      keys=tuple(map(key, w)), stem_keys=tuple(map(key, st)),
                                      synsets=[syn(t) for t in w], paraphrases=paraphrases,
                                      ngrams=ngrams))
        return {t: number[words[t]] for t in texts}, sentences

    # -- scores -------------------------------------------------------------------------------
    def sentence_from_stats(self, stats: np.ndarray) -> np.ndarray:
        out = np.full(len(stats), np.nan)
        for k, row in enumerate(stats):
            if not np.isnan(row[0]):
                out[k] = score_stats(row[:N_FIELDS])
        return out

    def corpus_from_stats(self, total: np.ndarray) -> float:
        stats = total[:N_FIELDS].copy()
        stats[20] = total[CORPUS_CHUNKS]
        return score_stats(stats)
