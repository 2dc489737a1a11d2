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
