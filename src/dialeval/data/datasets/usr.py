"""USR (Mehri & Eskenazi 2020): TopicalChat (60 contexts x 6 responses) and PersonaChat
(60 x 5), 3 annotators x 6 qualities per response.

Quirks: the context is one string with turns joined by newlines (split here); the
`Original Ground Truth` response doubles as the single reference for every response to the
same context (the USR paper's setup), so the ground truth is scored against itself. The
loader keeps it (human agreement uses all responses) and marks it in
`Dataset.reference_systems`; `dialeval evaluate` leaves it out by default, as the paper does
(`--keep-reference-systems` keeps it; `load_dataset(..., exclude_systems=[...])` in Python).
"""

from __future__ import annotations

import os

from ..sample import DatasetInfo, Sample
from .base import DIALOGUE_ID, Dataset, need_file, rating, read_json, snake, Source

SOURCE = Source(
    folder="usr",
    title="USR annotations of PersonaChat and TopicalChat responses (Mehri & Eskenazi, ACL 2020)",
    origin=("http://shikib.com/pc_usr_data.json and http://shikib.com/tc_usr_data.json (linked from github.com/"
            "Shikib/usr); copies: github.com/daqh/llm-eval (pc_usr_data.json), github.com/ramya2811/GRADE-A-PLUS "
            "commit f28e372 (data/usr_data/tc_usr_data.json)"),
    licence=("no licence stated: research use, cite Mehri & Eskenazi 2020; dialogues: PersonaChat (MIT), "
             "Topical-Chat (CDLA-Sharing-1.0)"),
    layout=("pc_usr_data.json", "tc_usr_data.json"))

QUALITIES = {
    "understandable": ("Understandable: is the response understandable in the context? 0-1", (0, 1)),
    "natural": ("Natural: is it something a person would naturally say? 1-3", (1, 3)),
    "maintains_context": ("Maintains Context: does it serve as a valid continuation? 1-3", (1, 3)),
    "engaging": ("Engaging: is it dull or interesting? 1-3", (1, 3)),
    "uses_knowledge": ("Uses Knowledge: does it use the fact / persona? 0-1", (0, 1)),
    "overall": ("Overall quality, 1-5", (1, 5)),
}
FILES = {"tc": "tc_usr_data.json", "pc": "pc_usr_data.json"}
GROUND_TRUTH = "Original Ground Truth"


def load(path: str | os.PathLike, corpus: str = "tc") -> Dataset:
    file = need_file(path, FILES[corpus])
    data = read_json(file)
    samples = []
    for c, item in enumerate(data):
        context = [t for t in item["context"].split("\n") if t.strip()]
        truth = [r["response"] for r in item["responses"] if r.get("model") == GROUND_TRUTH]
        for k, resp in enumerate(item["responses"]):
            ratings = {}
            for key, value in resp.items():
                if isinstance(value, list):
                    ratings[snake(key)] = [rating(v, path=file, field=f"[{c}].responses[{k}].{key}")
                                           for v in value]
            samples.append(Sample(
                id=f"{corpus}-{c}-{k}", response=resp["response"].strip(), context=context,
                references=[t.strip() for t in truth[:1]], system=resp.get("model"), ratings=ratings,
                meta={DIALOGUE_ID: f"{corpus}-{c}", "fact": item.get("fact", ""),
                      "annotators": item.get("annotators")}))
    name = {"tc": "usr-tc", "pc": "usr-pc"}[corpus]
    what = {"tc": "TopicalChat (knowledge snippet as fact)", "pc": "PersonaChat (persona as fact)"}[corpus]
    info = DatasetInfo(name=name, qualities={q: d for q, (d, _) in QUALITIES.items()},
                       scales={q: s for q, (_, s) in QUALITIES.items()}, level="turn",
                       description=f"USR {what}; 3 annotators; reference = the original ground truth")
    return Dataset(info, samples, reference_systems=(GROUND_TRUTH,))


def load_unieval(path: str | os.PathLike) -> tuple[list[dict], list[dict]]:
    """UniEval's processed TopicalChat-USR (`unieval_topicalchat/topical_chat_result.json`):
    per response the averaged human `scores` and UniEval's `predict_scores`, six qualities."""
    data = read_json(need_file(path, "unieval_topicalchat", "topical_chat_result.json"))
    return [d["scores"] for d in data], [d["predict_scores"] for d in data]
