"""MME sub-metrics: perturbations and graph statistics checked by hand, normalisation, and a
tiny end-to-end training (a generated DailyDialog-like corpus and a generated engagement
folder) with save/load round trip, corruption refusal, [0, 1] scores and the CLI."""

from __future__ import annotations

import csv
import json
import math
import random

import numpy as np
import pytest

from conftest import flip_byte

from dialeval.errors import DialevalError
from dialeval.metrics.mme import data as D
from dialeval.metrics.mme.normalise import apply_range, fit_range

pytestmark = pytest.mark.slow   # trains real (tiny) models


class FixedRandom(random.Random):
    """random() always returns `value`; the rest is a seeded Random."""

    def __init__(self, value: float):
        super().__init__(0)
        self.value = value

    def random(self):
        return self.value


# -- perturbations, by hand ----------------------------------------------------------------------
def test_drop_stopwords_by_hand():
    tokens = "i would like to book a room for tonight .".split()
    # random() = 0.0 < 0.5: every stop-word goes (i, would, to, a, for); punctuation stays
    assert D.drop_stopwords(tokens, FixedRandom(0.0)) == "like book room tonight .".split()
    # random() = 0.9: nothing goes
    assert D.drop_stopwords(tokens, FixedRandom(0.9)) == tokens
    # an utterance of stop-words only is kept whole rather than emptied
    assert D.drop_stopwords(["yes", "i", "do"], FixedRandom(0.0)) == ["yes", "i", "do"]


def test_shuffle_keeps_words_and_changes_order():
    tokens = "where is the nearest bank ?".split()
    out = D.shuffle_words(tokens, random.Random(3))
    assert sorted(out) == sorted(tokens) and out != tokens
    assert D.shuffle_words(["ok", "ok"], random.Random(0)) == ["ok", "ok"]   # nothing to reorder


def test_drop_words_counts():
    tokens = "one two three four five six seven eight nine ten".split()
    rng = random.Random(1)
    for _ in range(50):
        out = D.drop_words(tokens, rng)
        # 20-50% of 10 words dropped: 2..5 gone, order kept
        assert 5 <= len(out) <= 8
        assert out == [w for w in tokens if w in out]
    assert D.drop_words(["hi"], rng) == ["hi"]


def test_repeat_spans_by_hand():
    class Scripted(random.Random):
        def __init__(self, ints):
            super().__init__(0)
            self.ints = list(ints)

        def randint(self, a, b):
            value = self.ints.pop(0)
            assert a <= value <= b
            return value

    # one span; length 2; start 1; repeated 2 extra times
    out = D.repeat_spans("a b c d".split(), Scripted([1, 2, 1, 2]))
    assert out == "a b c b c b c d".split()


def test_fluency_mix():
    rng = random.Random(0)
    text = "could you tell me how to get to the train station ?"
    draws = [D.fluency_example(text, rng) for _ in range(2000)]
    labels = np.array([lab for _, lab, _ in draws])
    assert abs(labels.mean() - 0.5) < 0.04
    rules = {r for _, _, r in draws}
    assert rules == {"none", "stopwords", "shuffle", "drop", "repeat"}
    for out, lab, rule in draws:
        if rule == "none":
            assert out == text and lab == 1
        if rule == "shuffle":
            assert sorted(out.split()) == sorted(text.split()) and out != text and lab == 0


def test_content_words():
    assert D.content_words("Do you like Italian food? I love pizza!") == ["like", "italian", "food", "love", "pizza"]


