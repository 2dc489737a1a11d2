"""The LLM judge (`judge`, `judge_<quality>`): templates, the expected rating, batching,
signatures. Scoring tests use the installed SmolLM2-135M-Instruct and skip without it."""

from __future__ import annotations

import hashlib
import math

import numpy as np
import pytest

from conftest import REPO
from dialeval.errors import DialevalError
from dialeval.metrics.base import Batch
from dialeval.metrics.judge.prompt import NO_REFERENCES, TEMPLATE_DIR, QUALITIES, format_context, load_template
from dialeval.metrics.registry import REGISTRY, build_metric

CONTEXT = ["Do you like to cook?", "I do, mostly Italian food."]
HYPS = ["Nice! What's your favourite Italian dish to make?", "ok",
        "The stock market fell by three percent today.", "I love pasta, I make it every Sunday with my kids."]
REFS = [["Oh cool, what do you usually make?"]] * len(HYPS)


# -- templates: no model needed ----------------------------------------------------------------

def test_every_quality_has_a_shipped_template_and_a_metric():
    for q in QUALITIES:
        t = load_template(None, q)
        assert "{context}" in t.text and "{response}" in t.text and not t.wants_references
        name = "judge" if q == "overall" else f"judge_{q}"
        assert REGISTRY[name].family == "judge"
    assert load_template("overall-ref", "overall").wants_references
    # shipped as package data, so a wheel install has them too
    assert '"metrics/judge/templates/*.txt"' in (REPO / "pyproject.toml").read_text(encoding="utf-8")
    assert (TEMPLATE_DIR / "overall.txt").is_file()


def test_template_file_fill_and_refusals(tmp_path):
    path = tmp_path / "mine.txt"
    path.write_text("Refs:\n{references}\nTalk:\n{context}\nReply: {response} {not-a-placeholder}\n"
                    "[answer]\nScore: ", encoding="utf-8")
    t = load_template(str(path), "overall")
    assert t.name == "mine" and t.sha == hashlib.sha256(path.read_bytes()).hexdigest()[:12]
    assert t.answer == "Score: " and t.wants_references
    filled = t.fill(CONTEXT, "  a  {context} reply ", ["r one", " "])
    assert filled == ("Refs:\n- r one\nTalk:\nB: Do you like to cook?\nA: I do, mostly Italian food.\n"
                      "Reply: a {context} reply {not-a-placeholder}")
    assert NO_REFERENCES in t.fill(CONTEXT, "x", [])
    assert format_context([]) != ""
    bad = tmp_path / "bad.txt"
    bad.write_text("no placeholder", encoding="utf-8")
    with pytest.raises(DialevalError, match=r"\{response\}"):
        load_template(str(bad), "overall")
    with pytest.raises(DialevalError, match="no such file"):
        load_template(str(tmp_path / "missing.txt"), "overall")


# -- scoring with the installed SmolLM2 --------------------------------------------------------

@pytest.fixture(scope="module")
def smollm2():
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from dialeval.models.pretrained import smollm2_135m

    try:
        return str(smollm2_135m(prepare=False))
    except DialevalError as exc:
        pytest.skip(f"SmolLM2-135M-Instruct is not prepared here: {exc}")


@pytest.fixture(scope="module")
def judge(smollm2):
    return build_metric("judge")


def batch(hyps=HYPS, refs=REFS):
    return Batch(list(hyps), [list(r) for r in refs], [CONTEXT] * len(hyps))


def test_scores_are_deterministic_and_in_range(judge):
    a = judge.compute(batch()).sentence
    b = judge.compute(batch()).sentence
    assert np.array_equal(a, b)
    assert np.all((a > 1.0) & (a < 5.0)), a


