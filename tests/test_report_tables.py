"""Tables in four formats; the LaTeX one must be a well-formed booktabs tabular."""

from __future__ import annotations

import csv
import io
import re

import pytest

from dialeval.report.tables import TABLE_FORMATS, format_table

HEADER = ["metric", "r", "p", "95% CI", "n"]
ROWS = [["bleu_4", 0.41234, 1.2e-5, "[0.3, 0.5]", 360],
        ["R&D {x}", float("nan"), None, "n/a", 12],
        ["tilde~caret^#$", -0.5, 0.75, "[-0.6, -0.4]", 7]]


def _split_latex_row(line: str) -> list[str]:
    assert line.endswith(" \\\\"), line
    return re.split(r"(?<!\\)&", line[:-3])


def test_latex_is_a_tabular_with_consistent_columns():
    text = format_table(HEADER, ROWS, fmt="latex")
    lines = text.splitlines()
    assert lines[0] == "\\begin{tabular}{lrrlr}"       # text columns left, numbers right
    assert lines[-1] == "\\end{tabular}"
    assert lines[1] == "\\toprule" and lines[3] == "\\midrule" and lines[-2] == "\\bottomrule"
    spec = re.match(r"\\begin\{tabular\}\{([lrc]+)\}", lines[0]).group(1)
    body = [lines[2]] + lines[4:-2]
    assert len(body) == 1 + len(ROWS)
    for line in body:
        assert len(_split_latex_row(line)) == len(spec) == len(HEADER)
    # special characters escaped: no bare & % _ # $ { } ~ ^ left in a cell
    for line in body:
        for cell in _split_latex_row(line):
            assert not re.search(r"(?<!\\)[%_#${}&]", re.sub(r"\\text\w+\{\}", "", cell)), cell
    assert "95\\% CI" in lines[2] and "R\\&D \\{x\\}" in text and "bleu\\_4" in text
    assert "\\textasciitilde{}" in text and "\\textasciicircum{}" in text
    # balanced braces overall, one begin and one end
    assert text.count("\\begin{tabular}") == text.count("\\end{tabular}") == 1


def test_csv_round_trips_and_markdown_lines_up():
    text = format_table(HEADER, ROWS, fmt="csv")
    parsed = list(csv.reader(io.StringIO(text)))
    assert parsed[0] == HEADER and parsed[1][0] == "bleu_4" and parsed[1][1] == "0.4123"
    assert parsed[2][0] == "R&D {x}" and parsed[2][1] == "nan" and parsed[2][2] == "n/a"
    md = format_table(HEADER, ROWS, fmt="markdown").splitlines()
    assert len({len(line) for line in md}) == 1 and md[1].startswith("|-")
    plain = format_table(HEADER, ROWS).splitlines()
    assert len({len(line) for line in plain}) == 1
    with pytest.raises(ValueError):
        format_table(HEADER, ROWS, fmt="html")
    assert TABLE_FORMATS == ("plain", "markdown", "latex", "csv")


def test_every_table_command_takes_format(tmp_path, capsys):
    """correlate/agreement/compare accept --format latex (score: --table-format, as its
    --format names the input format)."""
    import json

    from dialeval.cli.main import main

    rows = [{"id": str(i), "system": "AB"[i % 2], "response": f"a b c {i}", "references": ["a b c d"],
             "ratings": {"overall": [i % 5, (i * 3) % 5]}} for i in range(12)]
    data = tmp_path / "s.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    scores = tmp_path / "scores.jsonl"
    assert main(["score", str(data), "--metrics", "bleu1,rouge_l", "--with-stats", "-o", str(scores),
                 "--table-format", "latex"]) == 0
    assert capsys.readouterr().out.startswith("\\begin{tabular}{lrrr}")
    assert main(["correlate", str(scores), "--human", "overall", "--n-boot", "50", "--format", "latex"]) == 0
    out = capsys.readouterr().out
    spec = re.match(r"\\begin\{tabular\}\{([lr]+)\}", out).group(1)
    assert spec.startswith("llllrr") and len(spec) == 8 and "\\end{tabular}" in out
    assert main(["compare", str(scores), "--n-resamples", "50", "--format", "csv"]) == 0
    out = capsys.readouterr().out
    assert "measure,A,B,score A,score B,B - A,p" in out
    # every line is a comment, blank, or a CSV record: pandas reads it with comment="#"
    assert all(line == "" or line.startswith("# ") or "," in line for line in out.splitlines())
