"""Causal-LM coherence and fluency: a tiny model trained in seconds on a tiny corpus."""

from __future__ import annotations

import json
import math
import os
import shutil

import numpy as np
import pytest

from conftest import flip_byte

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

from dialeval.errors import DialevalError  # noqa: E402

pytestmark = pytest.mark.slow   # trains real (tiny) models

QA = [("how are you ?", "i am fine , thank you ."),
      ("where do you live ?", "i live in a small town near the sea ."),
      ("what time is it ?", "it is ten o'clock in the morning ."),
      ("do you like tea ?", "yes , i drink tea every day ."),
      ("can you help me ?", "of course , what do you need ?")]


def tiny_config(**kw):
    from dialeval.metrics.lm.train import LMTrainConfig

    base = dict(vocab_size=300, n_layer=1, n_embd=32, n_head=2, n_positions=48, max_steps=80,
                batch_size=16, lr=5e-3, warmup_steps=5, epochs=100, reference_pairs=20, threads=1, dropout=0.0)
    base.update(kw)
    return LMTrainConfig(**base)


def write_dailydialog(path, n=40):
    with open(path, "w", encoding="utf-8") as handle:
        for i in range(n):
            q, r = QA[i % len(QA)]
            q2, r2 = QA[(i + 1) % len(QA)]
            handle.write(f"{q} __eou__ {r} __eou__ {q2} __eou__ {r2} __eou__\n")
    return path


@pytest.fixture(scope="module")
def tiny_lm(tmp_path_factory):
    from dialeval.metrics.lm.train import train_lm

    d = tmp_path_factory.mktemp("lm")
    corpus = write_dailydialog(d / "dialogues.txt", 60)
    info = train_lm(str(corpus), str(d / "model"), tiny_config(), log=lambda m: None)
    return str(d / "model"), info


def test_artifact_is_verified_safetensors_folder(tiny_lm):
    model_dir, info = tiny_lm
    files = set(os.listdir(model_dir))
    assert {"config.json", "model.safetensors", "tokenizer.json", "manifest.json",
            "dialeval_lm.json", "lm_reference.npz"} <= files
    assert not any(f.endswith((".bin", ".pkl", ".pt")) for f in files)
    manifest = json.load(open(os.path.join(model_dir, "manifest.json")))
    assert manifest["kind"] == "causal-lm" and "model.safetensors" in manifest["files"]
    assert info["steps"] == 80 and info["stopped_by"] == "max_steps"


def test_coherence_counts_only_response_tokens(tiny_lm):
    """Eq. 1 by hand: one forward pass over <sep> q <sep> r, log-softmax, the response's tokens only."""
    import torch

    from dialeval.metrics.lm.checkpoint import load_lm
    from dialeval.metrics.lm.logprob import mean_logprobs

    lm = load_lm(tiny_lm[0])
    q, r = QA[0]
    qi, ri = lm.encode(q), lm.encode(r)
    ids = torch.tensor([[lm.sep_id] + qi + [lm.sep_id] + ri])
    with torch.no_grad():
        logp = torch.log_softmax(lm.model(ids).logits[0], -1)
    start = len(qi) + 2
    by_hand = np.mean([float(logp[t - 1, ids[0, t]]) for t in range(start, ids.shape[1])])
    got = mean_logprobs(lm, [r], [q])[0]
    assert got == pytest.approx(by_hand, abs=1e-5)
    # fluency: <sep> r, every response token
    ids = torch.tensor([[lm.sep_id] + ri])
    with torch.no_grad():
        logp = torch.log_softmax(lm.model(ids).logits[0], -1)
    by_hand = np.mean([float(logp[t - 1, ids[0, t]]) for t in range(1, ids.shape[1])])
    assert mean_logprobs(lm, [r])[0] == pytest.approx(by_hand, abs=1e-5)


def test_batching_does_not_change_scores(tiny_lm):
    from dialeval.metrics.lm.checkpoint import load_lm
    from dialeval.metrics.lm.logprob import mean_logprobs

    lm = load_lm(tiny_lm[0])
    qs = [q for q, _ in QA] + ["a much longer query that has many more words than the others do"]
    rs = [r for _, r in QA] + ["short ."]
    one = mean_logprobs(lm, rs, qs, batch_size=1)
    many = mean_logprobs(lm, rs, qs, batch_size=4)
    np.testing.assert_allclose(one, many, atol=1e-5)
    assert np.all(one < 0)
    assert math.isnan(mean_logprobs(lm, [""])[0])


