"""Training that survives a stop (models/resume.py): a run killed after a checkpoint and resumed
gives exactly what an uninterrupted run gives; a checkpoint of another command, other arguments
or another version is refused in one line; Ctrl-C says how to resume.

The stop is made the way a kill would make it, right after a checkpoint is written
(`LoopCheckpoint.after_save` raising), and the resumed run starts from freshly seeded models and
disturbed global random generators, as a new process would: everything it needs must come from
the checkpoint."""

from __future__ import annotations

import json
import os
import random

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from dialeval.models import resume as R  # noqa: E402
from dialeval.models.resume import TrainingCheckpoint, checkpoint_folder, run_identity  # noqa: E402


class Stop(Exception):
    """Stands for the process being killed (a plain exception, so only the test catches it)."""


@pytest.fixture
def stop_after(monkeypatch):
    """stop_after(n): the n-th checkpoint written stops the run, as a kill right after it would."""
    def arm(n):
        count = {"saves": 0}

        def after_save(self, state):
            count["saves"] += 1
            if count["saves"] == n and not state.get("done"):
                raise Stop

        monkeypatch.setattr(R.LoopCheckpoint, "after_save", after_save)
    return arm


def _checkpoint(tmp_path, resume=False, every=0.0, command="train test"):
    return TrainingCheckpoint(checkpoint_folder(str(tmp_path / "out")), run_identity(command, {"seed": 0}),
                              every_seconds=every, resume=resume).open()


def _disturb():
    random.seed(12345)
    np.random.seed(12345)
    torch.manual_seed(12345)


# -- the causal-LM loop ------------------------------------------------------------------------------
SEQUENCES = [([0, 5, 6, 7, 0, 8, 9, 0], 0), ([0, 3, 4, 0, 5, 0], 4), ([0, 9, 8, 7, 6, 0, 1, 2, 3, 0], 5),
             ([0, 2, 0, 4, 4, 0], 3), ([0, 1, 1, 1, 0, 7, 0], 0), ([0, 6, 6, 0, 2, 0], 2), ([0, 3, 0, 3, 0], 0)]


def _lm_run(checkpoint):
    pytest.importorskip("transformers")
    from transformers import GPT2Config, GPT2LMHeadModel

    from dialeval.models.training import train_causal_lm

    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(vocab_size=12, n_positions=16, n_embd=16, n_layer=1, n_head=2))  # dropout 0.1
    rng = random.Random(7)            # the caller's own shuffler, outside the loop's saved state
    batches = [[0, 1], [2, 3], [4, 5], [6]]

    def one_pass():
        rng.shuffle(batches)
        return batches

    state = train_causal_lm(model, list(model.parameters()), SEQUENCES, pad_id=0, passes=one_pass, total_steps=11,
                            lr=1e-2, weight_decay=0.01, schedule=lambda s: 1.0 / (1 + s), checkpoint=checkpoint)
    return model, state


@pytest.mark.parametrize("stop_at", [1, 4, 8])      # mid-pass, at a pass's end (4 batches a pass), later
def test_causal_lm_loop_resumed_equals_uninterrupted(tmp_path, stop_after, stop_at):
    straight, s_state = _lm_run(None)
    stop_after(stop_at)
    with pytest.raises(Stop):
        _lm_run(_checkpoint(tmp_path))
    _disturb()
    resumed, r_state = _lm_run(_checkpoint(tmp_path, resume=True))
    assert r_state.steps == s_state.steps == 11 and r_state.losses == s_state.losses
    for (name, a), b in zip(straight.state_dict().items(), resumed.state_dict().values()):
        assert torch.equal(a, b), name


def test_a_finished_loop_is_not_run_again(tmp_path):
    _lm_run(_checkpoint(tmp_path))                 # finished: its final state is in the checkpoint
    _disturb()
    again, state = _lm_run(_checkpoint(tmp_path, resume=True))
    straight, s_state = _lm_run(None)
    assert state.losses == s_state.losses
    assert all(torch.equal(a, b) for a, b in zip(straight.parameters(), again.parameters()))


