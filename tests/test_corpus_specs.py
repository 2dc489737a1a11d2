"""Corpus specs (`dialeval.data.corpus.read_corpus_spec`): `topical-chat:FILE.json` reads
Topical-Chat's conversations JSON; bad files stop with one located error."""

from __future__ import annotations

import json

import pytest

from dialeval.data.corpus import read_corpus_spec
from dialeval.errors import InputError


def _conv(*messages):
    return {"content": [{"message": m, "agent": "agent_1"} for m in messages]}


def test_topical_chat_messages_in_order_blank_ones_dropped(tmp_path):
    path = tmp_path / "valid_freq.json"
    path.write_text(json.dumps({"t1": _conv(" hi there ", "  ", "hello"), "t2": _conv("", " "), "t3": _conv("bye")}))
    # t2 has only blank messages: no dialogue from it
    assert read_corpus_spec(f"topical-chat:{path}") == [["hi there", "hello"], ["bye"]]


def test_a_plain_path_is_read_by_read_corpus(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text('{"turns": ["a", "b"]}\n')
    assert read_corpus_spec(str(path)) == [["a", "b"]]


@pytest.mark.parametrize("content, expected", [
    (None, "no such file"),
    (b"", "malformed JSON"),
    (b'{"t1": ', "malformed JSON"),
    (b"\xff\xfe{}", "not valid UTF-8 at byte 0"),
    (b"[1, 2]", "expected an object of conversations"),
    (b'{"t1": {"content": "hi"}}', "field 't1.content': expected a list of messages"),
    (b'{"t1": {"content": [{"text": "hi"}]}}', "field 't1.content[0].message': expected a string"),
    (b'{"t1": {"content": [{"message": 3}]}}', "field 't1.content[0].message': expected a string"),
    (b"{}", "empty corpus: no dialogues"),
])
def test_bad_topical_chat_files_name_file_and_field(tmp_path, content, expected):
    path = tmp_path / "valid_rare.json"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(InputError) as info:
        read_corpus_spec(f"topical-chat:{path}")
    message = str(info.value)
    assert message.startswith(str(path)) and expected in message and "\n" not in message
