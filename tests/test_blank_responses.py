"""The degenerate-response policy: a blank response scores the floor of every metric, NaN only
where a score is undefined whatever the response, and every unscored row is said.

The shipped default models are used (packages/dialeval-models), so that what is checked is
what a user gets by a metric's name.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from conftest import REPO
from dialeval.errors import DialevalError
from dialeval.metrics.base import Batch
from dialeval.metrics.registry import list_metrics

SHIPPED = REPO / "packages" / "dialeval-models" / "src" / "dialeval_models"
CONTEXT = ["Do you like to cook?", "I do, mostly Italian food."]
REFERENCE = "Oh cool, what do you usually make?"
GOOD = "Nice! What's your favourite Italian dish to make?"

# the file: a reviewer ranks good > terse ("ok") > silent (nothing)
THREE_BOTS = [
    {"id": item, "system": system, "context": ctx, "response": response, "references": [ref]}
    for item, ctx, ref, good in [
        ("c1", CONTEXT, REFERENCE, GOOD),
        ("c2", ["I just got back from Paris."], "Welcome back! How was the trip?",
         "How was it? Did you get to see the Eiffel Tower?")]
    for system, response in [("good", good), ("terse", "ok"), ("silent", "")]
]


@pytest.fixture
def shipped(monkeypatch):
    if not (SHIPPED / "compose").is_dir():
        pytest.skip("the shipped default models are not in this checkout")
    monkeypatch.setenv("DIALEVAL_MODELS_DIR", str(SHIPPED))


def buildable():
    out = []
    for spec in list_metrics():
        try:
            out.append(spec.build())
        except (DialevalError, ImportError) as exc:   # an extra that is not installed
            print(f"skipping {spec.name}: {exc}")
    return out


@pytest.mark.slow
def test_every_metric_gives_a_blank_response_its_floor(shipped):
    metrics = buildable()
    assert len(metrics) >= 40, [m.name for m in metrics]
    batch = Batch([GOOD, "", "   \t"], [[REFERENCE]] * 3, [CONTEXT] * 3)
    for metric in metrics:
        out = metric.compute(batch)
        floor = metric.floor()
        assert floor is not None and math.isfinite(floor), metric.name
        assert out.sentence[1] == pytest.approx(floor, abs=1e-12), (metric.name, out.sentence, floor)
        assert out.sentence[2] == pytest.approx(floor, abs=1e-12), metric.name
        # the floor is the low end: a real response never scores below it
        assert out.sentence[0] >= floor - 1e-12, (metric.name, out.sentence[0], floor)
        low, high = metric.score_range if metric.score_range is not None else (None, None)
        if high is not None:
            assert out.sentence[0] <= high + 1e-9, metric.name


def test_nan_only_where_the_score_is_undefined_whatever_the_response(shipped):
    from dialeval.metrics.registry import build_metric

    batch = Batch(["", ""], [[], [REFERENCE]], [CONTEXT, []])
    sent = build_metric("sent_cosine").compute(batch).sentence
    assert math.isnan(sent[0]) and sent[1] == -1.0         # no reference: undefined; blank: floor
    coherence = build_metric("lm_coherence").compute(batch).sentence
    assert coherence[0] == 0.0 and math.isnan(coherence[1])   # no context: undefined


@pytest.mark.slow
def test_silent_ranks_last_on_every_metric(shipped):
    import dialeval

    names = [m.name for m in buildable()]
    result = dialeval.score(THREE_BOTS, names)
    for name in names:
        silent = result.systems["silent"][name]
        assert not math.isnan(silent), name
        assert silent < result.systems["good"][name], (name, result.systems)
        assert silent <= result.systems["terse"][name], (name, result.systems)


def test_unscored_rows_are_counted_and_named():
    import dialeval

    rows = [dict(r) for r in THREE_BOTS if r["system"] != "silent"]
    rows[2] = dict(rows[2], references=[])          # good/c2 without a reference

    with pytest.warns(UserWarning, match=r"bleu2: 1 of 4 rows unscored.*good: 1 of 2, no references \(c2\)"):
        result = dialeval.score(rows, ["bleu2", "distinct1"])
    assert result.scored["good"] == {"bleu2": 1, "distinct1": 2}
    assert result.summary()["rows"] == {"good": 2, "terse": 2}


def test_score_table_prints_scored_rows(tmp_path, capsys):
    from dialeval.cli.main import main

    rows = [dict(r) for r in THREE_BOTS]
    rows[0] = dict(rows[0], references=[])
    path = tmp_path / "part.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert main(["score", str(path), "--metrics", "bleu2,rouge_l"]) == 0
    out, err = capsys.readouterr()
    table = {line.split()[0]: line.split() for line in out.splitlines() if line.strip()}
    assert table["good"][1] == "1/2" and table["terse"][1] == "2"
    assert "bleu2: 1 of 6 rows unscored" in err and "good: 1 of 2, no references (c1)" in err


def test_compare_pairs_only_rows_both_systems_scored():
    from dialeval.meta.systems import compare_systems

    rows = []
    for i in range(12):
        rows.append({"id": f"t{i}", "system": "a", "scores": {"m": 0.5}})
        # system b is unscored on its first five items (NaN): its mean over the rest is higher
        rows.append({"id": f"t{i}", "system": "b", "scores": {"m": math.nan if i < 5 else 0.5 + 0.01 * i}})
    cmp = compare_systems(rows, metrics=["m"], baseline="a", pair_by="id", n_resamples=200)
    b = next(r for r in cmp.rows if r["system"] == "b" and r["measure"] == "m")
    assert b["n"] == 7 and b["n_paired"] == 7
    # the delta is over the 7 items both have: mean(0.5 + 0.01 i for i in 5..11) - 0.5 = 0.08
    assert b["delta"] == pytest.approx(0.08)
    assert any("different items" in w and "7 of 12" in w for w in cmp.warnings)


def test_a_response_in_another_script_is_said_once(shipped):
    import dialeval

    rows = [{"context": ["How are you?"], "response": "我不知道。", "references": ["fine thanks"]},
            {"context": ["How are you?"], "response": "我很好。", "references": ["fine thanks"]},
            {"context": ["How are you?"], "response": "Fine, and you?", "references": ["fine thanks"]}]
    with pytest.warns(UserWarning, match=r"2 response\(s\) written mostly in CJK script.*mme_rm") as seen:
        dialeval.score(rows, ["bleu2", "mme_rm"])
    assert sum("script" in str(w.message) for w in seen) == 1
    assert all("bleu2" not in str(w.message) for w in seen if "script" in str(w.message))


def test_script_detection():
    from dialeval.text.scripts import foreign_script

    assert foreign_script("我不知道。") == "CJK"
    assert foreign_script("Привет, как дела?") == "CYRILLIC"
    assert foreign_script("Café au lait, s'il vous plaît") is None     # Latin with accents
    assert foreign_script("... 123 !!") is None                        # no letters at all
    assert foreign_script("ok 好的好的") == "CJK"                        # 4 of 6 letters are Han
