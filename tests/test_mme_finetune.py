"""The fine-tuned MME variant (`encoder_mode="finetune"`): a few steps of joint training move the
tuned MiniLM layers and nothing below them; the split forward pass equals the frozen encoder's;
saving and loading gives identical scores; a tampered or foreign tuned-weight file is refused
with one line (exit 2 through the CLI); the frozen default is untouched (its signature included).
Everything trains on the tiny generated corpus of tests/test_mme.py."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from conftest import flip_byte

from dialeval.errors import DialevalError

pytestmark = pytest.mark.slow   # trains real (tiny) models

ENCODER_METRICS = ["mme_fm", "mme_rm", "mme_em"]


def _need_encoder():
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    pytest.importorskip("safetensors")
    from dialeval.metrics.mme.encoder import default_encoder_dir

    try:
        return default_encoder_dir()
    except DialevalError as exc:
        pytest.skip(f"no default encoder: {exc}")


@pytest.fixture(scope="module")
def tuned(tmp_path_factory):
    """A folder with FM, RM and EM fine-tuned (top 2 layers, one epoch) on the tiny corpus."""
    _need_encoder()
    from test_mme import _corpus, _engagement

    from dialeval.metrics.mme.model import train_mme

    base = tmp_path_factory.mktemp("mme-ft")
    corpus = _corpus(base / "dialogues_train.txt")
    eng = _engagement(base / "engagement")
    out = base / "model"
    root = train_mme(str(corpus), str(out), engagement=str(eng), only=["fm", "rm", "em"], max_examples=120,
                     encoder_mode="finetune", finetune_layers=2, finetune_epochs=1, seed=0)
    return out, root, corpus


def _base_layers():
    from dialeval.metrics.mme.encoder import _load, default_encoder_dir

    return _load(default_encoder_dir())[1]


def test_split_forward_equals_frozen_encoder():
    """Lower layers + top layers, as the fine-tuning runs them, give the frozen features exactly
    when the top layers are the base ones."""
    _need_encoder()
    from dialeval.metrics.mme.encoder import shared_encoder
    from dialeval.metrics.mme.finetune import Prepared, TunedEncoder

    texts = ["hello there , how are you ?", "i would like to book a room for tonight .", "ok .", ""]
    frozen = shared_encoder(None).features(texts)
    np.testing.assert_allclose(Prepared(texts, 2).features(texts), frozen, rtol=0, atol=1e-5)
    base = _base_layers()
    same = TunedEncoder({i: base.encoder.layer[i].state_dict() for i in (3, 4, 5)}, None, "base")
    np.testing.assert_allclose(same.features(texts), frozen, rtol=0, atol=1e-5)


def test_few_steps_change_only_the_tuned_layers(tuned):
    """Two optimiser steps without held-out rows (so the last state is kept) move layers 4-5
    and the head; the stored file holds those layers only; the base encoder is not modified."""
    import torch

    from dialeval.metrics.mme.finetune import Prepared, finetune
    from dialeval.metrics.mme.heads import train_head

    out, _, corpus = tuned
    texts = [t.strip() for line in corpus.read_text().splitlines() for t in line.split("__eou__") if t.strip()][:64]
    y = np.array([i % 2 for i in range(len(texts))], dtype=np.float32)
    before = {k: v.clone() for k, v in _base_layers().encoder.layer[5].state_dict().items()}
    prep = Prepared(texts, 2)
    arrays, _ = train_head(prep.features(texts), y, hidden=16, epochs=2, valid_fraction=0.0)
    tensors, new_head, info = finetune(prep, [texts], y, lambda x: x, arrays, np.array([], dtype=int),
                                       epochs=1, batch_size=32, lr=1e-3)
    assert info["finetune_steps"] == 2 and info["tuned_layer_indices"] == [4, 5]
    assert {k.split(".")[2] for k in tensors} == {"4", "5"}
    moved = [k for k, v in tensors.items() if not torch.equal(v, before[k.split(".", 3)[3]])
             and k.startswith("encoder.layer.5.")]
    assert len(moved) > 10                          # the layer's matrices and biases were updated
    assert not np.array_equal(new_head["w0"], arrays["w0"])
    after = _base_layers().encoder.layer[5].state_dict()
    assert all(torch.equal(after[k], before[k]) for k in before)   # the shared base is untouched
    # the saved sub-metric differs from the base encoder in the same way
    from safetensors.torch import load_file

    stored = load_file(str(out / "fm" / "encoder.safetensors"))
    assert sorted({k.split(".")[2] for k in stored}) == ["4", "5"]


def test_training_record_and_signature(tuned):
    from test_mme import _samples

    from dialeval.scoring import score

    out, root, _ = tuned
    for name in ("fm", "rm", "em"):
        info = root["submetrics"][name]["info"]
        assert root["submetrics"][name]["params"]["encoder_mode"] == "finetune"
        assert info["finetune_layers"] == 2 and info["tuned_layer_indices"] == [4, 5]
        # the kept state is the best on the held-out rows, the head-only start included
        assert info["valid_loss"] <= info["finetune_valid_loss_start"] + 1e-9
        assert info["valid_loss"] == pytest.approx(min(info["finetune_valid_loss_history"]), abs=1e-5)
        config = json.loads((out / name / "config.json").read_text())
        assert config["params"]["encoder_mode"] == "finetune"
    result = score(_samples(), ENCODER_METRICS, mme_model=str(out))
    for name in ENCODER_METRICS:
        sig = str(result.signatures[name])
        assert "encoder_mode:finetune-top2" in sig and "+top2@" in sig
        assert np.all((result.sentence[name] >= 0) & (result.sentence[name] <= 1))


def test_save_load_round_trip_identical(tuned, tmp_path):
    """A copy of the folder, loaded in a fresh model object, scores bit for bit the same; and the
    sub-model's raw scores come from its own tuned encoder (the shared frozen one only when
    fine-tuning kept the base layers)."""
    import torch
    from test_mme import _samples

    from dialeval.metrics.mme.encoder import shared_encoder
    from dialeval.metrics.mme.finetune import TunedEncoder
    from dialeval.metrics.mme.model import MMEModel
    from dialeval.scoring import score

    out, _, _ = tuned
    first = score(_samples(), ENCODER_METRICS, mme_model=str(out), mme_norm="none")
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    again = score(_samples(), ENCODER_METRICS, mme_model=str(copy), mme_norm="none")
    for name in ENCODER_METRICS:
        np.testing.assert_array_equal(again.sentence[name], first.sentence[name])
    responses = [s.response for s in _samples()]
    base = _base_layers()
    contexts = [s.context for s in _samples()]
    for sub, metric in (("fm", "mme_fm"), ("rm", "mme_rm"), ("em", "mme_em")):
        model = MMEModel(str(copy)).get(sub)
        raw = model.raw(contexts, responses) if sub == "rm" else model.raw(responses)
        np.testing.assert_array_equal(raw, first.sentence[metric])
        # its own tuned layers; the shared frozen encoder only when the kept layers are the base ones
        same_as_base = all(torch.equal(model.tuned_layers_[f"encoder.layer.{i}.{k}"], v)
                           for i in (4, 5) for k, v in base.encoder.layer[i].state_dict().items())
        assert model.info_["kept_base_layers"] == same_as_base
        if same_as_base:
            assert model._encoder() is shared_encoder(None)
        else:
            assert isinstance(model._encoder(), TunedEncoder)
            assert model._encoder().fingerprint().endswith("+top2@" + model.weights_id_)


def cli_refuses_flipped_weights(folder, tmp_path, capsys, metric: str = "mme_rm", option: str = "--mme-model") -> str:
    """Score `metric` through the CLI with a copy of `folder` whose rm/encoder.safetensors has
    one byte flipped: exit status 2 and one line, returned."""
    from test_mme import _samples

    from dialeval.cli.main import main

    inp = tmp_path / "in.jsonl"
    inp.write_text("\n".join(json.dumps({"id": s.id, "context": s.context, "response": s.response})
                             for s in _samples()) + "\n")
    bad = tmp_path / "bad"
    shutil.copytree(folder, bad)
    target = bad / "rm" / "encoder.safetensors"
    flip_byte(target, target.stat().st_size // 2, 0x01)
    assert main(["score", str(inp), "--metrics", metric, option, str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


def test_tampered_tuned_weights_refused(tuned, tmp_path, capsys):
    line = cli_refuses_flipped_weights(tuned[0], tmp_path, capsys)
    assert "encoder.safetensors" in line and "changed since the artifact was saved" in line


def test_foreign_weights_with_fresh_manifests_refused(tuned, tmp_path):
    """Even with every manifest rewritten (so the sha256 check passes), a weight file whose
    tensors are not the recorded ones is refused by the recorded tensor hash, and a file with
    a layer the config does not name is refused by the layer check."""
    from safetensors.torch import load_file, save_file

    from dialeval.metrics.mme.model import MMEModel
    from dialeval.models.store import write_manifest

    out, _, _ = tuned
    for case in ("values", "layers"):
        bad = tmp_path / case
        shutil.copytree(out, bad)
        path = bad / "em" / "encoder.safetensors"
        tensors = load_file(str(path))
        if case == "values":
            key = sorted(tensors)[0]
            tensors[key] = tensors[key] + 1e-3
        else:
            tensors = {k.replace("encoder.layer.4.", "encoder.layer.3."): v for k, v in tensors.items()}
        save_file(tensors, str(path))
        write_manifest(bad / "em", "mme-em")
        write_manifest(bad, "mme")
        with pytest.raises(DialevalError, match="differ from the ones recorded|does not match"):
            MMEModel(str(bad)).get("em")


def test_cli_flags_and_frozen_default_unchanged(tuned, tmp_path, capsys):
    """`train mme --finetune` records the mode; without it the folder is the frozen variant, with
    no weight file and the signature it always had (no encoder_mode entry)."""
    from test_mme import _samples

    from dialeval.cli.main import main
    from dialeval.scoring import score

    _, _, corpus = tuned
    frozen = tmp_path / "frozen"
    assert main(["train", "mme", "--corpus", str(corpus), "-o", str(frozen), "--only", "fm",
                 "--max-examples", "120", "--quiet"]) == 0
    assert not (frozen / "fm" / "encoder.safetensors").exists()
    assert json.loads((frozen / "fm" / "config.json").read_text())["params"]["encoder_mode"] == "frozen"
    sig = str(score(_samples(), ["mme_fm"], mme_model=str(frozen)).signatures["mme_fm"])
    assert "encoder_mode" not in sig and "+top" not in sig
    capsys.readouterr()
    assert main(["train", "mme", "--corpus", str(corpus), "-o", str(tmp_path / "x"), "--only", "fm",
                 "--finetune", "--finetune-layers", "7"]) == 2
    assert "choose 1..6" in capsys.readouterr().err


def test_tuned_encoders_run_in_bf16_close_to_fp32(tuned):
    """--mme-precision bf16 copies each tuned layer into a bf16 load of the base (the fp32 one,
    and its remembered vectors, untouched): close to fp32 and named in the signature."""
    from test_mme import _samples

    from dialeval.metrics.mme.finetune import TunedEncoder
    from dialeval.metrics.mme.model import MMEModel
    from dialeval.scoring import score

    out, _, _ = tuned
    fp32 = score(_samples(), ENCODER_METRICS, mme_model=str(out), mme_norm="none")
    bf16 = score(_samples(), ENCODER_METRICS, mme_model=str(out), mme_norm="none", mme_precision="bf16")
    for name in ENCODER_METRICS:
        np.testing.assert_allclose(bf16.sentence[name], fp32.sentence[name], atol=0.03, rtol=0, err_msg=name)
        assert "dtype:bf16" in str(bf16.signatures[name]).split("|")
    subs = [MMEModel(str(out)).get(s) for s in ("fm", "rm", "em")]
    for model in subs:
        if model._tuned_encoder is None:
            continue
        moved = model._encoder("cpu", "bf16")
        assert isinstance(moved, TunedEncoder) and moved is not model._tuned_encoder
        assert moved.backbone.precision == "bf16" and model._encoder().backbone.precision == "fp32"
        assert {str(p.dtype) for p in moved.top.parameters()} == {"torch.bfloat16"}
