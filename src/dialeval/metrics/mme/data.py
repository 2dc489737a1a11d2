"""Training data for the MME sub-metrics, all derived from DailyDialog *train* (the rated sets
draw their contexts from DailyDialog valid/test, so those splits are never read here), plus
the perturbations that make the fluency negatives.

The perturbations follow the paper (after Sinha et al. 2020): a fluent response is kept as is
or loses each stop-word with probability 0.5; a non-fluent one is a word shuffle, a word drop,
or a repeat of random spans. Every function takes a `random.Random`, so a seed fixes the set.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Sequence

# A small English stop-word list (function words, auxiliaries, pronouns), written here.
STOPWORDS = frozenset("""
a an the and or but if so then than that this these those there here of to in on at by for
with from into onto over under about as is am are was were be been being do does did doing
have has had having will would shall should can could may might must i me my mine we us our
you your yours he him his she her hers it its they them their what which who whom whose when
where why how not no nor too very just also all any some each both either neither own same
other such only up down out off again once s t ll re ve d m o don didn doesn isn aren wasn
weren won wouldn couldn shouldn oh well yes yeah ok okay
""".split())

_WORD = re.compile(r"[a-z][a-z']+")


def words(text: str) -> list[str]:
    """Whitespace words (DailyDialog is already split around punctuation)."""
    return text.split()


def is_stopword(word: str) -> bool:
    return word.lower().strip(".,!?;:'\"") in STOPWORDS


# -- perturbations --------------------------------------------------------------------------------
def drop_stopwords(tokens: Sequence[str], rng: random.Random, p: float = 0.5) -> list[str]:
    """Each stop-word removed with probability p (a fluent variant: the paper's positive rule ii).
    Never returns an empty utterance."""
    kept = [w for w in tokens if not (is_stopword(w) and rng.random() < p)]
    return kept or list(tokens)


def shuffle_words(tokens: Sequence[str], rng: random.Random) -> list[str]:
    """All words in a random order different from the original when the words allow it."""
    out = list(tokens)
    if len(set(out)) < 2:
        return out
    for _ in range(10):
        rng.shuffle(out)
        if out != list(tokens):
            break
    return out


def drop_words(tokens: Sequence[str], rng: random.Random, low: float = 0.2, high: float = 0.5) -> list[str]:
    """Drop a random x% of the words, x uniform in [low, high]; at least one word goes and one stays."""
    n = len(tokens)
    if n < 2:
        return list(tokens)
    k = min(n - 1, max(1, round(n * rng.uniform(low, high))))
    gone = set(rng.sample(range(n), k))
    return [w for i, w in enumerate(tokens) if i not in gone]


def repeat_spans(tokens: Sequence[str], rng: random.Random, max_spans: int = 2, max_len: int = 3,
                 max_times: int = 3) -> list[str]:
    """Pick 1..max_spans spans of 1..max_len words and repeat each 1..max_times extra times in place."""
    out = list(tokens)
    if not out:
        return out
    for _ in range(rng.randint(1, max_spans)):
        length = rng.randint(1, min(max_len, len(out)))
        start = rng.randint(0, len(out) - length)
        span = out[start:start + length]
        out[start + length:start + length] = span * rng.randint(1, max_times)
    return out


NEGATIVE_RULES = ("shuffle", "drop", "repeat")


def fluency_example(text: str, rng: random.Random) -> tuple[str, int, str]:
    """(text, label, rule): label 1 with probability 0.5 (unchanged or stop-words dropped, even
    odds), else 0 with one of shuffle / drop / repeat (even odds), as the paper's mix."""
    tokens = words(text)
    if rng.random() < 0.5:
        if rng.random() < 0.5:
            return text, 1, "none"
        return " ".join(drop_stopwords(tokens, rng)), 1, "stopwords"
    rule = rng.choice(NEGATIVE_RULES)
    if rule == "shuffle":
        out = shuffle_words(tokens, rng)
    elif rule == "drop":
        out = drop_words(tokens, rng)
    else:
        out = repeat_spans(tokens, rng)
    if out == tokens:             # a one-word utterance cannot be shuffled or dropped: repeat it
        out, rule = repeat_spans(tokens, rng), "repeat"
    return " ".join(out), 0, rule


# -- corpus ---------------------------------------------------------------------------------------
@dataclass
class Pair:
    context: list[str]
    response: str


def written_negatives(specs: Sequence[str]) -> dict[tuple[str, ...], list[str]]:
    """Replies people wrote to be wrong for a dialogue's last turn (DailyDialog++'s adversarial
    negatives), by the dialogue's turns: what a corpus read by name keeps in `meta["adversarial"]`.
    Keyed by the turns rather than a position, so they follow a dialogue through sampling."""
    from ...data.corpus import read_dialogues as read_named, split_spec

    found: dict[tuple[str, ...], list[str]] = {}
    for spec in specs:
        if not split_spec(spec)[0]:
            continue
        for d in read_named(spec):
            if d.meta.get("adversarial"):
                found.setdefault(tuple(d.turns), list(d.meta["adversarial"]))
    return found


def read_dialogues(spec: str) -> list[list[str]]:
    """Training dialogues from one corpus spec (`dialeval.data.corpus.read_corpus_spec`).

    A corpus read by name refuses its own files that may not be trained on (a test split, a
    file that is not train-safe). A plain file whose name says test is refused, and one whose
    name says valid: the rated sets draw their contexts from DailyDialog's validation and test
    splits."""
    import os

    from ...data.corpus import read_corpus_spec, split_spec
    from ...errors import DialevalError

    named, path = split_spec(spec)
    base = os.path.basename(path).lower()
    if not named and ("test" in base or "valid" in base):
        raise DialevalError(f"{spec}: MME trains on DailyDialog train and Topical-Chat valid only (the rated "
                            "sets draw their contexts from DailyDialog's valid/test and Topical-Chat's test)")
    return read_corpus_spec(spec)


def sample_dialogues(dialogues: Sequence[list[str]], max_utterances: int, seed: int) -> list[list[str]]:
    """Whole dialogues drawn at random until about `max_utterances` utterances: keeping whole
    dialogues makes each context a response of another pair, so one encoding serves both."""
    rng = random.Random(seed)
    order = list(range(len(dialogues)))
    rng.shuffle(order)
    out, total = [], 0
    for i in order:
        if total >= max_utterances:
            break
        out.append(list(dialogues[i]))
        total += len(dialogues[i])
    return out


def pairs_of(dialogues: Sequence[list[str]], context_turns: int = 1) -> list[Pair]:
    return [Pair(d[max(0, i - context_turns):i], d[i]) for d in dialogues for i in range(1, len(d))]


def pair_places(dialogues: Sequence[list[str]]) -> list[tuple[int, int]]:
    """(dialogue index, response position) of each of `pairs_of`'s pairs, in its order."""
    return [(k, i) for k, d in enumerate(dialogues) for i in range(1, len(d))]


def context_text(context: Sequence[str], turns: int = 1) -> str:
    """The text a context is encoded as: its last `turns` utterances joined."""
    return " ".join(t.strip() for t in list(context)[-turns:] if t.strip())


def content_words(text: str) -> list[str]:
    """Lower-cased alphabetic words of 3+ letters that are not stop-words (keyword candidates)."""
    return [w for w in _WORD.findall(text.lower()) if len(w) >= 3 and w not in STOPWORDS]


# -- engagement -----------------------------------------------------------------------------------
def engagement_examples(folder: str) -> tuple[list[str], list[float], dict]:
    """(responses, labels in [0,1], description) from the Predictive Engagement folder: the
    ConvAI utterance labels (`humanAMT_engscores_utt.csv`) and the DailyDialog fine-tuning split
    (`DD_finetune_{train,valid}.csv`). The rated set (`Eng_Scores_queries_gen_gtruth_replies.csv`)
    is never read for training; any fine-tuning reply that also appears in it is dropped, so no
    rated response is seen in training."""
    import csv
    import os

    from ...errors import DialevalError

    data = os.path.join(folder, "data") if os.path.isdir(os.path.join(folder, "data")) else folder
    files = ["humanAMT_engscores_utt.csv", "DD_finetune_train.csv", "DD_finetune_valid.csv"]
    rated_path = os.path.join(data, "Eng_Scores_queries_gen_gtruth_replies.csv")
    rated: set[str] = set()
    if os.path.exists(rated_path):   # read only to exclude overlaps, never to learn from
        with open(rated_path, encoding="utf-8", newline="") as handle:
            rated = {_norm(r["response"]) for r in csv.DictReader(handle)}
    texts, labels, counts = [], [], {}
    for name in files:
        path = os.path.join(data, name)
        if not os.path.exists(path):
            raise DialevalError(f"{path}: missing (give the predictive-engagement folder to --engagement)")
        kept = dropped = 0
        with open(path, encoding="utf-8", newline="") as handle:
            for row in csv.DictReader(handle):
                reply = (row.get("reply") or "").strip()
                if not reply:
                    continue
                if _norm(reply) in rated:
                    dropped += 1
                    continue
                texts.append(reply)
                labels.append(float(row["label"]))
                kept += 1
        counts[name] = {"kept": kept, "dropped_in_rated_set": dropped}
    return texts, labels, counts


def _norm(text: str) -> str:
    return " ".join(text.lower().split())
