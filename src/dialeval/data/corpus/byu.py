"""BYU Chit-Chat Challenge (BYU PCC lab, 2018): human-human open-domain chats.

Layout: one JSON object, conversation id -> {"messages": [speaker turn, ...], "prompt", "ratings"},
each speaker turn a list of messages {"text", "sender", "timestamp"}. A speaker often sends a
turn as several short messages ("hi", "how are you?"): they are one turn here, joined by a
space, so that a context/response pair is what one person said back to the other."""

from __future__ import annotations

from typing import Iterator

from ...errors import InputError
from ..datasets.base import Source
from .loading import load_json, need, read_bytes
from .named import CorpusReader, Dialogue, clean_turns


class ByuChitChat(CorpusReader):
    name = "byu-chitchat"
    source = Source(
        folder="byu-chitchat",
        title="BYU Chit-Chat Challenge dataset (BYU PCC lab, 2018)",
        origin=("PyPI chitchat-dataset==0.9.0 (chitchat_dataset/dataset.json; home page "
                "github.com/BYU-PCCL/chitchat-dataset), gzipped"),
        licence="MIT (the package's licence; no separate data licence stated)",
        layout=("dataset.train-safe.json.gz",),
        note=("7,104 human-human chats; the train-safe copy drops the 64 that share an 8-word utterance with a "
              "rated set; no official split"))
    train_files = ("dataset.train-safe.json.gz", "dataset.train-safe.json")

    def dialogues(self, path: str) -> Iterator[Dialogue]:
        data = load_json(read_bytes(path), path)
        if not isinstance(data, dict):
            raise InputError("not a BYU Chit-Chat dataset.json: expected an object of conversations", path=path)
        for key, conv in data.items():
            turns = need(need(conv, dict, path, key).get("messages"), list, path, f"{key}.messages")
            texts, speakers = [], []
            for i, turn in enumerate(turns):
                messages = need(turn, list, path, f"{key}.messages[{i}]")
                parts = []
                for j, m in enumerate(messages):
                    where = f"{key}.messages[{i}][{j}]"
                    parts.append(need(need(m, dict, path, where).get("text"), str, path, f"{where}.text").strip())
                texts.append(" ".join(p for p in parts if p))
                speakers.append(str(messages[0].get("sender", "")) if messages else "")
            turns_, who = clean_turns(texts, speakers)
            prompt = conv.get("prompt")
            yield Dialogue(turns_, who, id=str(key),
                           meta={k: v for k, v in (("prompt", prompt), ("ratings", conv.get("ratings"))) if v})
