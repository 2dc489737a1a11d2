"""METEOR parity with the METEOR 1.5 jar (through nlg-eval's wrapper) on ../shared/golden.

The golden stats files hold the jar's 23 statistics per segment, so the aligner is checked
field by field (lengths, function words, per-stage matches, chunks), not only by score.
Needs METEOR's data files (an installed pycocoevalcap==1.2); skips otherwise. The 20-system
DSTC6 run is measured by the closing note of the METEOR issue; here S_1 and S_20 (whose
stats are golden) are checked, in both reference modes.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from dialeval.data.readers import read_parallel
from dialeval.data.sample import Sample
from dialeval.metrics.overlap.meteor import resources as meteor_resources
from dialeval.scoring import score

from conftest import golden_fixture_sets, DATA, GOLDEN, need

DSTC6_REFS = ["original_refs.txt"] + [f"refgen_result{i}.txt" for i in range(1, 11)]
TOL = 1e-12


@pytest.fixture(scope="module", autouse=True)
def _resources():
    try:
        meteor_resources.locate(None)
    except meteor_resources.MeteorResourceError as exc:
        pytest.skip(str(exc))


def _golden_stats(name: str, key: str, value: str) -> np.ndarray:
    rows = [json.loads(x) for x in need(GOLDEN / name).read_text().splitlines()]
    rows = sorted((r for r in rows if r.get(key) == value), key=lambda r: r["index"])
    return np.array([[float(v) for v in r["stats"].split()] for r in rows])


def _check(result, gold_mode, rows=None, system=None):
    got = result.sentence["meteor"] if rows is None else result.sentence["meteor"][rows]
    want = np.array(gold_mode["meteor"]["sentence"])
    assert np.max(np.abs(got - want)) <= TOL
    corpus = result.corpus["meteor"] if system is None else result.systems[system]["meteor"]
    assert abs(corpus - gold_mode["meteor"]["corpus"]) <= TOL


@pytest.mark.parametrize("mode", ["multi", "max"])
def test_nlg_eval_fixtures(mode):
    for name, samples, case in golden_fixture_sets():
        result = score(samples, ["meteor"], refs_mode=mode)
        _check(result, case[mode])
        if mode == "multi":
            np.testing.assert_array_equal(result.stats["meteor"][:, :23],
                                          _golden_stats("nlg-eval-fixtures-meteor-stats.jsonl", "set", name))


@pytest.fixture(scope="module")
def synth_samples():
    rows = [json.loads(x) for x in need(GOLDEN / "synth-2000x11.jsonl").read_text().splitlines()]
    return [Sample(id=str(i), response=r["hyp"], references=r["refs"]) for i, r in enumerate(rows)]


@pytest.mark.parametrize("mode", ["multi", "max"])
def test_synthetic_2000x11(synth_samples, mode):
    gold = json.loads((GOLDEN / "synth-2000x11.json").read_text())["sets"]["synth-2000x11"]
    result = score(synth_samples, ["meteor"], refs_mode=mode)
    _check(result, gold[mode])
    if mode == "multi":
        want = _golden_stats("synth-meteor-stats.jsonl", "set", "synth-2000x11")
        np.testing.assert_array_equal(result.stats["meteor"][:, :23], want)


@pytest.fixture(scope="module")
def dstc6_two():
    root = need(DATA / "dstc6-eval")
    return read_parallel([root / "hypotheses" / f"S_{k}.txt" for k in (1, 20)],
                         [root / "references" / f for f in DSTC6_REFS])


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["multi", "max"])
def test_dstc6_s1_s20(dstc6_two, mode):
    gold = json.loads(need(GOLDEN / "dstc6.json").read_text())["systems"]
    result = score(dstc6_two, ["meteor"], refs_mode=mode)
    for system in ("S_1", "S_20"):
        rows = np.array([i for i, s in enumerate(dstc6_two) if s.system == system])
        _check(result, gold[system][mode], rows=rows, system=system)
        if mode == "multi":
            want = _golden_stats("dstc6-meteor-stats.jsonl", "system", system)
            np.testing.assert_array_equal(result.stats["meteor"][rows, :23], want)
