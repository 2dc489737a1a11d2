"""Query augmentation: the UD-EWT POS tagger, WordNet substitution and the conditional generator."""

from __future__ import annotations

import json
import os

import pytest
from conftest import DATA, need

from dialeval.errors import DialevalError


def wordnet_or_skip():
    from dialeval.augment.wordnet import wordnet

    try:
        return wordnet()
    except DialevalError as exc:
        pytest.skip(f"WordNet not installed for nltk: {exc}")


@pytest.fixture(scope="module")
def small_tagger(tmp_path_factory):
    """Trained on the first 1,000 EWT training sentences: seconds, yet a usable tagger."""
    from dialeval.augment.postagger import load_tagger, train_tagger

    ewt = need(DATA / "ud-english-ewt")
    out = tmp_path_factory.mktemp("tagger") / "ewt"
    train_tagger([str(ewt / "en_ewt-ud-train.conllu")], str(out), iterations=2, limit=1000)
    return str(out), load_tagger(str(out))


@pytest.mark.slow
def test_tagger_accuracy_and_json_artifact(small_tagger):
    from dialeval.augment.postagger import read_conllu

    out, tagger = small_tagger
    files = set(os.listdir(out))
    assert files == {"config.json", "manifest.json", "tagger.json"}  # JSON, no pickle
    dev = read_conllu(str(DATA / "ud-english-ewt" / "en_ewt-ud-dev.conllu"))[:400]
    # a perceptron tagger on UPOS reaches ~0.95 with the full treebank; 1,000 sentences still > 0.85
    assert tagger.accuracy(dev) > 0.85
    tags = dict(tagger.tag("I really need a cold drink .".split()))
    assert tags["need"] == "VERB" and tags["drink"] == "NOUN" and tags["cold"] == "ADJ"


def test_changed_tagger_is_refused(small_tagger, tmp_path):
    import shutil

    from dialeval.augment.postagger import load_tagger

    copy = tmp_path / "t"
    shutil.copytree(small_tagger[0], copy)
    with open(copy / "tagger.json", "a") as handle:
        handle.write(" ")
    with pytest.raises(DialevalError, match="changed since the artifact was saved"):
        load_tagger(str(copy))


def test_conllu_errors_name_the_line(tmp_path):
    from dialeval.augment.postagger import read_conllu
    from dialeval.errors import InputError

    bad = tmp_path / "x.conllu"
    bad.write_text("# c\n1\tHi\thi\tINTJ\tUH\t_\t0\troot\t_\t_\n2\tthere\n")
    with pytest.raises(InputError, match=r"x.conllu:3"):
        read_conllu(str(bad))


@pytest.mark.slow
def test_wordnet_variants(small_tagger):
    wn = wordnet_or_skip()
    from dialeval.augment.wordnet import WordNetAugmenter

    aug = WordNetAugmenter(small_tagger[1], wn)
    query = "i need to drink more water"
    v = aug.variants(query)
    assert list(v) == ["verbs", "nouns", "adjectives+adverbs", "all"]
    words = query.split()
    for name, text in v.items():
        assert text != query or name == "adjectives+adverbs"
    # nouns variant: only "water" may change, into a lemma of one of its noun synsets
    nouns = v["nouns"].split()
    assert nouns[:5] == words[:5]
    replaced = " ".join(nouns[5:]).replace(" ", "_")
    assert any(replaced in s.lemma_names() for s in wn.synsets("water", pos="n"))
    # verbs variant keeps the noun; "all" changes both the verbs and the noun
    assert v["verbs"].split()[-1] == "water" and v["verbs"] != query
    assert v["all"].split()[-1] != "water" and v["all"].split()[1] == v["verbs"].split()[1]
    assert len(aug.augment(query, k=4)) == 4


def test_missing_wordnet_names_the_install_step(monkeypatch):
    import nltk.corpus

    from dialeval.augment import wordnet as mod

    def missing():
        raise LookupError("Resource wordnet not found")

    monkeypatch.setattr(nltk.corpus.wordnet, "ensure_loaded", missing, raising=False)
    with pytest.raises(DialevalError, match="install.sh"):
        mod.wordnet()


def test_ctg_returns_distinct_beams(tmp_path):
    pytest.importorskip("transformers")
    from test_lm import QA, tiny_config, write_dailydialog

    from dialeval.augment.ctg import CTGAugmenter
    from dialeval.metrics.lm.checkpoint import load_lm
    from dialeval.metrics.lm.train import train_lm

    corpus = write_dailydialog(tmp_path / "d.txt", 40)
    train_lm(str(corpus), str(tmp_path / "m"), tiny_config(max_steps=25), log=lambda m: None)
    ctg = CTGAugmenter(load_lm(tmp_path / "m"), max_new_tokens=12)
    query = QA[0][1]
    out = ctg.augment(query, [QA[0][0]], k=3)
    assert 1 <= len(out) <= 3
    assert len(set(o.lower() for o in out)) == len(out)
    assert query.lower() not in [o.lower() for o in out]


def test_cli_augment_wordnet(small_tagger, tmp_path, capsys):
    wordnet_or_skip()
    from dialeval.cli import main

    queries = tmp_path / "q.jsonl"
    queries.write_text(json.dumps({"id": "a", "context": ["hello"], "query": "i need to drink more water"}) + "\n")
    out = tmp_path / "aug.jsonl"
    assert main(["augment", str(queries), "--method", "wordnet", "--tagger", small_tagger[0], "-o", str(out)]) == 0
    row = json.loads(out.read_text())
    assert row["queries"][0] == "i need to drink more water" and len(row["queries"]) == 5
    assert row["context"] == ["hello"]
    assert main(["augment", str(queries), "--method", "ctg"]) == 2
    assert "--lm-model" in capsys.readouterr().err
