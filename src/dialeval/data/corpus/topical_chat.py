"""Topical-Chat (Gopalakrishnan et al., 2019): `{id: {"content": [{"message", "agent"}, ...]}}`."""

from __future__ import annotations

import os
from typing import Iterator

from ...errors import InputError
from ..datasets.base import Source
from .loading import load_json, read_bytes
from .named import CorpusReader, Dialogue, clean_turns


class TopicalChat(CorpusReader):
    name = "topical-chat"
    source = Source(
        folder="topical-chat",
        title="Topical-Chat (Gopalakrishnan et al., Interspeech 2019)",
        origin="github.com/alexa/Topical-Chat (commit 7c93922), folder conversations/",
        licence="CDLA-Sharing-1.0 (Amazon)",
        layout=("conversations/valid_freq.json", "conversations/valid_rare.json"),
        note=("the default `mme_cross` trains on the two valid files beside DailyDialog train (also a corpus for "
              "`train mme` and `train dialogue-encoder`); USR-TC's contexts are from test_freq.json, never read"))
    train_files = ("train.json", "valid_*.json")

    def refusal(self, path: str) -> str | None:
        # any file name but a test file: the valid files are the closest this public corpus has to
        # a training split here, and the only rated set drawn from it (USR-TC) uses test_freq.json
        if "test" in os.path.basename(os.path.normpath(path)).lower():
            return (f"{path}: Topical-Chat's test files are refused for training (USR-TC rates replies to "
                    "test_freq.json's conversations); train on train.json, valid_freq.json or valid_rare.json")
        return None

    def dialogues(self, path: str) -> Iterator[Dialogue]:
        data = load_json(read_bytes(path), path)
        if not isinstance(data, dict):
            raise InputError("not a Topical-Chat conversations file: expected an object of conversations", path=path)
        for key, conv in data.items():
            content = conv.get("content") if isinstance(conv, dict) else None
            if not isinstance(content, list):
                raise InputError("expected a list of messages", path=path, field=f"{key}.content")
            texts, speakers = [], []
            for i, m in enumerate(content):
                message = m.get("message") if isinstance(m, dict) else None
                if not isinstance(message, str):
                    raise InputError("expected a string", path=path, field=f"{key}.content[{i}].message")
                texts.append(message)
                speakers.append(str(m.get("agent", "")))
            turns, who = clean_turns(texts, speakers)
            yield Dialogue(turns, who, id=str(key))

