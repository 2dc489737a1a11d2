"""ADEM's copy term: what a reply that repeats the user's last turn back loses.

Why. ADEM scores c^T M r^ (+ r^T N r^): a bilinear reward for a response close to the context.
The user's last turn repeated back is as close to the context as a reply can be, so it scored
above the real reply on most probe items (parrot 0.56 / 0.46 for `adem`, 0.34 / 0.28 for
`c_adem`, usr-tc / gupta). Training the bilinear head or the encoder against such copies was
tried (docs/adem.md, "Hard negatives"): it pushed relevance down with them and lost held out.
Relevance and copying are different questions, so the copy is answered by a term of its own.

What. The feature is the word-set F1 between the response and the context's last turn (0 with
no context or no words): 1 for a copy, and at most 0.75 for the real responses of seven of the
eight local rated sets (GRADE DailyDialog holds 16 system replies of 300 that copy, which its
raters scored 2.9 against 3.1 for the rest). The term is
    weight * clip((F1 - knee) / (1 - knee), 0, 1)
subtracted from the score before the scale's bottom is squashed (metrics.softfloor), so a copy
loses `weight` points on the 1-5 scale and a reply below the knee loses nothing. Weight and knee
are chosen after the bilinear fit, on the training sets' own validation rows together with one
copy of each row's last turn rated at the bottom of its set, by the mean Spearman within each
set (a grid; no test set takes part). It costs nothing at scoring: two word sets per row.

`r_adem`'s bilinear part reads no context, but the term reads the last turn for it as for the
others: a reply is only known to repeat a turn by that turn, and a reference-only score of a
parroted turn (close to a reference that answers it) let the copy win on 20-34% of probe items.
"""

from __future__ import annotations

import re
from typing import Sequence

import numpy as np

from ....stats import spearman_finite

KNEES = (0.5, 0.6, 0.7, 0.8, 0.9)
WEIGHTS = (0.0, 0.25, 0.5, 1.0, 2.0, 4.0)
_WORD = re.compile(r"\w+")


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def overlap(contexts: Sequence[Sequence[str]], responses: Sequence[str]) -> np.ndarray:
    """Word-set F1 of each response with its context's last turn (0 without either)."""
    out = np.zeros(len(responses))
    for i, (context, response) in enumerate(zip(contexts, responses)):
        if not context:
            continue
        a, b = _words(response), _words(context[-1])
        common = len(a & b)
        if common:
            out[i] = 2.0 * common / (len(a) + len(b))
    return out


def penalty(x: np.ndarray, weight: float, knee: float) -> np.ndarray:
    """What each row loses: `weight` x how far its overlap lies above `knee`, in [0, 1]."""
    if not weight:
        return np.zeros(len(x))
    return float(weight) * np.clip((np.asarray(x, dtype=float) - knee) / (1.0 - knee), 0.0, 1.0)


class CopyTerm:
    """A fitted model's copy term: its weight and knee, and what they take off a score. Weight
    0 is a term that was tried and lost (kept, so the folder says so)."""

    def __init__(self, weight: float = 0.0, knee: float = KNEES[0]):
        self.weight, self.knee = weight, knee

    @classmethod
    def chosen(cls, record: dict) -> "CopyTerm":
        """The term `choose` picked."""
        return cls(record["weight"], record["knee"])

    @property
    def active(self) -> bool:
        return bool(self.weight)

    def apply(self, scores: np.ndarray, x: np.ndarray) -> np.ndarray:
        """`scores` less what each row loses for its overlap `x` with its context's last turn."""
        return scores - penalty(x, self.weight, self.knee)

    def state(self) -> dict:
        """config.json's values, under the names ADEM folders have always used."""
        return {"copy_weight_": self.weight, "copy_knee_": self.knee}

    @classmethod
    def from_state(cls, values) -> "CopyTerm | None":
        """The term a folder records, or None for a model trained without one."""
        return cls(values["copy_weight_"], values.get("copy_knee_", KNEES[0])) if "copy_weight_" in values else None


def choose(scores: np.ndarray, x: np.ndarray, y: np.ndarray, groups: np.ndarray,
           copy_scores: np.ndarray, copy_x: np.ndarray) -> dict:
    """The (weight, knee) of the grid with the best mean within-set Spearman over the validation
    rows and their copies (each copy rated at its set's lowest validation rating); the smallest
    weight among equals, so the term stays off unless it helps."""
    sets = sorted(set(groups.tolist()))
    table = []
    best = None
    # weight 0 first (the knee does nothing without a weight), then every (weight, knee)
    for weight, knee in [(0.0, KNEES[0])] + [(w, k) for w in WEIGHTS if w for k in KNEES]:
        s = scores - penalty(x, weight, knee)
        c = copy_scores - penalty(copy_x, weight, knee)
        per_set = []
        for g in sets:
            rows = groups == g
            if rows.sum() < 3:
                continue
            values = np.concatenate([s[rows], c[rows]])
            human = np.concatenate([y[rows], np.full(int(rows.sum()), float(np.min(y[rows])))])
            r = spearman_finite(values, human)
            per_set.append(r if np.isfinite(r) else 0.0)
        mean = float(np.mean(per_set)) if per_set else 0.0
        table.append({"weight": weight, "knee": knee, "spearman": round(mean, 4)})
        if best is None or mean > best[0] + 1e-9:
            best = (mean, weight, knee)
    mean, weight, knee = best
    return {"weight": float(weight), "knee": float(knee), "val_spearman_with_copies": round(mean, 4),
            "grid": table}
