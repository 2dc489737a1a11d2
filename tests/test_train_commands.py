"""Training commands are generated from their declarations (`models.estimator.TrainCommand`).

What must hold: every flag the hand-written commands had still parses; `train lm --lora` gives
LoraTrainer exactly the flags given (an explicit `--reference-pairs 2000` stays 2000, an explicit
`--batch-size 32` stays 32) and LoRA's own defaults otherwise; the shipped LM's recipe builds the
same LoraTrainer it always did; and an installed package adds a trainable metric's command
through the `dialeval.train` entry-point group, with no parser code of its own.
"""

from __future__ import annotations

import json
import sys
import textwrap

import pytest

from dialeval.cli.main import build_parser, main
from dialeval.cli.options import estimator_kwargs, option_set_kwargs

# Every option string of the training commands before they were generated (issue 31): each
# must still be accepted. A command may gain options, never lose one.
OLD_OPTIONS = {
    ("train", "lm"): """-h --help --corpus --corpus-format -o --output --init --reference-corpus --vocab-size
        --n-layer --layers --n-embd --dim --n-head --heads --n-positions --context-length --epochs --max-steps
        --max-minutes --batch-size --lr --warmup-steps --weight-decay --dropout --reference-pairs --seed --threads
        --device --eval-corpus --lora --lora-rank --lora-alpha --lora-targets --max-length --train-pairs --layout
        --lowercase""",
    ("train", "adem"): """--data --quality -o --output --search --encoder --variant --preset --pca-dims --gamma
        --lr --batch-size --max-epochs --patience --context-turns --oversample --no-oversample --seed
        --finetune-layers --finetune-lr --finetune-epochs --finetune-minutes --max-minutes""",
    ("train", "dialogue-encoder"): """--corpus -o --output --eval-corpus --eval-limit --max-minutes --max-steps
        --epochs --device --threads --vocab-size --word-drop --kl-anneal-steps""",
    ("train", "amfm"): "--corpus --corpus-format --dims --order --weighting --lsi-sentences --seed -o --output",
    ("train", "mme"): """--corpus --engagement -o --output --only --finetune --max-minutes --max-examples
        --sm-sentences --device --finetune-layers --finetune-epochs --finetune-lr --encoder --seed --quiet""",
    ("train", "vectors"): """--method --corpus -o --output --default --sentence-model --dim --window --min-count
        --epochs --seed --keep-case""",
    ("fit", "compose"): """--data --metrics --quality -o --output --method --p --scaling --clip-percentile
        --max-items --seed --exclude-system --plot --json --table-format --refs-mode --tokenize""",
}


@pytest.fixture(scope="module")
def parser():
    return build_parser()


def _command(parser, group: str, name: str):
    import argparse

    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for inner in action.choices[group]._actions:
                if isinstance(inner, argparse._SubParsersAction):
                    return inner.choices[name]
    raise KeyError(name)


@pytest.mark.parametrize("command", sorted(OLD_OPTIONS), ids=lambda c: " ".join(c))
def test_every_old_option_is_still_accepted(parser, command):
    flags = {s for a in _command(parser, *command)._actions for s in a.option_strings}
    missing = set(OLD_OPTIONS[command].split()) - flags
    assert not missing


def test_train_lists_the_same_commands_in_the_same_order(parser):
    import argparse

    train = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices["train"]
    sub = next(a for a in train._actions if isinstance(a, argparse._SubParsersAction))
    assert list(sub.choices)[:6] == ["vectors", "lm", "amfm", "dialogue-encoder", "adem", "mme"]


LORA = ["train", "lm", "--lora", "base", "--corpus", "c.txt", "-o", "out"]


def _lora(parser, *extra):
    from dialeval.metrics.lm.lora import LoraTrainer

    args = parser.parse_args(LORA + list(extra))
    return LoraTrainer(**option_set_kwargs(args, "lora")).get_params()


def test_explicit_lora_flags_are_honoured(parser):
    """The old hand translation turned an explicit `--reference-pairs 2000` into 500 and left
    `--warmup-steps` unread; every given flag now reaches the adapter's trainer as given."""
    params = _lora(parser, "--reference-pairs", "2000", "--batch-size", "32", "--warmup-steps", "7",
                   "--lr", "0.001", "--max-steps", "12", "--max-minutes", "3", "--seed", "5", "--threads", "2",
                   "--lora-rank", "4", "--lora-alpha", "8", "--lora-targets", "q_proj, v_proj",
                   "--max-length", "40", "--train-pairs", "100", "--layout", "chat", "--lowercase")
    assert params["reference_pairs"] == 2000 and params["batch_size"] == 32 and params["warmup_steps"] == 7
    assert params["lr"] == 0.001 and params["steps"] == 12 and params["max_minutes"] == 3.0
    assert params["seed"] == 5 and params["threads"] == 2
    assert params["rank"] == 4 and params["alpha"] == 8.0 and params["max_length"] == 40
    assert params["train_pairs"] == 100 and params["layout"] == "chat" and params["lowercase"] is True
    from dialeval.metrics.lm.lora import LoraTrainer

    assert LoraTrainer(targets=params["targets"])._targets() == ("q_proj", "v_proj")


def test_lora_flags_not_given_keep_loras_own_defaults(parser):
    from dialeval.metrics.lm.lora import LoraTrainer

    assert _lora(parser) == LoraTrainer().get_params()
    assert LoraTrainer().batch_size == 16 and LoraTrainer().reference_pairs == 500


