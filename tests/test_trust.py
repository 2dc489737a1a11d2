"""Issue 21's ordinary mistakes: each is one line on stderr, exit status 2, nothing left behind
(misspelt options, missing or unwritable outputs, lone surrogates, missing optional packages)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dialeval.cli import main

SRC = str(Path(__file__).resolve().parents[1] / "src")


def run_cli(argv, capsys) -> tuple[int, str, str]:
    try:
        code = main(list(map(str, argv)))
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


def one_error_line(err: str) -> str:
    lines = [l for l in err.splitlines() if l.startswith("dialeval: error:")]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def write_samples(path: Path, rows=None) -> Path:
    rows = rows or [{"id": str(i), "system": "a", "response": f"hello there number {i}",
                     "references": [f"hello here number {i}"]} for i in range(4)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


# -- item 18: no abbreviated options ---------------------------------------------------------------

def test_an_abbreviated_option_is_an_error_with_a_suggestion(tmp_path, capsys):
    data = write_samples(tmp_path / "in.jsonl")
    code, out, err = run_cli(["score", data, "--metrics", "bleu2", "--refs-mod", "max"], capsys)
    assert code == 2
    assert "--refs-mode" in one_error_line(err)
    code, out, err = run_cli(["correlate", data, "--hum", "overall"], capsys)
    assert code == 2 and "--human" in one_error_line(err)


def test_every_parser_refuses_abbreviations():
    import argparse

    from dialeval.cli.main import build_parser

    def walk(parser):
        yield parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for child in action.choices.values():
                    yield from walk(child)
    parsers = list(walk(build_parser()))
    assert len(parsers) > 10
    assert all(p.allow_abbrev is False for p in parsers)


# -- items 6-8: missing input, -o naming a folder, outputs that refuse writing --------------------

def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob("*") if p.suffix in (".partial", ".json", ".npz", ".html",
                                                                        ".md", ".png", ".jsonl")
                  or p.name.startswith((".tmp-", ".dialeval-")))


def test_missing_input_with_an_output_is_one_line(tmp_path, capsys):
    code, out, err = run_cli(["score", tmp_path / "missing.jsonl", "-o", tmp_path / "out.jsonl"], capsys)
    assert code == 2 and "missing.jsonl: no such file" in one_error_line(err)
    assert list(tmp_path.iterdir()) == []
    code, out, err = run_cli(["score", "--hyp", tmp_path / "h.txt", "--ref", tmp_path / "r.txt",
                              "-o", tmp_path / "out.jsonl"], capsys)
    assert code == 2 and "h.txt: no such file" in one_error_line(err)
    assert list(tmp_path.iterdir()) == []


def test_an_output_naming_a_folder_is_refused_before_scoring(tmp_path, capsys):
    data = write_samples(tmp_path / "in.jsonl")
    (tmp_path / "outdir").mkdir()
    code, out, err = run_cli(["score", data, "--metrics", "bleu2", "-o", tmp_path / "outdir"], capsys)
    assert code == 2 and "is a directory" in one_error_line(err)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl", "outdir"]
    assert list((tmp_path / "outdir").iterdir()) == []


@pytest.fixture
def unwritable(tmp_path):
    """A folder that refuses writing: mode 0555 for a normal user; for root (whom permissions
    do not stop) a read-only tmpfs mount, where the system allows mounting."""
    folder = tmp_path / "locked"
    folder.mkdir()
    if os.geteuid() != 0:
        folder.chmod(0o555)
        yield folder
        folder.chmod(0o755)
        return
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(folder)],
                          capture_output=True)
    if done.returncode != 0:
        pytest.skip("running as root where a read-only mount cannot be made")
    try:
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], capture_output=True)


def _scores_file(tmp_path: Path, capsys) -> Path:
    rows = [{"id": str(i), "system": s, "response": f"the answer {i} {s}", "references": [f"the answer {i}"],
             "ratings": {"overall": [float((i * 7 + len(s)) % 5)]}} for s in ("a", "bb") for i in range(6)]
    data = write_samples(tmp_path / "rated.jsonl", rows)
    code, _, err = run_cli(["score", data, "--metrics", "bleu2,rouge_l", "--with-stats",
                            "-o", tmp_path / "scores.jsonl"], capsys)
    assert code == 0, err
    return tmp_path / "scores.jsonl"


@pytest.mark.parametrize("command", ["score -o", "score --report html", "score --report md", "report -o",
                                     "correlate --plot", "train amfm -o"])
def test_an_output_that_refuses_writing_is_one_line_before_any_work(command, tmp_path, unwritable, capsys):
    scores = _scores_file(tmp_path, capsys)
    data = tmp_path / "rated.jsonl"
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("a b c\nd e f\n", encoding="utf-8")
    argv = {"score -o": ["score", data, "--metrics", "bleu2", "-o", unwritable / "out.jsonl"],
            "score --report html": ["score", data, "--metrics", "bleu2", "--report", unwritable / "r.html"],
            "score --report md": ["score", data, "--metrics", "bleu2", "--report", unwritable / "r.md"],
            "report -o": ["report", scores, "-o", unwritable / "r.html"],
            "correlate --plot": ["correlate", scores, "--human", "overall", "--plot", unwritable / "plots"],
            "train amfm -o": ["train", "amfm", "--corpus", corpus, "-o", unwritable / "model"]}[command]
    before = sorted(p.name for p in tmp_path.iterdir())
    code, out, err = run_cli(argv, capsys)
    assert code == 2 and "cannot be written" in one_error_line(err)
    assert out == ""                                   # refused before anything was computed
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    assert list(unwritable.iterdir()) == []


# -- item 10: missing optional packages -----------------------------------------------------------

HIDE = """
import sys
blocked = set(sys.argv[1].split(","))

