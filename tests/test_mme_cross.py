"""RM as a cross-encoder (`rm_encoder_mode="cross"`): the pair input is cut as documented; a
short training run moves every MiniLM layer and leaves the shared base model alone; the stored
(float16) weights score what the trainer measured, bit for bit after a save and a load; the
mode is in the signature; a tampered or substituted weight file is refused; the scorer's
batching does not change a pair's score. Trains on the tiny generated corpus of tests/test_mme.py."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from dialeval.errors import DialevalError

pytestmark = pytest.mark.slow   # trains a real (tiny) model


def _shipped_cross():
    from dialeval.models.defaults import default_model_dir

    return default_model_dir("mme_cross")     # read before the tests hide the models package


SHIPPED_CROSS = _shipped_cross()


@pytest.fixture(scope="module")
def crossed(tmp_path_factory):
    from test_mme_finetune import _need_encoder

    _need_encoder()
    from test_mme import _corpus

    from dialeval.metrics.mme.model import train_mme

    base = tmp_path_factory.mktemp("mme-cross")
    corpus = _corpus(base / "dialogues_train.txt")
    out = base / "model"
    root = train_mme(str(corpus), str(out), only=["rm"], rm_max_examples=160, rm_encoder_mode="cross",
                     rm_hard_negatives="parrot,shuffle", rm_hard_share=0.5, finetune_epochs=1, seed=0)
    return out, root


def test_pair_ids_cut_context_from_the_left_and_response_from_the_right():
    from test_mme_finetune import _need_encoder

    _need_encoder()
    from dialeval.metrics.mme.cross import MAX_PAIR_TOKENS, MAX_RESPONSE_TOKENS, pair_ids
    from dialeval.metrics.mme.encoder import backbone

    tok = backbone().tokenizer
    context = " ".join(f"c{i}" for i in range(300))
    response = " ".join(f"r{i}" for i in range(300))
    (ids,) = pair_ids(tok, [context], [response])
    assert len(ids) == MAX_PAIR_TOKENS
    assert ids[0] == tok.cls_token_id and ids[-1] == tok.sep_token_id
    sep = ids.index(tok.sep_token_id)
    resp = ids[sep + 1:-1]
    assert len(resp) == MAX_RESPONSE_TOKENS
    assert resp == tok(response, add_special_tokens=False)["input_ids"][:MAX_RESPONSE_TOKENS]
    ctx = ids[1:sep]
    assert ctx == tok(context, add_special_tokens=False)["input_ids"][-len(ctx):]
    # short texts are not cut; a blank response is read as "."
    (short,) = pair_ids(tok, ["hello there"], [""])
    assert short == ([tok.cls_token_id] + tok("hello there", add_special_tokens=False)["input_ids"]
                     + [tok.sep_token_id] + tok(".", add_special_tokens=False)["input_ids"] + [tok.sep_token_id])


def test_training_moves_every_layer_and_not_the_shared_model(crossed):
    import torch

    from dialeval.metrics.mme.encoder import backbone
    from dialeval.metrics.mme.model import MMEModel

    out, root = crossed
    rm = MMEModel(str(out)).get("rm")
    base = backbone().model
    for i in range(6):
        changed = any(not torch.equal(rm.cross_layers_[f"encoder.layer.{i}.{k}"], v.half().float())
                      for k, v in base.encoder.layer[i].state_dict().items())
        assert changed, f"layer {i} did not move"
    info = root["submetrics"]["rm"]["info"]
    assert info["encoder_mode"] == "cross" and info["hard_negatives"]["parrot"] > 0
    assert info["train_rows"] + info["valid_rows"] == info["rows"] == info["examples"]
    assert info["valid_loss"] <= info["start_valid_loss"]
    assert info["encoder"].endswith("+cross@" + rm.weights_id_)
    # the stored tensors are float16 values (rounding them again changes nothing)
    for v in rm.cross_layers_.values():
        assert torch.equal(v.half().float(), v)


def test_save_load_identical_and_signed(crossed, tmp_path):
    from test_mme import _samples

    from dialeval.metrics.mme.model import MMEModel
    from dialeval.scoring import score

    out, _ = crossed
    first = score(_samples(), ["mme_rm"], mme_model=str(out), mme_norm="none")
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    again = score(_samples(), ["mme_rm"], mme_model=str(copy), mme_norm="none")
    np.testing.assert_array_equal(again.sentence["mme_rm"], first.sentence["mme_rm"])
    assert "|encoder_mode:cross|" in first.signatures["mme_rm"]
    rm = MMEModel(str(copy)).get("rm")
    samples = [s for s in _samples() if s.response.strip()]
    raw = rm.raw([s.context for s in samples], [s.response for s in samples])
    assert np.all((raw > 0) & (raw < 1))
    # one pair at a time gives the batched values (padding does not leak into the mean)
    one = [rm.raw([s.context], [s.response])[0] for s in samples]
    np.testing.assert_allclose(one, raw, rtol=0, atol=1e-6)


def test_tampered_or_substituted_weights_refused(crossed, tmp_path, capsys):
    from safetensors.torch import load_file, save_file
    from test_mme_finetune import cli_refuses_flipped_weights

    from dialeval.metrics.mme.model import MMEModel
    from dialeval.models.store import write_manifest

    out, _ = crossed
    line = cli_refuses_flipped_weights(out, tmp_path, capsys, "mme_rm_cross", "--mme-cross-model")
    assert "encoder.safetensors" in line and "changed since the artifact was saved" in line
    swapped = tmp_path / "swapped"
    shutil.copytree(out, swapped)
    path = swapped / "rm" / "encoder.safetensors"
    tensors = load_file(str(path))
    key = sorted(tensors)[0]
    tensors[key] = tensors[key] + 1
    save_file(tensors, str(path))
    write_manifest(swapped / "rm", "mme-rm")
    write_manifest(swapped, "mme")
    with pytest.raises(DialevalError, match="differ from the ones recorded"):
        MMEModel(str(swapped)).get("rm")


def test_cross_runs_in_bf16_close_to_fp32(crossed):
    """--mme-precision bf16 runs the tuned layers in a bf16 copy of the base (the fp32 scorer is
    untouched): named in the signature, close to fp32, and fp32 again gives the same bits."""
    from test_mme import _samples

    from dialeval.scoring import score

    out, _ = crossed
    fp32 = score(_samples(), ["mme_rm"], mme_model=str(out), mme_norm="none")
    bf16 = score(_samples(), ["mme_rm"], mme_model=str(out), mme_norm="none", mme_precision="bf16")
    again = score(_samples(), ["mme_rm"], mme_model=str(out), mme_norm="none")
    np.testing.assert_allclose(bf16.sentence["mme_rm"], fp32.sentence["mme_rm"], atol=0.03, rtol=0)
    assert (np.asarray(bf16.sentence["mme_rm"]) != np.asarray(fp32.sentence["mme_rm"])).any()
    np.testing.assert_array_equal(again.sentence["mme_rm"], fp32.sentence["mme_rm"])
    fields = str(bf16.signatures["mme_rm"]).split("|")
    assert "encoder_mode:cross" in fields and fields[-2] == "dtype:bf16"     # the runtime last, then the version


def test_mme_rm_cross_reads_only_a_cross_folder(crossed, tmp_path):
    """`mme_rm_cross` scores the cross-encoder RM of its own folder as `mme_rm` would read that
    folder; a folder whose RM is a frozen head is refused in one line before any scoring."""
    from test_mme import _samples, train_tiny_mme

    from dialeval.scoring import score

    out, _ = crossed
    via_cross = score(_samples(), ["mme_rm_cross"], mme_cross_model=str(out))
    via_rm = score(_samples(), ["mme_rm"], mme_model=str(out))
    np.testing.assert_array_equal(via_cross.sentence["mme_rm_cross"], via_rm.sentence["mme_rm"])
    frozen = train_tiny_mme(tmp_path)[0]
    with pytest.raises(DialevalError, match="not a cross-encoder"):
        score(_samples(), ["mme_rm_cross"], mme_cross_model=str(frozen))


def test_mme_rm_cross_shards_exactly(crossed):
    from test_engine_shards import assert_same, make_samples

    from dialeval.engine import make_plan

    out, _ = crossed
    assert_same(make_plan(["mme_rm_cross"], mme_cross_model=str(out)), make_samples(n=12), seeds=[3])


def test_shipped_cross_encoder_scores_a_pair_the_same_in_any_company():
    """Pairs cut to the 128-token cap share one length, and they used to share forward passes
    of up to 32 rows; at that length the kernels round a row's last bits by how many rows share
    a pass. usr-tc's compose training negatives scored all together (37 pairs at the cap) and
    only the 75 a fit draws (2 at the cap) differed in 3 rows by up to 2.5e-8, so a sharded or
    drawn run was not the bits of a whole one. Each pair now runs alone (copies only under 16
    positions). The shipped cross-encoder on those rows, both ways."""
    from conftest import DATA, need

    from dialeval.data.datasets import load_dataset
    from dialeval.meta.probes import negative_samples
    from dialeval.scoring import score

    folder = SHIPPED_CROSS or pytest.skip("the models package (mme_cross) is not installed")
    samples = [s for s in load_dataset("usr-tc", str(need(DATA / "usr"))).samples
               if s.system != "Original Ground Truth"]
    made = negative_samples(samples, "empty,parrot,other_item,loop", seed=0)
    rows = np.sort(np.random.default_rng([0, 0, 7]).choice(len(made), 75, replace=False))

    def run(batch):
        return score(batch, ["mme_rm_cross"], mme_cross_model=folder, progress=False).sentence["mme_rm_cross"]

    np.testing.assert_array_equal(run(made)[rows], run([made[int(i)] for i in rows]))


def test_unknown_rm_mode_refused(tmp_path):
    from dialeval.metrics.mme.model import MMETrainer

    with pytest.raises(DialevalError, match="--rm-encoder-mode"):
        MMETrainer(only=["rm"], rm_encoder_mode="crossed")._check()


def test_continued_training_starts_from_the_folder_and_keeps_its_split(crossed, tmp_path):
    """`rm_init`: the continued run starts where the folder stopped (its held-out loss at the
    start is the folder's own, within the float16 rounding of what was stored: the same seed and
    rows give the same held-out split), counts its epochs after the folder's, records what it
    continued, and never ends worse on those rows than it started."""
    from test_mme import _corpus

    from dialeval.metrics.mme.model import MMEModel, train_mme

    out, root = crossed
    first = MMEModel(str(out)).get("rm")
    corpus = _corpus(tmp_path / "dialogues_train.txt")
    again = tmp_path / "continued"
    root2 = train_mme(str(corpus), str(again), only=["rm"], rm_max_examples=160, rm_encoder_mode="cross",
                      rm_hard_negatives="parrot,shuffle", rm_hard_share=0.5, finetune_epochs=1, seed=0,
                      rm_init=str(out))
    info, before = root2["submetrics"]["rm"]["info"], root["submetrics"]["rm"]["info"]
    assert info["rows"] == before["rows"] and info["valid_rows"] == before["valid_rows"]
    assert info["start_valid_loss"] == pytest.approx(before["valid_loss"], abs=0.02)
    assert info["valid_loss"] <= info["start_valid_loss"]
    assert info["continued_from"] == {"weights_id": first.weights_id_, "epochs_before": 1}
    rm = MMEModel(str(again)).get("rm")
    assert rm.epochs_done() == 2 and first.epochs_done() == 1
    # the trainer records the folder; a plain run records no rm_init (a quiet parameter: earlier
    # folders rebuild byte for byte)
    import json

    assert json.loads((again / "config.json").read_text())["params"]["rm_init"] == str(out)
    assert "rm_init" not in json.loads((out / "config.json").read_text())["params"]


def test_continuing_refuses_what_cannot_be_continued(crossed, tmp_path):
    from test_mme import _corpus

    from dialeval.metrics.mme.model import MMETrainer

    out, _ = crossed
    with pytest.raises(DialevalError, match="--rm-init .*needs --rm-encoder-mode cross"):
        MMETrainer(only=["rm"], rm_init=str(out))._check()
    with pytest.raises(DialevalError, match="not an MME model folder"):
        MMETrainer(only=["rm"], rm_encoder_mode="cross", rm_init=str(tmp_path / "nowhere"))._check()
    with pytest.raises(DialevalError, match="trained over encoder all-MiniLM-L6-v2, this training's is"):
        MMETrainer(only=["rm"], rm_encoder_mode="cross", encoder=str(tmp_path / "other-encoder"),
                   rm_init=str(out))._check()
