"""ADEM's data: dialogue corpora for pre-training the encoder, and the local rated sets as
training rows (context, reference, response, human score on 1-5).

Each rated set keeps one quality (its overall or closest-to-overall judgement) and maps its
scale linearly onto 1-5: `1 + 4 (x - low) / (high - low)`. The mapping is written into every
ADEM artifact trained on it (`RatedRow.meta["adem_scale"]`, collected by `Adem.fit`).

- `usr-tc`, `usr-pc`: quality `overall` (1-5); the "Original Ground Truth" response is the
  reference and is never a candidate;
- `grade-*`: `coherence` (1-5), with GRADE's human reference;
- `gupta`: `overall` (1-5), five references;
- `predictive-engagement`: `engagement` (1-5); the set has no references, so the reference is
  the turn that follows the query in DailyDialog test (the set's queries come from there),
  and a candidate that *is* that reference is dropped;
- `fed-turn` (overall 0-4), `holistic-coherence` (1-5): no references; they serve `c_adem` only.

A JSONL/CSV file of samples with a `rating:score` (or any one quality) on 1-5 works as well.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any, Sequence

from ....errors import DialevalError


@dataclass(frozen=True)
class RatedSet:
    """What ADEM adds to a registered data set (`dialeval.data.datasets`): the quality it
    trains on and where the references come from (own | dailydialog-next | none). The folder,
    the loader and the systems whose response is the reference (USR's "Original Ground
    Truth", never a candidate) are the registry's, so they are named in one place."""

    name: str
    quality: str
    references: str = "own"

    @property
    def folder(self) -> str:
        """The data set's folder name under a data root (the registry's)."""
        from ....data.datasets import get_spec

        return get_spec(self.name).folder


RATED_SETS: dict[str, RatedSet] = {s.name: s for s in [
    RatedSet("usr-tc", "overall"),
    RatedSet("usr-pc", "overall"),
    RatedSet("grade-dailydialog", "coherence"),
    RatedSet("grade-convai2", "coherence"),
    RatedSet("grade-empatheticdialogues", "coherence"),
    RatedSet("gupta", "overall"),
    RatedSet("predictive-engagement", "engagement", references="dailydialog-next"),
    RatedSet("fed-turn", "overall", references="none"),
    RatedSet("holistic-coherence", "coherence", references="none"),
]}
WITH_REFERENCES = [n for n, s in RATED_SETS.items() if s.references != "none"]


@dataclass
class RatedRow:
    """One training/test row for ADEM: `score` is the human mean mapped to 1-5."""

    id: str
    dataset: str
    context: list[str]
    response: str
    references: list[str]
    score: float
    system: str | None = None
    dialogue: str = ""
    meta: dict[str, Any] = field(default_factory=dict)


def to_unit_scale(value: float, low: float, high: float) -> float:
    return 1.0 + 4.0 * (value - low) / (high - low)


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def dailydialog_next_turns(path: str) -> dict[str, str]:
    """Utterance (normalised) -> the next utterance, over a DailyDialog split (first wins)."""
    from ....data.corpus import read_corpus

    nxt: dict[str, str] = {}
    for dialogue in read_corpus(path):
        for a, b in zip(dialogue, dialogue[1:]):
            nxt.setdefault(_norm(a), b)
    return nxt


def load_rated(spec: str, *, quality: str | None = None, dailydialog_test: str | None = None) -> list[RatedRow]:
    """Rows of `NAME:FOLDER` (a registered rated set) or of a JSONL/CSV samples file, scored by
    `quality` (default: the set's own quality; for a file, its only quality or `score`)."""
    name, sep, path = spec.partition(":")
    if not sep or name not in RATED_SETS:
        if os.path.isfile(spec):
            return _rows_from_file(spec, quality)
        known = ", ".join(RATED_SETS)
        raise DialevalError(f"--data {spec!r}: give NAME:FOLDER with NAME one of {known}, or a samples file")
    return load_rated_set(name, path, quality=quality, dailydialog_test=dailydialog_test)


def load_rated_set(name: str, path: str, *, quality: str | None = None,
                   dailydialog_test: str | None = None) -> list[RatedRow]:
    from ....data.datasets import load_dataset

    rs = RATED_SETS[name]
    if quality is not None and quality != rs.quality:
        rs = RatedSet(name, quality, rs.references)
    ds = load_dataset(name, path)
    if ds.reference_systems:
        ds = ds.without_systems(ds.reference_systems)
    if rs.quality not in ds.info.scales:
        raise DialevalError(f"{name}: no quality {rs.quality!r}; it has {', '.join(sorted(ds.info.scales))} "
                            "(choose with --quality)")
    low, high = ds.info.scales[rs.quality]
    nxt = None
    if rs.references == "dailydialog-next":
        dd = dailydialog_test or os.path.join(os.path.dirname(os.path.abspath(path)), "dailydialog", "test.zip")
        if not os.path.exists(dd):
            raise DialevalError(f"{name}: its references come from DailyDialog test; not found at {dd}")
        nxt = dailydialog_next_turns(dd)
    rows = []
    for s in ds.samples:
        human = s.human(rs.quality)
        if human != human:
            continue
        refs = list(s.references)
        if nxt is not None:
            ref = nxt.get(_norm(s.context[-1])) if s.context else None
            if ref is None or _norm(ref) == _norm(s.response):
                continue               # no reference found, or the candidate is the reference
            refs = [ref]
        elif rs.references == "none":
            refs = []
        rows.append(RatedRow(id=f"{name}/{s.id}", dataset=name, context=list(s.context), response=s.response,
                             references=refs, score=to_unit_scale(human, low, high), system=s.system,
                             dialogue=str(s.meta.get("dialogue_id", s.id)),
                             meta={"adem_scale": {"dataset": name, "quality": rs.quality, "low": low,
                                                  "high": high}}))
    return rows


def _rows_from_file(path: str, quality: str | None = None) -> list[RatedRow]:
    """Rows of a samples file. One quality trains ADEM: the one asked for, else `score`, else
    the file's only one; a file with several and no choice is refused (taking one silently
    would train on a judgement the user did not pick)."""
    from ....data.readers import read_samples

    samples = list(read_samples(path))
    for s in samples:
        if not s.ratings:
            raise DialevalError(f"{path}: sample {s.id!r} has no rating to train on")
    found = list(dict.fromkeys(q for s in samples for q in s.ratings))
    if quality is None:
        if "score" in found or len(found) == 1:
            quality = "score" if "score" in found else found[0]
        else:
            raise DialevalError(f"{path}: the samples carry several qualities ({', '.join(found)}); "
                                "choose one with --quality")
    elif quality not in found:
        raise DialevalError(f"{path}: no sample has the quality {quality!r}; the file has {', '.join(found)}")
    rows = []
    for s in samples:
        if s.human(quality) != s.human(quality):
            continue                   # this sample was not rated on the chosen quality
        rows.append(RatedRow(id=f"{os.path.basename(path)}/{s.id}", dataset=os.path.basename(path),
                             context=list(s.context), response=s.response, references=list(s.references),
                             score=s.human(quality), system=s.system,
                             dialogue=str(s.meta.get("dialogue_id", "\n".join(s.context) or s.id)),
                             meta={"adem_scale": {"dataset": os.path.basename(path), "quality": quality,
                                                  "low": 1, "high": 5}}))
    return rows


def split_by_context(rows: Sequence[RatedRow], fractions: Sequence[float], seed: int) -> list[list[int]]:
    """Row indices split so that no context is in two parts (the paper's rule), by shares of
    distinct contexts drawn with `seed`."""
    import numpy as np

    keys = sorted({_context_key(r) for r in rows})
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(keys))
    bounds = np.cumsum([0] + [round(f * len(keys)) for f in fractions[:-1]] + [len(keys)])
    bounds[-1] = len(keys)
    part_of = {}
    for p in range(len(fractions)):
        for k in order[bounds[p]: bounds[p + 1]]:
            part_of[keys[k]] = p
    parts: list[list[int]] = [[] for _ in fractions]
    for i, r in enumerate(rows):
        parts[part_of[_context_key(r)]].append(i)
    return parts


def _context_key(row: RatedRow) -> str:
    return row.dataset + "\x00" + re.sub(r"\s+", " ", " ||| ".join(row.context)).strip().lower()
