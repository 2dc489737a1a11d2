"""LoRA adapters for the LM metrics: a tiny random llama built here, an adapter trained for a few
steps, saved as a verified artifact and read back; GGUF and adapter paths given to --lm-model."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from conftest import flip_byte

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("peft")

from dialeval.errors import DialevalError  # noqa: E402

QA = [("how are you ?", "i am fine , thank you ."),
      ("where do you live ?", "i live in a small town near the sea ."),
      ("what time is it ?", "it is ten o'clock in the morning ."),
      ("do you like tea ?", "yes , i drink tea every day .")]


def _tiny_llama_folder(path):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from dialeval.metrics.lm.train import build_tokenizer

    tokenizer = build_tokenizer([t for qa in QA for t in qa] * 5, 300)
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                         eos_token_id=tokenizer.eos_token_id, bos_token_id=tokenizer.bos_token_id,
                         tie_word_embeddings=False)
    LlamaForCausalLM(config).eval().save_pretrained(path)
    tokenizer.save_pretrained(path)
    return str(path)


def _corpus(path, n=30):
    with open(path, "w", encoding="utf-8") as handle:
        for i in range(n):
            (q, r), (q2, r2) = QA[i % len(QA)], QA[(i + 1) % len(QA)]
            handle.write(f"{q} __eou__ {r} __eou__ {q2} __eou__ {r2} __eou__\n")
    return str(path)


@pytest.fixture(scope="module")
def adapter(tmp_path_factory):
    from dialeval.metrics.lm.lora import LoraTrainConfig, train_lora

    d = tmp_path_factory.mktemp("lora")
    base = _tiny_llama_folder(d / "base")
    corpus = _corpus(d / "dialogues.txt")
    cfg = LoraTrainConfig(rank=4, alpha=8, steps=6, batch_size=8, max_length=32, warmup_steps=2,
                          reference_pairs=12, lr=1e-2, seed=3)
    info = train_lora(corpus, str(d / "adapter"), base, cfg)
    return base, str(d / "adapter"), corpus, info


def _scores(path):
    from dialeval.metrics.lm.checkpoint import load_lm
    from dialeval.metrics.lm.logprob import mean_logprobs

    lm = load_lm(path)
    return (mean_logprobs(lm, [r for _, r in QA], [q for q, _ in QA], 4),
            mean_logprobs(lm, [r for _, r in QA], None, 4), lm)


def test_adapter_is_an_fp16_artifact_that_changes_the_scores(adapter):
    from safetensors import safe_open

    base, path, _, info = adapter
    files = set(os.listdir(path))
    assert {"config.json", "manifest.json", "adapter_config.json", "adapter_model.safetensors", "arrays.npz"} <= files
    with safe_open(os.path.join(path, "adapter_model.safetensors"), "pt") as f:
        dtypes = {str(f.get_tensor(k).dtype) for k in f.keys()}
    assert dtypes == {"torch.float16"}
    assert info["steps_done"] == 6 and info["stopped_by"] == "steps"
    coh_a, flu_a, lm = _scores(path)
    coh_b, flu_b, _ = _scores(base)
    assert np.all(np.isfinite(coh_a)) and np.all(coh_a <= 0)
    assert not np.allclose(coh_a, coh_b)      # the adapter took part: 6 steps at lr 1e-2 move the scores
    from dialeval.metrics.lm.checkpoint import peek
    from dialeval.models.artifacts import model_id

    # signed by the adapter folder's manifest hash, the base it merges into named beside it
    assert peek(path)["tag"] == "lm@" + model_id(path)[:12] and peek(path)["base"].startswith("base:")
    assert len(lm.reference["coherence_raw"]) == 12


def test_training_is_deterministic_and_reload_gives_identical_scores(adapter, tmp_path):
    from dialeval.metrics.lm.checkpoint import load_lm
    from dialeval.metrics.lm.lora import LoraTrainConfig, train_lora

    base, path, corpus, _ = adapter
    cfg = LoraTrainConfig(rank=4, alpha=8, steps=6, batch_size=8, max_length=32, warmup_steps=2,
                          reference_pairs=12, lr=1e-2, seed=3)
    again = train_lora(corpus, str(tmp_path / "again"), base, cfg)
    assert again["final_loss"] == pytest.approx(json.load(open(os.path.join(path, "config.json")))["final_loss"])
    first, second = _scores(path), _scores(str(tmp_path / "again"))
    np.testing.assert_array_equal(first[0], second[0])
    np.testing.assert_array_equal(first[1], second[1])
    # the reference scores stored at training time are the loaded adapter's own (fp16 round trip aside)
    lm = load_lm(path)
    assert lm.layout == "plain"


def test_damaged_adapter_is_refused_with_one_line(adapter, tmp_path):
    import shutil

    from dialeval.metrics.lm.checkpoint import load_lm

    _, path, _, _ = adapter
    broken = tmp_path / "broken"
    shutil.copytree(path, broken)
    flip_byte(broken / "adapter_model.safetensors", -3)
    with pytest.raises(DialevalError) as err:
        load_lm(str(broken))
    assert "adapter_model.safetensors" in str(err.value) and "\n" not in str(err.value)


def test_adapter_with_a_missing_base_is_refused(adapter, tmp_path):
    import shutil

    from dialeval.metrics.lm.checkpoint import load_lm
    from dialeval.models import store

    _, path, _, _ = adapter
    moved = tmp_path / "moved"
    shutil.copytree(path, moved)
    config = json.load(open(moved / "config.json"))
    config["base"] = str(tmp_path / "nowhere")
    json.dump(config, open(moved / "config.json", "w"))
    store.write_manifest(moved, "lm-lora")
    with pytest.raises(DialevalError, match="neither a folder nor a packaged backbone"):
        load_lm(str(moved))


def test_gguf_file_and_folder_load_as_lm(tmp_path):
    pytest.importorskip("gguf")
    pytest.importorskip("accelerate")
    from test_backbones import _write_tiny_llama_gguf

    from dialeval.metrics.lm.checkpoint import load_lm
    from dialeval.metrics.lm.logprob import mean_logprobs

    path = tmp_path / "tiny.gguf"
    _write_tiny_llama_gguf(path)
    from dialeval.metrics.lm.checkpoint import peek

    a, b = load_lm(str(path)), load_lm(str(tmp_path))
    assert peek(str(path))["tag"] == peek(str(tmp_path))["tag"] == f"tiny.gguf:{path.stat().st_size}"
    x = mean_logprobs(a, ["hello world"], ["hello"], 2)
    np.testing.assert_array_equal(x, mean_logprobs(b, ["hello world"], ["hello"], 2))
    assert np.isfinite(x).all()


def test_plain_frame_is_unchanged_and_chat_frame_wraps_turns(adapter):
    from dialeval.metrics.lm.checkpoint import load_lm
    from dialeval.metrics.lm.logprob import layout

    base, _, _, _ = adapter
    lm = load_lm(base)
    q, r = lm.encode("how are you ?"), lm.encode("fine .")
    ids, first = layout(lm, q, r)
    assert ids == [lm.sep_id] + q + [lm.sep_id] + r and first == len(q) + 2
    with pytest.raises(DialevalError, match="chat layout needs"):
        lm.layout, lm._frame = "chat", None
        lm.frame


def _prepared_smollm2():
    from dialeval.models.pretrained import SMOLLM2, is_prepared, pretrained_root

    folder = pretrained_root() / SMOLLM2.name
    if not is_prepared(folder):
        pytest.skip("the prepared SmolLM2 is absent (python3 -m dialeval.models.pretrained prepare --only smollm2)")
    return folder


@pytest.mark.slow
def test_smollm2_adapter_by_packaged_name(tmp_path):
    """Two steps on the real SmolLM2 in the chat frame: the adapter names its base by the packaged
    name, loads back through that name, and the signature carries adapter and base hashes."""
    _prepared_smollm2()
    from dialeval.metrics.lm.lora import LoraTrainConfig, train_lora
    from dialeval.metrics.lm.metric import LMCoherence

    corpus = _corpus(tmp_path / "dialogues.txt", 12)
    cfg = LoraTrainConfig(steps=2, batch_size=2, max_length=16, warmup_steps=1, reference_pairs=4, layout="chat")
    info = train_lora(corpus, str(tmp_path / "adapter"), "smollm2-135m", cfg)
    assert info["base"] == "smollm2-135m" and info["layout"] == "chat"
    metric = LMCoherence(lm_model=str(tmp_path / "adapter"))
    from dialeval.models.artifacts import model_id

    fields = dict(metric.signature_options())
    # the one `model:` rule (the manifest's hash), and the base it merges into beside it
    assert fields["model"] == "lm@" + model_id(tmp_path / "adapter")[:12]
    assert fields["base"].startswith("smollm2-135m-instruct:")
    assert ("layout", "chat") in metric.signature_options()


def test_lm_layout_option_reaches_the_metric(adapter):
    from dialeval.metrics.lm.metric import LMCoherenceRaw

    base, path, _, _ = adapter
    assert LMCoherenceRaw(lm_model=path).lm.layout == "plain"            # auto: the adapter's own
    with pytest.raises(DialevalError, match="chat layout needs"):
        LMCoherenceRaw(lm_model=base, lm_layout="chat").lm.frame
    with pytest.raises(DialevalError, match="--lm-layout 'odd'"):
        LMCoherenceRaw(lm_model=base, lm_layout="odd")


def test_unlikelihood_loss_by_hand():
    import math

    import torch

    from dialeval.models.training import unlikelihood_loss

    # two rows of three positions over a vocabulary of two; the loss reads positions 1 and 2
    logits = torch.tensor([[[0.0, 0.0], [math.log(3), 0.0], [0.0, 0.0]],
                           [[0.0, 0.0], [0.0, math.log(4)], [0.0, 0.0]]])
    labels = torch.tensor([[-100, 1, 0], [-100, 0, 1]])
    # row 0 (likely): p(1 | pos 0) = 1/2, p(0 | pos 1) = 3/4 -> nll = -(log 1/2 + log 3/4) / 2
    # row 1 (unlikely): p(0 | pos 0) = 1/2, p(1 | pos 1) = 4/5 -> -(log 1/2 + log 1/5) / 2
    nll = -(math.log(0.5) + math.log(0.75)) / 2
    ul = -(math.log(0.5) + math.log(0.2)) / 2
    got = unlikelihood_loss(logits, labels, [False, True], 0.5)
    assert float(got) == pytest.approx(nll + 0.5 * ul, rel=1e-6)
    # without unlikely rows the second part is 0; with only them the first is
    assert float(unlikelihood_loss(logits, labels, [False, False], 1.0)) == pytest.approx(
        -(math.log(0.5) + math.log(0.75) + math.log(0.5) + math.log(0.8)) / 4, rel=1e-6)
    assert float(unlikelihood_loss(logits, labels, [True, True], 1.0)) == pytest.approx(
        -(math.log(0.5) + math.log(0.25) + math.log(0.5) + math.log(0.2)) / 4, rel=1e-6)


def test_unlikely_parrots_become_less_likely(adapter, tmp_path):
    """The same training with parrots of the query as unlikely replies: a parrot's likelihood
    after its query falls against the true reply's, and the record says how many negatives."""
    from dialeval.metrics.lm.checkpoint import load_lm
    from dialeval.metrics.lm.logprob import mean_logprobs
    from dialeval.metrics.lm.lora import LoraTrainConfig, train_lora

    base, path, corpus, _ = adapter
    cfg = dict(rank=4, alpha=8, steps=6, batch_size=8, max_length=32, warmup_steps=2, reference_pairs=12,
               lr=1e-2, seed=3)
    info = train_lora(corpus, str(tmp_path / "ul"), base, LoraTrainConfig(**cfg, negatives="parrot", negative_share=1.0))
    assert info["negatives"] == "parrot" and info["negative_sequences"] > 0

    def gap(folder):
        lm = load_lm(folder)
        queries = [q for q, _ in QA]
        return float(np.mean(mean_logprobs(lm, [r for _, r in QA], queries, 4)
                             - mean_logprobs(lm, queries, queries, 4)))
    assert gap(str(tmp_path / "ul")) > gap(path)
    with pytest.raises(DialevalError, match="cannot be trained as an unlikely reply"):
        train_lora(corpus, str(tmp_path / "bad"), base, LoraTrainConfig(**cfg, negatives="empty"))
