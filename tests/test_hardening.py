"""Issue 15's traps, each as a user meets it: one-line errors instead of tracebacks, no silent
wrong numbers, files that honour the umask, help on every option."""

from __future__ import annotations

import argparse
import json
import math
import os
import stat

import numpy as np
import pytest

from conftest import DATA, need
from dialeval.cli import main
from dialeval.errors import DialevalError


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DIALEVAL_CACHE_DIR", str(tmp_path / "cache"))


def one_error(capsys, argv) -> str:
    """Run the CLI expecting exit 2 with one `dialeval: error:` line; return that line."""
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if "error:" in line]
    assert len(lines) == 1, err
    return lines[0]


# -- crashes that became one line ------------------------------------------------------------

def test_agreement_without_per_rater_scores(capsys):
    line = one_error(capsys, ["agreement", "dstc6", str(need(DATA / "dstc6-eval"))])
    assert "only system-level means" in line


def test_agreement_threshold_dropping_every_rater(capsys):
    line = one_error(capsys, ["agreement", "usr-tc", str(need(DATA / "usr")), "--drop-below", "0.4",
                              "--qualities", "overall,natural", "--n-rep", "5"])
    assert "drops every rater" in line and "0.268" in line


def test_evaluate_reference_metric_on_a_set_without_references(capsys):
    line = one_error(capsys, ["evaluate", "fed-dialogue", str(need(DATA / "fed")), "--metrics", "bleu2",
                              "--n-boot", "10"])
    assert "fed-dialogue has no references" in line


def test_empty_groups_and_empty_rating_matrices_are_nan():
    from dialeval.meta.agreement import agreement, fleiss_kappa
    from dialeval.meta.correlation import correlate, group_means

    names, means = group_means(np.zeros((2, 0)), [])
    assert names == [] and means.shape == (2, 0)
    assert math.isnan(fleiss_kappa(np.full((3, 2), np.nan)))
    assert agreement(np.zeros((4, 0))).raters == 0
    with pytest.warns(UserWarning):
        rows = correlate([math.nan] * 4, [1, 2, 3, 4], level="dialogue", dialogues=list("aabb"), n_boot=5)
    assert all(math.isnan(r.r) and r.n == 0 for r in rows)


# -- correlate -------------------------------------------------------------------------------

