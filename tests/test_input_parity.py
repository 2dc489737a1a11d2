"""One input, one reading: the same table as CSV, JSONL (nested and flat), a list of dicts
(flat, CSV-like keys, and nested) and a pandas DataFrame gives the same samples and the same
scores, through `dialeval.score` and through the command line; and a field that looks like a
misspelt reference, rating or context column is named in one warning instead of being dropped
silently (issue 30)."""

from __future__ import annotations

import csv
import io
import json
import math
import warnings

import numpy as np
import pytest

import dialeval
from dialeval.cli.main import main
from dialeval.data.readers import from_records, lookalike, read_samples
from dialeval.errors import DialevalWarning

# The table, written out cell by cell. It has empty cells (a response, a second reference, a
# rating, a context, an id), two references, a two-turn context and two annotators' ratings.
HEADER = ["id", "system", "context", "response", "ref1", "ref2", "rating:overall", "dialogue_id"]
ROWS = [
    ["t1", "a", "Do you cook? ||| I do a bit.", "Yes, I make a mean lasagna.",
     "Yes, I make a mean lasagna.", "Not really.", "5;4", "d1"],
    ["t2", "a", "Have you been to Paris?", "No, but I would love to see the Eiffel Tower.",
     "No, but I'd love to see the Eiffel Tower.", "Yes once.", "4", "d2"],
    ["t1", "b", "Do you cook? ||| I do a bit.", "", "Yes, I make a mean lasagna.", "Not really.",
     "", "d1"],
    ["", "b", "", "ok", "No, but I'd love to see the Eiffel Tower.", "", "1;1", "d2"],
]
# What the CSV reader's rules make of it, by hand: "|||" splits the context into stripped
# turns, an empty ref column adds no reference, ";" separates annotators, an empty rating cell
# is no score, an empty id is the sample's position (3), other columns go to meta.
EXPECTED = [
    ("t1", "a", ["Do you cook?", "I do a bit."], "Yes, I make a mean lasagna.",
     ["Yes, I make a mean lasagna.", "Not really."], {"overall": [5.0, 4.0]}, {"dialogue_id": "d1"}),
    ("t2", "a", ["Have you been to Paris?"], "No, but I would love to see the Eiffel Tower.",
     ["No, but I'd love to see the Eiffel Tower.", "Yes once."], {"overall": [4.0]}, {"dialogue_id": "d2"}),
    ("t1", "b", ["Do you cook?", "I do a bit."], "",
     ["Yes, I make a mean lasagna.", "Not really."], {"overall": []}, {"dialogue_id": "d1"}),
    ("3", "b", [], "ok", ["No, but I'd love to see the Eiffel Tower."], {"overall": [1.0, 1.0]},
     {"dialogue_id": "d2"}),
]
METRICS = ["bleu2", "rouge_l"]


def flat_dicts() -> list[dict]:
    return [dict(zip(HEADER, row)) for row in ROWS]


def nested_dicts() -> list[dict]:
    """The JSONL form: lists for context and references, a ratings object, meta."""
    out = []
    for sid, system, context, response, refs, ratings, meta in EXPECTED:
        record = {"system": system, "context": context, "response": response, "references": refs,
                  "ratings": ratings, "meta": meta}
        if sid != "3":
            record["id"] = sid
        out.append(record)
    return out


def csv_text(delimiter: str = ",") -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, delimiter=delimiter, lineterminator="\n")
    writer.writerow(HEADER)
    writer.writerows(ROWS)
    return buffer.getvalue()


def jsonl_text(records) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


def key(sample):
    return (sample.id, sample.system, sample.context, sample.response, sample.references,
            sample.ratings, sample.meta)


@pytest.fixture
def files(tmp_path):
    paths = {"csv": tmp_path / "table.csv", "tsv": tmp_path / "table.tsv",
             "jsonl": tmp_path / "nested.jsonl", "flat.jsonl": tmp_path / "flat.jsonl"}
    paths["csv"].write_text(csv_text(), encoding="utf-8")
    paths["tsv"].write_text(csv_text("\t"), encoding="utf-8")
    paths["jsonl"].write_text(jsonl_text(nested_dicts()), encoding="utf-8")
    paths["flat.jsonl"].write_text(jsonl_text(flat_dicts()), encoding="utf-8")
    return paths


def every_form(files) -> dict[str, object]:
    """name -> what `dialeval.score` is given for that form of the table."""
    pd = pytest.importorskip("pandas")
    frame = pd.read_csv(files["csv"])       # empty cells are NaN, "4" an int in an object column
    forms = {
        "csv": read_samples(files["csv"]),
        "tsv": read_samples(files["tsv"]),
        "jsonl": read_samples(files["jsonl"]),
        "flat.jsonl": read_samples(files["flat.jsonl"]),
        "flat dicts": flat_dicts(),
        "nested dicts": nested_dicts(),
        "DataFrame (read_csv)": frame,
        "DataFrame (of flat dicts)": pd.DataFrame(flat_dicts()),
        "DataFrame.to_dict records": frame.to_dict(orient="records"),
    }
    return forms