# -- the top-layer tuning loop ---------------------------------------------------------------------
def _tune_run(checkpoint):
    from dialeval.backbones.tuning import tune_top_layers

    torch.manual_seed(3)
    top = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Dropout(0.3), torch.nn.Linear(8, 1))
    head = torch.nn.Parameter(torch.zeros(1))
    gen = torch.Generator().manual_seed(5)
    x, y = torch.randn(30, 4, generator=gen), torch.randn(30, generator=gen)
    xv, yv = torch.randn(10, 4, generator=gen), torch.randn(10, generator=gen)
    rng = np.random.default_rng(11)           # the caller's batch order, replayed on resume

    def loss(rows):
        rows = torch.as_tensor(rows)
        return ((top(x[rows])[:, 0] + head - y[rows]) ** 2).mean()

    def evaluate():
        top.eval()
        with torch.no_grad():
            value = float(((top(xv)[:, 0] + head - yv) ** 2).mean())
        top.train()
        return value

    def epoch_batches(epoch):
        order = rng.permutation(30)
        return [order[s:s + 4] for s in range(0, 30, 4)]

    snapshot = lambda: {k: v.clone() for k, v in top.state_dict().items()}  # noqa: E731
    result = tune_top_layers(top, loss, epoch_batches, evaluate=evaluate, better=lambda a, b: a < b,
                             snapshot=snapshot, start=(evaluate(), None), epochs=3, lr=1e-2, planned_steps=24,
                             extra_groups=[{"params": [head], "lr": 0.1}], check_after=lambda n: {3, n},
                             checkpoint=checkpoint)
    return top, head, result


@pytest.mark.parametrize("stop_at", [2, 8, 15])
def test_tuning_loop_resumed_equals_uninterrupted(tmp_path, stop_after, stop_at):
    top, head, result = _tune_run(None)
    stop_after(stop_at)
    with pytest.raises(Stop):
        _tune_run(_checkpoint(tmp_path))
    _disturb()
    top2, head2, result2 = _tune_run(_checkpoint(tmp_path, resume=True))
    assert result2.checks == result.checks and result2.train_loss == result.train_loss
    assert result2.steps == result.steps == 24 and result2.best_step == result.best_step
    assert torch.equal(head, head2)
    assert all(torch.equal(a, b) for a, b in zip(top.state_dict().values(), top2.state_dict().values()))
    assert all(torch.equal(a, b) for a, b in zip(result.best_state.values(), result2.best_state.values()))


# -- the dialogue encoder's own loop ------------------------------------------------------------------
DIALOGUES = [["hello there", "hi how are you", "fine thanks and you"], ["what is your name", "i am bob", "nice"],
             ["do you like tea", "yes i do", "me too"], ["where do you live", "in a city", "which one", "paris"]] * 3


def _encoder_run(checkpoint):
    from dialeval.metrics.learned.adem.hred import DialogueEncoder

    enc = DialogueEncoder(vocab_size=40, emb_dim=8, utt_dim=8, ctx_dim=8, latent_dim=4, dec_dim=8, batch_size=4,
                          epochs=4, threads=1,
                          word_drop=0.25, seed=1)
    return enc.fit(DIALOGUES, checkpoint=checkpoint)


def test_dialogue_encoder_resumed_equals_uninterrupted(tmp_path, stop_after):
    straight = _encoder_run(None)
    stop_after(3)
    with pytest.raises(Stop):
        _encoder_run(_checkpoint(tmp_path))
    _disturb()
    resumed = _encoder_run(_checkpoint(tmp_path, resume=True))
    assert straight.training_["steps"] == resumed.training_["steps"]
    assert all(np.array_equal(straight.weights_[k], resumed.weights_[k]) for k in straight.weights_)


# -- the run's identity ------------------------------------------------------------------------------
def test_a_checkpoint_of_another_run_is_refused_in_one_line(tmp_path):
    from dialeval.errors import DialevalError

    _checkpoint(tmp_path)                                   # an unfinished run's folder
    with pytest.raises(DialevalError, match="add --resume to continue it") as info:
        _checkpoint(tmp_path)                               # not silently overwritten
    assert "\n" not in str(info.value)
    with pytest.raises(DialevalError, match="a checkpoint of another command"):
        _checkpoint(tmp_path, resume=True, command="train other")
    folder = checkpoint_folder(str(tmp_path / "out"))
    with open(os.path.join(folder, R.IDENTITY)) as handle:
        identity = json.load(handle)
    identity.update(version="0.0.1", hash="0" * 16)
    with open(os.path.join(folder, R.IDENTITY), "w") as handle:
        json.dump(identity, handle)
    with pytest.raises(DialevalError, match="a checkpoint of another dialeval version"):
        _checkpoint(tmp_path, resume=True)
    with pytest.raises(DialevalError, match="no checkpoint in"):
        _checkpoint(tmp_path / "elsewhere", resume=True)