def test_train_only_corpus(tmp_path):
    """Files whose contexts rated sets use are refused; Topical-Chat's valid files are not."""
    for name in ("dialogues_test.txt", "dialogues_validation.txt"):
        path = tmp_path / name
        path.write_text("hello . __eou__ hi . __eou__\n")
        with pytest.raises(DialevalError, match="train and Topical-Chat valid only"):
            D.read_dialogues(str(path))
    conv = {"t1": {"content": [{"message": " hi there "}, {"message": ""}, {"message": "hello"}]}}
    for name in ("test_freq.json", "valid_freq.json"):
        (tmp_path / name).write_text(json.dumps(conv))
    with pytest.raises(DialevalError, match="Topical-Chat's test"):
        D.read_dialogues(f"topical-chat:{tmp_path / 'test_freq.json'}")
    assert D.read_dialogues(f"topical-chat:{tmp_path / 'valid_freq.json'}") == [["hi there", "hello"]]
    (tmp_path / "valid_bad.json").write_text("[1, 2]")
    with pytest.raises(DialevalError, match="not a Topical-Chat conversations file"):
        D.read_dialogues(f"topical-chat:{tmp_path / 'valid_bad.json'}")


def test_corpus_record_of_several_corpora(tmp_path):
    """Several corpora are one training set: the record names each (joined by +) and hashes the
    dialogues as read, so one corpus keeps the record it always had."""
    from dialeval.metrics.mme.model import corpus_record

    one = corpus_record(str(tmp_path / "dialogues_train.txt"), [["a", "b"]])
    assert one["name"] == "dialogues_train.txt" and one["dialogues"] == 1
    assert corpus_record([str(tmp_path / "dialogues_train.txt")], [["a", "b"]]) == one
    two = corpus_record([str(tmp_path / "dialogues_train.txt"), f"topical-chat:{tmp_path}/valid_freq.json"],
                        [["a", "b"], ["c", "d"]])
    assert two["name"] == "dialogues_train.txt+topical-chat:valid_freq.json" and two["dialogues"] == 2
    assert two["sha256"] != one["sha256"]


# -- normalisation and negatives -------------------------------------------------------------------
def test_usl_normalisation_by_hand():
    low, high = fit_range(np.arange(101, dtype=float))        # 0..100: quartiles 25 and 75
    assert (low, high) == (25.0, 75.0)
    # USL-H gives 0, 0, 0.5, 1; its bottom, under the knee 0.05, is then squashed to
    # 0.05^2 / (0.1 - z): 0.0025 / 0.1 = 1/40 for a clipped 0, above a blank response's 0
    np.testing.assert_allclose(apply_range(np.array([0.0, 25.0, 50.0, 80.0]), low, high),
                               [1 / 40, 1 / 40, 0.5, 1])
    assert np.all(apply_range(np.array([1.0, 2.0]), 3.0, 3.0) == 0.5)


def test_median_negative_by_hand():
    from dialeval.metrics.mme.relevance import median_negatives

    # 4 responses; vectors chosen so that, for response 0, the others have cosines 0.9, 0.5, 0.1
    v = np.array([[1, 0], [0.9, math.sqrt(1 - 0.81)], [0.5, math.sqrt(0.75)], [0.1, math.sqrt(0.99)]])
    chosen = median_negatives(["a", "b", "c", "d"], v, random.Random(0), k=3)
    assert chosen[0] == 2              # the median of (0.9, 0.5, 0.1)


def test_ppmi_by_hand():
    from dialeval.metrics.mme.topic import keyword_stats

    dialogues = [["pizza tonight", "pizza pasta"], ["pizza tonight", "pasta wine"],
                 ["movie tonight", "movie ticket"], ["weather sunny", "sunny weather"]]
    vocab, _counts, rows, cols, vals = keyword_stats(dialogues, vocab_size=100, min_count=1)
    index = {w: i for i, w in enumerate(vocab)}
    got = {(vocab[a], vocab[b]): v for a, b, v in zip(rows, cols, vals)}
    # 4 adjacent turn pairs. "tonight" occurs in pairs 1-3, "pasta" in pairs 1-2, "pizza" in 1-2;
    # across turns, (tonight, pasta) co-occur in pairs 1 and 2, (pizza, pasta) in 1 and 2:
    #   PMI(tonight, pasta) = log(2 * 4 / (3 * 2)) = log(4/3);  PMI(pizza, pasta) = log(2 * 4 / (2 * 2)) = log 2.
    # Keyword pairs seen in only one turn pair (movie-ticket, weather-sunny, ...) are dropped.
    def pmi(a, b):
        return got[tuple(sorted((a, b), key=lambda w: index[w]))]

    assert pmi("pasta", "tonight") == pytest.approx(math.log(4 / 3), rel=1e-6)
    assert pmi("pizza", "pasta") == pytest.approx(math.log(2.0), rel=1e-6)
    assert len(got) == 2


