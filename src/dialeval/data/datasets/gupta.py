"""DailyDialog multi-reference ratings (Gupta et al. 2019): 100 test contexts x 5 responses
(human, hredf, seq2seqf, CVAEf, dualencoder_train), rated 1-5 for overall quality
(appropriateness) by MTurk workers; only the mean is published (its values are multiples of
0.2), so each sample has a one-element rating list and agreement statistics are not
available.

References: the 5 of `multireftest.json` for that context (context id `<dialogue>_<turn>`:
the original next turn first, then the 4 written by Gupta et al.). The rating CSV's own
`all_references` column holds only 4 of them (the original and 3 more), so it is used only
when the JSON file is absent. Contexts are joined by "||||".
"""

from __future__ import annotations

import os

import json
from pathlib import Path

from ...errors import InputError
from ..sample import DatasetInfo, Sample
from .base import DIALOGUE_ID, Dataset, need_file, rating, read_csv, read_text, Source

SOURCE = Source(
    folder="dailydialog-multiref-gupta",
    title="DailyDialog multi-reference test set and ratings (Gupta et al., SIGDIAL 2019)",
    origin="github.com/prakharguptaz/multirefeval (commit 2a4b544), folder multiref-dataset/",
    licence="no licence file: cite Gupta et al. 2019; the dialogues are DailyDialog test (CC BY-NC-SA 4.0)",
    layout=("multiref-dataset/mturk_rating_processed_output.csv", "multiref-dataset/multireftest.json (optional)"))


def _multiref(path) -> list[list[list[str]]] | None:
    """references[dialogue][turn] from multireftest.json (JSON lines), or None if absent."""
    file = Path(path, "multiref-dataset", "multireftest.json")
    if not file.exists():
        return None
    out = []
    for number, line in enumerate(read_text(file).split("\n"), 1):
        if line.strip():
            try:
                item = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(f"bad JSON: {exc.msg}", path=str(file), line=number) from None
            out.append([turn.get("responses") or [] for turn in item["dialogue"]])
    return out


def load(path: str | os.PathLike) -> Dataset:
    file = need_file(path, "multiref-dataset", "mturk_rating_processed_output.csv")
    multiref = _multiref(path)
    samples = []
    for line, row in read_csv(file):
        refs = [row["prevgt"].strip()]
        for r in row["all_references"].split("\t"):
            if r.strip() and r.strip() not in refs:
                refs.append(r.strip())
        if multiref is not None:
            d, t = (int(v) for v in row["context_id"].split("_"))
            full = [r.strip() for r in multiref[d][t]]
            if not full or full[0] != refs[0]:
                raise InputError(f"context {row['context_id']}: multireftest.json's original "
                                 "reference differs from prevgt", path=str(file), line=line)
            refs = full
        context = [t.strip() for t in row["context"].split("||||") if t.strip()]
        samples.append(Sample(
            id=f"{row['model']}-{row['context_id']}", response=row["response"].strip(),
            context=context, references=refs, system=row["model"],
            ratings={"overall": [rating(row["human_average_rating"], path=file, line=line,
                                        field="human_average_rating")]},
            meta={DIALOGUE_ID: row["context_id"]}))
    info = DatasetInfo(
        name="gupta", level="turn", scales={"overall": (1, 5)},
        qualities={"overall": "overall quality / appropriateness, 1-5, mean of the MTurk "
                              "workers (per-worker scores not published)"},
        description="DailyDialog multi-reference test set, 500 rated responses, 5 references each")
    return Dataset(info, samples)
