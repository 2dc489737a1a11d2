"""Small command-line inconsistencies a new user meets (issue 55): a misspelt command, a count
flag given 0, a `--human` quality the file does not rate. Each is one line and exit status 2."""

from __future__ import annotations

import json

import pytest

from dialeval.cli import main
from dialeval.cli.options import COUNT_SUFFIXES


def run_cli(args, capsys):
    try:
        code = main([str(a) for a in args])
    except SystemExit as exc:   # argparse's refusals exit from the parser
        code = exc.code
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_misspelt_command_names_the_closest(capsys):
    code, out, err = run_cli(["scroe", "x.jsonl"], capsys)
    assert code == 2 and out == ""
    assert err == "dialeval: error: unknown command 'scroe'; did you mean 'score'? (see `dialeval --help`)\n"


def test_unknown_command_lists_the_commands(capsys):
    code, _, err = run_cli(["xyzzy"], capsys)
    assert code == 2
    assert err.startswith("dialeval: error: unknown command 'xyzzy'; the commands: score, metrics, ")
    assert len(err.splitlines()) == 1


def test_misspelt_choice_names_the_closest(capsys):
    with pytest.raises(SystemExit) as info:
        main(["score", "x.jsonl", "--refs-mode", "mulit"])
    err = capsys.readouterr().err
    assert info.value.code == 2
    assert "invalid choice: 'mulit'; did you mean 'multi'? (choose from 'multi', 'max', 'mean')" in err


@pytest.fixture
def samples(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps({"id": str(i), "system": s, "response": f"the cat {i}",
                                        "references": [f"the cat sat {i}"],
                                        "ratings": {"overall": [1 + (i + len(s)) % 5]}}) + "\n"
                            for s in ("A", "BB") for i in range(4)), encoding="utf-8")
    return path


@pytest.mark.parametrize("flag", ["--sentence-batch-size", "--bertscore-batch-size", "--lm-batch-size",
                                  "--lm-token-budget", "--meteor-workers"])
@pytest.mark.parametrize("value", ["0", "-3"])
def test_count_flags_refuse_zero_and_negatives(samples, capsys, flag, value):
    """Every count flag refuses 0 alike, before any model loads (`--lm-batch-size 0` was refused
    by its metric, `--sentence-batch-size 0` accepted)."""
    with pytest.raises(SystemExit) as info:
        main(["score", str(samples), "--metrics", "bleu2", flag, value])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err == (f"dialeval: error: argument {flag}: must be at least 1, got {int(value)} "
                   "(see `dialeval score --help`)\n")


def test_every_count_flag_is_checked():
    """The generated flags whose names say they count take `at_least_one` (a new metric's
    `*_batch_size` gets it without touching the CLI)."""
    from dialeval.cli.main import build_parser

    score = next(a for a in build_parser()._subparsers._group_actions[0].choices.values()
                 if a.prog.endswith(" score"))
    counted = {a.dest: a.type.__name__ for a in score._actions if a.dest.endswith(COUNT_SUFFIXES)}
    assert {"sentence_batch_size", "bertscore_batch_size", "lm_batch_size"} <= set(counted)
    assert set(counted.values()) == {"at_least_one"}


def test_count_flags_accept_positive(samples, capsys):
    code, out, _ = run_cli(["score", samples, "--metrics", "bleu2", "--sentence-batch-size", "4"], capsys)
    assert code == 0 and out.startswith("system")


def test_report_refuses_a_quality_not_rated(samples, tmp_path, capsys):
    scores = tmp_path / "scores.jsonl"
    assert run_cli(["score", samples, "--metrics", "bleu2", "-o", scores, "--with-stats"], capsys)[0] == 0
    report = tmp_path / "r.html"
    code, out, err = run_cli(["report", scores, "--human", "Overall", "-o", report], capsys)
    assert code == 2 and out == "" and not report.exists()
    assert err == ("dialeval: error: no row has ratings for 'Overall'; did you mean 'overall'? "
                   "(rated qualities: overall)\n")
    # compare and correlate refused it already: the three now agree
    assert run_cli(["compare", scores, "--human", "Overall"], capsys)[0] == 2
    assert run_cli(["correlate", scores, "--human", "Overall"], capsys)[0] == 2


def test_report_quality_from_published_means_is_accepted(samples, tmp_path):
    """A quality only the --system-human file gives is no typo."""
    from dialeval.meta.evaluate import read_scores
    from dialeval.report.analysis import check_qualities

    scores = tmp_path / "scores.jsonl"
    assert main(["score", str(samples), "--metrics", "bleu2", "-o", str(scores)]) == 0
    rows = read_scores(str(scores))
    check_qualities(rows, ["overall", "published"], {"A": {"published": 3.0}, "BB": {"published": 2.0}})
    with pytest.raises(Exception, match="no row has ratings for 'fluency'"):
        check_qualities(rows, ["fluency"], {"A": {"published": 3.0}})


def _probe_input(path, responses):
    path.write_text("".join(json.dumps({"id": str(i), "context": [f"where is the cat {i}"], "response": r,
                                        "references": ["the cat sat on the mat"]}, ensure_ascii=False) + "\n"
                            for i, r in enumerate(responses)), encoding="utf-8")
    return path


@pytest.fixture
def vectors(tmp_path):
    path = tmp_path / "vec.txt"
    path.write_text("the 1 0 0\ncat 0 1 0\nsat 1 1 0\non 1 0 1\nmat 0 1 1\nmy 0 0 1\n", encoding="utf-8")
    return path


def test_probe_variants_are_not_taken_for_the_users_data(tmp_path, vectors, capsys):
    """The `script` family writes Cyrillic on purpose: that is no warning about the input."""
    data = _probe_input(tmp_path / "p.jsonl", [f"the cat sat on my mat {'the ' * i}".strip() for i in range(6)])
    code, _, err = run_cli(["probe", data, "--metrics", "emb_average", "--word-vectors", vectors,
                            "--n-boot", "0"], capsys)
    assert code == 0
    assert "script" not in err and "out of vocabulary" not in err


def test_probe_still_says_what_the_users_data_holds(tmp_path, vectors, capsys):
    responses = ["кошка сидит на коврике", "кот", "the cat sat on my mat", "the cat sat", "my cat sat",
                 "the mat"]
    data = _probe_input(tmp_path / "p.jsonl", responses)
    code, _, err = run_cli(["probe", data, "--metrics", "emb_average", "--word-vectors", vectors,
                            "--n-boot", "0"], capsys)
    assert code == 0
    warned = [line for line in err.splitlines() if "script" in line]
    assert warned == ["dialeval: warning: 2 response(s) written mostly in CYRILLIC script, which emb_average "
                      "cannot read (their models know only English): their scores for those rows mean little"]
