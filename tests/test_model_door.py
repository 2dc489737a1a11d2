"""The one door for trained models (dialeval.models.artifacts): one bounded cache keyed by
content, each file hashed once per load, signatures known without loading, one "needs a model"
refusal, one table of packaged pretrained names, and one MiniLM for sent_cosine and BERTScore."""

from __future__ import annotations

import os
import random

import numpy as np
import pytest
from conftest import train_tiny_lm

from dialeval.errors import DialevalError
from dialeval.models import artifacts, store


@pytest.fixture(autouse=True)
def _fresh_door():
    artifacts.clear_models()
    yield
    artifacts.clear_models()


def _artifact(path, value=1.0):
    return store.save_artifact(path, "toy", {"value": value}, arrays={"w": np.full(3, value)})


def _hash_counter(monkeypatch):
    hashed: list[str] = []
    real = store.sha256_of

    def counting(path):
        hashed.append(os.path.basename(path))
        return real(path)

    monkeypatch.setattr(store, "sha256_of", counting)
    return hashed


def test_one_load_per_content_and_a_rewritten_folder_loads_again(tmp_path):
    folder = _artifact(tmp_path / "m")
    loads = []

    def load(path):
        loads.append(path)
        return store.load_artifact(path, "toy")[0]

    first = artifacts.open_model(folder, "toy", load)
    assert artifacts.open_model(str(tmp_path / "m"), "toy", load) is first
    os.symlink(folder, tmp_path / "link")
    assert artifacts.open_model(tmp_path / "link", "toy", load) is first      # same real folder
    assert len(loads) == 1
    _artifact(tmp_path / "m", 2.0)                                             # a new manifest
    assert artifacts.open_model(folder, "toy", load)["value"] == 2.0
    assert len(loads) == 2


def test_each_file_is_hashed_once_although_the_loader_verifies_again(tmp_path, monkeypatch):
    folder = _artifact(tmp_path / "m")
    hashed = _hash_counter(monkeypatch)
    artifacts.open_model(folder, "toy", lambda p: store.load_artifact(p, "toy"))
    assert sorted(hashed) == ["arrays.npz", "config.json"]
    store.verify(folder, "toy")                 # outside the door, verify hashes as it always did
    assert len(hashed) == 4


def test_a_changed_file_is_refused(tmp_path):
    folder = _artifact(tmp_path / "m")
    with open(os.path.join(folder, "config.json"), "a") as handle:
        handle.write(" ")
    with pytest.raises(DialevalError, match="changed since the artifact was saved"):
        artifacts.open_model(folder, "toy", lambda p: p)
    with pytest.raises(DialevalError, match="holds a 'toy' artifact, not 'adem'"):
        artifacts.open_model(_artifact(tmp_path / "n"), "adem", lambda p: p)


def test_the_cache_is_bounded(tmp_path, monkeypatch):
    from dialeval.cache import BoundedCache

    monkeypatch.setattr(artifacts, "MODELS", BoundedCache(max_items=2))
    folders = [_artifact(tmp_path / f"m{i}", float(i)) for i in range(3)]
    for folder in folders:
        artifacts.open_model(folder, "toy", lambda p: object())
    assert len(artifacts.opened_models()) == 2


def test_the_cache_is_bounded_in_bytes(tmp_path, monkeypatch):
    """Three 1 MB arrays under a 2.5 MB budget: the least recently used one leaves."""
    import numpy as np

    from dialeval.cache import BoundedCache

    monkeypatch.setattr(artifacts, "MODELS", BoundedCache(max_bytes=int(2.5 * 2 ** 20)))
    folders = [_artifact(tmp_path / f"m{i}", float(i)) for i in range(3)]
    for folder in folders:
        artifacts.open_model(folder, "toy", lambda p: np.zeros(2 ** 17))   # 1 MB each
    assert len(artifacts.opened_models()) == 2


def test_the_fingerprint_is_the_manifests_hash(tmp_path):
    from dialeval.models.defaults import model_digest

    folder = _artifact(tmp_path / "m")
    assert artifacts.model_id(folder) == model_digest(folder)
    assert artifacts.model_field("m", folder) == f"m@{model_digest(folder)[:12]}"


