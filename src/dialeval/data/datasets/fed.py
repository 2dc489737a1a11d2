"""FED (Mehri & Eskenazi 2020): 375 rated system turns and 125 rated whole dialogues
(Meena, Mitsuku, Human), 5 annotators each, 18 qualities.

Quirks: contexts are "User: ..."/"System: ..." lines joined by newlines (split, speaker tags
kept); the rated response carries a "System: " prefix (removed); some ratings are annotator
free text such as "N/A (No errors)" (NaN). No references: FED is for reference-free metrics.
At dialogue level the sample's response is the dialogue's last turn and its context the
turns before it. Turn-level items are excerpts of a handful of conversations;
`meta["dialogue_id"]` groups excerpts that open with the same first two lines.
"""

from __future__ import annotations

import hashlib
import os

from ..sample import DatasetInfo, Sample
from .base import DIALOGUE_ID, Dataset, need_file, rating, read_json, snake, Source

SOURCE = Source(
    folder="fed",
    title="FED, fine-grained evaluation of dialog (Mehri & Eskenazi, SIGDIAL 2020)",
    origin=("http://shikib.com/fed_data.json, linked from github.com/Shikib/fed; a copy is in "
            "github.com/DSincerity/FED_Replication (commit f0a9a67)"),
    licence="no licence stated: research use, cite Mehri & Eskenazi 2020; dialogues from the Meena release",
    layout=("fed_data.json",))

TURN = {
    "interesting": (0, 2), "engaging": (0, 2), "specific": (0, 2), "relevant": (0, 2),
    "correct": (0, 2), "semantically_appropriate": (0, 2), "understandable": (0, 1),
    "fluent": (0, 2), "overall": (0, 4),
}
DIALOGUE = {
    "coherent": (0, 2), "error_recovery": (0, 2), "consistent": (0, 1), "diverse": (0, 2),
    "depth": (0, 2), "likeable": (0, 2), "understanding": (0, 2), "flexible": (0, 2),
    "informative": (0, 2), "inquisitive": (0, 2), "overall": (0, 4),
}


def _strip_speaker(text: str) -> str:
    for tag in ("System:", "User:"):
        if text.startswith(tag):
            return text[len(tag):].strip()
    return text.strip()


def load(path: str | os.PathLike, level: str = "turn") -> Dataset:
    file = need_file(path, "fed_data.json")
    samples = []
    for i, item in enumerate(read_json(file)):
        is_turn = "response" in item
        if is_turn != (level == "turn"):
            continue
        lines = [t for t in item["context"].split("\n") if t.strip()]
        if is_turn:
            context, response = lines, _strip_speaker(item["response"])
            dialogue = hashlib.sha1("\n".join(lines[:2]).encode()).hexdigest()[:12]
        else:
            context, response = lines[:-1], _strip_speaker(lines[-1]) if lines else ""
            dialogue = f"fed-{i}"
        ratings = {snake(q): [rating(v, path=file, field=f"[{i}].annotations.{q}") for v in vals]
                   for q, vals in item["annotations"].items()}
        samples.append(Sample(id=f"fed-{i}", response=response, context=context,
                              system=item.get("system"), ratings=ratings,
                              meta={DIALOGUE_ID: dialogue}))
    scales = TURN if level == "turn" else DIALOGUE
    info = DatasetInfo(
        name=f"fed-{level}", level=level, scales=dict(scales),
        qualities={q: f"{q.replace('_', ' ')}, {lo}-{hi}" for q, (lo, hi) in scales.items()},
        description=f"FED {level}-level ratings, 5 annotators, no references")
    return Dataset(info, samples)
