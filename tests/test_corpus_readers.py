"""Public corpora read by name (`NAME:FILE`, dialeval.data.corpus.named): each reader turns its
layout into dialogues with speakers and grounding, and refuses the files that may not be trained
on before reading them. Small files written here pin each layout's rules; the staged copies in
../shared/data are read whole where present and counted against their PROVENANCE.md."""

from __future__ import annotations

import gzip
import json
import zipfile

import pytest

from conftest import DATA, need
from dialeval.data.corpus import (corpus_readers, read_corpus_spec, read_dialogues, spec_name, specs_name,
                                  split_spec)
from dialeval.data.datasets import load_dataset
from dialeval.errors import DialevalError, InputError


def test_every_corpus_is_registered_by_name_with_a_source_and_training_files():
    readers = corpus_readers()
    assert set(readers) == {"topical-chat", "byu-chitchat", "cmu-dog", "dailydialog-pp", "convai2-wild",
                            "synthetic-persona-chat"}
    for name, reader in readers.items():
        assert reader.name == name and reader.source.licence and reader.source.origin and reader.train_files


def test_a_spec_names_a_reader_only_when_the_prefix_is_a_corpus(tmp_path):
    assert split_spec("byu-chitchat:/x/dataset.train-safe.json.gz") == ("byu-chitchat", "/x/dataset.train-safe.json.gz")
    assert split_spec("C:/data/dialogues_train.txt") == ("", "C:/data/dialogues_train.txt")
    assert spec_name("cmu-dog:/a/b/Conversations-train.train-safe.zip") == "cmu-dog:Conversations-train.train-safe.zip"
    assert specs_name(["/a/dialogues_train.txt", "byu-chitchat:/b/dataset.train-safe.json.gz"]) == \
        "dialogues_train.txt+byu-chitchat:dataset.train-safe.json.gz"


def test_byu_joins_a_speakers_messages_into_one_turn(tmp_path):
    data = {"c1": {"messages": [[{"text": "hi", "sender": "a"}, {"text": " how are you? ", "sender": "a"}],
                                [{"text": "good", "sender": "b"}], [{"text": "  ", "sender": "a"}]],
                   "prompt": "What is fun?", "ratings": {"witty": 3}},
            "c2": {"messages": []}}
    path = tmp_path / "dataset.train-safe.json.gz"
    path.write_bytes(gzip.compress(json.dumps(data).encode()))
    dialogues = read_dialogues(f"byu-chitchat:{path}")
    assert len(dialogues) == 1        # c2 has no turn
    d = dialogues[0]
    assert d.turns == ("hi how are you?", "good") and d.speakers == ("a", "b") and d.id == "c1"
    assert d.meta["prompt"] == "What is fun?"


def test_byu_refuses_the_full_file_in_one_line_before_reading_it(tmp_path):
    path = tmp_path / "dataset.json.gz"       # never written: the name alone is refused
    with pytest.raises(DialevalError) as info:
        read_corpus_spec(f"byu-chitchat:{path}")
    message = str(info.value)
    assert "\n" not in message and "not a training file of byu-chitchat" in message
    assert "dataset.train-safe.json.gz" in message


def test_a_damaged_byu_file_names_the_field(tmp_path):
    path = tmp_path / "dataset.train-safe.json"
    path.write_text(json.dumps({"c1": {"messages": [[{"text": 3}]]}}))
    with pytest.raises(InputError, match=r"field 'c1.messages\[0\]\[0\].text': expected a string"):
        read_dialogues(f"byu-chitchat:{path}")


def _cmu_zip(path, split="train", convs=None):
    with zipfile.ZipFile(path, "w") as z:
        for i, conv in enumerate(convs or []):
            z.writestr(f"Conversations/{split}/{i:03d}.json", json.dumps(conv))


def test_cmu_dog_reads_speakers_and_the_film_article_as_grounding(tmp_path):
    conv = {"history": [{"text": "Seen it?", "uid": "user2", "docIdx": 0}, {"text": " yes ", "uid": "user1"},
                        {"text": "", "uid": "user2"}], "wikiDocumentIdx": 7, "rating": 2}
    _cmu_zip(tmp_path / "Conversations-train.train-safe.zip", convs=[conv])
    dialogues = read_dialogues(f"cmu-dog:{tmp_path / 'Conversations-train.train-safe.zip'}")
    assert [d.turns for d in dialogues] == [("Seen it?", "yes")] and dialogues[0].speakers == ("user2", "user1")
    assert dialogues[0].grounding == ()      # no WikiData.zip beside it: no grounding, never a wrong one
    with zipfile.ZipFile(tmp_path / "WikiData.zip", "w") as z:
        z.writestr("WikiData/Film.json", json.dumps({"0": {"movieName": "Film", "year": 2001}, "1": "Act one.",
                                                       "2": "Act two.", "3": "", "wikiDocumentIdx": 7}))
    d = read_dialogues(f"cmu-dog:{tmp_path / 'Conversations-train.train-safe.zip'}")[0]
    assert d.grounding == ("movieName: Film | year: 2001", "Act one.", "Act two.")


@pytest.mark.parametrize("name", ["Conversations-test.train-safe.zip", "Conversations-valid.train-safe.zip",
                                  "Conversations-train.zip"])