@pytest.fixture
def scores_file(tmp_path):
    rng = np.random.default_rng(0)
    rows = []
    for i in range(40):
        h = float(rng.integers(1, 6))
        rows.append({"id": str(i), "scores": {"a": h + float(rng.normal()), "b": float(rng.normal())},
                     "ratings": {"overall": [h]}})
    path = tmp_path / "scores.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_comparison_uses_the_requested_correlation(scores_file, capsys):
    assert main(["correlate", str(scores_file), "--human", "overall", "--method", "spearman",
                 "--n-boot", "20", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {c["method"] for c in out["comparisons"]} == {"spearman"}
    from dialeval.meta.correlation import correlation

    rows = [json.loads(line) for line in scores_file.read_text().splitlines()]
    a = [r["scores"]["a"] for r in rows]
    human = [r["ratings"]["overall"][0] for r in rows]
    assert out["comparisons"][0]["r_a"] == pytest.approx(correlation(a, human, "spearman")[0])


def test_correlate_refuses_absent_metrics_and_negative_resamples(scores_file, capsys):
    line = one_error(capsys, ["correlate", str(scores_file), "--human", "overall", "--metrics", "bleu9"])
    assert "no scores for bleu9" in line and "it has a, b" in line
    line = one_error(capsys, ["correlate", str(scores_file), "--human", "overall", "--n-boot", "-5"])
    assert "--n-boot" in line
    from dialeval.meta.correlation import correlate

    with pytest.raises(DialevalError, match="n_boot"):
        correlate([1, 2, 3], [1, 2, 3], n_boot=-1)


# -- USR's ground truth ----------------------------------------------------------------------

def test_usr_leaves_out_the_reference_system_by_default(capsys):
    """The issue's numbers: BLEU-2 Pearson 0.459 with the ground truth, 0.286 without."""
    path = str(need(DATA / "usr"))
    base = ["evaluate", "usr-tc", path, "--metrics", "bleu2", "--qualities", "overall", "--method",
            "pearson", "--n-boot", "0", "--json"]
    assert main(base) == 0
    captured = capsys.readouterr()
    assert "leaving out 'Original Ground Truth'" in captured.err
    row = json.loads(captured.out)["correlations"][0]
    assert row["n"] == 300 and row["r"] == pytest.approx(0.286, abs=5e-4)
    assert main(base + ["--keep-reference-systems"]) == 0
    row = json.loads(capsys.readouterr().out)["correlations"][0]
    assert row["n"] == 360 and row["r"] == pytest.approx(0.459, abs=5e-4)


def test_unknown_excluded_system_lists_the_systems(capsys):
    line = one_error(capsys, ["evaluate", "usr-pc", str(need(DATA / "usr")), "--exclude-system", "Foo"])
    assert "'Seq2Seq'" in line and "'Original Ground Truth'" in line


def test_datasets_describes_references_qualities_and_systems(capsys):
    assert main(["datasets", "usr-tc", str(need(DATA / "usr")), "--json"]) == 0
    (d,) = json.loads(capsys.readouterr().out)
    assert d["references"] == {"samples_with": 360, "min": 1, "max": 1}
    assert d["qualities"]["overall"]["scale"] == [1, 5] and d["level"] == "turn"
    assert d["reference_systems"] == ["Original Ground Truth"] and len(d["systems"]) == 6


# -- sweeps and JSON ---------------------------------------------------------------------------

def test_sweep_needs_three_systems(tmp_path, capsys):
    data = tmp_path / "two.jsonl"
    data.write_text("".join(json.dumps({"response": "a b", "references": ["a c"], "system": s,
                                        "ratings": {"overall": [3]}}) + "\n" for s in "AB"))
    line = one_error(capsys, ["sweep", "amfm", str(data), "--crossfit", "2", "-o", str(tmp_path / "out")])
    assert "at least 3 systems" in line and "has 2 (A, B)" in line
    assert not (tmp_path / "out").exists()


def test_sweep_summary_is_valid_json_with_undefined_correlations(tmp_path):
    pytest.importorskip("matplotlib")
    from dialeval.metrics.amfm.sweep import write_outputs

    rows = [{"training": "t", "sweep": s, "dims": 5, "order": 2, "lambda": 0.5, "pearson": math.nan,
             "p_value": math.nan} for s in ("dims", "order", "lambda")]
    write_outputs(str(tmp_path), rows, [{"training": "t", "am": math.nan, "fm": 0.5}])

    def refuse(constant):
        raise AssertionError(f"bare {constant} in JSON")
    summary = json.loads((tmp_path / "amfm_summary.json").read_text(), parse_constant=refuse)
    assert summary == [{"training": "t", "am": None, "fm": 0.5}]


def test_train_lm_refuses_a_corpus_too_small_for_normalisation_bounds(tmp_path, capsys):
    pytest.importorskip("torch")
    corpus = tmp_path / "tiny.txt"
    corpus.write_text("hi __eou__ hello there __eou__\nhow are you __eou__ fine thanks __eou__\n")
    line = one_error(capsys, ["train", "lm", "--corpus", str(corpus), "-o", str(tmp_path / "m"),
                              "--max-steps", "1"])
    assert "no reference pairs for the normalisation bounds" in line and "has 2 pairs" in line
    assert not (tmp_path / "m").exists()


# -- files and resources -----------------------------------------------------------------------

@pytest.mark.parametrize("mask,mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_output_files_honour_the_umask(tmp_path, mask, mode):
    from dialeval.data.writers import write_jsonl

    old = os.umask(mask)
    try:
        write_jsonl(tmp_path / "out.jsonl", [{"a": 1}])
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "out.jsonl").st_mode) == mode


def test_default_threads(monkeypatch):
    from dialeval.models import threads

    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    assert 1 <= threads.default_threads() <= threads.cpu_count()
    monkeypatch.setattr(os, "getloadavg", lambda: (threads.cpu_count() + 3.0, 0.0, 0.0))
    assert threads.idle_cores() == 1
    monkeypatch.setattr(os, "getloadavg", lambda: (0.0, 0.0, 0.0))
    assert threads.idle_cores() == threads.cpu_count()
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    assert threads.default_threads() == 3


# -- the command line itself --------------------------------------------------------------------

def test_every_option_of_every_command_has_help():
    from dialeval.cli.main import build_parser

    missing = []

    def walk(parser, path):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                missing.extend(f"{' '.join(path)} {a.dest}" for a in action._choices_actions if not a.help)
                for name, sub in action.choices.items():
                    walk(sub, path + [name])
            elif not action.help and not isinstance(action, argparse._HelpAction):
                missing.append(f"{' '.join(path)} {action.option_strings or action.dest}")
    walk(build_parser(), ["dialeval"])
    assert not missing, missing


def test_top_level_help_describes_the_tool(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert "evaluation of dialogue responses" in out and "examples:" in out


def test_wide_system_table_is_transposed(tmp_path):
    from dialeval.cli.main import system_table
    from dialeval.scoring import score

    records = [{"response": "a b c", "references": ["a b d"], "system": s} for s in "XY"]
    result = score(records, ["bleu1", "bleu2", "bleu3", "bleu4", "rouge_l"], progress=False)
    wide = system_table(result, width=1000)
    assert wide.splitlines()[0].split()[:3] == ["system", "n", "bleu1"]
    narrow = system_table(result, width=40)
    lines = narrow.splitlines()
    assert lines[0].split() == ["metric", "X", "Y", "(all)"]
    assert [line.split()[0] for line in lines[1:]] == ["n", "bleu1", "bleu2", "bleu3", "bleu4", "rouge_l"]
    assert lines[2].split()[1:] == [f"{result.systems[s]['bleu1']:.4f}" for s in "XY"] + \
        [f"{result.corpus['bleu1']:.4f}"]


def test_library_warnings_print_as_one_line(tmp_path, capsys):
    vectors = tmp_path / "v.txt"
    vectors.write_text("hello 0 1 1\nworld 1 0 0\n")
    data = tmp_path / "in.jsonl"
    data.write_text(json.dumps({"response": "hello zzz", "references": ["world"]}) + "\n")
    assert main(["score", str(data), "--metrics", "emb_average", "--word-vectors", str(vectors), "--json"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err == ["dialeval: warning: word vectors: 1 token out of vocabulary (case lower)"]
