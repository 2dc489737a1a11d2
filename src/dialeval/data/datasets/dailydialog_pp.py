"""DailyDialog++ test (Sai et al., TACL 2020): for each DailyDialog context, five replies people
wrote as good ones, five they wrote to be close to the context in words yet wrong (adversarial),
and five drawn at random. A set of pairs more than of ratings: `overall` is 1 for a positive and
0 for a negative, and the systems `positive`, `adversarial` and `random` let `compare` and
`evaluate` ask how often a metric puts a positive above a negative of the same context.

References: four of the five positives, leaving out the one being judged (a positive is never
its own reference) and, for the k-th negative of each kind, the k-th positive, so every reply has
four. The full test.json is read: its contexts are DailyDialog's, and a model trained here never
reads DailyDialog's test or validation dialogues, nor DailyDialog++'s test file."""

from __future__ import annotations

import os

from ..corpus.dailydialog_pp import KINDS, DailyDialogPlusPlus
from ..corpus.loading import json_lines, need
from ..sample import DatasetInfo, Sample
from .base import DIALOGUE_ID, Dataset, need_file

SOURCE = DailyDialogPlusPlus.source
SYSTEMS = {"positives": "positive", "adversarial": "adversarial", "random": "random"}


def load(path: str | os.PathLike) -> Dataset:
    file = str(need_file(path, "test.json"))
    samples = []
    for line, item in json_lines(file):
        need(item, dict, file, "item", line)
        context = [need(t, str, file, "context", line).strip()
                   for t in need(item.get("context"), list, file, "context", line)]
        replies = {key: [need(t, str, file, field, line).strip() for t in need(item.get(field), list, file, field, line)]
                   for key, field in KINDS}
        positives = replies["positives"]
        ident = str(item.get("id", line))
        for key, texts in replies.items():
            for k, text in enumerate(texts):
                refs = [p for j, p in enumerate(positives) if j != k]
                samples.append(Sample(id=f"ddpp-{ident}-{SYSTEMS[key]}-{k}", response=text, context=context,
                                      references=refs, system=SYSTEMS[key],
                                      ratings={"overall": [1.0 if key == "positives" else 0.0]},
                                      meta={DIALOGUE_ID: ident}))
    info = DatasetInfo(name="dailydialog-pp", level="turn",
                       qualities={"overall": "1: a reply people wrote as a good one; 0: an adversarial or random one"},
                       scales={"overall": (0, 1)},
                       description=("DailyDialog++ test: 5 positive, 5 adversarial and 5 random replies per context, "
                                    "4 positives as references"))
    return Dataset(info, samples)
