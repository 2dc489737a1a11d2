"""Public data set loaders: sizes, quirks and cross-checks against the sets' own files."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from conftest import DATA, need
from dialeval.data.datasets import DIALOGUE_ID, list_datasets, load_dataset
from dialeval.errors import DialevalError

SIZES = {"dstc6": 40000, "usr-tc": 360, "usr-pc": 300, "fed-turn": 375, "fed-dialogue": 125,
         "grade-dailydialog": 300, "grade-convai2": 600, "grade-empatheticdialogues": 300,
         "holistic-coherence": 200, "holistic-fluency": 200, "gupta": 500,
         "predictive-engagement": 600, "dstc9": 2200,
         # ConvAI2 wild-eval: the 3,113 scored train-safe dialogues less the 782 of a single turn;
         # DailyDialog++ test: 1,142 contexts x 15 replies
         "convai2-wild": 2331, "dailydialog-pp": 17130}


def test_registry_lists_every_loader():
    assert sorted(s.name for s in list_datasets()) == sorted(SIZES)
    with pytest.raises(DialevalError, match="unknown data set"):
        load_dataset("nope", ".")


@pytest.mark.parametrize("name", sorted(SIZES))
def test_loader_sizes_and_documentation(name):
    spec = next(s for s in list_datasets() if s.name == name)
    ds = load_dataset(name, need(DATA / spec.folder))
    assert len(ds.samples) == SIZES[name]
    assert set(ds.info.scales) == set(ds.info.qualities)
    assert len({s.id for s in ds.samples}) == len(ds.samples)
    for s in ds.samples:
        assert isinstance(s.response, str)
        for q, values in s.ratings.items():
            assert q in ds.info.qualities
            lo, hi = ds.info.scales[q]
            assert all(math.isnan(v) or lo <= v <= hi for v in values), (name, q, values)
        if ds.info.level != "system":
            assert s.meta.get(DIALOGUE_ID) is not None


def test_fed_free_text_ratings_become_nan():
    ds = load_dataset("fed-dialogue", need(DATA / "fed"))
    raw = json.loads((DATA / "fed" / "fed_data.json").read_text(encoding="utf-8"))
    raw = [r for r in raw if "response" not in r]
    strings = sum(isinstance(v, str) for r in raw for v in r["annotations"]["Error recovery"])
    nans = sum(math.isnan(v) for s in ds.samples for v in s.ratings["error_recovery"])
    assert strings > 0 and nans == strings
    assert all(len(s.ratings["error_recovery"]) == 5 for s in ds.samples)  # slots kept


def test_grade_raw_scores_average_to_published_means():
    for corpus, models in {"dailydialog": ["transformer_generator", "transformer_ranker"]}.items():
        ds = load_dataset(f"grade-{corpus}", need(DATA / "grade"))
        for model in models:
            path = DATA / "grade" / "human_score" / corpus / model / "human_score.txt"
            means = [float(v) for v in path.read_text().split()]
            ours = [s.human("coherence") for s in ds.samples if s.system == model]
            assert len(ours) == len(means) == 150
            assert np.allclose(ours, means, atol=0.05 + 1e-9)  # published to one decimal


def test_gupta_has_five_references_with_the_original_first():
    ds = load_dataset("gupta", need(DATA / "dailydialog-multiref-gupta"))
    assert all(len(s.references) == 5 for s in ds.samples)
    s = ds.samples[0]
    assert s.references[0] == "then tell me something about your background ."
    assert s.context[0].startswith("excuse me")


def test_usr_reference_and_exclusion():
    ds = load_dataset("usr-tc", need(DATA / "usr"), exclude_systems=("Original Ground Truth",))
    assert len(ds.samples) == 300
    assert all(len(s.references) == 1 for s in ds.samples)
    assert len(ds.samples[0].context) > 1  # "\n"-joined turns were split


def test_dstc6_human_means_are_system_level():
    ds = load_dataset("dstc6", need(DATA / "dstc6-eval"))
    assert len(ds.system_ratings) == 20 and "S_21" not in ds.system_ratings
    assert ds.system_ratings["S_1"]["overall"] == pytest.approx(3.3638)
    assert all(len(s.references) == 11 for s in ds.samples[:100])


def test_engagement_merges_annotator_rows():
    ds = load_dataset("predictive-engagement", need(DATA / "predictive-engagement"))
    assert all(len(s.ratings["engagement"]) == 3 for s in ds.samples)
    assert all(np.isfinite(s.meta["eng_score_meanpooling"]) for s in ds.samples)


def test_cp1252_fallback_and_bad_folder(tmp_path):
    from dialeval.data.datasets.base import read_text
    from dialeval.errors import InputError

    f = tmp_path / "x.csv"
    f.write_bytes("caf\u00e9 \u2019".encode("cp1252"))
    assert read_text(f) == "caf\u00e9 \u2019"
    with pytest.raises(InputError, match="missing file"):
        load_dataset("usr-tc", tmp_path)