def test_identity_ignores_only_how_the_run_checkpoints():
    a = run_identity("train lm", {"seed": 0, "resume": False, "checkpoint_minutes": 5, "_checkpoint": object()})
    b = run_identity("train lm", {"seed": 0, "resume": True, "checkpoint_minutes": 1})
    assert a["hash"] == b["hash"] != run_identity("train lm", {"seed": 1})["hash"]


# -- the command line ----------------------------------------------------------------------------------
QA = [("how are you ?", "fine thanks ."), ("what is your name ?", "i am bob ."), ("do you like tea ?", "yes a lot ."),
      ("where do you live ?", "in paris ."), ("is it cold ?", "a little ."), ("what time is it ?", "noon .")]


def _train_lm(tmp_path, out, *extra):
    from dialeval.cli import main

    corpus = tmp_path / "plain.txt"
    corpus.write_text("\n\n".join(f"{q}\n{r}" for q, r in QA * 8) + "\n")
    return main(["train", "lm", "--corpus", str(corpus), "-o", str(out), "--max-steps", "6", "--epochs", "10",
                 "--vocab-size", "300", "--layers", "1", "--dim", "32", "--heads", "2", "--context-length", "48",
                 "--threads", "1", "--reference-pairs", "10", "--checkpoint-minutes", "0.00001", *extra])


def _normalised_files(folder, tmp_path):
    import shutil

    from dialeval.recipes.normalise import normalise

    copy = tmp_path / f"norm-{os.path.basename(folder)}"
    shutil.copytree(folder, copy)
    normalise(str(copy), str(tmp_path), str(tmp_path), final="m")
    return {name: (copy / name).read_bytes() for name in sorted(os.listdir(copy))}


def test_train_lm_interrupted_then_resumed_writes_the_same_bytes(tmp_path, capsys, monkeypatch):
    pytest.importorskip("transformers")
    assert _train_lm(tmp_path, tmp_path / "straight") == 0
    assert not os.path.exists(checkpoint_folder(str(tmp_path / "straight")))      # removed once written

    def interrupt(self, state):
        if self.run.saves == 3 and not state.get("done"):
            raise KeyboardInterrupt
    monkeypatch.setattr(R.LoopCheckpoint, "after_save", interrupt)
    capsys.readouterr()
    assert _train_lm(tmp_path, tmp_path / "stopped") == 130
    err = capsys.readouterr().err.strip().splitlines()
    assert "run the same command with --resume to continue" in err[-1]
    assert not (tmp_path / "stopped").exists()
    monkeypatch.setattr(R.LoopCheckpoint, "after_save", lambda self, state: None)

    assert _train_lm(tmp_path, tmp_path / "stopped") == 2          # not silently started again
    assert "add --resume" in capsys.readouterr().err
    assert _train_lm(tmp_path, tmp_path / "stopped", "--seed", "3", "--resume") == 2   # other arguments
    assert "a checkpoint of other arguments" in capsys.readouterr().err
    _disturb()
    assert _train_lm(tmp_path, tmp_path / "stopped", "--resume") == 0
    assert not os.path.exists(checkpoint_folder(str(tmp_path / "stopped")))
    assert _normalised_files(tmp_path / "straight", tmp_path) == _normalised_files(tmp_path / "stopped", tmp_path)