def test_score_is_the_expected_rating_from_the_logits(judge):
    """One item by hand: the model's next-token logits after the full prompt, softmax over the
    five rating tokens only, sum_k k * p_k."""
    import torch

    prompt = judge.prompt(CONTEXT, HYPS[0], REFS[0])
    assert prompt.startswith("<|im_start|>") and prompt.endswith("<|im_start|>assistant\n")   # chat-templated
    tok = judge.judge.tokenizer
    ids = tok.encode(prompt, add_special_tokens=False)
    rating = [tok.encode(d, add_special_tokens=False)[0] for d in "12345"]
    with torch.no_grad():
        logits = judge.judge.model(torch.tensor([ids])).logits[0, -1].double()
    p = torch.softmax(logits[rating], dim=0).numpy()
    expected = float((p * np.arange(1, 6)).sum())
    got = judge.compute(batch(HYPS[:1], REFS[:1])).sentence[0]
    assert got == pytest.approx(expected, abs=1e-5)


def test_batched_equals_one_at_a_time(smollm2, judge):
    many = judge.compute(batch()).sentence
    single = build_metric("judge", judge_batch_tokens=0)
    alone = np.array([single.compute(batch([h], [r])).sentence[0] for h, r in zip(HYPS, REFS)])
    np.testing.assert_allclose(many, alone, atol=1e-5)


def test_blank_response_scores_the_floor(judge):
    out = judge.compute(batch(["", "  ", HYPS[0]], REFS[:3])).sentence
    assert judge.floor() == 1.0 and out[0] == out[1] == 1.0 and out[2] > 1.0


def test_references_only_when_the_template_asks(smollm2, judge, tmp_path):
    base = judge.compute(batch()).sentence
    other_refs = judge.compute(batch(refs=[["Something else entirely."]] * len(HYPS))).sentence
    np.testing.assert_array_equal(base, other_refs)          # the default template has no {references}
    with_refs = build_metric("judge", judge_template="overall-ref")
    prompt = with_refs.prompt(CONTEXT, HYPS[0], ["A reference reply."])
    assert "- A reference reply." in prompt
    assert NO_REFERENCES in with_refs.prompt(CONTEXT, HYPS[0], [])
    a = with_refs.compute(batch()).sentence
    b = with_refs.compute(batch(refs=[["The weather is nice."]] * len(HYPS))).sentence
    assert not np.array_equal(a, b)


def test_template_file_option_and_signature(smollm2, tmp_path):
    path = tmp_path / "terse.txt"
    path.write_text("{context}\nReply: {response}\nRate it 1-5.\n", encoding="utf-8")
    m = build_metric("judge_fluency", judge_template=str(path))
    sig = str(m.signature())
    sha = hashlib.sha256(path.read_bytes()).hexdigest()[:12]
    assert sig.startswith("judge_fluency|") and f"template:terse@{sha}" in sig
    assert "quality:fluency" in sig and "dtype" not in sig and "model:smollm2-135m-instruct:" in sig
    assert "Reply: ok" in m.prompt(CONTEXT, "ok", [])
    shipped = hashlib.sha256((TEMPLATE_DIR / "relevance.txt").read_bytes()).hexdigest()[:12]
    assert f"template:relevance@{shipped}" in str(build_metric("judge_relevance").signature())


def test_bf16_is_close_to_fp32(judge):
    bf = build_metric("judge", judge_precision="bf16")
    assert "|dtype:bf16|" in str(bf.signature())
    a, b = judge.compute(batch()).sentence, bf.compute(batch()).sentence
    assert np.all(np.abs(a - b) < 0.5), (a, b)
    assert next(judge.judge.model.parameters()).dtype.is_floating_point    # the shared fp32 copy is untouched
    import torch

    assert next(judge.judge.model.parameters()).dtype == torch.float32
    with pytest.raises(DialevalError, match="judge-precision"):
        build_metric("judge", judge_precision="fp8")


def test_probes_run(smollm2):
    from dialeval.data.sample import Sample
    from dialeval.meta.probes import probe

    samples = [Sample(id=str(k), context=CONTEXT, response=h, references=r)
               for k, (h, r) in enumerate(zip(HYPS, REFS))]
    result = probe(samples, ["judge"], families=["empty", "parrot"], n_boot=50)
    empty = result.results["judge"]["empty"]
    assert empty["n"] == len(HYPS) and empty["share"] == 1.0       # every real reply beats a blank one
    assert result.results["judge"]["parrot"]["n"] > 0
    assert not math.isnan(result.results["judge"]["parrot"]["share"])
