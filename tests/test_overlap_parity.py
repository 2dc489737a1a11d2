"""Parity with the reference implementations (pycocoevalcap, vrama91 CIDEr) on ../shared/golden.

The golden files hold the reference implementations' own sentence and corpus values; the
tolerance is the one the golden README gives for these metrics (1e-9).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from dialeval.data.readers import read_parallel
from dialeval.data.sample import Sample
from dialeval.scoring import score

from conftest import golden_fixture_sets, DATA, GOLDEN, need

METRICS = ["bleu1", "bleu2", "bleu3", "bleu4", "rouge_l", "cider_d", "cider"]
TOL = 1e-9
DSTC6_REFS = ["original_refs.txt"] + [f"refgen_result{i}.txt" for i in range(1, 11)]


def _assert_matches(result, gold_mode, rows=None, system=None):
    for m in METRICS:
        got = result.sentence[m] if rows is None else result.sentence[m][rows]
        want = np.array(gold_mode[m]["sentence"])
        assert np.max(np.abs(got - want)) <= TOL, m
        corpus = result.corpus[m] if system is None else result.systems[system][m]
        assert abs(corpus - gold_mode[m]["corpus"]) <= TOL, m


@pytest.mark.parametrize("mode", ["multi", "max"])
def test_nlg_eval_fixtures(mode):
    for name, samples, case in golden_fixture_sets():
        _assert_matches(score(samples, METRICS, refs_mode=mode), case[mode])


@pytest.mark.parametrize("mode", ["multi", "max"])
def test_synthetic_2000x11(mode):
    rows = [json.loads(line) for line in need(GOLDEN / "synth-2000x11.jsonl").read_text().splitlines()]
    gold = json.loads((GOLDEN / "synth-2000x11.json").read_text())["sets"]["synth-2000x11"]
    samples = [Sample(id=str(i), response=r["hyp"], references=r["refs"]) for i, r in enumerate(rows)]
    _assert_matches(score(samples, METRICS, refs_mode=mode), gold[mode])


@pytest.fixture(scope="module")
def dstc6_samples():
    root = need(DATA / "dstc6-eval")
    hyps = [root / "hypotheses" / f"S_{k}.txt" for k in range(1, 21)]
    return read_parallel(hyps, [root / "references" / f for f in DSTC6_REFS])


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["multi", "max"])
def test_dstc6_all_systems(dstc6_samples, mode):
    gold = json.loads(need(GOLDEN / "dstc6.json").read_text())["systems"]
    result = score(dstc6_samples, METRICS, refs_mode=mode)
    for k in range(1, 21):
        system = f"S_{k}"
        rows = np.array([i for i, s in enumerate(dstc6_samples) if s.system == system])
        _assert_matches(result, gold[system][mode], rows=rows, system=system)


@pytest.mark.slow
def test_dstc6_organisers_table_through_the_cli(capsys):
    """`dialeval score --json` on the DSTC6 files gives BLEU-1..4, ROUGE-L and CIDEr(-D) of the
    organisers' table (made with nlg-eval) to its 6 decimals, for all 20 systems."""
    from dialeval.cli import main

    root = need(DATA / "dstc6-eval")
    table = (root / "objective_evaluation_results.txt").read_text().splitlines()
    header = table[0].split("\t")
    args = ["score", "--json", "--metrics", "bleu1,bleu2,bleu3,bleu4,rouge_l,cider_d"]
    for k in range(1, 21):
        args += ["--hyp", str(root / "hypotheses" / f"S_{k}.txt")]
    for name in DSTC6_REFS:
        args += ["--ref", str(root / "references" / name)]
    assert main(args) == 0
    systems = json.loads(capsys.readouterr().out)["systems"]
    names = {"Bleu_1": "bleu1", "Bleu_2": "bleu2", "Bleu_3": "bleu3", "Bleu_4": "bleu4",
             "ROUGE_L": "rouge_l", "CIDEr": "cider_d"}
    checked = 0
    for line in table[1:]:
        cells = line.split("\t")
        for col, name in names.items():
            want = cells[header.index(col)]
            assert f"{systems[cells[0]][name]:.6f}" == want, (cells[0], col)
            checked += 1
    assert checked == 120
