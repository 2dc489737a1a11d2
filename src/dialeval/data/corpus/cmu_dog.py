"""CMU Document Grounded Conversations (Zhou, Prabhumoye & Black, EMNLP 2018): movie chats in
which one or both speakers read a Wikipedia article about the film.

Layout: one zip per split, `Conversations/<split>/<id>.json` members, each {"history": [{"text",
"uid", "docIdx"}, ...], "wikiDocumentIdx", "rating", ...}; `WikiData.zip` beside it holds the 30
articles (`WikiData/<movie>.json`, sections "0".."3"). The grounding of a dialogue is the text of
its article's sections, read when WikiData.zip lies beside the conversations (a dialogue keeps an
empty grounding otherwise, never a wrong one)."""

from __future__ import annotations

import os
from typing import Any, Iterator

from ...errors import InputError
from ..datasets.base import Source
from .loading import load_json, need, zip_members
from .named import CorpusReader, Dialogue, clean_turns


def _section_text(section: Any) -> str:
    if isinstance(section, str):
        return section.strip()
    if isinstance(section, dict):    # section 0: the film's card (name, cast, reviews ...)
        parts = []
        for key in sorted(section):
            value = section[key]
            values = value if isinstance(value, list) else [value]
            parts.append(f"{key}: " + "; ".join(str(v) for v in values))
        return " | ".join(parts)
    return ""


def read_documents(path: str) -> dict[int, tuple[str, ...]]:
    """wikiDocumentIdx -> the article's section texts, from WikiData.zip."""
    docs: dict[int, tuple[str, ...]] = {}
    for name, data in zip_members(path, ".json"):
        doc = load_json(data, f"{path}!{name}")
        if isinstance(doc, dict) and isinstance(doc.get("wikiDocumentIdx"), int):
            docs[doc["wikiDocumentIdx"]] = tuple(t for t in (_section_text(doc.get(str(k))) for k in range(4)) if t)
    return docs


class CmuDog(CorpusReader):
    name = "cmu-dog"
    grounding = "document"
    source = Source(
        folder="cmu-dog",
        title="CMU Document Grounded Conversations, CMU_DoG (Zhou, Prabhumoye & Black, EMNLP 2018)",
        origin=("github.com/festvox/datasets-CMU_DoG (commit 618a14f): Conversations/<split>/*.json and "
                "WikiData/*.json, one zip per split"),
        licence="none stated by the repository (the Wikipedia-based documents: CC BY-SA 3.0 / GFDL)",
        layout=("Conversations-train.train-safe.zip", "WikiData.zip"),
        note=("train on the train split's train-safe zip; valid and test are refused (the corpus has a real split, "
              "so its train part is what a model should read)"))
    train_files = ("Conversations-train.train-safe.zip",)

    def dialogues(self, path: str) -> Iterator[Dialogue]:
        wiki = os.path.join(os.path.dirname(os.path.abspath(path)), "WikiData.zip")
        documents = read_documents(wiki) if os.path.exists(wiki) else {}
        members = zip_members(path, ".json")
        if not members:
            raise InputError("no Conversations/<split>/*.json member: not a CMU_DoG conversations zip", path=path)
        for name, data in members:
            where = f"{path}!{name}"
            conv = need(load_json(data, where), dict, where, "conversation")
            history = need(conv.get("history"), list, where, "history")
            texts, speakers = [], []
            for i, turn in enumerate(history):
                turn = need(turn, dict, where, f"history[{i}]")
                texts.append(need(turn.get("text"), str, where, f"history[{i}].text"))
                speakers.append(str(turn.get("uid", "")))
            turns, who = clean_turns(texts, speakers)
            doc = conv.get("wikiDocumentIdx")
            yield Dialogue(turns, who, grounding=documents.get(doc, ()) if isinstance(doc, int) else (),
                           id=os.path.splitext(os.path.basename(name))[0],
                           meta={"rating": conv.get("rating"), "document": doc})