def test_training_learns_the_pairs(tiny_lm):
    """After training, a seen response to its query beats the same words shuffled and a wrong reply."""
    from dialeval.metrics.lm.checkpoint import load_lm
    from dialeval.metrics.lm.logprob import mean_logprobs

    lm = load_lm(tiny_lm[0])
    q, r = QA[1]
    scrambled = " ".join(reversed(r.split()))
    c = mean_logprobs(lm, [r, scrambled, QA[3][1]], [q] * 3)
    assert c[0] > c[1] and c[0] > c[2]
    f = mean_logprobs(lm, [r, scrambled])
    assert f[0] > f[1]


def test_normalisation_by_hand():
    from dialeval.metrics.lm.metric import normalise

    # (raw - bound) / -bound gives -0.25, 0.5, 1, 0 (eq. 2 / 4 would clip the first to 0);
    # under the knee 0.05 the value is then squashed to 0.05^2 / (0.1 - z): 0.0025 / 0.1 = 1/40
    # at the bound, 0.0025 / 0.35 = 1/140 under it, both above a blank response's 0, in order
    np.testing.assert_allclose(normalise(np.array([-5.0, -2.0, 0.0, -4.0]), -4.0), [1 / 140, 0.5, 1.0, 1 / 40])
    assert normalise(np.array([-np.inf]), -4.0)[0] == 0.0


def test_normalisation_keeps_the_order_of_raw_scores_under_the_bound():
    """No two different log-probabilities tie, however far under the bound (the paper's clip
    tied them all at 0, so a good reply under it could not beat a parrot under it), and every
    real one stays above a blank response's 0 and at or below 1."""
    from dialeval.metrics.lm.metric import normalise

    raw = -np.geomspace(1e-3, 60.0, 400)[::-1]          # increasing, from -60 to -0.001
    for bound in (-4.43, -1.0, -9.5):
        z = normalise(raw, bound)
        assert np.all(np.diff(z) > 0)
        assert z[0] > 0 and z[-1] <= 1
    with pytest.raises(DialevalError):
        normalise(np.array([-1.0]), 0.0)


def test_metrics_through_score(tiny_lm):
    import dialeval
    from dialeval.metrics.lm.checkpoint import load_lm
    from dialeval.metrics.lm.logprob import mean_logprobs

    model_dir = tiny_lm[0]
    records = [{"id": str(i), "context": ["hello", q], "response": r} for i, (q, r) in enumerate(QA)]
    records.append({"id": "x", "response": "no context here ."})
    names = ["lm_coherence", "lm_fluency", "lm_coherence_raw", "lm_fluency_raw"]
    res = dialeval.score(records, names, lm_model=model_dir, lm_percentile=10)
    lm = load_lm(model_dir)
    raw = mean_logprobs(lm, [r for _, r in QA], [q for q, _ in QA])
    np.testing.assert_allclose(res.sentence["lm_coherence_raw"][:5], raw, atol=1e-6)
    assert math.isnan(res.sentence["lm_coherence"][5])          # no context, no coherence
    assert not math.isnan(res.sentence["lm_fluency"][5])
    bound = float(np.percentile(lm.reference["coherence_raw"], 10))
    expected = (np.maximum(bound, raw) - bound) / -bound
    np.testing.assert_allclose(res.sentence["lm_coherence"][:5], expected, atol=1e-6)
    for name in ("lm_coherence", "lm_fluency"):
        vals = res.sentence[name][~np.isnan(res.sentence[name])]
        assert np.all((vals >= 0) & (vals <= 1))
        assert "pct:10.0" in res.signatures[name]
    assert res.corpus["lm_fluency"] == pytest.approx(np.mean(res.sentence["lm_fluency"]))


def test_percentile_changes_bound(tiny_lm):
    from dialeval.metrics.registry import build_metric

    lo = build_metric("lm_fluency", lm_model=tiny_lm[0], lm_percentile=5)
    hi = build_metric("lm_fluency", lm_model=tiny_lm[0], lm_percentile=50)
    assert lo.bound < hi.bound
    with pytest.raises(DialevalError, match="percentile"):
        build_metric("lm_fluency", lm_model=tiny_lm[0], lm_percentile=0)
    with pytest.raises(DialevalError, match="--lm-model"):
        build_metric("lm_fluency")


def test_fine_tune_with_init_keeps_tokenizer(tiny_lm, tmp_path):
    from dialeval.metrics.lm.checkpoint import load_lm
    from dialeval.metrics.lm.train import train_lm

    corpus = tmp_path / "more.jsonl"
    corpus.write_text("\n".join(json.dumps({"turns": [q, r]}) for q, r in QA * 6) + "\n")
    info = train_lm(str(corpus), str(tmp_path / "ft"), tiny_config(max_steps=3), init=tiny_lm[0],
                    log=lambda m: None)
    assert info["init"] and info["steps"] == 3
    base, ft = load_lm(tiny_lm[0]), load_lm(tmp_path / "ft")
    assert base.tokenizer.get_vocab() == ft.tokenizer.get_vocab()


