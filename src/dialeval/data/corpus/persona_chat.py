"""Synthetic-Persona-Chat (Jandaghi et al., 2023): LLM-written conversations between the persona
pairs of Persona-Chat's validation and test splits.

Layout: CSV with columns `user 1 personas`, `user 2 personas`, `Best Generated Conversation`;
personas are newline-separated sentences, the conversation newline-separated `User 1: ...` /
`User 2: ...` lines (a line without the tag continues the turn before it; the Markdown
emphasis a few conversations put around lines or tags is dropped)."""

from __future__ import annotations

import re
from typing import Iterator

from ...errors import InputError
from ..datasets.base import Source
from .loading import csv_rows
from .named import CorpusReader, Dialogue, clean_turns

COLUMNS = ("user 1 personas", "user 2 personas", "Best Generated Conversation")
_TAG = re.compile(r"^[\s*]*(User [12])[\s*]*:[\s*]*(.*?)[\s*]*$")


class SyntheticPersonaChat(CorpusReader):
    name = "synthetic-persona-chat"
    grounding = "persona"
    source = Source(
        folder="synthetic-persona-chat",
        title="Synthetic-Persona-Chat (Jandaghi et al., 2023)",
        origin=("github.com/google-research-datasets/Synthetic-Persona-Chat (commit 1f367a0), "
                "data/Synthetic-Persona-Chat_{valid,test}.csv"),
        licence="CC BY 4.0 (attribution)",
        layout=("Synthetic-Persona-Chat_valid.train-safe.csv", "Synthetic-Persona-Chat_test.train-safe.csv"),
        note=("machine-written text; its persona pairs are Persona-Chat's validation and test personas, so a model "
              "trained on it has read the personas of PersonaChat-based rated sets (usr-pc, grade-convai2): keep "
              "it out of a model judged on those"))
    train_files = ("Synthetic-Persona-Chat_*.train-safe.csv",)

    def dialogues(self, path: str) -> Iterator[Dialogue]:
        rows = csv_rows(path)
        if rows and any(c not in rows[0][1] for c in COLUMNS):
            missing = next(c for c in COLUMNS if c not in rows[0][1])
            raise InputError(f"no column {missing!r}: not a Synthetic-Persona-Chat CSV", path=path, line=1)
        for line, row in rows:
            texts: list[str] = []
            speakers: list[str] = []
            for text in row[COLUMNS[2]].splitlines():
                tagged = _TAG.match(text)
                if tagged:
                    speakers.append(tagged.group(1))
                    texts.append(tagged.group(2))
                elif texts and text.strip(" *"):
                    texts[-1] = f"{texts[-1]} {text.strip(' *')}"
            turns, who = clean_turns(texts, speakers)
            grounding = tuple(s.strip() for c in COLUMNS[:2] for s in row[c].splitlines() if s.strip())
            yield Dialogue(turns, who, grounding, id=f"line-{line}")
