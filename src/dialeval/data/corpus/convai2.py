"""ConvAI2 wild evaluation and DeepHack.Chat (2018): human-bot dialogues on PersonaChat personas,
most with the human's 1-5 score of the whole dialogue.

Layout: a JSON list of dialogues, {"dialog": [{"sender", "sender_class", "text", ...}],
"eval_score", "bot_profile", "user_profile", ...} (the 07-0x exports lack sender_class and, in two
files, the profiles). Speakers are "Human"/"Bot" where the file says so, else the participant;
the grounding is the bot's persona then the user's."""

from __future__ import annotations

from typing import Iterator

from ...errors import InputError
from ..datasets.base import Source
from .loading import load_json, need, read_bytes
from .named import CorpusReader, Dialogue, clean_turns


def persona(value, path: str, field: str) -> tuple[str, ...]:
    if value in (None, ""):
        return ()
    return tuple(s.strip() for s in need(value, list, path, field) if isinstance(s, str) and s.strip())


def convai2_dialogues(path: str) -> Iterator[tuple[int, dict, Dialogue]]:
    """(index, raw dialogue, Dialogue) of a ConvAI2 wild-evaluation file: the corpus reader's and
    the rated loader's one reading of the layout."""
    data = load_json(read_bytes(path), path)
    if not isinstance(data, list):
        raise InputError("not a ConvAI2 dialogue file: expected a list of dialogues", path=path)
    for i, raw in enumerate(data):
        need(raw, dict, path, f"[{i}]")
        texts, speakers = [], []
        for j, turn in enumerate(need(raw.get("dialog"), list, path, f"[{i}].dialog")):
            need(turn, dict, path, f"[{i}].dialog[{j}]")
            texts.append(need(turn.get("text"), str, path, f"[{i}].dialog[{j}].text"))
            speakers.append(str(turn.get("sender_class") or turn.get("sender") or ""))
        turns, who = clean_turns(texts, speakers)
        grounding = persona(raw.get("bot_profile"), path, f"[{i}].bot_profile") + \
            persona(raw.get("user_profile"), path, f"[{i}].user_profile")
        yield i, raw, Dialogue(turns, who, grounding, id=str(raw.get("dialog_id", i)),
                               meta={"eval_score": raw.get("eval_score")})


class ConvAI2WildEval(CorpusReader):
    name = "convai2-wild"
    grounding = "persona"
    source = Source(
        folder="convai2-wild-eval",
        title="ConvAI2 wild evaluation and DeepHack.Chat dialogues (NeurIPS 2018 ConvAI2)",
        origin=("github.com/DeepPavlov/convai (commit 54d921f), folder data/: data_volunteers.json, "
                "data_intermediate.json, export_2018-07-0{4,5,6,7}_train.json"),
        licence="none stated by the repository",
        layout=("data_volunteers.train-safe.json", "data_intermediate.train-safe.json",
                "export_2018-07-04_train.train-safe.json", "export_2018-07-05_train.train-safe.json",
                "export_2018-07-06_train.train-safe.json", "export_2018-07-07_train.train-safe.json"),
        note=("human-bot dialogues (2018 PersonaChat bots, many poor turns by design); the `convai2-wild` rated set "
              "reads the same train-safe files at dialogue level (the human's 1-5 score), so hold it out of "
              "training wherever it is evaluated"))
    train_files = ("*.train-safe.json",)

    def dialogues(self, path: str) -> Iterator[Dialogue]:
        for _, _, dialogue in convai2_dialogues(path):
            yield dialogue