def test_corrupted_or_changed_checkpoint_is_refused(tiny_lm, tmp_path):
    from dialeval.metrics.lm.checkpoint import load_lm

    copy = tmp_path / "copy"
    shutil.copytree(tiny_lm[0], copy)
    weights = copy / "model.safetensors"
    flip_byte(weights, weights.stat().st_size // 2)
    with pytest.raises(DialevalError, match="changed since the artifact was saved"):
        load_lm(copy)
    weights.unlink()
    with pytest.raises(DialevalError, match="missing from the artifact"):
        load_lm(copy)
    # a foreign checkpoint (no manifest) with truncated weights
    shutil.rmtree(copy)
    shutil.copytree(tiny_lm[0], copy)
    (copy / "manifest.json").unlink()
    weights.write_bytes(weights.read_bytes()[:1000])
    with pytest.raises(DialevalError, match="cannot load the weights"):
        load_lm(copy)


def test_not_a_causal_lm_is_refused(tmp_path):
    from dialeval.metrics.lm.checkpoint import load_lm

    bert = tmp_path / "bert"
    bert.mkdir()
    (bert / "config.json").write_text(json.dumps({"model_type": "bert", "architectures": ["BertForMaskedLM"],
                                                  "hidden_size": 32, "num_hidden_layers": 1,
                                                  "num_attention_heads": 2, "intermediate_size": 64,
                                                  "vocab_size": 100}))
    with pytest.raises(DialevalError, match="BertForMaskedLM, not a causal language model"):
        load_lm(bert)
    t5 = tmp_path / "t5"
    t5.mkdir()
    (t5 / "config.json").write_text(json.dumps({"model_type": "t5"}))
    with pytest.raises(DialevalError, match="not a causal language model"):
        load_lm(t5)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(DialevalError, match="no config.json"):
        load_lm(empty)
    with pytest.raises(DialevalError, match="no such model folder"):
        load_lm(tmp_path / "nowhere")


def test_cli_train_and_score(tmp_path, capsys):
    from dialeval.cli import main

    corpus = tmp_path / "plain.txt"
    corpus.write_text("\n\n".join(f"{q}\n{r}" for q, r in QA * 8) + "\n")
    out = tmp_path / "m"
    rc = main(["train", "lm", "--corpus", str(corpus), "-o", str(out), "--max-steps", "4", "--epochs", "10", "--vocab-size", "300",
               "--layers", "1", "--dim", "32", "--heads", "2", "--context-length", "48", "--threads", "1",
               "--reference-pairs", "10"])
    assert rc == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["steps"] == 4
    samples = tmp_path / "s.jsonl"
    samples.write_text("".join(json.dumps({"context": [q], "response": r}) + "\n" for q, r in QA))
    rc = main(["score", str(samples), "--metrics", "lm_coherence,lm_fluency", "--lm-model", str(out), "--json"])
    assert rc == 0
    summary = json.loads(capsys.readouterr().out)
    assert 0 <= summary["metrics"]["lm_coherence"]["corpus"] <= 1
    rc = main(["score", str(samples), "--metrics", "lm_fluency", "--lm-model", str(tmp_path / "nope")])
    assert rc == 2
    assert "no such model folder" in capsys.readouterr().err


def test_foreign_checkpoint_raw_only_until_wrapped(tiny_lm, tmp_path):
    """A checkpoint without dialeval's files scores raw; `--init DIR --max-steps 0` adds the bounds."""
    import dialeval
    from dialeval.metrics.lm.train import train_lm

    foreign = tmp_path / "foreign"
    shutil.copytree(tiny_lm[0], foreign)
    for name in ("manifest.json", "lm_reference.npz", "dialeval_lm.json"):
        (foreign / name).unlink()
    records = [{"context": [q], "response": r} for q, r in QA]
    raw = dialeval.score(records, ["lm_fluency_raw"], lm_model=str(foreign)).sentence["lm_fluency_raw"]
    assert np.all(raw < 0)
    with pytest.raises(DialevalError, match="no reference scores"):
        dialeval.score(records, ["lm_fluency"], lm_model=str(foreign))
    corpus = write_dailydialog(tmp_path / "ref.txt", 30)
    info = train_lm(str(corpus), str(tmp_path / "wrapped"), tiny_config(max_steps=0), init=str(foreign),
                    log=lambda m: None)
    assert info["steps"] == 0
    again = dialeval.score(records, ["lm_fluency_raw", "lm_fluency"], lm_model=str(tmp_path / "wrapped"))
    np.testing.assert_allclose(again.sentence["lm_fluency_raw"], raw, atol=1e-6)  # weights untouched
    assert np.all((again.sentence["lm_fluency"] >= 0) & (again.sentence["lm_fluency"] <= 1))
