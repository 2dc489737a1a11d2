"""Bad input: one line naming file, line and field; exit status 2; no output file."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from dialeval.cli import main
from dialeval.data.readers import read_jsonl, read_parallel, read_table
from dialeval.errors import DialevalError, InputError


def run_cli(args, capsys):
    code = main([str(a) for a in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def write(path: Path, content: bytes | str) -> Path:
    path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    return path


GOOD = {"id": "a", "response": "i am fine", "references": ["i am fine thanks"]}

CASES = {
    "empty": (b"", "empty input", None, None),
    "malformed": (json.dumps(GOOD) + "\n{not json\n", "malformed JSON", 2, None),
    "no_response": (json.dumps(GOOD) + "\n" + json.dumps({"id": "b", "references": ["x"]}) + "\n",
                    "missing", 2, "response"),
    "refs_not_list": (json.dumps({"response": "x", "references": "a string"}) + "\n",
                      "expected a list of strings", 1, "references"),
    "non_utf8": (json.dumps(GOOD).encode() + b"\n" + b'{"response": "caf\xe9"}\n', "not valid UTF-8", 2, None),
    "ref_item_not_str": (json.dumps({"response": "x", "references": ["ok", 3]}) + "\n",
                         "item 1 is int", 1, "references"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_jsonl_gives_one_located_line_and_no_output(tmp_path, capsys, case):
    content, message, line, field = CASES[case]
    src = write(tmp_path / "in.jsonl", content)
    out = tmp_path / "out.jsonl"
    code, stdout, stderr = run_cli(["score", src, "--metrics", "bleu4", "-o", out], capsys)
    assert code == 2
    assert not out.exists()
    assert list(tmp_path.iterdir()) == [src]  # no temporary file left behind either
    lines = stderr.strip().splitlines()
    assert len(lines) == 1
    assert str(src) in lines[0] and message in lines[0]
    if line is not None:
        assert f"{src}:{line}:" in lines[0]
    if field is not None:
        assert f"field '{field}'" in lines[0]


def test_parallel_files_of_different_lengths(tmp_path, capsys):
    hyp = write(tmp_path / "hyp.txt", "a b\nc d\ne f\n")
    ref = write(tmp_path / "ref.txt", "a b\nc d\n")
    out = tmp_path / "out.jsonl"
    code, _, stderr = run_cli(["score", "--hyp", hyp, "--ref", ref, "-o", out], capsys)
    assert code == 2 and not out.exists()
    assert f"{ref}:3:" in stderr and "has 2 lines" in stderr and "has 3" in stderr


def test_existing_output_is_not_clobbered_by_a_failed_run(tmp_path, capsys):
    out = write(tmp_path / "out.jsonl", "previous\n")
    src = write(tmp_path / "in.jsonl", "{broken\n")
    code, _, _ = run_cli(["score", src, "-o", out], capsys)
    assert code == 2 and out.read_text() == "previous\n"


def test_csv_errors_name_line_and_field(tmp_path):
    src = write(tmp_path / "in.csv", "id,response,reference\n1,hello,hi\n2,bye\n")
    with pytest.raises(InputError) as err:
        read_table(src)
    assert f"{src}:3" in str(err.value) and "columns" in str(err.value)
    src = write(tmp_path / "no_resp.csv", "id,reference\n1,hi\n")
    with pytest.raises(InputError, match="field 'response'"):
        read_table(src)


def test_missing_file_and_unknown_metric(tmp_path, capsys):
    code, _, err = run_cli(["score", tmp_path / "nope.jsonl"], capsys)
    assert code == 2 and "no such file" in err
    src = write(tmp_path / "in.jsonl", json.dumps(GOOD) + "\n")
    code, _, err = run_cli(["score", src, "--metrics", "bleu9"], capsys)
    assert code == 2 and "unknown metric 'bleu9'" in err


def test_reader_round_trip_formats(tmp_path):
    """The same samples read from JSONL, CSV and TSV."""
    rows = [{"id": "1", "system": "s", "context": ["hi", "how are you ?"], "response": "fine",
             "references": ["good", "fine thanks"], "ratings": {"overall": [4, 5]}}]
    j = read_jsonl(write(tmp_path / "a.jsonl", json.dumps(rows[0]) + "\n"))[0]
    c = read_table(write(tmp_path / "a.csv",
                         "id,system,context,response,ref1,ref2,rating:overall\n"
                         "1,s,hi ||| how are you ?,fine,good,fine thanks,4;5\n"))[0]
    t = read_table(write(tmp_path / "a.tsv",
                         "id\tsystem\tcontext\tresponse\treferences\trating:overall\n"
                         '1\ts\t["hi", "how are you ?"]\tfine\t["good", "fine thanks"]\t4;5\n'))[0]
    for s in (j, c, t):
        assert (s.id, s.system, s.context, s.response, s.references, s.ratings) == \
            ("1", "s", ["hi", "how are you ?"], "fine", ["good", "fine thanks"], {"overall": [4.0, 5.0]})


def test_dataframe_and_dict_input():
    pd = pytest.importorskip("pandas")
    from dialeval import score

    frame = pd.DataFrame([{"response": "a b c", "references": ["a b c"]},
                          {"response": "x y", "references": ["x z"]}])
    by_frame = score(frame, ["bleu1"])
    by_dict = score(frame.to_dict(orient="records"), ["bleu1"])
    assert by_frame.sentence["bleu1"].tolist() == by_dict.sentence["bleu1"].tolist()
    # hand computation: "a b c" vs itself -> (3+1e-15)/(3+1e-9) with brevity exp(1-1/ratio)
    ratio = (3 + 1e-15) / (3 + 1e-9)
    import math
    assert by_frame.sentence["bleu1"][0] == pytest.approx((3 + 1e-15) / (3 + 1e-9) * math.exp(1 - 1 / ratio), abs=1e-15)


def test_parallel_reader_strips_and_names_systems(tmp_path):
    hyp = write(tmp_path / "sysA.txt", "  hello there \n")
    ref = write(tmp_path / "ref.txt", "hello there\n")
    [s] = read_parallel([hyp], [ref])
    assert (s.system, s.response, s.references, s.id) == ("sysA", "hello there", ["hello there"], "sysA:1")


def test_cli_runs_as_a_module_in_a_pipe(tmp_path):
    """No progress bar in a pipe: stderr stays empty."""
    src = write(tmp_path / "in.jsonl", json.dumps(GOOD) + "\n")
    proc = subprocess.run([sys.executable, "-m", "dialeval.cli", "score", str(src), "--json"],
                          capture_output=True, text=True, check=True)
    assert proc.stderr == ""
    summary = json.loads(proc.stdout)
    assert set(summary) == {"metrics", "systems", "rows", "scored"}
    assert summary["metrics"]["bleu4"]["signature"].startswith("bleu4|refs:multi|tok:whitespace")


@pytest.mark.parametrize("flag,closest", [("--lm-modl", "--lm-model"), ("--word-vectrs", "--word-vectors"),
                                          ("--tokenizr", "--tokenize"), ("--amfm-lamda", "--amfm-lambda")])
def test_unknown_option_names_the_closest_one(tmp_path, capsys, flag, closest):
    src = write(tmp_path / "in.jsonl", json.dumps(GOOD) + "\n")
    out = tmp_path / "out.jsonl"
    code, stdout, stderr = run_cli(["score", src, "--metrics", "bleu4", flag, "x", "-o", out], capsys)
    assert code == 2 and not out.exists() and stdout == ""
    lines = stderr.strip().splitlines()
    assert len(lines) == 1
    assert f"unknown option {flag}" in lines[0] and f"did you mean '{closest}'" in lines[0]


def test_duplicate_ids_are_refused_with_their_line(tmp_path, capsys):
    rows = [GOOD, {**GOOD, "id": "b"}, GOOD]
    src = write(tmp_path / "in.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    code, _, stderr = run_cli(["score", src, "--metrics", "bleu4"], capsys)
    assert code == 2 and len(stderr.strip().splitlines()) == 1
    assert f"{src}:3:" in stderr and "duplicate id 'a'" in stderr
    # the same id under two systems is two samples
    rows = [{**GOOD, "system": "x"}, {**GOOD, "system": "y"}]
    src = write(tmp_path / "two.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    assert run_cli(["score", src, "--metrics", "bleu4"], capsys)[0] == 0


def test_metric_options_are_checked_without_importing_every_family():
    """An option the run's own metrics declare passes without reading the other families'
    constructors (which imports their modules); an option another family declares still passes,
    and a misspelt one is refused with the closest name."""
    import subprocess
    import sys

    code = ("import sys; from dialeval.engine.plan import make_plan; make_plan(['meteor'], meteor_workers=1); "
            "print(sorted(m for m in sys.modules if m.startswith('dialeval.metrics.') and "
            "m.split('.')[2] in ('mme', 'learned', 'lm', 'embedding', 'compose', 'judge')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
    from dialeval.engine.plan import make_plan

    make_plan(["bleu1"], lm_device="cpu")                  # another family's option: accepted
    with pytest.raises(DialevalError, match=r"unknown metric option 'meteor_wokers'.*meteor_workers"):
        make_plan(["meteor"], meteor_wokers=1)