# -- tiny end-to-end training ------------------------------------------------------------------------
TOPICS = {
    "food": ["pizza", "pasta", "restaurant", "dinner", "salad", "chicken", "menu", "waiter"],
    "travel": ["flight", "airport", "ticket", "hotel", "passport", "luggage", "train", "beach"],
    "work": ["meeting", "report", "manager", "office", "project", "deadline", "salary", "email"],
    "health": ["doctor", "medicine", "fever", "hospital", "headache", "exercise", "appointment", "sleep"],
}
QUESTIONS = ["do you know a good {a} near the {b} ?", "what about the {a} for the {b} ?",
             "have you seen my {a} ?", "could we talk about the {a} and the {b} ?"]
ANSWERS = ["yes , the {a} is next to the {b} .", "i think the {a} was great , but the {b} was not .",
           "sure , let me check the {a} first .", "no , i have not seen the {a} since the {b} ."]


def _corpus(path, n=90, seed=0):
    rng = random.Random(seed)
    lines = []
    for _ in range(n):
        words = TOPICS[rng.choice(sorted(TOPICS))]
        turns = []
        for t in range(rng.randint(4, 6)):
            a, b = rng.sample(words, 2)
            turns.append(rng.choice(QUESTIONS if t % 2 == 0 else ANSWERS).format(a=a, b=b))
        lines.append(" __eou__ ".join(turns) + " __eou__")
    path.write_text("\n".join(lines) + "\n")
    return path


def _engagement(folder, seed=0):
    rng = random.Random(seed)
    data = folder / "data"
    data.mkdir(parents=True)
    dull = ["ok .", "yes .", "no .", "i do not know .", "fine ."]
    lively = ["i love hiking in the mountains , have you ever tried it ?",
              "my sister just opened a bakery and her bread is amazing !",
              "we watched a documentary about whales last night , it was fascinating ."]
    for name, n in [("humanAMT_engscores_utt.csv", 40), ("DD_finetune_train.csv", 30), ("DD_finetune_valid.csv", 10)]:
        with open(data / name, "w", newline="") as handle:
            w = csv.writer(handle)
            w.writerow(["id", "query", "reply", "label"])
            for i in range(n):
                label = i % 2
                reply = rng.choice(lively if label else dull) + ("" if i < 8 else f" ({i})")
                w.writerow([i, "how was your day ?", reply, label])
    return folder


