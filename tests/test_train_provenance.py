"""Issue 21 item 17: training records what it trained on. `train adem` takes the quality a
user names and refuses to guess among several; MME signatures name the real training corpus by
a hash of its dialogues instead of always saying DailyDialog."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import REPO

from dialeval.errors import DialevalError


def _rated_file(path, qualities=("overall", "fluency")):
    rows = []
    for i in range(12):
        ratings = {"overall": [1 + i % 5], "fluency": [5 - i % 5], "score": [3]}
        rows.append({"id": str(i), "context": [f"how are you {i} ?"], "response": f"fine {i} , thanks .",
                     "references": [f"good {i} ."], "ratings": {q: ratings[q] for q in qualities}})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_a_file_with_several_qualities_needs_quality(tmp_path):
    from dialeval.metrics.learned.adem.data import load_rated

    path = _rated_file(tmp_path / "rated.jsonl")
    with pytest.raises(DialevalError, match=r"several qualities \(overall, fluency\); choose one with --quality"):
        load_rated(str(path))
    fluency = load_rated(str(path), quality="fluency")
    assert [r.score for r in fluency] == [5 - i % 5 for i in range(12)]
    assert {r.meta["adem_scale"]["quality"] for r in fluency} == {"fluency"}
    assert [r.score for r in load_rated(str(path), quality="overall")] == [1 + i % 5 for i in range(12)]
    with pytest.raises(DialevalError, match="no sample has the quality 'relevance'; the file has overall, fluency"):
        load_rated(str(path), quality="relevance")
    # one quality, or the documented `score`, needs no choice
    single = load_rated(str(_rated_file(tmp_path / "one.jsonl", ("fluency",))))
    assert [r.score for r in single] == [5 - i % 5 for i in range(12)]
    with_score = load_rated(str(_rated_file(tmp_path / "s.jsonl", ("overall", "score"))))
    assert {r.score for r in with_score} == {3}


def test_train_adem_refuses_to_guess_in_one_line(tmp_path):
    path = _rated_file(tmp_path / "rated.jsonl")
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    proc = subprocess.run([sys.executable, "-m", "dialeval.cli", "train", "adem", "--data", str(path),
                           "-o", str(tmp_path / "out")], capture_output=True, text=True, env=env)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "several qualities (overall, fluency)" in lines[0] and "--quality" in lines[0]
    assert not (tmp_path / "out").exists()


def test_mme_corpus_id_falls_back_for_old_folders():
    from dialeval.metrics.mme.model import corpus_id

    root = {"corpus": "/data/dailydialog/dialogues_train.txt",
            "submetrics": {"sm": {"corpus": {"name": "mine.txt", "sha256": "0123456789ab", "dialogues": 3}},
                           "tcm": {}}}
    assert corpus_id(root, "sm") == "mine.txt#0123456789ab"
    assert corpus_id(root, "tcm") == "dialogues_train.txt#unrecorded"


@pytest.mark.slow
def test_mme_signatures_name_the_training_corpus(tmp_path):
    """TCM's graph and SM's masked LM come from the training corpus: two corpora give two
    signatures, each naming its corpus's hash, and none claims DailyDialog."""
    from test_mme import _corpus, _samples
    from test_mme_finetune import _need_encoder

    _need_encoder()                       # skips without torch, transformers or MiniLM
    from dialeval.metrics.mme.data import read_dialogues
    from dialeval.metrics.mme.model import corpus_record, train_mme
    from dialeval.scoring import score

    sigs = {}
    for seed in (0, 1):
        corpus = _corpus(tmp_path / f"chat{seed}_train.txt", n=40, seed=seed)
        out = tmp_path / f"model{seed}"
        root = train_mme(str(corpus), str(out), only=["tcm", "sm"], max_examples=80, sm_sentences=200, seed=0)
        record = root["submetrics"]["sm"]["corpus"]
        assert record == corpus_record(str(corpus), read_dialogues(str(corpus)))
        assert record["name"] == corpus.name and record["dialogues"] == 40
        result = score(_samples(), ["mme_tcm", "mme_sm_nll"], mme_model=str(out))
        sigs[seed] = {m: str(result.signatures[m]) for m in ("mme_tcm", "mme_sm_nll")}
        assert f"graph:ppmi-adjacent+minilm-input-cos@{corpus.name}#{record['sha256']}" in sigs[seed]["mme_tcm"]
        assert f"mlm:tiny-bert@{corpus.name}#{record['sha256']}" in sigs[seed]["mme_sm_nll"]
        assert not any("dd-train" in s for s in sigs[seed].values())
    assert sigs[0]["mme_tcm"] != sigs[1]["mme_tcm"]
    # the hash is of the dialogues as read: the same text under another name hashes the same
    same = tmp_path / "copy_train.txt"
    same.write_text((tmp_path / "chat0_train.txt").read_text())
    assert corpus_record(str(same), read_dialogues(str(same)))["sha256"] == \
        corpus_record(str(tmp_path / "chat0_train.txt"), read_dialogues(str(tmp_path / "chat0_train.txt")))["sha256"]