def test_every_form_gives_the_same_samples(files):
    """Each form read by the readers / `from_records` equals the hand reading of the table."""
    for name, given in every_form(files).items():
        samples = from_records(given)
        assert [key(s) for s in samples] == [tuple(e) for e in EXPECTED], name


def test_the_issue_example_scores_the_same_through_the_api_and_the_cli(tmp_path, capsys):
    """The issue's df_refs.csv: `dialeval score` gave a 0.8292, the DataFrame NaN everywhere
    (ref1/ref2 landed in meta, the context stayed one string)."""
    pd = pytest.importorskip("pandas")
    path = tmp_path / "df_refs.csv"
    path.write_text(
        'id,system,context,response,ref1,ref2,rating:overall\n'
        't1,a,Do you cook? ||| I do a bit.,"Yes, I make a mean lasagna.","Yes, I make a mean lasagna.",Not really.,5;4\n'
        't2,a,Have you been to Paris?,"No, but I would love to see the Eiffel Tower.","No, but I\'d love to see the Eiffel Tower.",Yes once.,4;4\n'
        't1,b,Do you cook? ||| I do a bit.,I don\'t know.,"Yes, I make a mean lasagna.",Not really.,1;2\n'
        't2,b,Have you been to Paris?,ok,"No, but I\'d love to see the Eiffel Tower.",Yes once.,1;1\n',
        encoding="utf-8")
    assert main(["score", str(path), "--metrics", "bleu2", "--json"]) == 0
    cli = json.loads(capsys.readouterr().out)["systems"]
    api = dialeval.score(pd.read_csv(path), ["bleu2"])
    for system in ("a", "b"):
        assert math.isfinite(api.systems[system]["bleu2"])
        assert api.systems[system]["bleu2"] == cli[system]["bleu2"]
    assert api.samples[0].context == ["Do you cook?", "I do a bit."]
    assert api.samples[0].references == ["Yes, I make a mean lasagna.", "Not really."]
    # system a's first response equals its first reference: every clipped n-gram matches, so
    # its sentence BLEU-2 is 1 up to the 1e-15/1e-9 floors
    assert api.sentence["bleu2"][0] == pytest.approx(1.0, abs=1e-8)


def test_every_form_scores_the_same_through_the_api_and_the_cli(files, tmp_path, capsys):
    forms = every_form(files)
    reference = dialeval.score(forms["csv"], METRICS)
    for name, given in forms.items():
        result = dialeval.score(given, METRICS)
        for m in METRICS:
            np.testing.assert_array_equal(result.sentence[m], reference.sentence[m], err_msg=f"{name} {m}")
        assert result.systems == reference.systems, name
    # the command line, each file form: the same per-sample scores and per-system values
    for name in ("csv", "tsv", "jsonl", "flat.jsonl"):
        out = tmp_path / f"{name}.scores.jsonl"
        assert main(["score", str(files[name]), "--metrics", ",".join(METRICS), "-o", str(out),
                     "--json"]) == 0, capsys.readouterr().err
        summary = json.loads(capsys.readouterr().out)
        rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
        assert [(r["id"], r["system"]) for r in rows] == [(e[0], e[1]) for e in EXPECTED], name
        for m in METRICS:
            got = np.array([np.nan if r["scores"][m] is None else r["scores"][m] for r in rows])
            np.testing.assert_array_equal(got, reference.sentence[m], err_msg=f"cli {name} {m}")
            for system, values in reference.systems.items():
                assert summary["systems"][system][m] == pytest.approx(values[m], rel=1e-12, abs=0)
    # the empty response scores as an empty hypothesis does (BLEU 0, ROUGE-L 0), not NaN
    assert reference.sentence["bleu2"][2] == 0.0 and reference.sentence["rouge_l"][2] == 0.0


def test_a_dataframe_nan_response_is_an_empty_response():
    pd = pytest.importorskip("pandas")
    frame = pd.read_csv(io.StringIO("id,response,reference\n1,,a b\n2,a b,a b\n"))
    assert isinstance(frame["response"][0], float)          # pandas' empty cell
    [empty, full] = from_records(frame)
    assert (empty.response, empty.references) == ("", ["a b"])
    assert (full.id, full.response) == ("2", "a b")


# --------------------------------------------------------------------------- misspelt fields

@pytest.mark.parametrize("name,kind", [
    ("reference1", "references"), ("references_1", "references"), ("refs", "references"),
    ("Ref1", "references"), ("ref", "references"), ("gold", "references"),
    ("target", "references"), ("gold_response", "references"), ("human_response", "references"),
    ("ctx", "context"), ("history", "context"), ("dialogue_context", "context"),
    ("dialog_history", "context"), ("Context", "context"),
    ("rating_overall", "ratings"), ("rating", "ratings"), ("Rating:overall", "ratings"),
    ("score", "ratings"), ("human", "ratings"), ("human_score", "ratings"),
    ("annotations", "ratings"),
])
def test_lookalike_names(name, kind):
    assert lookalike(name) == kind
    assert lookalike(name, table=True) == kind