def test_shared_flags_not_given_keep_the_lms_defaults(parser):
    from dialeval.metrics.lm.train import LMTrainer

    args = parser.parse_args(["train", "lm", "--corpus", "c.txt", "-o", "out"])
    assert LMTrainer(**estimator_kwargs(args, args._estimator_flags)).get_params() == LMTrainer().get_params()
    args = parser.parse_args(["train", "lm", "--corpus", "c.txt", "-o", "out", "--batch-size", "8", "--max-steps", "3"])
    trainer = LMTrainer(**estimator_kwargs(args, args._estimator_flags))
    assert trainer.batch_size == 8 and trainer.max_steps == 3


def test_the_shipped_lm_recipe_builds_the_same_lora_trainer(parser):
    """The settings the shipped default LM was trained with (its recipe's flags, every one given
    explicitly, and LoRA's own warm-up and targets) are what the generated command passes on."""
    try:
        from dialeval.recipes.table import RECIPES
    except ImportError:
        from dialeval.cli.models_build import RECIPES
    from dialeval.metrics.lm.lora import DEFAULT_TARGETS

    argv = RECIPES["lm"].argv("/data", "/out")
    args = parser.parse_args(argv)
    assert args.lora == "smollm2-135m"
    params = option_set_kwargs(args, "lora")
    from dialeval.metrics.lm.lora import LoraTrainer

    got = LoraTrainer(**params).get_params()
    assert got == {"rank": 8, "alpha": 16.0, "targets": DEFAULT_TARGETS, "lr": 5e-4, "steps": 2400,
                   "max_minutes": 10000.0, "batch_size": 8, "max_length": 64, "warmup_steps": 50,
                   "train_pairs": 40000, "reference_pairs": 300, "layout": "chat", "lowercase": False, "seed": 0,
                   "threads": 1, "device": "cpu", "negatives": "parrot,loop", "negative_share": 0.25,
                   "unlikelihood_weight": 1.0, "extra": None}


def test_lora_config_is_the_trainers_settings():
    from dataclasses import asdict

    from dialeval.metrics.lm.lora import LoraTrainConfig, LoraTrainer

    assert asdict(LoraTrainConfig()) == LoraTrainer().get_params()


# -- a plug-in's trainable metric and its command ------------------------------------------------
PLUGIN = '''
import json, os
import numpy as np
from dialeval.models.estimator import Argument, Estimator, Options, TrainCommand


class WordCounts(Estimator):
    """Counts of the words of a corpus, the `size` most frequent kept.

    Options:
      size: words kept
      lower: lowercase the corpus
    """

    kind = "word-counts-test"
    train_command = TrainCommand("word-counts", "count the words of a corpus", arguments=(
        Argument("--corpus", required=True, help="a text file"), Options()))

    def __init__(self, size: int = 2, lower: bool = True):
        self.size = size
        self.lower = lower

    def fit(self, corpus):
        with open(corpus, encoding="utf-8") as handle:
            words = handle.read().split()
        words = [w.lower() for w in words] if self.lower else words
        top = sorted(set(words), key=lambda w: (-words.count(w), w))[: self.size]
        self.counts_ = np.array([words.count(w) for w in top], dtype=float)
        self.words_ = top
        return self
'''


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    from importlib import metadata

    (tmp_path / "wordcounts_plugin.py").write_text(textwrap.dedent(PLUGIN), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    entry = metadata.EntryPoint(name="word-counts", value="wordcounts_plugin:WordCounts", group="dialeval.train")
    real = metadata.entry_points
    monkeypatch.setattr(metadata, "entry_points",
                        lambda group=None, **kw: [entry] if group == "dialeval.train" else real(group=group, **kw))
    yield tmp_path
    sys.modules.pop("wordcounts_plugin", None)


def test_a_plugin_adds_a_train_command(plugin, capsys):
    corpus = plugin / "corpus.txt"
    corpus.write_text("The cat saw the dog . the end", encoding="utf-8")
    with pytest.raises(SystemExit):
        main(["train", "--help"])
    assert "word-counts" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["train", "word-counts", "--help"])
    text = capsys.readouterr().out
    assert "--size SIZE" in text and "words kept (default: 2)" in text and "--no-lower" in text
    assert main(["train", "word-counts", "--corpus", str(corpus), "--size", "1", "-o", str(plugin / "m")]) == 0
    assert json.loads(capsys.readouterr().out)["output"] == str(plugin / "m")
    from wordcounts_plugin import WordCounts

    model = WordCounts.load(plugin / "m")
    assert model.get_params() == {"size": 1, "lower": True}
    assert model.words_ == ["the"] and model.counts_.tolist() == [3.0]


def test_a_plugin_that_fails_to_import_costs_a_warning_not_the_command_line(monkeypatch, capsys):
    from importlib import metadata

    entry = metadata.EntryPoint(name="broken", value="no_such_module_31:Thing", group="dialeval.train")
    real = metadata.entry_points
    monkeypatch.setattr(metadata, "entry_points",
                        lambda group=None, **kw: [entry] if group == "dialeval.train" else real(group=group, **kw))
    with pytest.warns(UserWarning, match="broken"):
        parser = build_parser()
    assert parser.parse_args(["train", "amfm", "-o", "x"]).what == "amfm"


def test_a_plugin_cannot_shadow_a_builtin_command(monkeypatch):
    from importlib import metadata

    entry = metadata.EntryPoint(name="lm", value="somewhere:Else", group="dialeval.train")
    real = metadata.entry_points
    monkeypatch.setattr(metadata, "entry_points",
                        lambda group=None, **kw: [entry] if group == "dialeval.train" else real(group=group, **kw))
    with pytest.warns(UserWarning, match="shadowed"):
        parser = build_parser()
    assert parser.parse_args(["train", "lm", "--corpus", "c", "-o", "o"]).func.command.estimator.endswith(":LMTrainer")
