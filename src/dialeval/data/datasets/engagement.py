"""Predictive engagement (Ghazarian et al. 2020): engagement of 600 (query, response) pairs
from DailyDialog (generated and ground-truth replies to 299 queries), 1-5, one CSV row per
annotator (~3 per pair), with the paper's own automatic scores (kept in `meta`, trailing
newlines removed: `ruber_unref_score`, `ctx_unref_score`, `eng_score_meanpooling`,
`eng_score_maxpooling`). No references.
"""

from __future__ import annotations

import os

from ..sample import DatasetInfo, Sample
from .base import DIALOGUE_ID, Dataset, need_file, rating, read_csv, snake, Source

SOURCE = Source(
    folder="predictive-engagement",
    title="Predictive Engagement (Ghazarian et al., AAAI 2020)",
    origin="github.com/PlusLabNLP/PredictiveEngagement (commit 214d3eb), folder data/",
    licence="MIT (the repository's LICENSE); the dialogues come from ConvAI 2017 and DailyDialog (CC BY-NC-SA 4.0)",
    layout=("data/Eng_Scores_queries_gen_gtruth_replies.csv",
            "data/humanAMT_engscores_utt.csv, data/DD_finetune_train.csv, data/DD_finetune_valid.csv (mme_em's training labels)",
            "../dailydialog/test.zip (ADEM: the references are DailyDialog test's next turns)"),
    note="the engagement labels of mme_em: ConvAI utterance labels and the DailyDialog fine-tuning split, never the rated set")

SCORE_COLUMNS = ("Ruber_Unref_Score", "CTX_Unref_Score", "Eng_Score_MeanPooling",
                 "Eng_Score_MaxPooling")


def load(path: str | os.PathLike) -> Dataset:
    file = need_file(path, "data", "Eng_Scores_queries_gen_gtruth_replies.csv")
    pairs: dict[tuple[str, str], Sample] = {}
    for line, row in read_csv(file):
        key = (row["query"].strip(), row["response"].strip())
        sample = pairs.get(key)
        if sample is None:
            meta = {snake(c): rating(row[c], path=file, line=line, field=c) for c in SCORE_COLUMNS}
            meta[DIALOGUE_ID] = key[0]
            sample = pairs[key] = Sample(id=f"eng-{len(pairs)}", response=key[1], context=[key[0]],
                                         ratings={"engagement": []}, meta=meta)
        sample.ratings["engagement"].append(rating(row["human_score"], path=file, line=line,
                                                   field="human_score"))
    info = DatasetInfo(name="predictive-engagement", level="turn", scales={"engagement": (1, 5)},
                       qualities={"engagement": "how engaging the response is, 1-5"},
                       description="Ghazarian et al. 2020 engagement ratings, ~3 annotators per pair")
    return Dataset(info, list(pairs.values()))