@pytest.mark.parametrize("name", ["id", "system", "response", "context", "references", "reference",
                                  "ref1", "ref12", "rating:overall", "dialogue_id", "turn", "speaker",
                                  "topic", "notes", "scores", "stats", "signatures", "meta"])
def test_accepted_and_plain_meta_names_are_not_lookalikes(name):
    assert lookalike(name) is None


def test_ratings_and_meta_are_not_table_columns():
    """`ratings` as a CSV column is text kept in meta: its spelling there is rating:<quality>."""
    assert lookalike("ratings") is None
    assert lookalike("ratings", table=True) == "ratings"


def _caught(call):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = call()
    return result, [str(w.message) for w in caught if issubclass(w.category, DialevalWarning)]


def test_a_misnamed_csv_reference_column_is_named_once(tmp_path):
    path = tmp_path / "mis.csv"
    path.write_text(csv_text().replace("ref1", "reference1", 1), encoding="utf-8")
    samples, messages = _caught(lambda: read_samples(path))
    assert len(messages) == 1, messages                     # one line, not one per row
    [message] = messages
    assert "\n" not in message
    assert str(path) in message and "'reference1'" in message
    assert "ref1" in message and "`reference`" in message   # the accepted spellings
    assert samples[0].meta["reference1"] == "Yes, I make a mean lasagna."
    assert samples[0].references == ["Not really."]
    _, again = _caught(lambda: read_samples(path))           # the engine reads a file twice
    assert again == []


def test_the_cli_prints_the_warning_and_still_scores(tmp_path, capsys):
    path = tmp_path / "mis.csv"
    path.write_text(csv_text().replace("ref1", "reference1", 1), encoding="utf-8")
    assert main(["score", str(path), "--metrics", "bleu2,cider_d"]) == 0
    err = capsys.readouterr().err
    lines = [l for l in err.splitlines() if "reference1" in l]
    assert len(lines) == 1 and lines[0].startswith("dialeval: warning: ")


def test_jsonl_keys_that_look_like_fields_are_named_once_each(tmp_path):
    path = tmp_path / "keys.jsonl"
    rows = [{"response": "a b", "refs": ["a b"], "ctx": "hi", "rating_overall": 3,
             "dialogue_id": "d1", "turn": 1} for _ in range(3)]
    path.write_text(jsonl_text(rows), encoding="utf-8")
    samples, messages = _caught(lambda: read_samples(path))
    assert len(messages) == 3, messages
    for name, accepted in (("refs", "ref1"), ("ctx", "|||"), ("rating_overall", "rating:<quality>")):
        [message] = [m for m in messages if f"'{name}'" in m]
        assert f"{path}:1" in message and accepted in message
    assert samples[0].references == [] and samples[0].meta["refs"] == ["a b"]


def test_api_inputs_warn_about_lookalike_columns_and_keys():
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame([{"response": "a b", "gold": "a b", "history": "x"}] * 2)
    _, messages = _caught(lambda: from_records(frame))
    assert sorted(m.split("'")[1] for m in messages) == ["gold", "history"]
    assert all(m.startswith("<DataFrame>: column ") for m in messages)
    _, messages = _caught(lambda: from_records([{"response": "a", "score": 4}, {"response": "b", "score": 2}]))
    assert len(messages) == 1 and "'score'" in messages[0] and "rating:<quality>" in messages[0]


def test_plain_meta_columns_and_output_rows_are_quiet(tmp_path, capsys):
    """Columns that are not look-alikes (dialogue_id, turn, notes) and dialeval's own output
    rows read back (scores, stats, signatures) give no warning."""
    path = tmp_path / "plain.csv"
    path.write_text("id,response,reference,dialogue_id,turn,notes\n1,a b,a b,d1,1,x\n", encoding="utf-8")
    _, messages = _caught(lambda: read_samples(path))
    assert messages == []
    out = tmp_path / "out.jsonl"
    assert main(["score", str(path), "--metrics", "bleu4", "--with-stats", "-o", str(out)]) == 0
    capsys.readouterr()
    _, messages = _caught(lambda: read_samples(out))
    assert messages == []


def test_text_contexts_read_alike_everywhere(tmp_path):
    """A context as text: turns joined by "|||" (each stripped) in a CSV cell, a JSONL string and
    a dict alike; a JSON list spelled in text is a list; outside a table cell, text that only
    starts with "[" ("[laughs] hi") stays text, as a JSONL string context always was."""
    (tmp_path / "c.csv").write_text('response,context\nx,"[""a"", ""b""]"\ny, hi |||there \n',
                                    encoding="utf-8")
    (tmp_path / "c.jsonl").write_text(jsonl_text([{"response": "x", "context": '["a", "b"]'},
                                                  {"response": "y", "context": " hi |||there "}]),
                                      encoding="utf-8")
    for path in ("c.csv", "c.jsonl"):
        assert [s.context for s in read_samples(tmp_path / path)] == [["a", "b"], ["hi", "there"]], path
    [s] = from_records([{"response": "x", "context": "[laughs] hi ||| ok"}])
    assert s.context == ["[laughs] hi", "ok"]
