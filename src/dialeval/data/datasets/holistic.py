"""The holistic-evaluation paper's ratings (Pang et al. 2020): context coherence of 200
responses to single DailyDialog utterances, and fluency of 200 responses, ten 1-5 ratings
each (CSV without header: id, [context,] response, r1..r10). No references.
"""

from __future__ import annotations

import os

from ...errors import InputError
from ..sample import DatasetInfo, Sample
from .base import DIALOGUE_ID, Dataset, need_file, rating, read_csv, Source

SOURCE = Source(
    folder="holistic-eval",
    title="Holistic evaluation ratings (Pang et al., ACL 2020)",
    origin="github.com/alexzhou907/dialogue_evaluation (commit d7f08e0), top-level files",
    licence="no licence for the data: cite Pang et al. 2020; contexts from DailyDialog (CC BY-NC-SA 4.0)",
    layout=("context_data_release.csv", "fluency_data_release.csv"))

FILES = {"coherence": "context_data_release.csv", "fluency": "fluency_data_release.csv"}


def load(path: str | os.PathLike, quality: str = "coherence") -> Dataset:
    file = need_file(path, FILES[quality])
    with_context = quality == "coherence"
    width = 13 if with_context else 12
    samples = []
    for line, row in read_csv(file, header=False):
        if len(row) != width:
            raise InputError(f"expected {width} columns, got {len(row)}", path=str(file), line=line)
        context = [row[1].strip()] if with_context else []
        response = row[2 if with_context else 1].strip()
        scores = [rating(v, path=file, line=line, field=f"r{j + 1}")
                  for j, v in enumerate(row[width - 10:])]
        samples.append(Sample(id=f"{quality}-{row[0]}", response=response, context=context,
                              ratings={quality: scores},
                              meta={DIALOGUE_ID: row[1].strip() if with_context else row[0]}))
    desc = {"coherence": "context coherence: does the response fit the previous utterance? 1-5",
            "fluency": "fluency of the response on its own, 1-5"}[quality]
    info = DatasetInfo(name=f"holistic-{quality}", level="turn", qualities={quality: desc},
                       scales={quality: (1, 5)},
                       description=f"Pang et al. 2020 {quality} ratings, 10 annotators, no references")
    return Dataset(info, samples)
