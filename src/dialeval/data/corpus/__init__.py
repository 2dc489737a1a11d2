"""Training corpora: what every `dialeval train` command's `--corpus` reads.

A corpus *spec* is either a file in one of dialeval's own formats (`files.py`: DailyDialog's
`__eou__` text or its zip, JSON Lines, plain text) or `NAME:FILE` for a public corpus read by
name (`named.py`; `dialeval datasets --sources` lists them): `topical-chat:`, `byu-chitchat:`,
`cmu-dog:`, `dailydialog-pp:`, `convai2-wild:`, `synthetic-persona-chat:`. A reader by name
refuses its corpus's files that may not be trained on before reading them.

`read_dialogues(spec)` gives `Dialogue`s (turns, speakers, grounding); `read_corpus_spec(spec)`
the turns alone, which is what most trainers read.
"""

from __future__ import annotations

import os

from .files import CORPUS_FORMATS, guess_format, pairs, read_corpus, sentences
from .named import CorpusReader, Dialogue
from .registry import corpus_readers, reader_of, split_spec

TOPICAL_CHAT = "topical-chat:"


def read_dialogues(spec: str, fmt: str | None = None) -> list[Dialogue]:
    """The spec's dialogues: a named corpus's reader, or a file in one of dialeval's own formats
    (`fmt` chooses one, else it is guessed)."""
    reader, path = reader_of(spec)
    if reader is not None:
        return reader.read(path)
    return [Dialogue(tuple(turns)) for turns in read_corpus(path, fmt)]


def read_corpus_spec(spec: str, fmt: str | None = None) -> list[list[str]]:
    """The spec's dialogues as lists of turns."""
    return [list(d.turns) for d in read_dialogues(spec, fmt)]


def read_specs(specs, fmt: str | None = None) -> list[list[str]]:
    """Several specs read as one corpus, in order."""
    return [turns for spec in ([specs] if isinstance(specs, str) else specs)
            for turns in read_corpus_spec(spec, fmt)]


def read_topical_chat(path: str) -> list[list[str]]:
    """Topical-Chat's conversations JSON (what `topical-chat:FILE` reads)."""
    return read_corpus_spec(TOPICAL_CHAT + path)


def spec_name(spec: str) -> str:
    """The spec with its file's base name (`topical-chat:valid_freq.json`), for records."""
    name, path = split_spec(spec)
    return (f"{name}:" if name else "") + os.path.basename(os.path.normpath(path))


def specs_name(specs) -> str:
    """One spec's `spec_name`, or several joined by `+` (how a model records its corpora)."""
    return "+".join(spec_name(s) for s in ([specs] if isinstance(specs, str) else specs))


def spec_abspath(spec: str) -> str:
    """The spec with its file's absolute path."""
    name, path = split_spec(spec)
    return (f"{name}:" if name else "") + os.path.abspath(path)


def check_spec(spec: str) -> None:
    """Refuse a named corpus's file that may not be trained on, before anything is read."""
    reader, path = reader_of(spec)
    if reader is not None:
        reader.check(path)


__all__ = ["CORPUS_FORMATS", "CorpusReader", "Dialogue", "TOPICAL_CHAT", "check_spec", "corpus_readers",
           "guess_format", "pairs", "read_corpus", "read_corpus_spec", "read_dialogues", "read_specs",
           "read_topical_chat", "sentences", "spec_abspath", "spec_name", "specs_name", "split_spec"]
