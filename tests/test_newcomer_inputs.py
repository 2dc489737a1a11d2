"""What a new user's input gets wrong without meaning to (issue 55): a system column under another
name, a UTF-16 file, a `Response` header. Each is one clear line, never a silent pooling."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from dialeval.cli import main
from dialeval.data.readers import from_records, lookalike, read_samples
from dialeval.errors import DialevalWarning, InputError

TWO_BOTS = ("{head}\n"
            "1,botA,hello there how are you,hi how are you\n"
            "2,botA,i like cats,i like dogs\n"
            "1,botB,good morning,hello how are you\n"
            "2,botB,cats are nice,dogs are nice\n")


def run_cli(args, capsys):
    code = main([str(a) for a in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def caught(call):
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        result = call()
    return result, [str(w.message) for w in seen if issubclass(w.category, DialevalWarning)]


@pytest.mark.parametrize("name", ["model", "System", "bot", "system_name", "SYSTEM", "model_name",
                                  "systems", "bot_id", "Model"])
def test_system_lookalikes(name):
    assert lookalike(name) == "system"
    assert lookalike(name, table=True) == "system"


@pytest.mark.parametrize("name", ["system", "system_response", "model_score", "topic", "speaker",
                                  "dialogue_id", "name"])
def test_not_system_lookalikes(name):
    """`system` is read; a name with other words in it is not taken for the system
    (`model_score` is a rating look-alike, checked first)."""
    assert lookalike(name) != "system"


def test_duplicate_id_names_the_misnamed_system_column(tmp_path, capsys):
    path = tmp_path / "bots.csv"
    path.write_text(TWO_BOTS.format(head="id,model,response,reference"), encoding="utf-8")
    code, out, err = run_cli(["score", path, "--metrics", "bleu2"], capsys)
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert lines[0].startswith(f"dialeval: warning: {path}: column 'model' looks like the system")
    assert lines[-1].startswith(f"dialeval: error: {path}:4: field 'id': duplicate id '1'")
    assert "field 'model' looks like it; name it `system`" in lines[-1]
    assert "leave ids out" not in lines[-1]   # that advice would pool the two bots


def test_pooled_systems_without_ids_warn(tmp_path, capsys):
    path = tmp_path / "bots.csv"
    rows = "\n".join(line.split(",", 1)[1] for line in TWO_BOTS.format(head="id,model,response,reference")
                     .splitlines())
    path.write_text(rows + "\n", encoding="utf-8")
    code, out, err = run_cli(["score", path, "--metrics", "bleu2"], capsys)
    assert code == 0
    assert "column 'model' looks like the system" in err
    assert "pool every system's rows" in err
    assert out.splitlines()[0].split()[:2] == ["system", "n"]
    assert out.splitlines()[1].split()[:2] == ["all", "4"]   # still pooled: a warning, not a guess


def test_renamed_column_scores_each_system(tmp_path, capsys):
    path = tmp_path / "bots.csv"
    path.write_text(TWO_BOTS.format(head="id,system,response,reference"), encoding="utf-8")
    code, out, err = run_cli(["score", path, "--metrics", "bleu2"], capsys)
    assert code == 0 and "warning" not in err
    assert [line.split()[0] for line in out.splitlines()[1:3]] == ["botA", "botB"]


def test_model_beside_system_is_data(tmp_path):
    """A `model` column beside a real `system` (each system's backbone) is no misspelling."""
    path = tmp_path / "both.jsonl"
    path.write_text("\n".join(json.dumps({"system": s, "model": "gpt", "response": "a b", "id": str(i)})
                              for i, s in enumerate("AB")) + "\n", encoding="utf-8")
    samples, said = caught(lambda: read_samples(path))
    assert [s.system for s in samples] == ["A", "B"] and said == []


def test_jsonl_and_dataframe_system_lookalikes_warn(tmp_path):
    path = tmp_path / "bots.jsonl"
    path.write_text(json.dumps({"bot": "A", "response": "a b"}) + "\n", encoding="utf-8")
    _, said = caught(lambda: read_samples(path))
    assert len(said) == 1 and "key 'bot' looks like the system" in said[0]
    pd = pytest.importorskip("pandas")
    _, said = caught(lambda: from_records(pd.DataFrame({"System": ["A"], "response": ["a b"]})))
    assert len(said) == 1 and "column 'System' looks like the system" in said[0]


@pytest.mark.parametrize("encoding,why", [("utf-16", "byte-order mark"), ("utf-16-le", "are NUL"),
                                          ("utf-16-be", "are NUL")])
def test_utf16_is_named(tmp_path, encoding, why):
    path = tmp_path / "u16.csv"
    path.write_bytes("response,reference\nhello there,hi there\n".encode(encoding))
    with pytest.raises(InputError) as info:
        read_samples(path)
    message = str(info.value)
    assert message.startswith(f"{path}:1: looks like UTF-16") and why in message
    assert "save the file as UTF-8" in message


def test_utf8_with_a_stray_nul_is_not_utf16(tmp_path):
    path = tmp_path / "nul.csv"
    path.write_bytes(b"response,reference\nhello\x00 there,hi there\nanother reply,and its reference\n")
    assert [s.response for s in read_samples(path)] == ["hello\x00 there", "another reply"]


@pytest.mark.parametrize("header", ["Response", "RESPONSE", " response_ ", "Re sponse"])
def test_response_header_in_another_case_is_pointed_at(tmp_path, header):
    path = tmp_path / "r.csv"
    path.write_text(f'"{header}",reference\nhello,hi\n', encoding="utf-8")
    with pytest.raises(InputError) as info:
        read_samples(path)
    assert f"found {header.strip()!r}: field names are exact and lower case, rename it 'response'" \
        in str(info.value)


def test_response_key_in_another_case_is_pointed_at(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps({"Response": "hello"}) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"r\.jsonl:1: field 'response': missing .*found 'Response'"):
        read_samples(path)


def test_no_response_at_all_says_only_that(tmp_path):
    path = tmp_path / "r.csv"
    path.write_text("text,reference\nhello,hi\n", encoding="utf-8")
    with pytest.raises(InputError) as info:
        read_samples(path)
    assert str(info.value).endswith("no 'response' column in the header")
