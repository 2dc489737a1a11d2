"""DailyDialog++ (Sai et al., TACL 2020): DailyDialog contexts with five human-written replies
each, and in its dev and test files five human-written adversarial negatives (close to the
context in words, wrong as replies) and five random ones.

Layout: JSON Lines, {"context": [...], "positive_responses": [5], "adversarial_negative_responses":
[5], "random_negative_responses": [5]} (data_positives.json has the positives only). One item is
one `Dialogue`: the context and its first positive reply as turns (what a trainer that reads
turns sees), every reply in `meta` ("positives", "adversarial", "random") for a trainer that
uses them as extra positives or hard negatives."""

from __future__ import annotations

from typing import Iterator

from ..datasets.base import Source
from .loading import json_lines, need
from .named import CorpusReader, Dialogue, clean_turns

KINDS = (("positives", "positive_responses"), ("adversarial", "adversarial_negative_responses"),
         ("random", "random_negative_responses"))


class DailyDialogPlusPlus(CorpusReader):
    name = "dailydialog-pp"
    source = Source(
        folder="dailydialog-plusplus",
        title="DailyDialog++ (Sai et al., TACL 2020)",
        origin="github.com/iitmnlp/DailyDialog-plusplus (commit 4b02f9f), folder dataset/",
        licence="DailyDialog's CC BY-NC-SA 4.0 (non-commercial): the contexts are DailyDialog's",
        layout=("data_positives.train-safe.json", "dev.train-safe.json", "test.json"),
        note=("train on data_positives.train-safe.json and dev.train-safe.json (the originals share contexts with "
              "DailyDialog's test and validation splits, which rated sets use); test.json is the `dailydialog-pp` "
              "rated set (positive against adversarial and random replies), so no test file is trained on"))
    train_files = ("data_positives.train-safe.json", "dev.train-safe.json")

    def dialogues(self, path: str) -> Iterator[Dialogue]:
        for line, item in json_lines(path):
            need(item, dict, path, "item", line)
            context = [need(t, str, path, "context", line) for t in need(item.get("context"), list, path, "context", line)]
            replies = {}
            for key, field in KINDS:
                values = item.get(field, [])
                replies[key] = [need(t, str, path, field, line).strip() for t in need(values, list, path, field, line)]
                replies[key] = [t for t in replies[key] if t]
            turns, _ = clean_turns(context + replies["positives"][:1])
            yield Dialogue(turns, id=str(item.get("id", item.get("dialog_id", line))),
                           meta={k: v for k, v in replies.items() if v})
