"""Silence strictly last (issue 54): a blank reply scores the floor of a learned metric and every
real reply, however weak, scores strictly above it, so a system that sometimes answers nothing
ranks below one that answers "ok". The clips that used to put weak replies on the floor (USL-H's
for `mme_*`, the holistic paper's bound for `lm_*`; ADEM's linear score could even fall under
it) are followed by one squashing map, `metrics.softfloor.lift`, that lifts the bottom of each
scale above the floor; its properties are checked here, then the three-bot ranking on the
shipped default models.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import REPO
from dialeval.metrics.softfloor import KNEE, SIGNATURE_FIELD, lift, lift_range, without_field

SHIPPED = REPO / "packages" / "dialeval-models" / "src" / "dialeval_models"

finite = st.floats(allow_nan=False, allow_infinity=False, min_value=-1e300, max_value=1e300)


# -- the map -----------------------------------------------------------------------------------
@settings(max_examples=300, deadline=None)
@given(st.lists(finite, min_size=1, max_size=40))
def test_every_finite_value_lands_strictly_above_the_floor(values):
    out = lift(np.array(values))
    assert np.all(out > 0.0), (values, out)
    assert np.all(out <= np.maximum(np.array(values), KNEE))


@settings(max_examples=300, deadline=None)
@given(finite, finite)
def test_the_map_keeps_the_order_the_clip_kept(a, b):
    lo, hi = min(a, b), max(a, b)
    assert lift(lo) <= lift(hi)
    # what the clip at 0 told apart stays apart, the same way round (past float resolution:
    # the tail's slope at z is knee^2 / (2 knee - z)^2, at least 2.5e-9 from -1000 up)
    if max(lo, 0.0) < max(hi, 0.0) and hi - lo > 1e-6 and lo > -1e3:
        assert lift(lo) < lift(hi)
    # and the map never moves a value more than knee / 2 from the clip at 0 it replaces
    for v in (lo, hi):
        assert abs(float(lift(v)) - max(v, 0.0)) <= KNEE / 2 + 1e-15


def test_the_map_by_hand():
    z = np.array([-np.inf, -1e300, -1.0, -0.05, 0.0, 0.025, KNEE, 0.3, 1.0, 7.0, np.nan])
    out = lift(z)
    assert out[0] == 0.0                                   # -inf alone reaches the floor
    assert 0.0 < out[1] < 1e-300                           # a hyperbola does not underflow
    # below the knee: 0.05^2 / (0.1 - z)
    np.testing.assert_allclose(out[2:6], [0.0025 / 1.1, 0.0025 / 0.15, 0.025, 0.0025 / 0.075])
    # from the knee up: the value itself, bit for bit
    assert list(out[6:10]) == [KNEE, 0.3, 1.0, 7.0]
    assert math.isnan(out[10])
    # strictly increasing on a fine grid through the knee, and continuous there
    grid = np.linspace(-3.0, 0.2, 20001)
    assert np.all(np.diff(lift(grid)) > 0)
    assert lift(KNEE - 1e-9) == pytest.approx(KNEE, abs=2e-9)
    with pytest.raises(ValueError):
        lift(0.0, knee=0.0)


def test_lift_range_keeps_the_floor_and_the_top():
    # ADEM's 1-5 scale, top left open: 1.2 and above untouched, under it squashed into (1, 1.2)
    x = np.array([-3.0, 0.9, 1.0, 1.1, 1.2, 3.3, 5.6])
    out = lift_range(x, 1.0, 5.0, top=False)
    assert np.all(out[:4] > 1.0) and np.all(out[:4] < 1.2) and np.all(np.diff(out) > 0)
    assert list(out[4:]) == [1.2, 3.3, 5.6]
    above = np.random.default_rng(0).uniform(1.2, 5.0, 1000)
    assert np.array_equal(lift_range(above, 1.0, 5.0, top=False), above)      # bit for bit
    # a closed top reads a value above it as the top
    assert lift_range(np.array([9.0]), 1.0, 5.0)[0] == 5.0
    with pytest.raises(ValueError):
        lift_range(x, 2.0, 2.0)


def test_the_normalisations_share_the_map():
    from dialeval.metrics.lm.metric import normalise
    from dialeval.metrics.mme.normalise import apply_range

    # the map comes after each published normalisation: USL-H's clip kept, so the new score is a
    # strictly increasing function of the old one (rankings and ties what they were); the LM's
    # eq. 2 unclipped, so it is the paper's value mapped from the bound up and keeps the order
    # of the raw scores under it, where the paper tied them at 0
    raw = np.array([-50.0, -9.0, -4.0, -3.9, -1.0, 0.0])
    paper = (np.maximum(-4.0, raw) + 4.0) / 4.0
    lm = normalise(raw, -4.0)
    np.testing.assert_array_equal(lm, lift((raw + 4.0) / 4.0))
    np.testing.assert_array_equal(lm[raw >= -4.0], lift(paper)[raw >= -4.0])
    assert np.all(np.diff(lm) > 0) and np.all(lm[raw < -4.0] < KNEE / 2)
    x = np.array([0.0, 0.2, 0.3, 0.31, 0.5, 0.99])
    usl = (np.clip(x, 0.3, 0.8) - 0.3) / 0.5
    np.testing.assert_array_equal(apply_range(x, 0.3, 0.8), lift(usl))
    for old, new in ((paper, lm), (usl, apply_range(x, 0.3, 0.8))):
        assert np.all(new > 0) and np.all(new - old <= KNEE / 2 + 1e-15)
        assert np.array_equal(np.argsort(old, kind="stable"), np.argsort(new, kind="stable"))
    assert np.all(apply_range(x, 0.3, 0.8) >= usl)
    new = apply_range(x, 0.3, 0.8)
    assert np.array_equal(usl[:, None] == usl[None, :], new[:, None] == new[None, :])


def test_a_signature_read_without_the_map():
    sig = "mme_fm|tok:whitespace|model:mme@7ffbfe1a2c64|norm:usl|squash:knee0.05|encoder:x|version:0.1.0"
    assert SIGNATURE_FIELD == ("squash", "knee0.05")
    assert without_field(sig) == "mme_fm|tok:whitespace|model:mme@7ffbfe1a2c64|norm:usl|encoder:x|version:0.1.0"
    assert without_field(without_field(sig)) == without_field(sig)


# -- the shipped learned defaults ----------------------------------------------------------------
# four items; a reviewer ranks good > terse ("ok") > silent (nothing)
ITEMS = [
    (["Do you like to cook?", "I do, mostly Italian food."], "Oh cool, what do you usually make?",
     "Nice! What's your favourite Italian dish to make?"),
    (["I just got back from Paris."], "Welcome back! How was the trip?",
     "How was it? Did you get to see the Eiffel Tower?"),
    (["what do you do for a living ?"], "i teach maths at a high school . and you ?",
     "i 'm a nurse at the city hospital , mostly night shifts . what about you ?"),
    (["did you watch the game last night ?", "no , i missed it . who won ?"], "the lakers won by ten points .",
     "the lakers won in overtime , it was a great game ."),
]
THREE_BOTS = [
    {"id": f"i{k}", "system": system, "context": ctx, "response": response, "references": [ref]}
    for k, (ctx, ref, good) in enumerate(ITEMS)
    for system, response in [("good", good), ("terse", "ok"), ("silent", "")]
]
# the learned metrics whose scale goes through the map, and the compositions of them
SQUASHED = ["adem", "c_adem", "r_adem", "mme_fm", "mme_rm", "mme_tcm", "mme_em", "mme_sm_nll", "mme_sm_nce",
            "mme_sm_ppl", "mme_rm_cross", "lm_coherence", "lm_fluency"]
COMPOSED = ["compose", "compose_ref"]
# specificity per token (nce, ppl) rates a one-word reply as very specific whatever its floor:
# "ok" above a good reply is what those two measure, not a matter of the scale's bottom
OK_BELOW_GOOD_EXEMPT = {"mme_sm_nce", "mme_sm_ppl"}


@pytest.fixture(scope="module")
def scored():
    if not (SHIPPED / "compose").is_dir():
        pytest.skip("the shipped default models are not in this checkout")
    import dialeval
    from dialeval.metrics.compose import ComposeSignatureWarning

    mp = pytest.MonkeyPatch()
    mp.setenv("DIALEVAL_MODELS_DIR", str(SHIPPED))
    try:
        with warnings.catch_warnings():
            # the shipped compositions were fitted before the map: that is not a changed member
            warnings.simplefilter("error", ComposeSignatureWarning)
            yield dialeval.score(THREE_BOTS, SQUASHED + COMPOSED)
    finally:
        mp.undo()


def _rows(result, metric, system):
    return np.array([v for v, s in zip(result.sentence[metric], result.samples) if s.system == system])


@pytest.mark.parametrize("metric", SQUASHED + COMPOSED)
def test_silence_ranks_strictly_last(scored, metric):
    silent, terse, good = (_rows(scored, metric, s) for s in ("silent", "terse", "good"))
    floor = silent[0]
    assert np.all(silent == floor)
    # every real reply, item by item, strictly above the blank one
    assert np.all(terse > floor) and np.all(good > floor), (metric, floor, terse, good)
    means = scored.systems
    assert means["silent"][metric] < means["terse"][metric], (metric, means)
    if metric not in OK_BELOW_GOOD_EXEMPT:
        assert means["terse"][metric] < means["good"][metric], (metric, means)


@pytest.mark.parametrize("metric", SQUASHED + COMPOSED)
def test_the_signature_names_the_map(scored, metric):
    assert "|squash:knee0.05|" in str(scored.signatures[metric]), scored.signatures[metric]


def test_raw_scales_are_left_alone(monkeypatch):
    """`--mme-norm none` and the `_raw` LM metrics give the model's own numbers: no map, no entry."""
    if not (SHIPPED / "mme").is_dir():
        pytest.skip("the shipped default models are not in this checkout")
    from dialeval.metrics.registry import build_metric

    monkeypatch.setenv("DIALEVAL_MODELS_DIR", str(SHIPPED))
    for metric in (build_metric("mme_fm", mme_norm="none"), build_metric("lm_fluency_raw")):
        assert "squash" not in str(metric.signature())
