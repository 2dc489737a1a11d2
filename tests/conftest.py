"""Shared test helpers: where ../shared is, and skipping cleanly when it is absent."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("DIALEVAL_SHARED", REPO.parent / "shared"))
GOLDEN = SHARED / "golden"
DATA = SHARED / "data"


def need(path: Path) -> Path:
    """Skip the calling test when a shared file or folder is missing."""
    if not path.exists():
        pytest.skip(f"{path} not present (shared data/golden files live in ../shared)")
    return path


def flip_byte(path: Path, at: int, mask: int = 0xFF) -> None:
    """Damage a saved file in place: XOR the byte at index `at` (negative counts from the end)
    with `mask`, as a disk or a hand edit might; the artifact checks must then refuse it."""
    blob = bytearray(Path(path).read_bytes())
    blob[at] ^= mask
    Path(path).write_bytes(bytes(blob))


@pytest.fixture(autouse=True)
def _no_default_models(monkeypatch):
    """Tests see no installed default models (`dialeval.models.defaults`) unless they make
    their own: a metric without a model option must behave the same whether or not the
    models package is installed where the tests run."""
    monkeypatch.setenv("DIALEVAL_MODELS_DIR", os.path.join(os.devnull, "no-models"))


@pytest.fixture
def golden():
    return need(GOLDEN)


@pytest.fixture
def data():
    return need(DATA)


def golden_fixture_sets():
    """(name, samples, golden case) for each nlg-eval fixture set in golden/nlg-eval-fixtures.json."""
    import json

    from dialeval.data.sample import Sample

    sets = json.loads(need(GOLDEN / "nlg-eval-fixtures.json").read_text())["sets"]
    for name, case in sets.items():
        samples = [Sample(id=str(i), response=h, references=r)
                   for i, (h, r) in enumerate(zip(case["input"]["hyps"], case["input"]["refs"]))]
        yield name, samples, case


def train_tiny_lm(folder: Path, words, **config) -> str:
    """A from-scratch causal LM of a few thousand parameters on 40 random dialogues of `words`
    (seeded), trained in about a second: for tests of the LM plumbing, not of its values.
    `config` overrides `LMTrainConfig` fields."""
    import random

    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from dialeval.metrics.lm.train import LMTrainConfig, train_lm

    corpus = folder / "dialogues.txt"
    rng = random.Random(2)
    corpus.write_text("".join(" __eou__ ".join(" ".join(rng.choice(words) for _ in range(5)) for _ in range(4))
                              + " __eou__\n" for _ in range(40)))
    settings = dict(vocab_size=200, n_layer=1, n_embd=16, n_head=2, n_positions=48, max_steps=10, batch_size=16,
                    lr=5e-3, warmup_steps=2, epochs=5, reference_pairs=20, threads=1, dropout=0.0)
    train_lm(str(corpus), str(folder / "model"), LMTrainConfig(**{**settings, **config}), log=lambda m: None)
    return str(folder / "model")
