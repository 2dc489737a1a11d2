"""The `meteor` metric: METEOR 1.5 as pycocoevalcap/nlg-eval run the jar (`-l en -norm`).

Statistics rows hold the jar's 23 fields of the selected reference plus one column, the chunk
count that enters the corpus sum (the jar leaves out the chunks of perfect segments), so the
corpus score is a function of column sums and rows merge like every other metric's.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...base import Batch, Metric
from .align import Sentence, pair_stats
from .normalize import Normalizer, wrapper_fields

ALPHA, BETA, GAMMA, DELTA = 0.85, 0.2, 0.6, 0.75
WEIGHTS = (1.0, 0.6, 0.8, 0.6)
N_FIELDS = 23
CORPUS_CHUNKS = 23


def _is_perfect(s) -> bool:
    hyp = sum(s[4 + 4 * m] + s[6 + 4 * m] for m in range(4))
    ref = sum(s[5 + 4 * m] + s[7 + 4 * m] for m in range(4))
    return hyp == s[0] and ref == s[1] and s[20] == 1


def score_stats(s, chunks: float | None = None) -> float:
    """The jar's `computeMetrics` on one stats vector (IEEE division, NaN -> 0, floor 0)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        s = [np.float64(v) for v in s]
        lh = DELTA * (s[0] - s[2]) + (1.0 - DELTA) * s[2]
        lr = DELTA * (s[1] - s[3]) + (1.0 - DELTA) * s[3]
        mh = np.float64(0.0)
        mr = np.float64(0.0)
        for m in range(4):
            mh += s[4 + 4 * m] * WEIGHTS[m] * DELTA
        for m in range(4):
            mr += s[5 + 4 * m] * WEIGHTS[m] * DELTA
        for m in range(4):
            mh += s[6 + 4 * m] * WEIGHTS[m] * (1.0 - DELTA)
        for m in range(4):
            mr += s[7 + 4 * m] * WEIGHTS[m] * (1.0 - DELTA)
        p = mh / lh
        r = mr / lr
        fmean = 1.0 / ((1.0 - ALPHA) / p + ALPHA / r)
        c = s[20] if chunks is None else np.float64(chunks)
        if _is_perfect(s) and chunks is None:
            frag = np.float64(0.0)
        else:
            frag = c / ((s[21] + s[22]) / 2)
        score = fmean * (1.0 - GAMMA * frag ** BETA)
    score = float(score)
    if math.isnan(score):
        return 0.0
    return max(score, 0.0)


class Meteor(Metric):
    """METEOR 1.5 (Denkowski & Lavie 2014), English, rank task, exact/stem/synonym/paraphrase."""

    name = "meteor"
    description = "METEOR 1.5 as pycocoevalcap runs the jar (-l en -norm), without Java"
    native_tokenizer = "meteor-norm"
    corpus_from_summed_stats = True

    def __init__(self, refs_mode: str = "multi", tokenizer: str | None = None,
                 meteor_resources: str | None = None):
        # METEOR always tokenises with its own normaliser; the signature says so
        super().__init__(refs_mode=refs_mode, tokenizer=None)
        self.meteor_resources = meteor_resources
        self._sentences: dict[str, Sentence] = {}

    def signature_options(self) -> list[tuple[str, Any]]:
        return [("lang", "en"), ("norm", "yes"), ("task", "rank"), ("version", "1.5")][:3] + [("meteor", "1.5")]

    # -- statistics ---------------------------------------------------------------------------
    def multi_stats(self, batch: Batch) -> np.ndarray:
        from .resources import load_resources

        res = load_resources(self.meteor_resources)
        fields = [wrapper_fields(h, refs) if refs else None for h, refs in zip(batch.hyps, batch.refs)]
        self._prepare(res, {t for f in fields if f for t in [f[0], *f[1]]})
        out = np.full((len(batch), N_FIELDS + 1), np.nan)
        pair_memo: dict[tuple[str, str], tuple[float, list[float]]] = {}
        for row, f in enumerate(fields):
            if f is None:
                continue
            hyp, refs = f
            h = self._sentences[hyp]
            best = None
            for ref in refs:
                got = pair_memo.get((hyp, ref))
                if got is None:
                    stats = pair_stats(h, self._sentences[ref])
                    got = (score_stats(stats), stats)
                    pair_memo[(hyp, ref)] = got
                if best is None or got[0] > best[0]:
                    best = got
            stats = best[1]
            out[row, :N_FIELDS] = stats
            out[row, CORPUS_CHUNKS] = 0.0 if _is_perfect(stats) else stats[20]
        return out

    def _prepare(self, res, texts: set[str]) -> None:
        """Normalise and analyse every new segment text once (per metric instance)."""
        new = [t for t in texts if t not in self._sentences]
        if not new:
            return
        from nltk.stem.snowball import SnowballStemmer

        stem = SnowballStemmer("english").stem
        norm = Normalizer(res.nonbreaking)
        words = {t: norm.words(t) for t in new}
        uniq = list(dict.fromkeys(words.values()))
        para = res.paraphrases
        ids = [para.ids(w) for w in uniq]
        paths = para.paths(ids)
        stems: dict[str, str] = {}
        fw = res.function_words
        syn = res.synonyms.all_synsets
        by_words: dict[tuple[str, ...], Sentence] = {}
        for w, i, p in zip(uniq, ids, paths):
            st = []
            for tok in w:
                s = stems.get(tok)
                if s is None:
                    s = stems[tok] = stem(tok)
                st.append(s)
            sent = Sentence(words=w, function=[t in fw for t in w], stems=st,
                            synsets=[syn(t) for t in w], para_ids=i, para_paths=p)
            sent.index(para.max_len)
            by_words[w] = sent
        for t in new:
            self._sentences[t] = by_words[words[t]]

    # -- scores -------------------------------------------------------------------------------
    def sentence_from_stats(self, stats: np.ndarray) -> np.ndarray:
        out = np.full(len(stats), np.nan)
        for k, row in enumerate(stats):
            if not np.isnan(row[0]):
                out[k] = score_stats(row[:N_FIELDS])
        return out

    def corpus_from_stats(self, total: np.ndarray) -> float:
        return score_stats(total[:N_FIELDS], chunks=total[CORPUS_CHUNKS])