def test_train_lm_lora_interrupted_then_resumed_writes_the_same_bytes(tmp_path, capsys, monkeypatch):
    """The shipped LM's own path (`train lm --lora`, with the parrot and loop negatives its recipe
    trains against) stopped after its third checkpoint and resumed: the same adapter, config
    and reference scores as a run that was never stopped."""
    pytest.importorskip("peft")
    from test_lm_lora import _corpus, _tiny_llama_folder

    from dialeval.cli import main

    base = _tiny_llama_folder(tmp_path / "base")
    corpus = _corpus(tmp_path / "dialogues.txt", n=40)

    def train(out, *extra):
        return main(["train", "lm", "--lora", base, "--corpus", corpus, "-o", str(out), "--max-steps", "8",
                     "--batch-size", "4", "--max-length", "24", "--lora-rank", "2", "--lora-alpha", "4",
                     "--reference-pairs", "10", "--threads", "1", "--negatives", "parrot,loop",
                     "--negative-share", "0.25", "--seed", "0", "--checkpoint-minutes", "0.00001", *extra])

    assert train(tmp_path / "straight") == 0

    def interrupt(self, state):
        if self.run.saves == 3 and not state.get("done"):
            raise KeyboardInterrupt
    monkeypatch.setattr(R.LoopCheckpoint, "after_save", interrupt)
    capsys.readouterr()
    assert train(tmp_path / "stopped") == 130
    assert "run the same command with --resume to continue" in capsys.readouterr().err.strip().splitlines()[-1]
    assert not (tmp_path / "stopped").exists()
    monkeypatch.setattr(R.LoopCheckpoint, "after_save", lambda self, state: None)
    _disturb()
    assert train(tmp_path / "stopped", "--resume") == 0
    assert not os.path.exists(checkpoint_folder(str(tmp_path / "stopped")))
    straight, stopped = (_normalised_files(tmp_path / n, tmp_path) for n in ("straight", "stopped"))
    assert "adapter_model.safetensors" in straight
    assert straight == stopped


def test_a_refused_input_leaves_no_checkpoint_behind(tmp_path, capsys):
    from dialeval.cli import main

    out = tmp_path / "m"
    assert main(["train", "mme", "--corpus", f"byu-chitchat:{tmp_path / 'dataset.json.gz'}", "-o", str(out),
                 "--only", "fm", "--quiet"]) == 2
    assert "not a training file of byu-chitchat" in capsys.readouterr().err
    assert not os.path.exists(checkpoint_folder(str(out))) and not out.exists()


def test_models_build_resumes_at_the_default_it_stopped_in(tmp_path, monkeypatch, capsys):
    """A build that stopped after its first default keeps that default, and `--resume` builds the
    rest without building it again; the build's checkpoint goes once every default is in place."""
    from dialeval.cli import main
    import importlib

    build_module = importlib.import_module("dialeval.recipes.build")
    from dialeval.recipes.table import RECIPES, Recipe

    data = tmp_path / "data"
    (data / "corpus").mkdir(parents=True)
    (data / "corpus" / "a.txt").write_text("\n\n".join(f"{q}\n{r}" for q, r in QA * 4) + "\n")

    def amfm(file):
        return lambda root, out: ["train", "amfm", "--corpus", os.path.join(root, "corpus", file), "--dims", "2",
                                  "--order", "2", "--seed", "0", "-o", out]
    def two_stages(root, out):       # a recipe of two commands: the first writes a stage folder
        from dialeval.recipes.table import stage_folder

        return [amfm("a.txt")(root, stage_folder(out, 1)), amfm("b.txt")(root, out)]
    monkeypatch.setitem(RECIPES, "tiny_a", Recipe("tiny_a", ("am",), "a test corpus", "none", amfm("a.txt"),
                                                  needs=("corpus",)))
    monkeypatch.setitem(RECIPES, "tiny_b", Recipe("tiny_b", ("am",), "a test corpus", "none", two_stages,
                                                  needs=("corpus",)))
    monkeypatch.setattr(build_module, "ORDER", ["tiny_a", "tiny_b"])
    out = tmp_path / "models"
    argv = ["models", "build", "--data-root", str(data), "-o", str(out)]
    assert main(argv) == 2                                        # tiny_b's corpus is missing: it fails
    assert "tiny_b failed" in capsys.readouterr().err
    built = (out / "tiny_a" / "manifest.json").stat().st_mtime_ns
    assert os.path.isdir(checkpoint_folder(str(out)))             # tiny_a is done: worth resuming
    assert main(argv) == 2 and "add --resume" in capsys.readouterr().err
    (data / "corpus" / "b.txt").write_text((data / "corpus" / "a.txt").read_text())
    assert main([*argv, "--resume"]) == 0
    err = capsys.readouterr().err
    assert "tiny_a: built before the stop, kept" in err and (out / "tiny_b" / "manifest.json").exists()
    assert "&& dialeval train amfm" in err                        # the two commands of tiny_b, as cards show them
    assert sorted(os.listdir(out)) == ["tiny_a", "tiny_b"]        # no stage or staging folder left
    assert (out / "tiny_a" / "manifest.json").stat().st_mtime_ns == built
    assert not os.path.exists(checkpoint_folder(str(out)))
