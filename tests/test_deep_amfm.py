"""Deep AM-FM (metrics/lm/deep_amfm.py): each half checked against a number computed another way.

The LM is the shipped default `lm` (the SmolLM2 LoRA adapter) and the encoder the
packaged all-MiniLM-L6-v2; both come with install.sh, and the tests skip without them.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("sentence_transformers")

from dialeval import score  # noqa: E402
from dialeval.models.defaults import default_model_dir  # noqa: E402

LM = default_model_dir("lm")     # read at collection, before conftest hides the defaults per test
if LM is None:
    pytest.skip("the default models package (install.sh) is not installed", allow_module_level=True)

SAMPLES = [
    {"id": "a", "response": "i would love to go to the beach tomorrow .",
     "references": ["let us go to the beach tomorrow .", "i am busy tomorrow , sorry ."]},
    {"id": "b", "response": "the weather is nice",
     "references": ["the weather is nice"]},
    {"id": "c", "response": "what time does the train leave ?",
     "references": ["it leaves at nine .", "", "nine o'clock , i think ."]},
    {"id": "d", "response": "", "references": ["anything at all ."]},
    {"id": "e", "response": "no references here", "references": []},
]


@pytest.fixture(scope="module")
def scored():
    return score(SAMPLES, ["deep_am", "deep_fm", "deep_amfm", "sent_cosine"], lm_model=LM)


def test_deep_am_under_max_is_sent_cosine(scored):
    """Not a copy held close: under max, deep_am is computed by sent_cosine itself."""
    np.testing.assert_array_equal(scored.sentence["deep_am"], scored.sentence["sent_cosine"])


def test_deep_fm_is_the_likelihood_ratio_of_lm_fluency_raw(scored):
    """exp(-|f(h) - f(r)|), f = lm_fluency_raw computed for each text on its own, max over the
    non-empty references; no references gives NaN, and an empty response deep_fm's floor, 0."""
    texts = sorted({t for s in SAMPLES for t in [s["response"], *s["references"]] if t})
    f = dict(zip(texts, score([{"response": t} for t in texts], ["lm_fluency_raw"], lm_model=LM).sentence["lm_fluency_raw"]))
    expected = []
    for s in SAMPLES:
        pairs = [math.exp(-abs(f[s["response"]] - f[r])) for r in s["references"] if r and s["response"]]
        live_refs = any(r.strip() for r in s["references"])
        expected.append(max(pairs) if pairs else 0.0 if live_refs and not s["response"].strip() else math.nan)
    # the LM's log-probabilities are float32 sums: with two or more torch threads a text's value
    # can move in its last float32 bits with the batch it runs in (measured: 5e-7 relative), and
    # the two calls above batch the texts differently; with one thread they agree to 1e-9
    np.testing.assert_allclose(scored.sentence["deep_fm"], expected, rtol=1e-5, equal_nan=True)
    assert scored.sentence["deep_fm"][1] == 1.0        # the response is its reference


def test_deep_amfm_is_the_lambda_mix(scored):
    mix = 0.8 * scored.sentence["deep_am"] + 0.2 * scored.sentence["deep_fm"]
    np.testing.assert_allclose(scored.sentence["deep_amfm"], mix, rtol=1e-12, equal_nan=True)
    half = score(SAMPLES, ["deep_amfm"], amfm_lambda=0.5, lm_model=LM).sentence["deep_amfm"]
    np.testing.assert_allclose(half, 0.5 * scored.sentence["deep_am"] + 0.5 * scored.sentence["deep_fm"],
                               rtol=1e-12, equal_nan=True)


def test_reference_rules(scored):
    mean = score(SAMPLES, ["deep_am", "deep_fm"], am_refs="mean", fm_refs="mean", lm_model=LM).sentence
    centroid = score(SAMPLES, ["deep_am"], am_refs="centroid").sentence["deep_am"]
    for rule in (mean["deep_am"], mean["deep_fm"]):
        assert rule[0] < 1.0 and not math.isnan(rule[0])
    assert mean["deep_am"][0] <= scored.sentence["deep_am"][0] + 1e-12
    assert mean["deep_fm"][0] <= scored.sentence["deep_fm"][0] + 1e-12
    # one non-empty reference: every rule gives the same number
    assert centroid[1] == pytest.approx(scored.sentence["deep_am"][1], abs=1e-6)
    assert mean["deep_am"][1] == pytest.approx(scored.sentence["deep_am"][1], abs=1e-12)


def test_shards_give_the_same_bits(scored):
    again = score(SAMPLES, ["deep_am", "deep_fm", "deep_amfm"], chunk_size=2, lm_model=LM)
    for m in ("deep_am", "deep_fm", "deep_amfm"):
        np.testing.assert_array_equal(again.sentence[m], scored.sentence[m])


def test_signature_names_encoder_and_lm(scored):
    sig = str(scored.signatures["deep_amfm"])
    assert "encoder:all-MiniLM-L6-v2" in sig and "|model:lm@" in sig and "|base:smollm2-135m-instruct:" in sig and "lambda:0.8" in sig
