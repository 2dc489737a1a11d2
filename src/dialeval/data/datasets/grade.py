"""GRADE (Huang et al. 2020): coherence of 1,200 responses from 8 (corpus, model) groups,
1-5, 8-11 annotators per response (`human_score/human_judgement.json`; the per-group
`human_score.txt` files hold only the means). Contexts and references come from
`eval_data/<corpus>/<model>/human_{ctx,ref}.txt`, line-aligned with the judgements (turns
joined by "|||"). One loader per corpus: dailydialog, convai2, empatheticdialogues.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import defaultdict

from ...errors import InputError
from ..sample import DatasetInfo, Sample
from .base import DIALOGUE_ID, Dataset, need_file, rating, read_json, read_text, Source

SOURCE = Source(
    folder="grade",
    title="GRADE coherence judgements on DailyDialog, ConvAI2, EmpatheticDialogues (Huang et al., EMNLP 2020)",
    origin="github.com/li3cmz/GRADE (commit c6cec02), folder evaluation/ (the prefix evaluation/ dropped)",
    licence=("no licence file: research use, cite Huang et al. 2020; dialogues: DailyDialog (CC BY-NC-SA 4.0), "
             "ConvAI2 (MIT), EmpatheticDialogues (CC BY-NC 4.0)"),
    layout=("human_score/human_judgement.json", "eval_data/<corpus>/<model>/human_hyp.txt",
            "eval_data/<corpus>/<model>/human_ref.txt"))

CORPORA = {"dailydialog": "dailydialog_EVAL", "convai2": "convai2",
           "empatheticdialogues": "empatheticdialogues"}


def _lines(path) -> list[str]:
    text = read_text(path)
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [l.rstrip("\r") for l in lines]


def load(path: str | os.PathLike, corpus: str = "dailydialog") -> Dataset:
    file = need_file(path, "human_score", "human_judgement.json")
    groups: dict[str, list[dict]] = defaultdict(list)
    for item in read_json(file):
        if item["Dataset"] == CORPORA[corpus]:
            groups[item["DialogModel"]].append(item)
    samples = []
    for model, items in groups.items():
        folder = need_file(path, "eval_data", corpus, model)
        refs = _lines(folder / "human_ref.txt")
        hyps = _lines(folder / "human_hyp.txt")
        if len(refs) < len(items) or len(hyps) < len(items):
            raise InputError(f"{len(items)} judgements but {len(hyps)} responses", path=str(folder))
        for k, item in enumerate(items):
            if item["Response"].strip() != hyps[k].strip():
                raise InputError(f"judgement {item['ID']} does not match line {k + 1}",
                                 path=str(folder / "human_hyp.txt"), line=k + 1)
            scores = json.loads(item["HumanScores"])
            context = [t.strip() for t in item["Context"].split("|||") if t.strip()]
            samples.append(Sample(
                id=f"grade-{item['ID']}", response=item["Response"].strip(), context=context,
                references=[refs[k].strip()], system=model,
                ratings={"coherence": [rating(v, path=file, field=f"ID {item['ID']}") for v in scores]},
                meta={DIALOGUE_ID: hashlib.sha1("|||".join(context).encode()).hexdigest()[:12]}))
    info = DatasetInfo(
        name=f"grade-{corpus}", level="turn", scales={"coherence": (1, 5)},
        qualities={"coherence": "coherence of the response with the context, 1-5"},
        description=f"GRADE {corpus}: {len(groups)} models x 150 responses, ~10 annotators; "
                    "dialogue_id groups the responses to the same context")
    return Dataset(info, samples)
