"""Public corpora read by name: the one interface every training command reads them through.

A trainer wants dialogues; how a corpus lays them out (BYU Chit-Chat's multi-message turns, a
zip of CMU_DoG conversation files, Synthetic-Persona-Chat's "User 1:" lines in a CSV cell) is the
reader's business. So each reader turns its corpus into `Dialogue`s: the turns, who spoke each,
and the grounding the corpus gives its speakers (persona sentences, a document's passages).

Each reader also owns the rule of which of its files may be trained on. The staged public
corpora come in `*.train-safe.*` copies, without the dialogues that share a long utterance with
a rated evaluation set; training on anything else would score a metric on text it has read.
A reader lists the files it trains on (`train_files`, shell patterns of base names) and every
other file of its corpus is refused in one line that says which ones to use instead, before a
byte of it is read.
"""

from __future__ import annotations

import fnmatch
import os
from dataclasses import dataclass, field
from typing import Any, ClassVar, Iterator, Mapping

from ...errors import DialevalError
from ..datasets.base import Source


@dataclass(frozen=True)
class Dialogue:
    """One conversation as a trainer reads it. `speakers[i]` names who said `turns[i]` ("" where
    the corpus does not say); `grounding` is what the speakers were given to talk from (persona
    sentences, document passages), empty when the corpus has none; `meta` keeps what else a
    corpus records per dialogue (a rating, a split), never read by the trainers."""

    turns: tuple[str, ...]
    speakers: tuple[str, ...] = ()
    grounding: tuple[str, ...] = ()
    id: str = ""
    meta: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)


class CorpusReader:
    """A public corpus, read by name as `NAME:FILE`.

    Subclasses set `name`, `source` (where the files come from and under what licence; shown by
    `dialeval datasets --sources`), `grounding` (what `Dialogue.grounding` holds, "" for none)
    and `train_files`, and write `dialogues(path)`."""

    name: ClassVar[str] = ""
    source: ClassVar[Source]
    grounding: ClassVar[str] = ""
    train_files: ClassVar[tuple[str, ...]] = ()
    why_refused: ClassVar[str] = ("only its train-safe training files are read: the others share dialogues with rated "
                                  "evaluation sets, or are the corpus's own test split")

    def refusal(self, path: str) -> str | None:
        """Why `path` may not be trained on (None: it may)."""
        base = os.path.basename(os.path.normpath(path))
        if any(fnmatch.fnmatchcase(base, pattern) for pattern in self.train_files):
            return None
        return (f"{path}: not a training file of {self.name}; {self.why_refused} "
                f"(train on {' or '.join(self.train_files)})")

    def check(self, path: str) -> None:
        from ...errors import InputError

        problem = self.refusal(path)
        if problem is not None:
            raise DialevalError(problem)
        if not os.path.exists(path):
            raise InputError("no such file", path=path)

    def dialogues(self, path: str) -> Iterator[Dialogue]:
        raise NotImplementedError

    def read(self, path: str) -> list[Dialogue]:
        """The file's dialogues with at least one non-blank turn, its training rule checked first."""
        from ...errors import InputError

        self.check(path)
        found = [d for d in self.dialogues(path) if d.turns]
        if not found:
            raise InputError("empty corpus: no dialogues", path=path)
        return found


def clean_turns(texts, speakers=None) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Blank turns dropped and the rest stripped, speakers kept in step with them."""
    speakers = list(speakers) if speakers is not None else [""] * len(texts)
    kept = [(t.strip(), s) for t, s in zip(texts, speakers) if isinstance(t, str) and t.strip()]
    return tuple(t for t, _ in kept), tuple(s for _, s in kept)
