"""ConvAI2 wild evaluation (2018): human-bot dialogues, each scored 1-5 as a whole by the human
who talked to the bot. A dialogue-level set: the sample's response is the dialogue's last turn and
its context the turns before it (as FED's dialogues), its system the bot that took part.

The loader reads the same train-safe files the `convai2-wild:` corpus trains on (the staged copies
without dialogues that share an utterance with another rated set), so one folder means one set
of dialogues, whether a model trains on it or is judged on it: hold it out of training wherever
it is evaluated. Dialogues without a score, or with fewer than two turns, are left out."""

from __future__ import annotations

import os

from ..corpus.convai2 import ConvAI2WildEval, convai2_dialogues
from ..sample import DatasetInfo, Sample
from .base import DIALOGUE_ID, Dataset, need_file, rating

SOURCE = ConvAI2WildEval.source
FILES = ConvAI2WildEval.source.layout


def _system(raw: dict) -> str:
    for key in ("participant1_id", "participant2_id"):
        who = raw.get(key)
        if isinstance(who, dict) and str(who.get("class", "")).lower() == "bot" and who.get("user_id"):
            return str(who["user_id"])
    return "bot"


def load(path: str | os.PathLike) -> Dataset:
    samples = []
    for name in FILES:
        file = str(need_file(path, name))
        stem = name.split(".")[0]
        for i, raw, dialogue in convai2_dialogues(file):
            score = raw.get("eval_score")
            if score is None or len(dialogue.turns) < 2:
                continue
            ident = f"{stem}-{i}"
            samples.append(Sample(id=ident, response=dialogue.turns[-1], context=list(dialogue.turns[:-1]),
                                  system=_system(raw),
                                  ratings={"overall": [rating(score, path=file, field=f"[{i}].eval_score")]},
                                  meta={DIALOGUE_ID: ident, "persona": list(dialogue.grounding)}))
    info = DatasetInfo(name="convai2-wild", level="dialogue", qualities={"overall": "the human's score of the "
                                                                                     "whole dialogue, 1-5"},
                       scales={"overall": (1, 5)},
                       description="ConvAI2 wild evaluation: human-bot dialogues, one 1-5 score each, no references")
    return Dataset(info, samples)
