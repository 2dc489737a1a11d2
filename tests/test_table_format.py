"""Issue 21, item 15: CSV output a machine reads as it is, and one name for the table format."""

from __future__ import annotations

import csv
import io
import json

import pytest

import threebots


def records(text: str) -> list[list[str]]:
    """The CSV records of a command's output: blank lines and `# ` comments left out, as
    pandas' `read_csv(..., comment="#")` leaves them."""
    lines = [line for line in text.splitlines() if line and not line.startswith("# ")]
    return list(csv.reader(io.StringIO("\n".join(lines))))


@pytest.fixture(scope="module")
def scored(tmp_path_factory):
    from dialeval.cli.main import main

    tmp = tmp_path_factory.mktemp("fmt")
    data = threebots.write(tmp / "bots.jsonl", keys=False)
    scores = tmp / "scores.jsonl"
    assert main(["score", str(data), "--metrics", "bleu4,rouge_l", "--with-stats", "-o",
                 str(scores)]) == 0
    return data, scores


def test_score_csv_is_machine_clean(scored, capsys):
    from dialeval.cli.main import main

    data, _ = scored
    capsys.readouterr()
    assert main(["score", str(data), "--metrics", "bleu4,rouge_l", "--table-format", "csv"]) == 0
    out = capsys.readouterr().out
    rows = records(out)
    assert rows[0] == ["system", "n", "bleu4", "rouge_l"]
    assert [r[0] for r in rows[1:]] == ["bot_a", "bot_b", "bot_c", "(all)"]
    assert all(len(r) == 4 and float(r[2]) >= 0 for r in rows[1:])
    assert "# bleu4: bleu4|refs:multi|tok:whitespace" in out


def test_compare_csv_numbers_and_mark_in_their_own_columns(scored, capsys):
    from dialeval.cli.main import main
    from dialeval.meta.systems import compare_systems
    from dialeval.meta.evaluate import read_scores

    _, scores = scored
    capsys.readouterr()
    assert main(["compare", str(scores), "--baseline", "bot_a", "--table-format", "csv"]) == 0
    rows = records(capsys.readouterr().out)
    header = ["system", "n", "score", "ci_low", "ci_high", "delta", "p", "mark", "pairs", "p_min"]
    assert rows[0] == header
    table = [dict(zip(header, r)) for r in rows[1:4]]         # bleu4's table
    lib = compare_systems(read_scores(scores), baseline="bot_a")
    want = {r["system"]: r for r in lib.rows if r["measure"] == "bleu4"}
    for r in table:
        w = want[r["system"]]
        assert float(r["ci_low"]) == w["ci_low"] and float(r["ci_high"]) == w["ci_high"]
        assert float(r["score"]) == w["score"]
        if r["system"] != "bot_a":
            assert float(r["p"]) == w["p"] and r["mark"] == w["mark"]
            assert int(r["pairs"]) == w["n_paired"] and float(r["p_min"]) == w["p_min"]
    by = {r["system"]: r for r in table}
    assert by["bot_b"]["mark"] == "**" and by["bot_c"]["mark"] == ""   # 2 paired items


def test_one_option_name_old_name_still_works(scored, capsys):
    from dialeval.cli.main import build_parser, main

    data, scores = scored
    commands = {
        "score": [str(data), "--metrics", "bleu1"],
        "compare": [str(scores), "--n-resamples", "20"],
        "correlate": [str(scores), "--human", "overall", "--n-boot", "0", "--method", "pearson"],
    }
    for command, rest in commands.items():
        capsys.readouterr()
        assert main([command] + rest + ["--table-format", "latex"]) == 0, command
        assert "\\begin{tabular}" in capsys.readouterr().out
    # the old name of the non-score commands: still accepted, no longer listed
    assert main(["compare", str(scores), "--n-resamples", "20", "--format", "csv"]) == 0
    assert capsys.readouterr().out.startswith("# bleu4")
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command").choices
    for command in ("score", "compare", "correlate", "evaluate", "agreement"):
        text = sub[command].format_help()
        assert "--table-format" in text, command
        if command != "score":
            assert "--format" not in text.replace("--table-format", ""), command


def test_agreement_csv_footer_is_comments(tmp_path, capsys):
    from conftest import DATA, need
    from dialeval.cli.main import main

    need(DATA / "usr" / "tc_usr_data.json")
    assert main(["agreement", "usr-tc", str(DATA / "usr"), "--qualities", "overall",
                 "--n-rep", "5", "--table-format", "csv"]) == 0
    out = capsys.readouterr().out
    rows = records(out)
    assert rows[0][0] == "quality" and rows[1][0] == "overall" and len(rows) == 2
