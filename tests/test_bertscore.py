"""BERTScore against the `bert-score` package (0.3.13) run on the same local folder.

bert-score is given the folder as its model type and the layer as `num_layers`, with its fast
tokenizer (the backbone module reads texts with the fast one); both must agree within 1e-6 on P,
R and F, with and without idf, and with rescaling when both use our DailyDialog baseline.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("sentence_transformers")
bert_score = pytest.importorskip("bert_score", reason="bert-score (the dev extra) is not installed")

from dialeval import score  # noqa: E402
from dialeval.metrics.embedding.bertscore import load_baselines, resolve_model  # noqa: E402

CANDS = ["i would love to go to the beach tomorrow .", "the weather is nice",
         "what time does the train leave ?", "Sure! See you at 9.", "no idea what you mean"]
REFS = [["let us go to the beach tomorrow .", "i am busy tomorrow , sorry ."], ["the weather is nice today"],
        ["it leaves at nine .", "nine o'clock , i think ."], ["ok, nine it is"],
        ["what do you mean ?", "i mean the party .", "never mind"]]
SAMPLES = [{"response": c, "references": r} for c, r in zip(CANDS, REFS)]
METRICS = ["bertscore_p", "bertscore_r", "bertscore_f"]


def theirs(folder, layer, **kw):
    p, r, f = bert_score.score(CANDS, REFS, model_type=folder, num_layers=layer, use_fast_tokenizer=True,
                               batch_size=4, device="cpu", **kw)
    return {"bertscore_p": p.numpy(), "bertscore_r": r.numpy(), "bertscore_f": f.numpy()}


def folder_of(name):
    try:
        return resolve_model(name)[0]
    except Exception as exc:  # MPNet is prepared by install.sh; without it the row is skipped
        pytest.skip(f"{name} backbone not available: {exc}")


@pytest.mark.slow
@pytest.mark.parametrize("name,layer", [("minilm", 4), ("minilm", 6), ("mpnet", 8)])
@pytest.mark.parametrize("idf", [False, True])
def test_equals_bert_score(name, layer, idf):
    folder = folder_of(name)
    ours = score(SAMPLES, METRICS, bertscore_model=name, bertscore_layer=layer, bertscore_idf=idf).sentence
    ref = theirs(folder, layer, idf=idf)
    for m in METRICS:
        np.testing.assert_allclose(ours[m], ref[m], atol=1e-6, rtol=0)


@pytest.mark.slow
def test_rescaled_equals_bert_score_with_our_baseline(tmp_path):
    folder, label = resolve_model("minilm")
    layers = load_baselines()[label]["layers"]
    csv = tmp_path / "baseline.tsv"
    csv.write_text("LAYER,P,R,F\n" + "".join(f"{k},{v[0]!r},{v[1]!r},{v[2]!r}\n"
                                               for k, v in sorted(layers.items(), key=lambda kv: int(kv[0]))))
    ours = score(SAMPLES, METRICS, bertscore_rescale=True).sentence
    ref = theirs(folder, 4, lang="en", rescale_with_baseline=True, baseline_path=str(csv))
    for m in METRICS:
        np.testing.assert_allclose(ours[m], ref[m], atol=1e-6, rtol=0)


def test_properties_and_shards():
    rows = SAMPLES + [{"response": "", "references": ["anything"]},
                      {"response": "same words here", "references": ["", "same words here"]},
                      {"response": "no references", "references": []}]
    one = score(rows, METRICS, bertscore_idf=True)
    again = score(rows, METRICS, bertscore_idf=True, chunk_size=2)
    for m in METRICS:
        np.testing.assert_array_equal(one.sentence[m], again.sentence[m])   # idf from the whole set
        assert one.sentence[m][5] == 0.0 and math.isnan(one.sentence[m][7])   # blank: bert-score's 0
        assert one.sentence[m][6] == pytest.approx(1.0, abs=1e-6)            # the response is its reference
    p, r, f = (one.sentence[m][:5] for m in METRICS)
    assert (f <= np.maximum(p, r) + 1e-12).all()                               # a harmonic mean, best per column
    single = score([{"response": CANDS[1], "references": REFS[1]}], METRICS).sentence
    hp, hr = single["bertscore_p"][0], single["bertscore_r"][0]
    assert single["bertscore_f"][0] == pytest.approx(2 * hp * hr / (hp + hr), abs=1e-12)


def test_signature_and_bad_layer():
    res = score(SAMPLES[:1], ["bertscore_f"], bertscore_idf=True)
    assert str(res.signatures["bertscore_f"]).startswith("bertscore_f|refs:multi|tok:model|model:all-MiniLM-L6-v2|layer:4|idf:yes")
    from dialeval.errors import DialevalError

    with pytest.raises(DialevalError, match="outside 0..6"):
        score(SAMPLES[:1], ["bertscore_f"], bertscore_layer=9)


def test_bf16_is_close_named_and_leaves_fp32_alone():
    """`bertscore_precision="bf16"`: a bf16 copy of the encoder (the cached fp32 one is untouched,
    so fp32 scores after it are the same bits), scores within 0.005 of fp32 (USR-TC: max 0.0009,
    docs/speed.md), named in the signature; the default signature does not name a dtype."""
    fp32 = score(SAMPLES, METRICS)
    bf16 = score(SAMPLES, METRICS, bertscore_precision="bf16")
    again = score(SAMPLES, METRICS)
    for m in METRICS:
        np.testing.assert_array_equal(again.sentence[m], fp32.sentence[m])
        np.testing.assert_allclose(bf16.sentence[m], fp32.sentence[m], atol=5e-3, rtol=0)
    assert "dtype" not in str(fp32.signatures["bertscore_f"])
    assert "|idf:no|dtype:bf16|" in str(bf16.signatures["bertscore_f"])
    from dialeval.errors import DialevalError

    with pytest.raises(DialevalError, match="--bertscore-precision fp16: choose from fp32, bf16"):
        score(SAMPLES[:1], ["bertscore_f"], bertscore_precision="fp16")
