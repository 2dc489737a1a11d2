"""DSTC9 interactive track (as released with FlowScore): 2,200 dialogues of 11 systems,
each rated by ~3 annotators, one JSON item per (annotator, dialogue) in
`data/chatbotK.json`. Items of the same dialogue text are merged into one sample whose
rating lists hold the annotators' scores. Dialogue level: the response is the last turn, the
context the turns before it. "N/A" ratings (mostly error recovery) are NaN.
"""

from __future__ import annotations

import os

from ..sample import DatasetInfo, Sample
from .base import DIALOGUE_ID, Dataset, need_file, rating, read_json, snake, Source

SOURCE = Source(
    folder="dstc9-interactive-flowscore",
    title="DSTC9 track 3 interactive evaluation (Gunasekara et al. 2021), as packaged with FlowScore (Li et al. 2021)",
    origin="github.com/ictnlp/DialoFlow (commit a861408), folder FlowScore/: data/chatbot{1..11}.json",
    licence="MIT (the DialoFlow repository); cite the DSTC9 overview",
    layout=("data/chatbot{1..11}.json",))

SCALES = {"overall": (1, 5), "consistent": (0, 1), "likeable": (1, 3), "diverse": (1, 3),
          "informative": (1, 3), "coherent": (1, 3), "understanding": (1, 3), "flexible": (1, 3),
          "topic_depth": (1, 3), "error_recovery": (1, 3), "inquisitive": (1, 3)}


def _strip_speaker(text: str) -> str:
    for tag in ("System:", "User:"):
        if text.startswith(tag):
            return text[len(tag):].strip()
    return text.strip()


def load(path: str | os.PathLike, systems: int = 11) -> Dataset:
    samples: dict[tuple[str, str], Sample] = {}
    for k in range(1, systems + 1):
        file = need_file(path, "data", f"chatbot{k}.json")
        for i, item in enumerate(read_json(file)):
            key = (f"chatbot{k}", item["context"])
            sample = samples.get(key)
            if sample is None:
                lines = [t for t in item["context"].split("\n") if t.strip()]
                sample = samples[key] = Sample(
                    id=f"chatbot{k}-{len(samples)}", response=_strip_speaker(lines[-1]) if lines else "",
                    context=lines[:-1], system=f"chatbot{k}", ratings={q: [] for q in SCALES},
                    meta={DIALOGUE_ID: f"chatbot{k}-{len(samples)}"})
            for field, value in item.items():
                if field == "context":
                    continue
                q = "overall" if field == "human (overall)" else snake(field)
                sample.ratings.setdefault(q, []).append(rating(value, path=file, field=f"[{i}].{field}"))
    info = DatasetInfo(
        name="dstc9", level="dialogue", scales=dict(SCALES),
        qualities={q: f"{q.replace('_', ' ')}, {lo}-{hi}" for q, (lo, hi) in SCALES.items()},
        description="DSTC9 interactive dialogues, 11 systems, ~3 annotators per dialogue, no references")
    return Dataset(info, list(samples.values()))