@pytest.mark.parametrize("metric,flag", [("adem", "--adem-model"), ("mme_fm", "--mme-model"),
                                         ("am", "--amfm-model"), ("lm_fluency", "--lm-model"),
                                         ("compose", "--compose-model"), ("deep_fm", "--lm-model")])
def test_one_needs_a_model_refusal(metric, flag):
    from dialeval.metrics.registry import build_metric

    with pytest.raises(DialevalError, match=f"metric '{metric}' needs a .*: {flag} DIR"):
        str(build_metric(metric).signature())


# -- planning reads signatures from the folders' small files: nothing is loaded ------------------

WORDS = "the a cat dog sat ran on mat park big small red blue".split()


@pytest.fixture(scope="module")
def tiny_lm(tmp_path_factory):
    return train_tiny_lm(tmp_path_factory.mktemp("lm"), WORDS, vocab_size=120, max_steps=5, epochs=2)


def _samples():
    from dialeval.data import Sample

    return [Sample(id=str(i), context=["the cat sat"], response=" ".join(WORDS[i:i + 4]),
                   references=["the dog ran on the mat"]) for i in range(5)]


def _plan_loads_nothing_and_signs_as_loaded(names, **options):
    from dialeval.backbones import cached_backbones, clear_backbones
    from dialeval.engine.plan import make_plan
    from dialeval.scoring import score

    clear_backbones()
    artifacts.clear_models()                                 # what fitting the model loaded
    plan = make_plan(names, **options)
    assert artifacts.opened_models() == [] and cached_backbones() == []
    result = score(_samples(), names, **options)
    assert artifacts.opened_models()                         # scoring did load
    for name in names:
        assert str(result.signatures[name]) == plan.signatures[name]
        metric = [m for m in plan.metrics() if m.name == name][0]
        metric.multi_stats                                   # noqa: B018
        assert str(metric.signature()) == plan.signatures[name]


def test_lm_metrics_are_planned_without_loading(tiny_lm):
    _plan_loads_nothing_and_signs_as_loaded(["lm_coherence", "lm_fluency_raw"], lm_model=tiny_lm)


def test_deep_amfm_is_planned_without_loading(tiny_lm):
    pytest.importorskip("sentence_transformers")
    _plan_loads_nothing_and_signs_as_loaded(["deep_fm", "deep_amfm"], lm_model=tiny_lm)


def test_adem_is_planned_without_loading(tmp_path):
    pytest.importorskip("torch")
    from test_adem import rows_for, tiny_encoder

    from dialeval.metrics.learned.adem.model import Adem

    tiny_encoder().save(tmp_path / "hred")
    Adem(encoder=f"hred:{tmp_path / 'hred'}", variant="adem", pca_dims=4, max_epochs=5).fit(rows_for()) \
        .save(tmp_path / "adem")
    _plan_loads_nothing_and_signs_as_loaded(["adem"], adem_model=str(tmp_path / "adem"))
    with pytest.raises(DialevalError, match="holds a adem model; score it with --metrics adem"):
        from dialeval.engine.plan import make_plan

        make_plan(["c_adem"], adem_model=str(tmp_path / "adem"))


def test_amfm_is_planned_without_loading(tmp_path):
    from dialeval.metrics.amfm.ngram import find_lmplz

    if find_lmplz() is None:
        pytest.skip("KenLM lmplz not built (run install.sh)")
    from dialeval.metrics.amfm.model import AMFMModel

    rng = random.Random(3)
    corpus = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 10))) for _ in range(200)]
    AMFMModel(dims=6, order=2, seed=1).fit(corpus).save(tmp_path / "amfm")
    _plan_loads_nothing_and_signs_as_loaded(["am", "fm", "amfm"], amfm_model=str(tmp_path / "amfm"))


def test_compose_is_planned_without_loading(tmp_path):
    """compose builds its members from config.json; its weights (arrays.npz) load on first use."""
    import numpy as np

    from dialeval.metrics.compose.model import ComposeModel, DevSet

    rng = np.random.default_rng(0)
    m = rng.uniform(size=(40, 2))
    y = m[:, 0] - 0.5 * m[:, 1] + 0.2 * rng.normal(size=40)
    ComposeModel(method="ridge").fit([DevSet("s", {"bleu2": m[:, 0], "rouge_l": m[:, 1]}, {"overall": y})]) \
        .save(tmp_path / "mine")
    _plan_loads_nothing_and_signs_as_loaded(["compose"], compose_model=str(tmp_path / "mine"))


