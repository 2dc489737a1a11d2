"""`dialeval score` starts light: the parser it uses when no metric flag is given parses like the
full one, a word-overlap run imports no other metric family, and such a run starts numpy with
one BLAS thread (the CLI decides before anything imports numpy)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dialeval.cli.main import _light_parser, _runs_without_blas, build_parser
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


@pytest.mark.parametrize("argv,expected", [
    (["score", "in.jsonl"], True),                                        # the default metrics
    (["score", "in.jsonl", "--metrics", "bleu4,rouge_l , cider_d"], True),
    (["score", "--metrics=meteor,cider", "in.jsonl"], True),
    (["score", "in.jsonl", "--metric", "bleu1"], True),                   # argparse's prefix
    (["score", "in.jsonl", "--metrics", "bleu1,sent_cosine"], False),     # one metric with BLAS
    (["score", "in.jsonl", "--metric", "adem"], False),
    (["score", "in.jsonl", "--metrics", "all"], False),
    (["score", "in.jsonl", "--metrics", "bleu9"], False),                 # unknown: left to the parser
    (["score", "in.jsonl", "--metrics"], False),
    (["evaluate", "usr-tc", "data/usr", "--metrics", "bleu4"], False),    # only `score` is decided
    (["metrics"], False),
])
def test_which_command_lines_run_without_blas(argv, expected):
    assert _runs_without_blas(argv) is expected


def _fresh(code: str, **env) -> str:
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin", **env})
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip().splitlines()[-1]


def test_the_cli_reads_its_command_line_before_numpy_is_imported():
    # the decision is only worth anything if nothing on the way to it imports numpy
    code = ("import sys, dialeval, dialeval.metrics.registry, dialeval.cli.main, dialeval.models.threads; "
            "from dialeval.cli.main import _runs_without_blas; _runs_without_blas(['score', 'x']); "
            "print('numpy' in sys.modules)")
    assert _fresh(code) == "False"


def test_single_blas_thread_respects_the_user_and_an_imported_numpy():
    code = ("import os; from dialeval.models.threads import single_blas_thread as f; "
            "print(f(), os.environ.get('OPENBLAS_NUM_THREADS'))")
    assert _fresh(code) == "True 1"
    assert _fresh(code, OMP_NUM_THREADS="3") == "False None"
    assert _fresh(code, OPENBLAS_NUM_THREADS="2") == "False 2"
    late = "import numpy, os; from dialeval.models.threads import single_blas_thread as f; print(f())"
    assert _fresh(late) == "False"


def test_overlap_scoring_runs_numpy_with_one_blas_thread(tmp_path):
    pytest.importorskip("threadpoolctl", reason="threadpoolctl (extra `embeddings`) reads BLAS thread counts")
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("one core: OpenBLAS starts one thread anyway")
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps({"response": "a b c", "references": ["a b"]}) + "\n")
    code = ("import io, contextlib; from threadpoolctl import threadpool_info; from dialeval.cli.main import main\n"
            "def threads(metrics):\n"
            "    with contextlib.redirect_stdout(io.StringIO()):\n"
            f"        main(['score', {str(src)!r}, '--metrics', metrics, '--json'])\n"
            "    return sorted({p['num_threads'] for p in threadpool_info() if p['internal_api'] == 'openblas'})\n"
            "print(threads('bleu1,rouge_l,cider_d'))")
    assert _fresh(code) == "[1]"