def test_cmu_dog_trains_on_its_train_split_only(tmp_path, name):
    _cmu_zip(tmp_path / name, convs=[{"history": [{"text": "hi", "uid": "user1"}]}])
    with pytest.raises(DialevalError, match="Conversations-train.train-safe.zip"):
        read_dialogues(f"cmu-dog:{tmp_path / name}")


def test_dailydialog_pp_keeps_every_reply_in_meta_and_refuses_its_test_file(tmp_path):
    item = {"id": 4, "context": ["Hi .", "Hello ."], "positive_responses": ["Fine.", "Good.", "", "Ok.", "Yes."],
            "adversarial_negative_responses": ["Hello printer."], "random_negative_responses": ["Rain."]}
    (tmp_path / "dev.train-safe.json").write_text(json.dumps(item) + "\n\n")
    d, = read_dialogues(f"dailydialog-pp:{tmp_path / 'dev.train-safe.json'}")
    assert d.turns == ("Hi .", "Hello .", "Fine.") and d.id == "4"
    assert d.meta == {"positives": ["Fine.", "Good.", "Ok.", "Yes."], "adversarial": ["Hello printer."],
                      "random": ["Rain."]}
    (tmp_path / "test.train-safe.json").write_text(json.dumps(item))
    with pytest.raises(DialevalError, match="not a training file of dailydialog-pp"):
        read_dialogues(f"dailydialog-pp:{tmp_path / 'test.train-safe.json'}")


def test_convai2_speakers_personas_and_score(tmp_path):
    raw = [{"dialog": [{"sender": "participant1", "sender_class": "Human", "text": "hi"},
                       {"sender": "participant2", "sender_class": "Bot", "text": "hello , i like dogs"}],
            "bot_profile": ["i like dogs."], "user_profile": ["i run."], "eval_score": 4},
           {"dialog": [{"sender": "participant2", "text": "yo"}], "eval_score": None}]
    (tmp_path / "data_volunteers.train-safe.json").write_text(json.dumps(raw))
    first, second = read_dialogues(f"convai2-wild:{tmp_path / 'data_volunteers.train-safe.json'}")
    assert first.speakers == ("Human", "Bot") and first.grounding == ("i like dogs.", "i run.")
    assert first.meta["eval_score"] == 4 and second.speakers == ("participant2",)


def test_synthetic_persona_chat_reads_tagged_lines_and_continuations(tmp_path):
    path = tmp_path / "Synthetic-Persona-Chat_valid.train-safe.csv"
    path.write_text('user 1 personas,user 2 personas,Best Generated Conversation\r\n'
                    '"I bake.\nI knit.","I run.","User 1: Hi!\nUser 2: Hello!\nHow are you?\n*User 1:* Fine *"\r\n',
                    encoding="utf-8")
    d, = read_dialogues(f"synthetic-persona-chat:{path}")
    assert d.turns == ("Hi!", "Hello! How are you?", "Fine") and d.speakers == ("User 1", "User 2", "User 1")
    assert d.grounding == ("I bake.", "I knit.", "I run.")
    bad = tmp_path / "Synthetic-Persona-Chat_test.train-safe.csv"
    bad.write_text("a,b\r\n1,2\r\n")
    with pytest.raises(InputError, match="no column 'user 1 personas'"):
        read_dialogues(f"synthetic-persona-chat:{bad}")


# -- the staged copies, where present ---------------------------------------------------------------
@pytest.mark.parametrize("spec, dialogues", [
    ("byu-chitchat:byu-chitchat/dataset.train-safe.json.gz", 7104),        # PROVENANCE.md: 7 104 conversations
    ("cmu-dog:cmu-dog/Conversations-train.train-safe.zip", 3363),          # train 3 363 files
    ("dailydialog-pp:dailydialog-plusplus/data_positives.train-safe.json", 5445),
    ("dailydialog-pp:dailydialog-plusplus/dev.train-safe.json", 775),
    ("convai2-wild:convai2-wild-eval/data_volunteers.train-safe.json", 996),
])
def test_staged_corpora_read_whole(spec, dialogues):
    name, rel = spec.split(":")
    path = need(DATA / rel)
    assert len(read_dialogues(f"{name}:{path}")) == dialogues


def test_staged_synthetic_persona_chat_reads_every_tagged_conversation():
    path = need(DATA / "synthetic-persona-chat" / "Synthetic-Persona-Chat_valid.train-safe.csv")
    found = read_dialogues(f"synthetic-persona-chat:{path}")
    assert len(found) == 594 and all(len(set(d.speakers)) == 2 for d in found)   # PROVENANCE.md: 594 conversations


def test_rated_convai2_and_dailydialog_pp_loaders():
    convai2 = load_dataset("convai2-wild", need(DATA / "convai2-wild-eval"))
    assert convai2.info.level == "dialogue"
    assert all(1 <= s.human("overall") <= 5 and s.context for s in convai2.samples)
    ddpp = load_dataset("dailydialog-pp", need(DATA / "dailydialog-plusplus"))
    by_system = {}
    for s in ddpp.samples:
        by_system.setdefault(s.system, []).append(s)
        assert len(s.references) == 4 and s.response not in s.references or s.system != "positive"
    assert set(by_system) == {"positive", "adversarial", "random"}
    assert len(by_system["positive"]) == len(by_system["adversarial"]) == 5 * 1142   # test.json: 1 142 contexts
    assert {s.human("overall") for s in by_system["positive"]} == {1.0}
