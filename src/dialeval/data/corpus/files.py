"""Corpus files in dialeval's own three formats, for corpora that have no reader by name.

A corpus is a list of dialogues, each a list of utterances. Three formats, chosen by `fmt` or
guessed from the file:

- `dailydialog`: one dialogue per line, utterances ended by `__eou__` (DailyDialog's own
  `dialogues_*.txt`; a `.zip` of DailyDialog's split is read directly);
- `jsonl`: one dialogue per line, `{"turns": [...]}` (or `{"dialogue": [...]}`, or a bare list);
- `text`: one utterance per line, a blank line between dialogues.

The public corpora with layouts of their own (Topical-Chat, BYU Chit-Chat, ...) are read by name
through `dialeval.data.corpus.named`.
"""

from __future__ import annotations

import json
import os
import zipfile
from typing import Iterable

from ...errors import InputError
from ..readers import read_text_lines

CORPUS_FORMATS = ("dailydialog", "jsonl", "text")


def _lines_of(path: str) -> list[str]:
    if path.endswith(".zip"):
        try:
            archive = zipfile.ZipFile(path)
        except (OSError, zipfile.BadZipFile) as exc:
            raise InputError(f"cannot open zip archive: {exc}", path=path) from None
        members = [n for n in archive.namelist()
                   if os.path.basename(n).startswith("dialogues_") and n.endswith(".txt")
                   and "_act_" not in n and "_emotion_" not in n]
        if len(members) != 1:
            raise InputError("zip archive must hold exactly one dialogues_<split>.txt", path=path)
        data = archive.read(members[0])
        tmp_name = f"{path}!{members[0]}"
        lines = []
        for number, raw in enumerate(data.split(b"\n"), 1):
            try:
                lines.append(raw.decode("utf-8").rstrip("\r"))
            except UnicodeDecodeError as exc:
                raise InputError(f"not valid UTF-8 at column {exc.start + 1}", path=tmp_name,
                                 line=number) from None
        if lines and lines[-1] == "":
            lines.pop()
        return lines
    return read_text_lines(path)


def guess_format(path: str, lines: list[str]) -> str:
    lower = path.lower()
    if lower.endswith((".jsonl", ".json")):
        return "jsonl"
    if lower.endswith(".zip") or any("__eou__" in line for line in lines[:50]):
        return "dailydialog"
    return "text"


def read_corpus(path: str | os.PathLike, fmt: str | None = None) -> list[list[str]]:
    """Dialogues (lists of utterances) from a corpus file; empty utterances are dropped."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise InputError("no such file", path=path)
    lines = _lines_of(path)
    fmt = fmt or guess_format(path, lines)
    if fmt not in CORPUS_FORMATS:
        raise InputError(f"unknown corpus format {fmt!r}; choose from {', '.join(CORPUS_FORMATS)}", path=path)
    dialogues: list[list[str]] = []
    if fmt == "dailydialog":
        for line in lines:
            turns = [t.strip() for t in line.split("__eou__")]
            turns = [t for t in turns if t]
            if turns:
                dialogues.append(turns)
    elif fmt == "jsonl":
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(f"malformed JSON: {exc.msg}", path=path, line=number) from None
            turns = obj.get("turns", obj.get("dialogue")) if isinstance(obj, dict) else obj
            if not isinstance(turns, list) or not all(isinstance(t, str) for t in turns):
                raise InputError("expected a list of strings", path=path, line=number, field="turns")
            turns = [t.strip() for t in turns if t.strip()]
            if turns:
                dialogues.append(turns)
    else:
        current: list[str] = []
        for line in lines:
            if line.strip():
                current.append(line.strip())
            elif current:
                dialogues.append(current)
                current = []
        if current:
            dialogues.append(current)
    if not dialogues:
        raise InputError("empty corpus: no dialogues", path=path)
    return dialogues


def sentences(dialogues: Iterable[list[str]]) -> list[str]:
    """All utterances, in order (what n-gram models and LSI train on)."""
    return [turn for dialogue in dialogues for turn in dialogue]


def pairs(dialogues: Iterable[list[str]]) -> list[tuple[str, str]]:
    """(previous utterance, next utterance) pairs: query-response training data."""
    return [(d[i - 1], d[i]) for d in dialogues for i in range(1, len(d))]
