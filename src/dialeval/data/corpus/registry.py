"""The corpora read by name, by name, and how a `--corpus` spec names one (`NAME:FILE`)."""

from __future__ import annotations

from .byu import ByuChitChat
from .cmu_dog import CmuDog
from .convai2 import ConvAI2WildEval
from .dailydialog_pp import DailyDialogPlusPlus
from .named import CorpusReader
from .persona_chat import SyntheticPersonaChat
from .topical_chat import TopicalChat

_READERS: dict[str, CorpusReader] = {r.name: r for r in (
    TopicalChat(), ByuChitChat(), CmuDog(), DailyDialogPlusPlus(), ConvAI2WildEval(), SyntheticPersonaChat())}


def corpus_readers() -> dict[str, CorpusReader]:
    """Every corpus readable by name, by name."""
    return _READERS


def split_spec(spec: str) -> tuple[str, str]:
    """(corpus name or "", file) of a corpus spec: `NAME:FILE` for a corpus read by name, else a
    plain file in one of dialeval's own formats ("" and the spec)."""
    name, sep, rest = spec.partition(":")
    if sep and name in corpus_readers():
        return name, rest
    return "", spec


def reader_of(spec: str) -> tuple[CorpusReader | None, str]:
    name, path = split_spec(spec)
    return (corpus_readers()[name] if name else None), path
