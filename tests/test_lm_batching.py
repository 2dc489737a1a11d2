"""The LM metrics' batching: one token length per batch, a row cap and a token budget, no
copies (issue 33). Every text is computed once, and its value is the bits it has alone."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

from dialeval.errors import DialevalError  # noqa: E402

pytestmark = pytest.mark.slow   # trains a (tiny) model

QA = [("how are you ?", "i am fine , thank you ."),
      ("where do you live ?", "i live in a small town near the sea ."),
      ("what time is it ?", "it is ten o'clock in the morning ."),
      ("do you like tea ?", "yes , i drink tea every day ."),
      ("can you help me ?", "of course , what do you need ?")]

RESPONSES = ["ok", "yes .", "i am fine , thank you .", "i live in a small town near the sea .",
             "it is ten o'clock in the morning .", "yes , i drink tea every day .",
             "of course , what do you need ?", "i am fine , thank you .", "the sea is near the town .",
             "do you like tea in the morning or in the evening , and do you drink it every day ?", "",
             "fine .", "what do you need ?"]


@pytest.fixture(scope="module")
def tiny_lm(tmp_path_factory):
    from dialeval.metrics.lm.train import LMTrainConfig, train_lm

    d = tmp_path_factory.mktemp("lm")
    corpus = d / "dialogues.txt"
    with open(corpus, "w", encoding="utf-8") as handle:
        for i in range(40):
            (q, r), (q2, r2) = QA[i % len(QA)], QA[(i + 1) % len(QA)]
            handle.write(f"{q} __eou__ {r} __eou__ {q2} __eou__ {r2} __eou__\n")
    config = LMTrainConfig(vocab_size=300, n_layer=1, n_embd=32, n_head=2, n_positions=64, max_steps=20,
                           batch_size=16, lr=5e-3, warmup_steps=2, epochs=20, reference_pairs=20, threads=1,
                           dropout=0.0)
    train_lm(str(corpus), str(d / "model"), config, log=lambda m: None)
    return str(d / "model")


@pytest.fixture
def lm(tiny_lm):
    from dialeval.metrics.lm.checkpoint import load_lm

    return load_lm(tiny_lm)


def _ids(lm, texts):
    return [lm.encode(t) for t in texts]


def test_mixed_lengths_give_each_text_its_own_bits(lm):
    from dialeval.metrics.lm.logprob import token_logprob_sums

    resp = _ids(lm, RESPONSES)
    queries = _ids(lm, [QA[i % len(QA)][0] for i in range(len(RESPONSES))])
    for qs in ([None] * len(resp), queries):
        together = token_logprob_sums(lm, qs, resp)
        alone = [token_logprob_sums(lm, [q], [r], batch_size=1) for q, r in zip(qs, resp)]
        np.testing.assert_array_equal(together[0], np.concatenate([a[0] for a in alone]))
        np.testing.assert_array_equal(together[1], np.concatenate([a[1] for a in alone]))
        for rows, budget in ((2, 2048), (3, 20), (32, 1)):
            np.testing.assert_array_equal(token_logprob_sums(lm, qs, resp, rows, token_budget=budget)[0],
                                          together[0])


def test_split_head_gives_the_full_forward_pass_bits(lm):
    """The output layer apart (response positions only, HEAD_ROWS at a time) against the
    model's own forward pass."""
    from dialeval.metrics.lm import logprob

    assert logprob.split_ok(lm)
    resp = _ids(lm, RESPONSES)
    split = logprob.token_logprob_sums(lm, [None] * len(resp), resp)
    lm._split = False
    full = logprob.token_logprob_sums(lm, [None] * len(resp), resp)
    np.testing.assert_array_equal(split[0], full[0])
    np.testing.assert_array_equal(split[1], full[1])


def test_no_row_is_computed_twice_and_batches_keep_the_budget(lm):
    from dialeval.backbones.batching import MIN_POSITIONS
    from dialeval.metrics.lm.logprob import split_ok, token_logprob_sums

    split_ok(lm)          # the once-per-model check runs its own two passes first
    shapes = []
    hook = lm.model.get_input_embeddings().register_forward_hook(
        lambda module, args, out: shapes.append(tuple(args[0].shape)))
    try:
        texts = [t for t in RESPONSES if len(lm.encode(t)) + 1 >= MIN_POSITIONS]   # no fill needed
        assert len(texts) >= 8
        token_logprob_sums(lm, [None] * len(texts), _ids(lm, texts), batch_size=3, token_budget=30)
    finally:
        hook.remove()
    assert sum(rows for rows, _ in shapes) == len(texts)           # each text once, no copies
    for rows, width in shapes:
        assert rows <= 3 and (rows * width <= 30 or rows == 1)


def test_a_text_longer_than_the_budget_scores_alone(lm):
    from dialeval.metrics.lm.logprob import mean_logprobs

    long = RESPONSES[9]
    assert len(lm.encode(long)) > 10
    tight = mean_logprobs(lm, [long, "ok", long], token_budget=10)
    roomy = mean_logprobs(lm, [long, "ok", long])
    np.testing.assert_array_equal(tight, roomy)
    assert np.all(np.isfinite(tight)) and tight[0] < 0


def test_token_budget_is_a_metric_option(tiny_lm):
    import dialeval
    from dialeval.metrics.registry import build_metric

    records = [{"context": [q], "response": r} for q, r in QA] + [{"context": ["x"], "response": RESPONSES[9]}]
    names = ["lm_coherence_raw", "lm_fluency_raw", "deep_fm"]
    records = [dict(rec, references=[QA[0][1]]) for rec in records]
    base = dialeval.score(records, names, lm_model=tiny_lm)
    tight = dialeval.score(records, names, lm_model=tiny_lm, lm_token_budget=8, lm_batch_size=2)
    for name in names:
        np.testing.assert_array_equal(base.sentence[name], tight.sentence[name])
        assert base.signatures[name] == tight.signatures[name]     # the budget moves no value
    with pytest.raises(DialevalError, match="lm-token-budget"):
        build_metric("lm_fluency", lm_model=tiny_lm, lm_token_budget=0)


def test_bf16_is_named_in_the_signature(tiny_lm):
    import dialeval
    from dialeval.metrics.lm.checkpoint import cached_lm

    records = [{"context": [q], "response": r, "references": [QA[0][1]]} for q, r in QA]
    names = ["lm_fluency", "lm_coherence_raw", "deep_fm"]
    fp32 = dialeval.score(records, names, lm_model=tiny_lm)
    bf16 = dialeval.score(records, names, lm_model=tiny_lm, lm_precision="bf16")
    for name in names:
        assert "bf16" not in fp32.signatures[name]
        assert "bf16" in bf16.signatures[name]
    assert "dtype:bf16" in bf16.signatures["lm_fluency"]
    np.testing.assert_allclose(bf16.sentence["lm_coherence_raw"], fp32.sentence["lm_coherence_raw"], atol=0.1)
    import torch

    assert cached_lm(tiny_lm, precision="bf16").model.dtype == torch.bfloat16
    assert cached_lm(tiny_lm).model.dtype == torch.float32       # the fp32 copy is untouched
    with pytest.raises(DialevalError, match="lm-precision"):
        cached_lm(tiny_lm, precision="fp8")
