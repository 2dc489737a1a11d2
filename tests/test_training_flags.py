"""Training flags are generated from the estimators' constructors: each flag's default is the
constructor's, its help is the `Options:` line, and every flag name the commands had before
still parses to the same setting."""

from __future__ import annotations

import inspect

import pytest

from dialeval.cli.main import build_parser
from dialeval.cli.options import estimator_kwargs
from dialeval.options import docstring_options


def _estimators():
    from dialeval.metrics.compose.model import ComposeModel
    from dialeval.metrics.amfm.model import AMFMModel
    from dialeval.metrics.embedding.train import Word2VecVectors
    from dialeval.metrics.learned.adem.hred import DialogueEncoder
    from dialeval.metrics.learned.adem.model import Adem
    from dialeval.metrics.lm.train import LMTrainer
    from dialeval.metrics.mme.model import MMETrainer

    return {"lm": LMTrainer, "adem": Adem, "dialogue-encoder": DialogueEncoder, "amfm": AMFMModel, "mme": MMETrainer,
            "vectors": Word2VecVectors, "compose": ComposeModel}


REQUIRED = {"lm": ["train", "lm", "--corpus", "c.txt", "-o", "out"],
            "adem": ["train", "adem", "--data", "x:y", "-o", "out"],
            "dialogue-encoder": ["train", "dialogue-encoder", "--corpus", "c.txt", "-o", "out"],
            "amfm": ["train", "amfm", "-o", "out"],
            "mme": ["train", "mme", "--corpus", "c.txt", "-o", "out"],
            "vectors": ["train", "vectors", "-o", "out"],
            "compose": ["fit", "compose", "--data", "x:y", "--metrics", "bleu1", "-o", "out"]}

# flags the commands had before they were generated, with a value and the setting it must give
OLD_FLAGS = {
    "lm": [(["--epochs", "2"], "epochs", 2.0), (["--max-steps", "5"], "max_steps", 5),
           (["--max-minutes", "1"], "max_minutes", 1.0), (["--batch-size", "8"], "batch_size", 8),
           (["--lr", "0.01"], "lr", 0.01), (["--vocab-size", "300"], "vocab_size", 300),
           (["--layers", "2"], "n_layer", 2), (["--dim", "32"], "n_embd", 32), (["--heads", "2"], "n_head", 2),
           (["--context-length", "64"], "n_positions", 64), (["--reference-pairs", "20"], "reference_pairs", 20),
           (["--threads", "1"], "threads", 1), (["--device", "cpu"], "device", "cpu"), (["--seed", "3"], "seed", 3)],
    "adem": [(["--encoder", "hred:e"], "encoder", "hred:e"), (["--variant", "c_adem"], "variant", "c_adem"),
             (["--preset", "released"], "preset", "released"), (["--pca-dims", "4"], "pca_dims", 4),
             (["--gamma", "0.5"], "gamma", 0.5), (["--lr", "0.1"], "lr", 0.1),
             (["--batch-size", "8"], "batch_size", 8), (["--max-epochs", "3"], "max_epochs", 3),
             (["--patience", "2"], "patience", 2), (["--context-turns", "1"], "context_turns", 1),
             (["--no-oversample"], "oversample", False), (["--seed", "5"], "seed", 5),
             (["--finetune-layers", "2"], "finetune_layers", 2), (["--finetune-lr", "0.001"], "finetune_lr", 0.001),
             (["--finetune-epochs", "2"], "finetune_epochs", 2), (["--max-minutes", "1.5"], "finetune_minutes", 1.5)],
    "dialogue-encoder": [(["--max-minutes", "2"], "max_minutes", 2.0), (["--max-steps", "9"], "max_steps", 9),
                         (["--epochs", "0.5"], "epochs", 0.5), (["--device", "cuda"], "device", "cuda"),
                         (["--threads", "1"], "threads", 1), (["--vocab-size", "60"], "vocab_size", 60),
                         (["--word-drop", "0.1"], "word_drop", 0.1), (["--kl-anneal-steps", "10"], "kl_anneal_steps", 10)],
    "amfm": [(["--dims", "5"], "dims", 5), (["--order", "3"], "order", 3), (["--weighting", "tfidf"], "weighting", "tfidf"),
             (["--lsi-sentences", "0"], "lsi_sentences", 0), (["--seed", "2"], "seed", 2)],
    "mme": [(["--max-minutes", "3"], "max_minutes", 3.0), (["--max-examples", "100"], "max_examples", 100),
            (["--sm-sentences", "50"], "sm_sentences", 50), (["--device", "cpu"], "device", "cpu"),
            (["--finetune-layers", "1"], "finetune_layers", 1), (["--finetune-epochs", "1"], "finetune_epochs", 1),
            (["--finetune-lr", "0.01"], "finetune_lr", 0.01), (["--encoder", "dir"], "encoder", "dir"),
            (["--seed", "4"], "seed", 4)],
    "vectors": [(["--dim", "16"], "dim", 16), (["--window", "3"], "window", 3), (["--min-count", "1"], "min_count", 1),
                (["--epochs", "2"], "epochs", 2), (["--seed", "7"], "seed", 7)],
    "compose": [(["--method", "avg"], "method", "avg"), (["--p", "3"], "p", 3.0), (["--scaling", "percentile"], "scaling", "percentile"),
                (["--clip-percentile", "10"], "clip_percentile", 10.0), (["--max-items", "300"], "max_items", 300),
                (["--seed", "1"], "seed", 1)],
}


@pytest.fixture(scope="module")
def parser():
    return build_parser()


@pytest.mark.parametrize("command", sorted(REQUIRED))
def test_defaults_are_the_constructors_and_help_is_the_docstring(parser, command):
    cls = _estimators()[command]
    args = parser.parse_args(REQUIRED[command])
    names = args._estimator_flags
    assert names
    signature = inspect.signature(cls.__init__).parameters
    helps = docstring_options(cls)
    for name, value in estimator_kwargs(args, names).items():
        assert value == signature[name].default, name
        assert helps.get(name), f"{cls.__name__}'s Options: block does not describe {name}"


@pytest.mark.parametrize("command", sorted(OLD_FLAGS))
def test_old_flag_names_still_set_the_same_setting(parser, command):
    for flag, dest, value in OLD_FLAGS[command]:
        args = parser.parse_args(REQUIRED[command] + flag)
        assert getattr(args, dest) == value, flag


def test_patience_help_names_what_adem_stops_on(parser, capsys):
    with pytest.raises(SystemExit):
        parser.parse_args(["train", "adem", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "without a better validation Spearman" in text and "validation loss" not in text


def test_lm_trainer_settings_are_the_config_record():
    """`LMTrainConfig` (what `train_lm` takes and `dialeval_lm.json` records) has exactly
    LMTrainer's parameters, with the same defaults."""
    from dataclasses import asdict

    from dialeval.metrics.lm.train import LMTrainConfig, LMTrainer

    assert asdict(LMTrainConfig()) == LMTrainer().get_params()
