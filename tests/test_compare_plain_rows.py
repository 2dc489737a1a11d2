"""Issue 21, item 11: `compare` and `report` read a plain `score -o` / `evaluate -o` file: the
statistics rows corpus BLEU/METEOR resample are recomputed from the rows' response and
references, with a note, and give what `--with-stats` gives."""

from __future__ import annotations

import json

import pytest

import threebots
from dialeval.errors import DialevalError
from dialeval.meta import systems as C


def _rows(path):
    from dialeval.meta.evaluate import read_scores

    return read_scores(path)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    from dialeval.cli.main import main

    tmp = tmp_path_factory.mktemp("plain")
    data = threebots.write(tmp / "bots.jsonl")
    plain, stats = tmp / "plain.jsonl", tmp / "stats.jsonl"
    metrics = "bleu4,meteor,rouge_l"
    assert main(["score", str(data), "--metrics", metrics, "-o", str(plain)]) == 0
    assert main(["score", str(data), "--metrics", metrics, "--with-stats", "-o", str(stats)]) == 0
    assert "stats" not in json.loads(plain.read_text().splitlines()[0])
    return data, plain, stats


def test_plain_file_compares_as_the_with_stats_file(files):
    _, plain, stats = files
    a = C.compare_systems(_rows(plain), baseline="bot_a", n_resamples=300)
    b = C.compare_systems(_rows(stats), baseline="bot_a", n_resamples=300)
    assert a.measures["bleu4"]["kind"] == "corpus-stats" == a.measures["meteor"]["kind"]
    keys = ("score", "ci_low", "ci_high", "delta", "p", "n_paired", "mark")
    assert [[r.get(k) for k in keys] for r in a.rows] == [[r.get(k) for k in keys] for r in b.rows]
    assert [n for n in a.notes if "recomputed" in n] == [
        f"{m}: the file has no statistics rows; recomputed from its responses and references "
        "with the default options (they give the file's sentence scores)" for m in ("bleu4", "meteor")]
    assert not any("recomputed" in n for n in b.notes)


def test_report_and_compare_cli_take_a_plain_file(files, tmp_path, capsys):
    from dialeval.cli.main import main

    _, plain, _ = files
    capsys.readouterr()
    assert main(["compare", str(plain), "--baseline", "bot_a", "--n-resamples", "100"]) == 0
    captured = capsys.readouterr()
    assert "dialeval: note: bleu4: the file has no statistics rows; recomputed" in captured.err
    assert "note: meteor: the file has no statistics rows" in captured.out
    page = tmp_path / "r.html"
    assert main(["report", str(plain), "-o", str(page), "--n-boot", "20", "--n-resamples", "20"]) == 0
    assert "recomputed from its responses and references" in page.read_text(encoding="utf-8")


def test_evaluate_output_file_compares(files, tmp_path, capsys):
    from dialeval.cli.main import main

    data, _, stats = files
    out = tmp_path / "ev.jsonl"
    assert main(["evaluate", str(data), "--metrics", "bleu4,rouge_l", "--n-boot", "0",
                 "-o", str(out)]) == 0
    capsys.readouterr()
    a = C.compare_systems(_rows(out), baseline="bot_a", n_resamples=200)
    b = C.compare_systems(_rows(stats), metrics=["bleu4", "rouge_l"], baseline="bot_a", n_resamples=200)
    assert [(r["score"], r.get("p")) for r in a.rows] == [(r["score"], r.get("p")) for r in b.rows]


def test_a_file_scored_another_way_is_refused(files, tmp_path):
    from dialeval.cli.main import main

    data, _, _ = files
    other = tmp_path / "ptb.jsonl"
    assert main(["score", str(data), "--metrics", "bleu4", "--tokenize", "ptb-lower", "-o", str(other)]) == 0
    rows = _rows(other)
    # the bots' texts are lower case without punctuation, so ptb-lower scores them as the
    # default does: make one response differ under the two tokenizers
    rows[0]["response"] = "I am FINE thank you"
    with pytest.raises(DialevalError, match=r"bleu4: .*recomputing.*line 1.*--with-stats"):
        C.compare_systems(rows)
    bare = [{k: v for k, v in r.items() if k not in ("response",)} for r in _rows(other)]
    with pytest.raises(DialevalError, match="--with-stats"):
        C.compare_systems(bare)