class Hide:
    '''Imports of the blocked packages fail as if they were not installed.'''
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in blocked:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)

sys.meta_path.insert(0, Hide())
if sys.argv[2] == "to_pandas":
    from dialeval import score
    from dialeval.errors import DialevalError
    try:
        score([{"response": "a b", "references": ["a b"]}], ["bleu1"], progress=False).to_pandas()
    except DialevalError as exc:
        print(f"dialeval: error: {exc}", file=sys.stderr)
        sys.exit(2)
    sys.exit(0)
from dialeval.cli import main
sys.exit(main(sys.argv[2:]))
"""


@pytest.mark.parametrize("package,extra,command", [
    ("matplotlib", "report", "report SCORES -o OUT/r.html"),
    ("matplotlib", "report", "correlate SCORES --human overall --plot OUT/plots"),
    ("jinja2", "report", "report SCORES -o OUT/r.html"),
    ("sklearn", "amfm", "train amfm --corpus CORPUS -o OUT/model"),
    ("pandas", "report", "to_pandas"),
    ("torch", "embeddings", "score DATA --metrics sent_cosine -o OUT/s.jsonl"),
    ("sentence_transformers", "embeddings", "score DATA --metrics sent_cosine -o OUT/s.jsonl"),
    ("transformers", "embeddings", "score DATA --metrics sent_cosine -o OUT/s.jsonl"),
    ("gensim", "embeddings", "train vectors --method word2vec --corpus CORPUS -o OUT/vec"),
    ("distributed", "dask", "score DATA --metrics bleu2 --backend dask -o OUT/s.jsonl"),
])
def test_a_missing_optional_package_is_one_line_naming_the_install(package, extra, command, tmp_path, capsys):
    scores = _scores_file(tmp_path, capsys)
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("a b c\nd e f\n", encoding="utf-8")
    out = tmp_path / "out"
    out.mkdir()
    argv = [{"SCORES": str(scores), "DATA": str(tmp_path / "rated.jsonl"), "CORPUS": str(corpus)}.get(a, a)
            .replace("OUT", str(out)) for a in command.split()]
    env = dict(os.environ, PYTHONPATH=SRC + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run([sys.executable, "-c", HIDE, package, *argv], capture_output=True, text=True,
                          env=env, timeout=300)
    assert done.returncode == 2, done.stderr
    line = one_error_line(done.stderr)
    from dialeval.optional import PACKAGES

    assert PACKAGES[package][0] in line and f"pip install -e '.[{extra}]'" in line and "install.sh" in line
    assert list(out.iterdir()) == []


# -- item 9: lone surrogates in JSON strings ------------------------------------------------------

@pytest.mark.parametrize("metric", ["bleu2", "meteor", "emb_average", "sent_cosine"])
def test_lone_surrogates_become_u_fffd_with_one_warning(metric, tmp_path, capsys):
    if metric == "sent_cosine":
        pytest.importorskip("sentence_transformers")
    from dialeval.data import readers

    readers._WARNED_SURROGATES.clear()
    data = tmp_path / "scraped.jsonl"
    data.write_text('{"id": "1", "response": "ok \\ud83d\\ude00 fine", "references": ["ok fine"]}\n'
                    '{"id": "2", "response": "hi \\ud800 there", "references": ["hi there \\udfff"]}\n'
                    '{"id": "3", "response": "and \\uDBFF again", "references": ["and again"]}\n', encoding="ascii")
    out = tmp_path / "out.jsonl"
    code, stdout, err = run_cli(["score", data, "--metrics", metric, "-o", out], capsys)
    assert code == 0, err
    warned = [l for l in err.splitlines() if "surrogate" in l]
    assert warned == [f"dialeval: warning: {data}:2: lone UTF-16 surrogate escape (such as \\ud800) replaced "
                      "by U+FFFD; later ones in this file are replaced without a warning"]
    rows = [json.loads(l) for l in out.read_text(encoding="utf-8").splitlines()]
    assert [r["response"] for r in rows] == ["ok \U0001F600 fine", "hi \ufffd there", "and \ufffd again"]
    assert rows[1]["references"] == ["hi there \ufffd"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.jsonl", "scraped.jsonl"]


def test_surrogates_in_records_given_to_the_library():
    from dialeval import score

    with pytest.warns(Warning, match="surrogate"):
        out = score([{"response": "a \ud800 b", "references": ["a b"]}], ["bleu1"], progress=False)
    assert out.samples[0].response == "a \ufffd b"
