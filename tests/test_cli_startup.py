"""`dialeval score` starts light: the parser it uses when no metric flag is given parses like the
full one, and a word-overlap run imports no other metric family."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from dialeval.cli.main import _light_parser, build_parser
from dialeval.cli.options import metric_options

SRC = Path(__file__).resolve().parents[1] / "src"


@pytest.mark.parametrize("argv", [
    ["score", "in.jsonl"],
    ["score", "in.jsonl", "--metrics", "bleu4,rouge_l", "-o", "out.jsonl", "--refs-mode", "max"],
    ["score", "--hyp", "h.txt", "--ref", "r1.txt", "--ref=r2.txt", "--json", "--chunk-size", "7"],
    ["score", "-", "--tokenize", "ptb-lower", "--with-stats", "--table-format", "csv"],
])
def test_light_parser_parses_like_the_full_parser(argv):
    light = _light_parser(argv)
    assert light is not None
    got, extra = light.parse_known_args(argv)
    want, want_extra = build_parser().parse_known_args(argv)
    assert extra == want_extra == []
    assert metric_options(got) == metric_options(want) == {}
    strip = {"_metric_flags", "func"}
    assert {k: v for k, v in vars(got).items() if k not in strip} == \
        {k: v for k, v in vars(want).items() if k not in strip and k not in want._metric_flags}


@pytest.mark.parametrize("argv", [
    ["score", "in.jsonl", "--meteor-compare", "strings"],     # a generated metric flag
    ["score", "in.jsonl", "--meteor-comp", "strings"],        # an abbreviation of one
    ["score", "--help"], ["metrics"], ["correlate", "x.jsonl", "--human", "overall"],
])
def test_anything_else_goes_to_the_full_parser(argv):
    assert _light_parser(argv) is None


def test_overlap_scoring_imports_no_other_family(tmp_path):
    rows = [{"response": "a b c", "references": ["a b", "b c d"]}, {"response": "x y", "references": ["x"]}]
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    code = ("import sys; from dialeval.cli.main import main; "
            f"rc = main(['score', {str(src)!r}, '--metrics', 'bleu1,bleu4,rouge_l,cider_d', '--json']); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('scipy', 'tqdm', 'sklearn', 'torch', 'pandas', 'numba') or m.startswith('dialeval.metrics.') "
            "and not m.startswith('dialeval.metrics.overlap.') and m not in "
            "('dialeval.metrics.base', 'dialeval.metrics.registry', 'dialeval.metrics.overlap')))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    summary, imported = proc.stdout.strip().splitlines()[0], proc.stdout.strip().splitlines()[-1]
    assert json.loads(summary)["metrics"]["bleu1"]["corpus"] > 0
    assert imported == "[]"
    assert "meteor" not in proc.stdout