def train_tiny_mme(base):
    """A tiny MME model folder in `base` (skips without torch, transformers or the encoder):
    (model folder, training record, corpus path). tests/test_engine_shards.py uses it too."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    try:
        from dialeval.metrics.mme.encoder import default_encoder_dir

        default_encoder_dir()
    except DialevalError as exc:
        pytest.skip(f"no default encoder: {exc}")
    from dialeval.metrics.mme.model import train_mme

    corpus = _corpus(base / "dialogues_train.txt")
    eng = _engagement(base / "engagement")
    out = base / "model"
    root = train_mme(str(corpus), str(out), engagement=str(eng), max_examples=160, seed=0)
    return out, root, corpus


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    return train_tiny_mme(tmp_path_factory.mktemp("mme"))


def _samples():
    from dialeval.data.sample import Sample

    return [Sample(id="1", context=["do you know a good restaurant near the hotel ?"],
                   response="yes , the restaurant is next to the hotel ."),
            Sample(id="2", context=["have you seen my passport ?"],
                   response="passport passport the the seen seen ."),
            Sample(id="3", context=["what about the meeting for the project ?"],
                   response="i love hiking in the mountains , have you ever tried it ?")]


MME_METRICS = ["mme_fm", "mme_rm", "mme_tcm", "mme_em", "mme_sm_nll", "mme_sm_nce", "mme_sm_ppl"]


def test_tiny_training_records_sizes(tiny_model):
    _, root, _ = tiny_model
    subs = root["submetrics"]
    assert set(subs) == {"fm", "rm", "tcm", "em", "sm"}
    assert subs["fm"]["info"]["examples"] > 100
    assert subs["em"]["info"]["examples"] == 80
    assert subs["tcm"]["info"]["recipe"] == "dd-train-ppmi-adjacent+minilm-input-cos"


def test_scores_in_unit_interval_and_round_trip(tiny_model, tmp_path):
    import shutil

    from dialeval.metrics.mme.model import MMEModel
    from dialeval.scoring import score

    out, _, _ = tiny_model
    result = score(_samples(), MME_METRICS, mme_model=str(out))
    for name in MME_METRICS:
        values = result.sentence[name]
        assert np.all((values >= 0) & (values <= 1)), name
    # copy the folder elsewhere: scores are the same from the copy (a real load, new fingerprint path)
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    again = score(_samples(), MME_METRICS, mme_model=str(copy))
    for name in MME_METRICS:
        np.testing.assert_allclose(again.sentence[name], result.sentence[name], rtol=1e-6, atol=1e-9)
    # raw values are the model's own: the SM nce/ppl relation holds exactly
    raw = score(_samples(), ["mme_sm_nce", "mme_sm_ppl"], mme_model=str(copy), mme_norm="none")
    np.testing.assert_allclose(raw.sentence["mme_sm_ppl"], np.exp(raw.sentence["mme_sm_nce"]), rtol=1e-9)
    # each sub-model loads alone too, and gives the same raw fluency
    fm = MMEModel(str(copy)).get("fm")
    np.testing.assert_allclose(fm.raw([s.response for s in _samples()]),
                               score(_samples(), ["mme_fm"], mme_model=str(out), mme_norm="none").sentence["mme_fm"],
                               rtol=1e-6)


def test_corrupted_artifact_refused(tiny_model, tmp_path):
    import shutil

    from dialeval.scoring import score

    out, _, _ = tiny_model
    copy = tmp_path / "bad"
    shutil.copytree(out, copy)
    target = copy / "fm" / "arrays.npz"
    flip_byte(target, target.stat().st_size // 2)
    with pytest.raises(DialevalError, match="changed since the artifact was saved"):
        score(_samples(), ["mme_fm"], mme_model=str(copy))
    with pytest.raises(DialevalError, match="needs a trained model"):
        score(_samples(), ["mme_fm"])


def test_fluency_prefers_unperturbed(tiny_model):
    """On its own training distribution the fluency head must rank originals above shuffles."""
    from dialeval.metrics.mme.model import MMEModel

    out, _, corpus = tiny_model
    fm = MMEModel(str(out)).get("fm")
    rng = random.Random(7)
    texts = [t.strip() for line in corpus.read_text().splitlines() for t in line.split("__eou__") if t.strip()][:60]
    shuffled = [" ".join(D.shuffle_words(t.split(), rng)) for t in texts]
    assert fm.raw(texts).mean() > fm.raw(shuffled).mean()


def test_cli_train_only_and_score(tiny_model, tmp_path, capsys):
    import json

    from dialeval.cli.main import main

    _, _, corpus = tiny_model
    out = tmp_path / "m"
    assert main(["train", "mme", "--corpus", str(corpus), "-o", str(out), "--only", "fm",
                 "--max-examples", "120", "--quiet"]) == 0
    assert "fm:" in capsys.readouterr().out
    inp = tmp_path / "in.jsonl"
    inp.write_text("\n".join(json.dumps({"id": s.id, "context": s.context, "response": s.response})
                             for s in _samples()) + "\n")
    scores = tmp_path / "scores.jsonl"
    assert main(["score", str(inp), "--metrics", "mme_fm", "--mme-model", str(out), "-o", str(scores)]) == 0
    rows = [json.loads(line) for line in scores.read_text().splitlines()]
    assert len(rows) == 3
    assert main(["score", str(inp), "--metrics", "mme_rm", "--mme-model", str(out)]) == 2
    assert "no rm sub-metric" in capsys.readouterr().err
    assert main(["train", "mme", "--corpus", str(corpus), "-o", str(out), "--only", "xx"]) == 2


def test_cli_trains_on_several_corpora(tiny_model, tmp_path, capsys):
    """`--corpus` repeats, and `topical-chat:` reads Topical-Chat's JSON: the corpora are one
    training set, recorded by name and by a hash of the dialogues as read; a test file among them
    stops the run in one line before anything is written."""
    from dialeval.cli.main import main
    from dialeval.metrics.mme.model import _read_root

    _, _, corpus = tiny_model
    conv = {f"c{i}": {"content": [{"message": t} for t in
                                  ("do you like jazz music ?", "yes , i love miles davis .", "me too , his trumpet is great .")]}
            for i in range(20)}
    tc = tmp_path / "valid_freq.json"
    tc.write_text(json.dumps(conv))
    out = tmp_path / "m"
    assert main(["train", "mme", "--corpus", str(corpus), "--corpus", f"topical-chat:{tc}", "-o", str(out),
                 "--only", "fm", "--max-examples", "120", "--quiet"]) == 0
    record = _read_root(str(out))["submetrics"]["fm"]["corpus"]
    assert record["name"] == "dialogues_train.txt+topical-chat:valid_freq.json"
    alone = tmp_path / "alone"
    assert main(["train", "mme", "--corpus", str(corpus), "-o", str(alone), "--only", "fm", "--max-examples", "120",
                 "--quiet"]) == 0
    single = _read_root(str(alone))["submetrics"]["fm"]["corpus"]
    assert single["name"] == "dialogues_train.txt" and single["dialogues"] + 20 == record["dialogues"]
    (tmp_path / "test_freq.json").write_text(json.dumps(conv))
    capsys.readouterr()
    refused = tmp_path / "refused"
    assert main(["train", "mme", "--corpus", str(corpus), "--corpus", f"topical-chat:{tmp_path / 'test_freq.json'}",
                 "-o", str(refused), "--only", "fm", "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Topical-Chat's test" in err[0]
    assert not refused.exists()


def _rm_dialogues(base):
    """A tiny training corpus read as RM reads it (skips without torch or the encoder)."""
    pytest.importorskip("torch")
    try:
        from dialeval.metrics.mme.encoder import default_encoder_dir

        default_encoder_dir()
    except DialevalError as exc:
        pytest.skip(f"no default encoder: {exc}")
    from dialeval.metrics.mme.data import read_dialogues

    return read_dialogues(str(_corpus(base / "dialogues_train.txt", n=30)))


def test_rm_hard_negatives_join_the_random_ones(tmp_path):
    """With hard negatives RM trains on its paper rows (a positive and a median random negative
    per pair) plus one probe-family negative for a seeded share of the pairs, the families
    taken in turn; every hard negative is labelled 0 and a parrot never equals its response.
    Without them the paper's rows are what they were (the hard negatives draw from their own
    random stream), and a family that cannot be made per pair is refused."""
    from dialeval.metrics.mme.relevance import RelevanceModel

    dialogues = _rm_dialogues(tmp_path)
    plain = RelevanceModel(max_examples=120, epochs=2, seed=0).fit(dialogues)
    hard = RelevanceModel(max_examples=120, epochs=2, seed=0, hard_negatives="parrot,loop",
                          hard_share=0.5).fit(dialogues)
    pairs = plain.info_["pairs"]
    assert plain.info_["examples"] == 2 * pairs and "hard_negatives" not in plain.info_
    made = hard.info_["hard_negatives"]
    assert set(made) == {"parrot", "loop"} and 0 < sum(made.values()) <= pairs
    assert hard.info_["examples"] == 2 * pairs + sum(made.values())
    assert hard.info_["positives"] == plain.info_["positives"] == pairs
    picked = RelevanceModel(max_examples=120, seed=0, hard_negatives="parrot,loop", hard_share=0.5)
    from dialeval.metrics.mme.data import pairs_of

    again = picked._hard_negatives(pairs_of(dialogues)[:pairs], dialogues)
    assert again == picked._hard_negatives(pairs_of(dialogues)[:pairs], dialogues)      # seeded
    with pytest.raises(DialevalError, match="cannot be made per pair"):
        RelevanceModel(max_examples=120, hard_negatives="other_item").fit(dialogues)


def test_rm_dialogue_negatives_come_from_the_pairs_own_dialogue(tmp_path):
    """A dialogue negative is another utterance of the pair's own dialogue, never one of the
    context turns read, the response itself or the utterance right after it; a pair whose
    dialogue has nothing else gives none. The share is quiet: unset, the RM's parameters (and so
    every earlier folder's record) are what they were, and the pairs drawn are the same."""
    import random

    from dialeval.metrics.mme.data import pair_places, pairs_of
    from dialeval.metrics.mme.relevance import RelevanceModel

    dialogue = [f"utterance number {j}" for j in range(8)]
    short = ["hello there", "hi", "bye now"]
    rm = RelevanceModel(seed=3, dialogue_share=1.0)
    # response at 3, one context turn read (2): 2, 3 and 4 are never drawn; 0, 1, 5, 6, 7 may be
    drawn = {text for _, text in rm._dialogue_negatives([(0, 3)] * 200, [dialogue], turns=1)}
    assert drawn == {dialogue[j] for j in (0, 1, 5, 6, 7)}
    # three context turns read (0..2): only 5, 6, 7 remain
    drawn = {text for _, text in rm._dialogue_negatives([(0, 3)] * 200, [dialogue], turns=3)}
    assert drawn == {dialogue[j] for j in (5, 6, 7)}
    assert rm._dialogue_negatives([(0, 1)], [short], turns=1) == []          # 0 read, 2 is next
    half = RelevanceModel(seed=3, dialogue_share=0.5)._dialogue_negatives([(0, 3)] * 400, [dialogue], turns=1)
    assert 140 < len(half) < 260
    assert "dialogue_share" not in RelevanceModel().recorded_params()
    assert RelevanceModel(dialogue_share=0.5).recorded_params()["dialogue_share"] == 0.5
    # the places line up with the pairs, and shuffling them together keeps the old permutation
    dialogues = [dialogue, short, dialogue[:5]]
    pairs, places = pairs_of(dialogues, 3), pair_places(dialogues)
    assert [p.response for p in pairs] == [dialogues[k][i] for k, i in places]
    alone, placed = list(pairs), list(zip(pairs, places))
    random.Random(7).shuffle(alone)
    random.Random(7).shuffle(placed)
    assert [p for p, _ in placed] == alone


def test_rm_dialogue_negatives_join_the_training_rows(tmp_path):
    """With `dialogue_share` the fit adds one labelled-0 row per dialogue negative made, on top
    of the paper's two rows per pair, and records how many."""
    from dialeval.metrics.mme.relevance import RelevanceModel

    dialogues = _rm_dialogues(tmp_path)
    plain = RelevanceModel(max_examples=120, epochs=2, seed=0).fit(dialogues)
    more = RelevanceModel(max_examples=120, epochs=2, seed=0, dialogue_share=1.0).fit(dialogues)
    pairs = plain.info_["pairs"]
    made = more.info_["dialogue_negatives"]
    assert "dialogue_negatives" not in plain.info_ and 0 < made <= pairs
    assert more.info_["examples"] == 2 * pairs + made and more.info_["positives"] == pairs
    with pytest.raises(DialevalError, match="--rm-dialogue-share"):
        from dialeval.metrics.mme.model import MMETrainer

        MMETrainer(only=["rm"], rm_dialogue_share=1.5)._check()