def _model_field(signature: str) -> str:
    return dict(part.split(":", 1) for part in signature.split("|")[1:])["model"]


def test_one_model_field_names_every_trained_artifact(tmp_path, tiny_lm):
    """Every metric backed by a trained artifact signs `model:<kind>@<first 12 hex of the
    manifest's sha256>`, whatever the folder is called; a causal LM from elsewhere (no manifest)
    keeps the backbone rule, `name:size`."""
    import shutil

    import numpy as np

    from dialeval.engine.plan import make_plan
    from dialeval.metrics.compose.model import ComposeModel, DevSet

    rng = np.random.default_rng(1)
    m = rng.uniform(size=(30, 2))
    ComposeModel(method="ridge").fit([DevSet("s", {"bleu2": m[:, 0], "rouge_l": m[:, 1]},
                                              {"overall": m.sum(axis=1)})]).save(tmp_path / "fit")
    cases = [("compose", "compose_model", str(tmp_path / "fit"), "compose"),
             ("lm_fluency", "lm_model", tiny_lm, "lm"), ("deep_fm", "lm_model", tiny_lm, "lm")]
    for metric, option, folder, kind in cases:
        sig = make_plan([metric], **{option: folder}).signatures[metric]
        assert _model_field(sig) == f"{kind}@{artifacts.model_id(folder)[:12]}", sig
        # a copy under another name is the same model and signs the same
        copy = tmp_path / f"copy-{metric}"
        shutil.copytree(folder, copy)
        assert make_plan([metric], **{option: str(copy)}).signatures[metric] == sig
    # the same LM without its manifest: weights from elsewhere, named by the backbone rule
    plain = tmp_path / "plain-lm"
    shutil.copytree(tiny_lm, plain)
    os.remove(plain / "manifest.json")
    size = os.path.getsize(plain / "model.safetensors")
    assert _model_field(make_plan(["lm_fluency"], lm_model=str(plain)).signatures["lm_fluency"]) \
        == f"plain-lm:{size}"
    # both load through the backbone module and score the same, bit for bit
    from dialeval.scoring import score

    ours = score(_samples(), ["lm_fluency_raw"], lm_model=tiny_lm).sentence["lm_fluency_raw"]
    theirs = score(_samples(), ["lm_fluency_raw"], lm_model=str(plain)).sentence["lm_fluency_raw"]
    assert np.array_equal(ours, theirs) and np.isfinite(ours).all()


# -- packaged pretrained names, and one MiniLM ---------------------------------------------------

def test_one_table_names_the_packaged_weights():
    from dialeval.metrics.embedding.bertscore import PACKAGED
    from dialeval.metrics.embedding.defaults import VECTOR_NAMES
    from dialeval.models.pretrained import PREPARERS, PRETRAINED, pretrained, pretrained_names

    assert set(PACKAGED) <= set(pretrained_names("encoder"))
    assert {n for n, v in VECTOR_NAMES.items() if v != "minilm"} == set(pretrained_names("vectors"))
    assert pretrained("smollm2-135m").key == "smollm2" and pretrained("glove", role="encoder") is None
    assert set(PREPARERS) == set(PRETRAINED) - {"minilm"}


def test_sentence_cosine_and_bertscore_share_one_minilm():
    pytest.importorskip("sentence_transformers")
    from dialeval.backbones import cached_backbones, clear_backbones
    from dialeval.scoring import score

    clear_backbones()
    score(_samples(), ["sent_cosine", "bertscore_f"])
    models = {id(b.model) for b in cached_backbones()}
    assert len(cached_backbones()) == 2 and len(models) == 1


@pytest.mark.slow
def test_mme_is_planned_without_loading_and_each_file_is_hashed_once(tmp_path, monkeypatch):
    from test_mme import train_tiny_mme

    folder = str(train_tiny_mme(tmp_path)[0])
    names = ["mme_fm", "mme_tcm", "mme_sm_nll"]
    _plan_loads_nothing_and_signs_as_loaded(names, mme_model=folder)
    artifacts.clear_models()
    hashed = _hash_counter(monkeypatch)
    from dialeval.scoring import score

    score(_samples(), names, mme_model=folder)
    assert hashed and len(hashed) == len(store.read_manifest(folder)["files"])    # once each
